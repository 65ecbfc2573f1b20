"""Synthetic corpora with known positional distributions.

Every corpus is drawn from an exact population model, and :func:`synthetic_distributions` returns
that model's positional distributions ``mu_i`` (an ``(n, V)`` float64 array, rows summing to 1), so
estimated and exact geometry can be compared. Defaults follow the paper's synthetic setting:
``n = 32`` positions (the paper pairs it with width ``d = 128``), vocabulary ``V = 64``.

Kinds (``t_i = (i + 1/2) / n`` is the relative position of ``i``):

- ``"three_regimes"``: three distributions ``A, B, C ~ Dirichlet(concentration)``;
  ``mu_i = sum_r w_r(i) R_r`` with Gaussian-kernel weights ``w_r(i) ∝ exp(-(t_i - c_r)^2 / (2
  overlap^2))`` around ``c = (1/6, 1/2, 5/6)``: roughly the first third from ``A``, the middle from
  ``B``, the last from ``C``, blended smoothly near the borders (``overlap = 0``: hard thirds).
- ``"drifting"``: shift-invariant drift. With phases ``phi_t = 2 pi pi(t) / V`` (``pi`` a seeded
  permutation of the vocabulary),
  ``sqrt(mu_i(t)) = u + sum_m v_m cos(omega_m i + psi_m - k_m phi_t)``,
  ``omega_m = 2 pi / periods[m]``, ``k_m = m + 1``, seeded phases ``psi_m``, amplitudes
  ``v_m = depth * u * w_m`` (``w`` = ``weights`` normalised to sum 1) and ``u`` fixed by
  normalisation. Because the token phases are equally spaced (``V > 2 M``), the Hellinger chord
  distance is exactly Toeplitz, ``D_ij^2 = V sum_m v_m^2 (1 - cos(omega_m (i - j)))``: the positions
  are isometric to the sinusoids ``sqrt(V/2) v_m [cos(omega_m i), sin(omega_m i)]``, so classical
  MDS returns them up to rotation (the paper's sinusoid argument).
- ``"stationary"``: a Markov chain with transition rows ``~ Dirichlet(concentration)`` started from
  its stationary distribution ``pi``: every ``mu_i = pi`` (all positional distances are zero) and
  pair statistics depend only on offsets.
- ``"block"``: ``n_blocks`` contiguous blocks of positions (``numpy.array_split``), each with its
  own ``Dirichlet(concentration)`` distribution: zero distance within a block.

Known-truth large-vocabulary model (issue 9): :func:`zipf_distributions` gives exact ``mu_i`` of a
Zipfian vocabulary tilted by position (structures ``drift``, ``three_regimes``, ``blocks``,
``stationary``, ``frequent_only``); :func:`decaying_totals` gives samples per position decaying as
in short-text corpora; :func:`sample_counts` draws multinomial counts and :func:`sample_sequences`
token-id sequences with exactly those position totals (for sequence-level resampling).

Seeds: ``numpy.random.SeedSequence(seed).spawn(2)`` gives one stream for the model (distributions,
transition matrix, phases, permutation) and one for sampling, so :func:`synthetic_distributions`
with the same ``seed`` and options describes exactly the corpus :func:`synthetic_corpus` draws.
Except for ``"stationary"``, tokens at different positions are drawn independently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int

KINDS = ("three_regimes", "drifting", "stationary", "block")
_OPTIONS = {
    "three_regimes": {"overlap": 0.1, "concentration": 0.5},
    "drifting": {"periods": (64.0, 16.0), "depth": 0.9, "weights": None},
    "stationary": {"concentration": 0.5},
    "block": {"n_blocks": 4, "concentration": 0.5},
}


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    model, sample = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(model), np.random.default_rng(sample)


def _options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    if kind not in KINDS:
        raise PosgeomError(f"unknown synthetic kind {kind!r}; choose one of {', '.join(KINDS)}")
    unknown = set(options) - set(_OPTIONS[kind])
    if unknown:
        raise PosgeomError(
            f"options {sorted(unknown)} do not apply to kind {kind!r}; "
            f"it takes {sorted(_OPTIONS[kind])}"
        )
    merged = {**_OPTIONS[kind], **options}
    if "concentration" in merged and not merged["concentration"] > 0:
        raise PosgeomError(f"concentration must be > 0, got {merged['concentration']!r}")
    return merged


def _check_int(value: Any, name: str, minimum: int) -> int:
    return check_int(value, name, minimum)


def _dirichlet(rng: np.random.Generator, concentration: float, size: int, vocab: int) -> np.ndarray:
    p = rng.dirichlet(np.full(vocab, float(concentration)), size=size)
    return p / p.sum(axis=1, keepdims=True)


def stationary_chain(
    vocab_size: int = 64, *, seed: int = 0, concentration: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, pi)`` of the ``"stationary"`` kind: ``(V, V)`` transition matrix (rows
    ``~ Dirichlet(concentration)``) and its stationary distribution ``pi P = pi`` ``(V,)``."""
    vocab = _check_int(vocab_size, "vocab_size", 2)
    rng, _ = _streams(seed)
    p = _dirichlet(
        rng, _options("stationary", {"concentration": concentration})["concentration"], vocab, vocab
    )
    # pi: solve pi (P - I) = 0 with sum(pi) = 1 (least squares on the stacked system)
    a = np.vstack([(p - np.eye(vocab)).T, np.ones((1, vocab))])
    b = np.zeros(vocab + 1)
    b[-1] = 1.0
    pi = np.clip(np.linalg.lstsq(a, b, rcond=None)[0], 0.0, None)
    return p, pi / pi.sum()


