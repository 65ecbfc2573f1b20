"""Hugging Face model adapters (extras ``hf`` + ``torch``): positional mechanisms and the
layer-wise positional signal of pretrained models. Importing this package imports torch and
transformers; everything loads offline (``local_files_only=True``, ``trust_remote_code=False``).
"""

from posgeom.models.layerwise import STRESS_KINDS, LayerwiseSignal, layerwise_positional_signal
from posgeom.models.loading import load_model, load_tokenizer
from posgeom.models.mechanisms import (
    MECHANISM_KINDS,
    PositionalMechanism,
    alibi_slopes,
    find_positional_mechanism,
    find_positional_mechanisms,
    mechanism_encodings,
    model_position_limit,
    relative_position_bucket,
    to_encoding,
)

__all__ = [
    "MECHANISM_KINDS",
    "STRESS_KINDS",
    "LayerwiseSignal",
    "PositionalMechanism",
    "alibi_slopes",
    "find_positional_mechanism",
    "find_positional_mechanisms",
    "layerwise_positional_signal",
    "load_model",
    "load_tokenizer",
    "mechanism_encodings",
    "model_position_limit",
    "relative_position_bucket",
    "to_encoding",
]
