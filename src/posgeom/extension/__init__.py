"""Context extension: rank the strategies for running a model past its trained length.

Data flow: model -> :class:`ExtensionModel` (family, parameters, trained length ``L0``) ->
strategies that apply (:func:`enumerate_strategies`) -> each strategy's lag kernel at the target
length ``L`` -> scores against the corpus's lag geometry (:func:`posgeom.lag_geometry`) ->
:class:`ExtensionResult` (ranked table, verdict, the best ``rope_parameters``)::

    result = posgeom.extension.score_strategies("rope:theta=100000,head_dim=64", [ids], 8192, 12288)
    result.best.name, result.rope_parameters
    posgeom.extension.score_strategies(config, counts, None, 12288,
                                       strategies={"mine": {"rope_type": "yarn", ...}})
"""

from __future__ import annotations

from posgeom.encodings._extension import Strategy
from posgeom.encodings.learned_extension import LEARNED_METHODS, extend_table
from posgeom.encodings.rope_strategies import longrope_strategy, men_theta_bound
from posgeom.extension.fit import FactorFit, fit_factors, phase_report
from posgeom.extension.model import ExtensionModel, model_from_config, parse_family_spec
from posgeom.extension.result import ExtensionResult, StrategyScore
from posgeom.extension.scoring import as_extension_model, lag_vectors, score_strategies
from posgeom.extension.strategies import enumerate_strategies, strategy_from_parameters

__all__ = [
    "LEARNED_METHODS",
    "ExtensionModel",
    "ExtensionResult",
    "FactorFit",
    "Strategy",
    "StrategyScore",
    "as_extension_model",
    "enumerate_strategies",
    "extend_table",
    "fit_factors",
    "lag_vectors",
    "longrope_strategy",
    "men_theta_bound",
    "model_from_config",
    "parse_family_spec",
    "phase_report",
    "score_strategies",
    "strategy_from_parameters",
]
