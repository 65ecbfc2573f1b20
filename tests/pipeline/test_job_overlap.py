"""The MDS eigensolve runs on a background thread beside the stages that do not read it: the
result is the one a run without the thread gives, rows in the registry's order, and an error of
the eigensolve reaches the caller."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posgeom.pipeline.job as job
from posgeom import GeometryConfig, PosgeomError, analyze
from posgeom.encodings.comparison import default_encodings
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(60, 300, exponent=1.1, seed=1)
    return sample_counts(mu, decaying_totals(60, high=600, low=100), seed=2)


def _summary(result) -> str:
    return json.dumps(result.summary(), sort_keys=True, default=str)


def test_the_overlapped_run_equals_the_run_without_a_thread(counts, monkeypatch):
    """The same arithmetic: BLAS held at one thread in both runs (what the overlap holds)."""
    from posgeom._threads import blas_threads

    config = GeometryConfig(model_dim=32, estimator="plugin")
    monkeypatch.setattr(job, "OVERLAP_ABOVE", 0)  # 60 positions: on the thread
    overlapped = analyze(counts, config, kind="compare")
    monkeypatch.setattr(job, "OVERLAP_ABOVE", 10**9)
    with blas_threads(1):
        inline = analyze(counts, config, kind="compare")
    assert _summary(overlapped) == _summary(inline)
    np.testing.assert_array_equal(overlapped.mds.coordinates, inline.mds.coordinates)


def test_short_contexts_run_the_eigensolve_in_line(counts, monkeypatch):
    """Up to OVERLAP_ABOVE no thread is started: SMACOF and the dense scores keep BLAS's own
    threads (at n = 1,024 the refinement took 14 s on one thread)."""
    import threading

    started = []
    real = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda t: (started.append(t.name), real(t)))
    analyze(counts, GeometryConfig(model_dim=32), kind="compare")
    assert "posgeom-mds" not in started
    monkeypatch.setattr(job, "OVERLAP_ABOVE", 0)
    analyze(counts, GeometryConfig(model_dim=32), kind="compare")
    assert "posgeom-mds" in started


def test_rows_keep_the_registry_order_with_the_fitted_rows_among_them(counts):
    result = analyze(counts, GeometryConfig(model_dim=32), kind="compare")
    names = [r["encoding"] for r in result.rows]
    assert names == [x for x in default_encodings() if x in names]
    assert {"mds", "low_rank_mds", "sinusoidal"} <= set(names)


def test_an_error_of_the_eigensolve_reaches_the_caller(counts, monkeypatch):
    def broken(*args, **kwargs):
        raise PosgeomError("the eigensolve failed here")

    monkeypatch.setattr(job, "embed", broken)
    monkeypatch.setattr(job, "OVERLAP_ABOVE", 0)
    with pytest.raises(PosgeomError, match="the eigensolve failed here"):
        analyze(counts, GeometryConfig(model_dim=32), kind="compare")
