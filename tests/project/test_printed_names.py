"""Every line the CLI prints passes a user's names through the one escaping function,
:func:`posgeom._errors.printable` (an AST walk over ``src/posgeom/cli``, no imports run).

- an f-string given to ``print`` interpolates each value through ``printable(...)`` or as a
  number (a format spec: ``{x:.4g}``), so an output folder, corpus, model or strategy name with
  ESC or a line break cannot retitle the terminal or forge a ``posgeom: error:`` line;
- any other argument of ``print`` is a string constant or one of :data:`SAFE_TEXT`, text whose
  producer escapes every line itself (the behaviour tests in ``tests/faults/test_names_escaped.py``
  run those producers with hostile names);
- no other module defines an escaping of control characters (one home).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "src" / "posgeom" / "cli"

#: ``print`` arguments that are not f-strings, with why each is safe
SAFE_TEXT = {
    "result.markdown()": "result_markdown / ProbeResult.markdown escape each line (printable)",
    "'\\n'.join(score_table(rows))": "markdown_table escapes every cell (printable, then '|')",
    "profile.text()": "numbers of the length histogram only, no names",
}


def _is_printable_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "printable"
    )


def _is_json_dumps(node: ast.AST) -> bool:
    # JSON text escapes every control character (\u001b, \n) with the default ensure_ascii:
    # json.dumps, or posgeom's one writer json_text (posgeom.io.jsonfiles)
    return (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("json.dumps", "json_text")
        and not any(k.arg == "ensure_ascii" for k in node.keywords)
    )


def _print_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
    ]


def _raw_values(call: ast.Call) -> list[str]:
    """The values an f-string inside ``call`` interpolates neither escaped nor as numbers."""
    raw = []
    for arg in call.args:
        for node in ast.walk(arg):
            if (
                isinstance(node, ast.FormattedValue)
                and node.format_spec is None
                and not _is_printable_call(node.value)
            ):
                raw.append(ast.unparse(node.value))
    return raw


def _unsafe_arguments(call: ast.Call) -> list[str]:
    bad = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) or _is_printable_call(arg) or _is_json_dumps(arg):
            continue
        if any(isinstance(n, ast.JoinedStr) for n in ast.walk(arg)):
            continue  # f-strings: _raw_values checks them
        if ast.unparse(arg) not in SAFE_TEXT:
            bad.append(ast.unparse(arg))
    return bad


def test_cli_prints_interpolate_names_only_through_printable():
    problems = []
    for path in sorted(CLI.glob("*.py")):
        for call in _print_calls(path):
            where = f"{path.relative_to(ROOT)}:{call.lineno}"
            problems += [f"{where}: {{{v}}} not through printable()" for v in _raw_values(call)]
            problems += [f"{where}: print({a}) not escaped" for a in _unsafe_arguments(call)]
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_raw_name():
    """The walk flags what it is meant to (a check that cannot fail checks nothing)."""
    call = ast.parse('print(f"results in {args.output}/ ({n:d} files)")').body[0].value
    assert _raw_values(call) == ["args.output"]
    call = ast.parse("print(result.verdict_line())").body[0].value
    assert _unsafe_arguments(call) == ["result.verdict_line()"]
    ok = ast.parse('print(f"wrote {printable(path)}", json.dumps(x), "done")').body[0].value
    assert _raw_values(ok) == [] and _unsafe_arguments(ok) == []
    ok = ast.parse("print(json_text(x, indent=None))").body[0].value
    assert _unsafe_arguments(ok) == []
    raw = ast.parse("print(json_text(x, ensure_ascii=False))").body[0].value
    assert _unsafe_arguments(raw) == ["json_text(x, ensure_ascii=False)"]


def test_one_escaping_function():
    """Control characters are escaped in one place: the only substitution of control characters
    (an ``re.sub`` / ``.sub`` whose pattern holds the C0 range) is posgeom._errors's. A check that
    refuses such characters (a search or match) may live anywhere."""
    homes = []
    for path in sorted((ROOT / "src" / "posgeom").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        patterns = {  # names bound to a compiled pattern of control characters
            t.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and _holds_controls(n.value)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "sub"
            ):
                owner = n.func.value
                if (isinstance(owner, ast.Name) and owner.id in patterns) or (
                    ast.unparse(owner) == "re" and n.args and _holds_controls(n.args[0])
                ):
                    homes.append(str(path.relative_to(ROOT)))
    assert homes == ["src/posgeom/_errors.py"], homes


def _holds_controls(node: ast.AST) -> bool:
    """A string constant (or re.compile of one) whose text covers ESC (U+001B)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
            if "\x1b" in text or "\x00-\x1f" in text or "\x1f" in text:
                return True
    return False
