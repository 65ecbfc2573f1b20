"""The result type, the registry and the shared finishing step of the geometry estimators.

Every estimator maps counts ``C`` (``n x V`` integers, rows ``X_i ~ Multinomial(T_i, p_i)``) to
estimated *squared* chords ``D^2_ij`` (symmetric, any sign), in factored form
(:class:`~posgeom.geometry.gram.FactoredGram`). By default the estimate is the Euclidean one
(:mod:`posgeom.estimators.euclidean`: the directions of ``B~ = -1/2 J D^2 J`` above its noise
edge). With ``euclidean=False``, :func:`finish` turns the squared chords into distances with
one rule for every estimator:

    D_ij = sqrt(min(max(D^2_ij, 0), 2))       (chord, in [0, sqrt 2]; "normalized" divides by sqrt 2)

Pairs below 0 are counted in ``diagnostics["negative_squared"]``, above 2 in
``diagnostics["above_max"]``. The clipped matrix need not be Euclidean: the negative eigenvalues
of ``B = -1/2 J D^2 J`` are reported as scikit-bio's ``pcoa`` does (``|λ| <= 1e-8`` is zero; the
ratio is ``-λ_min / λ_max``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom.geometry.counts import CountMatrix, count_matrix
from posgeom.geometry.gram import double_centre_inplace

__all__ = ["Estimator", "GeometryEstimate", "available", "choose_estimator", "get", "register"]

EIGENVALUE_LIMIT = 1024  # B's spectrum is computed with the estimate up to this many positions
DENSE_MAX_N = 8192  # factored estimates also build their (n, n) distances up to this n (auto)
DENSE_ONLY_MAX_N = 8192  # estimators without a factored form are refused above this n (measured)


@dataclass(frozen=True)
class Estimator:
    """A registered estimator: ``fn(counts, totals, *, rng, **options) -> (D^2, diagnostics)``.

    ``factored``: ``fn`` returns a :class:`~posgeom.geometry.gram.FactoredGram` (``D^2_ij =
    ||s_i - s_j||^2 - b_i - b_j``) instead of a dense ``(n, n)`` ``D^2`` (refused above
    ``DENSE_ONLY_MAX_N`` positions)."""

    name: str
    fn: Callable[..., tuple[Any, dict[str, Any]]]
    min_samples: int
    summary: str
    factored: bool = False

    def squared(self, counts: Any, totals: np.ndarray, **kwargs: Any) -> np.ndarray:
        """The estimator's raw ``(n, n)`` squared chords (before clipping), dense either way."""
        result = self.fn(counts, totals, **kwargs)[0]
        return result.squared_chords() if hasattr(result, "squared_chords") else result

    @property
    def doc(self) -> str:
        """The estimator's docstring: formula, assumptions, reference."""
        return self.fn.__doc__ or ""


_REGISTRY: dict[str, Estimator] = {}
RECOMMENDED = "corrected"


