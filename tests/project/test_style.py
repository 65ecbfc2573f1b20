"""The design guards that run with the tests: ruff's lint (complexity <= 15 included, from
pyproject.toml), ruff's formatter, and the size of the package's modules.

Module size: a module is split by concept, not by size. 400 lines is the soft limit: past it a
module usually holds more than one concept, so a module of ``src/`` over 400 lines must be named in
``COHESIVE`` with the one concept that holds it together (a reviewer reads the reason; an entry
whose module is back under 400 lines is stale and fails, so the list cannot rot). 600 lines is the
hard limit for every module: half again the soft limit, past which even one concept has parts
worth their own file. What keeps a long module readable is its functions, and those stay at
complexity <= 15 (ruff's C901, checked to be on: ``test_the_complexity_limit_is_on``). Nothing is
packed onto one line to meet either limit (the formatter owns layout: no module of src/, tests/,
benchmarks/ or studies/ turns it off, ``test_the_formatter_owns_the_layout_of_every_tree``)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ["src", "tests", "benchmarks", "studies"]
SOFT_MODULE_LINES = 400
HARD_MODULE_LINES = 600
MAX_COMPLEXITY = 15
#: modules of src/ allowed past SOFT_MODULE_LINES: path (from the repository root) -> the concept
#: that holds the module together
COHESIVE: dict[str, str] = {}  # none today: every module of src/ is within 400 lines


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (it is in the test extra)")
    return subprocess.run([exe, *args, *TREES], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    out = _ruff("check", "--output-format", "concise")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_clean():
    out = _ruff("format", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


def _lines(path: Path) -> int:
    with path.open(encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def size_problems(sizes: dict[str, int], cohesive: dict[str, str]) -> list[str]:
    """What breaks the size rule: a module past the hard limit, one past the soft limit without
    a reason in ``cohesive``, a reason left blank, and an entry that is stale (its module is gone
    or back under the soft limit)."""
    problems = []
    for path, n in sorted(sizes.items()):
        if n > HARD_MODULE_LINES:
            problems.append(f"{path}: {n} lines, over the hard limit of {HARD_MODULE_LINES}")
        elif n > SOFT_MODULE_LINES and not cohesive.get(path, "").strip():
            problems.append(
                f"{path}: {n} lines, over {SOFT_MODULE_LINES}: split it by concept, or name it in"
                " COHESIVE with the concept that holds it together"
            )
    for path in sorted(cohesive):
        if sizes.get(path, 0) <= SOFT_MODULE_LINES:
            problems.append(f"{path}: in COHESIVE but not over {SOFT_MODULE_LINES} lines (stale)")
    return problems


def test_every_module_is_one_concept_of_bounded_size():
    sizes = {str(p.relative_to(ROOT)): _lines(p) for p in (ROOT / "src").rglob("*.py")}
    assert sizes, "no modules found under src/"
    problems = size_problems(sizes, COHESIVE)
    assert not problems, "\n".join(problems)


def test_the_size_rule_refuses_what_it_must():
    """The rule on hand-made sizes: each kind of problem is reported, a reasoned module passes."""
    soft, hard = SOFT_MODULE_LINES, HARD_MODULE_LINES
    assert size_problems({"a.py": soft, "b.py": soft + 1}, {"b.py": "one concept"}) == []
    (unlisted,) = size_problems({"a.py": soft + 1}, {})
    assert unlisted.startswith("a.py: 401 lines, over 400")
    (blank,) = size_problems({"a.py": soft + 1}, {"a.py": " "})
    assert blank.startswith("a.py: 401 lines")
    (too_long,) = size_problems({"a.py": hard + 1}, {"a.py": "one concept"})
    assert "hard limit" in too_long
    stale = size_problems({"a.py": soft}, {"a.py": "one concept", "gone.py": "one concept"})
    assert stale == [
        "a.py: in COHESIVE but not over 400 lines (stale)",
        "gone.py: in COHESIVE but not over 400 lines (stale)",
    ]


FORMATTER_OFF = re.compile(r"#\s*fmt:\s*(skip|off)\b")


def formatter_off(source: str) -> list[int]:
    """The lines of ``source`` whose comment turns the formatter off (``# fmt: skip`` or
    ``# fmt: off``: code laid out by hand, e.g. packed onto one line to stay under a limit)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [
        t.start[0] for t in tokens if t.type == tokenize.COMMENT and FORMATTER_OFF.search(t.string)
    ]


