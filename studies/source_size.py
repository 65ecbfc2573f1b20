"""How large the package's source is, by folder and by kind of line, now and at a git revision.

Issue 35 asks for a ``src/`` that is smaller, "not only moved". A bare ``wc -l`` cannot tell a
cut in code from a cut in documentation or blank lines, so this study sorts every line of every
``.py`` file under ``src/posgeom`` into one kind:

- **doc**: inside a docstring (the first statement of a module, class or function, when it is a
  string literal; :mod:`ast` decides, so a multi-line string elsewhere is code);
- **comment**: a line whose first non-blank character is ``#``;
- **blank**: only white space;
- **code**: every other line (a trailing comment after code still makes it code).

Lines are counted per folder (``posgeom/<folder>/``, its subfolders included; the package root's
own modules as ``(root)``). ``--base REV`` reads the same files at a git revision (``git ls-tree``
and ``git show``, nothing checked out) and prints both with the difference.

``--set-aside FILE`` (with ``--base``) also says who wrote today's lines: ``git blame -w -M -C -C``
names, for every line of the package, the commit that wrote it, following a line moved or copied
from another file back to where it was first written. Each line is then *before the base* (its
commit is the base or an ancestor), *set aside* (its commit is listed in FILE: work of other
issues since the base, one hash a line, ``#`` comments allowed) or *since the base* (the rest).
Today's lines less the set-aside ones compare like for like with the base's: a feature added since
by other work is not counted against a clean-up. A line one commit wrote and a later one rewrote
counts for the later one.

Run: ``python -m studies.source_size [--base REV [--set-aside FILE]]``. The figures of issue 35
are in ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from studies._common import ROOT

KINDS = ("code", "doc", "comment", "blank")
PACKAGE = "src/posgeom"


def line_kinds(source: str) -> Counter[str]:
    """The number of lines of each kind in one module's source (module docstring above)."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            docs.update(range(first.lineno, first.end_lineno + 1))
    kinds: Counter[str] = Counter(dict.fromkeys(KINDS, 0))
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if not text:
            kinds["blank"] += 1
        elif number in docs:
            kinds["doc"] += 1
        elif text.startswith("#"):
            kinds["comment"] += 1
        else:
            kinds["code"] += 1
    return kinds


def folder_of(path: str) -> str:
    """``posgeom/<folder>/...`` -> ``<folder>``; a module of the package root -> ``(root)``."""
    parts = Path(path).relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else "(root)"


def by_folder(sources: Iterable[tuple[str, str]]) -> dict[str, Counter[str]]:
    """``(path under the repository, source)`` pairs -> line kinds per folder, plus ``modules``."""
    out: dict[str, Counter[str]] = {}
    for path, source in sources:
        kinds = out.setdefault(folder_of(path), Counter(dict.fromkeys((*KINDS, "modules"), 0)))
        kinds.update(line_kinds(source))
        kinds["modules"] += 1
    return out


def working_tree(root: Path = ROOT) -> Iterable[tuple[str, str]]:
    """The package's modules as they are on disk."""
    for path in sorted((root / PACKAGE).rglob("*.py")):
        yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def at_revision(rev: str, root: Path = ROOT) -> Iterable[tuple[str, str]]:
    """The package's modules at git revision ``rev``, read with ``git show``."""
    names = _git(root, "ls-tree", "-r", "--name-only", rev, "--", PACKAGE).splitlines()
    for name in sorted(n for n in names if n.endswith(".py")):
        yield name, _git(root, "show", f"{rev}:{name}")


def line_authors(root: Path = ROOT) -> Counter[str]:
    """The number of the package's lines (``HEAD``) each commit wrote, by ``git blame -w -M -C
    -C`` (module docstring)."""
    authors: Counter[str] = Counter()
    names = _git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", PACKAGE).splitlines()
    for path in (n for n in names if n.endswith(".py")):
        blame = _git(root, "blame", "--line-porcelain", "-w", "-M", "-C", "-C", "HEAD", "--", path)
        authors.update(
            line.split(" ", 1)[0]
            for line in blame.splitlines()
            if len(line) > 41 and line[40] == " " and _is_hash(line[:40])
        )
    return authors


def attribution(base: str, set_aside: set[str], root: Path = ROOT) -> dict[str, int]:
    """Today's lines as ``before base``, ``set aside`` and ``since base`` (module docstring)."""
    before = set(_git(root, "rev-list", base).split())
    out = dict.fromkeys(("before base", "set aside", "since base"), 0)
    for commit, lines in line_authors(root).items():
        key = "before base" if commit in before else "since base"
        out["set aside" if commit in set_aside else key] += lines
    return out


def read_set_aside(path: Path) -> set[str]:
    """The commit hashes of a set-aside file (the first word of each line; ``#``: a comment)."""
    words = (line.split() for line in path.read_text(encoding="utf-8").splitlines())
    return {w[0] for w in words if w and not w[0].startswith("#")}


def _is_hash(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def table(now: Mapping[str, Counter[str]], base: Mapping[str, Counter[str]] | None = None) -> str:
    """A Markdown table, one row a folder (largest first) and a total row; with ``base``, each
    cell reads ``base -> now``."""
    folders = sorted(set(now) | set(base or {}), key=lambda f: -sum(_lines(now.get(f))))
    head = ["folder", "lines", *KINDS, "modules"]
    rows = [head, ["---"] * len(head)]
    total_now, total_base = Counter(), Counter()
    for folder in folders:
        total_now.update(now.get(folder, Counter()))
        total_base.update((base or {}).get(folder, Counter()))
        rows.append([folder, *_cells(now.get(folder), (base or {}).get(folder), base is not None)])
    rows.append(["**total**", *_cells(total_now, total_base, base is not None)])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def _lines(kinds: Counter[str] | None) -> list[int]:
    return [(kinds or Counter())[k] for k in KINDS]


def _cells(now: Counter[str] | None, base: Counter[str] | None, compare: bool) -> list[str]:
    now, base = now or Counter(), base or Counter()
    values_now = [sum(_lines(now)), *_lines(now), now["modules"]]
    values_base = [sum(_lines(base)), *_lines(base), base["modules"]]
    if not compare:
        return [f"{v:,}" for v in values_now]
    return [f"{b:,} -> {n:,}" for b, n in zip(values_base, values_now, strict=True)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a git revision to compare with (e.g. a commit hash)")
    parser.add_argument("--set-aside", type=Path, help="commits of other work since --base")
    args = parser.parse_args(argv)
    now = by_folder(working_tree())
    base = by_folder(at_revision(args.base)) if args.base else None
    print(table(now, base))
    if args.base and args.set_aside:
        lines = attribution(args.base, read_set_aside(args.set_aside))
        total, aside = sum(lines.values()), lines["set aside"]
        print("\n" + ", ".join(f"{k}: {v:,}" for k, v in lines.items()))
        print(f"today less the set-aside lines: {total - aside:,} (all lines: {total:,})")


if __name__ == "__main__":
    main()
