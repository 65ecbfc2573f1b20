"""Score context-extension strategies against the corpus's geometry at the target length.

Each strategy's lag kernel at ``L`` (:func:`posgeom.lags.kernels.lag_vectors`, the model's
family's own) is scored against the corpus's estimated lag geometry ``D`` (lags up to ``L - 1``)
with every stress kind and the violation rate, with bootstrap intervals and the ranking's
stability when the counts carry half-sample replicates. Rotary strategies also get the fitted
per-plane factors (:mod:`.fit`), the rotation-phase metrics, the forward-free predictors and the
recommendation, and, given a per-position corpus geometry, their position stress
(``position_*``). Rows are ranked by ``rank_by`` (default the scale-optimal stress)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of
from posgeom.encodings._extension import Strategy
from posgeom.encodings.rope_strategies import longrope_strategy
from posgeom.extension.model import ExtensionModel, parse_family_spec
from posgeom.extension.result import ExtensionResult, StrategyScore
from posgeom.extension.strategies import choose_strategies, usable_strategies
from posgeom.lags.counting import LagCounts

__all__ = ["as_extension_model", "lag_vectors", "score_strategies"]


def as_extension_model(model: Any, trained_length: int | None = None) -> ExtensionModel:
    """An :class:`ExtensionModel` from itself, a family spec string, a posgeom
    ``CausalDecoder``, or a transformers configuration (or a model with ``.config``)."""
    from posgeom.extension.decoder import decoder_model, is_decoder
    from posgeom.extension.model import model_from_config

    if isinstance(model, ExtensionModel):
        out = model
    elif is_decoder(model):
        out = decoder_model(model, f"CausalDecoder({model.config.position})")
    elif isinstance(model, str):
        out = parse_family_spec(model)
    elif hasattr(model, "config") and hasattr(model, "named_buffers"):
        out = model_from_config(model.config, model=model, name=type(model).__name__)
    elif hasattr(model, "max_position_embeddings") or hasattr(model, "to_dict"):
        out = model_from_config(model, name=getattr(model, "model_type", "config"))
    else:
        raise PosgeomError(
            f"cannot read a positional family from {type(model).__name__}; pass a family spec "
            "('rope:theta=10000,head_dim=64'), a transformers config or model, or an ExtensionModel"
        )
    out = out.with_trained_length(trained_length)
    if not out.trained_length:
        raise PosgeomError(
            f"the trained length of {out.name} is unknown; pass trained_length= (CLI: "
            "--trained-length)"
        )
    return out


def lag_vectors(
    model: ExtensionModel,
    strategy: Strategy,
    lags: Any,
    target_length: int,
    *,
    position_distances: Any = None,
) -> np.ndarray:
    """The ``(m, d)`` lag kernel of ``strategy`` on ``model`` at ``target_length`` (the model's
    family's kernel, :func:`posgeom.lags.kernels.lag_vectors`)."""
    from posgeom.lags.kernels import lag_vectors as family_lag_vectors

    return family_lag_vectors(
        model.family,
        model.params,
        strategy,
        lags,
        trained_length=int(model.trained_length),
        target_length=int(target_length),
        position_distances=position_distances,
    )


def _lag_geometry(
    corpus: Any, model: ExtensionModel, target: int, opts: dict[str, Any]
) -> tuple[Any, list[str]]:
    """The lag geometry and what a short corpus leaves out (:mod:`posgeom.extension.coverage`)."""
    from posgeom.extension.coverage import coverage_notes
    from posgeom.lags import LagGeometry, count_lags, default_lags, lag_geometry, parse_classes

    if isinstance(corpus, LagGeometry):
        return corpus, []
    notes: list[str] = []
    if not isinstance(corpus, LagCounts):
        seqs = [np.asarray(s, dtype=np.int64).reshape(-1) for s in corpus]
        if not seqs:
            raise PosgeomError("the corpus is empty; pass token-id sequences or LagCounts")
        classes = parse_classes(
            opts["classes"],
            token_counts=np.bincount(np.concatenate(seqs)),
            embeddings=opts.get("embeddings"),
        )
        longest = max(s.size for s in seqs)
        lags = opts["lags"] if opts["lags"] is not None else default_lags(min(target, longest) - 1)
        corpus = count_lags(
            seqs, classes, lags=lags, replicates=opts["replicates"], seed=opts["seed"]
        )
        corpus, notes = coverage_notes(corpus, target, longest)
    return lag_geometry(corpus, estimator=opts["estimator"], seed=opts["seed"]), notes


def _fitted(
    model: ExtensionModel, geo: Any, target: int, penalty: float, use: Any = None
) -> Strategy:
    """Per-plane factors fitted under issue 23's constraints (fast planes fixed, monotone,
    in-window change penalised; :func:`posgeom.extension.fit.fit_factors`)."""
    from posgeom.extension.fit import fit_factors

    l0 = int(model.trained_length)
    w0, _ = Strategy("base", "rope", "none", _default_params(model)).frequencies(model, l0, l0)
    fit = fit_factors(
        w0,
        geo.lags,
        geo.distances,
        trained_length=l0,
        target_length=target,
        penalty=penalty,
        constrained=True,
        use=None if use is None else use.weights,
    )
    return longrope_strategy(
        model,
        l0,
        target,
        fit.factors,
        "fitted",
        f"per-plane factors fitted to the corpus lag geometry (stress {fit.stress:.4g}, unseen "
        f"phases {fit.unseen:.3g}, penalty {penalty:g}; fast planes fixed, monotone, in-window "
        "change penalised); attention factor 1",
        kind="fitted",
        attention_factor=1.0,
    )


def _default_params(model: ExtensionModel) -> dict[str, Any]:
    keep = {"rope_type": "default", "rope_theta": model.rope_parameters["rope_theta"]}
    if model.rope_parameters.get("partial_rotary_factor") is not None:
        keep["partial_rotary_factor"] = model.rope_parameters["partial_rotary_factor"]
    return keep


def _interval_scores(geo: Any, vectors: Mapping[str, np.ndarray], opts: dict[str, Any]) -> Any:
    from posgeom.uncertainty.bootstrap import bootstrap_scores

    if not geo.counts.n_replicates:
        return None
    return bootstrap_scores(
        geo.replicates if geo.replicates is not None else geo.counts,
        dict(vectors),
        estimator=opts["estimator"],
        estimator_options={"seed": opts["seed"]},
        rank_by=opts["rank_by"],
        seed=opts["seed"],
    )


def _extras(model: ExtensionModel, strategy: Strategy, target: int, position: Any) -> dict:
    from posgeom.encodings.rope_extension import rope_lag_vectors
    from posgeom.extension.fit import phase_report
    from posgeom.scores.table import score_encoding

    if not extension_of(model.family).rotary:
        return {}
    l0 = int(model.trained_length)
    w0, _ = Strategy("own", "rope", "none", dict(model.rope_parameters)).frequencies(model, l0, l0)
    w, _ = strategy.frequencies(model, target, l0)
    out: dict[str, Any] = phase_report(w0, w, l0, target)
    if position is not None:
        d = np.asarray(getattr(position, "distances", position), dtype=np.float64)
        n = int(position.positions[-1]) if getattr(position, "pooled", False) else d.shape[0]
        vec = rope_lag_vectors(w, np.arange(n))  # position vectors: the lags from 0
        enc = position.pool_encoding(vec) if getattr(position, "pooled", False) else vec
        scores = score_encoding(enc, d)
        out.update({f"position_{k}": scores[k] for k in ("paper", "scale_optimal")})
        out["position_violation_rate"] = scores["violation_rate"]
    return out


def score_strategies(
    model: Any,
    corpus: Any,
    trained_length: int | None,
    target_length: int,
    strategies: Sequence[Strategy | Mapping[str, Any]] | Mapping[str, Mapping] | None = None,
    *,
    fit: bool = True,
    classes: Any = "top:30",
    embeddings: Any = None,
    lags: Any = None,
    replicates: int = 40,
    estimator: str = "recommended",
    rank_by: str = "scale_optimal",
    position_distances: Any = None,
    unseen_penalty: float = 1.0,
    plane_use: Any = None,
    seed: int = 0,
) -> ExtensionResult:
    """Score every strategy (module docstring) and rank them.

    ``model``: an :class:`ExtensionModel`, a family spec (``"rope:theta=10000,head_dim=64"``), a
    transformers config or model. ``corpus``: token-id sequences, :class:`LagCounts` or a
    :class:`~posgeom.lags.LagGeometry`. ``trained_length``: ``L0`` (default the model's
    ``max_position_embeddings``). ``strategies``: ``None`` (every applicable one, plus ``fitted``
    when ``fit``), a list of :class:`Strategy` or rope-parameter dicts, or ``{name: rope_parameters}``.
    ``classes``: ``"top:K"`` or ``"embedding:K"`` (with ``embeddings``, ``(V, d)``); ``lags``:
    default :func:`posgeom.lags.default_lags` up to ``L - 1``; ``replicates``: half-sample
    replicates for the intervals (0: point scores only); ``position_distances``: the corpus's
    ``(n, n)`` per-position geometry (or an estimate), where documents have a start;
    ``plane_use``: the model's :class:`~posgeom.extension.usage.PlaneUse` (or a model with
    query/key weights to read it from) for the model-aware predictor. RoPE results carry the
    forward-free predictors and the recommendation (:mod:`posgeom.extension.recommend`).
    """
    from posgeom.scores.table import score_encoding

    target = int(target_length)
    m = as_extension_model(model, trained_length)
    opts = {
        "classes": classes,
        "embeddings": embeddings,
        "lags": lags,
        "replicates": replicates,
        "estimator": estimator,
        "seed": seed,
        "rank_by": rank_by,
    }
    rotary = extension_of(m.family).rotary
    chosen = choose_strategies(m, strategies, target)
    chosen, notes = usable_strategies(chosen, position_distances, target)
    geo, short = _lag_geometry(corpus, m, target, opts)
    notes += short
    use = _read_use(plane_use) if rotary else None
    if fit and strategies is None and rotary:
        chosen.append(_fitted(m, geo, target, unseen_penalty, use))
    vectors = {
        s.name: lag_vectors(m, s, geo.lags, target, position_distances=position_distances)
        for s in chosen
    }
    point = {name: score_encoding(v, geo.distances, seed=seed) for name, v in vectors.items()}
    boot = _interval_scores(geo, vectors, opts)
    rows = [
        StrategyScore.build(
            s,
            point[s.name],
            boot,
            _extras(m, s, target, position_distances),
            s.config_changes(m.trained_length, target),
        )
        for s in chosen
    ]
    result = ExtensionResult.build(
        m, target, geo, rows, rank_by=rank_by, bootstrap=boot, notes=tuple(notes)
    )
    return _recommended(result, use) if rotary else result


def _read_use(plane_use: Any) -> Any:
    """A :class:`~posgeom.extension.usage.PlaneUse` from itself or a model (None: None)."""
    from posgeom.extension.usage import PlaneUse
    from posgeom.extension.usage import plane_use as read_use

    if plane_use is None or isinstance(plane_use, PlaneUse):
        return plane_use
    return read_use(plane_use)


def _recommended(result: ExtensionResult, use: Any) -> ExtensionResult:
    """``result`` with its predictors, the recommendation and the model's plane use."""
    from posgeom.extension.predictors import predictor_values, with_corpus
    from posgeom.extension.recommend import recommend

    rope = [r for r in result.rows if r.strategy.rope_parameters is not None]
    values = predictor_values(
        result.model,
        [r.strategy for r in rope],
        result.target_length,
        None if use is None else use.weights,
    )
    values = with_corpus(values, {r.name: r.scores[result.rank_by] for r in rope})
    rec = recommend(result, values)
    return result.with_recommendation(rec, values, None if use is None else use.summary())