def test_the_formatter_owns_the_layout_of_every_tree():
    """No module of the trees ruff checks (src/, tests/, benchmarks/, studies/) turns the
    formatter off: nothing is packed past ruff format to meet the size limits (a comment only;
    the words in a string or docstring do not count)."""
    files = [p for tree in TREES for p in sorted((ROOT / tree).rglob("*.py"))]
    assert {p.relative_to(ROOT).parts[0] for p in files} == set(TREES)  # every tree was read
    found = {
        str(p.relative_to(ROOT)): lines
        for p in files
        if (lines := formatter_off(p.read_text(encoding="utf-8")))
    }
    assert not found, f"formatter turned off (remove it, let ruff format lay it out): {found}"
    probe = 'x = f(a,\n      b)  # fmt: skip\ny = "# fmt: skip"\n# fmt: off\nz = 1  # noqa: E501\n'
    assert formatter_off(probe) == [2, 4]


def test_the_complexity_limit_is_on(tmp_path):
    """ruff with the project's configuration flags a function of complexity MAX_COMPLEXITY + 1
    (one ``if`` per branch: complexity 1 + branches) and passes one of MAX_COMPLEXITY."""

    def function(branches: int) -> str:
        body = "".join(f"    if x == {k}:\n        return {k}\n" for k in range(branches))
        return f"def f(x):\n{body}    return -1\n"

    (tmp_path / "at_limit.py").write_text(function(MAX_COMPLEXITY - 1))
    (tmp_path / "over.py").write_text(function(MAX_COMPLEXITY))
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (it is in the test extra)")
    config = str(ROOT / "pyproject.toml")
    args = [exe, "check", "--config", config, "--output-format", "concise"]
    out = subprocess.run([*args, str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"`f` is too complex ({MAX_COMPLEXITY + 1} > {MAX_COMPLEXITY})" in out.stdout
    assert "over.py" in out.stdout and "at_limit.py" not in out.stdout


#: the only json.dump(s) calls of src/ outside posgeom.io.jsonfiles.json_text: canonical JSON of
#: artifact metadata (allow_nan=False itself) and a cache digest that is hashed, never written
JSON_TEXT_EXCEPTIONS = {
    ("src/posgeom/io/_atomic.py", "canonical_json"),
    ("src/posgeom/extension/measure.py", "_digest"),
}


def _json_dump_calls(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of every ``json.dump``/``json.dumps`` call in ``path``."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        for node in ast.walk(fn):
            f = getattr(node, "func", None)
            if (
                isinstance(f, ast.Attribute)
                and f.attr in ("dump", "dumps")
                and isinstance(f.value, ast.Name)
                and f.value.id == "json"
            ):
                found.append((getattr(fn, "name", "<module>"), node.lineno))
    return found


def test_json_is_written_in_one_place_and_strict():
    """Every file and line of JSON posgeom writes goes through ``json_text`` (allow_nan=False:
    strict parsers read it); the innermost function of each other call must be an exception."""
    bad = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "src/posgeom/io/jsonfiles.py":
            continue
        calls = _json_dump_calls(path)
        inner = {line: name for name, line in calls}  # ast.walk visits outer scopes first
        bad += [f"{rel}:{line} ({name})" for line, name in inner.items()]
        bad = [
            b for b in bad if (b.split(":")[0], b.split("(")[-1][:-1]) not in JSON_TEXT_EXCEPTIONS
        ]
    assert not bad, f"json.dumps outside posgeom.io.jsonfiles.json_text: {bad}"
