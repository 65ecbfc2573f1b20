"""A GeometryResult draws itself (Jupyter's ``_repr_html_``, ``save(report=True)``) however it
was reached and without the user importing ``posgeom.reports``: the package root names the
reports as the renderers' provider (``posgeom.io.renderers``), loaded when first drawn.
Each case runs in a fresh interpreter, where nothing has loaded the reports before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from posgeom._errors import PosgeomError
from posgeom.io import renderers

RUN = """
import json, sys
from pathlib import Path
{entry}
from posgeom.corpus.counting import count_positions
from posgeom.synthetic import synthetic_corpus

counts = count_positions(synthetic_corpus(100, length=6, seed=0), max_positions=6)
config = GeometryConfig(
    model_dim=4, noise=None, intervals=False, max_rank=2, families=("mds", "sinusoidal")
)
result = analyze(counts, config)
before = "posgeom.reports" in sys.modules
out = {{"before": before, "rows": sorted(result.scores)}}
if {save}:
    result.save(Path(sys.argv[1]) / "saved", report=True)
else:
    out["html"] = result._repr_html_()
out["after"] = "posgeom.reports" in sys.modules
print(json.dumps(out))
"""
ENTRIES = {
    "root": "from posgeom import GeometryConfig, analyze",
    "pipeline": "from posgeom.pipeline.job import analyze\n"
    "from posgeom.pipeline.config import GeometryConfig",
}


def _fresh(tmp_path, entry: str, save: bool) -> dict:
    code = RUN.format(entry=ENTRIES[entry], save=save)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_result_displays_in_a_fresh_interpreter(tmp_path, entry):
    got = _fresh(tmp_path, entry, save=False)
    assert not got["before"] and got["after"]  # light until drawn, then the reports draw it
    html = got["html"]
    assert html.startswith('<div class="posgeom-report">') and "<html" not in html
    assert got["rows"] and all(f"<td>{row}</td>" in html for row in got["rows"])


def test_save_report_in_a_fresh_interpreter(tmp_path):
    got = _fresh(tmp_path, "pipeline", save=True)
    assert not got["before"] and got["after"]
    page = (tmp_path / "saved" / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype")
    assert all(f"<td>{row}</td>" in page for row in got["rows"])


def test_the_providers_are_imported_only_when_a_renderer_is_missing(monkeypatch, tmp_path):
    """A registered renderer is used as it is (the provider is not imported); a missing one
    imports the providers (here one that does not exist: the import is seen failing); with no
    provider there is none, and ``save(report=True)`` refuses in one line before writing."""
    from posgeom.corpus.counting import count_positions
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.synthetic import synthetic_corpus

    monkeypatch.setattr(renderers, "RENDERERS", {})
    monkeypatch.setattr(renderers, "_PROVIDERS", [])
    renderers.provide("no_such_renderers")
    renderers.provide("no_such_renderers")
    assert renderers._PROVIDERS == ["no_such_renderers"]  # named once

    def draw(result):
        return "<div>drawn</div>"

    renderers.register("html", draw)
    assert renderers.renderer("html") is draw  # registered: no import
    with pytest.raises(ModuleNotFoundError, match="no_such_renderers"):
        renderers.renderer("report")  # missing: the providers are imported
    monkeypatch.setattr(renderers, "_PROVIDERS", [])
    assert renderers.renderer("report") is None
    counts = count_positions(synthetic_corpus(60, length=5, seed=1), max_positions=5)
    result = analyze(counts, GeometryConfig(model_dim=4, noise=None, families=("mds",)))
    assert result._repr_html_() == "<div>drawn</div>"
    with pytest.raises(PosgeomError, match="no report renderer is registered"):
        result.save(tmp_path / "out", report=True)
    assert not (tmp_path / "out").exists()
