"""The four small-vocabulary synthetic corpora (three regimes, drifting, stationary, block).

See :mod:`posgeom.synthetic` for the models and the seeding rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int

KINDS = ("three_regimes", "drifting", "stationary", "block")
KIND_DEFAULTS = {  # every option of each kind, with its default
    "three_regimes": {"overlap": 0.1, "concentration": 0.5},
    "drifting": {"periods": (64.0, 16.0), "depth": 0.9, "weights": None},
    "stationary": {"concentration": 0.5},
    "block": {"n_blocks": 4, "concentration": 0.5},
}


def seed_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    model, sample = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(model), np.random.default_rng(sample)


def _options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    if kind not in KINDS:
        raise PosgeomError(f"unknown synthetic kind {kind!r}; choose one of {', '.join(KINDS)}")
    unknown = set(options) - set(KIND_DEFAULTS[kind])
    if unknown:
        raise PosgeomError(
            f"options {sorted(unknown)} do not apply to kind {kind!r}; "
            f"it takes {sorted(KIND_DEFAULTS[kind])}"
        )
    merged = {**KIND_DEFAULTS[kind], **options}
    if "concentration" in merged and not merged["concentration"] > 0:
        raise PosgeomError(f"concentration must be > 0, got {merged['concentration']!r}")
    return merged


def regime_weights(t: np.ndarray, overlap: float) -> np.ndarray:
    """``(n, 3)`` weights of three regimes centred at ``1/6, 1/2, 5/6`` at relative positions
    ``t``: Gaussian kernels of width ``overlap`` normalised per row (0: the nearest centre)."""
    gap = (t[:, None] - np.array([1 / 6, 1 / 2, 5 / 6])[None, :]) ** 2
    if overlap == 0:
        weights = (gap == gap.min(axis=1, keepdims=True)).astype(float)
    else:
        logits = -gap / (2 * overlap**2)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def block_index(n: int, n_blocks: Any) -> np.ndarray:
    """``(n,)`` block of each position: ``n_blocks`` contiguous blocks (``numpy.array_split``)."""
    k = check_int(n_blocks, "n_blocks", 1)
    if k > n:
        raise PosgeomError(f"n_blocks={k} exceeds n_positions={n}")
    parts = np.array_split(np.arange(n), k)
    return np.concatenate([np.full(len(b), j) for j, b in enumerate(parts)])


def check_periods(periods: Any) -> np.ndarray:
    """``periods`` as a 1-D float64 array of positive finite numbers, or one line."""
    per = np.atleast_1d(np.asarray(periods, dtype=np.float64))
    if per.size < 1 or np.any(per <= 0) or not np.all(np.isfinite(per)):
        raise PosgeomError(f"periods must be positive numbers, got {periods!r}")
    return per


def _dirichlet(rng: np.random.Generator, concentration: float, size: int, vocab: int) -> np.ndarray:
    p = rng.dirichlet(np.full(vocab, float(concentration)), size=size)
    return p / p.sum(axis=1, keepdims=True)


def stationary_chain(
    vocab_size: int = 64, *, seed: int = 0, concentration: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, pi)`` of the ``"stationary"`` kind: ``(V, V)`` transition matrix (rows
    ``~ Dirichlet(concentration)``) and its stationary distribution ``pi P = pi`` ``(V,)``."""
    vocab = check_int(vocab_size, "vocab_size", 2)
    rng, _ = seed_streams(seed)
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
    """Exact positional distributions ``mu_i`` of a synthetic model, ``(n, V)`` float64:
    ``kind`` and its ``options`` as in :mod:`posgeom.synthetic` (defaults:
    :data:`KIND_DEFAULTS`; ``depth`` in [0, 1])."""
    n = check_int(n_positions, "n_positions", 1)
    vocab = check_int(vocab_size, "vocab_size", 2)
    opts = _options(kind, options)
    rng, _ = seed_streams(seed)
    t = (np.arange(n) + 0.5) / n
    if kind == "three_regimes":
        regimes = _dirichlet(rng, opts["concentration"], 3, vocab)
        overlap = float(opts["overlap"])
        if overlap < 0:
            raise PosgeomError(f"overlap must be >= 0, got {overlap}")
        mu = regime_weights(t, overlap) @ regimes
    elif kind == "drifting":
        periods = check_periods(opts["periods"])
        m = periods.size
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
        index = block_index(n, opts["n_blocks"])
        mu = _dirichlet(rng, opts["concentration"], int(index[-1]) + 1, vocab)[index]
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
    count = check_int(n_sequences, "n_sequences", 1)
    n = check_int(length, "length", 1)
    vocab = check_int(vocab_size, "vocab_size", 2)
    _, rng = seed_streams(seed)
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
    low = check_int(min_length, "min_length", 1)
    if low > n:
        raise PosgeomError(f"min_length={low} exceeds length={n}")
    lengths = rng.integers(low, n + 1, size=count)
    return [row[:k].copy() for row, k in zip(tokens, lengths, strict=True)]