def register(
    name: str, *, min_samples: int = 1, factored: bool = False
) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn`` as the estimator ``name`` (positions need ``min_samples``;
    ``factored``: ``fn`` returns a ``FactoredGram``, see :class:`Estimator`)."""

    def wrap(fn: Callable) -> Callable:
        doc = (fn.__doc__ or "").strip().splitlines()
        summary = doc[0] if doc else ""
        _REGISTRY[name] = Estimator(name, fn, int(min_samples), summary, bool(factored))
        return fn

    return wrap


def available() -> list[str]:
    """Sorted names accepted by :func:`get` and ``estimate_geometry(estimator=...)``."""
    return sorted(_REGISTRY)


def get(name: str) -> Estimator:
    """The estimator ``name`` (``"recommended"`` resolves to the measured default)."""
    key = RECOMMENDED if name == "recommended" else name
    if key not in _REGISTRY:
        raise PosgeomError(
            f"unknown estimator {name!r}; available: recommended ({RECOMMENDED}), "
            f"{', '.join(available())}"
        )
    return _REGISTRY[key]


def choose_estimator(
    estimator: str, counts: Any, *, smoothing: str = "none"
) -> tuple[str, str | None]:
    """The one rule for what ``"recommended"`` runs: ``(name, why_plugin)``.

    A named estimator is itself (``why_plugin = None``). ``"recommended"`` is
    :data:`RECOMMENDED` unless no sampling model applies (exact distributions, add-alpha
    smoothing, a position with fewer samples than it needs), and then ``"plugin"`` with the reason.
    """
    spec = get(estimator)
    if estimator != "recommended":
        return spec.name, None
    if smoothing != "none":
        return "plugin", f"smoothing={smoothing!r} is a plug-in choice"
    # a CountMatrix is recognised once, upstream, and passed down as it is
    cm = counts if isinstance(counts, CountMatrix) else count_matrix(counts)
    if not cm.integer:
        return "plugin", "the input is exact distributions: no sampling noise to correct"
    short = np.flatnonzero(cm.totals < max(spec.min_samples, 1))
    if short.size:
        first = int(short[0])
        return "plugin", (
            f"position {first} has {int(cm.totals[first])} samples, fewer than the "
            f"{spec.name} estimator needs ({spec.min_samples})"
        )
    return spec.name, None


def as_count_matrix(counts: Any) -> sp.csr_matrix:
    """``counts`` (``CountMatrix``, ``PositionCounts``, scipy sparse or dense ``(n, V)``) as the
    canonical int64 CSR of :func:`posgeom.geometry.counts.count_matrix`; probabilities refused."""
    cm = count_matrix(counts)
    if not cm.integer:
        raise PosgeomError(
            "counts must be non-negative integers (the estimators model sampling noise); pass "
            "counts, not probabilities"
        )
    return cm.counts


def check_samples(totals: np.ndarray, need: int, what: str, estimator: str) -> None:
    """Raise naming the first position (or bucket) with fewer than ``need`` samples."""
    low = np.flatnonzero(totals < max(need, 1))
    if low.size:
        first = int(low[0])
        raise PosgeomError(
            f"estimator {estimator!r} needs at least {max(need, 1)} samples per {what}, but "
            f"{what} {first} has {int(totals[first])} ({low.size} of {totals.size} {what}s are short); "
            "coarsen the vocabulary (--resolution top:K; resolution='top:K' in the API), pool "
            "positions (pool=w or pool='log:B' in posgeom.estimate_geometry), or lower n "
            "(-n / --max-positions)"
        )


def spectrum_report(sq: np.ndarray) -> dict[str, Any]:
    """Eigenvalues of ``B = -1/2 J D^2 J`` as scikit-bio's ``pcoa`` reports them."""
    b = -0.5 * sq
    double_centre_inplace(b)
    vals = np.linalg.eigvalsh(b)
    vals = np.where(np.isclose(vals, 0.0), 0.0, vals)
    top, low = float(vals.max(initial=0.0)), float(vals.min(initial=0.0))
    return {
        "negative_eigenvalues": int(np.sum(vals < 0)),
        "most_negative_eigenvalue": low,
        "largest_eigenvalue": top,
        "negative_eigenvalue_ratio": max(0.0, -low / top) if top > 0 else 0.0,
        "euclidean": bool(low >= 0),
    }


_SPECTRUM_KEYS = (
    "negative_eigenvalues",
    "most_negative_eigenvalue",
    "largest_eigenvalue",
    "negative_eigenvalue_ratio",
    "euclidean",
)


