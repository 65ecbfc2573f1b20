"""Reports: result objects compute, this package renders and saves.

* :func:`report` — one self-contained HTML file (figures inline, no network needed) of a result
  object or of a results folder, plus every figure as PNG and SVG in ``<stem>_figures/`` beside it;
* :func:`repr_html` — the same page as a fragment, for Jupyter (``_repr_html_`` of the results);
* :func:`results_folder` — the one atomic contract by which ``run``, ``compare`` and
  ``analyze-model`` write a results folder (complete or absent), optionally with its report.

Layout: ``view`` (result objects and folders) <- ``figures`` (matplotlib, extra ``plot``) <-
``html`` <- this module; the text they show is :mod:`posgeom.text`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import validate_params
from posgeom.io.jsonfiles import json_text
from posgeom.io.renderers import register

__all__ = ["REPORT_NAME", "report", "repr_html", "results_folder", "writable"]

REPORT_NAME = "report.html"
FIGURES = "figures"  # the kind of a report's figures folder (its manifest's content)


@contextlib.contextmanager
def writable(path: str | os.PathLike) -> Iterator[None]:
    """Turn an OS refusal to write ``path`` into one :class:`PosgeomError` line."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PosgeomError(
            f"cannot write {path}: {reason}; choose a writable location with -o"
        ) from exc


@validate_params(
    {
        "path": [str, os.PathLike, None],
        "figures": [bool],
        "title": [str, None],
        "overwrite": [bool],
    }
)
def report(
    result: Any,
    path: str | os.PathLike | None = None,
    *,
    figures: bool = True,
    title: str | None = None,
    overwrite: bool = True,
) -> Path:
    """Write the HTML report of ``result`` to ``path`` and return the path.

    ``result``: a results folder (``run``, ``geometry``, ``demo -o``, ``compare``,
    ``analyze-model``, ``reproduce``) or a result object (:func:`posgeom.analyze`,
    :func:`posgeom.models.analysis.analyze_model`). ``path`` defaults to
    ``<folder>/report.html`` for a folder. With ``figures`` every figure is also written as PNG
    and SVG to ``<path stem>_figures/``. Writes are atomic; an unwritable ``path`` raises
    :class:`PosgeomError`. ``title`` replaces the page title.

    The output rule of :mod:`posgeom.io.outputs`, checked before the page is made: an existing
    ``path`` (or figures folder) is replaced only with ``overwrite`` and only when it is a posgeom
    report (its stamp, the page's last line, matches its content) or a posgeom figures folder
    (not a results folder of another kind) and no file of the folder reported on; a symlinked
    ``path`` is written at its target. The page and its figures folder are committed together
    (a full disk or a signal leaves both or neither), after the checks are repeated.
    """
    from posgeom.io._atomic import atomic_write_text
    from posgeom.io._claims import stamp
    from posgeom.io.outputs import check_output, results_directory
    from posgeom.reports.html import figure_groups, render_html
    from posgeom.reports.view import LABELS, view_of

    view = view_of(result)
    if title:
        view = dataclasses.replace(view, title=f"{LABELS.get(view.kind, view.kind)}: {title}")
    if path is None:
        if not isinstance(result, (str, os.PathLike)):
            raise PosgeomError(
                "pass the path of the report file, e.g. report(result, 'report.html')"
            )
        path = Path(result) / REPORT_NAME
    inputs = _report_inputs(result)
    path = check_output(path, kinds=("report",), overwrite=overwrite, inputs=inputs)
    _check_not_in_work_folder(path)
    figures_dir = path.with_name(f"{path.stem}_figures")
    if figures:
        check_output(figures_dir, kinds=(FIGURES,), overwrite=overwrite, inputs=inputs, folder=True)
    try:
        groups = figure_groups(view)
        page = render_html(view, groups)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        if isinstance(exc, PosgeomError) or not isinstance(result, (str, os.PathLike)):
            raise
        view = _without_damaged(result, view, exc)
        groups = figure_groups(view)
        page = render_html(view, groups)
    page = stamp(page, "report")
    with writable(path):
        if figures:  # the figures folder and the page commit together: both or neither
            with results_directory(
                figures_dir,
                overwrite=overwrite,
                content=FIGURES,
                companions={path: page.encode("utf-8")},
            ) as tmp:
                for _, figs in groups:
                    for fig in figs:
                        (Path(tmp) / f"{fig.name}.svg").write_bytes(fig.svg)
                        (Path(tmp) / f"{fig.name}.png").write_bytes(fig.png())
        else:
            atomic_write_text(path, page)
        _add_to_manifest(
            path.parent,
            [path, *sorted(figures_dir.glob("*"))] if figures else [path],
        )
    return path


