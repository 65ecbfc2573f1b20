"""Fuzzing the text inputs (issue 18): CSV, TSV and text corpora and a results folder's
summary.json. Whatever the bytes, reading gives strings (one per sequence) or one
PosgeomError, and a report of a folder with a mangled summary is a view, a verdict and a page
(the parts that cannot be read named), never another exception."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from fault_helpers import mutate_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posgeom import count_positions
from posgeom._errors import PosgeomError
from posgeom.corpus import read_texts

_FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_TEXTISH = st.lists(
    st.sampled_from(
        [b"a", b"b c", b",", b"\t", b'"', b"\n", b"\r", b"\r\n", b"\xff", b"\x00", b"text"]
    ),
    max_size=80,
).map(b"".join)


def _read(path):
    try:
        texts = list(read_texts(path))
    except PosgeomError:
        return None
    assert all(isinstance(t, str) for t in texts)
    return texts


@_FUZZ
@given(body=_TEXTISH | st.binary(max_size=400), suffix=st.sampled_from([".csv", ".tsv", ".txt"]))
def test_fuzz_text_corpora(tmp_path, body, suffix):
    path = tmp_path / f"c{suffix}"
    path.write_bytes(
        (b"text,label\n" if suffix == ".csv" else b"text\tlabel\n") + body
        if suffix != ".txt"
        else body
    )
    texts = _read(path)
    if texts is not None and suffix == ".txt":
        assert not any("\n" in t or "\r" in t for t in texts)  # one line, one sequence


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from posgeom.cli.main import main

    base = tmp_path_factory.mktemp("fuzz")
    counts = count_positions(
        np.random.default_rng(0).integers(0, 9, size=(300, 6)), max_positions=6
    )
    assert (
        main(["-q", "geometry", str(counts.save(base / "c.npz")), "-d", "3", "-o", str(base / "g")])
        == 0
    )
    return base / "g"


_VALUES = (
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=5)
)
_VALUES = (
    _VALUES
    | st.lists(_VALUES, max_size=3)
    | st.dictionaries(st.text(max_size=3), _VALUES, max_size=2)
)


@pytest.mark.e2e
@settings(_FUZZ, max_examples=3)  # each example draws a report page (1.7 s under load)
@given(
    path=st.lists(st.integers(0, 50), min_size=1, max_size=4),
    value=_VALUES,
    raw=st.none() | st.binary(max_size=60),
    manifest=st.booleans(),
)
def test_fuzz_summary_json(results, tmp_path, path, value, raw, manifest):
    from posgeom.reports import report
    from posgeom.reports.view import load_folder

    folder = tmp_path / "g"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(results, folder)
    summary = folder / "summary.json"
    if raw is not None:
        summary.write_bytes(raw)
    else:
        doc = mutate_json(json.loads(summary.read_text()), path, value)
        summary.write_text(json.dumps(doc))
    if not manifest:  # no record to compare with: the summary's own checks
        (folder / "posgeom-manifest.json").unlink()
    view = load_folder(folder)
    if manifest:
        assert "summary.json" not in view.present  # changed since written: named, not trusted
    page = report(folder, tmp_path / "r.html", figures=False).read_text()
    assert "<html" in page.lower() and view.kind == "run"