def finish(sq: np.ndarray, convention: str) -> tuple[np.ndarray, dict[str, Any]]:
    """Clip squared chords to ``[0, 2]``, take roots, apply the convention (module docstring).

    Works in place on ``sq`` (its upper triangle is mirrored: exact symmetry, no n x n copies).
    """
    from posgeom.geometry.divergences import _mirror_upper

    _mirror_upper(sq)  # the convention was checked by estimate_geometry
    np.fill_diagonal(sq, 0.0)
    diag: dict[str, Any] = {
        "negative_squared": int(np.count_nonzero(sq < 0)) // 2,
        "above_max": int(np.count_nonzero(sq > 2.0)) // 2,
        "clip_rule": "squared chords clipped to [0, 2] after the estimate, then square roots",
    }
    np.clip(sq, 0.0, 2.0, out=sq)
    if sq.shape[0] <= EIGENVALUE_LIMIT:  # O(n^3): larger estimates compute it on demand
        diag.update(spectrum_report(sq))
    dist = np.sqrt(sq, out=sq)
    np.minimum(dist, np.sqrt(2.0), out=dist)
    if convention == "normalized":
        dist /= np.sqrt(2.0)
    dist.setflags(write=False)
    return dist, diag


@dataclass(frozen=True, eq=False)
class GeometryEstimate:
    """An estimate of the corpus's positional Hellinger geometry.

    Attributes
    ----------
    distances : (m, m) float64, read-only, exactly symmetric, zero diagonal; ``m = n`` positions,
        or the number of buckets when pooled. ``None`` for a factored estimate built without its
        dense matrix (``m > DENSE_MAX_N``, or ``dense=False``): use :meth:`blocks`.
    estimator : the estimator actually used (``"recommended"`` resolved).
    positions : (n,) position indices, or (m + 1,) bucket edges ``[e_0 = 0, ..., e_m = n]`` when
        pooled (bucket ``b`` holds positions ``e_b <= i < e_{b+1}``).
    totals : (m,) samples per position or bucket (after any equal-sample resampling).
    convention : ``"chord"`` (``[0, sqrt 2]``) or ``"normalized"`` (``[0, 1]``).
    pooled : whether positions were pooled into buckets.
    vocab_size : number of token classes the geometry is computed on (after coarsening).
    resolution : the label of those classes: ``"full"``, ``"top:K"``, ``"top:K+bands:B"``,
        ``"bins:B"`` or ``"map"`` (:mod:`posgeom.estimators.resolution`).
    classes : what those classes hold, in words (``"'.', '[CLS]', other: 92% of tokens"``;
        :func:`posgeom.estimators.class_words.describe_classes`).
    class_map : ``(V,)`` int64, token id -> class id (``0 .. vocab_size - 1``); pass it as
        ``resolution=`` to estimate other counts on the same classes.
    class_counts : ``(n, vocab_size)`` int64 CSR or None: the input counts on those classes
        (before pooling and resampling).
    options : coarsening, pooling, resampling, seed and the estimator's own options.
    diagnostics : the estimator's diagnostics (see :mod:`posgeom.estimators._core`).
    coordinates : (m, K') float64 or None: the Euclidean estimate's ``X`` (distances
        ``||x_i - x_j||``), None with ``euclidean=False``.
    gram : :class:`~posgeom.geometry.gram.FactoredGram` or None: ``B = c J (S S^T - diag(b)) J``
        (``S`` the ``m x V'`` roots, ``b`` the correction, ``c = 1`` chord / ``1/2`` normalized).

    ``numpy.asarray(estimate)`` is the distance matrix; ``classical_mds(estimate, k)`` uses the
    factored form when there is one, and :meth:`blocks` gives the distances block by block.
    """

    _distances: np.ndarray | None
    estimator: str
    positions: np.ndarray
    totals: np.ndarray
    convention: str
    pooled: bool = False
    vocab_size: int = 0
    resolution: str = "full"
    classes: str = ""
    class_map: np.ndarray | None = field(default=None, repr=False)
    class_counts: Any = field(default=None, repr=False)  # scipy.sparse.csr_matrix or None
    options: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    gram: Any = None  # FactoredGram (posgeom.geometry.gram) or None
    coordinates: np.ndarray | None = None  # (m, K') the Euclidean estimate's X (euclidean=True)

    @property
    def distances(self) -> np.ndarray | None:
        """The ``(m, m)`` matrix (class docstring); the Euclidean estimate's ``||x_i - x_j||`` is
        made on first use and kept."""
        if self._distances is None and self.coordinates is not None and self.diagnostics["dense"]:
            from posgeom._distance_matrix import euclidean_distances

            dist = euclidean_distances(self.coordinates)
            dist.setflags(write=False)
            object.__setattr__(self, "_distances", dist)
        return self._distances

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.distances is None:
            n = self.n_positions
            raise PosgeomError(
                f"this estimate of {n} positions has no dense matrix (it would take "
                f"{8 * n * n / 2**30:.1f} GiB); use classical_mds(estimate, k) and "
                "estimate.blocks() (blocked or sampled scores), or estimate_geometry(..., "
                "dense=True) at small n"
            )
        out = self.distances if dtype is None else self.distances.astype(dtype)
        return out.copy() if copy else out

    @property
    def n_positions(self) -> int:
        """Rows of :attr:`distances` (positions, or buckets when pooled)."""
        return int(self.totals.shape[0])

    def blocks(self) -> Any:
        """The estimate's distances as a blocks target (the protocol of
        :mod:`posgeom.scores.large`), never ``(m, m)``; the blocks equal the dense matrix's."""
        from posgeom.estimators._blocks import CoordinateBlocks, EstimateBlocks

        if self._distances is not None:
            from posgeom.scores.large import DenseTarget

            return DenseTarget(self._distances)
        if self.coordinates is not None:  # the matrix is not made for its blocks
            return CoordinateBlocks(self.coordinates)
        return EstimateBlocks(self.gram, self.convention)

    def pool_encoding(self, encoding: Any, **options: Any) -> np.ndarray:
        """The ``(m, m)`` distances of ``encoding`` on this estimate's buckets (see
        :func:`posgeom.estimators.pool_encoding`); unchanged when not pooled or already ``m``."""
        from posgeom.estimators.transforms import pool_encoding

        if not self.pooled:
            return encoding
        return pool_encoding(encoding, self.positions, **options)

    def spectrum(self) -> dict[str, Any]:
        """Eigenvalues of ``B = -1/2 J D^2 J`` as scikit-bio's ``pcoa`` reports them (computed
        with the estimate when ``n <= 1024``; ``O(n^3)``)."""
        if "negative_eigenvalues" in self.diagnostics:
            return {k: self.diagnostics[k] for k in _SPECTRUM_KEYS}
        if self.distances is None:
            raise PosgeomError(
                f"the full spectrum of {self.n_positions} positions is O(n^3); "
                "classical_mds(estimate, k) gives the top k eigenvalues"
            )
        scale = 1.0 if self.convention == "chord" else 2.0
        return spectrum_report(scale * self.distances**2)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description: estimator, convention, sizes, options, scalar diagnostics."""

        def scalars(d: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in d.items() if isinstance(v, (int, float, str, bool))}

        smoothing = self.diagnostics.get("smoothing", {})  # smooth= (estimators.smoothing)
        extra = {"smoothing": {k: v for k, v in smoothing.items() if k != "cv_error"}}
        return {
            **(extra if smoothing else {}),
            "estimator": self.estimator,
            "convention": self.convention,
            "n_positions": self.n_positions,
            "pooled": self.pooled,
            "vocab_size": self.vocab_size,
            "resolution": self.resolution,
            "classes": self.classes,
            "min_samples": float(np.min(self.totals)),
            "options": {k: v for k, v in self.options.items() if not isinstance(v, np.ndarray)},
            "diagnostics": scalars(self.diagnostics),
            "projection": scalars(self.diagnostics.get("projection", {})),
        }
