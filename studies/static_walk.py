"""Where a parameter travels in the code as written: a static walk, folder by folder.

:mod:`studies.call_trace` watches one command run; this study reads the source and follows one
parameter of one function (``FILE:FUNCTION:PARAM``, e.g. ``pipeline/job.py:analyze:counts``)
through every call that passes it on, without running anything. Issue 35 asks for both.

The walk, on the package's source parsed with :mod:`ast`:

- **what carries the parameter** in a function: the parameter itself and every name assigned
  (``=``, ``for``, ``with ... as``) from an expression that mentions a name that carries it (a
  change of form: ``cm = count_matrix(counts)``), to a fixpoint;
- **which calls pass it on**: every call, in the order the code is written, with an argument
  that mentions a carrying name; the callee's parameter is the one that argument binds to;
- **which function a call reaches**: a function or class of the same module; a name imported
  into the module (``from .x import f``, also inside functions), followed through a package's
  re-exports; ``module.f`` of an imported module; ``self.m`` / ``cls.m`` in the same class; a
  class's ``__init__`` (or a dataclass's ``__post_init__``); ``obj.m`` when exactly one class of
  the package defines a method ``m`` (several: the walk stops there and counts an open door).
  Calls it cannot resolve (numpy, a callable held in a variable) end that branch;
- **the journey**: the functions entered, depth first in the order of the calls, each function
  once (the first parameter that reaches it; a value reaching it again is not walked twice).

The figures, on the journey's folders (``posgeom/<folder>/``) with consecutive repeats collapsed;
as in :mod:`studies.call_trace`, the package root's helpers (``posgeom/_*.py``: validation,
errors, threads) are utilities every stage may use, so entering them is not a move (they still
count as rooms and functions):

- **moves**: changes of folder between consecutive entries;
- **climbs**: moves into a folder higher in the house, i.e. later in the import order of
  ``tests/project/test_layers.py``'s ``FLOW`` (a higher room uses the lower ones; the walk climbs
  when the code returns to an orchestrator to pass the value on, or when a lower stage calls up);
- **rooms** (modules) and **folders** entered, **re-entries** of a folder already left, and the
  **open doors** (method names the walk could not resolve to one class).

Run: ``python -m studies.static_walk pipeline/job.py:analyze:counts [--list]``. The figures
before and after issue 35 are in ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

import argparse
import ast
import itertools
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "posgeom"

LAYERS_TEST = Path(__file__).resolve().parents[1] / "tests" / "project" / "test_layers.py"


def floor_order(layers_test: Path = LAYERS_TEST) -> tuple[str, ...]:
    """The floors, bottom first: the package root's helpers (``_root``), then the import order
    of the rooms, read from the ``FLOW`` of ``tests/project/test_layers.py`` (its one home: a
    later room may import an earlier one), then ``cli`` on top."""
    tree = ast.parse(layers_test.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FLOW" for t in node.targets
        ):
            return ("_root", *ast.literal_eval(node.value), "cli")
    raise ValueError(f"{layers_test} has no FLOW")


_MAX_ENTRIES = 5000


@dataclass(frozen=True)
class Function:
    """One function of the package: its module (dotted, inside the package), qualified name and
    parameter names (``self``/``cls`` included for methods)."""

    module: str
    qualname: str
    params: tuple[str, ...]
    node: ast.FunctionDef | ast.AsyncFunctionDef
    is_method: bool

    @property
    def folder(self) -> str:
        head, _, rest = self.module.partition(".")
        return head if rest else "_root"


@dataclass
class Module:
    """A parsed module: its functions, classes (name -> method name -> function) and the names
    it imports (local name -> (module, name or None for a module))."""

    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, dict[str, Function]] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    a = node.args
    return tuple(p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs])


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The package-relative dotted name of ``from <level dots><target> import ...``."""
    parts = module.split(".") if module else []
    base = parts if is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    if level == 0:
        name = target or ""
        return name[len("posgeom.") :] if name.startswith("posgeom.") else ""
    return ".".join([*base, *([target] if target else [])])


