"""posgeom extend end to end: family spec on token ids, a tiny Hugging Face folder with
--measure, and the refusals (exit 2, nothing written)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.artifacts import strict_json
from helpers.models import tiny_llama
from posgeom.cli.main import main
from posgeom.reports.view import load_folder


def _chain(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = list(rng.integers(0, 12, 2))
    for _ in range(n - 2):
        s.append((s[-1] + s[-2]) % 12 if rng.random() < 0.7 else int(rng.integers(0, 12)))
    return np.array(s)


SPEC = "rope:theta=10000,head_dim=16,max_position_embeddings=64"


def test_extend_on_token_ids_writes_the_folder(tmp_path, capsys):
    ids = tmp_path / "ids.npy"
    np.save(ids, np.stack([_chain(3000, 0), _chain(3000, 1)]))
    out = tmp_path / "out"
    argv = ["extend", SPEC, str(ids), "--target-length", "128", "--replicates", "2"]
    argv += ["--classes", "top:12", "--no-fit"]  # the fit is tested in test_extension.py
    assert main([*argv, "--positions", "-o", str(out), "-q"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    names = [s["name"] for s in summary["strategies"]]
    assert len(names) >= 10 and "fitted" not in names
    # one ranking: the recommendation first, then the predictor the record names; outside the
    # record's scope (theta 10,000, L0 64: not SmolLM2 at x1.5) nothing is validated
    rec = summary["recommendation"]
    ranked = summary["predictors"][rec["ranked_by"]]
    assert names[0] == rec["strategy"] == summary["best"]
    assert [ranked[n] for n in names[1:]] == sorted(
        (v for n, v in ranked.items() if n != names[0]), reverse=True
    )
    assert summary["rank_by"] == rec["ranking"] and rec["why"] and rec["windows"]["study"]
    assert not rec["validated"] and not rec["scope"]["inside"]
    if rec["predictor"].startswith("fallback"):
        assert summary["best"] == "yarn x2 b32/1"
    else:  # nothing validated for this kind of model: no scaling
        assert summary["best"] == "none"
    assert all("rope_parameters" in s and "scores" in s for s in summary["strategies"])
    assert all("position_scale_optimal" in s for s in summary["strategies"])
    best = json.loads((out / "rope_parameters.json").read_text())
    assert best == summary["rope_parameters"] and best["rope_theta"] == 10000.0
    table = (out / "table.md").read_text()
    assert all(f"| {n} |" in table for n in names)
    assert "## Dependence profile of the corpus" in table and "| 127 |" in table
    view = load_folder(out)
    assert view.kind == "extend" and view.rows and not view.missing
    assert view.settings["estimator"] == summary["estimator"] == "corrected"
    printed = capsys.readouterr().out
    assert "rope_parameters for config.json" in printed
    verdict = [line for line in printed.splitlines() if line.startswith("verdict: ")]
    assert len(verdict) == 1 and f"recommended: {summary['best']} (" in verdict[0]
    reach = summary["lag_geometry"]["dependence"]["longest_signal_lag"]
    assert f"up to lag {reach} of 127" in verdict[0]
    # refusals: an existing folder is kept as it is, a target below L0 writes nothing
    before = (out / "summary.json").read_bytes()
    assert main([*argv, "-o", str(out)]) == 2
    assert (out / "summary.json").read_bytes() == before
    assert main(["extend", SPEC, str(ids), "--target-length", "32", "-o", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    assert "must exceed the trained length" in capsys.readouterr().err


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")


def _folder(tmp_path):
    """A tiny random Llama and a word-level tokenizer over 12 words, saved as a HF folder."""
    words = [f"w{i}" for i in range(12)]
    tiny = tiny_llama(tmp_path / "tiny")
    folder, model, vocab = tiny["folder"], tiny["model"], tiny["vocab"]
    text = tmp_path / "book.txt"
    text.write_text(" ".join(words[t] for t in _chain(1000, 3)))
    return folder, text, model, np.array([vocab[w] for w in text.read_text().split()])


@pytest.mark.filterwarnings("ignore")
def test_extend_a_hugging_face_folder_with_measure(tmp_path, capsys):
    folder, text, model, ids = _folder(tmp_path)
    out = tmp_path / "out"
    argv = ["extend", str(folder), str(text), "--target-length", "128", "--classes", "embedding:4"]
    argv += ["--measure", "--windows", "1", "--heldout-fraction", "0.2", "--no-fit"]
    argv += ["--measure-top", "3"]
    assert main([*argv, "--replicates", "2", "-o", str(out)]) == 0
    summary = strict_json(out / "summary.json")
    assert summary["trained_length"] == 64  # max_position_embeddings
    assert summary["lag_geometry"]["counts"]["classes"]["kind"] == "embedding:4"
    measured = {m["name"]: m for m in summary["measurements"]["strategies"]}
    ranked = [s["name"] for s in summary["strategies"]]  # the measured first, by loss past L0
    assert len(measured) in (3, 4) and "none" in measured
    assert set(ranked[: len(measured)]) == set(measured)
    # the window: the first 128 tokens of the held-out last fifth, scored by a direct forward
    window = ids[round(ids.size * 0.8) :][:128]
    with torch.no_grad():
        logits = model(torch.as_tensor(window)[None]).logits[0, :-1].double()
    loss = torch.nn.functional.cross_entropy(logits, torch.as_tensor(window[1:]), reduction="none")
    assert measured["none"]["within_loss"] == pytest.approx(float(loss[:63].mean()), rel=1e-5)
    assert measured["none"]["beyond_loss"] == pytest.approx(float(loss[63:].mean()), rel=1e-5)
    assert not (tmp_path / "out.measure").exists()  # the window cache goes once the folder is in
    out_text, err = capsys.readouterr()
    # the cost before the first forward, then elapsed / ETA per item; what is held out
    cost = summary["measurements"]["cost"]
    items = 4 * (1 + 1) + 1  # 4 strategies x (1 window + a passkey) + the short-context reference
    assert cost["forwards"] == items and cost["tokens"] == 128 and cost["estimated_minutes"] > 0
    lines = err.splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("measure: "))
    assert lines[first].startswith(f"measure: {items} forwards of up to 128 tokens")
    assert "min on this machine" in lines[first]
    assert all("elapsed" in x and "ETA" in x for x in lines[first + 1 :] if "measure: " in x)
    held = round(ids.size * 0.8)
    note = (
        f"--measure holds out the last 20% of every document ({ids.size - held} tokens) for its "
        f"windows; the lag geometry reads the other {held} tokens"
    )
    assert note in err and any(note in v for v in summary["verdict"])
    low = min(measured.values(), key=lambda m: m["beyond_loss"])
    verdict = next(line for line in out_text.splitlines() if line.startswith("verdict: "))
    assert f"measured (loss past L0, 1 window(s) of 128 tokens): lowest {low['name']} " in verdict
    order = sorted(measured.values(), key=lambda m: m["beyond_loss"])
    place = [m["name"] for m in order].index(summary["best"]) + 1
    assert f"the recommended {summary['best']} placed {place} of {len(order)} (" in verdict
    assert "a geometric score, not a loss" not in verdict  # the loss past L0 was measured
    # key tokens: none of this random model's tokens gains 2 nats from the long context
    assert summary["measurements"]["key_tokens"] == 0
    assert measured["none"]["key_token_loss"] is None
    # --measure quick: every strategy, in-window loss on windows of min(2048, L0) = 64 tokens
    quick = tmp_path / "quick"
    argv = ["extend", str(folder), str(text), "--target-length", "128", "--no-fit", "-q"]
    argv += ["--measure", "quick", "--windows", "1", "--replicates", "0", "-o", str(quick)]
    assert main(argv) == 0
    got = strict_json(quick / "summary.json")["measurements"]  # no bare NaN in it
    assert got["mode"] == "quick" and got["window_length"] == 64
    rows = {m["name"]: m for m in got["strategies"]}
    assert len(rows) == len(json.loads((quick / "summary.json").read_text())["strategies"])
    assert rows["none"]["within_loss"] == pytest.approx(float(loss[:63].mean()), rel=1e-5)
    assert rows["none"]["tokens_beyond"] == 0
    words = " ".join(strict_json(quick / "summary.json")["verdict"])
    assert "in-window loss only (not the loss past L0)" in words
    assert "run --measure (full) for that outcome" in words
    # nothing past L0 was measured: those outcomes are null and the per-window list absent
    assert rows["none"]["beyond_loss"] is None and rows["none"]["beyond_perplexity"] is None
    assert "window_beyond_loss" not in rows["none"]
    assert all(strict_json(f) is not None for f in quick.glob("*.json"))


def test_bad_corpus_and_strategies_exit_2_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    base = ["extend", SPEC, "--target-length", "128", "-o", str(out)]
    assert main([*base[:2], str(tmp_path / "missing.npy"), *base[2:]]) == 2
    assert "does not exist" in capsys.readouterr().err
    ids = tmp_path / "ids.npy"
    np.save(ids, _chain(500, 0)[None])
    bad = tmp_path / "s.json"
    bad.write_text("{not json")
    assert main([*base[:2], str(ids), *base[2:], "--strategies", str(bad)]) == 2
    assert "cannot read --strategies" in capsys.readouterr().err
    text = tmp_path / "book.txt"
    text.write_text("no tokenizer for a family spec")
    assert main([*base[:2], str(text), *base[2:]]) == 2
    assert "there is no tokenizer" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob("out*"))


@pytest.mark.filterwarnings("error::RuntimeWarning")  # NoPE's infinite scores: no numpy warning
@pytest.mark.parametrize("family", ["sinusoidal:d=16,base=10000", "alibi:heads=4", "nope"])
def test_every_spec_family_is_read_as_a_spec(tmp_path, capsys, family):
    """Every family a spec can name is taken as a spec, never looked up as a model name (the
    sinusoidal spec was sent to Hugging Face: run.py listed four families, model.py five)."""
    from posgeom.extension.model import parse_family_spec, spec_families

    assert family.partition(":")[0] in spec_families()
    ids = tmp_path / "ids.npy"
    np.save(ids, np.stack([_chain(600, 0), _chain(600, 1)]))
    out = tmp_path / "out"
    spec = f"{family}{',' if ':' in family else ':'}max_position_embeddings=32"
    argv = ["extend", spec, str(ids), "--target-length", "64", "--replicates", "2"]
    code = main([*argv, "--classes", "top:8", "--no-fit", "-o", str(out), "-q"])
    err = capsys.readouterr().err
    assert "Hugging Face" not in err and "from_pretrained" not in err
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"]["family"] == parse_family_spec(spec).family
