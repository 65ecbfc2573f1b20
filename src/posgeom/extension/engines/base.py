"""What every engine writer reads and returns: :class:`EngineTarget` in, :class:`Emitted` out.

An :class:`EngineTarget` is one recommended RoPE strategy as transformers 5 spells it
(``rope_parameters``), the per-head width, the trained length ``L0``, the target length ``L`` and
where the model lives; an :class:`Emitted` is one engine's file, the settings it sets, its notes or
its refusal. Differences are computed with the one implementation of every rope type,
:func:`posgeom.encodings.rope_types.rope_frequencies` (:func:`frequency_gap`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings.rope_types import ntk_base, rope_frequencies, rope_type_of, yarn_mscale
from posgeom.io.jsonfiles import json_text

__all__ = [
    "Emitted",
    "EngineTarget",
    "attention_ratio",
    "frequency_gap",
    "ntk_ratio",
    "shell_quote",
    "static_ntk_theta",
    "trained_gap",
]


def ntk_ratio(target: EngineTarget) -> float:
    """The NTK ratio dynamic NTK reaches at ``L = f L0``: ``f^2 - f + 1`` (transformers'
    ``f n / L0 - (f - 1)`` at ``n = L``; vLLM's and SGLang's at every length)."""
    f = target.factor
    return f * f - f + 1.0


def static_ntk_theta(target: EngineTarget) -> float:
    """The static base dynamic NTK reaches at ``L``: ``theta ratio^(d/(d-2))`` (``d`` the rotary
    width, :func:`ntk_ratio`)."""
    d = int(target.head_dim * float(target.rope_parameters.get("partial_rotary_factor") or 1.0))
    return ntk_base(target.theta, ntk_ratio(target), d)


def attention_ratio(target: EngineTarget) -> float:
    """The strategy's attention factor over YaRN's default ``0.1 ln s + 1``: the ``attn_factor``
    engines multiply by that default (1 when the strategy keeps it)."""
    return target.attention_factor / yarn_mscale(target.factor)


def shell_quote(text: str) -> str:
    """``text`` in single quotes for a POSIX shell (``'`` written as ``'\\''``)."""
    return "'" + text.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class EngineTarget:
    """One strategy to write in an engine's spelling (module docstring).

    ``rope_parameters``: transformers 5 spelling (``rope_type``, ``rope_theta``, ``factor``,
    ...); ``model``: the folder or name the user runs; ``gguf_file``: the GGUF inside it, if
    any; ``gguf_arch``: its ``general.architecture`` (llama.cpp's metadata keys are
    ``{arch}.rope.*``; None: written as ``ARCH`` with a note); ``kind``: the strategy's kind
    (``"none"``: the model as trained); ``model_theta``: the model's own base (a static NTK
    strategy changes it)."""

    strategy: str
    rope_parameters: Mapping[str, Any]
    head_dim: int
    trained_length: int
    target_length: int
    model: str = "MODEL"
    gguf_file: str | None = None
    gguf_arch: str | None = None
    kind: str = ""
    model_theta: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= int(self.trained_length) < int(self.target_length):
            raise PosgeomError(
                f"--emit needs a target length ({self.target_length}) above the trained length "
                f"({self.trained_length})"
            )
        if self.rope_parameters.get("rope_theta") is None:
            raise PosgeomError(f"strategy {self.strategy!r} has no rope_theta to emit")

    @property
    def rope_type(self) -> str:
        return rope_type_of(self.rope_parameters)

    @property
    def theta(self) -> float:
        return float(self.rope_parameters["rope_theta"])

    @property
    def factor(self) -> float:
        """``factor`` of the parameters, else ``L / L0``."""
        f = self.rope_parameters.get("factor")
        return float(f) if f is not None else self.target_length / self.trained_length

    @property
    def max_position_embeddings(self) -> int:
        """``max_position_embeddings`` transformers needs: ``L0`` for dynamic NTK (it reads it as
        the trained length), else ``L``
        (:meth:`posgeom.encodings._extension.Strategy.config_changes`)."""
        return self.trained_length if self.rope_type == "dynamic" else self.target_length

    @property
    def attention_factor(self) -> float:
        """The cos/sin scale transformers computes (:func:`rope_frequencies`, at ``L``)."""
        return self.frequencies(self.target_length)[1]

    @property
    def gguf_prefix(self) -> str:
        return self.gguf_arch or "ARCH"

    def frequencies(
        self, seq_len: int, params: Mapping[str, Any] | None = None
    ) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` of ``params`` (default: this strategy's) at
        ``seq_len``, context ``L0``. An engine reads the rotary width from the same config, so
        ``params`` without ``partial_rotary_factor`` take the strategy's."""
        p = dict(self.rope_parameters if params is None else params)
        if "partial_rotary_factor" in self.rope_parameters:
            p.setdefault("partial_rotary_factor", self.rope_parameters["partial_rotary_factor"])
        return rope_frequencies(
            rope_type_of(p),
            int(self.head_dim),
            float(p["rope_theta"]),
            p,
            seq_len=int(seq_len),
            context=self.trained_length,
        )

    def scaling(self) -> dict[str, Any]:
        """The parameters without ``rope_theta`` (transformers 4's ``rope_scaling``), or {} for
        ``default``."""
        if self.rope_type == "default":
            return {}
        return {k: v for k, v in self.rope_parameters.items() if k != "rope_theta"}


@dataclass(frozen=True)
class Emitted:
    """One engine's output: ``filename`` and ``text`` (None when ``refused``), ``settings``
    (the values it sets, as the engine names them), ``notes`` (each stated difference),
    ``gguf_copy`` (the name of a copy of the model's GGUF the file runs, carrying tensors the
    engine has no other spelling for: :mod:`.gguf_tensors`)."""

    engine: str
    filename: str | None
    text: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    refused: str | None = None
    gguf_copy: str | None = None

    @classmethod
    def refuse(cls, engine: str, reason: str) -> Emitted:
        return cls(engine, None, None, {}, (), reason)

    def summary(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "file": self.filename,
            "settings": self.settings,
            "notes": list(self.notes),
            "refused": self.refused,
            "gguf_copy": self.gguf_copy,
        }


def frequency_gap(
    target: EngineTarget, params: Mapping[str, Any], *, seq_len: int | None = None
) -> tuple[float, float]:
    """``(max_k |w'_k / w_k - 1|, |a' / a - 1|)``: how far ``params`` (an engine's reading) moves
    the inverse frequencies ``w`` and the attention factor ``a`` of the strategy, at
    ``seq_len`` (default ``L``)."""
    n = target.target_length if seq_len is None else int(seq_len)
    w, a = target.frequencies(n)
    w2, a2 = target.frequencies(n, params)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(w > 0, np.abs(w2 / w - 1.0), np.abs(w2 - w))
    return float(np.max(rel)), abs(a2 / a - 1.0)


def trained_gap(target: EngineTarget, params: Mapping[str, Any]) -> float:
    """The frequency gap of :func:`frequency_gap` at the trained length ``L0``."""
    return frequency_gap(target, params, seq_len=target.trained_length)[0]


def dumps(obj: Any) -> str:
    """Compact one-line JSON (for command lines), floats as Python writes them."""
    return json_text(obj, indent=None, separators=(",", ":"))
