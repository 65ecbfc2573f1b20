"""Issue 27 item 23: every public function raises PosgeomError for wrong input, never a raw
TypeError / ValueError / AttributeError of numpy or of Python.

Each function of ``posgeom.__all__`` has one valid call here (run once, so the table cannot rot),
then every argument the caller passes as data is replaced, one at a time, by values of the wrong
type. ``test_every_public_function_is_in_the_sweep`` fails when a new public function is added
without a row.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import numpy as np
import pytest

import posgeom
from posgeom import PosgeomError

WRONG = [None, "x", object(), 3.5, {"a": 1}]


class _Inputs:
    """Small real inputs, built once (module fixture)."""

    def __init__(self, tmp) -> None:
        rng = np.random.default_rng(0)
        self.seqs = rng.integers(0, 12, size=(300, 8))
        self.counts = posgeom.count_positions(self.seqs, max_positions=8, vocab_size=12)
        self.boot = posgeom.count_positions(
            self.seqs, max_positions=8, vocab_size=12, bootstrap=4, bootstrap_seed=1
        )
        self.mu = posgeom.positional_distributions(self.counts)
        self.D = posgeom.hellinger_distances(self.mu)
        self.mds = posgeom.classical_mds(self.mu, 3, model_dim=6)
        self.vectors = self.mds.embedding
        self.corpus = tmp / "c.txt"
        self.corpus.write_text("a b c\nb c d e\n" * 20)
        self.ids = tmp / "ids.npy"
        np.save(self.ids, self.seqs)
        self.artifact = posgeom.save_artifact(tmp / "a.npz", {"x": np.ones(3)}, kind="test")
        self.out = tmp
        self.artifact_counts = self.counts.save(tmp / "counts.npz")
        self.word = posgeom.WordLevelTokenizer(["[UNK]", "a", "b"])
        self.table = tmp / "table.npy"  # a path: a string there is a model name, not a type error
        np.save(self.table, self.vectors)
        self.result = posgeom.analyze(self.counts, model_dim=8)
        from posgeom.lags import count_lags, top_classes

        token_counts = np.bincount(self.seqs.ravel(), minlength=12)
        self.lag_counts = count_lags(
            list(self.seqs), top_classes(token_counts, 4), lags=np.array([1, 2, 3]), replicates=4
        )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> _Inputs:
    return _Inputs(tmp_path_factory.mktemp("api"))


def _calls(x: _Inputs) -> dict[str, tuple[tuple, dict, tuple[int, ...]]]:
    """name -> (positional arguments, keywords, indices of the data arguments to break)."""
    D, mu, vec = x.D, x.mu, x.vectors
    return {
        "count_positions": ((x.seqs,), {"max_positions": 8}, (0,)),
        "count_corpus": ((x.corpus, "word"), {"max_positions": 4, "progress": False}, (0, 1)),
        "count_distributed": ((x.ids,), {"max_positions": 4, "n_workers": 1}, (0,)),
        "count_resumable": ((x.ids,), {"max_positions": 4, "progress": False}, (0,)),
        "load_tokenizer": (("word",), {}, (0,)),
        "read_texts": ((x.corpus,), {}, (0,)),
        "read_token_ids": ((x.ids,), {}, (0,)),
        "synthetic_corpus": ((20,), {"length": 8}, (0,)),
        "synthetic_distributions": ((8, 12), {}, (0, 1)),
        "blocked_stress": ((vec, posgeom.HellingerBlocks(mu)), {}, (0, 1)),
        "sampled_stress": ((vec, posgeom.HellingerBlocks(mu)), {"n_pairs": 100}, (0, 1)),
        "gower_extension": (
            (x.mds.coordinates, x.mds.eigenvalues[:3], D**2, D[:2] ** 2),
            {},
            (0, 1, 2, 3),
        ),
        "save_artifact": ((x.out / "b.npz", {"x": np.ones(2)}), {"kind": "t"}, (0, 1)),
        "load_artifact": ((x.artifact,), {}, (0,)),
        "positional_distributions": ((x.counts,), {}, (0,)),
        "hellinger_distances": ((mu,), {}, (0,)),
        "fisher_rao_distances": ((mu,), {}, (0,)),
        "bhattacharyya_coefficients": ((mu,), {}, (0,)),
        "noise_floor": ((x.counts,), {"n_repeats": 2}, (0,)),
        "estimate_geometry": ((x.counts,), {}, (0,)),
        "classical_mds": ((mu, 2), {}, (0, 1)),
        "effective_rank": ((x.mds,), {}, (0,)),
        "effective_ranks": ((x.mds,), {}, (0,)),
        "low_rank_factors": ((x.mds, 2), {}, (0, 1)),
        "smacof_refine": ((D,), {"n_components": 2, "max_iter": 5}, (0,)),
        "stress": ((vec, D), {}, (0, 1)),
        "stress_scores": ((vec, D), {}, (0, 1)),
        "scale_optimal_stress": ((vec, D), {}, (0, 1)),
        "encoding_distances": ((vec,), {}, (0,)),
        "monotonicity_violation_rate": ((vec, D), {}, (0, 1)),
        "separation_margin": ((vec,), {}, (0,)),
        "shepard_table": ((vec, D), {}, (0, 1)),
        "bootstrap_scores": ((x.boot, {"v": vec}), {}, (0, 1)),
        "bootstrap_vector": ((x.boot, [vec]), {}, (0, 1)),
        "bootstrap_interval": ((0.5, [0.4, 0.5, 0.6]), {}, (0, 1)),
        "replicate_geometry": ((x.boot,), {}, (0,)),
        "stationarity": ((D,), {}, (0,)),
        "lag_geometry": ((x.lag_counts,), {"n_null": 2}, (0,)),
        "extend": (("rope", x.ids), {"target_length": 16, "trained_length": 8}, (0, 1)),
        "analyze": ((x.counts,), {"model_dim": 8}, (0,)),
        "score_encoding": ((vec, D), {}, (0, 1)),
        "probe": ((x.table,), {"seeds": 2, "folds": 2, "pairs": 20}, (0,)),
        "report": ((x.result, x.out / "r.html"), {"figures": False}, (0, 1)),
    }


def _public_functions() -> list[str]:
    return sorted(name for name in posgeom.__all__ if inspect.isfunction(getattr(posgeom, name)))


def test_every_public_function_is_in_the_sweep(inputs):
    assert sorted(_calls(inputs)) == _public_functions()


def _acceptable(valid: Any, bad: Any, default: Any) -> bool:
    """Whether ``bad`` is of the valid argument's own kind (its type, a string for a path, None
    for a parameter whose default is None): a value, not a type, mistake, which the function
    may accept."""
    path = isinstance(valid, os.PathLike) and isinstance(bad, str)
    return path or type(valid) is type(bad) or (bad is None and default is None)


SLOW = {"extend", "report"}  # torch and the page: seconds; e2e (their own tests run them too)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.e2e] if name in SLOW else [])
        for name in _public_functions()
        if name != "count_distributed"  # starts a Dask cluster: test_distributed.py
    ],
)
def test_public_function_valid_call_runs(inputs, name):
    args, kwargs, _ = _calls(inputs)[name]
    getattr(posgeom, name)(*args, **kwargs)


@pytest.mark.parametrize("name", _public_functions())
def test_public_function_wrong_types_raise_posgeom_error(inputs, name):
    args, kwargs, broken = _calls(inputs)[name]
    function = getattr(posgeom, name)
    parameters = list(inspect.signature(function).parameters.values())
    refused = 0  # wrong calls made: none would leave the test nothing to check
    for index in broken:
        for bad in WRONG:
            if _acceptable(args[index], bad, parameters[index].default):
                continue
            call = list(args)
            call[index] = bad
            try:
                function(*call, **kwargs)
            except PosgeomError:
                refused += 1
                continue
            except Exception as exc:
                pytest.fail(
                    f"{name}(argument {index} = {bad!r}) raised {type(exc).__name__}: {exc}"
                )
            pytest.fail(f"{name}(argument {index} = {bad!r}) raised nothing")
    assert refused > 0, f"{name}: no argument of the sweep was given a wrong type"


def _methods(x: _Inputs) -> dict[str, tuple[Any, tuple, tuple[int, ...]]]:
    """Public classes' constructors and loaders: name -> (callable, arguments, data indices)."""
    boot_file = x.boot.save(x.out / "boot.npz")
    return {  # the keys are METHODS
        "HellingerBlocks": (posgeom.HellingerBlocks, (x.mu,), (0,)),
        "WordLevelTokenizer": (posgeom.WordLevelTokenizer, (["[UNK]", "a"],), (0,)),
        "WordLevelTokenizer.fit": (posgeom.WordLevelTokenizer().fit, (["a b", "b"],), (0,)),
        "WordLevelTokenizer.encode_batch": (x.word.encode_batch, (["a b", "c"],), (0,)),
        "PositionCounts.load": (posgeom.PositionCounts.load, (x.artifact_counts,), (0,)),
        "BootstrapCounts.load": (posgeom.BootstrapCounts.load, (boot_file,), (0,)),
        "PositionCounts.first_positions": (x.counts.first_positions, (4,), (0,)),
        "PositionCounts.merge": (x.counts.merge, (x.counts,), (0,)),
    }


METHODS = (
    "HellingerBlocks",
    "WordLevelTokenizer",
    "WordLevelTokenizer.fit",
    "WordLevelTokenizer.encode_batch",
    "PositionCounts.load",
    "BootstrapCounts.load",
    "PositionCounts.first_positions",
    "PositionCounts.merge",
)


@pytest.mark.parametrize("name", METHODS)
def test_public_methods_wrong_types_raise_posgeom_error(inputs, name):
    function, args, broken = _methods(inputs)[name]
    function(*args)  # the valid call runs
    parameters = list(inspect.signature(function).parameters.values())
    wrong = [
        (index, bad)
        for index in broken
        for bad in WRONG
        if not _acceptable(args[index], bad, parameters[index].default)
    ]
    assert wrong, f"{name}: no argument of the sweep is given a wrong type"
    for index, bad in wrong:
        with pytest.raises(PosgeomError):
            function(*[bad if i == index else a for i, a in enumerate(args)])