def synthetic_distributions(
    n_positions: int = 32,
    vocab_size: int = 64,
    *,
    kind: str = "three_regimes",
    seed: int = 0,
    **options: Any,
) -> np.ndarray:
    """Exact positional distributions ``mu_i`` of a synthetic model, ``(n, V)`` float64.

    ``kind`` and ``options`` as in the module docstring: ``overlap`` (0.1) and ``concentration``
    (0.5) for ``"three_regimes"``; ``periods`` ((64, 16)), ``depth`` (0.9, in [0, 1]) and
    ``weights`` (equal) for ``"drifting"``; ``concentration`` for ``"stationary"``; ``n_blocks``
    (4) and ``concentration`` for ``"block"``.
    """
    n = _check_int(n_positions, "n_positions", 1)
    vocab = _check_int(vocab_size, "vocab_size", 2)
    opts = _options(kind, options)
    rng, _ = _streams(seed)
    t = (np.arange(n) + 0.5) / n
    if kind == "three_regimes":
        regimes = _dirichlet(rng, opts["concentration"], 3, vocab)
        centres = np.array([1 / 6, 1 / 2, 5 / 6])
        overlap = float(opts["overlap"])
        if overlap < 0:
            raise PosgeomError(f"overlap must be >= 0, got {overlap}")
        gap = (t[:, None] - centres[None, :]) ** 2
        if overlap == 0:
            weights = (gap == gap.min(axis=1, keepdims=True)).astype(float)
        else:
            logits = -gap / (2 * overlap**2)
            weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        mu = weights @ regimes
    elif kind == "drifting":
        periods = np.atleast_1d(np.asarray(opts["periods"], dtype=np.float64))
        m = periods.size
        if m < 1 or np.any(periods <= 0) or not np.all(np.isfinite(periods)):
            raise PosgeomError(f"periods must be positive numbers, got {opts['periods']!r}")
        if vocab <= 2 * m:
            raise PosgeomError(f"'drifting' with {m} periods needs vocab_size > {2 * m}")
        depth = float(opts["depth"])
        if not 0 <= depth <= 1:
            raise PosgeomError(f"depth must be in [0, 1] (keeps probabilities >= 0), got {depth}")
        w = np.ones(m) if opts["weights"] is None else np.asarray(opts["weights"], dtype=np.float64)
        if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0:
            raise PosgeomError(f"weights must be {m} non-negative numbers, got {opts['weights']!r}")
        w = w / w.sum()
        u = 1.0 / np.sqrt(vocab * (1 + 0.5 * depth**2 * np.sum(w**2)))
        v = depth * u * w
        phi = 2 * np.pi * rng.permutation(vocab) / vocab
        psi = rng.uniform(0, 2 * np.pi, size=m)
        k = np.arange(1, m + 1)
        ang = (
            (2 * np.pi / periods)[None, :, None] * np.arange(n)[:, None, None]
            + psi[None, :, None]
            - k[None, :, None] * phi[None, None, :]
        )  # (n, m, V)
        root = u + np.einsum("m,nmv->nv", v, np.cos(ang))
        mu = root**2
    elif kind == "stationary":
        _, pi = stationary_chain(vocab, seed=seed, concentration=opts["concentration"])
        mu = np.tile(pi, (n, 1))
    else:  # block
        n_blocks = _check_int(opts["n_blocks"], "n_blocks", 1)
        if n_blocks > n:
            raise PosgeomError(f"n_blocks={n_blocks} exceeds n_positions={n}")
        blocks = _dirichlet(rng, opts["concentration"], n_blocks, vocab)
        index = np.concatenate(
            [np.full(len(b), j) for j, b in enumerate(np.array_split(np.arange(n), n_blocks))]
        )
        mu = blocks[index]
    return mu / mu.sum(axis=1, keepdims=True)


