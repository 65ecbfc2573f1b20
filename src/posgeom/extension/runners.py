"""How a strategy reaches a model: a transformers causal LM gets the strategy's
``rope_parameters`` in its config and its rotary modules rebuilt from it (as transformers builds
them when it loads such a ``config.json``); a posgeom ``CausalDecoder`` gets a new position module
(:class:`posgeom.extension.decoder.DecoderRunner`). Both runners give ``hidden_and_head(x)``,
what the losses of :mod:`posgeom.extension.outcomes` and :mod:`posgeom.extension.measure` read.
"""

from __future__ import annotations

from typing import Any

from posgeom._errors import PosgeomError
from posgeom.extension.strategies import Strategy

__all__ = ["apply_strategy", "runner_for"]


def _rebuild_rotary(model: Any, what: str) -> None:
    """Rebuild every rotary module of ``model`` from ``model.config`` (as loading would)."""
    found = 0
    for name, module in list(model.named_modules()):
        if hasattr(module, "inv_freq") and hasattr(module, "rope_type"):
            fresh = type(module)(config=model.config)
            fresh.to(module.inv_freq.device)
            parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
            setattr(parent, name.rpartition(".")[2], fresh)
            found += 1
    if not found:
        raise PosgeomError(
            f"{type(model).__name__} has no rotary module (with inv_freq and rope_type) to give "
            f"{what}; --measure supports transformers' rotary models"
        )


def apply_strategy(model: Any, strategy: Strategy, trained_length: int, target_length: int) -> None:
    """Give ``model`` the strategy's rope parameters and rebuild its rotary modules (in place)."""
    if strategy.rope_parameters is None:
        return
    model.config.rope_parameters = dict(strategy.rope_parameters)
    for key, value in strategy.config_changes(trained_length, target_length).items():
        setattr(model.config, key, value)
    _rebuild_rotary(model, f"the strategy {strategy.name!r}")


class _HFRunner:
    """Strategies on a transformers causal LM: its config's rope parameters, rotary modules
    rebuilt (:func:`apply_strategy`); :meth:`restore` puts its own back."""

    identity = ""

    def __init__(self, model: Any) -> None:
        self.model = model
        keys = ("rope_parameters", "max_position_embeddings")
        self.original = {k: getattr(model.config, k, None) for k in keys}
        self.changed = False

    def supports(self, strategy: Strategy) -> bool:
        return True

    def apply(self, strategy: Strategy, trained_length: int, target_length: int) -> None:
        self.changed |= strategy.rope_parameters is not None
        apply_strategy(self.model, strategy, trained_length, target_length)

    def restore(self) -> None:
        """The model's own rope parameters and length back, its rotary modules rebuilt."""
        if not self.changed:
            return
        for key, value in self.original.items():
            setattr(self.model.config, key, value)
        _rebuild_rotary(self.model, "its own rope parameters back")

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
