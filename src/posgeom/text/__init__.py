"""The text of every result kind, below all of them: the score-row schema and its columns
(:mod:`.schema`), Markdown tables (:mod:`.markdown`), what a verdict reads and its plain words
(:mod:`.verdict_inputs`, :mod:`.verdict`). The geometry pipeline, ``models/``, ``extension/`` and
``probes/`` print their tables through these modules without importing one another; the HTML
reports (``reports/``) sit above the results and read the same text.

What a geometry result reads from here, in one place: :func:`render_report` (its summary's
verdict and its text, rendered once, as one :class:`ReportInput`), :func:`conventions` (the
summary's conventions block) and :data:`TRUSTED_ARRAY` (the noise mask's name in
``arrays.npz``)."""

from posgeom.text.report_input import ReportInput, render_report
from posgeom.text.schema import conventions
from posgeom.text.verdict_inputs import TRUSTED_ARRAY

__all__ = ["TRUSTED_ARRAY", "ReportInput", "conventions", "render_report"]
