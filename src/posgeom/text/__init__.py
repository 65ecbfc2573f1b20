"""The text of every result kind, below all of them: the score-row schema and its columns
(:mod:`.schema`), Markdown tables (:mod:`.markdown`), what a verdict reads and its plain words
(:mod:`.verdict_inputs`, :mod:`.verdict`). The geometry pipeline, ``models/``, ``extension/`` and
``probes/`` print their tables through these modules without importing one another; the HTML
reports (``reports/``) sit above the results and read the same text."""

from posgeom.text.report_input import ReportInput, render_report
from posgeom.text.schema import conventions
from posgeom.text.verdict_inputs import TRUSTED_ARRAY

__all__ = ["TRUSTED_ARRAY", "ReportInput", "conventions", "render_report"]
