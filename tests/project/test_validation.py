"""Declarative parameter constraints and the package's one integer rule."""

from __future__ import annotations

import ast
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pytest

from posgeom import PosgeomError
from posgeom._validation import (
    Interval,
    Options,
    check_int,
    check_param,
    check_real,
    is_integer,
    validate_params,
)


@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3)])
def test_integers_are_python_or_numpy_integers(value):
    assert is_integer(value)
    assert check_int(value, "k", 1) == 3 and type(check_int(value, "k", 1)) is int


@pytest.mark.parametrize("value", [3.0, np.float64(3.0), True, np.True_, "3", None, 3 + 0j])
def test_whole_floats_bools_and_strings_are_not_integers(value):
    assert not is_integer(value)
    with pytest.raises(PosgeomError, match=r"^k must be an integer >= 1"):
        check_int(value, "k", 1)


def test_interval_bounds_and_closedness():
    closed = Interval(Real, 0, 1)
    assert closed.accepts(0) and closed.accepts(1.0) and closed.accepts(0.5)
    assert not closed.accepts(-1e-12) and not closed.accepts(1.0000001)
    assert not closed.accepts(float("nan")) and not closed.accepts(True)
    left = Interval(Real, 0, 1, closed="left")
    assert left.accepts(0) and not left.accepts(1)
    neither = Interval(Real, 0, None, closed="neither")
    assert not neither.accepts(0) and neither.accepts(1e300)
    assert Interval(Integral, None, None).accepts(-(10**30))
    assert check_real(np.float32(0.25), "alpha", 0, 1) == 0.25
    with pytest.raises(PosgeomError, match=r"alpha must be a number > 0 and <= 1, got 0"):
        check_real(0, "alpha", 0, 1, closed="right")
    with pytest.raises(TypeError):
        Interval(float, 0, 1)
    with pytest.raises(TypeError):
        Interval(Real, 0, 1, closed="open")


def test_options_and_alternatives():
    solver = [Options({"exact", "implicit"})]
    assert check_param("solver", "exact", solver) == "exact"
    with pytest.raises(
        PosgeomError, match=r"solver must be one of 'exact', 'implicit', got 'lanczos'"
    ):
        check_param("solver", "lanczos", solver)
    with pytest.raises(PosgeomError, match="solver must be one of"):
        check_param("solver", ["exact"], solver)  # unhashable: refused, not a TypeError
    optional = [Interval(Integral, 1, None), None]
    assert check_param("k", None, optional) is None
    with pytest.raises(PosgeomError, match=r"^k must be an integer >= 1 or None, got 0$"):
        check_param("k", 0, optional)
    with pytest.raises(PosgeomError, match=r"a float such as 3.0 is not taken for an integer"):
        check_param("k", 3.0, optional)
    assert check_param("flag", np.bool_(True), [bool])
    with pytest.raises(PosgeomError, match="flag must be a bool, got 1"):
        check_param("flag", 1, [bool])


@validate_params({"n": [Interval(Integral, 2, None)], "mode": [Options({"a", "b"})]})
def _example(data, n, *, mode="a", other=None):
    return data, n, mode, other


def test_decorator_checks_positional_keyword_and_default_arguments():
    assert _example([1], 2) == ([1], 2, "a", None)
    assert _example([1], n=np.int32(5), mode="b", other=3.5)[1] == 5
    with pytest.raises(PosgeomError, match=r"^_example: n must be an integer >= 2"):
        _example([1], 2.0)
    with pytest.raises(
        PosgeomError,
        match=r"^_example: mode must be one of 'a', 'b', got 'c'$",
    ):
        _example([1], 3, mode="c")
    assert _example.__posgeom_constraints__["n"][0] == Interval(Integral, 2, None)
    assert _example.__name__ == "_example"
    with pytest.raises(TypeError):  # a wrong call stays Python's error
        _example()


def test_decorator_refuses_constraints_for_missing_parameters():
    with pytest.raises(TypeError, match="no parameters"):
        validate_params({"nope": [None]})(lambda x: x)


def _calls():
    """Public functions across the layers, each called with one integer given as ``3.0``."""
    from posgeom import encodings, synthetic
    from posgeom.corpus.counting import count_positions
    from posgeom.embed import classical_mds
    from posgeom.geometry import positional_distributions
    from posgeom.geometry.noise import noise_floor

    counts = np.array([[3, 1, 0], [1, 2, 2], [0, 1, 4], [2, 2, 1]])
    return {
        "encodings.sinusoidal n": lambda: encodings.sinusoidal(3.0, d=4),
        "encodings.rope head_dim": lambda: encodings.rope(4, head_dim=4.0),
        "synthetic_corpus n_sequences": lambda: synthetic.synthetic_corpus(3.0),
        "count_positions max_positions": lambda: count_positions([[1, 2]], max_positions=3.0),
        "positional_distributions min_samples": lambda: positional_distributions(
            counts, min_samples=3.0
        ),
        "noise_floor n_repeats": lambda: noise_floor(counts, n_repeats=3.0),
        "classical_mds n_components": lambda: classical_mds(positional_distributions(counts), 3.0),
    }


