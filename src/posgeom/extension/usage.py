"""How much a RoPE model uses each rotary plane, from its own query/key weights, and what a
strategy does to the planes it uses (no forward pass).

**Plane use.** In the rotate-half convention (transformers, :mod:`posgeom.nn.rotary`) plane ``j``
of a head of width ``h`` is the coordinate pair ``(j, j + h/2)``, turned at frequency ``w_j``. A
head's query on that plane is ``W_q[rows of head, (j, j + h/2)] x``. Without a forward the energy
it can put there is the squared Frobenius norm of those two rows (with the input RMSNorm gain
``g`` folded in when the layer has one: ``W_q diag(g)``)::

    Eq[l, a, j] = ||W_q^{(l)}[a h + j, :] g||^2 + ||W_q^{(l)}[a h + j + h/2, :] g||^2
    Ek[l, b, j] = (the same for W_k and key head b)
    U[l, a, j]  = sqrt(Eq[l, a, j] Ek[l, b(a), j])       (b(a) = a // (heads / kv_heads))

``U`` is the product of the query's and the key's norm on the plane, the factor by which the
plane's rotation can move the head's logits (Barbero et al., "Round and Round We Go! What makes
Rotary Positional Encodings useful?", ICLR 2025, measure the same norms on activations). The
plane weights are ``u_j = sum_{l, a} U[l, a, j] / sum U`` (shape ``(h/2,)``, sum 1).

**Model-aware scores of a strategy** (frequencies ``w'`` and attention factor ``a`` at the target
``L``, the model's own ``w`` at ``L0``), both lower = better:

- ``in_window_change = sum_j u_j sum_{k=1..L0-1} p_k |a^2 e^{i k w'_j} - e^{i k w_j}|^2 / 4`` with
  ``p_k = (1/k) / sum_k' (1/k')``: how far the strategy moves the attention kernel at the lags the
  model was trained on (0: untouched; 1: every used plane's logit contribution reversed), short
  lags weighted most, as attention weights them;
- ``beyond_unseen = sum_j u_j max(0, reach_j / seen_j - 1)`` over the planes whose circle training
  did not complete (``seen_j = (L0 - 1) w_j < 2 pi``; ``reach_j = min((L - 1) w'_j, 2 pi)``): how far
  past the phases it was trained on each such plane is driven at lags up to ``L - 1``, as a share
  of the trained range, weighted by use.

``model_score = in_window_change + beyond_unseen`` (a plain sum; how these forms were chosen:
``docs/EXTENSION.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = ["PlaneUse", "model_scores", "plane_use"]


@dataclass(frozen=True, eq=False)
class PlaneUse:
    """``per_head`` ``(layers, heads, planes)`` use ``U`` and ``weights`` ``(planes,)`` (sum 1)."""

    per_head: np.ndarray
    weights: np.ndarray

    def summary(self) -> dict[str, Any]:
        w = self.weights
        return {
            "definition": "u_j = sum over layers and heads of ||W_q rows of plane j|| ||W_k rows "
            "of plane j|| (RMSNorm gain folded in), normalised to sum 1; plane j = (j, j + h/2)",
            "layers": int(self.per_head.shape[0]),
            "heads": int(self.per_head.shape[1]),
            "weights": [float(x) for x in w],
            "slow_half_share": float(w[w.size // 2 :].sum()),
        }


def _plane_energy(weight: np.ndarray, heads: int, head_dim: int) -> np.ndarray:
    """``(heads, head_dim / 2)`` energies of a ``(heads * head_dim, d)`` projection."""
    rows = np.sum(weight * weight, axis=1).reshape(heads, head_dim)
    half = head_dim // 2
    return rows[:, :half] + rows[:, half:]


def _layers(model: Any) -> list[tuple[np.ndarray, np.ndarray, int, int, int]]:
    """``(W_q, W_k, heads, kv_heads, head_dim)`` per attention layer (gain folded in)."""
    import torch

    def arr(t: Any) -> np.ndarray:
        return t.detach().to(torch.float64).cpu().numpy()

    out = []
    for module in model.modules():
        if hasattr(module, "q_proj") and hasattr(module, "k_proj"):
            cfg = getattr(module, "config", None) or model.config
            heads = int(cfg.num_attention_heads)
            kv = int(getattr(cfg, "num_key_value_heads", None) or heads)
            hd = int(getattr(module, "head_dim", 0) or cfg.hidden_size // heads)
            out.append([arr(module.q_proj.weight), arr(module.k_proj.weight), heads, kv, hd])
        elif hasattr(module, "qkv") and hasattr(module, "n_heads"):
            w = arr(module.qkv.weight)
            d = w.shape[0] // 3
            out.append([w[:d], w[d : 2 * d], module.n_heads, module.n_heads, module.head_dim])
    gains = [
        getattr(m.input_layernorm, "weight", None)
        for m in model.modules()
        if hasattr(m, "input_layernorm") and hasattr(m, "self_attn")
    ]
    if len(gains) == len(out) and all(isinstance(g, torch.Tensor) for g in gains):
        gains = [arr(g) for g in gains]  # a norm without a gain (gated, L2) folds nothing
        for layer, g in zip(out, gains, strict=True):
            layer[0], layer[1] = layer[0] * g, layer[1] * g
    return [tuple(layer) for layer in out]


def plane_use(model: Any) -> PlaneUse:
    """:class:`PlaneUse` of a transformers RoPE model (``q_proj``/``k_proj``) or a posgeom
    ``CausalDecoder`` / ``TinyEncoder`` (fused ``qkv``) (module docstring)."""
    layers = _layers(model)
    if not layers:
        raise PosgeomError(
            f"{type(model).__name__} has no q_proj/k_proj or qkv projections to read plane use "
            "from; give a transformers RoPE model or a posgeom decoder"
        )
    per_head = []
    for wq, wk, heads, kv, hd in layers:
        eq = _plane_energy(wq, heads, hd)
        ek = _plane_energy(wk, kv, hd)[np.arange(heads) // (heads // kv)]
        per_head.append(np.sqrt(eq * ek))
    u = np.stack(per_head)
    return PlaneUse(u, u.sum(axis=(0, 1)) / u.sum())


def model_scores(
    weights: np.ndarray,
    trained_freq: np.ndarray,
    freq: np.ndarray,
    attention_factor: float,
    trained_length: int,
    target_length: int,
) -> dict[str, float]:
    """``in_window_change``, ``beyond_unseen`` and ``model_score`` (module docstring)."""
    from posgeom.extension.fit import TWO_PI

    u = np.asarray(weights, dtype=np.float64)
    w0, w = np.asarray(trained_freq, np.float64), np.asarray(freq, np.float64)
    if not (u.shape == w0.shape == w.shape):
        raise PosgeomError(
            f"{u.size} plane weights for {w.size} frequencies: read the use from this model"
        )
    lags = np.arange(1, trained_length, dtype=np.float64)
    p = (1.0 / lags) / np.sum(1.0 / lags)
    a2 = float(attention_factor) ** 2
    change = p @ (a2 * a2 + 1.0 - 2.0 * a2 * np.cos(lags[:, None] * (w - w0))) / 4.0
    seen = (trained_length - 1) * w0
    reach = np.minimum((target_length - 1) * w, TWO_PI)
    over = np.where(seen < TWO_PI, np.maximum(reach / seen - 1.0, 0.0), 0.0)
    inside, beyond = float(u @ change), float(u @ over)
    return {"in_window_change": inside, "beyond_unseen": beyond, "model_score": inside + beyond}
