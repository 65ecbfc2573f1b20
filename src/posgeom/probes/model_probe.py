"""A model and a corpus: the layer probes, the positional part, the monotone channels and the
geometry, from one pass (:func:`posgeom.probe` with a corpus; see :mod:`posgeom.probes.api`)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.models.batching import cut_long, keep_counted, sequences
from posgeom.models.layer_signal import stress_cells
from posgeom.probes.agreement import agreement
from posgeom.probes.corpus_pass import run_pass
from posgeom.probes.layers import probe_layers
from posgeom.probes.monotone import monotone_channels
from posgeom.probes.positional import positional_part
from posgeom.probes.result import ProbeResult
from posgeom.probes.sources import read_table
from posgeom.probes.states import ProbedModel, open_model
from posgeom.probes.table import probe_table

__all__ = ["probe_model"]


def _geometry(
    seqs: list[np.ndarray],
    probed: ProbedModel,
    means: np.ndarray,
    *,
    n: int,
    include_special: bool,
    estimator: str,
    bootstrap: int | None,
    level: float,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
    """Stress of every layer's per-position means against the corpus geometry, the target
    (``estimator``, the ``resolution`` and token ``classes`` it was estimated at, whether its
    leading direction rises above the noise: ``resolved``, and ``noise_share``: the share of
    position pairs above twice their split-half noise floor on the target's classes, as
    ``analyze-model`` records it), and the per-layer intervals (``bootstrap`` half-sample
    replicates, :func:`posgeom.models.targets.layer_intervals`, as ``analyze-model``'s)."""
    from posgeom.corpus.counting import count_positions
    from posgeom.models.layerwise import layer_distances, layer_stress
    from posgeom.models.targets import analysis_target, layer_intervals

    tok = probed.tokenizer
    counts = count_positions(
        seqs,
        max_positions=n,
        tokenizer=None if tok is None else tok.tokenizer,
        include_special=include_special,
        special_ids=list(probed.special_ids),
        vocab_size=None if tok is not None else int(max(int(s.max()) for s in seqs) + 1),
        bootstrap=bootstrap,
        bootstrap_seed=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a fallback is recorded below
        goal = analysis_target(counts, estimator=estimator, seed=seed)
    distances = layer_distances(means)
    est = goal.estimate
    target: dict[str, Any] = {"estimator": goal.estimator}
    if est is not None:  # the resolution it was estimated at, as analyze-model records it
        said = est.summary()
        target |= {"resolution": said.get("resolution"), "classes": said.get("classes")}
        target["resolved"] = (said.get("projection") or {}).get("resolved")
    target["noise_share"] = _noise_share(counts, est, seed)
    intervals = {}
    if bootstrap and not goal.fallback:  # the classes of the target ("full": the plug-in's)
        classes = "full" if est is None else est.class_map
        intervals = layer_intervals(
            counts, distances, estimator=goal.estimator, seed=seed, level=level, resolution=classes
        )
    return layer_stress(distances, goal.distances), target, intervals


def _noise_share(counts: Any, estimate: Any, seed: int) -> float | None:
    """``trusted_pair_share`` of the split-half noise floor (5 splits, the pipeline's default)
    of the counts on the target's classes (the full vocabulary for a plug-in target)."""
    from posgeom.geometry.noise import noise_floor

    rows = getattr(counts, "base", counts)
    if estimate is not None and estimate.class_map is not None and estimate.resolution != "full":
        rows = estimate.class_counts
    try:
        floor = noise_floor(rows, method="split_half", n_repeats=5, seed=seed)
    except PosgeomError:  # a position with fewer than 2 samples: no floor
        return None
    return float(floor.summary(np.arange(floor.distances.shape[0]))["trusted_pair_share"])


def _table_of(source: Any, probed: ProbedModel, n: int, options: dict[str, Any] | None) -> Any:
    if options is None:
        return None
    try:
        is_file = isinstance(source, (str, os.PathLike)) and Path(source).is_file()
        table, _ = read_table(source if is_file else probed.module, n=n)
    except PosgeomError:
        return None  # no learned table (RoPE, ALiBi, NoPE): layer probes only
    return probe_table(table, source=f"{probed.name} table", **options)


def _mechanism_layers(module: Any) -> list[dict[str, Any]] | None:
    """The model's per-layer map (which blocks each positional mechanism acts on, ``none``: the
    blocks without one), or ``None`` for a module that is not a Hugging Face model."""
    if getattr(module, "config", None) is None:
        return None
    from posgeom.models.mechanisms import find_positional_mechanisms

    found = find_positional_mechanisms(module, on_missing="none")
    return [
        {"kind": m.kind, "layers": None if m.layers is None else list(m.layers), "stack": m.stack}
        for m in found
    ]


def probe_model(
    model: Any,
    corpus: Iterable[Any],
    *,
    n: int,
    tokenizer: Any,
    gguf_file: str | None,
    device: Any = None,
    dtype: Any = None,
    table_options: dict[str, Any] | None,
    per_position: int,
    kinds: tuple[str, ...],
    folds: int,
    geometry: bool,
    estimator: str,
    bootstrap: int | None,
    include_special: bool,
    batch_size: int,
    level: float,
    seed: int,
    progress: bool,
) -> ProbeResult:
    """Everything :func:`posgeom.probe` measures on a model and a corpus."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    probed = open_model(model, tokenizer, gguf_file=gguf_file, device=device, dtype=dtype)
    special = np.asarray([] if include_special else probed.special_ids, dtype=np.int64)
    items = list(corpus)
    if probed.encode is None and any(isinstance(item, str) for item in items):
        raise PosgeomError(f"{probed.name} reads token ids only: pass token-id sequences")
    seqs = [np.asarray(r, dtype=np.int64) for r in sequences(items, probed.encode, chunk=1024)]
    seqs = keep_counted(seqs, special)
    seqs, n_cut = cut_long(seqs, probed.limit, "truncate")
    timings["load_and_tokenize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    done = run_pass(
        probed,
        seqs,
        n=n,
        special=special,
        per_position=per_position,
        batch_size=batch_size,
        seed=seed,
        progress=progress,
    )
    timings["pass"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sample = done.sample
    probes = probe_layers(
        sample.states,
        sample.positions,
        sample.sequences,
        kinds=kinds,
        folds=folds,
        seed=seed,
        level=level,
        progress=progress,
    )
    timings["layer_probes"] = time.perf_counter() - t0
    moments = done.moments
    rows = [
        {**p, **part, **{k: v for k, v in mono.items() if k != "layer"}}
        for p, part, mono in zip(
            probes.rows(),
            positional_part(moments.means, moments.variance_explained),
            monotone_channels(moments.means),
            strict=True,
        )
    ]
    target, agree = None, None
    if geometry:
        t0 = time.perf_counter()
        stress, target, intervals = _geometry(
            seqs,
            probed,
            moments.means,
            n=n,
            include_special=include_special,
            estimator=estimator,
            bootstrap=bootstrap,
            level=level,
            seed=seed,
        )
        for layer, row in enumerate(rows):  # analyze-model's keys
            row |= stress_cells(stress, intervals, layer)
        if "linear" in kinds:
            agree = agreement(
                probes.values["linear"].mean(axis=1),
                stress["scale_optimal"],
                moments.variance_explained,
                level=level,
                seed=seed,
            )
        timings["geometry"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = _table_of(model, probed, n, table_options)
    timings["table_probes"] = time.perf_counter() - t0
    options = {
        "mode": "model",
        "model": probed.name,
        "n_positions": n,
        "sequences": done.n_sequences,
        "sequences_cut": int(n_cut),
        "sequence_limit": probed.limit,
        "include_special": include_special,
        "per_position": per_position,
        "sampled_tokens": int(sample.positions.size),
        "token_counts": moments.counts.tolist(),
        "chance_mae": probes.chance,
        "layer_probes": probes.protocol,
        "positional_part": "Song & Zhong: per-position mean vs residual; ranks of the centred means",
        "monotone": "Yu et al.: Spearman of channel mean vs position, |rho| >= 0.9, Bonferroni p",
        "target": target,
        "bootstrap": bootstrap if geometry else None,
        "mechanism_layers": _mechanism_layers(probed.module),
        "batch_size": batch_size,
        "seed": seed,
        "level": level,
    }
    return ProbeResult(
        source=probed.name,
        table=table,
        layers=tuple(rows),
        agreement=agree,
        options=options,
        timings=timings,
    )
