"""Context-extension strategies: what each family can do past its trained length ``L0``.

A :class:`Strategy` is a name, its family, its kind and, for RoPE, the ``rope_parameters`` to
paste into ``config.json`` (:mod:`posgeom.encodings._extension`, where every family finds it).
Each family lists its own strategies (its ``extension``'s
:meth:`~posgeom.encodings._extension.Extension.strategies`, in the family's file):

- RoPE (:mod:`posgeom.encodings.rope_strategies`): ``none``, ``linear``, static ``ntk`` bases,
  ``dynamic``, ``yarn``, ``llama3``, ``longrope``; ``fitted`` (per-plane factors fitted to the
  corpus's lag geometry, :mod:`posgeom.extension.fit`) is added by
  :func:`posgeom.extension.score_strategies`, which has the corpus;
- learned tables (:mod:`posgeom.encodings.learned_extension`): ``clamp``, ``interpolate``,
  ``gower``, ``gower-table``;
- every other family: ``none`` (sinusoidal: the formula evaluated at every position; ALiBi, T5,
  NoPE: defined at every distance), unless its file says more.

The RoPE helpers (:func:`rope_strategy`, :func:`longrope_strategy`, :func:`men_theta_bound`) are
re-exported here for the fit and the recommendation.
"""

from __future__ import annotations

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of
from posgeom.encodings._extension import Strategy
from posgeom.encodings.rope_strategies import (
    LLAMA3_BANDS,
    LONGROPE_POWERS,
    NTK_MULTIPLES,
    YARN_BETAS,
    longrope_strategy,
    men_theta_bound,
    rope_strategy,
)
from posgeom.extension.model import ExtensionModel

__all__ = [
    "LLAMA3_BANDS",
    "LONGROPE_POWERS",
    "NTK_MULTIPLES",
    "YARN_BETAS",
    "Strategy",
    "enumerate_strategies",
    "longrope_strategy",
    "men_theta_bound",
    "rope_strategy",
]


def enumerate_strategies(
    model: ExtensionModel, trained_length: int, target_length: int
) -> list[Strategy]:
    """Every strategy the model's family lists at ``(L0, L)`` (``fitted`` excluded: it needs the
    corpus, :func:`posgeom.extension.score_strategies` adds it)."""
    l0, target = int(trained_length), int(target_length)
    if not 1 < l0 < target:
        raise PosgeomError(
            f"the target length ({target}) must exceed the trained length ({l0}); pass "
            "--target-length above --trained-length"
        )
    return extension_of(model.family).strategies(model.params, l0, target)
