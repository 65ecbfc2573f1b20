"""Known-truth large-vocabulary model (issue 9): exact Zipfian ``mu_i`` tilted by position,
samples per position decaying as in short-text corpora, multinomial counts and sequences.

See :mod:`posgeom.synthetic` for the seeding rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.synthetic.corpora import block_index, check_periods, regime_weights, seed_streams

STRUCTURES = ("drift", "three_regimes", "blocks", "stationary", "frequent_only")


def _structure_weights(structure: str, n: int, *, periods: Any, n_blocks: int) -> np.ndarray:
    """``w_r(i)``, shape ``(n, R)``: how much of token field ``r`` tilts position ``i``."""
    i = np.arange(n, dtype=np.float64)
    if structure in ("drift", "frequent_only"):
        per = check_periods(periods)
        ang = 2 * np.pi * i[:, None] / per[None, :]
        return np.concatenate([np.cos(ang), np.sin(ang)], axis=1) / per.size
    if structure == "three_regimes":
        return regime_weights(i / max(n - 1, 1), 0.1)
    if structure == "blocks":
        index = block_index(n, n_blocks)
        return np.eye(index[-1] + 1)[index]
    return np.zeros((n, 1))  # stationary


def zipf_distributions(
    n_positions: int = 48,
    vocab_size: int = 30_000,
    *,
    exponent: float = 1.05,
    structure: str = "drift",
    strength: float = 0.7,
    periods: Any = (64.0, 16.0),
    n_blocks: int = 4,
    n_frequent: int = 100,
    seed: int = 0,
) -> np.ndarray:
    """Exact positional distributions of a Zipfian vocabulary that moves with position, ``(n, V)``.

    A large-alphabet model with a known truth (the regime of real tokenizers: tens of thousands of
    token types, most of them rare). Token ``t`` (id = frequency rank) has base probability
    ``p0(t) ∝ (t + 1)^-exponent``; every position tilts it exponentially::

        mu_i(t) ∝ p0(t) exp(strength * g_i(t)),   g_i(t) = sum_r w_r(i) z_r(t)

    with seeded Gaussian token fields ``z_r(t) ~ N(0, 1)`` and ``t_i = i / (n - 1)`` in [0, 1]:

    - ``"drift"``: ``g_i = (1/M) sum_m [cos(2 pi i / P_m) z_2m + sin(2 pi i / P_m) z_2m+1]`` over
      ``periods`` ``P = (64, 16)``: a smooth periodic drift (for small ``strength`` the geometry
      is close to that of the sinusoids, as in the ``"drifting"`` kind);
    - ``"three_regimes"``: soft thirds, ``w_r(i) ∝ exp(-(t_i - c_r)^2 / (2 * 0.1^2))``,
      ``c = (1/6, 1/2, 5/6)``, fields ``z_1, z_2, z_3``;
    - ``"blocks"``: ``n_blocks`` contiguous blocks (``numpy.array_split``), block ``b`` uses
      ``z_b``: zero distance inside a block;
    - ``"stationary"``: ``g_i = 0``: every ``mu_i = p0`` (all distances are zero);
    - ``"frequent_only"``: the drift, restricted to the ``n_frequent`` most frequent tokens
      (``z_r(t) = 0`` for ``t >= n_frequent``): the conditional distribution of the tail never
      moves.

    Rows are normalised in float64 and sum to 1. Small ``strength`` gives Hellinger chords
    ``D_ij ≈ (strength / 2) sd_mu(g_i - g_j)`` (Fisher information of the exponential family).
    The default (``strength = 0.7``, ``n = 48``, ``V = 30,000``, Zipf 1.05, drift) has true
    distances of median about 0.32, the regime of issue 9.
    """
    n = check_int(n_positions, "n_positions", 1)
    vocab = check_int(vocab_size, "vocab_size", 2)
    if structure not in STRUCTURES:
        raise PosgeomError(
            f"unknown structure {structure!r}; choose one of {', '.join(STRUCTURES)}"
        )
    if not (np.isfinite(exponent) and exponent >= 0):
        raise PosgeomError(f"exponent must be a finite number >= 0, got {exponent!r}")
    if not (np.isfinite(strength) and strength >= 0):
        raise PosgeomError(f"strength must be a finite number >= 0, got {strength!r}")
    rng, _ = seed_streams(seed)
    weights = _structure_weights(structure, n, periods=periods, n_blocks=n_blocks)
    z = rng.standard_normal((weights.shape[1], vocab))
    if structure == "frequent_only":
        z[:, check_int(n_frequent, "n_frequent", 1) :] = 0.0
    log_mu = float(strength) * (weights @ z)
    log_mu -= float(exponent) * np.log1p(np.arange(vocab, dtype=np.float64))[None, :]
    log_mu -= log_mu.max(axis=1, keepdims=True)
    mu = np.exp(log_mu)
    return mu / mu.sum(axis=1, keepdims=True)


def decaying_totals(
    n_positions: int = 48, *, high: int = 3050, low: int = 336, shape: str = "geometric"
) -> np.ndarray:
    """Samples per position decaying from ``high`` (position 0) to ``low`` (position n-1), int64.

    ``"geometric"``: ``T_i = round(high (low / high)^(i / (n - 1)))`` (short-text corpora such as
    SST-2, where the number of sequences reaching position ``i`` falls off steadily);
    ``"linear"``: ``T_i = round(high + (low - high) i / (n - 1))``. Non-increasing by construction,
    so the totals are those of sequences with lengths (:func:`sample_sequences`).
    """
    n = check_int(n_positions, "n_positions", 1)
    hi, lo = check_int(high, "high", 1), check_int(low, "low", 1)
    if lo > hi:
        raise PosgeomError(f"low={lo} exceeds high={hi}; totals decay with position")
    frac = np.arange(n) / max(n - 1, 1)
    if shape == "geometric":
        totals = hi * (lo / hi) ** frac
    elif shape == "linear":
        totals = hi + (lo - hi) * frac
    else:
        raise PosgeomError(f"unknown shape {shape!r}; use 'geometric' or 'linear'")
    return np.maximum.accumulate(np.round(totals).astype(np.int64)[::-1])[::-1]


def _check_model(mu: Any, totals: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(mu, dtype=np.float64)
    if p.ndim != 2 or not np.allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-8) or np.any(p < 0):
        raise PosgeomError("mu must be (n, V) probabilities with rows summing to 1")
    tot = np.asarray(totals)
    if tot.shape != (p.shape[0],) or not np.issubdtype(tot.dtype, np.integer) or np.any(tot < 0):
        raise PosgeomError(f"totals must be {p.shape[0]} non-negative integers (one per position)")
    return p, tot.astype(np.int64)


def _position_counts(counts: Any, n_sequences: int, options: dict[str, Any]) -> Any:
    import scipy.sparse as sp

    from posgeom.corpus.counting import PositionCounts

    c = sp.csr_matrix(counts, dtype=np.int64)
    c.sort_indices()
    totals = np.asarray(c.sum(axis=1)).ravel().astype(np.int64)
    return PositionCounts(
        counts=c,
        totals=totals,
        n_sequences=int(n_sequences),
        n_tokens=int(totals.sum()),
        options={"max_positions": c.shape[0], "vocab_size": c.shape[1], **options},
    )


def sample_counts(mu: Any, totals: Any, *, seed: int = 0) -> Any:
    """Multinomial counts ``C[i] ~ Multinomial(T_i, mu_i)``, independent rows, as ``PositionCounts``.

    ``mu``: ``(n, V)`` exact distributions; ``totals``: ``(n,)`` integers. The same seed gives the
    same counts. ``n_sequences`` is recorded as ``max(T)`` (no sequences exist here).
    """
    import scipy.sparse as sp

    p, tot = _check_model(mu, totals)
    rng = np.random.default_rng(seed)
    step = max(1, 2**22 // p.shape[1])  # bounded dense temporaries (long contexts)
    parts = [
        sp.csr_matrix(rng.multinomial(tot[lo : lo + step], p[lo : lo + step]))
        for lo in range(0, p.shape[0], step)
    ]
    return _position_counts(sp.vstack(parts), int(tot.max(initial=0)), {"synthetic": "multinomial"})


def sample_sequences(mu: Any, totals: Any, *, seed: int = 0) -> list[np.ndarray]:
    """Token-id sequences whose position totals are exactly ``totals`` (must be non-increasing).

    There are ``T_0`` sequences; ``T_{k-1} - T_k`` of them have length ``k`` (``T_n = 0``), in a
    seeded random order; the token at position ``i`` of every sequence is drawn from ``mu_i``
    independently of the other positions. Counting them with ``count_positions(...,
    max_positions=n)`` gives counts distributed as :func:`sample_counts`, but a resampling of the
    *sequences* (a bootstrap) now couples the positions as in a real corpus.
    """
    p, tot = _check_model(mu, totals)
    if np.any(np.diff(tot) > 0):
        raise PosgeomError("totals of sequences cannot increase with position; sort or fix them")
    rng = np.random.default_rng(seed)
    n, vocab = p.shape
    count = int(tot[0]) if n else 0
    lengths = np.repeat(np.arange(1, n + 1), tot - np.append(tot[1:], 0))
    lengths = lengths[::-1][rng.permutation(count)]  # permute; any order has the same totals
    order = np.argsort(-lengths, kind="stable")  # sequences that reach position i: order[:T_i]
    tokens = np.zeros((count, n), dtype=np.int64)
    cdf = np.cumsum(p, axis=1)
    for i in range(n):
        draws = np.searchsorted(cdf[i], rng.random(tot[i]), side="right")
        tokens[order[: tot[i]], i] = np.minimum(draws, vocab - 1)
    return [tokens[s, : lengths[s]].copy() for s in range(count)]
