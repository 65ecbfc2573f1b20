"""Find the positional mechanism(s) of a pretrained Hugging Face model and turn them into geometry.

:func:`find_positional_mechanisms` asks every registered family (:mod:`posgeom.encodings`) to detect
its mechanism in the model, in the families' ``detect_order``; nothing is keyed on the model's name.
Each family's detector lives in its module (``learned``: a table named one of
:data:`~posgeom.encodings.learned.LEARNED_NAMES`, read from the first row a real token uses;
``rotary``: ``*inv_freq`` buffers or the configuration's rotary base; ``alibi``: the configuration
or a ``build_alibi_tensor`` method, slopes by :func:`~posgeom.encodings.alibi.alibi_slopes`;
``relative_buckets``: an embedding named ``relative_attention_bias``). A family may rule out
another's mechanism (a model with ALiBi reports no rotary one).

A mechanism is a :class:`~posgeom.encodings.Mechanism` ``(kind, source, params)`` with the
family's typed ``params``; ``PositionalMechanism`` is its former name. A model may carry several
mechanisms (MPNet: learned absolute + relative buckets; T5: encoder and decoder buckets).
:func:`find_positional_mechanisms` returns all of them; :func:`find_positional_mechanism` returns
the first with the others in its ``others`` field.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom._registry_names import registry_getattr
from posgeom._validation import check_int
from posgeom.encodings import Mechanism, families, family, family_of_mechanism
from posgeom.encodings._hf import config_get
from posgeom.encodings.t5_mechanism import t5_relative_position_bucket
from posgeom.models.layermap import assign_layers

__all__ = [
    "PositionalMechanism",
    "find_positional_mechanism",
    "find_positional_mechanisms",
    "mechanism_encodings",
    "mechanism_kinds",
    "mechanisms_document",
    "relative_position_bucket",
    "table_start",
    "to_encoding",
]

#: The former name of :class:`~posgeom.encodings.Mechanism`.
PositionalMechanism = Mechanism
#: T5's bucket of each relative position ``key - query`` (one implementation, numpy).
relative_position_bucket = t5_relative_position_bucket


def _detectors() -> list[Any]:
    """Families with a Hugging Face mechanism, in detection order."""
    found = [f for f in families().values() if f.mechanism_kind and f.looks_for]
    return sorted(found, key=lambda f: f.detect_order)


def mechanism_kinds() -> tuple[str, ...]:
    """Mechanism kinds in detection order, then ``"none"`` (read from the registry per call)."""
    return (*(f.mechanism_kind for f in _detectors()), family("nope").mechanism_kind)


#: ``MECHANISM_KINDS``: the registry read when used, not a snapshot at import
__getattr__ = registry_getattr(__name__, {"MECHANISM_KINDS": mechanism_kinds})


def _resolve_model(model_or_name_or_path: Any, **load_kwargs: Any) -> Any:
    if isinstance(model_or_name_or_path, (str, os.PathLike)):
        from posgeom.models.loading import load_model

        return load_model(model_or_name_or_path, **load_kwargs)
    torch = require("torch", "torch")
    if not isinstance(model_or_name_or_path, torch.nn.Module):
        raise PosgeomError(
            "expected a torch model, a Hugging Face model name or a local folder path, got "
            f"{type(model_or_name_or_path).__name__}"
        )
    return model_or_name_or_path


def _unclaimed(found: list[Mechanism]) -> list[Mechanism]:
    """``found`` without the readings of a buffer that another mechanism accounts for: a table
    that a formula reads (GPT-J's sin/cos ``embed_positions`` is rotary, not learned), and the
    ``inv_freq`` of a module whose output is a sinusoid of offsets (a conformer's relative
    encoding, not a rotation)."""
    claimed = {mech.source for mech in found if mech.kind != "learned"}
    sinusoids = {mech.source for mech in found if mech.kind == "sinusoidal"}
    return [
        m
        for m in found
        if not (m.kind == "learned" and m.source in claimed)
        and not (m.kind == "rotary" and m.source.rsplit(".", 1)[0] in sinusoids)
    ]


def find_positional_mechanisms(
    model_or_name_or_path: Any,
    *,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> tuple[Mechanism, ...]:
    """Every positional mechanism of a model, in detection order (see the module docstring).

    ``model_or_name_or_path``: a loaded ``torch.nn.Module`` (any Hugging Face model, with or
    without a head), a hub name present in the local cache, or a local folder (loaded offline with
    :func:`posgeom.models.loading.load_model`; ``load_kwargs`` go there). ``learned_offset``
    overrides the detected offset of learned tables. ``on_missing="none"`` returns a single
    ``kind="none"`` mechanism instead of raising when nothing is found.
    """
    if on_missing not in ("raise", "none"):
        raise PosgeomError(f"on_missing must be 'raise' or 'none', got {on_missing!r}")
    model = _resolve_model(model_or_name_or_path, **load_kwargs)
    config = getattr(model, "config", None)
    found = [
        mech
        for fam in _detectors()
        for mech in fam.detect(model, config, learned_offset=learned_offset)
    ]
    # a family may rule out another's mechanism (ALiBi models can keep an unused rotary module)
    excluded = {kind for mech in found for kind in family_of_mechanism(mech.kind).excludes}
    found = [mech for mech in found if mech.kind not in excluded]
    found = _unclaimed(found)
    if not found:
        if on_missing == "none":
            return tuple(assign_layers(model, [])) or (family("nope").none_mechanism(),)
        looked_for = "; ".join(f.looks_for for f in _detectors())
        raise PosgeomError(
            f"no positional mechanism found in {type(model).__name__} "
            f"(model_type={getattr(config, 'model_type', None)!r}). Looked for: {looked_for}. "
            "If the model has no positional encoding (NoPE), pass on_missing='none'; otherwise "
            "extract the table yourself and build a Mechanism"
        )
    return tuple(assign_layers(model, found))


def find_positional_mechanism(
    model_or_name_or_path: Any,
    *,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> Mechanism:
    """The model's primary positional mechanism, with any further ones in ``.others``.

    Primary is the first found: learned absolute, then rotary, ALiBi, relative buckets. MPNet
    gives ``kind="learned"`` (514-row table from row 2, so 512 x 768) with the relative buckets in
    ``others``; T5 gives the encoder's bidirectional buckets with the decoder's in ``others``.
    See :func:`find_positional_mechanisms` for the arguments.
    """
    found = find_positional_mechanisms(
        model_or_name_or_path, learned_offset=learned_offset, on_missing=on_missing, **load_kwargs
    )
    return found[0] if len(found) == 1 else dataclasses.replace(found[0], others=found[1:])


def mechanisms_document(
    model: Any, *, name: str | None = None, mechanisms: tuple[Mechanism, ...] | None = None
) -> dict[str, Any]:
    """The JSON document of ``posgeom extract --json``: ``{"model", "model_type", "num_layers",
    "stacks", "mechanisms": [{"kind", "layers", "stack", "source", ...params}]}``.

    ``kind`` is a registered mechanism kind or ``"none"``; ``layers`` the 0-based blocks of
    ``stack`` it acts on (``None``: an input-level table); rotary entries carry ``theta``,
    ``rotary_dim``, ``head_dim``, ``rope_type`` and the type's parameters under transformers'
    names (``factor``, ``original_max_position_embeddings``, ``beta_fast``, ...).
    ``mechanisms`` defaults to :func:`find_positional_mechanisms` (``on_missing="none"``).
    """
    from posgeom.encodings._hf import text_config
    from posgeom.models.layermap import LAYER_COUNT_FIELDS, layer_stacks

    if mechanisms is None:
        mechanisms = find_positional_mechanisms(model, on_missing="none")
    config = text_config(getattr(model, "config", None))
    layers = config_get(config, *LAYER_COUNT_FIELDS)
    return {
        "model": name,
        "model_type": getattr(config, "model_type", None),
        "num_layers": None if layers is None else int(layers),
        "stacks": layer_stacks(model),
        "mechanisms": [m.as_dict() for m in mechanisms],
    }


def to_encoding(mechanism: Mechanism, n: int, *, head: int | None = None) -> Any:
    """The geometry of the first ``n`` positions of ``mechanism`` as a float64 numpy array.

    - ``learned``: vectors ``(n, d)``, the rows ``0..n-1`` after the offset.
    - ``rotary``: vectors ``(n, rotary_dim)``: each 2-D plane's unit vector ``(1, 0)`` rotated by
      ``i * w_k``, i.e. columns ``(cos i w_0, sin i w_0, cos i w_1, sin i w_1, ...)``; Euclidean
      distance ``||p_i - p_j||^2 = sum_k 2 - 2 cos((i - j) w_k)``. ``attention_scaling`` is not
      applied (unit planes, norm ``sqrt(rotary_dim / 2)``).
    - ``alibi``: distances ``D_ij = m_h |i - j|`` (the rank-1 geometry of the bias ``-m_h |i-j|``).
    - ``relative_buckets``: distances from bias differences,
      ``D_ij = (|b_h(r_ij) - b_h(0)| + |b_h(r_ji) - b_h(0)|) / 2`` with ``r_ij = j - i`` and
      ``b_h(r)`` the bias of ``r``'s bucket for head ``h``. For ALiBi this reduces to
      ``m_h |i - j|``.
    - ``none``: vectors ``(n, 1)`` of zeros (every position at the same point).

    For the per-head kinds, ``head=None`` returns all heads stacked, shape ``(num_heads, n, n)``;
    ``head=h`` the ``(n, n)`` matrix of head ``h``. ``mechanism.others`` are not converted.
    """
    return mechanism.to_encoding(n, head=head)


def _as_mechanisms(model_or_mechanisms: Any, **find: Any) -> tuple[Mechanism, ...]:
    if isinstance(model_or_mechanisms, Mechanism):
        return model_or_mechanisms.all
    if isinstance(model_or_mechanisms, (list, tuple)) and all(
        isinstance(m, Mechanism) for m in model_or_mechanisms
    ):
        return tuple(m for mech in model_or_mechanisms for m in mech.all)
    return find_positional_mechanisms(model_or_mechanisms, **find)


def mechanism_encodings(
    model_or_mechanisms: Any,
    n: int,
    *,
    start: int = 0,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> dict[str, Any]:
    """A model's positional mechanisms as :class:`posgeom.encodings.PositionEncoding` objects.

    ``model_or_mechanisms``: a model, a name or local folder (loaded offline, ``load_kwargs`` go to
    :func:`~posgeom.models.loading.load_model`), a :class:`Mechanism` (it and its ``others``), or a
    sequence of them. Every encoding covers ``n`` positions; ``start`` shifts the first position
    (row ``start`` of a learned table is position 0 of the encoding; relative kinds do not move).

    Keys and values (all float64; geometry as in :func:`to_encoding`):

    - ``"learned"``: vectors ``(n, d)`` = table rows ``offset + start .. offset + start + n - 1``.
    - ``"rope"`` (``"rope_<layer_type>"`` for per-layer-type set-ups): vectors
      ``(n, rotary_dim)`` ``[cos(i w_0), sin(i w_0), cos(i w_1), ...]`` with the model's own
      inverse frequencies ``w_k`` (scaling variants already applied).
    - ``"alibi"``: all heads as columns, vectors ``(n, H)`` with column ``h`` = ``m_h i``;
      plus ``"alibi_h<h>"``: one head, vectors ``(n, 1)`` = ``m_h i``.
    - ``"relative_buckets_h<h>"``: one bucket head, a distance matrix only (``vectors=None``).
    - ``"nope"``: zero vectors ``(n, 1)`` (``on_missing="none"`` and nothing found; the blocks
      without a mechanism in a model that has one give no encoding).

    A kind found twice (T5 encoder and decoder buckets) gets ``_2``, ``_3`` ... after the kind.
    """
    mechanisms = _as_mechanisms(
        model_or_mechanisms, learned_offset=learned_offset, on_missing=on_missing, **load_kwargs
    )
    n = check_int(n, "n", 1)
    start = check_int(start, "start", 0)
    out: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for mech in mechanisms:
        if mech.kind == "none" and len(mechanisms) > 1:
            continue  # the blocks without a mechanism, beside the ones with: no geometry of theirs
        layer_type = getattr(mech.params, "layer_type", None)
        base = f"{mech.params.key}_{layer_type}" if layer_type else mech.params.key
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base}_{seen[base]}"
        params: dict[str, Any] = {"kind": mech.kind, "source": mech.source, "start": start}
        for suffix, enc in mech.params.encodings(n, start=start, params=params).items():
            out[key + suffix] = enc
    return out


def _leading_specials(seqs: list[np.ndarray], special: np.ndarray) -> int:
    """Number of leading special tokens shared by every sequence (0 when they differ)."""
    if special.size == 0 or not seqs:
        return 0
    counts = set()
    for s in seqs:
        keep = ~np.isin(s, special)
        counts.add(int(np.argmax(keep)) if keep.any() else len(s))
        if len(counts) > 1:
            return 0
    return counts.pop()


def table_start(
    mechanisms: Sequence[Mechanism], seqs: list[np.ndarray], special: np.ndarray, n: int
) -> int:
    """First learned-table row used as position 0: the shared leading special tokens (special
    tokens excluded; ``special``: their int64 ids, empty when they are counted), unless the
    table is too short for ``n`` rows from there (why: :mod:`posgeom.models.analysis`)."""
    start = _leading_specials(seqs, special)
    table = next((m for m in mechanisms if m.kind == "learned"), None)
    if table is not None and table.n_positions is not None and n + start > table.n_positions:
        return 0
    return start
