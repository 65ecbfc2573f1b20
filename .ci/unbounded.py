"""Print posgeom's requirements (the core and every extra `dev` pulls in) without their upper
bounds, one a line, for .ci/newest: the newest releases pip can find, torch held at CI's pin."""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    sys.exit(".ci/newest needs Python >= 3.11 (tomllib); run it with a newer python3")

TORCH = "torch==2.13.0"  # the CPU wheel CI installs first; never unpinned


def _expand(extra: str, extras: dict[str, list[str]], seen: set[str]) -> list[str]:
    out: list[str] = []
    for req in extras[extra]:
        match = re.fullmatch(r"posgeom\[([a-z,]+)\]", req)
        if match is None:
            out.append(req)
            continue
        for inner in match.group(1).split(","):
            if inner not in seen:
                seen.add(inner)
                out += _expand(inner, extras, seen)
    return out


def unbounded(requirement: str) -> str:
    """``name[extra]>=low,<high`` -> ``name[extra]>=low``; torch -> the CI pin."""
    name = re.match(r"[A-Za-z0-9_.\-\[\]]+", requirement).group(0)
    if name == "torch":
        return TORCH
    kept = [part for part in requirement[len(name) :].split(",") if part and "<" not in part]
    return name + ",".join(kept)


def main() -> None:
    project = tomllib.loads(Path(sys.argv[1]).read_text())["project"]
    reqs = project["dependencies"] + _expand("dev", project["optional-dependencies"], {"dev"})
    print("\n".join(dict.fromkeys(unbounded(r) for r in reqs)))


if __name__ == "__main__":
    main()
