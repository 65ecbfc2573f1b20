"""One set of numbers behind every surface (issue 24, item 2).

Every command (``run``, ``geometry``, ``compare``, ``analyze-model``, ``score``, ``report``) runs
once on one corpus (a position-dependent text, a real WordLevel tokenizer and a tiny random BERT
that owns it: :mod:`helpers.models`), at one n, one target estimator and one coarse resolution
(``top:3``, so the estimate's token classes are not the plug-in's). Every surface is then checked
against the numbers the result stored once, the ``verdict.inputs`` of its summary JSON:

* the verdict line printed, stored and ending ``table.md`` / ``comparison.md``, and the report's
  verdict paragraph and settings: the same target, resolution, noise share and caveats;
* the score rows of the Markdown table and of the report's table: the stored rows;
* the heatmap: its shading is the mask whose share is the verdict's, its figure's label and its
  caption say that share; the MDS maps are the stored ``mds`` row's encoding of the shown ``D``;
* across commands: one target, one noise share, one ``mds`` for the same counts;
* ``P(first)`` in the rows is the candidates' statistic the verdict reads;
* ``score --target FOLDER/arrays.npz`` names the folder's stored target and resolution;
* a long context's intervals (sampled triples) are not called ranking stability.

Caveats are recomputed here from the stored rows by hand (baselines at most the closest
candidate, noise share below 0.3, no bootstrap).
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from scipy.spatial.distance import pdist, squareform  # noqa: E402

from helpers.models import positional_texts, tiny_bert  # noqa: E402
from posgeom.cli.main import main  # noqa: E402
from posgeom.encodings import is_candidate  # noqa: E402
from posgeom.reports.view import load_folder  # noqa: E402
from posgeom.text.verdict import one_line  # noqa: E402
from posgeom.text.verdict_inputs import (  # noqa: E402
    VerdictInputs,
    resolution_setting,
    target_phrase,
    trusted_pairs,
)

N, D, RES = 8, 16, "top:3"
FOLDERS = {  # command folder -> (summary, table)
    "run": ("summary.json", "table.md"),
    "geo": ("summary.json", "table.md"),
    "cmp": ("comparison.json", "comparison.md"),
    "am": ("summary.json", "table.md"),
}


def _cli(*argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["-q", *map(str, argv)])
    assert rc == 0, out.getvalue()[-2000:]
    return out.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every command once on the one corpus: stdout per command and the folders."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("surfaces")
    bert = tiny_bert(root / "bert")["folder"]
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(positional_texts(min_length=N)) + "\n")
    tok, counts = bert / "tokenizer.json", root / "c.npz"
    common = ("-d", D, "--resolution", RES)
    out = {"root": root}
    _cli("count", corpus, "-t", tok, "-n", N, "--bootstrap", 12, "-o", counts)
    out["run"] = _cli("run", corpus, "-t", tok, "-n", N, *common, "-o", root / "run")
    out["geo"] = _cli("geometry", counts, *common, "-o", root / "geo")
    out["cmp"] = _cli("compare", "--counts", counts, *common, "-o", root / "cmp")
    out["am"] = _cli(
        "analyze-model",
        bert,
        corpus,
        "-n",
        N,
        "--resolution",
        RES,
        "--bootstrap",
        12,
        "--no-plot",
        "-o",
        root / "am",
    )
    return out


def _stored(runs, name):
    summary_name, table = FOLDERS[name]
    folder = runs["root"] / name
    summary = json.loads((folder / summary_name).read_text())
    return folder, summary, VerdictInputs.from_dict(summary["verdict"]["inputs"]), table


def _geometry_block(summary):
    return summary.get("geometry", summary)


def _page(folder) -> str:
    """The report of ``folder``: its report.html when written, else the same page without the
    figures (:func:`render_html` of the folder's view; drawing figures is the slow part, and
    :func:`test_report_command_writes_the_same_numbers` checks the two agree)."""
    from posgeom.reports.html import render_html

    if (folder / "report.html").exists():
        return (folder / "report.html").read_text()
    view = load_folder(folder)
    return render_html(view, [(view, [])])


def _report_parts(folder):
    page = _page(folder)
    words = re.search(r'<div class="verdict">(.*?)</div>', page, re.S).group(1)
    settings = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", page))
    return page, html.unescape(re.sub("<[^>]+>", "", words)), settings


def _caveats_by_hand(vi):
    """(baseline does as well, mostly noise, stability measured) from the stored rows."""
    rows = {r["encoding"]: r for r in vi.rows if r.get("scale_optimal") is not None}
    cands = [r["scale_optimal"] for n, r in rows.items() if is_candidate(n)]
    base = [rows[b]["scale_optimal"] for b in ("random", "nope") if b in rows]
    as_good = bool(cands and base and min(base) <= min(cands))
    return as_good, vi.noise_share < 0.3, vi.uncertainty is not None


@pytest.mark.parametrize("name", list(FOLDERS))
def test_every_surface_reads_the_stored_numbers(runs, name):
    folder, summary, vi, table = _stored(runs, name)
    line = summary["verdict"]["line"]
    # the verdict: printed, stored, last line of the table (then the stored hints, as printed),
    # re-rendered from the stored inputs
    printed = [x for x in runs[name].splitlines() if x.startswith("verdict: ")]
    hints = [f"hint: {h}" for h in summary.get("hints", [])]
    tail = (folder / table).read_text().strip().splitlines()[-1 - len(hints) :]
    assert printed == [line] == tail[:1] and tail[1:] == hints
    assert line == one_line(vi)
    # one target: estimator and resolution where the geometry records them, in words everywhere
    geometry = _geometry_block(summary)
    assert vi.estimator == geometry["estimator"]["estimator"] == "corrected"
    assert vi.resolution == geometry["estimator"]["resolution"] == RES
    phrase = target_phrase(vi)
    assert RES in phrase and vi.classes and vi.classes in phrase  # the classes, in words
    assert phrase[0].lower() + phrase[1:] in line and phrase in (folder / table).read_text()
    page, words, settings = _report_parts(folder)
    assert f"{phrase}." in words
    assert settings["resolution"] == html.escape(resolution_setting(vi)) and RES in phrase
    assert settings["estimator"] == "corrected"
    # the noise share: the stored floor's, in the line, the report, the heatmap and its label
    share = geometry["noise_floor"]["trusted_pair_share"]
    assert vi.noise_share == share
    assert f"{100 * share:.0f}% of pairs above twice the noise floor" in line
    assert f"{100 * share:.0f}% of position pairs are farther apart" in words
    view = load_folder(folder)
    mask = trusted_pairs(view.arrays, view.verdict)
    assert mask[np.triu_indices(N, 1)].mean() == pytest.approx(share, abs=1e-12)
    from posgeom.reports.html import _figure_specs

    heat = next(spec for spec in _figure_specs(view) if spec[0] == "heatmap")
    label = heat[2]().axes[-2].get_xlabel()  # the matrix's axes (the colour bar is last)
    assert f"untrusted pair, {100 * (1 - share):.0f}% of pairs" in label
    assert f"the verdict's {100 * share:.0f}% are above it" in heat[1]
    # the maps draw the stored "mds": its coordinates reproduce its stored score against D
    rows = {r["encoding"]: r for r in vi.rows}
    coords, target = view.arrays["mds_coordinates"], view.arrays["hellinger"]
    delta, iu = squareform(pdist(coords)), np.triu_indices(N, 1)
    alpha = (delta[iu] @ target[iu]) / (delta[iu] @ delta[iu])
    so = ((alpha * delta[iu] - target[iu]) ** 2).sum() / (target[iu] ** 2).sum()
    assert so == pytest.approx(rows["mds"]["scale_optimal"], abs=1e-9)
    # the plug-in beside the estimate is another target, and every surface says which
    assert f"the coarser {RES} classes together" in words
    plug = next(spec for spec in _figure_specs(view) if spec[0] == "estimators")
    assert f"coarser {RES} classes (the plug-in: full vocabulary)" in plug[1]
    maps = next(spec for spec in _figure_specs(view) if spec[0] == "mds_2d")
    assert "MDS encoding of the target D above (the mds row)" in maps[1]
    # the score rows of table.md and of the report: the stored numbers
    md = (folder / table).read_text()
    for enc, row in rows.items():
        if row.get("scale_optimal") is None:
            continue
        cell = f"{row['scale_optimal']:.4g}"
        assert re.search(rf"^\| {re.escape(enc)} \|.*\| {re.escape(cell)} \|", md, re.M), enc
        assert f"<td>{html.escape(enc)}</td>" in page and f"<td class=n>{cell}</td>" in page
    assert "Scores against the corrected target" in page
    # the caveats, recomputed by hand, wherever the ranking appears
    as_good, noisy, measured = _caveats_by_hand(vi)
    assert ("baseline does as well" in line) == as_good == ("baseline does as well" in words)
    assert ("mostly sampling noise" in line) == noisy
    assert ("Most of the geometry is sampling noise" in words) == noisy
    if name not in ("am",):  # analyze-model's line names the best layer, its intervals are layers'
        assert ("stability not measured" in line) == (not measured)
        assert ("not measured" in words) == (not measured)


def test_the_commands_agree_on_one_corpus(runs):
    """The same counts, n, target and resolution: one D, one noise share, one mds."""
    stored = {name: _stored(runs, name) for name in FOLDERS}
    shares = {name: vi.noise_share for name, (_, _, vi, _) in stored.items()}
    assert len(set(shares.values())) == 1, shares
    mds = {
        name: next(r for r in vi.rows if r["encoding"] == "mds")
        for name, (*_, vi, _) in [(k, v) for k, v in stored.items()]
    }
    for name, row in mds.items():
        assert row["paper"] == pytest.approx(mds["cmp"]["paper"], rel=1e-9), name
    with np.load(runs["root"] / "cmp" / "arrays.npz", allow_pickle=False) as ref:
        for name in FOLDERS:
            with np.load(runs["root"] / name / "arrays.npz", allow_pickle=False) as a:
                np.testing.assert_allclose(a["hellinger"], ref["hellinger"], atol=1e-12)
                np.testing.assert_allclose(a["plugin_hellinger"], ref["plugin_hellinger"])
                assert "target" not in a  # hellinger is the target in every folder


def test_p_first_is_one_number(runs):
    summary = _stored(runs, "cmp")[1]
    first = summary["uncertainty"]["candidates"]["p_first"]
    for name, row in summary["scores"].items():
        if is_candidate(name):
            assert row["p_first"] == first[name], name
        else:
            assert "p_first" not in row, name
    assert sum(first.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["geo", "cmp", "am"])
def test_score_names_the_stored_target(runs, name):
    folder, _, vi, _ = _stored(runs, name)
    from posgeom.encodings import sinusoidal

    path = runs["root"] / f"sin_{name}.npy"
    np.save(path, sinusoidal(N, d=D).vectors)
    out = _cli("score", "--target", folder / "arrays.npz", path)
    line = next(x for x in out.splitlines() if x.startswith("verdict: "))
    phrase = target_phrase(vi)
    assert phrase[0].lower() + phrase[1:] in line and "not recorded" not in line
    if vi.noise_share is not None:  # the folder estimated its noise floor: score says its share
        assert "noise floor not estimated" not in line
        assert f"{100 * vi.noise_share:.0f}% of pairs above twice the noise floor" in line
    scores = {r["encoding"]: r for r in vi.rows}
    if "sinusoidal" in scores:  # the same encoding against the same stored target
        cell = f"{scores['sinusoidal']['scale_optimal']:.4g}"
        assert re.search(rf"^\| sin_{name} \|.*\| {re.escape(cell)} \|", out, re.M)
    plug = _cli("score", "--target", f"{folder / 'arrays.npz'}:plugin_hellinger", path)
    assert "plugin estimator, geometry of the full vocabulary" in plug


def test_sampled_triples_are_not_called_stability(runs, monkeypatch):
    """Above SAMPLED_ABOVE the rows' intervals are the error of sampled triples: the verdict says
    what they measure and that the ranking's stability over another corpus sample is not."""
    import posgeom.embed.refine as refinement
    import posgeom.scores.table as score_table

    monkeypatch.setattr(score_table, "SAMPLED_ABOVE", 5)
    monkeypatch.setattr(refinement, "REFINE_MAX_N", 5)
    folder = runs["root"] / "sampled"
    counts = runs["root"] / "c.npz"
    _cli(
        "compare",
        "--counts",
        counts,
        "-d",
        D,
        "--resolution",
        RES,
        "-o",
        folder,
        "--encodings",
        "sinusoidal,rope,t5,random",
    )
    summary = json.loads((folder / "comparison.json").read_text())
    vi = VerdictInputs.from_dict(summary["verdict"]["inputs"])
    assert vi.interval_source == "sampled_triples" and vi.uncertainty is None
    assert all(r.get("sampled") for r in summary["scores"].values())
    line = summary["verdict"]["line"]
    assert "sampled-triples intervals" in line and "stability over another corpus sample" in line
    from posgeom.text.verdict import verdict

    words = " ".join(verdict(load_folder(folder)))
    assert "The ranking is stable" not in words and "another sample of the corpus" in words


