"""reports.view reads a folder's kind from its summary (one schema for geometry, run, demo and
compare), and still reads a comparison folder written before that schema (rows in "table",
the geometry nested): the same rows, the same verdict."""

from __future__ import annotations

import json
import shutil

import pytest

from posgeom.corpus.counting import count_positions
from posgeom.pipeline import analyze
from posgeom.reports.view import load_folder, view_of
from posgeom.synthetic import synthetic_corpus

GEOMETRY_KEYS = (
    "conventions",
    "corpus",
    "distributions",
    "samples_per_position",
    "mds",
    "estimator",
    "noise_floor",
    "refinement",
)


@pytest.fixture(scope="module")
def counts():
    return count_positions(synthetic_corpus(400, length=10, seed=2), max_positions=10)


@pytest.mark.parametrize(("kind", "view_kind"), [("geometry", "run"), ("compare", "compare")])
def test_the_folder_kind_is_the_summary_kind(counts, tmp_path, kind, view_kind):
    """A summary.json or comparison.json names its command; the view follows it, whatever
    the files are called (a geometry folder renamed comparison.json is still a geometry)."""
    result = analyze(counts, model_dim=16, max_rank=3, kind=kind)
    folder = result.save(tmp_path / kind)
    view = load_folder(folder)
    assert view.kind == view_kind == view_of(result).kind and result.files[0] in view.present
    assert [r["encoding"] for r in view.rows] == [r["encoding"] for r in result.rows]
    assert view.verdict.as_dict() == result.summary()["verdict"]["inputs"]
    plain = tmp_path / f"{kind}-plain"  # no manifest, the other file name: the kind decides
    plain.mkdir()
    other = "summary.json" if kind == "compare" else "comparison.json"
    shutil.copy(folder / result.files[0], plain / other)
    assert load_folder(plain).kind == view_kind


def test_a_comparison_folder_of_the_old_schema_still_reads(counts, tmp_path):
    """The layout compare wrote before (kind posgeom_comparison, rows in "table", the geometry
    nested under "geometry"), written by hand from a result: the same rows and verdict."""
    result = analyze(counts, model_dim=16, max_rank=3, kind="compare")
    new = result.summary()
    old = {
        "posgeom_version": new["posgeom_version"],
        "kind": "posgeom_comparison",
        "options": new["options"],
        "geometry": {k: new[k] for k in (*GEOMETRY_KEYS, "options") if k in new},
        "table": [{"encoding": k, **v} for k, v in new["scores"].items()],
        "heads": new["heads"],
        "rank_curve": new["rank_curve"],
        "stationarity": new["stationarity"],
    }
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "comparison.json").write_text(json.dumps(old))
    view = load_folder(folder)
    assert view.kind == "compare"
    assert view.rows == old["table"] and view.geometry["mds"] == new["mds"]
    assert view.verdict.rows == view_of(result).verdict.rows  # recomputed from the old layout
    assert view.verdict.estimator == new["estimator"]["estimator"]
