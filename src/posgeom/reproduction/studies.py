"""Studies beyond single comparisons: principal angles to sinusoids, the SST-2 settings sweep."""

from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np

from posgeom.reproduction.settings import MODEL_DIM, PAPER, SYNTH


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


def angle_study(seed: int) -> dict[str, Any]:
    """Section 5: MDS subspaces of drifting / three_regimes corpora vs sinusoidal bases."""
    from posgeom.corpus.counting import count_positions
    from posgeom.embed.mds import classical_mds
    from posgeom.synthetic import KIND_DEFAULTS, synthetic_corpus, synthetic_distributions

    n, vocab, r, d = SYNTH["n"], SYNTH["vocab"], 4, SYNTH["d"]
    periods = tuple(KIND_DEFAULTS["drifting"]["periods"])
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


def alibi_slopes_for(target: np.ndarray, value: float) -> list[float]:
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


def reference_slope_note(sweep: list[dict[str, Any]]) -> str:
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


def paper_sweep(counts: dict[str, Any], counts_nospecial: dict[str, Any]) -> list[dict[str, Any]]:
    """Stress of sinusoidal / RoPE / best ALiBi head on SST-2 for the settings the paper leaves
    open: n, special tokens, Hellinger convention, RoPE head width."""
    from posgeom import encodings as E
    from posgeom.encodings import rope_heads
    from posgeom.geometry.distributions import positional_distributions
    from posgeom.geometry.divergences import hellinger_distances
    from posgeom.scores.stress import stress_scores

    rows = []
    settings = (("with [CLS]/[SEP]", counts), ("without", counts_nospecial))
    ns = (16, 24, 32, 40, 48, 56, 64)
    for key, (special, source), n in product(("sst2_glue", "sst2_sentence"), settings, ns):
        c = source.get(key)
        if c is None or n > c.max_positions or c.totals[n - 1] < 5:
            continue
        dist = positional_distributions(c.counts[:n])  # one Gram for both conventions
        for conv in ("chord", "normalized"):
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
                row[f"rope_{hd}"] = stress_scores(rope_heads(n, MODEL_DIM, hd), target).paper
            heads = E.alibi(n, 12).head_stresses(target)
            row["alibi_best"] = float(heads.min())
            row["alibi_best_head"] = int(np.argmin(heads))
            for hd in (64, 128):
                row[f"distance_to_paper_{hd}"] = float(
                    np.hypot(
                        np.log(sin / PAPER["sinusoidal_sst2"]),
                        np.log(row[f"rope_{hd}"] / PAPER["rope_sst2"]),
                    )
                )
            row["alibi_slopes_for_paper"] = alibi_slopes_for(target, PAPER["alibi_sst2"])
            rows.append(row)
    return rows