def _read_imports(mod: Module, tree: ast.Module, is_package: bool) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(mod.name, is_package, node.level, node.module)
            if node.level == 0 and not (node.module or "").startswith("posgeom"):
                continue
            for alias in node.names:
                mod.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("posgeom."):
                    local = alias.asname or alias.name.split(".")[0]
                    mod.imports[local] = (alias.name[len("posgeom.") :], None)


def _read_module(name: str, path: Path, is_package: bool) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod = Module(name)
    _read_imports(mod, tree, is_package)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mod.functions[node.name] = Function(name, node.name, _params(node), node, False)
        elif isinstance(node, ast.ClassDef):
            mod.classes[node.name] = {
                item.name: Function(name, f"{node.name}.{item.name}", _params(item), item, True)
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
    return mod


def read_package(root: Path = PACKAGE) -> dict[str, Module]:
    """Every module below ``root``, by its dotted name inside the package (``''`` the root)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules[".".join(parts)] = _read_module(".".join(parts), path, rel.name == "__init__")
    return modules


class _Resolver:
    """Resolves a call's function expression to a :class:`Function` of the package."""

    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules
        by_method: dict[str, list[Function]] = {}
        for mod in modules.values():
            for methods in mod.classes.values():
                for name, fn in methods.items():
                    by_method.setdefault(name, []).append(fn)
        self.by_method = by_method
        self.open_doors: set[str] = set()

    def named(self, module: str, name: str, depth: int = 0) -> Function | None:
        """The function or class constructor that ``name`` means in ``module``."""
        mod = self.modules.get(module)
        if mod is None or depth > 6:
            return None
        if name in mod.functions:
            return mod.functions[name]
        if name in mod.classes:
            return self._constructor(mod.classes[name])
        if name in mod.imports:
            source, item = mod.imports[name]
            if item is not None and f"{source}.{item}".strip(".") in self.modules:
                return None  # a module imported by name: a call needs an attribute
            return self.named(source, item, depth + 1) if item else None
        return None

    @staticmethod
    def _constructor(methods: dict[str, Function]) -> Function | None:
        return methods.get("__init__") or methods.get("__post_init__")

    def attribute(self, fn: Function, node: ast.Attribute) -> Function | None:
        mod = self.modules[fn.module]
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and fn.is_method:
            cls = fn.qualname.split(".")[0]
            return mod.classes.get(cls, {}).get(node.attr)
        if isinstance(owner, ast.Name) and owner.id in mod.imports:
            source, item = mod.imports[owner.id]
            target = f"{source}.{item}".strip(".") if item else source
            if target in self.modules:
                return self.named(target, node.attr)
            cls = self._class_of(source, item)
            if cls is not None:
                return cls.get(node.attr)
        if isinstance(owner, ast.Name) and owner.id in mod.classes:
            return mod.classes[owner.id].get(node.attr)
        return self._unique_method(node.attr)

    def _class_of(self, module: str, name: str | None, depth: int = 0) -> dict | None:
        mod = self.modules.get(module)
        if mod is None or name is None or depth > 6:
            return None
        if name in mod.classes:
            return mod.classes[name]
        if name in mod.imports:
            return self._class_of(*mod.imports[name], depth + 1)
        return None

    def _unique_method(self, name: str) -> Function | None:
        found = self.by_method.get(name, [])
        if len(found) == 1:
            return found[0]
        if found:
            self.open_doors.add(name)
        return None

    def __call__(self, fn: Function, call: ast.Call) -> Function | None:
        if isinstance(call.func, ast.Name):
            return self.named(fn.module, call.func.id)
        if isinstance(call.func, ast.Attribute):
            return self.attribute(fn, call.func)
        return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _own_nodes(fn: Function) -> list[ast.AST]:
    """The nodes of ``fn``'s body, without nested function or class definitions."""
    out, stack = [], list(fn.node.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _bindings(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs a statement binds."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.For | ast.comprehension):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


def carriers(fn: Function, param: str) -> set[str]:
    """The names that carry ``param`` in ``fn``: the parameter and, to a fixpoint, every name
    bound from an expression that mentions one of them."""
    nodes = _own_nodes(fn)
    pairs = [pair for node in nodes for pair in _bindings(node)]
    held = {param}
    changed = True
    while changed:
        changed = False
        for target, value in pairs:
            if _names(value) & held and not _names(target) <= held:
                held |= _names(target)
                changed = True
    return held


def _bound_param(callee: Function, call: ast.Call, index: int | str) -> str | None:
    """The callee's parameter that argument ``index`` (position or keyword) binds to."""
    params = list(callee.params)
    if callee.is_method and params and params[0] in ("self", "cls"):
        params = params[1:]
    if isinstance(index, str):
        return index if index in callee.params else None
    return params[index] if index < len(params) else None


def passed_on(fn: Function, param: str) -> list[tuple[ast.Call, int | str]]:
    """The calls of ``fn`` (in the order written) with an argument that carries ``param``, and
    that argument's position or keyword."""
    held = carriers(fn, param)
    calls = sorted(
        (n for n in _own_nodes(fn) if isinstance(n, ast.Call)),
        key=lambda c: (c.lineno, c.col_offset),
    )
    out: list[tuple[ast.Call, int | str]] = []
    for call in calls:
        for i, arg in enumerate(call.args):
            if not isinstance(arg, ast.Starred) and _names(arg) & held:
                out.append((call, i))
        out.extend((call, kw.arg) for kw in call.keywords if kw.arg and _names(kw.value) & held)
    return out


@dataclass
class Walk:
    """The journey of one parameter (see the module docstring for the definitions)."""

    start: str
    entries: list[tuple[Function, str]] = field(default_factory=list)
    open_doors: set[str] = field(default_factory=set)

    def folders(self) -> list[str]:
        seq = [fn.folder for fn, _ in self.entries if fn.folder != "_root"]
        return [f for i, f in enumerate(seq) if i == 0 or f != seq[i - 1]]

    def figures(self) -> dict[str, int]:
        floor = {f: i for i, f in enumerate(floor_order())}
        path = self.folders()
        moves = list(itertools.pairwise(path))
        return {
            "moves": len(moves),
            "climbs": sum(floor[b] > floor[a] for a, b in moves),
            "re-entries": sum(b in path[:i] for i, (_, b) in enumerate(moves, start=1)),
            "rooms": len({fn.module for fn, _ in self.entries}),
            "folders": len(set(path)),
            "functions": len({fn for fn, _ in self.entries}),
            "open doors": len(self.open_doors),
        }


def walk(spec: str, modules: dict[str, Module] | None = None) -> Walk:
    """Follow ``FILE:FUNCTION:PARAM`` (file relative to the package, e.g.
    ``pipeline/job.py:analyze:counts``; ``Class.method`` for a method) through the package."""
    modules = read_package() if modules is None else modules
    file, qualname, param = spec.rsplit(":", 2)
    module = ".".join(Path(file).with_suffix("").parts).removesuffix(".__init__")
    mod = modules[module]
    cls, _, meth = qualname.rpartition(".")
    start = mod.classes[cls][meth] if cls else mod.functions[qualname]
    if param not in start.params:
        raise ValueError(f"{qualname} has no parameter {param!r}: {start.params}")
    resolve = _Resolver(modules)
    result = Walk(spec)
    seen: set[Function] = set()

    def visit(fn: Function, name: str) -> None:
        if fn in seen or len(result.entries) > _MAX_ENTRIES:
            return
        seen.add(fn)
        result.entries.append((fn, name))
        for call, index in passed_on(fn, name):
            callee = resolve(fn, call)
            bound = _bound_param(callee, call, index) if callee else None
            if callee is not None and bound is not None:
                visit(callee, bound)

    visit(start, param)
    result.open_doors = resolve.open_doors
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.static_walk", description=__doc__)
    parser.add_argument("spec", nargs="?", default="pipeline/job.py:analyze:counts")
    parser.add_argument("--list", action="store_true", help="print the journey, entry by entry")
    parser.add_argument("--package", type=Path, default=PACKAGE, help="the package's folder")
    args = parser.parse_args(argv)
    run = walk(args.spec, read_package(args.package))
    figures = ", ".join(f"{k} {v}" for k, v in run.figures().items())
    print(f"{args.spec}: {figures}")
    print("folders:", " -> ".join(run.folders()))
    if args.list:
        for fn, name in run.entries:
            print(f"  {fn.module.replace('.', '/') or '__init__'}.py:{fn.qualname} as {name}")
        print("open doors:", ", ".join(sorted(run.open_doors)) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
