"""The test suite refuses posgeom's own deprecated names (pyproject's ``filterwarnings``): a test
that calls one outside ``pytest.warns`` fails, so no test slips back onto them; other libraries'
DeprecationWarnings are left alone."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from posgeom._errors import PosgeomDeprecationWarning

ENTRY = "error::posgeom._errors.PosgeomDeprecationWarning"


def test_the_filter_is_declared_and_resolves(pytestconfig):
    from _pytest.config import parse_warning_filter

    assert ENTRY in pytestconfig.getini("filterwarnings")
    action, message, category, module, _ = parse_warning_filter(ENTRY, escape=False)
    assert (action, message, category, module) == ("error", "", PosgeomDeprecationWarning, "")
    assert issubclass(PosgeomDeprecationWarning, DeprecationWarning)  # user filters still apply


def test_posgeom_deprecations_fail_a_test_and_others_do_not(pytestconfig):
    if pytestconfig.known_args_namespace.pythonwarnings:
        pytest.skip("-W on the command line overrides pyproject's filters")
    with pytest.raises(PosgeomDeprecationWarning, match="attribute now"):
        from posgeom.encodings import sinusoidal

        sinusoidal(4, d=4).distances()  # a deprecated spelling, outside pytest.warns
    with warnings.catch_warnings(record=True) as seen:  # the filters as they are, recorded
        warnings.warn("another library's deprecation", DeprecationWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another library's deprecation"]


#: the deprecated module names (one release) -> the module named in their warning as the new one
MOVED_MODULES = {
    "posgeom.analysis.pipeline": "posgeom.pipeline",
    "posgeom.analysis.compare": "posgeom.pipeline",
    "posgeom.analysis.pipeline_result": "posgeom.pipeline.result",
    "posgeom.analysis.compare_result": "posgeom.pipeline.result",
    "posgeom.analysis.pipeline_scale": "posgeom.pipeline.scale",
    "posgeom.analysis.rows": "posgeom.pipeline.rows",
    "posgeom.analysis.intervals": "posgeom.pipeline.intervals",
    "posgeom.analysis.stationarity": "posgeom.pipeline.stationarity",
    "posgeom.reports.schema": "posgeom.pipeline.schema",
    "posgeom.reports.markdown": "posgeom.pipeline.markdown",
    "posgeom.reports.verdict": "posgeom.pipeline.verdict",
    "posgeom.reports.verdict_inputs": "posgeom.pipeline.verdict_inputs",
    "posgeom.reports.lengths": "posgeom.pipeline.lengths",
}


def _module_files(package: str) -> set[str]:
    spec = importlib.util.find_spec(package)
    return {p.stem for p in Path(spec.origin).parent.glob("*.py")} - {"__init__"}


def test_every_module_of_the_deprecated_package_is_listed():
    """A module added to posgeom/analysis/ is an old name too: the list above must hold it."""
    listed = {name.rpartition(".")[2] for name in MOVED_MODULES if ".analysis." in name}
    assert listed == _module_files("posgeom.analysis")


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_a_moved_module_warns_once_at_the_importing_line(old, monkeypatch):
    new = MOVED_MODULES[old]
    monkeypatch.delitem(sys.modules, old, raising=False)  # as in a fresh process
    with pytest.warns(PosgeomDeprecationWarning) as seen:
        line = inspect.currentframe().f_lineno + 1
        __import__(old)
    assert len(seen) == 1, [str(w.message) for w in seen]
    (w,) = seen
    message = str(w.message)
    assert message.startswith(f"{old} is deprecated") and f"import {new} " in message
    assert "\n" not in message
    assert (w.filename, w.lineno) == (__file__, line)  # the caller's line, not the alias module
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        module = importlib.import_module(old)  # cached: the module's body does not run again
    assert again == []
    target = importlib.import_module(MOVED_MODULES[old])
    if module.__name__ != old:  # a stage that moved: the alias *is* the new module
        assert module is target and sys.modules[old] is target


def _fresh(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(PosgeomDeprecationWarning, match=f"{name} is deprecated"):
        return importlib.import_module(name)


def test_the_old_modules_give_the_new_objects(monkeypatch):
    from posgeom.pipeline import GeometryResult, deprecated, markdown, rows, scale, stationarity

    old = _fresh("posgeom.analysis.pipeline", monkeypatch)
    assert old.analyze_counts is deprecated.analyze_counts and old.PipelineResult is GeometryResult
    assert old.score_encoding is scale.score_encoding and old.score_table is markdown.score_table
    assert "SCORE_COLUMNS" not in vars(old)  # one release: it kept no dead constant
    old = _fresh("posgeom.analysis.compare", monkeypatch)
    assert old.compare_encodings is deprecated.compare_encodings
    assert old.ComparisonResult is GeometryResult and old.with_baselines is rows.with_baselines
    assert old.stationarity is stationarity.stationarity
    old = _fresh("posgeom.analysis.pipeline_result", monkeypatch)
    assert old.PipelineResult is GeometryResult and old.sampled_note is markdown.sampled_note
    assert _fresh("posgeom.analysis.compare_result", monkeypatch).ComparisonResult is GeometryResult


@pytest.mark.parametrize("name", ["PipelineResult", "ComparisonResult"])
def test_an_old_result_name_warns_once_at_the_callers_line(name, monkeypatch):
    import posgeom
    from posgeom.pipeline import GeometryResult

    monkeypatch.delitem(vars(posgeom), name, raising=False)  # not yet looked up
    with pytest.warns(PosgeomDeprecationWarning) as seen:
        line = inspect.currentframe().f_lineno + 1
        value = getattr(posgeom, name)
    (w,) = seen
    assert str(w.message).startswith(f"posgeom.{name} is deprecated") and "GeometryResult" in str(
        w.message
    )
    assert (w.filename, w.lineno) == (__file__, line) and value is GeometryResult
    monkeypatch.delitem(vars(posgeom), name)
    with pytest.warns(PosgeomDeprecationWarning) as seen:  # `from posgeom import X`: one warning
        exec(f"from posgeom import {name}", {})
    assert len(seen) == 1


def test_result_pipeline_warns_at_the_callers_line():
    from posgeom.corpus.counting import count_positions
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.pipeline.rows import MDS_ROWS
    from posgeom.synthetic import synthetic_corpus

    counts = count_positions(synthetic_corpus(200, length=8, seed=3), max_positions=8)
    result = analyze(counts, GeometryConfig(model_dim=4, families=MDS_ROWS, max_rank=2, seed=0))
    with pytest.warns(PosgeomDeprecationWarning) as seen:
        line = inspect.currentframe().f_lineno + 1
        same = result.pipeline
    (w,) = seen
    assert "result.pipeline is the result itself now" in str(w.message)
    assert (w.filename, w.lineno) == (__file__, line) and same is result
