"""One set of numbers behind every surface of the commands beyond the geometry (issue 37):
``extend`` (with ``--measure`` and ``--report``), checked like :mod:`test_surfaces` checks
``run`` / ``compare``: the terminal, ``table.md``, ``summary.json`` and the report's verdict,
tables and figures all carry the numbers ``summary.json`` stored once, and name one ranking;
``analyze-model`` and ``probe`` the same for their intervals, ties, names and target. (e2e: the
three commands with reports take about a minute on two cores; CI runs ``pytest -m e2e``.)
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
from helpers.models import WORDS, positional_texts, tiny_llama  # noqa: E402
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


@pytest.mark.e2e  # three commands with reports: about a minute on 2 cores
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


N = 8


@pytest.fixture(scope="module")
def model_runs(tmp_path_factory):
    """analyze-model (with intervals and a report) and probe (with a report) on one tiny BERT
    and one corpus whose position 0 is always [CLS]."""
    from helpers.models import tiny_bert

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("surfaces_models")
    tiny = tiny_bert(root / "bert")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(positional_texts(min_length=N)) + "\n")
    argv = ["analyze-model", tiny["folder"], corpus, "-n", N, "--resolution", "top:3"]
    am, _ = _cli(*argv, "--bootstrap", 12, "--no-plot", "--report", "-o", root / "am")
    argv = ["-q", "probe", tiny["folder"], corpus, "-n", N, "--seeds", 2, "--pairs", 64]
    pr, _ = _cli(*argv, "--per-position", 40, "--report", "-o", root / "pr")
    return {"root": root, "am": am, "pr": pr, "tiny": tiny}


def _ties(rows, key, low, high):
    """The lowest row's name and the rows whose interval reaches below its upper bound."""
    best = min(rows, key=key)
    return best, [r for r in rows if r is not best and low(r) <= high(best)]


@pytest.mark.e2e  # three commands with reports: about a minute on 2 cores
def test_analyze_model_surfaces_carry_intervals_ties_names_and_the_hint(model_runs):
    folder = model_runs["root"] / "am"
    s = strict_json(folder / "summary.json")
    layers = s["layers"]
    key = "stress_scale_optimal"
    # every surface's layer table carries the stored per-layer intervals
    table_md = (folder / "table.md").read_text()
    _, words, tables = _report(folder)
    rows = _cells(tables["Layer by layer"])
    head = rows[0]
    col = next(i for i, h in enumerate(head) if h.startswith("scale_optimal") and "interval" in h)
    for r, stored in zip(rows[1:], layers, strict=True):
        want = f"[{stored[key + '_low']:.4g}, {stored[key + '_high']:.4g}]"
        assert r[col] == want and f"| {want} |" in table_md
    # "best layer" only when separated: the tied set, computed here from the stored intervals
    best, ties = _ties(
        layers, lambda r: r[key], lambda r: r[key + "_low"], lambda r: r[key + "_high"]
    )
    verdict = next(x for x in model_runs["am"].splitlines() if x.startswith("verdict:"))
    if ties:
        named = ", ".join(str(x) for x in [best["layer"], *(r["layer"] for r in ties)])
        assert f"closest in shape at layers {named} (tied:" in verdict
        assert f"closest in shape at layers {named} (tied:" in words.lower()
    else:
        assert f"closest in shape at layer {best['layer']} (" in verdict
    # every encoding row has its real description and parameter count
    d = 16  # tiny_bert's width
    enc = s["geometry"]["scores"]
    for name in ("learned", "sinusoidal", "random"):
        assert name in enc and enc[name].get("description", "") != "user encoding"
    md_rows: dict[str, list[str]] = {}  # the encodings table's rows (the plug-in table after)
    for line in table_md.splitlines():
        if line.startswith(("| learned", "| random")):
            md_rows.setdefault(line.split("|")[1].strip(), line.split("|"))
    assert "learned table of embeddings.position_embeddings.weight" in table_md
    assert md_rows["learned"][-3].strip() == md_rows["random"][-3].strip() == str(N * d)
    # the [CLS] hint run and compare give
    assert "hint: position 0 stands apart (a [CLS] or BOS token?)" in model_runs["am"]


@pytest.mark.e2e  # three commands with reports: about a minute on 2 cores
def test_probe_surfaces_record_the_target_and_say_the_title_once(model_runs):
    from posgeom.probes.result import layer_figure

    folder = model_runs["root"] / "pr"
    s = strict_json(folder / "summary.json")
    target = s["options"]["target"]
    assert target["estimator"] and target["resolution"] and target["classes"]
    assert any(target["classes"] in w for w in s["verdict"])
    page = (folder / "report.html").read_text()
    title = f"Position probes: {s['source']}"
    assert page.count(f"<h1>{title}</h1>") == 1 and page.count(f">{title}</h2>") == 0
    assert str(model_runs["root"]) not in page and str(model_runs["root"]) not in s["source"]
    # the best layer only when its interval separates it
    rows = s["layers"]
    best, ties = _ties(
        rows,
        lambda r: r["linear_mae"]["estimate"],
        lambda r: r["linear_mae"]["low"],
        lambda r: r["linear_mae"]["high"],
    )
    said = next(w for w in s["verdict"] if w.startswith("Position is read best"))
    if ties:
        assert said.startswith(f"Position is read best at layers {best['layer']}, ")
    else:
        assert said.startswith(f"Position is read best at layer {best['layer']} (")
    # stress and R² on separate axes
    fig = layer_figure(s)
    labels = {ax.get_ylabel() for ax in fig.axes}
    assert {"scale-optimal stress (vs corpus)", "R² of position"} <= labels


