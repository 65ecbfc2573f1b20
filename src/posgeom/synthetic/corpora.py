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
    """Exact positional distributions ``mu_i`` of a synthetic model, ``(n, V)`` float64.

    ``kind`` and ``options`` as in the module docstring: ``overlap`` (0.1) and ``concentration``
    (0.5) for ``"three_regimes"``; ``periods`` ((64, 16)), ``depth`` (0.9, in [0, 1]) and
    ``weights`` (equal) for ``"drifting"``; ``concentration`` for ``"stationary"``; ``n_blocks``
    (4) and ``concentration`` for ``"block"``.
    """
    n = check_int(n_positions, "n_positions", 1)
    vocab = check_int(vocab_size, "vocab_size", 2)
    opts = _options(kind, options)
    rng, _ = seed_streams(seed)
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
        n_blocks = check_int(opts["n_blocks"], "n_blocks", 1)
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
