"""The import layers of the package, checked on the source (an AST walk, no imports run).

Contracts (docs/ARCHITECTURE.md, "Each room imports only rooms below it"):

- the core (``io``, ``corpus``, ``geometry``, ``estimators``, ``embed``, ``scores``,
  ``uncertainty``) never
  imports the upper layers (``nn``, ``models``, ``cli``, ``training``, ``reproduction``, ``experiments``, ``reports``), not even
  inside a function;
- the bottom modules (``_errors``, ``_validation``, ``_hub``, ``_library_output``, ``_placement``,
  ``_distance_matrix``,
  ``_threads``, ``_version``) import no other part of posgeom except each other;
- inside the house, every room imports only rooms before it in ``FLOW`` (the order the data
  flows in, except that the scores, pure functions on arrays, sit below the geometry whose noise
  floor uses their Wilson interval: ``io`` -> ``corpus`` -> ``scores`` -> ``geometry`` -> ... ->
  then torch, Hugging Face, the trainer and the reproduction; ``cli`` on top): no arrow runs up (the
  scores never import the estimators);
- the module import graph (every ``import``, also those inside functions) has no cycles.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "posgeom"

CORE = ("io", "corpus", "geometry", "estimators", "embed", "scores", "uncertainty")
UPPER = ("nn", "models", "cli", "training", "reproduction", "experiments", "reports")
BOTTOM = (
    "_errors",
    "_validation",
    "_hub",
    "_library_output",
    "_placement",
    "_distance_matrix",
    "_threads",
    "_version",
    "_discovery",
    "_records",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The posgeom module ``name`` refers to (a module, or the package holding a name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    """Every posgeom module imported anywhere in ``module`` (functions included)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports the module; ``from pkg import name`` the package.
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name.startswith("posgeom"):
                target = _resolve(name)
                if target and target != module:
                    found.add(target)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_walk_sees_the_package():
    """Guard against a vacuous pass: the graph has the modules and edges it must have."""
    assert {"posgeom.corpus.counting", "posgeom.models.layerwise", "posgeom._hub"} <= set(GRAPH)
    assert "posgeom._hub" in GRAPH["posgeom.corpus.tokenize"]  # a function-level import
    assert "posgeom.models.loading" in GRAPH["posgeom.models.layerwise"]


@pytest.mark.parametrize("layer", CORE)
def test_core_never_imports_the_upper_layers(layer):
    bad = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _layer(module) == layer
        for target in targets
        if _layer(target) in UPPER
    )
    assert not bad, (
        "core layers must not import nn/models/cli/training/reproduction/experiments/reports:\n"
        + "\n".join(bad)
    )


def test_bottom_modules_import_only_the_bottom():
    bad = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _layer(module) in BOTTOM
        for target in targets
        if _layer(target) not in BOTTOM
    )
    assert not bad, "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_cycle_finder_finds_a_known_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _private_imports(module: str, source: str | None = None) -> list[str]:
    """``from posgeom.x import _name`` where ``posgeom.x`` is outside ``module``'s package
    (a private name of another room; the bottom modules ``posgeom._*`` are public to all)."""
    path = MODULES.get(module)
    is_package = path is not None and path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    text = source if source is not None else path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("posgeom."):
            continue
        if node.module.startswith(package + ".") or node.module == package:
            continue
        found += [
            f"{module}: from {node.module} import {alias.name}"
            for alias in node.names
            if alias.name.startswith("_")
            and not alias.name.startswith("__")
            and f"{node.module}.{alias.name}" not in MODULES
        ]
    return found


def test_the_models_layer_reads_no_private_names_of_other_rooms():
    mine = [
        m for m in MODULES if m.startswith("posgeom.models") or m == "posgeom.cli.model_commands"
    ]
    bad = [line for m in mine for line in _private_imports(m)]
    assert not bad, "\n".join(bad)
    probe = "from posgeom.geometry.divergences import _sq_chords\nfrom posgeom.models.x import _y\n"
    assert _private_imports("posgeom.models.probe", probe) == [
        "posgeom.models.probe: from posgeom.geometry.divergences import _sq_chords"
    ]


# The rooms in the order data flows; a room imports only rooms before it (and the bottom). Rooms
# not listed (the top-level package, ``cli``) may import any of them.
FLOW = (
    "io",
    "corpus",
    "scores",
    "geometry",
    "synthetic",
    "embed",
    "estimators",
    "encodings",
    "uncertainty",
    "lags",
    "text",
    "pipeline",
    "reports",
    "nn",
    "models",
    "extension",
    "probes",
    "training",
    "reproduction",
)


def _upward(graph: dict[str, set[str]]) -> list[str]:
    rank = {room: i for i, room in enumerate(FLOW)}
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _layer(module) in rank
        for target in targets
        if _layer(target) in rank and rank[_layer(target)] > rank[_layer(module)]
    )


def test_results_import_no_renderer():
    """Results compute, reports render: nothing under pipeline/ imports reports
    (the reports register their renderers with the results: posgeom.io.renderers)."""
    bad = [
        f"{m} imports {t}"
        for m, ts in GRAPH.items()
        if _layer(m) == "pipeline"
        for t in ts
        if _layer(t) == "reports"
    ]
    assert "posgeom.pipeline.result" in GRAPH and not bad, bad


def _names_reports(source: str) -> list[int]:
    """Lines of ``source`` with a string naming the reports' modules (what ``importlib`` would
    import by name, which the import walk does not see)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "posgeom.reports" or node.value.startswith("posgeom.reports."))
    )


def test_results_name_no_renderer():
    """Nor by name: the results find their renderers through ``posgeom.io.renderers``,
    whose provider the package root names (``posgeom/__init__``), never a string import here."""
    bad = {
        m: lines
        for m, path in MODULES.items()
        if _layer(m) == "pipeline" and (lines := _names_reports(path.read_text(encoding="utf-8")))
    }
    assert not bad, bad
    probe = 'import importlib\nimportlib.import_module("posgeom.reports")\n"""posgeom.reports"""\n'
    assert _names_reports(probe) == [2, 3]
    assert _names_reports(MODULES["posgeom"].read_text(encoding="utf-8"))  # the root names it


def test_no_arrow_runs_up():
    bad = _upward(GRAPH)
    assert not bad, "a room imports a room above it (FLOW):\n" + "\n".join(bad)


def test_the_flow_check_sees_an_upward_arrow():
    probe = {"posgeom.scores.x": {"posgeom.estimators.y"}, "posgeom.estimators.y": set()}
    assert _upward(probe) == ["posgeom.scores.x imports posgeom.estimators.y"]
    assert set(FLOW) <= {_layer(m) for m in MODULES}, "FLOW names a room that does not exist"
