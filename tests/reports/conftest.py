"""Real results for the report tests: the demo corpus through the pipeline and the comparison."""

from __future__ import annotations

import pytest

import posgeom
from helpers.pipeline import mds_rows


@pytest.fixture(scope="session")
def demo_counts():
    seqs = posgeom.synthetic_corpus(400, length=12, seed=0)
    return posgeom.count_positions(seqs, max_positions=12)


@pytest.fixture(scope="session")
def pipeline_result(demo_counts):
    enc = {"sinusoidal": posgeom.encodings.sinusoidal(12, d=16)}
    return posgeom.analyze(demo_counts, mds_rows(model_dim=16, seed=0), encodings=enc)


@pytest.fixture(scope="session")
def comparison(demo_counts):
    config = posgeom.GeometryConfig(model_dim=16, max_rank=4, seed=0)
    return posgeom.analyze(demo_counts, config, kind="compare")


@pytest.fixture(scope="session")
def comparison_folder_report(comparison, tmp_path_factory):
    """The comparison saved as a results folder and its report drawn once (figures are the slow
    part of a report): ``(folder, page)``. Tests that change the folder copy it first."""
    folder = comparison.save(tmp_path_factory.mktemp("report") / "c")
    page = posgeom.report(folder).read_text()
    return folder, page
