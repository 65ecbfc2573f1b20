"""Deprecated package (one release): the analysis of a corpus is :mod:`posgeom.pipeline` now
(``posgeom.analyze``, ``GeometryConfig``, ``GeometryResult``).

Each module here is an old name: importing one warns (a
:class:`~posgeom._errors.PosgeomDeprecationWarning` naming its new module, attributed to the
importing line) and gives the new names: :mod:`.pipeline` and :mod:`.compare` (the deprecated
``analyze_counts`` and ``compare_encodings``, :mod:`posgeom.pipeline.deprecated`),
:mod:`.pipeline_result` and :mod:`.compare_result` (:mod:`posgeom.pipeline.result`), and the
stages that moved: :mod:`.pipeline_scale`, :mod:`.rows`, :mod:`.intervals`, :mod:`.stationarity`
(each *is* its new module in ``sys.modules``).

The warning is in each module's body, so it comes once per process, at the module's first
import (:func:`posgeom._errors.warn_moved_module` says why that is the only place that sees
``import posgeom.analysis.X``). This package itself holds nothing and stays silent, so that one
import warns once, not twice.
"""
