"""posgeom: the geometry of Transformer positional encodings.

Corpus -> ``count_positions`` -> ``positional_distributions`` -> ``hellinger_distances`` ->
``classical_mds`` -> encodings -> ``stress`` and the order scores.

Names are loaded lazily, so ``import posgeom`` stays fast and never imports torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

from posgeom._errors import (
    ArtifactError,
    OptionalDependencyError,
    PosgeomDeprecationWarning,
    PosgeomError,
)
from posgeom._version import __version__
from posgeom.io.renderers import provide as _provide_renderers

_EXPORTS: dict[str, str] = {
    # corpus -> counts
    "PositionCounts": "posgeom.corpus.counting",
    "count_positions": "posgeom.corpus.counting",
    "count_corpus": "posgeom.corpus.counting",
    "count_distributed": "posgeom.corpus.distributed",
    "count_resumable": "posgeom.corpus.jobs",
    "BootstrapCounts": "posgeom.corpus.bootstrap",
    "load_tokenizer": "posgeom.corpus.tokenize",
    "WordLevelTokenizer": "posgeom.corpus.word_tokenizer",
    "read_texts": "posgeom.corpus.readers",
    "read_token_ids": "posgeom.corpus.token_ids",
    "synthetic_corpus": "posgeom.synthetic",
    "synthetic_distributions": "posgeom.synthetic",
    "PositionEncoding": "posgeom.encodings._base",
    "HellingerBlocks": "posgeom.geometry.divergences",
    "blocked_stress": "posgeom.scores.large",
    "sampled_stress": "posgeom.scores.large",
    "gower_extension": "posgeom.embed.extend",
    "save_artifact": "posgeom.io.artifacts",
    "load_artifact": "posgeom.io.artifacts",
    # counts -> distributions -> distances
    "PositionalDistributions": "posgeom.geometry.distributions",
    "positional_distributions": "posgeom.geometry.distributions",
    "hellinger_distances": "posgeom.geometry.divergences",
    "fisher_rao_distances": "posgeom.geometry.divergences",
    "bhattacharyya_coefficients": "posgeom.geometry.divergences",
    "noise_floor": "posgeom.geometry.noise",
    "NoiseFloor": "posgeom.geometry.noise",
    "estimate_geometry": "posgeom.estimators",
    "GeometryEstimate": "posgeom.estimators",
    # geometry -> encodings
    "MDSResult": "posgeom.embed.mds",
    "classical_mds": "posgeom.embed.mds",
    "effective_rank": "posgeom.embed.rank",
    "effective_ranks": "posgeom.embed.rank",
    "low_rank_factors": "posgeom.embed.rank",
    "LowRankFactors": "posgeom.embed.rank",
    "smacof_refine": "posgeom.embed.refine",
    "RefinedEmbedding": "posgeom.embed.refine",
    # encodings -> scores
    "stress": "posgeom.scores.stress",
    "stress_scores": "posgeom.scores.stress",
    "scale_optimal_stress": "posgeom.scores.stress",
    "StressScores": "posgeom.scores.stress",
    "encoding_distances": "posgeom.scores._encoding",
    "monotonicity_violation_rate": "posgeom.scores.order",
    "ViolationRate": "posgeom.scores.order",
    "separation_margin": "posgeom.scores.order",
    "shepard_table": "posgeom.scores.order",
    # bootstrap replicates -> intervals
    "bootstrap_scores": "posgeom.uncertainty.bootstrap",
    "bootstrap_vector": "posgeom.uncertainty.bootstrap",
    "bootstrap_interval": "posgeom.uncertainty._intervals",
    "replicate_geometry": "posgeom.uncertainty.replicates",
    "BootstrapScores": "posgeom.uncertainty.bootstrap",
    # the main job: one config, one run, one result (geometry, run, demo, compare)
    "analyze": "posgeom.pipeline",
    "GeometryConfig": "posgeom.pipeline",
    "GeometryResult": "posgeom.pipeline",
    "stationarity": "posgeom.geometry.stationarity",
    "StationarityResult": "posgeom.geometry.stationarity",
    # lags -> lag geometry -> context extension
    "lag_geometry": "posgeom.lags",
    "extend": "posgeom.extension.run",
    # scores -> reports
    "score_encoding": "posgeom.scores.table",
    "report": "posgeom.reports",
    # where a model keeps position: probes beside the geometry
    "probe": "posgeom.probes",
    "ProbeResult": "posgeom.probes",
}

_SUBMODULES = {
    "corpus",
    "embed",
    "encodings",
    "estimators",
    "extension",
    "geometry",
    "io",
    "lags",
    "models",
    "nn",
    "pipeline",
    "probes",
    "reports",
    "scores",
    "synthetic",
    "uncertainty",
}

__all__ = [
    "ArtifactError",
    "OptionalDependencyError",
    "PosgeomDeprecationWarning",
    "PosgeomError",
    "__version__",
    *sorted(_EXPORTS),
]


# the results draw (Jupyter's _repr_html_, save(report=True)) with the renderers posgeom.reports
# registers; this root names it as their provider, imported when a result is first drawn (the
# results import no renderer: posgeom.io.renderers)
_provide_renderers("posgeom.reports")


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"posgeom.{name}")
    raise AttributeError(f"module 'posgeom' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES)
