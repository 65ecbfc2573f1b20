"""HTML reports: from result objects and folders, with missing parts named, errors as one line."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import posgeom
from posgeom._errors import PosgeomError
from posgeom.cli.main import main
from posgeom.reports import report
from posgeom.reports.view import load_folder, view_of
from posgeom.text.markdown import score_table

pytest.importorskip("matplotlib")
REPO = Path(__file__).resolve().parents[2]


def _external_refs(page: str) -> list[str]:
    """Every src/href that is not an inline data: URI or an in-page anchor."""
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    return [r for r in refs if not r.startswith(("data:", "#"))]


@pytest.mark.e2e  # draws every figure of a full report: CI's second pass
def test_comparison_report_is_self_contained(comparison, tmp_path):
    path = report(comparison, tmp_path / "cmp.html")
    page = path.read_text()
    assert _external_refs(page) == []
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert page.count('src="data:image/svg+xml;base64,') >= 7
    for row in comparison.table:  # every encoding of the table is a row of the HTML table
        assert f"<td>{row['encoding']}</td>" in page
    assert "Verdict." in page and "How to read this" in page
    assert comparison.counts_info["fingerprint"] in page
    figs = sorted(p.name for p in (tmp_path / "cmp_figures").iterdir())
    stems = {p.rsplit(".", 1)[0] for p in figs if p.endswith((".png", ".svg"))}
    # a map per dimension the geometry has: the 3-D map only when MDS keeps 3 non-zero columns
    dims = comparison.mds.nonzero_coordinates.shape[1]
    assert dims >= 2
    assert {
        "heatmap",
        "spectrum",
        "mds_2d",
        "stress",
        "rank_curve",
        "shepard",
        "alibi_heads",
    } <= stems
    assert ("mds_3d" in stems) == (dims >= 3)
    assert all(f"{s}.png" in figs and f"{s}.svg" in figs for s in stems)


def test_folder_view_equals_object_view(comparison, tmp_path):
    comparison.save(tmp_path / "c")
    a, b = view_of(comparison), load_folder(tmp_path / "c")
    assert [r["encoding"] for r in a.rows] == [r["encoding"] for r in b.rows]
    np.testing.assert_allclose([r["paper"] for r in a.rows], [r["paper"] for r in b.rows])
    np.testing.assert_array_equal(a.arrays["hellinger"], b.arrays["hellinger"])
    assert sorted(a.arrays) == sorted(b.arrays)
    assert b.missing == ("counts.npz: the counts (a rerun needs the corpus)",)


@pytest.mark.e2e  # draws every figure of a full report: CI's second pass
def test_pipeline_result_reports_and_displays(pipeline_result, tmp_path):
    frag = pipeline_result._repr_html_()
    assert frag.startswith('<div class="posgeom-report">') and "<html" not in frag
    style = frag.split("<style>", 1)[1].split("</style>", 1)[0]
    rules = [r for r in style.splitlines() if r.strip()]
    assert rules and all(
        r.startswith(".posgeom-report") for r in rules
    )  # the notebook keeps its style
    for name in pipeline_result.scores:
        assert f"<td>{name}</td>" in frag
    page = posgeom.report(pipeline_result, tmp_path / "r.html").read_text()
    assert _external_refs(page) == []


def test_report_without_arrays_shows_the_tables_and_names_what_is_missing(comparison, tmp_path):
    folder = comparison.save(tmp_path / "c")
    (folder / "arrays.npz").unlink()
    page = report(folder).read_text()
    assert "arrays.npz: the heatmap" in page  # named as missing
    assert "fig-heatmap" not in page and "fig-stress" in page and "fig-rank_curve" in page
    assert "<td>sinusoidal</td>" in page


def test_report_on_damaged_arrays_names_the_damage(comparison, tmp_path):
    folder = comparison.save(tmp_path / "c")
    data = (folder / "arrays.npz").read_bytes()
    (folder / "arrays.npz").write_bytes(data[: len(data) // 2])  # a truncated copy
    view = load_folder(folder)
    named = ("arrays.npz could not be read", "arrays.npz changed since posgeom wrote it")
    assert view.arrays == {} and any(m.startswith(named) for m in view.missing)
    assert view.rows  # comparison.json is still read


def test_report_files_join_the_folder_manifest(comparison, comparison_folder_report, tmp_path):
    from posgeom.io._results import RESULTS_MANIFEST

    folder = shutil.copytree(comparison_folder_report[0], tmp_path / "c")
    listed = json.loads((folder / RESULTS_MANIFEST).read_text())["files"]
    assert "report.html" in listed and "report_figures/heatmap.svg" in listed
    comparison.save(folder, overwrite=True)  # still a posgeom folder: replaced, report included
    assert not (folder / "report.html").exists()


def test_the_reproduction_folder_is_read_as_one():
    view = load_folder(REPO / "docs")
    assert view.kind == "reproduce"
    assert {p.title for p in view.parts} >= {"sst2_sentence", "imdb", "synthetic"}
    assert view.missing == ()  # nothing of a reproduction is missing: no "Not in this folder" box
    assert any("keeps no distance matrices" in note for note in view.notes)


@pytest.mark.e2e
def test_report_of_the_reproduction_folder(tmp_path):
    page = report(REPO / "docs", tmp_path / "repro.html").read_text()
    assert page.count("<h2>reproduction") == 0 and "sst2_sentence" in page
    assert "Not in this folder" not in page and "keeps no distance matrices" in page
    # the claim tables of REPRODUCTION.md ("paper vs ours", "does the conclusion survive")
    md = (REPO / "docs" / "REPRODUCTION.md").read_text()
    for heading in ("The paper's claims, ours beside them", "Which conclusions survive"):
        assert heading in md and html.escape(heading) in page
    claims = md.split("## The paper's claims")[1].split("## Which settings")[0]
    rows = [line for line in claims.splitlines() if line.startswith("| ")]
    assert len(rows) > 20
    for line in rows:  # every cell of both tables is in the page, escaped
        for c in line.strip().strip("|").split(" | "):
            assert html.escape(c.strip()) in page, c
    assert (tmp_path / "repro_figures" / "sst2_sentence_stress.svg").exists()


def test_markdown_tables_are_one_renderer(pipeline_result, comparison):
    rows = score_table(pipeline_result.scores)
    assert rows[0].startswith("| encoding | paper stress |")
    assert "\n".join(rows) in pipeline_result.markdown()
    assert "\n".join(score_table(comparison.table)) in comparison.markdown()


def test_cli_report_missing_parts_and_errors(comparison, tmp_path, capsys):
    folder = comparison.save(tmp_path / "c")
    (folder / "comparison.md").unlink()
    assert main(["report", str(folder)]) == 0
    assert (folder / "report.html").exists() and (folder / "report_figures").is_dir()
    out = capsys.readouterr().out
    assert "not in" in out and "comparison.md: the Markdown table" in out
    # an empty folder: one line, exit 2
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds none of the results files" in err[0]
    # an unwritable output path (its parent is a file): one line, exit 2 (a folder without
    # arrays: fewer figures to draw before the write fails)
    (folder / "arrays.npz").unlink()
    (tmp_path / "file").write_text("x")
    assert main(["report", str(folder), "-o", str(tmp_path / "file" / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("posgeom: error: cannot write")


def test_report_of_a_non_result_is_refused():
    with pytest.raises(PosgeomError, match="cannot report"):
        view_of(np.zeros(3))
    with pytest.raises(PosgeomError, match="does not exist"):
        load_folder("/nonexistent/folder")


@pytest.mark.e2e
def test_run_and_compare_report_flags(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    rng = np.random.default_rng(0)
    corpus.write_text("\n".join(" ".join(rng.choice(list("abcdefg"), 9)) for _ in range(200)))
    assert (
        main(
            ["-q", "run", str(corpus), "-n", "8", "-d", "8", "-o", str(tmp_path / "r"), "--report"]
        )
        == 0
    )
    assert (tmp_path / "r" / "report.html").exists()
    assert (tmp_path / "r" / "report_figures" / "heatmap.png").exists()
    assert (
        main(
            [
                "-q",
                "compare",
                str(corpus),
                "-n",
                "8",
                "-d",
                "8",
                "--n-heads",
                "4",  # at most d heads (compare refuses 12 heads at d = 8)
                "-o",
                str(tmp_path / "c"),
                "--report",
            ]
        )
        == 0
    )
    page = (tmp_path / "c" / "report.html").read_text()
    assert "comparison: c" in page and not list(tmp_path.glob(".c.*"))  # no temporary left


def test_bootstrap_counts_give_intervals_in_rows_figure_and_verdict(tmp_path):
    from posgeom.uncertainty.bootstrap import bootstrap_scores

    seqs = posgeom.synthetic_corpus(300, length=10, seed=0)
    counts = posgeom.count_positions(seqs, max_positions=10, bootstrap=20)
    families = ("sinusoidal", "t5", "random", "nope", "mds")
    config = posgeom.GeometryConfig(model_dim=16, max_rank=2, families=families)
    result = posgeom.analyze(counts, config, kind="compare")
    direct = bootstrap_scores(
        counts,
        {
            "sinusoidal": posgeom.encodings.sinusoidal(10, d=16),
            "random": posgeom.encodings.random(10, d=16, seed=0),
        },
    )
    for name in ("sinusoidal", "random"):
        iv = direct.encodings[name].stress["scale_optimal"]
        assert result.row(name)["scale_optimal_ci"] == pytest.approx([iv.low, iv.high])
    assert result.uncertainty["n_replicates"] == 20
    page = report(result, tmp_path / "r.html").read_text()
    assert "bootstrap replicates the candidates&#x27; ranking" in page
    assert "ranking is not stable" in page or "ranking is stable" in page


def test_comparison_report_shows_the_plugin_beside_the_estimate(
    comparison, comparison_folder_report
):
    folder, page = comparison_folder_report
    view = load_folder(folder)
    np.testing.assert_array_equal(view.arrays["plugin_hellinger"], comparison.plugin_distances)
    assert "fig-estimators" in page and "of its plug-in value" in page


def test_per_head_rows_of_an_older_folder_are_read(comparison, comparison_folder_report, tmp_path):
    """Folders written before the per-head rows were generic call them ``alibi_heads`` (no
    ``family``): they are read as ALiBi's heads."""
    from posgeom.text.schema import heads_by_family

    folder = shutil.copytree(comparison_folder_report[0], tmp_path / "old")
    doc = json.loads((folder / "comparison.json").read_text())
    doc["alibi_heads"] = [{k: v for k, v in h.items() if k != "family"} for h in doc.pop("heads")]
    (folder / "comparison.json").write_text(json.dumps(doc))
    (folder / "posgeom-manifest.json").unlink()  # else the edit is refused as a changed file
    old = heads_by_family(load_folder(folder).heads)
    assert list(old) == ["alibi"] and len(old["alibi"]) == len(comparison.heads)
    assert [h["paper"] for h in old["alibi"]] == [h["paper"] for h in comparison.heads]
    assert "<h3>alibi, every head</h3>" in comparison_folder_report[1]
