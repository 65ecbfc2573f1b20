"""analyze(): one run of the main job, one result, one summary schema for every command; the
plug-in is an ordinary estimate, checked against an independent Hellinger computation."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from posgeom._errors import PosgeomError
from posgeom.corpus.counting import count_positions
from posgeom.pipeline import GeometryConfig, GeometryResult, analyze
from posgeom.pipeline.target import PluginEstimate
from posgeom.synthetic import synthetic_corpus

N = 14


@pytest.fixture(scope="module")
def counts():
    return count_positions(synthetic_corpus(500, length=N, seed=4), max_positions=N)


@pytest.fixture(scope="module")
def compared(counts):
    return analyze(counts, GeometryConfig(model_dim=16, seed=1), kind="compare")


def _rows_equal(a, b):
    """Equal rows, key for key and number for number (inf and nan included: JSON text)."""
    assert json.dumps(list(a), default=str) == json.dumps(list(b), default=str)


def test_the_plugin_is_an_ordinary_estimate(counts):
    """estimator="plugin": the target is an estimate like any other, its D the Hellinger chord
    of the positional distributions (scipy's pdist on sqrt(mu): an independent computation), its
    full-rank MDS reproduces D (paper stress 0), and the summary names it."""
    res = analyze(counts, estimator="plugin", model_dim=32, families=("mds",), noise=None)
    assert isinstance(res.target, PluginEstimate) and res.estimate is None  # the old API's None
    mu = np.asarray(counts.counts.toarray(), dtype=np.float64)
    mu /= mu.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(res.distances, squareform(pdist(np.sqrt(mu))), atol=1e-12)
    assert res.row("mds")["paper"] < 1e-12
    summary = res.summary()
    assert summary["estimator"] == {
        "estimator": "plugin",
        "convention": "chord",
        "resolution": "full",
    }
    assert summary["options"]["estimator"] == "plugin" and "plugin_scores" not in summary


def test_one_schema_for_every_command(counts, compared):
    """geometry, run, demo and compare: the same keys, the kind naming the command, the rank
    curve of the same length, stationarity everywhere; compare writes comparison.json."""
    config = GeometryConfig(model_dim=16, seed=1)
    docs = {k: analyze(counts, config, kind=k).summary() for k in ("geometry", "run", "demo")}
    docs["compare"] = compared.summary()
    keys = {k: set(v) for k, v in docs.items()}
    assert all(v == keys["compare"] for v in keys.values())
    assert {k: v["kind"] for k, v in docs.items()} == {k: k for k in docs}
    assert len({len(v["rank_curve"]) for v in docs.values()}) == 1
    assert {"stationarity", "scores", "heads", "verdict", "options"} <= keys["compare"]
    assert docs["geometry"]["scores"] == docs["compare"]["scores"]
    assert compared.files[0] == "comparison.json"
    with pytest.raises(PosgeomError, match="kind must be one of"):
        analyze(counts, config, kind="table")


def test_the_summary_is_built_once(compared, monkeypatch, tmp_path):
    """summary(), markdown(), to_json() and write() read one summary: its verdict is computed
    once per result."""
    import posgeom.text.verdict as verdict_module

    calls = []
    real = verdict_module.verdict_block
    monkeypatch.setattr(verdict_module, "verdict_block", lambda *a: calls.append(a) or real(*a))
    made = [f.name for f in dataclasses.fields(compared) if f.init]  # the rest: set when made
    fresh = GeometryResult(**{f: getattr(compared, f) for f in made})
    fresh.summary(), fresh.markdown(), fresh.to_json(), fresh.write(tmp_path)
    assert len(calls) == 1
    doc = json.loads((tmp_path / "comparison.json").read_text())
    assert doc == json.loads(fresh.to_json()) and fresh.markdown().endswith(
        doc["verdict"]["line"] + "\n"
    )


def _count_calls(monkeypatch, module_name, function_name):
    """Wrap ``module_name.function_name`` and every posgeom module's own binding of it;
    returns the list of ``(first argument, its name argument)`` of the calls."""
    calls = []
    real = getattr(sys.modules[module_name], function_name)

    def counted(*args, **kwargs):
        first = args[0] if args else None
        first = np.array(first, dtype=np.float64) if isinstance(first, np.ndarray) else first
        calls.append((first, args[1] if len(args) > 1 else kwargs.get("name")))
        return real(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("posgeom") and getattr(module, function_name, None) is real:
            monkeypatch.setattr(module, function_name, counted)
    return calls


@pytest.mark.parametrize("command", ["geometry", "compare"])
def test_one_command_validates_each_target_once(counts, monkeypatch, tmp_path, command):
    """`posgeom geometry` / `compare` on a counts file: the summary built once, and each target
    distance matrix (the estimate's D, the plug-in D beside it) validated once, and nothing else
    (the encodings' distances are valid by construction)."""
    from posgeom.cli.main import main
    from posgeom.io.artifacts import load_artifact

    path = counts.save(tmp_path / "c.npz")
    validated = _count_calls(monkeypatch, "posgeom._distance_matrix", "check_distance_matrix")
    summaries = _count_calls(monkeypatch, "posgeom.text.verdict", "verdict_block")
    out = tmp_path / "g"
    given = [str(path)] if command == "geometry" else ["--counts", str(path)]
    assert main(["-q", command, *given, "-o", str(out), "-d", "16"]) == 0
    arrays, _ = load_artifact(out / "arrays.npz")
    targets = [arrays["hellinger"], arrays["plugin_hellinger"]]  # recommended: both
    as_target = [a for a, name in validated if name in ("target", "plugin")]  # by target name
    assert len(as_target) == len(targets)
    for target in targets:
        assert sum(np.array_equal(a, target) for a in as_target) == 1
    # nothing else: the encodings' and MDS rows' distances are derived from their vectors
    assert len(validated) == len(targets)
    assert len(summaries) == 1


def test_the_counts_are_recognised_once(counts, monkeypatch):
    """One normalisation of the counts per run of the plug-in pipeline (distributions, target,
    MDS, noise floor, rows and intervals all read the one CountMatrix); with a position dropped
    below min_samples, one more for the kept rows, a matrix of its own."""
    import posgeom.geometry.counts as counts_module

    normalised = _count_calls(monkeypatch, "posgeom.geometry.counts", "_normalise")
    analyze(counts, estimator="plugin", model_dim=16)
    assert len(normalised) == 1
    seqs = [s[: N - k % 3] for k, s in enumerate(synthetic_corpus(300, length=N, seed=5))]
    short = count_positions(seqs, max_positions=N)  # the last two positions: fewer samples
    normalised.clear()
    floor = int(short.totals[0])
    res = analyze(short, estimator="plugin", model_dim=16, min_samples=floor, below_min="drop")
    assert res.distributions.n_positions == N - 2 and len(normalised) == 2
    assert counts_module.count_matrix(short).counts.shape[0] == N
