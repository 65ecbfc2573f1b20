"""The Markdown of an extension result (``table.md``, what ``posgeom extend`` prints): the ranked
table of strategies (:data:`EXTENSION_COLUMNS`), the verdict, the measured losses when the run
measured them, and the corpus's dependence profile (:func:`dependence_lines`). The result
(:class:`~posgeom.extension.result.ExtensionResult`) computes; this writes its words and tables
with the pipeline's one table writer (:func:`posgeom.text.markdown.markdown_table`)."""

from __future__ import annotations

from typing import Any

from posgeom._errors import printable
from posgeom.reports.extend_parts import EXTENSION_COLUMNS, MEASURE_COLUMNS, ranked_columns
from posgeom.text.markdown import markdown_table

__all__ = ["dependence_lines", "measure_lines", "result_markdown"]


def result_markdown(result: Any) -> str:
    """The whole ``table.md`` of an :class:`~posgeom.extension.result.ExtensionResult`."""
    by = (result.recommendation or {}).get("ranked_by")
    lines = [
        f"# Context extension: {result.model.name}, {result.trained_length} -> "
        f"{result.target_length}",
        "",
        f"Ranked by {result.ranking}.",
        "",
        *markdown_table(result.table_rows(), ranked_columns(EXTENSION_COLUMNS, by)),
        "",
        *(f"- {v}" for v in result.verdict()),
    ]
    if result.measurements:
        lines += ["", "## Measured loss", "", *measure_lines(result.measurements)]
    lines += ["", "## Dependence profile of the corpus", "", *dependence_lines(result)]
    # a strategy's or model's name with a line break or ESC stays on its line (escaped)
    return "\n".join(printable(line) for line in lines) + "\n"


def dependence_lines(result: Any) -> list[str]:
    """The dependence profile: chord from independence per lag, its noise level, signal."""
    cols = (
        ("lag", "lag k", "d"),
        ("dependence", "||sqrt P_k - sqrt(r x c)|| (plug-in)", ".4f"),
        ("noise_level", "noise level", ".4f"),
        ("dependence_corrected", "corrected", ".4f"),
        ("signal", "above noise", "s"),
    )
    dep = result.lag_geometry.dependence
    head = (
        f"Token classes {result.lag_geometry.counts.classes.kind}; noise level: the mean under "
        f"independence ({dep.null_method} null, {dep.n_null} tables); signal: above its mean + "
        "1.645 sd."
    )
    return [head, "", *markdown_table(dep.rows(), cols)]


def measure_lines(measurements: dict[str, Any]) -> list[str]:
    """The measured losses (``--measure``): one row per strategy, after the layer types each
    strategy replaced when the model has one rotary set-up per layer type."""
    table = markdown_table(measurements.get("strategies", []), MEASURE_COLUMNS)
    scaled = measurements.get("scaled")
    if not scaled:
        return table
    types = ", ".join(scaled["layer_types"])
    return [
        f"Strategies replace the rotary set-up of layer types {types} (blocks "
        f"{scaled['layers']}); the other layer types keep their own.",
        "",
        *table,
    ]
