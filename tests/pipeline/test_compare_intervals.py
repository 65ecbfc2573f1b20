"""A comparison's bootstrap intervals are those of its own estimator (not another one's)."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.corpus.counting import count_positions
from posgeom.encodings import sinusoidal
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.synthetic import synthetic_corpus
from posgeom.uncertainty.bootstrap import bootstrap_scores


@pytest.mark.parametrize("estimator", ["plugin", "corrected"])
def test_row_intervals_come_from_the_comparisons_estimator(estimator):
    n, v, d = 8, 24, 16
    seqs = synthetic_corpus(400, n, v, kind="three_regimes", seed=2)
    boot = count_positions(seqs, max_positions=n, vocab_size=v, bootstrap=6, bootstrap_seed=1)
    config = GeometryConfig(model_dim=d, max_rank=3, estimator=estimator)
    res = analyze(boot, config, kind="compare")
    assert res.options["estimator"] == estimator
    row = res.row("sinusoidal")
    direct = bootstrap_scores(boot, {"sinusoidal": sinusoidal(n, d=d)}, estimator=estimator)
    expected = direct.encodings["sinusoidal"].stress["paper"]
    np.testing.assert_allclose(row["paper_ci"], [expected.low, expected.high], rtol=1e-12)
    # the interval is about the point the table shows
    assert row["paper_ci"][0] <= row["paper"] <= row["paper_ci"][1]
