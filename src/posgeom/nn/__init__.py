"""PyTorch layer of posgeom (extra ``torch``): position modules, model surgery, a tiny encoder.

Import on demand (``import posgeom.nn``); torch is imported at the top of these modules.
Without torch, ``import posgeom.nn`` raises :class:`~posgeom._errors.OptionalDependencyError`
with one line: install posgeom[torch].
"""

from posgeom._errors import require

require("torch", "torch")

from posgeom.nn.alibi import ALiBiBias, AttentionBias, alibi_slopes  # noqa: E402
from posgeom.nn.encoder import TinyEncoder  # noqa: E402
from posgeom.nn.io import load_module, save_module  # noqa: E402
from posgeom.nn.position import (  # noqa: E402
    LearnedPositionEmbedding,
    PositionEmbedding,
    SinusoidalPositionEmbedding,
    sinusoidal_table,
)
from posgeom.nn.relative import T5RelativeBias  # noqa: E402
from posgeom.nn.rotary import RotaryEmbedding, rotate_half  # noqa: E402
from posgeom.nn.surgery import PositionAdapter, install_position_embedding  # noqa: E402
from posgeom.nn.tables import AbsolutePositionEmbedding, LowRankPositionEmbedding  # noqa: E402
from posgeom.nn.tasks import OrderTask, accuracy, fit_classifier, order_task  # noqa: E402

__all__ = [
    "ALiBiBias",
    "AbsolutePositionEmbedding",
    "AttentionBias",
    "LearnedPositionEmbedding",
    "LowRankPositionEmbedding",
    "OrderTask",
    "PositionAdapter",
    "PositionEmbedding",
    "RotaryEmbedding",
    "SinusoidalPositionEmbedding",
    "T5RelativeBias",
    "TinyEncoder",
    "accuracy",
    "alibi_slopes",
    "fit_classifier",
    "install_position_embedding",
    "load_module",
    "order_task",
    "rotate_half",
    "save_module",
    "sinusoidal_table",
]
