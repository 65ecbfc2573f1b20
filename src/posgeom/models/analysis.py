"""A pretrained model against a corpus: its position table and its layer-wise positional signal,
both scored against the corpus's own Hellinger geometry.

:func:`analyze_model` tokenizes the corpus **once** with the model's tokenizer and uses the same
token-id sequences for both halves, so positions line up exactly:

1. counts ``C[i, t]`` for positions ``0..n-1`` (:func:`posgeom.corpus.counting.count_positions`,
   start-aligned, with the signal's special-token handling), then the geometry pipeline **on the
   target** (:func:`posgeom.analyze`, the MDS rows, with the target's estimator and resolution:
   the target ``D`` (chord convention, ``[0, sqrt 2]``), its MDS encoding, its noise floor and the
   scores of every encoding of the model's own positional mechanism
   (:func:`~posgeom.models.mechanisms.mechanism_encodings`) against ``D``, the plug-in scores
   beside), the same computation ``compare`` makes;
2. the layer-wise signal (:func:`~posgeom.models.layerwise.layerwise_positional_signal`), its
   distances scored against ``D`` with every stress kind.

Special tokens (:mod:`posgeom.models.layerwise`): with ``include_special=False`` they are removed
from the counts *and* skipped by the signal, and the learned table is read from row ``k`` on,
``k`` the number of leading special tokens every sequence shares (1 for ``[CLS]``), so table row
and corpus position refer to the same token slot.

Long sequences are fed whole up to ``limit = min(model positions, max_length)`` tokens and cut
there (``on_long="truncate"``, counted in ``n_truncated``) or refused (``"refuse"``); counting only
uses positions ``< n <= limit``, so truncation never changes the counts.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch

from posgeom._validation import Interval, Options, validate_params
from posgeom.corpus.bootstrap_weights import REPLICATES
from posgeom.models.accumulate import check_every_position
from posgeom.models.batching import ON_LONG, cut_long, keep_counted, tokenize_texts
from posgeom.models.layerwise import layer_stress, layerwise_positional_signal, sequence_limit
from posgeom.models.loading import ModelTokenizer, loaded_model, model_info, model_tokenizer
from posgeom.models.mechanisms import (
    find_positional_mechanisms,
    mechanism_encodings,
    table_start,
)
from posgeom.models.result import ModelAnalysis
from posgeom.models.targets import AnalysisTarget, layer_intervals, target_name
from posgeom.scores.stress import STRESS_KINDS

__all__ = ["analyze_model"]

log = logging.getLogger("posgeom")

# ------------------------------------------------------------------------------------- corpus


def _count(
    seqs: list[np.ndarray],
    tok: ModelTokenizer,
    n: int,
    include_special: bool,
    special: list[int],
    *,
    bootstrap: int | None,
    seed: int,
) -> Any:
    """Counts of positions ``< n`` (bootstrap counts with ``bootstrap`` replicates)."""
    from posgeom.corpus.counting import count_positions

    counts = count_positions(
        seqs,
        max_positions=n,
        tokenizer=tok.tokenizer,
        include_special=include_special,
        special_ids=special,
        bootstrap=bootstrap,
        bootstrap_seed=seed,
    )
    why = ": no sequence of the corpus is that long" + (
        "" if include_special else " (special tokens excluded)"
    )
    check_every_position(counts.totals, why=why, fix="-n")
    return counts


# ----------------------------------------------------------------------------------- encodings


def _baselines(n: int, width: int, seed: int) -> dict[str, Any]:
    """Reference encodings of the model's width: every family's ``model_reference`` (Vaswani
    sinusoidal and a seeded Gaussian)."""
    from posgeom.encodings import families

    every = {name: fam.model_reference(n, width, seed) for name, fam in families().items()}
    return {name: enc for name, enc in every.items() if enc is not None}


def _layer_scores(distances: np.ndarray, target: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Every registered score of every layer's ``(n, n)`` distances against ``target``:
    name -> ``(L+1,)``."""
    from posgeom.scores import available
    from posgeom.scores.registry import score_row

    rows = [score_row(d, target, seed=seed) for d in distances]
    return {name: np.array([float(r[name]) for r in rows]) for name in available()}


