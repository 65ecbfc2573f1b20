"""The corpus fingerprint: an order-dependent hash of the counted sequences that shards combine.

For the counted sequences ``s_0, s_1, ...`` (in order, ids as read: before special-token removal
and truncation) and each of two lanes ``L = (C, R)`` of odd 64-bit constants, all arithmetic
modulo ``2**64``::

    t_ij = mix(ids_ij + (j + 1) * C)                 token j of sequence i
    h_i  = mix(sum_j t_ij + len_i * C * C)           sequence i
    F    = sum_i h_i * R**i                          the lane's value

``mix`` is the splitmix64 finaliser; the fingerprint is the 32 hex digits of the two lanes.
Since ``F(A then B) = F(A) + R**len(A) * F(B)`` (:func:`merge_fingerprints`), shards merged in
order carry the fingerprint of one pass. Not a cryptographic hash.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Fingerprint", "merge_fingerprints"]

_LANES = ((0x9E3779B97F4A7C15, 0xD1B54A32D192ED03), (0xC2B2AE3D27D4EB4F, 0xA0761D6478BD642F))
_MASK = (1 << 64) - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, element-wise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _sequence_hashes(ids: np.ndarray, lengths: np.ndarray, c: int) -> np.ndarray:
    """``h_i`` of every sequence of a batch (uint64, ``(len(lengths),)``)."""
    starts = np.cumsum(lengths) - lengths
    j = np.arange(ids.size, dtype=np.uint64) - np.repeat(starts, lengths).astype(np.uint64)
    with np.errstate(over="ignore"):
        t = _mix(ids.astype(np.uint64) + (j + np.uint64(1)) * np.uint64(c))
        sums = np.zeros(lengths.size, dtype=np.uint64)
        nonempty = lengths > 0
        if t.size:
            sums[nonempty] = np.add.reduceat(t, starts[nonempty])
        return _mix(sums + lengths.astype(np.uint64) * np.uint64((c * c) & _MASK))


class Fingerprint:
    """Running fingerprint of counted sequences (module docstring)."""

    def __init__(self) -> None:
        self.values = [0, 0]
        self.count = 0

    def update(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Add the sequences of one batch (concatenated int64 ids, int64 lengths), in order."""
        m = int(lengths.size)
        if m == 0:
            return
        for lane, (c, r) in enumerate(_LANES):
            h = _sequence_hashes(ids, lengths, c)
            powers = np.full(m, r, dtype=np.uint64)
            powers[0] = 1
            with np.errstate(over="ignore"):
                powers = np.cumprod(powers, dtype=np.uint64)
                batch = int(np.sum(h * powers, dtype=np.uint64))
            shift = pow(r, self.count, 1 << 64)
            self.values[lane] = (self.values[lane] + shift * batch) & _MASK
        self.count += m

    def hexdigest(self) -> str:
        return "".join(f"{v:016x}" for v in self.values)


def merge_fingerprints(a: str, n_a: int, b: str) -> str:
    """The fingerprint of the sequences of ``a`` (``n_a`` of them) followed by those of ``b``.

    Fingerprints of earlier versions (64 hex digits of SHA-256) merge as ``sha256("merge:" + a +
    ":" + b)``, as they did.
    """
    if len(a) != 32 or len(b) != 32:
        import hashlib

        return hashlib.sha256(f"merge:{a}:{b}".encode()).hexdigest()
    fa = [int(a[i : i + 16], 16) for i in (0, 16)]
    fb = [int(b[i : i + 16], 16) for i in (0, 16)]
    out = [
        (x + pow(r, n_a, 1 << 64) * y) & _MASK for (_, r), x, y in zip(_LANES, fa, fb, strict=True)
    ]
    return "".join(f"{v:016x}" for v in out)
