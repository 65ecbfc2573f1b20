"""The MDS rows are named once: ``posgeom.pipeline.rows.MDS_ROW`` / ``SMACOF_ROW`` / ``MDS_ROWS``,
spelled only as their families' ``name`` (``posgeom.encodings.mds``). Checked by derivation: the
names are read from the constants, and the syntax tree of every module of ``src/`` and
``studies/`` is searched for a string equal to one of them (``benchmarks/`` is the performance
work's own and reads rows by its own names)."""

from __future__ import annotations

import ast
from pathlib import Path

from posgeom.encodings import family
from posgeom.encodings.mds import MDSFamily, SMACOFFamily
from posgeom.pipeline.rows import MDS_ROW, MDS_ROWS, SMACOF_ROW

ROOT = Path(__file__).resolve().parents[2]
TREES = ("src", "studies")
HOME = Path("src/posgeom/encodings/mds.py")


def _spelled(source: str, names: tuple[str, ...]) -> list[int]:
    """Lines where ``source`` writes one of ``names`` as a string, except a family's ``name = ...``
    (the one spelling) and ``__all__`` (Python names, such as the function ``mds``)."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("name", "__all__") for t in node.targets
        ):
            allowed |= {id(c) for c in ast.walk(node.value)}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in allowed
    ]


def test_the_rows_are_the_families_names():
    assert MDS_ROWS == (MDS_ROW, SMACOF_ROW) == (MDSFamily.name, SMACOFFamily.name)
    assert isinstance(family(MDS_ROW), MDSFamily) and isinstance(family(SMACOF_ROW), SMACOFFamily)


def test_the_finder_sees_a_literal():
    probe = f'x = {MDS_ROW!r}\nscores.get(f"{SMACOF_ROW}")\n__all__ = [{MDS_ROW!r}]\n'
    probe += f"class F:\n    name = {MDS_ROW!r}\n"
    assert _spelled(probe, MDS_ROWS) == [1, 2]


def test_no_module_spells_the_mds_rows():
    files = sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))
    assert len(files) > 100 and ROOT / HOME in files, "the walk lost the package"
    bad = {
        str(p.relative_to(ROOT)): lines
        for p in files
        if (lines := _spelled(p.read_text(encoding="utf-8"), MDS_ROWS))
    }
    assert not bad, f"spell MDS_ROW / SMACOF_ROW / MDS_ROWS (posgeom.pipeline.rows): {bad}"
    home = (ROOT / HOME).read_text(encoding="utf-8")
    assert home.count(f'name = "{MDS_ROW}"') == home.count(f'name = "{SMACOF_ROW}"') == 1
