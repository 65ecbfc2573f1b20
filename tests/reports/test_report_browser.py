"""The HTML reports in a real browser: headless Chromium loads the report of the demo and of a
small comparison with no console error and no network request, and renders a non-blank page.

Chromium comes from Debian's ``chromium`` package (``.ci/run`` installs it when missing and sets
``POSGEOM_REQUIRE_BROWSER=1``, so in CI a missing browser fails instead of skipping).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cdp_client import chromium_page, find_chromium, load_and_watch

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = find_chromium()
    if exe is None:
        if os.environ.get("POSGEOM_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required here (POSGEOM_REQUIRE_BROWSER=1) but not on PATH")
        pytest.skip("chromium is not installed (.ci/run installs it: apt-get install chromium)")
    return exe


def _posgeom(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    subprocess.run([sys.executable, "-m", "posgeom.cli.main", "-q", *args], check=True, env=env)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    _posgeom("demo", "-o", str(root / "demo"), "--report")
    _posgeom(
        "compare",
        "--counts",
        str(root / "demo" / "counts.npz"),
        "-n",
        "16",
        "-d",
        "32",
        "-o",
        str(root / "compare"),
        "--report",
    )
    return {"demo": root / "demo" / "report.html", "compare": root / "compare" / "report.html"}


def _not_blank(png: bytes) -> tuple[float, float]:
    """(share of non-white pixels, standard deviation of the grey levels) of a PNG screenshot."""
    from matplotlib import image

    img = image.imread(io.BytesIO(png), format="png")[..., :3]
    grey = img.mean(axis=2)
    return float(np.mean(grey < 0.97)), float(grey.std())


@pytest.mark.e2e  # a headless Chromium per report: CI's second pass
@pytest.mark.parametrize("name", ["demo", "compare"])
def test_report_loads_offline_without_errors(chromium, reports, name, tmp_path):
    url = reports[name].resolve().as_uri()
    with chromium_page(chromium) as page:
        seen = load_and_watch(page, url)
    assert seen["errors"] == []
    outside = [u for u in seen["requests"] if not (u == url or u.startswith("data:"))]
    assert outside == []  # nothing but the file itself and its inline data: URIs
    ink, spread = _not_blank(seen["screenshot"])
    assert ink > 0.05 and spread > 0.05  # figures and text were drawn
    (tmp_path / f"{name}.png").write_bytes(seen["screenshot"])  # for a look; never committed
