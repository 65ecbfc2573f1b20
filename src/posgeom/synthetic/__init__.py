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

Known-truth large-vocabulary model: :mod:`posgeom.synthetic.known_truth`.

Seeds: ``numpy.random.SeedSequence(seed).spawn(2)`` gives one stream for the model (distributions,
transition matrix, phases, permutation) and one for sampling, so :func:`synthetic_distributions`
with the same ``seed`` and options describes exactly the corpus :func:`synthetic_corpus` draws.
Except for ``"stationary"``, tokens at different positions are drawn independently.
"""

from __future__ import annotations

from posgeom.synthetic.corpora import (
    KIND_DEFAULTS,
    KINDS,
    stationary_chain,
    synthetic_corpus,
    synthetic_distributions,
)
from posgeom.synthetic.known_truth import (
    STRUCTURES,
    decaying_totals,
    sample_counts,
    sample_sequences,
    zipf_distributions,
)

__all__ = [
    "KINDS",
    "KIND_DEFAULTS",
    "STRUCTURES",
    "decaying_totals",
    "sample_counts",
    "sample_sequences",
    "stationary_chain",
    "synthetic_corpus",
    "synthetic_distributions",
    "zipf_distributions",
]