def _without_damaged(folder: Any, view: Any, exc: BaseException) -> Any:
    """The view of ``folder`` without the part that made the page fail: its arrays, then its
    summary (each named in the report's list of what is missing)."""
    from posgeom.reports.html import figure_groups, render_html
    from posgeom.reports.view import load_folder

    why = f"could not be drawn ({type(exc).__name__}: {str(exc)[:100]})"
    plain = dataclasses.replace(view, arrays={}, missing=(*view.missing, f"arrays.npz {why}"))
    try:
        render_html(plain, figure_groups(plain))
        return plain
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        main = "comparison.json" if view.kind == "compare" else "summary.json"
        return load_folder(folder, drop={main: f"{main} {why}"})


def _report_inputs(result: Any) -> list[Path]:
    """The files a report of a results folder reads (every file in it but earlier reports)."""
    if not isinstance(result, (str, os.PathLike)) or not Path(result).is_dir():
        return []
    folder = Path(result)
    files = [*folder.iterdir(), *(folder / "reproduction").glob("*.json")]
    return [p for p in files if p.is_file() and p.suffix != ".html"]


def _check_not_in_work_folder(path: Path) -> None:
    """Refuse a page inside a folder posgeom works in and resumes (a counting job, a training
    run, ...): the page would be a file its resume does not know."""
    from posgeom.io._results import _manifest
    from posgeom.io.workfolders import WORK_KINDS

    for folder in (path.parent, *path.parent.parents):
        try:  # the page's own folder's manifest is checked now, before the page is made
            kind = (_manifest(folder) or {}).get("content") if folder.is_dir() else None
        except PosgeomError:
            if folder == path.parent:
                raise
            continue
        if kind in WORK_KINDS:
            raise PosgeomError(
                f"{path} lies inside the posgeom {kind} folder {folder}, whose resume would find "
                "a file it did not write; write the report elsewhere (-o)"
            )


def _add_to_manifest(folder: Path, files: list[Path]) -> None:
    """When ``folder`` is a posgeom results folder (a manifest posgeom wrote, of a results
    folder, not of a work folder), list the report's files in it, so that a later
    ``--overwrite`` of the folder replaces them as its own. Any other JSON named like a manifest
    (a user's own) is left as it is."""
    from posgeom.io._atomic import atomic_write_text
    from posgeom.io._results import RESULTS_MANIFEST, _manifest, sha256_file
    from posgeom.io.workfolders import WORK_KINDS

    doc = _manifest(folder)
    if doc is None or doc.get("content") in WORK_KINDS:
        return
    for f in files:
        doc["files"][f.relative_to(folder).as_posix()] = {
            "size": f.stat().st_size,
            "sha256": sha256_file(f),
        }
    atomic_write_text(folder / RESULTS_MANIFEST, json_text(doc, indent=1, sort_keys=True) + "\n")


def repr_html(result: Any) -> str:
    """The report of ``result`` as an HTML fragment (what Jupyter shows)."""
    from posgeom.reports.html import render_html
    from posgeom.reports.view import view_of

    return render_html(view_of(result), fragment=True)


@contextlib.contextmanager
def results_folder(
    directory: str | os.PathLike,
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    content: str = "results",
    with_report: bool = False,
    title: str | None = None,
) -> Iterator[Path]:
    """The one way a results folder is written: :func:`posgeom.io.outputs.results_directory`
    (checked before the work, built in a temporary sibling, renamed into place: complete or
    absent), plus, with ``with_report``, ``report.html`` and its figures made from the files
    written under the yielded folder, before the rename::

        with results_folder(out, overwrite=args.overwrite, with_report=True) as tmp:
            result = expensive_work()
            result.write(tmp)
    """
    from posgeom.io.outputs import results_directory

    with results_directory(directory, overwrite=overwrite, inputs=inputs, content=content) as tmp:
        yield Path(tmp)
        if with_report:
            report(Path(tmp), Path(tmp) / REPORT_NAME, title=title or Path(directory).name)


# the results' renderers (posgeom.io.renderers): the results compute, the reports draw, and the
# arrow points from here to them (the package root names this module as their provider, so a
# result draws without the user importing it)
register("html", repr_html)
register("report", lambda folder, title: report(folder, folder / REPORT_NAME, title=title))
