"""What every study shares: the repository's folders and the JSON-lines reader.

Studies run from the repository root (``python -m studies.<name>``); they read the corpora under
``$POSGEOM_DATA`` (default ``../shared/data``, beside the checkout) and keep recomputable caches
under ``studies/.cache`` (not committed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: the repository root (the folder holding ``studies/``, ``docs/`` and ``src/``)
ROOT = Path(__file__).resolve().parents[1]
#: the docs pages and their data files
DOCS = ROOT / "docs"
#: the shared corpora (``$POSGEOM_DATA``, default ``<root>/../shared/data``)
DATA = Path(os.environ.get("POSGEOM_DATA", ROOT.parent / "shared" / "data"))
#: recomputable intermediate files (token matrices, trained models), never committed
CACHE = ROOT / "studies" / ".cache"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, one dict per non-empty line; ``[]`` when it is absent."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
