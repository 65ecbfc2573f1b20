"""Convolutional position embeddings (wav2vec 2.0, HuBERT, WavLM, SEW, UniSpeech, Data2Vec-audio,
the conformer variants, OmniASR): a grouped 1-D convolution over the sequence whose output is
added to the input of the first block.

The convolution of kernel ``k`` sees the ``k`` neighbours of each frame, so what it adds at a
position is a function of the content around it, not of the position alone: there is no table,
no formula in ``p`` and so no position geometry to compare or to extend. posgeom names it (kind
``conv_positions``, with its kernel, groups and width) instead of calling the model "none", and
the commands that need a geometry refuse it in one line (:func:`refusal`); ``analyze-model``
measures the layers' positional signal without it. Discovery: a module whose last name is one
of :data:`CONV_POSITION_NAMES` holding one or more ``torch.nn.Conv1d``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._validation import check_int
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import refusing_extension
from posgeom.encodings._mechanism import Mechanism, RefusingParams
from posgeom.encodings._registry import Family, register

__all__ = ["CONV_POSITION_NAMES", "ConvPositionParams", "refusal"]

#: last name components of convolutional position modules
CONV_POSITION_NAMES = ("pos_conv_embed", "encode_positions")


def refusal(what: str) -> str:
    """The one line a command prints when it cannot use these positions (``what``: the use)."""
    return (
        f"{what}: the model's positions come from a convolution over the sequence (kind "
        "'conv_positions': a function of the neighbouring content, no position geometry); "
        "extract lists it, analyze-model measures the layers' signal without it"
    )


@dataclass(frozen=True, eq=False)
class ConvPositionParams(RefusingParams):
    """``kernel_size``, ``groups`` and ``channels`` of the (first) convolution and how many
    ``convolutions`` are stacked (Data2Vec-audio: 5)."""

    key = "conv_positions"
    refusal = staticmethod(refusal)

    kernel_size: int = 1
    groups: int = 1
    channels: int = 0
    convolutions: int = 1

    def summary(self) -> str:
        return (
            f"convolutional positions ({self.convolutions} x kernel {self.kernel_size}, "
            f"{self.groups} groups, {self.channels} channels)"
        )


@register
class ConvPositionFamily(Family):
    """Convolutional position embeddings: detected and named, refused where a geometry is
    needed."""

    name = "conv_positions"
    extension_type = refusing_extension(refusal)
    order = 97
    summary = "convolutional position embedding (wav2vec 2.0, HuBERT); detection only"
    in_comparison = False
    mechanism_kind = "conv_positions"
    mechanism_params = ConvPositionParams
    looks_for = "a Conv1d in a module named " + ", ".join(CONV_POSITION_NAMES)
    detect_order = 60

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        """The one geometry the kernel defines without the content: the share of their windows
        two frames do not share, ``D_ij = min(|i - j|, k) / k`` (lag profile), default
        ``kernel_size=128`` (wav2vec 2.0). Not the model's geometry (that depends on the
        content), so a model's mechanism is still refused."""
        n = check_n(n_positions)
        k = check_int(params.get("kernel_size", 128), "kernel_size", 1)
        lags = np.minimum(np.arange(n), k) / k
        return PositionEncoding("conv_positions", None, {"kernel_size": k}, lag_profile=lags)

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        import torch

        found = []
        for name, module in model.named_modules():
            if _hf.last_name(name) not in CONV_POSITION_NAMES:
                continue
            convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv1d)]
            if not convs:
                continue
            params = ConvPositionParams(
                kernel_size=int(convs[0].kernel_size[0]),
                groups=int(convs[0].groups),
                channels=int(convs[0].out_channels),
                convolutions=len(convs),
            )
            found.append(Mechanism(self.mechanism_kind, name, params))
        return found
