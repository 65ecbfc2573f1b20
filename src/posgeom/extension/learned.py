"""Extending a learned absolute table: its home is the learned family's extension side,
:mod:`posgeom.encodings.learned_extension` (``clamp``, ``interpolate``, ``gower``,
``gower-table``); re-exported here, where ``posgeom.extension`` users find it."""

from __future__ import annotations

from posgeom.encodings.learned_extension import LEARNED_METHODS, extend_table, table_lag_distances

__all__ = ["LEARNED_METHODS", "extend_table", "table_lag_distances"]
