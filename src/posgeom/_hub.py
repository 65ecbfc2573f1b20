"""The one place posgeom calls ``from_pretrained`` (bottom layer: no torch at import).

Every Hugging Face model, configuration and tokenizer the package loads goes through
:func:`pretrained_model`, :func:`pretrained_config` or :func:`pretrained_tokenizer`: always
``trust_remote_code=False`` and ``local_files_only=True`` (for tokenizers unless
``allow_download=True``), as keyword arguments (the process environment is left alone). A
failure raises :class:`~posgeom._errors.PosgeomError` with one line naming the cause and the fix.
Loads are quiet (:func:`posgeom._library_output.quiet_library`): weights the checkpoint lacks are
named in one posgeom log line.

Public faces: :mod:`posgeom.models.loading` and :func:`posgeom.corpus.tokenize.load_tokenizer`;
this module sits below both (the corpus layer loads a tokenizer without the models layer).
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, require
from posgeom._library_output import quiet_library
from posgeom._placement import offload_cleanup, pretrained_kwargs

__all__ = [
    "check_model_source",
    "one_line",
    "pretrained_config",
    "pretrained_model",
    "pretrained_tokenizer",
]

_FORCED = ("local_files_only", "trust_remote_code")
log = logging.getLogger("posgeom")


def one_line(exc: BaseException, limit: int = 400) -> str:
    """The exception text on one line (the CLI prints only the first line of an error)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _target(name_or_path: str | os.PathLike[str], kwargs: dict[str, Any]) -> str:
    """The model's path (expanded when it exists), ``kwargs`` refused when they force a load."""
    for key in _FORCED:
        if key in kwargs:
            raise PosgeomError(
                f"{key} cannot be set: posgeom always loads with local_files_only=True and "
                "trust_remote_code=False; remove that argument"
            )
    path = Path(name_or_path).expanduser()
    return str(path) if path.exists() else os.fspath(name_or_path)


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or os.sep in name.strip(os.sep).replace(os.sep, "", 1)


def check_model_source(name_or_path: str | os.PathLike[str], gguf_file: str | None = None) -> None:
    """Refuse, before anything loads, a model folder given as a path that does not exist and a
    GGUF checkpoint that is not in its folder or cannot be read (``gguf`` missing: the
    ``posgeom[extension]`` extra), each in one line that names the model and the fix."""
    name = os.fspath(name_or_path)
    folder = Path(name).expanduser()
    if _looks_like_path(name) and not folder.exists():
        raise PosgeomError(
            f"the model folder {name} does not exist (posgeom loads models offline, from local "
            "files); pass an existing folder that holds config.json and the weights"
            + (f", or the folder that holds {gguf_file}" if gguf_file else "")
        )
    if not gguf_file:
        return
    if folder.is_dir() and not (folder / gguf_file).is_file():
        raise PosgeomError(
            f"the model folder {name} holds no {gguf_file}; pass the folder that holds the .gguf "
            "file and its name with --gguf-file (gguf_file=)"
        )
    require("gguf", "extension")  # transformers reads GGUF checkpoints with the gguf package


def _offline_error(name: str, what: str, exc: Exception) -> PosgeomError:
    if _looks_like_path(name) and not Path(name).expanduser().exists():  # not "Repo id ..."
        return PosgeomError(
            f"the {what} path {name} does not exist (posgeom loads offline, from local files); "
            "pass an existing folder that holds config.json (and the weights or tokenizer files), "
            "or a model name in the local cache"
        )
    return PosgeomError(
        f"could not load the {what} {name!r} offline (posgeom loads with local_files_only=True and "
        f"never downloads): {one_line(exc)} Fix: pass the path of a local folder that holds "
        "config.json and the weights (e.g. model.safetensors) and tokenizer files, or put the "
        "model in the local Hugging Face cache first (on a connected machine: `hf download "
        "NAME`, then copy the cache or the folder here)."
    )


