"""Experiments built on posgeom: the paper's reproduction (:mod:`posgeom.experiments.reproduce`)."""

from __future__ import annotations

__all__ = ["reproduce"]


def __getattr__(name: str):
    if name == "reproduce":
        from posgeom.experiments.reproduce import reproduce

        return reproduce
    raise AttributeError(f"module 'posgeom.experiments' has no attribute {name!r}")
