"""Hugging Face model adapters (extras ``hf`` + ``torch``): positional mechanisms and the
layer-wise positional signal of pretrained models. Importing this package imports torch and
transformers; everything loads offline (``local_files_only=True``, ``trust_remote_code=False``).

Without torch or transformers, ``import posgeom.models`` raises
:class:`~posgeom._errors.OptionalDependencyError` with one line naming the extra to install.
"""

from posgeom._errors import require
from posgeom._registry_names import registry_getattr

require("torch", "torch")
require("transformers", "hf")

from posgeom.encodings.alibi import alibi_slopes  # noqa: E402
from posgeom.models.layer_signal import LayerwiseSignal  # noqa: E402
from posgeom.models.layerwise import layerwise_positional_signal  # noqa: E402
from posgeom.models.loading import (  # noqa: E402
    ModelTokenizer,
    load_model,
    load_tokenizer,
    model_position_limit,
    model_tokenizer,
)
from posgeom.models.mechanisms import (  # noqa: E402
    PositionalMechanism,
    find_positional_mechanism,
    find_positional_mechanisms,
    mechanism_encodings,
    mechanism_kinds,
    relative_position_bucket,
    to_encoding,
)
from posgeom.scores.stress import STRESS_KINDS  # noqa: E402

__all__ = [
    "STRESS_KINDS",
    "LayerwiseSignal",
    "ModelTokenizer",
    "PositionalMechanism",
    "alibi_slopes",
    "find_positional_mechanism",
    "find_positional_mechanisms",
    "layerwise_positional_signal",
    "load_model",
    "load_tokenizer",
    "mechanism_encodings",
    "mechanism_kinds",
    "model_position_limit",
    "model_tokenizer",
    "relative_position_bucket",
    "to_encoding",
]


#: ``MECHANISM_KINDS``: the registry read when used, not a snapshot at import
__getattr__ = registry_getattr(__name__, {"MECHANISM_KINDS": mechanism_kinds})