# ------------------------------------------------------------------------------------ analysis


@validate_params(
    {
        "max_positions": [Interval(Integral, 3, None)],
        "include_special": [bool],
        "batch_size": [Interval(Integral, 1, None)],
        "on_long": [Options(set(ON_LONG))],
        "max_length": [Interval(Integral, 3, None), None],
        "refine": [bool],
        "noise": [Options({"split_half", "bootstrap"}), None],
        "seed": [Interval(Integral, 0, None)],
        "progress": [bool],
        "baselines": [bool],
        "bootstrap": [REPLICATES, None],
        "level": [Interval(Real, 0, 1, closed="neither")],
    }
)
def analyze_model(
    model: Any,
    tokenizer: Any,
    texts: Iterable[str],
    *,
    max_positions: int,
    include_special: bool = True,
    batch_size: int = 32,
    on_long: str = "truncate",
    max_length: int | None = None,
    refine: bool = True,
    noise: str | None = "split_half",
    seed: int = 0,
    progress: bool = False,
    model_name: str | None = None,
    corpus_name: str = "corpus",
    stress_kinds: tuple[str, ...] = STRESS_KINDS,
    baselines: bool = True,
    target: str = "recommended",
    bootstrap: int | None = 100,
    level: float = 0.95,
    resolution: Any = "auto",
    device: Any = None,
    dtype: Any = None,
) -> ModelAnalysis:
    """Score a model's positional mechanism and its layer-wise signal against a corpus.

    Args:
        model: a loaded Hugging Face model, or a name / local folder (loaded offline).
        tokenizer: anything :func:`posgeom.models.loading.model_tokenizer` accepts; it must be
            the model's (:meth:`ModelTokenizer.check_model`).
        texts: the corpus, one string per sequence (read once).
        max_positions: ``n``, positions ``0..n-1``; every position needs at least one token.
        include_special: count special tokens (see the module docstring).
        on_long, max_length: as in the module docstring.
        refine, noise, seed: passed to :func:`posgeom.analyze` (SMACOF refinement
            of the MDS encoding; noise floor of ``D``).
        baselines: also score two reference encodings of the model's width, ``sinusoidal``
            (Vaswani, base 10000) and ``random`` (seeded Gaussian, whose distances are all about
            equal: its scale-optimal stress is what "no positional structure" scores).
        batch_size: at most this many sequences per forward pass, and at most
            :func:`~posgeom.models.batching.token_budget` padded tokens.
        target: the estimator of the corpus geometry the layers and encodings are scored against
            (:mod:`posgeom.models.targets`): ``"recommended"`` (default), a name of
            :func:`posgeom.estimators.available`, or ``"plugin"`` (the paper's plug-in chord).
            The plug-in scores are always computed too and reported beside the target's.
        resolution: the token classes of the target (:mod:`posgeom.estimators.resolution`).
        device, dtype: where and in what precision a model given by name or folder is loaded
            (:func:`posgeom.models.loading.load_model`; default the CPU, float32). Sums and
            statistics are float64 whatever the dtype.
        bootstrap: ``B`` half-sample replicates of the counts (counted in the same pass) for an
            interval on the stress of every layer, re-estimating the target on each; ``None``:
            no intervals. level: their coverage (method ``"bias_aware"``).

    Returns:
        :class:`ModelAnalysis`.
    """
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.pipeline.rows import MDS_ROWS

    n = int(max_positions)
    name = model_name or (str(model) if isinstance(model, (str, os.PathLike)) else None)
    model = loaded_model(model, device=device, dtype=dtype)
    tok = model_tokenizer(tokenizer)
    tok.check_model(
        model,
        fix="use the tokenizer that belongs to this model (omit --tokenizer "
        "to use the model's own folder)",
    )
    limit = sequence_limit(model, max_length, n)
    special = sorted(tok.special_ids)
    special_arr = np.asarray(special if not include_special else [], dtype=np.int64)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    seqs = tokenize_texts(tok, texts)
    timings["tokenize"] = time.perf_counter() - t0
    read = len(seqs)
    seqs, n_long = cut_long(keep_counted(seqs, special_arr), limit, on_long)
    if n_long:
        log.warning(
            "%d of %d sequences are longer than %d tokens and were cut to their first %d "
            "tokens (counts of positions < n are unchanged; the model sees less context)",
            n_long,
            len(seqs),
            limit,
            limit,
        )

    t0 = time.perf_counter()
    counts = _count(seqs, tok, n, include_special, special, bootstrap=bootstrap, seed=seed)
    timings["count"] = time.perf_counter() - t0

    mechanisms = find_positional_mechanisms(model, on_missing="none")
    start = table_start(mechanisms, seqs, special_arr, n)
    encodings = mechanism_encodings(mechanisms, n, start=start)
    width = int(getattr(getattr(model, "config", None), "hidden_size", None) or 128)
    references = _baselines(n, width, seed) if baselines else {}
    t0 = time.perf_counter()
    name_of_target, fallback = target_name(counts, target)
    # one pipeline on the target: its D, its MDS (MDS_ROW), its noise floor (on the target's
    # token classes), every encoding scored against it, the plug-in scores beside
    config = GeometryConfig(
        families=MDS_ROWS,  # the MDS rows (SMACOF's when refine)
        model_dim=width,
        refine=refine,
        noise=noise,
        max_rank=8,
        intervals=False,
        seed=seed,
        estimator=name_of_target,
        resolution=resolution,
    )
    geometry = analyze(counts, config, encodings={**encodings, **references})
    goal = AnalysisTarget(
        distances=geometry.distances,
        estimator=geometry.options["estimator"],
        estimate=geometry.estimate,
        fallback=fallback,
    )
    timings["geometry"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    signal = layerwise_positional_signal(
        model,
        None,
        sorted(seqs, key=len),
        max_positions=n,
        batch_size=batch_size,
        include_special=include_special,
        special_token_ids=special,
        target=goal.distances,
        progress=progress,
        on_long="refuse",  # already cut to the limit above
        max_length=limit,
        stress_kinds=stress_kinds,
    )
    timings["signal"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    intervals = (
        None
        if bootstrap is None or goal.fallback
        else layer_intervals(
            counts,
            signal.distances,
            estimator=goal.estimator,
            seed=seed,
            level=level,
            # the replicates on the target's own classes (as compare's intervals)
            resolution="full" if geometry.estimate is None else geometry.estimate.class_map,
        )
    )
    timings["intervals"] = time.perf_counter() - t0
    plugin = geometry.estimate is None  # the target is the full-vocabulary plug-in itself
    options = {
        "max_positions": n,
        "include_special": bool(include_special),
        "special_ids": special,
        "table_start_row": start,
        "batch_size": int(batch_size),
        "on_long": on_long,
        "sequence_limit": limit,
        "n_truncated": int(n_long),
        "sequences_read": read,
        "refine": refine,
        "noise": noise,
        "seed": seed,
        "target": goal.estimator,
        "target_fallback": goal.fallback,
        "resolution": geometry.options["resolution"],
        "bootstrap": None if goal.fallback else bootstrap,
        "level": level,
        "torch_threads": torch.get_num_threads(),
    }
    return ModelAnalysis(
        model_name=name or type(model).__name__,
        corpus_name=corpus_name,
        mechanisms=tuple(mechanisms),
        encodings=encodings,
        counts=counts,
        geometry=geometry,
        signal=dataclasses.replace(signal, n_truncated=int(n_long)),
        options=options,
        model_info=model_info(model),
        timings=timings,
        layer_scores=_layer_scores(signal.distances, goal.distances, seed),
        target_geometry=goal,
        plugin_stress=None if plugin else layer_stress(signal.distances, geometry.plugin_distances),
        layer_intervals=intervals or None,
    )
