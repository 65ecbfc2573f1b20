"""The paper's reproduction (Cirrincione, arXiv 2604.05217): regenerates ``docs/REPRODUCTION.md``
and ``docs/reproduction/``.

    python -m studies.reproduction [--data ../shared/data] [-- any other flag of posgeom reproduce]

The code is :mod:`posgeom.reproduction`, inside the package, because ``posgeom reproduce`` is a
command users run on their own machine (a pip-installed posgeom has no ``studies/`` folder); this
entry point only runs that command with the committed page's settings (``-o docs --overwrite``),
so the page is regenerated the way it says it is.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from studies._common import DATA, DOCS


def command(data: Path, out: Path, extra: list[str]) -> list[str]:
    """The ``posgeom`` arguments that regenerate the page under ``out`` from the corpora in
    ``data``."""
    return ["reproduce", "--data", str(data), "-o", str(out), "--overwrite", *extra]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m studies.reproduction",
        description=__doc__.split("\n")[0],
        epilog="Arguments after -- go to posgeom reproduce (e.g. -- --report).",
    )
    ap.add_argument("--data", type=Path, default=DATA, help="the shared corpora")
    ap.add_argument("--out", type=Path, default=DOCS, help="the folder of REPRODUCTION.md")
    args, extra = ap.parse_known_args(argv)
    from posgeom.cli.main import main as posgeom

    return posgeom(command(args.data, args.out, [a for a in extra if a != "--"]))


if __name__ == "__main__":
    raise SystemExit(main())
