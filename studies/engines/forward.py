"""The two engines' forwards for ``python -m studies.engines``: per-token log-probabilities of
SmolLM2-135M under one :class:`~posgeom.extension.engines.EngineTarget`, in transformers (the
``transformers5`` keys) and in llama.cpp (the ``llama-cpp-python`` keywords), and the GGUF copy
that carries llama3's ``rope_freqs`` tensor (llama.cpp's only spelling of llama3; written by posgeom's own writer).

Settings (docs/ENGINES.md): both engines 2 threads; llama.cpp ``n_batch = n_ubatch = 2048``,
``flash_attn=True``, ``logits_all``, its default fp16 KV cache; transformers float32 (the Q4_1
weights dequantised), its default attention (SDPA), the vocabulary projection in chunks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

LLAMA_BATCH = 2048
_CHUNK = 1024


def log_probs(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``(n-1,)`` float64 ``log p(ids[t+1] | ids[:t+1])`` from ``(n, V)`` logits (rows in
    chunks: a 12,288 x 49,152 float64 copy would need 4.8 GB)."""
    out = np.empty(ids.size - 1, dtype=np.float64)
    for a in range(0, ids.size - 1, _CHUNK):
        b = min(a + _CHUNK, ids.size - 1)
        z = logits[a:b].astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=1))
        out[a:b] = z[np.arange(b - a), ids[a + 1 : b + 1]] - lse
    return out


def transformers_log_probs(model: Any, target: Any, ids: np.ndarray) -> np.ndarray:
    """The model with ``transformers5(target)``'s ``rope_parameters`` and context, rebuilt as
    loading would build it; one forward over ``ids``."""
    import torch

    from posgeom.encodings.rope_extension import rebuild_rotary
    from posgeom.extension.engines.transformers import transformers5

    body = transformers5(target).settings
    model.config.rope_parameters = dict(body["rope_parameters"])
    model.config.max_position_embeddings = body["max_position_embeddings"]
    rebuild_rotary(model, target.strategy)
    with torch.no_grad():
        hidden = model.model(torch.as_tensor(ids[None, :])).last_hidden_state[0]
        logits = np.empty((ids.size, model.config.vocab_size), dtype=np.float32)
        for a in range(0, ids.size, _CHUNK):
            logits[a : a + _CHUNK] = model.lm_head(hidden[a : a + _CHUNK]).float().numpy()
    return log_probs(logits, ids)


def llama_kwargs(target: Any, gguf: Path) -> dict[str, Any]:
    """``llama_cpp_python.json``'s keywords for ``target`` on the GGUF ``gguf`` (``ARCH.`` keys as
    ``llama.``): what ``extend --emit llama-cpp-python --gguf-file`` writes (for llama3 the
    unscaled settings at ``L``, run on the copy carrying ``rope_freqs``: :func:`rope_freqs_gguf`)."""
    import dataclasses

    from posgeom.extension.engines.llamacpp import llamacpp_python

    emitted = llamacpp_python(dataclasses.replace(target, gguf_file=str(gguf)))
    if emitted.refused:
        raise SystemExit(f"{target.strategy}: {emitted.refused}")
    kwargs = dict(emitted.settings)
    overrides = kwargs.pop("kv_overrides", None) or {}
    kwargs["kv_overrides"] = {k.replace("ARCH.", "llama."): v for k, v in overrides.items()} or None
    return kwargs


def llama_log_probs(gguf: Path, target: Any, ids: np.ndarray, threads: int) -> np.ndarray:
    """llama.cpp's log-probabilities of ``ids`` (module docstring's settings)."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(gguf),
        logits_all=True,
        n_batch=LLAMA_BATCH,
        n_ubatch=LLAMA_BATCH,
        n_threads=threads,
        n_threads_batch=threads,
        flash_attn=True,
        verbose=False,
        **llama_kwargs(target, gguf),
    )
    try:
        llm.eval([int(t) for t in ids])
        logits = np.asarray(llm.scores[: ids.size], dtype=np.float32)
    finally:
        llm.close()
    return log_probs(logits, ids)


def rope_freqs_gguf(source: Path, target: Any, out: Path) -> Path:
    """A copy of the GGUF ``source`` carrying llama3's ``rope_freqs.weight`` (what ``extend
    --emit llamacpp --gguf-file`` writes: :func:`posgeom.extension.engines.gguf_tensors.
    write_rope_freqs_gguf`), written to ``out``; kept when it exists (the tensor's values are in
    its name's strategy)."""
    from posgeom.extension.engines.gguf_tensors import write_rope_freqs_gguf

    return out if out.exists() else write_rope_freqs_gguf(source, target, out)
