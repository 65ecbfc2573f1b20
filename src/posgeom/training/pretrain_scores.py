"""The geometry scores of the pretraining study, each of an arm's position geometry against the
corpus geometry of the training split (:mod:`posgeom.training.corpora`).

Per position target ``D`` (``(n, n)``, Hellinger chords) and encoding distances ``delta`` (of the
family's ``module_geometry``): ``paper`` and ``scale_optimal`` stress, ``violation_rate``,
``separation``, and ``per_position``: ``s_i = sum_j (a delta_ij - D_ij)^2 / sum_j D_ij^2`` with
``a`` the global scale-optimal factor (``(n,)``; their mean weighted by ``sum_j D_ij^2`` is the
scale-optimal stress), ``per_position_max = max_i s_i``.

Lag stress: the scale-optimal and paper stress of the arm's lag kernel (the family's
``lag_vectors``; a table arm's is :func:`~posgeom.encodings.learned_extension.learned_lag_vectors` of its rows)
against the corpus lag geometry (:func:`corpus_lag_geometry`: pairs at lags ``1 .. m`` over the
training split's bytes in 33 classes, the 32 most frequent bytes and the rest, by posgeom's
default estimator).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["corpus_lag_geometry", "geometry_row", "lag_stress"]

#: bytes of the training split counted for the lag geometry (its first ones)
LAG_BYTES = 1_000_000


def geometry_row(encoding: Any, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Every per-position score of ``encoding`` against ``target`` (module docstring)."""
    from posgeom.scores._encoding import encoding_distances
    from posgeom.training.metrics import geometry_scores

    tgt = np.asarray(target, dtype=np.float64)
    scores = geometry_scores(encoding, tgt, seed=seed)
    st = scores["stress"]
    delta = np.asarray(encoding_distances(encoding), dtype=np.float64)
    per = ((st["scale"] * delta - tgt) ** 2).sum(axis=1) / np.maximum((tgt**2).sum(axis=1), 1e-300)
    return {
        "paper": float(st["paper"]),
        "scale_optimal": float(st["scale_optimal"]),
        "violation_rate": float(scores["violation_rate"]),
        "separation": float(scores["separation"]),
        "per_position_max": float(per.max()),
        "per_position": per.tolist(),
    }


def corpus_lag_geometry(train_bytes: np.ndarray, max_lag: int) -> dict[str, Any]:
    """``{"lags": (m,), "distances": (m, m)}`` of the lags ``1 .. max_lag`` (module docstring)."""
    from posgeom.estimators import estimate_geometry
    from posgeom.lags.classes import top_classes
    from posgeom.lags.counting import count_lags

    data = np.asarray(train_bytes[:LAG_BYTES], dtype=np.int64)
    classes = top_classes(np.bincount(data, minlength=256), 32)
    lags = np.arange(1, max_lag + 1)
    counts = count_lags([data], classes, lags=lags, null_shuffles=0)
    geo = estimate_geometry(counts.counts, estimator="recommended", seed=0)
    return {"lags": lags, "distances": np.asarray(geo.distances, dtype=np.float64)}


def _kernel(module: Any, fam_name: str, lags: np.ndarray, n: int, target_length: int) -> Any:
    from posgeom.encodings import family
    from posgeom.encodings._extension import ExtensionContext, Strategy
    from posgeom.encodings.learned_extension import learned_lag_vectors
    from posgeom.encodings.mds import MDSFamily

    fam = family(fam_name)
    if fam_name in (MDSFamily.name, "low_rank_mds", "random"):
        import torch

        with torch.no_grad():
            table = module.table().detach().to(torch.float64).cpu().numpy()[:n]
        return learned_lag_vectors(table, lags)
    ext = fam.extension
    params = ext.extension_from_decoder(module)
    ctx = ExtensionContext(n, target_length, None)
    return ext.lag_vectors(params, Strategy("none", fam.name, "none"), lags, ctx)


def lag_stress(
    model: Any, fam_name: str, lag: dict[str, Any], *, n: int, max_lag: int
) -> dict[str, float]:
    """Paper and scale-optimal stress of the lag kernel of ``model``'s position module at lags
    ``1 .. max_lag`` against ``lag`` (:func:`corpus_lag_geometry`); ``n``: trained length."""
    from posgeom.scores import stress_scores

    keep = lag["lags"] <= max_lag
    lags = lag["lags"][keep]
    target = lag["distances"][np.ix_(keep, keep)]
    if fam_name == "nope" or model.position is None:
        vectors = np.zeros((lags.size, 1))
    else:
        vectors = np.asarray(
            _kernel(model.position, fam_name, lags, n, max_lag + 1), dtype=np.float64
        )
    st = stress_scores(vectors, target)
    return {"paper": float(st.paper), "scale_optimal": float(st.scale_optimal)}
