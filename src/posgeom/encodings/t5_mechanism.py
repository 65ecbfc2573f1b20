"""T5's relative-position buckets in a Hugging Face model: the bucket rule and the bias tables.

The bucket of a relative position ``r = j - i`` (key minus query) is Mesh TensorFlow's / Hugging
Face's ``_relative_position_bucket`` (:func:`t5_relative_position_bucket`, the one copy): exact
buckets for ``|r| < max_exact = B'/2`` and logarithmic ones up to ``max_distance``, where ``B' =
num_buckets / 2`` when bidirectional (positive ``r`` add ``B'``) and ``B' = num_buckets``
otherwise (positive ``r`` all fall in bucket 0). The logarithm is taken in float32, as Hugging
Face does, so bucket edges match it.

A model's tables (:func:`detect_buckets`): ``nn.Embedding`` modules or 2-D parameters named in
:data:`RELATIVE_BIAS_NAMES`, ``(num_buckets, n_heads)`` (rows beyond ``num_buckets``, CPM-Ant's
segment pairs, are left out); their bucket settings come from the owning module, its bucket
function's defaults or the configuration (:class:`BucketParams`).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._mechanism import Mechanism, MechanismParams, head_select

__all__ = ["RELATIVE_BIAS_NAMES", "BucketParams", "detect_buckets", "t5_relative_position_bucket"]

#: Last name components of relative-position bias tables (T5-style buckets; WavLM's too).
RELATIVE_BIAS_NAMES = ("relative_attention_bias", "rel_attn_embed")
_BUCKET_METHODS = (
    "compute_position_bias",
    "compute_bias",
    "relative_position_bucket",
    "_relative_position_bucket",
)


def t5_relative_position_bucket(
    relative_position: np.ndarray,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> np.ndarray:
    """Bucket index (int64, same shape) of ``relative_position = key - query``, as Hugging Face's
    ``T5Attention._relative_position_bucket``."""
    if hasattr(relative_position, "detach"):
        relative_position = relative_position.detach().cpu().numpy()
    rel = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        scaled = np.log(rel.astype(np.float32) / np.float32(max_exact))
    large = (
        scaled
        / np.float32(math.log(max_distance / max_exact))
        * np.float32(num_buckets - max_exact)
    )
    large = max_exact + np.where(rel < max_exact, 0, large).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(rel < max_exact, rel, large)


@dataclass(frozen=True, eq=False)
class BucketParams(MechanismParams):
    """A model's relative-position buckets: ``bias_table`` ``(num_buckets_in_table, num_heads)``,
    ``num_buckets``, ``max_distance``, ``bidirectional`` (encoder) and ``num_heads``."""

    key = "relative_buckets"
    _arrays = ("bias_table",)
    representation = "distances"

    bias_table: np.ndarray
    num_buckets: int = 32
    max_distance: int = 128
    bidirectional: bool = True
    num_heads: int = 0

    def summary(self) -> str:
        direction = "bidirectional" if self.bidirectional else "unidirectional"
        return (
            f"relative buckets {self.num_buckets} buckets, max distance {self.max_distance},"
            f" {direction}, {self.num_heads} heads"
        )

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Distances per head from bias differences, ``(H, n, n)`` (or ``(n, n)`` for ``head``):
        ``D_ij = (|b_h(r_ij) - b_h(0)| + |b_h(r_ji) - b_h(0)|) / 2``, ``r_ij = j - i`` and
        ``b_h(r)`` the bias of ``r``'s bucket for head ``h``."""
        kw = {
            "bidirectional": bool(self.bidirectional),
            "num_buckets": int(self.num_buckets),
            "max_distance": int(self.max_distance),
        }
        pos = np.arange(n)
        bias = self.bias_table[t5_relative_position_bucket(pos[None, :] - pos[:, None], **kw)]
        zero = self.bias_table[t5_relative_position_bucket(np.array(0), **kw)]
        diff = np.abs(bias - zero[None, None, :])
        dist = 0.5 * (diff + diff.transpose(1, 0, 2))
        return head_select(np.ascontiguousarray(dist.transpose(2, 0, 1)), head)

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        """One distance-only encoding per head, ``"_h<h>"`` (``start`` plays no role)."""
        stack = self.to_encoding(n)
        params = dict(
            params,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
            bidirectional=self.bidirectional,
            n_heads=self.num_heads,
        )
        return {
            f"_h{h}": PositionEncoding(
                "relative_buckets", None, {**params, "head": h}, distance_matrix=stack[h]
            )
            for h in range(stack.shape[0])
        }


def _signature_default(owner: Any, parameter: str) -> Any:
    for method in _BUCKET_METHODS:
        function = getattr(owner, method, None)
        if function is None:
            continue
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # pragma: no cover - builtins
            continue
        param = signature.parameters.get(parameter)
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
    return None


def _bucket_mechanism(model: Any, config: Any, name: str, weight: Any, source: str) -> Mechanism:
    """The buckets of the table ``weight`` ``(rows, heads)``, the module or parameter ``name``
    (owned by the attention or position module that sets the buckets): its first
    ``num_buckets`` rows (CPM-Ant keeps its segment-pair rows after them)."""
    owner = _hf.parent(model, name)
    rows, heads = weight.shape

    def setting(name: str, default: int) -> Any:  # the owner's, its bucket function's, config's
        ours = getattr(owner, f"relative_attention_{name}", None) or getattr(owner, name, None)
        theirs = getattr(config, f"relative_attention_{name}", None)
        return ours or _signature_default(owner, name) or theirs or default

    num_buckets, max_distance = setting("num_buckets", rows), setting("max_distance", 128)
    is_decoder = getattr(owner, "is_decoder", None)
    if int(num_buckets) > rows:
        raise PosgeomError(
            f"{name} has {rows} rows but the model uses {num_buckets} buckets; "
            "the checkpoint and its configuration disagree"
        )
    params = BucketParams(
        bias_table=_hf.to_numpy(weight[: int(num_buckets)]),
        num_buckets=int(num_buckets),
        max_distance=int(max_distance),
        bidirectional=True if is_decoder is None else not bool(is_decoder),
        num_heads=int(heads),
    )
    return Mechanism("relative_buckets", source, params)


def detect_buckets(model: Any, config: Any) -> list[Mechanism]:
    """Tables named in :data:`RELATIVE_BIAS_NAMES`: embeddings or 2-D parameters (CPM-Ant)."""
    tables = [
        (name, m.weight, f"{name}.weight")
        for name, m in model.named_modules()
        if _hf.last_name(name) in RELATIVE_BIAS_NAMES and _hf.is_embedding(m)
    ] + [
        (name, p, name)
        for name, p in model.named_parameters()
        if _hf.last_name(name) in RELATIVE_BIAS_NAMES and p.ndim == 2
    ]
    return [_bucket_mechanism(model, config, *table) for table in tables]
