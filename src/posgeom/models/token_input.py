"""Whether a model reads token ids alone: what ``analyze-model``, ``probe`` and ``extend`` feed it.

A model that reads something else (a vision tower's ``pixel_values``, an audio encoder's
``input_features``), that needs more than the ids (a layout model's ``bbox``) or that has no
token embedding of its own (a model of several towers) is refused with one line naming what it
reads and the fix, before any forward (:func:`check_token_input`); a forward that rejects token
ids alone at run time (transformers' own ``ValueError``) is refused the same way
(:func:`token_forward`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from posgeom._errors import PosgeomError

__all__ = [
    "check_token_input",
    "forward_module",
    "hidden_states",
    "token_forward",
    "token_input_problem",
]

#: the inputs posgeom gives the forward
FED = ("input_ids", "attention_mask", "output_hidden_states", "return_dict")
#: the fix every refusal names
FIX = "posgeom feeds it token ids: give a text model (of a multi-tower model, its text model)"


def forward_module(model: Any) -> Any:
    """The module the token ids go through: an encoder-decoder's encoder, else the model."""
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        return model.get_encoder()
    return model


def _required(forward: Any) -> tuple[bool, list[str]]:
    """``(takes input_ids, the inputs it needs beyond :data:`FED`)`` of ``forward``: its
    arguments without a default, or its first argument when it takes no ``input_ids``."""
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins: nothing to read
        return True, []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = [name for name, p in params.items() if p.kind in kinds and name not in FED]
    required = [name for name in named if params[name].default is inspect.Parameter.empty]
    if "input_ids" not in params and not required:
        required = named[:1]
    return "input_ids" in params, required


def token_input_problem(model: Any) -> str | None:
    """Why ``model`` cannot be fed token ids alone (``None``: it can): its forward takes no
    ``input_ids``, needs other inputs too, or it has no token embedding."""
    forward = forward_module(model)
    takes_ids, required = _required(getattr(forward, "forward", forward))
    if not takes_ids:
        return f"its forward reads {', '.join(required) or 'other inputs'}, not input_ids"
    if required:
        return f"its forward also needs {', '.join(required)}"
    get = getattr(model, "get_input_embeddings", None)
    try:
        if callable(get):
            get()
    except NotImplementedError:  # transformers' answer for a model of several towers
        return "it has no token embedding of its own (a model of several towers)"
    return None


def check_token_input(model: Any) -> None:
    """Refuse ``model`` (:class:`PosgeomError`, one line) when it cannot read token ids alone."""
    problem = token_input_problem(model)
    if problem is not None:
        raise PosgeomError(
            f"{type(model).__name__} does not read token ids alone: {problem}; {FIX}"
        )


def token_forward(forward: Callable[..., Any], **inputs: Any) -> Any:
    """``forward(**inputs)``, with transformers' ``ValueError`` for an input it was not given
    (its message names a parameter of the forward outside ``inputs``: images, boxes or features
    beside the ids) as one line naming it; any other error propagates."""
    try:
        return forward(**inputs)
    except ValueError as exc:
        text = str(exc)
        try:
            names = inspect.signature(getattr(forward, "forward", forward)).parameters
        except (TypeError, ValueError):  # pragma: no cover - builtins
            names = {}
        missing = [n for n in names if n not in inputs and n in text]
        if not missing:  # not about an input it was not given: a real error
            raise
        name = type(forward).__name__
        what = text.splitlines()[0][:160]
        raise PosgeomError(f"{name} does not read token ids alone ({what}); {FIX}") from exc


def hidden_states(forward: Any, input_ids: Any, attention_mask: Any) -> tuple[Any, ...]:
    """The ``L+1`` hidden states ``(B, T, d)`` of a batch of token ids through ``forward``
    (:func:`token_forward`): a state with several residual streams per token (DeepSeek-V4's
    hyper-connections, ``(B, T, N, d)``) is averaged over its ``N`` streams (the embedding's
    streams are copies of it); a forward that returns none is refused in one line."""
    output = token_forward(
        forward,
        input_ids=input_ids,
        attention_mask=attention_mask,
        output_hidden_states=True,
        return_dict=True,
    )
    states = getattr(output, "hidden_states", None)
    if states is None:
        raise PosgeomError(
            f"{type(forward).__name__} returned no hidden_states; use a model whose forward "
            "supports output_hidden_states=True"
        )
    return tuple(h.mean(dim=2) if h.ndim == 4 else h for h in states)
