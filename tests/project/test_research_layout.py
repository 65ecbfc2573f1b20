"""The research code outside the package (``studies/``, ``benchmarks/``): packages run from the
repository root, read by their imports.

- every module imports (``importlib``), and importing it leaves ``sys.path`` as it was;
- no module mutates ``sys.path`` anywhere, in a function body included (``sys.path.insert``,
  ``.append``, ``.extend``, ``+=``, item assignment, ``site.addsitedir``);
- a name read from a studies module alias (``A.window_tokens``) exists in that module;
- no module imports a sibling by its bare file name (``import bench_scale``: it only resolves
  with the folder on ``sys.path``); every ``studies.*``/``benchmarks.*`` name it imports, at the
  top or inside a function, exists;
- the import graph of these modules (lazy imports inside functions included) has no cycle.

The detectors are checked on sources written here, so a broken detector fails too.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("studies", "benchmarks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if ".cache" not in p.parts
    }


MODULES = _modules()
#: bare names that only resolve with a studies/benchmarks folder on sys.path
SIBLINGS = {name.rsplit(".", 1)[-1] for name in MODULES} - set(PACKAGES) - {"__main__"}


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def path_mutations(source: str) -> list[int]:
    """Line numbers where ``source`` changes ``sys.path`` (or adds a site directory)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if _is_sys_path(target) and node.func.attr in {"insert", "append", "extend", "remove"}:
                lines.append(node.lineno)
            if node.func.attr == "addsitedir":
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value)):
                    lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            if any(a.name == "path" for a in node.names):
                lines.append(node.lineno)
    return sorted(lines)


def imported(source: str, module: str) -> list[tuple[int, str, str | None]]:
    """Every import of ``source`` (anywhere, function bodies included) as ``(line, module,
    name)``: ``import a.b`` gives ``("a.b", None)``, ``from a import b`` gives ``("a", "b")``;
    relative imports resolved against ``module``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                if not MODULES.get(module, Path("x")).name == "__init__.py":
                    package = package[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            out += [(node.lineno, base, a.name) for a in node.names]
    return out


def edges(source: str, module: str, known: set[str]) -> set[str]:
    """The known modules that ``module`` imports (``from pkg import sub`` counts as ``pkg.sub``
    when that is a module, else as ``pkg``)."""
    out = set()
    for _, base, name in imported(source, module):
        if name is not None and f"{base}.{name}" in known:
            out.add(f"{base}.{name}")
        elif base in known:
            out.add(base)
    out.discard(module)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted
    (``scipy.sparse.csgraph.connected_components`` with ``connection="strong"``)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    names = sorted(set(graph).union(*graph.values()))
    at = {name: k for k, name in enumerate(names)}
    arrows = [(at[m], at[t]) for m, targets in graph.items() for t in targets]
    rows, cols = [a for a, _ in arrows], [b for _, b in arrows]
    adjacency = csr_matrix(([1] * len(arrows), (rows, cols)), shape=(len(names), len(names)))
    _, label = connected_components(adjacency, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, comp in zip(names, label, strict=True):
        groups.setdefault(int(comp), []).append(name)
    return sorted(g for g in groups.values() if len(g) > 1)


def _graph() -> dict[str, set[str]]:
    known = set(MODULES)
    return {m: edges(p.read_text(), m, known) for m, p in MODULES.items()}


# ------------------------------------------------------------------------------ the detectors
def test_path_mutations_are_found_where_written():
    source = (
        "import sys, site\n"
        "def f():\n"
        "    sys.path.insert(0, 'x')\n"
        "sys.path.append('y')\n"
        "sys.path[:0] = ['z']\n"
        "sys.path += ['w']\n"
        "site.addsitedir('v')\n"
        "from sys import path\n"
        "print(sys.path[0])\n"  # reading is fine
    )
    assert path_mutations(source) == [3, 4, 5, 6, 7, 8]


def test_cycles_are_found_with_lazy_imports():
    a = "def f():\n    from pkg import b\n"
    b = "import pkg.c\n"
    c = "from pkg.a import f\n"
    known = {"pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    graph = {
        m: edges(s, m, known) for m, s in zip(sorted(known), [a, b, c, "import pkg.a"], strict=True)
    }
    assert graph["pkg.a"] == {"pkg.b"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    graph["pkg.c"] = set()
    assert cycles(graph) == []


# ------------------------------------------------------------------------------ the code
def test_there_is_code_to_check():
    assert {"studies.extension.__main__", "studies.estimation.__main__"} <= set(MODULES)
    assert "benchmarks.bench_geometry" in MODULES


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_without_touching_sys_path(module):
    source = MODULES[module].read_text()
    assert path_mutations(source) == [], f"{module} changes sys.path"
    before = list(sys.path)
    importlib.import_module(module)
    assert sys.path == before


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_name_modules_that_exist(module):
    bad = []
    for line, base, name in imported(MODULES[module].read_text(), module):
        top = base.split(".")[0]
        if top in SIBLINGS:
            bad.append(f"{line}: {base} (a sibling file by its bare name)")
        elif top in PACKAGES:
            if base not in MODULES:
                bad.append(f"{line}: {base} does not exist")
            elif name is not None and f"{base}.{name}" not in MODULES:
                if not hasattr(importlib.import_module(base), name):
                    bad.append(f"{line}: {base} has no {name}")
    assert not bad, f"{module}:\n" + "\n".join(bad)


#: cycles that stay for now, each with its reason (a fixed one fails the test, so it leaves here)
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}


def module_aliases(source: str) -> dict[str, str]:
    """The names under which ``source`` binds a studies/benchmarks module (``from pkg import
    mod``, ``import pkg.mod as m``), mapped to the module."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            out |= {a.asname: a.name for a in node.names if a.name in MODULES and a.asname}
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_names_read_from_a_module_alias_exist(module):
    """``A.window_tokens`` where ``A`` is a studies module: the module has that name (a moved or
    renamed helper fails here, not hours into a run)."""
    source = MODULES[module].read_text()
    aliases = module_aliases(source)
    bad = [
        f"{node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and not hasattr(importlib.import_module(aliases[node.value.id]), node.attr)
        and f"{aliases[node.value.id]}.{node.attr}" not in MODULES
    ]
    assert not bad, f"{module}:\n" + "\n".join(bad)


def test_the_alias_reader_sees_both_spellings():
    source = "from studies.extension import track_a as A\nimport studies.extension.common as C\n"
    assert module_aliases(source) == {
        "A": "studies.extension.track_a",
        "C": "studies.extension.common",
    }


def test_no_import_cycles():
    assert [tuple(c) for c in cycles(_graph())] == sorted(KNOWN_CYCLES)


def test_benchmarks_do_not_import_studies():
    """``benchmarks/`` is performance only: the studies may use its harness, never the reverse."""
    graph = _graph()
    bad = [
        f"{m} imports {t}"
        for m, targets in graph.items()
        if m.startswith("benchmarks")
        for t in targets
        if t.startswith("studies")
    ]
    assert not bad
