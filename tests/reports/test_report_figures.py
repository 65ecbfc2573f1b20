"""Figures on small real inputs: the drawn data is the data given, and labels name conventions."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer, ErrorbarContainer

from posgeom.reports import figures as F
from posgeom.reports.canvas import encode, encode_svg

pytest.importorskip("matplotlib")


def _matrix_axes(fig):
    return next(ax for ax in fig.axes if ax.get_ylabel() == "position i")


def test_heatmap_data_is_the_distance_matrix(pipeline_result):
    r = pipeline_result
    fig = F.heatmap(
        r.distances, convention="chord", totals=r.distributions.totals, trusted=r.noise.trusted()
    )
    ax = _matrix_axes(fig)
    np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), r.distances)
    labels = [a.get_ylabel() for a in fig.axes]
    assert any("chord" in x and "√2" in x for x in labels)  # the colour bar names the convention
    top = next(a for a in fig.axes if a.get_ylabel() == "samples T_i")
    heights = [p.get_height() for p in top.patches]
    np.testing.assert_allclose(heights, r.distributions.totals)
    # the untrusted overlay is opaque exactly where the noise floor says a pair is not trusted
    alpha = np.asarray(ax.images[1].get_array())[..., 3]
    untrusted = ~r.noise.trusted()
    np.fill_diagonal(untrusted, False)
    np.testing.assert_array_equal(alpha > 0, untrusted)


def test_heatmap_normalized_label():
    d = np.array([[0, 0.5, 1.0], [0.5, 0, 0.5], [1.0, 0.5, 0]])
    fig = F.heatmap(d, convention="normalized")
    assert any("normalized" in a.get_ylabel() and "[0, 1]" in a.get_ylabel() for a in fig.axes)


def test_heatmap_downsamples_large_matrices_and_says_so():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 3))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    fig = F.heatmap(d, max_size=4)  # 10 positions in blocks of 3: 0-2, 3-5, 6-8, 9
    ax = _matrix_axes(fig)
    shown = np.asarray(ax.images[0].get_array())
    blocks = [range(0, 3), range(3, 6), range(6, 9), range(9, 10)]
    expected = np.array(
        [[np.mean([d[i, j] for i in a for j in b]) for b in blocks] for a in blocks]
    )
    np.testing.assert_allclose(shown, expected)
    assert "downsampled" in ax.get_title() and "3 x 3 positions" in ax.get_title()


def _rows():
    return [
        {
            "encoding": "a",
            "paper": 2.0,
            "scale_optimal": 0.1,
            "violation_rate": 0.2,
            "scale_optimal_ci": [0.05, 0.2],
        },
        {
            "encoding": "b",
            "paper": 50.0,
            "scale_optimal": 0.4,
            "violation_rate": 0.5,
            "scale_optimal_ci": [0.3, 0.45],
            "violation_rate_ci": [0.45, 0.55],
        },
        {"encoding": "c", "paper": 0.5, "scale_optimal": 0.3, "violation_rate": 0.1},
    ]


def test_stress_bars_one_bar_per_encoding_with_intervals_where_given():
    rows = _rows()
    fig = F.stress_bars(rows)
    paper_ax, shape_ax, order_ax = fig.axes
    for ax, key in ((paper_ax, "paper"), (shape_ax, "scale_optimal"), (order_ax, "violation_rate")):
        bars = next(c for c in ax.containers if isinstance(c, BarContainer))
        assert len(bars) == len(rows)
        np.testing.assert_allclose([b.get_width() for b in bars], [r[key] for r in rows])
    assert [t.get_text() for t in paper_ax.get_yticklabels()] == ["a", "b", "c"]
    # intervals: scale-optimal for a and b, the violation rate for b only, none for paper stress
    assert not [c for c in paper_ax.containers if isinstance(c, ErrorbarContainer)]
    (err,) = [c for c in shape_ax.containers if isinstance(c, ErrorbarContainer)]
    segments = err.lines[2][0].get_segments()
    spans = sorted((s[0][0], s[1][0]) for s in segments)
    np.testing.assert_allclose(spans, [(0.05, 0.2), (0.3, 0.45)])
    (err,) = [c for c in order_ax.containers if isinstance(c, ErrorbarContainer)]
    np.testing.assert_allclose(err.lines[2][0].get_segments()[0][:, 0], [0.45, 0.55])
    assert "Σ(δ-D)²/ΣD²" in paper_ax.get_xlabel() and "log" in paper_ax.get_xlabel()
    assert "α*" in shape_ax.get_xlabel()


def test_rank_curve_labels_parameter_counts(comparison):
    curve = comparison.rank_curve
    fig = F.rank_curve(curve)
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    shown = sorted(F._label_every(len(curve), F.RANK_LABELS))
    assert texts == [f"{curve[k]['parameters']:,}" for k in shown if curve[k]["paper"] > 0]
    paper = np.array([c["paper"] for c in curve])  # log axis: exact zeros are not drawn
    np.testing.assert_allclose(ax.lines[0].get_ydata(), np.where(paper > 0, paper, np.nan))
    assert "r(n+d)" in ax.get_xlabel()


def test_rank_curve_labels_of_a_long_curve_do_not_overlap():
    # 32 ranks as for IMDB (n = 512, d = 768): a falling curve, parameters r (n + d)
    curve = [
        {"rank": r, "paper": 0.7 / r**1.5, "parameters": r * 1280, "full_parameters": 393216}
        for r in range(1, 33)
    ]
    fig = F.rank_curve(curve)
    (ax,) = fig.axes
    assert len(ax.texts) == F.RANK_LABELS
    assert {t.get_text() for t in ax.texts} >= {"1,280", "40,960"}  # first and last kept
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert all(b.width > 1 for b in boxes)
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            assert not boxes[a].overlaps(boxes[b]), (ax.texts[a].get_text(), ax.texts[b].get_text())


def test_shepard_points_are_the_pairs(comparison):
    from posgeom.scores._encoding import encoding_distances

    p = comparison
    i, j = p.shepard_pairs
    deltas = {k: comparison.shepard[k] for k in ("sinusoidal", "random")}
    fig = F.shepard(p.distances[i, j], deltas, convention="chord")
    for ax, (name, delta) in zip(fig.axes, deltas.items(), strict=False):
        (points,) = [c for c in ax.collections if isinstance(c, PathCollection)]
        np.testing.assert_allclose(points.get_offsets()[:, 0], p.distances[i, j])
        np.testing.assert_allclose(points.get_offsets()[:, 1], delta)
        assert ax.get_title() == name and "chord" in ax.get_xlabel()
    # the stored deltas are the encoding's own distances at those pairs (independent path)
    import posgeom

    sin = posgeom.encodings.sinusoidal(12, d=16)
    np.testing.assert_allclose(deltas["sinusoidal"], encoding_distances(sin)[i, j], atol=1e-12)


def test_spectrum_marks_the_effective_ranks(pipeline_result):
    import posgeom

    ranks = posgeom.effective_ranks(pipeline_result.mds)
    fig = F.spectrum(pipeline_result.mds.eigenvalues, ranks)
    (ax,) = fig.axes
    marks = sorted(line.get_xdata()[0] for line in ax.lines[1:])
    assert marks == pytest.approx(sorted(float(v) for v in ranks.values()))
    lam = pipeline_result.mds.eigenvalues
    np.testing.assert_allclose(ax.lines[0].get_ydata(), lam[lam > 0])


def test_heads_and_layers_draw_their_rows(comparison):
    heads = comparison.heads
    assert {h["family"] for h in heads} == {"alibi"} and len(heads) == 12
    (ax,) = F.heads(heads, "alibi").axes
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [h["paper"] for h in heads])
    assert ax.get_title() == "alibi per head"
    rows = [
        {
            "layer": "embeddings",
            "stress_scale_optimal": 0.5,
            "stress_paper": 3.0,
            "variance_explained": 0.2,
        },
        {"layer": "1", "stress_scale_optimal": 0.3, "stress_paper": 9.0, "variance_explained": 0.1},
    ]
    axes = F.layers(rows).axes
    np.testing.assert_allclose(axes[0].lines[0].get_ydata(), [0.5, 0.3])
    np.testing.assert_allclose(axes[2].lines[0].get_ydata(), [0.2, 0.1])
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["emb", "1"]


def test_mds_map_coordinates_and_colours(pipeline_result):
    x = pipeline_result.mds.coordinates
    for dims in (2, 3):
        fig = F.mds_map(x, pipeline_result.distributions.positions, dims=dims)
        points = next(c for c in fig.axes[0].collections if isinstance(c, PathCollection))
        np.testing.assert_array_equal(points.get_array(), pipeline_result.distributions.positions)
        if dims == 2:
            np.testing.assert_allclose(points.get_offsets(), x[:, :2])


def test_encode_gives_svg_and_png(pipeline_result):
    svg, png = encode(F.spectrum(pipeline_result.mds.eigenvalues))
    assert svg.lstrip().startswith(b"<?xml") and b"<svg" in svg
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_estimators_figure_plots_plugin_against_the_estimate(comparison):
    from posgeom.estimators import estimate_geometry

    p = comparison
    i, j = p.shepard_pairs
    used = np.asarray(estimate_geometry(_counts(), seed=0))
    np.testing.assert_allclose(p.distances, used)  # the target is the recommended estimate
    plug = posgeom_hellinger()
    np.testing.assert_allclose(p.plugin_distances, plug, atol=1e-12)
    fig = F.estimators(plug[i, j], used[i, j], name="corrected", convention="chord")
    (ax,) = fig.axes
    (points,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    np.testing.assert_allclose(points.get_offsets(), np.c_[plug[i, j], used[i, j]])
    assert "plug-in" in ax.get_xlabel() and "corrected" in ax.get_ylabel()
    assert "chord" in ax.get_xlabel()


def posgeom_hellinger():
    import posgeom

    return posgeom.hellinger_distances(posgeom.positional_distributions(_counts()))


def _counts():
    import posgeom

    seqs = posgeom.synthetic_corpus(400, length=12, seed=0)
    return posgeom.count_positions(seqs, max_positions=12)


def test_large_heatmap_stays_small():
    n = 2048
    x = np.linspace(0, 1, n)
    d = np.abs(x[:, None] - x[None, :])
    fig = F.heatmap(d, totals=np.full(n, 100.0), trusted=d > 0.1)
    ax = _matrix_axes(fig)
    assert np.asarray(ax.images[0].get_array()).shape == (F.HEATMAP_MAX, F.HEATMAP_MAX)
    assert "downsampled" in ax.get_title() and "4 x 4 positions" in ax.get_title()
    assert len(encode_svg(fig)) < 2_000_000


def test_downsampled_heatmap_caption_says_so():
    from posgeom.reports.html import figures_of
    from posgeom.reports.view import ResultView

    n = 1030
    x = np.linspace(0, 1, n)
    view = ResultView("run", "t", arrays={"hellinger": np.abs(x[:, None] - x[None, :])})
    (heat,) = figures_of(view)
    assert "Downsampled: n = 1030 positions shown as 344 x 344 block means of 3 x 3" in heat.caption