def test_model_figure_labels_its_lines_with_their_target(runs):
    """The per-layer figure's horizontal lines are the learned table's and the target's MDS
    scores against the target the layers are scored against (not the plug-in's), and say so."""
    import matplotlib.pyplot as plt

    from posgeom.models.analysis import analyze_model
    from posgeom.models.plots import layers_figure

    bert = runs["root"] / "bert"
    texts = positional_texts(min_length=N)
    result = analyze_model(
        str(bert), str(bert), texts, max_positions=N, resolution=RES, bootstrap=None
    )
    fig = layers_figure(result)
    lines = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].get_lines()}
    plt.close(fig)
    scores, plugin = result.geometry.scores, result.plugin_scores
    table = lines["learned position table (target: corrected)"]
    mds = lines["MDS encoding of D (target: corrected)"]
    assert table[0] == scores["learned"]["scale_optimal"] != plugin["learned"]["scale_optimal"]
    assert mds[0] == scores["mds"]["scale_optimal"]
    # the same numbers as the stored analysis of the command (same corpus, n, target, classes)
    stored = {r["encoding"]: r for r in _stored(runs, "am")[2].rows}
    assert table[0] == pytest.approx(stored["learned"]["scale_optimal"], rel=1e-12)


@pytest.mark.e2e
def test_report_command_writes_the_same_numbers(runs, tmp_path):
    """``posgeom report FOLDER`` (figures drawn: the slow part) writes the verdict, settings and
    tables that the checks above read from the figure-free page, for every command's folder."""
    for name in FOLDERS:
        folder = runs["root"] / name
        page = _page(folder)
        path = tmp_path / f"{name}.html"
        _cli("report", folder, "-o", path)
        written = path.read_text()
        for part in (r'<div class="verdict">.*?</div>', r"<h2>Settings</h2><table>.*?</table>"):
            assert re.search(part, written, re.S).group(0) == re.search(part, page, re.S).group(0)
        tables = re.findall(r"<h2>Scores against.*?</table>", page, re.S)
        assert tables and all(t in written for t in tables), name
        assert "fig-heatmap" in written and "fig-mds_2d" in written, name


def test_every_json_file_is_strict_json(runs):
    """Every JSON file the commands wrote (summaries, manifests, sidecars) parses with a strict
    parser: no bare NaN or Infinity (an undefined number is null)."""
    from helpers.artifacts import strict_json

    files = sorted(runs["root"].rglob("*.json"))
    assert len(files) >= 4
    for f in files:
        strict_json(f)
