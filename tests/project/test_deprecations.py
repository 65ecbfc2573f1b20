"""The test suite refuses posgeom's own deprecated names (pyproject's ``filterwarnings``): a test
that calls one outside ``pytest.warns`` fails, so no test slips back onto them; other libraries'
DeprecationWarnings are left alone."""

from __future__ import annotations

import warnings

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
