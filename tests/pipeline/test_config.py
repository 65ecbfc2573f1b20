"""The pipeline options are declared once (GeometryConfig): the library's keyword signatures and
the summary's options derive from its fields, and one set of constraints refuses a bad value the
same way everywhere (the CountOptions pattern, tests/corpus/test_count_options.py)."""

from __future__ import annotations

import dataclasses

import pytest

from helpers.pipeline import keyword_options
from posgeom._errors import PosgeomError
from posgeom.corpus.counting import count_positions
from posgeom.encodings import default_rope_head_dim
from posgeom.pipeline import analyze
from posgeom.pipeline.config import (
    GROUPS,
    GeometryConfig,
    config_fields,
)
from posgeom.pipeline.keywords import takes_geometry_config
from posgeom.pipeline.rows import MDS_ROWS
from posgeom.synthetic import synthetic_corpus

FIELDS = {f.name: f.default for f in dataclasses.fields(GeometryConfig)}


def test_every_field_has_a_group_a_default_and_a_help():
    assert {f.metadata["group"] for f in dataclasses.fields(GeometryConfig)} == set(GROUPS)
    assert all(f.metadata["help"] for f in dataclasses.fields(GeometryConfig))
    assert sum(len(config_fields(g)) for g in GROUPS) == len(FIELDS)
    GeometryConfig()  # every default satisfies its own constraint


def test_analyze_takes_every_field_as_a_keyword():
    """analyze's keyword options are the config's fields: names and defaults read from the
    dataclass."""
    assert keyword_options(analyze, {"encodings", "kind"}) == FIELDS  # its own two: what and which


def test_a_new_field_reaches_the_signature_and_the_record():
    """A field added to the config (here on a subclass) is a keyword of every function that
    takes the config and a key of its record, with no other code touched."""

    @dataclasses.dataclass(frozen=True)
    class Wider(GeometryConfig):
        bandwidth: float = dataclasses.field(
            default=0.5, metadata={"allowed": (float,), "group": "scores", "help": "h"}
        )

    @takes_geometry_config("scores", config=Wider)
    def run(counts, *, config):
        return config

    assert keyword_options(run, set()) == {
        "max_rank": 16,
        "intervals": True,
        "seed": 0,
        "bandwidth": 0.5,
    }
    got = run(None, bandwidth=2.0, seed=3)
    assert (got.bandwidth, got.seed, got.max_rank) == (2.0, 3, 16)
    assert got.record()["bandwidth"] == 2.0
    with pytest.raises(PosgeomError, match="bandwidth must be a float"):
        run(None, bandwidth="wide")


def test_a_config_is_the_base_the_keywords_change():
    @takes_geometry_config()
    def run(counts, config=None):
        return config

    base = GeometryConfig(seed=7, max_rank=2)
    assert run(None, base) == base
    assert run(None, base, seed=1) == base.replace(seed=1)
    assert run(None) == GeometryConfig()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("model_dim", 0, "model_dim must be an integer >= 1"),
        ("alpha", 0.0, "alpha must be a number > 0"),
        ("smoothing", "laplace", "smoothing must be one of 'add-alpha', 'none'"),
        ("convention", "arc", "convention must be one of 'chord', 'normalized'"),
        ("noise_repeats", 0, "noise_repeats must be an integer >= 1 and <= 1000"),
        ("seed", -1, "seed must be an integer >= 0"),
        ("max_rank", 2.0, "max_rank must be an integer >= 0"),
        ("estimator", "nope", "unknown estimator 'nope'"),
    ],
)
def test_one_set_of_constraints(option, value, needle):
    """The config and analyze refuse a bad value with the same one-line message, before any
    work (the counts here are not even counts)."""
    calls = [
        lambda: GeometryConfig(**{option: value}),
        lambda: analyze(None, **{option: value}),
    ]
    for call in calls:
        with pytest.raises(PosgeomError, match=needle):
            call()


def test_alpha_without_smoothing_is_refused_by_the_config():
    """alpha is read only by add-alpha smoothing: given alone it would be silently ignored, so
    the config (what analyze and every command build) refuses it, naming the fix."""
    fix = "pass smoothing='add-alpha', or drop alpha=0.5"
    with pytest.raises(PosgeomError, match=f"^alpha=0.5 has no effect without .*; {fix}$"):
        GeometryConfig(alpha=0.5)
    smoothed = GeometryConfig(smoothing="add-alpha", alpha=0.5)
    assert (smoothed.smoothing, smoothed.alpha) == ("add-alpha", 0.5)
    with pytest.raises(PosgeomError, match=r"alpha=0\.5 has no effect"):
        smoothed.replace(smoothing="none")
    assert GeometryConfig(alpha=1.0) == GeometryConfig()  # the default: nothing ignored


def test_families_are_checked_against_the_registry():
    assert GeometryConfig(families="mds, sinusoidal").families == ("mds", "sinusoidal")
    with pytest.raises(PosgeomError, match="unknown encodings \\['sinus'\\]"):
        GeometryConfig(families=["sinus"])
    assert GeometryConfig(noise="none").noise is None


def test_the_summary_options_are_the_record():
    """The summary's options are the config's record (less the baselines), with what the stages
    resolved: the MDS rank, the solver, the estimator actually used, alpha without smoothing."""
    counts = count_positions(synthetic_corpus(300, length=8, seed=1), max_positions=8)
    config = GeometryConfig(
        estimator="plugin",
        noise=None,
        refine=False,
        max_rank=2,
        seed=3,
        model_dim=16,
        families=MDS_ROWS,  # the MDS rows only
    )
    record = config.record()
    options = analyze(counts, config).options
    assert list(options)[: len(record)] == list(record)  # every field, in declaration order
    resolved = {
        "n_components",
        "alpha",
        "solver",
        "estimator_options",
        "resolution",
        "families",
        "rope_head_dim",
    }
    assert {k: v for k, v in options.items() if k in record and k not in resolved} == {
        k: v for k, v in record.items() if k not in resolved
    }
    assert options["n_components"] == 7 and options["alpha"] == 0.0  # r = n - 1; no smoothing
    assert options["solver"] in {"exact", "implicit"} and options["resolution"] == "full"
    assert options["rope_head_dim"] == default_rope_head_dim(16, 12)  # resolved from d, heads
    assert options["families"] == ["mds"] and options["n_positions"] == 8  # refine=False
    assert options["input"] == "counts"