def synthetic_corpus(
    n_sequences: int,
    length: int = 32,
    vocab_size: int = 64,
    *,
    kind: str = "three_regimes",
    seed: int = 0,
    min_length: int | None = None,
    **options: Any,
) -> list[np.ndarray]:
    """Draw ``n_sequences`` token-id sequences (int64 arrays, ids in ``0 .. V-1``).

    Position ``i`` of every sequence is drawn from ``mu_i`` of
    ``synthetic_distributions(length, vocab_size, kind=kind, seed=seed, **options)`` (for
    ``"stationary"``: from the chain, so ``mu_i = pi`` holds for every ``i``). All sequences have
    ``length`` tokens, or, with ``min_length``, a length drawn uniformly from
    ``min_length .. length`` (later positions then have fewer samples, as in real corpora).
    The same arguments always give the same corpus.
    """
    count = _check_int(n_sequences, "n_sequences", 1)
    n = _check_int(length, "length", 1)
    vocab = _check_int(vocab_size, "vocab_size", 2)
    _, rng = _streams(seed)
    uniforms = rng.random((count, n))
    if kind == "stationary":
        opts = _options(kind, options)
        p, pi = stationary_chain(vocab, seed=seed, concentration=opts["concentration"])
        cdf = np.cumsum(p, axis=1)
        tokens = np.empty((count, n), dtype=np.int64)
        tokens[:, 0] = np.searchsorted(np.cumsum(pi), uniforms[:, 0], side="right")
        for i in range(1, n):
            prev = np.minimum(tokens[:, i - 1], vocab - 1)
            tokens[:, i] = (cdf[prev] <= uniforms[:, i, None]).sum(axis=1)
    else:
        cdf = np.cumsum(synthetic_distributions(n, vocab, kind=kind, seed=seed, **options), axis=1)
        tokens = np.stack(
            [np.searchsorted(cdf[i], uniforms[:, i], side="right") for i in range(n)], axis=1
        ).astype(np.int64)
    np.minimum(tokens, vocab - 1, out=tokens)  # guards u >= cdf[-1] = 1 - rounding
    if min_length is None:
        return list(tokens)
    low = _check_int(min_length, "min_length", 1)
    if low > n:
        raise PosgeomError(f"min_length={low} exceeds length={n}")
    lengths = rng.integers(low, n + 1, size=count)
    return [row[:k].copy() for row, k in zip(tokens, lengths, strict=True)]


# ---------------------------------------------------------------------------- known-truth Zipf model
STRUCTURES = ("drift", "three_regimes", "blocks", "stationary", "frequent_only")


def _structure_weights(structure: str, n: int, *, periods: Any, n_blocks: int) -> np.ndarray:
    """``w_r(i)``, shape ``(n, R)``: how much of token field ``r`` tilts position ``i``."""
    i = np.arange(n, dtype=np.float64)
    t = i / max(n - 1, 1)
    if structure in ("drift", "frequent_only"):
        per = np.atleast_1d(np.asarray(periods, dtype=np.float64))
        if per.size < 1 or np.any(per <= 0) or not np.all(np.isfinite(per)):
            raise PosgeomError(f"periods must be positive numbers, got {periods!r}")
        ang = 2 * np.pi * i[:, None] / per[None, :]
        return np.concatenate([np.cos(ang), np.sin(ang)], axis=1) / per.size
    if structure == "three_regimes":
        logits = -((t[:, None] - np.array([1 / 6, 1 / 2, 5 / 6])) ** 2) / (2 * 0.1**2)
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        return w / w.sum(axis=1, keepdims=True)
    if structure == "blocks":
        k = _check_int(n_blocks, "n_blocks", 1)
        if k > n:
            raise PosgeomError(f"n_blocks={k} exceeds n_positions={n}")
        w = np.zeros((n, k))
        for b, rows in enumerate(np.array_split(np.arange(n), k)):
            w[rows, b] = 1.0
        return w
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
    n = _check_int(n_positions, "n_positions", 1)
    vocab = _check_int(vocab_size, "vocab_size", 2)
    if structure not in STRUCTURES:
        raise PosgeomError(
            f"unknown structure {structure!r}; choose one of {', '.join(STRUCTURES)}"
        )
    if not (np.isfinite(exponent) and exponent >= 0):
        raise PosgeomError(f"exponent must be a finite number >= 0, got {exponent!r}")
    if not (np.isfinite(strength) and strength >= 0):
        raise PosgeomError(f"strength must be a finite number >= 0, got {strength!r}")
    rng, _ = _streams(seed)
    weights = _structure_weights(structure, n, periods=periods, n_blocks=n_blocks)
    z = rng.standard_normal((weights.shape[1], vocab))
    if structure == "frequent_only":
        z[:, _check_int(n_frequent, "n_frequent", 1) :] = 0.0
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
    n = _check_int(n_positions, "n_positions", 1)
    hi, lo = _check_int(high, "high", 1), _check_int(low, "low", 1)
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
