"""Reproduce the paper's experiments (Cirrincione, arXiv 2604.05217) into ``REPRODUCTION.md``.

``settings`` (corpora, the paper's numbers, the choice of n), ``studies`` (principal angles, the
SST-2 settings sweep), ``run`` (:func:`reproduce`), ``plots`` and ``markdown`` (the page). See
:mod:`posgeom.reproduction.run` for what a run does.
"""

from __future__ import annotations

from posgeom.reproduction.run import reproduce
from posgeom.reproduction.settings import LENGTH_QUANTILE, PAPER, choose_n
from posgeom.reproduction.studies import alibi_slopes_for, principal_angles

__all__ = [
    "LENGTH_QUANTILE",
    "PAPER",
    "alibi_slopes_for",
    "choose_n",
    "principal_angles",
    "reproduce",
]
