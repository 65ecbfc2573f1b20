"""The options of a count, declared once: :class:`CountOptions`.

Every option that shapes how a corpus is read and counted is one field here, with its default,
the values it allows (checked on construction) and its group:

- ``reader`` (``count_corpus`` only): ``format``, ``text_column``, ``split``, ``limit``
  (records read), ``pad_id``, ``separator_id``, ``token_dtype``, ``text_encoding``,
  ``encoding_errors``, ``text_field`` (:mod:`posgeom.corpus.readers`);
- ``count``: ``max_positions`` (``n``, required), ``vocab_size``, ``include_special``,
  ``special_ids``, ``align``, ``min_length``, ``max_sequences``, ``batch_size``;
- ``bootstrap``: ``bootstrap`` (replicates ``B``), ``bootstrap_seed``, ``bootstrap_stream``,
  ``bootstrap_scheme`` (:mod:`posgeom.corpus.bootstrap`).

What derives from it: the keyword options of ``count_positions`` and ``count_corpus``
(:func:`takes_count_options`), the CLI's counting flags (:mod:`posgeom.cli._count_flags`) and a
sharded job's manifest (:mod:`posgeom.corpus._jobfiles`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, TypeVar

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, check_param, is_integer
from posgeom.corpus._decoding import ERRORS, check_encoding
from posgeom.corpus.bootstrap_weights import SCHEMES, check_replicates

__all__ = [
    "BOOTSTRAP",
    "COUNT",
    "READER",
    "CountOptions",
    "option_fields",
    "takes_count_options",
    "text_decoding",
]

READER, COUNT, BOOTSTRAP = "reader", "count", "bootstrap"
F = TypeVar("F", bound=Callable[..., Any])

_ID = Interval(Integral, 0, None)  # a token id
_TEXT = (str, None)


def _option(default: Any, *allowed: Any, group: str) -> Any:
    return field(default=default, metadata={"allowed": allowed, "group": group})


@dataclass(frozen=True)
class CountOptions:
    """How a corpus is read and counted (module docstring).

    ``special_ids``: the ids removed when ``include_special=False`` (stored sorted; None: the
    tokenizer's). ``vocab_size=None``: the tokenizer's, else the largest id + 1. ``batch_size``
    never changes the counts. ``bootstrap=B`` (``B >= 2``) also counts ``B`` replicates.
    """

    max_positions: int = field(metadata={"allowed": (Interval(Integral, 1, None),), "group": COUNT})
    format: str | None = _option(None, *_TEXT, group=READER)
    text_column: str | None = _option(None, *_TEXT, group=READER)
    split: str | None = _option(None, *_TEXT, group=READER)
    limit: int | None = _option(None, Interval(Integral, 0, None), None, group=READER)
    pad_id: int | None = _option(None, _ID, None, group=READER)
    separator_id: int | None = _option(None, _ID, None, group=READER)
    token_dtype: Any = field(  # a dtype name ("uint16"), a NumPy dtype or type, or None
        default=None, metadata={"allowed": (str, np.dtype, type, None), "group": READER}
    )
    text_encoding: str = _option("utf-8", str, group=READER)  # any Python codec
    encoding_errors: str = _option("strict", Options(set(ERRORS)), group=READER)
    text_field: int = _option(1, Interval(Integral, 1, None), group=READER)
    vocab_size: int | None = _option(None, Interval(Integral, 1, None), None, group=COUNT)
    include_special: bool = _option(True, bool, group=COUNT)
    special_ids: tuple[int, ...] | None = _option(None, group=COUNT)  # ids checked one by one
    align: str = _option("start", Options({"start", "end"}), group=COUNT)
    min_length: int = _option(1, Interval(Integral, 0, None), group=COUNT)
    max_sequences: int | None = _option(None, Interval(Integral, 1, None), None, group=COUNT)
    batch_size: int = _option(1024, Interval(Integral, 1, None), group=COUNT)
    bootstrap: int | None = _option(None, Interval(Integral, None, None), None, group=BOOTSTRAP)
    bootstrap_seed: int = _option(0, Interval(Integral, 0, 2**64 - 1), group=BOOTSTRAP)
    bootstrap_stream: int = _option(0, Interval(Integral, 0, 2**64 - 1), group=BOOTSTRAP)
    bootstrap_scheme: str = _option("half", Options(set(SCHEMES)), group=BOOTSTRAP)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.metadata["allowed"]:
                check_param(f.name, getattr(self, f.name), f.metadata["allowed"])
        if self.special_ids is not None:
            ids = tuple(self.special_ids)
            if not all(is_integer(i) and i >= 0 for i in ids):
                raise PosgeomError(
                    f"special_ids must be token ids (integers >= 0), got {ids!r}; pass them "
                    "as a list of integers"
                )
            object.__setattr__(self, "special_ids", tuple(sorted(int(i) for i in ids)))
        if self.bootstrap is not None:
            check_replicates(self.bootstrap)
        check_encoding(self.text_encoding, self.encoding_errors)
        if self.token_dtype is not None:
            from posgeom.corpus.token_ids import bin_dtype

            bin_dtype(self.token_dtype)

    @staticmethod
    def allowed(name: str) -> tuple[Any, ...]:
        """The constraints of the field ``name`` (the CLI's ``choices=`` read them)."""
        return tuple(CountOptions.__dataclass_fields__[name].metadata["allowed"])

    def decoding(self) -> dict[str, Any]:
        """The text readers' keywords of these options (:func:`text_decoding`)."""
        return text_decoding(self)

    def bootstrap_spec(self) -> dict[str, Any] | None:
        """The bootstrap counter's arguments, or None without replicates."""
        if self.bootstrap is None:
            return None
        return {
            "replicates": self.bootstrap,
            "seed": self.bootstrap_seed,
            "stream": self.bootstrap_stream,
            "scheme": self.bootstrap_scheme,
        }


def text_decoding(fields: Any) -> dict[str, Any]:
    """The text readers' ``encoding``, ``errors``, ``text_field`` from the fields
    ``text_encoding``, ``encoding_errors``, ``text_field`` of ``fields`` (options or CLI flags)."""
    return {
        "encoding": fields.text_encoding,
        "errors": fields.encoding_errors,
        "text_field": fields.text_field,
    }


def option_fields(*groups: str) -> tuple[dataclasses.Field[Any], ...]:
    """The :class:`CountOptions` fields of ``groups`` (all fields when none is named)."""
    return tuple(
        f for f in dataclasses.fields(CountOptions) if not groups or f.metadata["group"] in groups
    )


def takes_count_options(*groups: str) -> Callable[[F], F]:
    """Decorator: the function takes the :class:`CountOptions` fields of ``groups`` as keyword
    options (shown by ``help()`` and ``inspect.signature``) and receives them as one validated
    keyword-only ``options=CountOptions(...)``."""
    names = tuple(f.name for f in option_fields(*groups))

    def decorate(func: F) -> F:
        own = [p for p in inspect.signature(func).parameters.values() if p.name != "options"]
        keyword = [
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default,
                annotation=f.type,
            )
            for f in option_fields(*groups)
        ]
        first = next(
            (i for i, p in enumerate(own) if p.kind is inspect.Parameter.KEYWORD_ONLY), len(own)
        )
        public = inspect.Signature([*own[:first], *keyword, *own[first:]])

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = public.bind(*args, **kwargs)
            given = {k: bound.arguments.pop(k) for k in names if k in bound.arguments}
            return func(*bound.args, **bound.kwargs, options=CountOptions(**given))

        wrapper.__signature__ = public  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