@pytest.mark.parametrize("name", sorted(_calls()))
def test_one_integer_rule_across_the_package(name):
    with pytest.raises(PosgeomError, match=r"must be an (even )?integer"):
        _calls()[name]()


def test_the_same_calls_accept_integers():
    from posgeom import encodings
    from posgeom.corpus.counting import count_positions
    from posgeom.embed import classical_mds

    assert encodings.sinusoidal(np.int64(3), d=4).vectors.shape == (3, 4)
    assert count_positions([[1, 2]], max_positions=np.int32(3)).max_positions == 3
    from posgeom.geometry import positional_distributions

    counts = np.array([[3, 1, 0], [1, 2, 2], [0, 1, 4], [2, 2, 1]])
    assert classical_mds(positional_distributions(counts), np.int64(2)).n_components == 2


_INTEGER_TYPES = {"int", "np.integer", "numbers.Integral", "Integral"}


def _is_integer_type(node: ast.expr) -> bool:
    """``int`` or a tuple of integer types that includes ``int`` (``(int, np.integer)``)."""
    if isinstance(node, ast.Tuple):
        names = {ast.unparse(e) for e in node.elts}
        return "int" in names and names <= _INTEGER_TYPES
    return ast.unparse(node) == "int"


def hand_checks(source: str) -> list[int]:
    """Lines of hand-written integer checks in ``source``: ``not isinstance(x, int)`` or
    ``not isinstance(x, (int, np.integer))`` (refuses np.int64, or restates check_int) and
    ``int(x) != x`` (accepts 3.0). Read from the syntax tree, so a call the formatter splits over
    lines is found as well (a line-by-line pattern missed those)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            call = node.operand
            if (
                isinstance(call, ast.Call)
                and ast.unparse(call.func) == "isinstance"
                and len(call.args) == 2
                and _is_integer_type(call.args[1])
            ):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if (
                isinstance(node.ops[0], ast.NotEq)
                and isinstance(left, ast.Call)
                and ast.unparse(left.func) == "int"
                and len(left.args) == 1
                and ast.dump(left.args[0]) == ast.dump(right)
            ):
                found.append(node.lineno)
    return sorted(found)


def test_no_hand_written_integer_checks_left():
    """Integer parameters go through check_int / Interval(Integral, ...): one rule.

    The rule is about how code is written (no second integer check anywhere), so it is read from
    the source, as a syntax tree; what the one rule does is tested by calling the package
    (``test_one_integer_rule_across_the_package``, ``test_the_same_calls_accept_integers``)."""
    src = Path(__file__).resolve().parents[2] / "src" / "posgeom"
    modules = [p for p in sorted(src.rglob("*.py")) if p.name != "_validation.py"]
    assert len(modules) > 50, "the walk does not see the package"
    found = [
        f"{path.relative_to(src)}:{line}"
        for path in modules
        for line in hand_checks(path.read_text(encoding="utf-8"))
    ]
    assert not found, "use posgeom._validation.check_int:\n" + "\n".join(found)


def test_the_hand_check_finder_finds_what_it_must():
    assert hand_checks("if not isinstance(n, int) or n < 1:\n    pass\n") == [1]
    assert hand_checks("ok = n > 0 or not isinstance(value, (int, np.integer))\n") == [1]
    assert hand_checks("if int(n) != n or n < 1:\n    pass\n") == [1]
    split = "if (\n    not isinstance(\n        value,\n        int,\n    )\n):\n    pass\n"
    assert hand_checks(split) == [2]  # the formatter's layout, over several lines
    fine = (
        "if isinstance(value, (int, np.integer)) and not isinstance(value, bool):\n    pass\n"
        "if not isinstance(value, (int, float)):\n    pass\n"  # a number check, not an integer one
        "if int(n) != m:\n    pass\n"
    )
    assert hand_checks(fine) == []


def test_distance_matrix_symmetry_tolerance_is_relative_to_the_largest_distance():
    from posgeom._distance_matrix import check_distance_matrix

    d = np.array([[0.0, 2.0, 4.0], [2.0, 0.0, 1.0], [4.0, 1.0, 0.0]])
    near = d.copy()
    near[0, 1] += 3e-9  # below 1e-9 x max(1, 4): accepted, averaged with its mirror
    np.testing.assert_array_equal(check_distance_matrix(near), check_distance_matrix(near).T)
    assert check_distance_matrix(near)[0, 1] == pytest.approx(2.0 + 1.5e-9, abs=1e-15)
    far = d.copy()
    far[0, 1] += 5e-9  # above the tolerance: refused with one line
    with pytest.raises(PosgeomError, match="not symmetric"):
        check_distance_matrix(far)
