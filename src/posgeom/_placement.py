"""Where a model runs and in what precision: ``device`` and ``dtype`` (bottom layer: no torch at
import); one home for the CLI's ``--device`` / ``--dtype`` and the library's keywords.

- ``device``: ``"cpu"`` (the default), ``"cuda"`` (= ``"cuda:0"``), ``"cuda:N"``, ``"mps"`` or
  ``"auto"`` (accelerate's ``device_map="auto"``: GPUs, CPU and an offload folder on disk). A
  device this machine does not have is refused in one line before anything loads.
- ``dtype``: ``"float32"`` (the default), ``"bfloat16"``, ``"float16"`` or ``"auto"`` (the
  checkpoint's own); the weights load straight into it.

Whatever the dtype, the statistics stay float64 and on the host (hidden states are cast up
before they are summed, :mod:`posgeom.models.accumulate`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from typing import Any

from posgeom._errors import PosgeomError, require

__all__ = [
    "DEVICES",
    "DTYPES",
    "check_device",
    "check_dtype",
    "input_device",
    "offload_cleanup",
    "pretrained_kwargs",
]

DEVICES = ("cpu", "cuda", "cuda:N", "mps", "auto")
DTYPES = ("float32", "bfloat16", "float16", "auto")
_FIX = "use device='cpu' (--device cpu)"


def _cuda(text: str, index: int) -> str:
    torch = require("torch", "torch")
    if not torch.cuda.is_available():
        why = "a CPU-only build" if torch.version.cuda is None else "no GPU visible"
        raise PosgeomError(
            f"device='{text}' but this machine has no CUDA device (torch "
            f"{torch.__version__}: {why}); {_FIX}"
        )
    count = torch.cuda.device_count()
    if index >= count:
        raise PosgeomError(
            f"device='{text}' but this machine has {count} CUDA device(s), "
            f"cuda:0 .. cuda:{count - 1}; pick one of those"
        )
    return f"cuda:{index}"


def check_device(device: Any) -> str:
    """The device as posgeom spells it (``"cpu"``, ``"cuda:N"``, ``"mps"``, ``"auto"``), or a
    one-line :class:`PosgeomError` when it is unknown or this machine does not have it.
    ``None`` is ``"cpu"``; a ``torch.device`` is accepted too."""
    text = "cpu" if device is None else str(device).strip().lower()
    cuda = re.fullmatch(r"cuda(?::(\d+))?", text)
    if cuda:
        return _cuda(text, int(cuda[1] or 0))
    if text == "cpu":
        return text
    if text == "mps":
        torch = require("torch", "torch")
        if not torch.backends.mps.is_available():
            raise PosgeomError(f"device='mps' but this machine has no Apple GPU (MPS); {_FIX}")
        return text
    if text == "auto":
        require("accelerate", "extension")  # device_map="auto" is accelerate's
        return text
    raise PosgeomError(f"unknown device={device!r}; use one of {', '.join(DEVICES)}")


def check_dtype(dtype: Any) -> str:
    """The name of ``dtype`` in :data:`DTYPES` (a torch dtype among them is accepted too;
    ``None`` is ``"float32"``), or a one-line :class:`PosgeomError`."""
    text = "float32" if dtype is None else str(dtype).strip().lower().removeprefix("torch.")
    if text not in DTYPES:
        raise PosgeomError(f"unknown dtype={dtype!r}; use one of {', '.join(DTYPES)}")
    return text


def pretrained_kwargs(
    device: Any = None,
    dtype: Any = None,
    *,
    gguf: bool = False,
    offload_folder: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``from_pretrained`` that load the weights straight into ``dtype`` on
    ``device`` (``device_map`` for anything but the CPU); ``device="auto"`` adds an offload
    folder (a new temporary one unless ``offload_folder``: :func:`offload_cleanup`). A GGUF
    checkpoint is de-quantised, then stored in ``dtype``."""
    place, name = check_device(device), check_dtype(dtype)
    kwargs: dict[str, Any] = {
        "dtype": name if name == "auto" else getattr(require("torch", "torch"), name)
    }
    if place == "auto":
        kwargs["device_map"] = "auto"
        kwargs["offload_folder"] = os.fspath(
            offload_folder
            if offload_folder is not None
            else tempfile.mkdtemp(prefix="posgeom-offload-")
        )
    elif place != "cpu":
        kwargs["device_map"] = place
    if gguf:
        transformers = require("transformers", "hf")
        kwargs["quantization_config"] = transformers.GgufConfig(dequantize=True)
    return kwargs


def offload_cleanup(model: Any, kwargs: dict[str, Any], *, given: bool) -> None:
    """Remove the temporary offload folder of ``kwargs`` when ``model`` is collected (or the
    process ends; now when ``model`` is ``None``: the load failed); a folder the caller gave
    (``given``) is the caller's."""
    folder = kwargs.get("offload_folder")
    if not folder or given:
        return
    if model is None:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        weakref.finalize(model, shutil.rmtree, folder, ignore_errors=True)


def input_device(model: Any) -> Any:
    """The ``torch.device`` a model's inputs go to: for a model spread by ``device_map``, the
    first accelerator in its map (accelerate runs the CPU- and disk-offloaded parts there), else
    the CPU; otherwise the device of its first parameter that is not on the meta device."""
    torch = require("torch", "torch")
    mapping = getattr(model, "hf_device_map", None)
    if mapping:
        place = next((p for p in mapping.values() if str(p) not in ("cpu", "disk")), "cpu")
        return torch.device("cuda", place) if isinstance(place, int) else torch.device(place)
    for param in model.parameters():
        if param.device.type != "meta":
            return param.device
    return torch.device("cpu")
