"""PyTorch layer of posgeom (extra ``torch``): position modules, model surgery, a tiny encoder.

Import on demand (``import posgeom.nn``); torch is imported at the top of these modules.
"""

from posgeom.nn.alibi import ALiBiBias, alibi_slopes
from posgeom.nn.encoder import TinyEncoder
from posgeom.nn.io import load_module, save_module
from posgeom.nn.position import (
    LearnedPositionEmbedding,
    PositionEmbedding,
    SinusoidalPositionEmbedding,
    sinusoidal_table,
)
from posgeom.nn.rotary import RotaryEmbedding, rotate_half
from posgeom.nn.surgery import PositionAdapter, install_position_embedding
from posgeom.nn.tables import AbsolutePositionEmbedding, LowRankPositionEmbedding
from posgeom.nn.tasks import OrderTask, accuracy, fit_classifier, order_task

__all__ = [
    "ALiBiBias",
    "AbsolutePositionEmbedding",
    "LearnedPositionEmbedding",
    "LowRankPositionEmbedding",
    "OrderTask",
    "PositionAdapter",
    "PositionEmbedding",
    "RotaryEmbedding",
    "SinusoidalPositionEmbedding",
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
