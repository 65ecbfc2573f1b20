"""A function's keyword options derived from :class:`~posgeom.pipeline.config.GeometryConfig`:
:func:`takes_geometry_config` (what makes ``analyze(counts, model_dim=64)`` take every field of the
config, with its name, default and type, and receive them as one validated config)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from posgeom.pipeline.config import GeometryConfig

__all__ = ["takes_geometry_config"]

F = TypeVar("F", bound=Callable[..., Any])


def takes_geometry_config(
    *groups: str,
    exclude: tuple[str, ...] = (),
    config: type[GeometryConfig] = GeometryConfig,
) -> Callable[[F], F]:
    """Decorator: the function takes the fields of ``groups`` (all when none is named; less
    ``exclude``) as keyword options (names, defaults and types read from ``config``, shown by
    ``help()`` and ``inspect.signature``) and receives them as one validated ``config=``.

    A ``config=`` the caller passes (when the function declares it) is the base the keywords
    change. The decorated function declares ``config``; its other parameters stay as written.
    """
    chosen = [
        f
        for f in dataclasses.fields(config)
        if (not groups or f.metadata["group"] in groups) and f.name not in exclude
    ]
    spelled = {f.name for f in chosen}

    def decorate(func: F) -> F:
        params = inspect.signature(func).parameters.values()
        own = [p for p in params if p.name != "config"]
        kw_only = inspect.Parameter.KEYWORD_ONLY
        keyword = [
            inspect.Parameter(f.name, kw_only, default=f.default, annotation=f.type) for f in chosen
        ]
        first = next((i for i, p in enumerate(own) if p.kind is kw_only), len(own))
        base = [p for p in params if p.name == "config" and p.default is None]  # a given base
        public = inspect.Signature([*own[:first], *base, *keyword, *own[first:]])

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = public.bind(*args, **kwargs)
            given = {k: bound.arguments.pop(k) for k in spelled if k in bound.arguments}
            start = bound.arguments.pop("config", None)
            if start is not None and not isinstance(start, config):
                raise TypeError(
                    f"{func.__name__}: config must be a {config.__name__} (or None), got "
                    f"{type(start).__name__}; build one with {config.__name__}(...) or pass its "
                    "fields as keywords"
                )
            start = start if start is not None else config()
            return func(*bound.args, **bound.kwargs, config=dataclasses.replace(start, **given))

        wrapper.__signature__ = public  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
