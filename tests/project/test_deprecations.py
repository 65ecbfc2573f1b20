"""0.2.0 removed every deprecated name of 0.1 (CHANGELOG.md lists each with its replacement):
the old modules do not import, the old names are not attributes, the old CLI spellings are
refused; the suite still refuses posgeom's own deprecations (pyproject's ``filterwarnings``), so
a later deprecation cannot slip back into the tests."""

from __future__ import annotations

import importlib
import warnings

import pytest

from posgeom._errors import PosgeomDeprecationWarning

ENTRY = "error::posgeom._errors.PosgeomDeprecationWarning"

#: removed in 0.2.0 -> what replaces it (the CHANGELOG's list)
REMOVED_MODULES = {
    "posgeom.analysis": "posgeom.pipeline",
    "posgeom.analysis.pipeline": "posgeom.pipeline",
    "posgeom.analysis.compare": "posgeom.pipeline",
    "posgeom.pipeline.deprecated": "posgeom.pipeline",
    "posgeom.reports.schema": "posgeom.text.schema",
    "posgeom.reports.markdown": "posgeom.text.markdown",
    "posgeom.reports.verdict": "posgeom.text.verdict",
    "posgeom.reports.verdict_inputs": "posgeom.text.verdict_inputs",
    "posgeom.reports.lengths": "posgeom.corpus.lengths",
    "posgeom.experiments.training": "posgeom.training",
    "posgeom.experiments.reproduce": "posgeom.reproduction",
}
REMOVED_NAMES = {
    "analyze_counts": "analyze",
    "compare_encodings": "analyze",
    "PipelineResult": "GeometryResult",
    "ComparisonResult": "GeometryResult",
}


def test_the_filter_is_declared_and_resolves(pytestconfig):
    from _pytest.config import parse_warning_filter

    assert ENTRY in pytestconfig.getini("filterwarnings")
    action, message, category, module, _ = parse_warning_filter(ENTRY, escape=False)
    assert (action, message, category, module) == ("error", "", PosgeomDeprecationWarning, "")
    assert issubclass(PosgeomDeprecationWarning, DeprecationWarning)  # user filters still apply


def test_a_posgeom_deprecation_fails_a_test_and_others_do_not(pytestconfig):
    if pytestconfig.known_args_namespace.pythonwarnings:
        pytest.skip("-W on the command line overrides pyproject's filters")
    with pytest.raises(PosgeomDeprecationWarning):
        warnings.warn("a posgeom deprecation", PosgeomDeprecationWarning, stacklevel=1)
    with warnings.catch_warnings(record=True) as seen:  # the filters as they are, recorded
        warnings.warn("another library's deprecation", DeprecationWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another library's deprecation"]


@pytest.mark.parametrize("old", sorted(REMOVED_MODULES))
def test_a_removed_module_does_not_import_and_its_replacement_does(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    importlib.import_module(REMOVED_MODULES[old])


@pytest.mark.parametrize("old", sorted(REMOVED_NAMES))
def test_a_removed_name_is_gone_and_its_replacement_is_there(old):
    import posgeom

    assert not hasattr(posgeom, old) and old not in posgeom.__all__
    assert getattr(posgeom, REMOVED_NAMES[old]) is not None


def test_removed_result_spellings_are_gone():
    from posgeom.corpus.counting import count_positions
    from posgeom.encodings import sinusoidal
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.pipeline.rows import MDS_ROWS
    from posgeom.synthetic import synthetic_corpus

    counts = count_positions(synthetic_corpus(200, length=8, seed=3), max_positions=8)
    result = analyze(counts, GeometryConfig(model_dim=4, families=MDS_ROWS, max_rank=2, seed=0))
    for name in ("pipeline", "markdown_table", "to_markdown"):
        assert not hasattr(result, name), name
    d = sinusoidal(4, d=4).distances
    assert type(d) is __import__("numpy").ndarray and not callable(d)


@pytest.mark.parametrize(
    ("argv", "old"),
    [
        (["analyze-model", "m", "c", "-n", "8", "-o", "out"], "--target"),
        (["train", "-o", "out"], "--target-estimator"),
    ],
)
def test_removed_flag_spellings_are_refused(argv, old, capsys):
    from posgeom.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main([*argv, old, "plugin"])
    assert exit_info.value.code == 2
    assert f"unrecognized arguments: {old}" in capsys.readouterr().err
