"""How a strategy reaches a model, as its family says: a transformers causal LM through the
family's ``apply_to_transformers`` (RoPE: its config and rebuilt rotary modules), a posgeom
``CausalDecoder`` through a new position module (:class:`posgeom.extension.decoder.DecoderRunner`).
A strategy its family cannot apply is refused (one line), never measured as ``none``. Both runners
give ``hidden_and_head(x)``, what the losses of :mod:`.outcomes` and :mod:`.measure` read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from posgeom.encodings import extension_of
from posgeom.encodings._extension import ExtensionContext, Strategy

__all__ = ["apply_strategy", "runner_for"]


def apply_strategy(
    model: Any, strategy: Strategy, trained_length: int, target_length: int
) -> Callable[[], None] | None:
    """Apply ``strategy`` to a transformers causal LM in place, as its family says
    (:meth:`~posgeom.encodings._extension.Extension.apply_to_transformers`); returns what puts
    the model's own back (``None``: nothing changed). One line when the family cannot apply it."""
    ctx = ExtensionContext(int(trained_length), int(target_length))
    return extension_of(strategy.family).apply_to_transformers(model, strategy, ctx)


class _HFRunner:
    """Strategies on a transformers causal LM (:func:`apply_strategy`); :meth:`restore` puts its
    own back."""

    identity = ""
    target = "transformers"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.undo: Callable[[], None] | None = None

    def supports(self, strategy: Strategy) -> bool:
        """Whether the strategy's family can apply it to a transformers model."""
        return extension_of(strategy.family).can_apply(strategy, "transformers")

    def apply(self, strategy: Strategy, trained_length: int, target_length: int) -> None:
        undo = apply_strategy(self.model, strategy, trained_length, target_length)
        self.undo = self.undo or undo  # the first undo puts the model's own back

    def restore(self) -> None:
        """The model's own configuration back (its rotary modules rebuilt)."""
        if self.undo is not None:
            self.undo()
            self.undo = None

    def scaled(self) -> dict[str, Any] | None:
        """Where a RoPE strategy reaches a model with one rotary set-up per layer type (Gemma
        3): ``{"layer_types": [...], "layers": [...]}`` (the blocks of those types); ``None``
        when one set-up serves every layer."""
        from posgeom.encodings._hf import text_config
        from posgeom.encodings.rope_layer_types import scaled_layer_types

        config = getattr(self.model, "config", None)
        types = scaled_layer_types(getattr(config, "rope_parameters", None))
        if types is None:
            return None
        per_layer = getattr(text_config(config), "layer_types", None) or []
        return {"layer_types": types, "layers": [i for i, t in enumerate(per_layer) if t in types]}

    def hidden_and_head(self, x: Any) -> tuple[Any, Any]:
        decoder, head = self.model.get_decoder(), self.model.get_output_embeddings()
        return decoder(input_ids=x).last_hidden_state[0], head


def runner_for(model: Any, position_distances: Any = None) -> Any:
    """How strategies reach ``model``: a posgeom ``CausalDecoder`` (its position module,
    :class:`posgeom.extension.decoder.DecoderRunner`) or a transformers causal LM (its config)."""
    from posgeom.extension.decoder import DecoderRunner, is_decoder

    if is_decoder(model):
        return DecoderRunner(model, position_distances)
    return _HFRunner(model)
