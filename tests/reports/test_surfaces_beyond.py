"""One set of numbers behind every surface of the commands beyond the geometry (issue 37):
``extend`` (with ``--measure`` and ``--report``), checked like :mod:`test_surfaces` checks
``run`` / ``compare``: the terminal, ``table.md``, ``summary.json`` and the report's verdict,
tables and figures all carry the numbers ``summary.json`` stored once, and name one ranking.
"""

from __future__ import annotations

import contextlib
import html
import io
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from helpers.artifacts import strict_json  # noqa: E402
from helpers.models import WORDS, tiny_llama  # noqa: E402
from posgeom.cli.main import main  # noqa: E402


def _cli(*argv) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([*map(str, argv)])
    assert rc == 0, err.getvalue()[-2000:]
    return out.getvalue(), err.getvalue()


def _chain(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    s = list(rng.integers(0, 12, 2))
    for _ in range(n - 2):
        s.append((s[-1] + s[-2]) % 12 if rng.random() < 0.7 else int(rng.integers(0, 12)))
    return s


@pytest.fixture(scope="module")
def extend_run(tmp_path_factory):
    """extend on a tiny Llama with --measure (the 3 first by the ranking, plus none) and a
    report."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("surfaces_extend")
    folder = tiny_llama(root / "llama")["folder"]
    text = root / "book.txt"
    text.write_text(" ".join(WORDS[t] for t in _chain(1200, 3)))
    out = root / "ext"
    argv = ["extend", folder, text, "--target-length", 128, "--no-fit", "--replicates", 4]
    argv += ["--measure", "--windows", 2, "--measure-top", 3, "--report", "-o", out]
    printed, err = _cli(*argv)
    return {
        "out": out,
        "printed": printed,
        "err": err,
        "summary": strict_json(out / "summary.json"),
    }


def _report(folder):
    page = (folder / "report.html").read_text()
    box = re.search(r'<div class="verdict">(.*?)</div>', page, re.S).group(1)
    words = html.unescape(re.sub("<[^>]+>", "", box)).removeprefix("Verdict. ")
    tables = {
        html.unescape(h): t
        for h, t in re.findall(r"<h2>([^<]*)</h2>\s*<table>(.*?)</table>", page, re.S)
    }
    return page, words, tables


def _cells(table: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    return [[html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r)] for r in rows]


def test_extend_surfaces_carry_the_stored_numbers_and_one_ranking(extend_run):
    s, out = extend_run["summary"], extend_run["out"]
    ranking = s["rank_by"]
    names = [r["name"] for r in s["strategies"]]
    measured = {m["name"]: m for m in s["measurements"]["strategies"]}
    # one ranking, named the same on every surface: measured loss past L0 (lowest first)
    assert ranking.startswith("measured loss past L0")
    losses = [measured[n]["beyond_loss"] for n in names if n in measured]
    assert losses == sorted(losses) and set(names[: len(measured)]) == set(measured)
    table_md = (out / "table.md").read_text()
    assert f"Ranked by {ranking}." in table_md
    verdict_line = next(x for x in extend_run["printed"].splitlines() if x.startswith("verdict:"))
    assert f"table ranked by {ranking}" in verdict_line
    page, words, tables = _report(out)
    assert f"Ranked by {ranking}" in tables
    # the report's verdict box: the stored verdict lines, the measured place among them
    assert words == " ".join(s["verdict"])
    order = sorted(measured.values(), key=lambda m: m["beyond_loss"])
    place = [m["name"] for m in order].index(s["best"]) + 1
    said = f"the recommended {s['best']} placed {place} of {len(order)}"
    assert said in words and said in verdict_line and said in table_md
    # the report's ranked table: the stored order, lag stress and measured loss of each row
    rows = _cells(tables[f"Ranked by {ranking}"])
    head, body = rows[0], rows[1:]
    assert [r[head.index("strategy")] for r in body] == names
    for r, stored in zip(body, s["strategies"], strict=True):
        assert float(r[head.index("lag stress (scale-optimal)")]) == pytest.approx(
            stored["scores"]["scale_optimal"], rel=1e-3
        )
        loss = r[head.index("measured loss past L0")]
        if stored["name"] in measured:
            assert float(loss) == pytest.approx(measured[stored["name"]]["beyond_loss"], abs=1e-4)
        else:
            assert loss == "n/a"
    # the measured table: every measured strategy's stored loss
    (heading,) = [h for h in tables if h.startswith("Measured loss")]
    mrows = _cells(tables[heading])
    col = mrows[0].index("mean loss beyond L0")
    got = {r[0]: float(r[col]) for r in mrows[1:]}
    assert got == pytest.approx({n: m["beyond_loss"] for n, m in measured.items()}, abs=1e-4)
    # the score-vs-loss figure, one point per measured strategy
    assert 'id="fig-score_vs_loss"' in page
    # the cost and the held-out text were said before the forwards
    assert "forwards of up to 128 tokens" in extend_run["err"]
    assert s["measurements"]["heldout"] in words