def _report_rows(report: list[logging.LogRecord], status: str) -> list[list[str]]:
    """The rows ``key | status | ...`` of transformers' load report (``MISSING``, ...)."""
    rows = [
        [part.strip() for part in line.split("|", 2)]
        for record in report
        for line in record.getMessage().splitlines()
    ]
    return [row for row in rows if len(row) > 1 and row[1] == status]


def _first_mismatch(report: list[logging.LogRecord]) -> str | None:
    """The first mismatched weight of transformers' load report (``key | MISMATCH | ...``)."""
    rows = [row for row in _report_rows(report, "MISMATCH") if "ckpt" in row[-1]]
    return f"{rows[0][0]}: {rows[0][-1].rsplit(' - ', 1)[-1]}" if rows else None


def _note_missing(target: str, report: list[logging.LogRecord]) -> None:
    """One posgeom line for weights the checkpoint lacks (transformers initialised them at
    random: harmless for a pooler, not for a position table); unexpected ones only with -v."""
    missing = [row[0] for row in _report_rows(report, "MISSING")]
    if missing:
        log.info(
            "note: %d weight(s) of the model are not in %s and were initialised at random (%s%s)",
            len(missing),
            target,
            ", ".join(missing[:3]),
            ", ..." if len(missing) > 3 else "",
        )
    unexpected = _report_rows(report, "UNEXPECTED")
    if unexpected:
        log.debug("%s: %d unused weight(s) in the checkpoint", target, len(unexpected))


def _load_failure(
    target: str, what: str, exc: Exception, report: list[logging.LogRecord] = ()
) -> PosgeomError:
    """One line naming the folder, the file at fault and the fix, for a library exception of
    ``from_pretrained`` on local files (anything else: the offline message); ``report``: the
    load report transformers logged before it raised."""
    text, kind = one_line(exc, 200), type(exc).__name__
    if isinstance(exc, RecursionError):
        return PosgeomError(
            f"{target}: a JSON file of the {what} (config.json or a tokenizer file) is nested too "
            "deeply to be read; restore the original file"
        )
    if isinstance(exc, pickle.UnpicklingError) or "weights_only" in text:
        return PosgeomError(
            f"{target}: its pickled PyTorch weights (pytorch_model.bin) hold more than plain "
            "tensors, and posgeom never unpickles them (torch.load with weights_only=True only). "
            "Fix: use the model's model.safetensors, or convert the weights to safetensors "
            "where you trust the file"
        )
    if kind == "SafetensorError" or "safetensors" in text.lower():
        return PosgeomError(
            f"{target}: its weights file (model.safetensors) is damaged or forged ({text}); "
            "download or save the model again (save_pretrained)"
        )
    if isinstance(exc, RuntimeError) and ("mismatch" in text or "size" in text):
        first = _first_mismatch(list(report)) or text
        return PosgeomError(
            f"{target}: the weights do not have the shapes its config.json describes ({first}); "
            "use the config.json saved with these weights, or save the model again"
        )
    if isinstance(exc, (OSError, ValueError, KeyError)) and not Path(target).is_dir():
        return _offline_error(target, what, exc)
    if isinstance(exc, (OSError, ValueError, KeyError)):
        return PosgeomError(  # a local folder: the file it names is what to fix, not a download
            f"the {what} folder {target} cannot be loaded ({text}); restore the file named "
            "there (config.json, the weights, the tokenizer files) or save the model again "
            "(save_pretrained)"
        )
    return PosgeomError(
        f"{target}: transformers cannot load the {what} ({kind}: {text}); check its "
        "config.json and weight files, or save the model again (save_pretrained)"
    )