@pytest.mark.e2e  # three commands with reports: about a minute on 2 cores
def test_probe_surfaces_carry_the_stress_intervals_ties_and_noise_share(model_runs):
    from posgeom.probes.api import BOOTSTRAP
    from posgeom.probes.result import layer_figure

    folder = model_runs["root"] / "pr"
    s = strict_json(folder / "summary.json")
    key = "stress_scale_optimal"
    rows = s["layers"]
    assert s["options"]["bootstrap"] == BOOTSTRAP and s["options"]["level"] == 0.95
    table_md = (folder / "table.md").read_text()
    _, words, _ = _report(folder)
    page = (folder / "report.html").read_text()
    table = re.search(r"<h3>Layer by layer</h3>\s*<table>(.*?)</table>", page, re.S).group(1)
    cells = _cells(table)
    col = cells[0].index("stress interval")
    for r, stored in zip(cells[1:], rows, strict=True):
        assert stored[key + "_low"] <= stored[key] <= stored[key + "_high"]
        want = f"[{stored[key + '_low']:.4g}, {stored[key + '_high']:.4g}]"
        assert r[col] == want and f"| {want} |" in table_md
    best, ties = _ties(
        rows, lambda r: r[key], lambda r: r[key + "_low"], lambda r: r[key + "_high"]
    )
    if ties:
        named = ", ".join(str(x) for x in [best["layer"], *(r["layer"] for r in ties)])
        said = f"closest in shape at layers {named} (tied:"
    else:
        said = f"closest in shape at layer {best['layer']} ("
    assert said in words and said in table_md and said in model_runs["pr"]
    share = s["options"]["target"]["noise_share"]
    assert 0.0 <= share <= 1.0
    assert f"{100 * share:.0f}% of its position pairs are above twice their noise floor" in words
    # the figure shades the stored interval around the stress
    fig = layer_figure(s)
    ax = next(a for a in fig.axes if a.get_ylabel() == "scale-optimal stress (vs corpus)")
    (band,) = ax.collections
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    assert np.isclose(ys.min(), min(r[key + "_low"] for r in rows))
    assert np.isclose(ys.max(), max(r[key + "_high"] for r in rows))


def test_probe_stress_intervals_and_noise_share_are_analyze_models():
    """On one model, corpus and seed, probe's per-layer stress, intervals and noise share are
    those analyze-model computes (its own layer pass, pipeline target and noise floor)."""
    import tempfile
    from pathlib import Path

    import posgeom
    from helpers.models import tiny_bert
    from posgeom.models.analysis import analyze_model

    torch.set_num_threads(1)
    texts = positional_texts(24, min_length=N, seed=5)  # thin: some pairs below their noise floor
    with tempfile.TemporaryDirectory() as tmp:
        tiny = tiny_bert(Path(tmp) / "bert")
        pr = posgeom.probe(
            tiny["folder"], texts, n=N, kinds=["linear"], table_probes=False, bootstrap=12
        )
        am = analyze_model(tiny["folder"], tiny["folder"], texts, max_positions=N, bootstrap=12)
    want = am.summary()
    key = "stress_scale_optimal"
    for got, ref in zip(pr.summary()["layers"], want["layers"], strict=True):
        for k in (key, key + "_low", key + "_high"):
            assert got[k] == pytest.approx(ref[k], rel=1e-9, abs=1e-12)
    share = pr.options["target"]["noise_share"]
    assert share == want["geometry"]["noise_floor"]["trusted_pair_share"]
    assert 0.0 < share < 1.0


@pytest.mark.e2e  # three commands with reports: about a minute on 2 cores
def test_analyze_model_cls_hint_is_stored_once_and_on_every_surface(model_runs):
    folder = model_runs["root"] / "am"
    s = strict_json(folder / "summary.json")
    # the hint's rule, computed here from the stored target distances: position 0 farthest from
    # every other position while the others are not
    from posgeom.io.artifacts import load_artifact

    d = np.asarray(load_artifact(folder / "arrays.npz")[0]["hellinger"], dtype=np.float64)
    top = d.max()
    means = (d.sum(axis=1) - np.diag(d)) / (d.shape[0] - 1)
    assert d[0, 1:].min() >= 0.99 * top and np.median(means[1:]) < 0.95 * top
    hint = "position 0 stands apart (a [CLS] or BOS token?): rerun with --no-special"
    assert s["hints"] == [hint] and s["verdict"]["inputs"]["hints"] == [hint]
    assert (folder / "table.md").read_text().count(f"hint: {hint}") == 1
    assert model_runs["am"].count(f"hint: {hint}") == 1
    _, words, _ = _report(folder)
    assert f"Hint: {hint}." in words
