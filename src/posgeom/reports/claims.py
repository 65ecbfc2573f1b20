"""The claim tables of a REPRODUCTION.md (what ``reproduction.html`` shows beside the
comparisons): :func:`claim_tables` reads them back from the Markdown."""

from __future__ import annotations

import itertools
import re

__all__ = ["CLAIM_SECTIONS", "claim_tables"]

# the sections of REPRODUCTION.md whose tables reproduction.html shows too (the claims)
CLAIM_SECTIONS = (
    "The paper's claims, ours beside them",
    "Which conclusions survive the estimator?",
)


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()[1:-1]
    return tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner))


def claim_tables(
    markdown: str,
) -> tuple[tuple[str, tuple[str, ...], tuple[tuple[str, ...], ...]], ...]:
    """``(heading, header, rows)`` of the first Markdown table under each of
    :data:`CLAIM_SECTIONS` in a REPRODUCTION.md (cells as written, ``\\|`` unescaped)."""
    out, heading, lines = [], None, markdown.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("## "):
            heading = line[3:].strip()
        elif heading in CLAIM_SECTIONS and line.startswith("|") and k + 1 < len(lines):
            if not set(lines[k + 1].replace("|", "").strip()) <= set("-: "):
                continue
            rows = itertools.takewhile(lambda row: row.startswith("|"), lines[k + 2 :])
            out.append((heading, _cells(line), tuple(map(_cells, rows))))
            heading = None  # one table per section
    return tuple(out)