def pretrained_model(
    name_or_path: str | os.PathLike[str],
    *,
    model_class: Any = None,
    device: Any = None,
    dtype: Any = None,
    offload_folder: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Any:
    """Load a pretrained model by hub name (from the local cache only) or local folder:
    ``model_class.from_pretrained`` (default ``transformers.AutoModel``), offline, quiet, in eval
    mode (public as :func:`posgeom.models.load_model`). ``device``, ``dtype`` and
    ``offload_folder`` as in :mod:`posgeom._placement`; extra keyword arguments go to
    ``from_pretrained`` (``gguf_file=...``, ``max_memory=...``).
    """
    target = _target(name_or_path, kwargs)
    require("torch", "torch")
    transformers = require("transformers", "hf")
    cls = model_class if model_class is not None else transformers.AutoModel
    check_model_source(target, kwargs.get("gguf_file"))
    placed = pretrained_kwargs(
        device, dtype, gguf=bool(kwargs.get("gguf_file")), offload_folder=offload_folder
    )
    report: list[logging.LogRecord] = []
    try:
        with quiet_library("transformers") as report:
            model = _gguf_model(cls, target, placed, kwargs) or cls.from_pretrained(
                target, local_files_only=True, trust_remote_code=False, **{**placed, **kwargs}
            )
            _check_layers(target, model)  # inside: the load report is dropped with the error
    except PosgeomError:
        raise
    except Exception as exc:
        offload_cleanup(None, placed, given=offload_folder is not None)  # a temporary one
        text = str(exc)
        if "trust_remote_code" in text or "does not recognize this architecture" in text:
            raise PosgeomError(
                f"the model {target!r} needs code that is not part of transformers "
                f"(trust_remote_code), which posgeom never runs: {one_line(exc)} Fix: use a "
                "model whose architecture transformers supports natively, or upgrade transformers"
            ) from exc
        raise _load_failure(target, "model", exc, report) from exc
    offload_cleanup(model, placed, given=offload_folder is not None)
    _note_missing(target, report)
    model.eval()
    return model


def _gguf_model(cls: Any, target: str, placed: dict[str, Any], kwargs: dict[str, Any]) -> Any:
    """A GGUF checkpoint loaded on the CPU straight into the asked dtype, or ``None`` (then
    ``from_pretrained`` loads it). Unlike transformers' own GGUF path (about 2.5 x the weights at
    its peak), each tensor is read, de-quantised, renamed by transformers' name map and tensor
    processor, cast and assigned alone: the peak is the weights plus the largest tensor."""
    gguf_file = kwargs.get("gguf_file")
    if (
        not gguf_file
        or set(kwargs) != {"gguf_file"}
        or set(placed) - {"dtype", "quantization_config"}
    ):
        return None
    torch, np = require("torch", "torch"), require("numpy", "numpy")
    transformers = require("transformers", "hf")
    try:  # transformers >= 5.25 (its GGUF header reader); an older one loads it its own way
        from transformers import modeling_gguf_pytorch_utils as ggml
        from transformers.integrations.gguf import GgufHeader as header_type
    except ImportError:  # pragma: no cover - depends on the installed transformers
        return None
    path = str(Path(target, gguf_file)) if Path(target).is_dir() else gguf_file
    config = transformers.AutoConfig.from_pretrained(
        target, local_files_only=True, gguf_file=gguf_file
    )
    parsed = ggml.load_gguf_checkpoint(path, return_tensors=False)
    parsed.pop("tokenizer", None)  # its vocabulary: not needed for the weights
    header = header_type.from_file(path)
    dtype = placed["dtype"]
    if dtype == "auto":
        dtype = header.dtype or torch.float32  # transformers' rule: a quantised file is float32
    with require("accelerate", "extension").init_empty_weights(include_buffers=False):
        build = getattr(cls, "from_config", None) or cls._from_config
        model = build(config, dtype=dtype)
    processor = ggml.TENSOR_PROCESSORS.get(header.architecture, ggml.TensorProcessor)
    processor = processor(config=parsed["config"])
    names = ggml.get_gguf_hf_weights_map(model, processor)
    parsed["tensors"] = state = {}
    for info in header.tensors:
        weights = _gguf_tensor(header, info)
        result = processor.process(
            weights=weights, name=info.name, tensor_key_mapping=names, parsed_parameters=parsed
        )
        if result.name in names:
            weights = np.require(result.weights, np.float32, ["C", "W"])  # copies a view only
            state[names[result.name]] = torch.from_numpy(weights).to(dtype)
    model.load_state_dict(state, strict=False, assign=True)  # each tensor cast when read
    model.tie_weights()
    if any(p.device.type == "meta" for p in model.parameters()):
        return None  # a weight the file lacks: transformers initialises it (and reports it)
    model.config.name_or_path = target
    return model


def _gguf_tensor(header: Any, info: Any, rows_per_chunk: int = 4096) -> Any:
    """One tensor of a GGUF file in float32 (``numpy``, the shape transformers' legacy reader
    gives): its bytes alone read from the file, de-quantised by ``gguf.quants.dequantize``
    ``rows_per_chunk`` rows at a time (its intermediates stay a chunk's size)."""
    np = require("numpy", "numpy")
    gguf = require("gguf", "extension")
    qtype = gguf.GGMLQuantizationType(info.ggml_type)
    block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    with open(header.path, "rb") as fh:
        fh.seek(header.data_start + info.offset)
        raw = np.frombuffer(fh.read(info.nbytes), dtype=np.uint8)
    rows = raw.reshape(-1, info.shape[-1] // block * block_bytes)
    out = np.empty((rows.shape[0], info.shape[-1]), dtype=np.float32)
    for start in range(0, rows.shape[0], rows_per_chunk):
        chunk = rows[start : start + rows_per_chunk]
        out[start : start + rows_per_chunk] = gguf.quants.dequantize(chunk, qtype)
    return out.reshape(info.shape)


def _check_layers(target: str, model: Any) -> None:
    """A config with ``num_hidden_layers`` below 1 builds a model with no layers: transformers
    loads it (ignoring every layer's weights) and its forward returns no hidden states."""
    layers = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    if isinstance(layers, int) and not isinstance(layers, bool) and layers < 1:
        raise PosgeomError(
            f"the model {target!r} has num_hidden_layers = {layers} in its config.json: a model "
            "needs at least one layer; fix num_hidden_layers (the number of layers its weights hold)"
        )


def pretrained_config(name_or_path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """``transformers.AutoConfig.from_pretrained``, offline, no remote code (``gguf_file=``...)."""
    target = _target(name_or_path, kwargs)
    transformers = require("transformers", "hf")
    check_model_source(target, kwargs.get("gguf_file"))
    try:
        with quiet_library("transformers"):
            return transformers.AutoConfig.from_pretrained(
                target, local_files_only=True, trust_remote_code=False, **kwargs
            )
    except Exception as exc:
        raise _load_failure(target, "configuration", exc) from exc


def pretrained_tokenizer(
    name_or_path: str | os.PathLike[str], *, allow_download: bool = False, **kwargs: Any
) -> Any:
    """``transformers.AutoTokenizer.from_pretrained``: local cache or folder only unless
    ``allow_download=True``; ``trust_remote_code`` is never set."""
    target = _target(name_or_path, kwargs)
    transformers = require("transformers", "hf")
    if kwargs.get("gguf_file"):
        check_model_source(target, kwargs["gguf_file"])
    try:
        with quiet_library("transformers"):
            return transformers.AutoTokenizer.from_pretrained(
                target, local_files_only=not allow_download, trust_remote_code=False, **kwargs
            )
    except Exception as exc:
        if allow_download:
            raise PosgeomError(f"cannot load tokenizer {target!r}: {one_line(exc)}") from exc
        error = _load_failure(target, "tokenizer", exc)
        if not isinstance(exc, (OSError, ValueError, KeyError)) or Path(target).is_dir():
            raise error from exc  # a damaged local file: not a download's matter
        raise PosgeomError(
            f"{error} From Python, posgeom.corpus.tokenize.load_tokenizer(NAME, "
            "allow_download=True) fetches a tokenizer from the hub."
        ) from exc
