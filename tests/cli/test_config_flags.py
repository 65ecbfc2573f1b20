"""The main job's flags are GeometryConfig's fields, derived and never restated.

Each of ``geometry``, ``run``, ``demo`` and ``compare`` has one flag per config field, with the
field's default and allowed values; the parsed flags read back into the config; and a field added
to the config (a subclass here) is a flag of each command and a key of the summary's options
with no CLI code touched (the CountOptions pattern, tests/test_count_options.py)."""

from __future__ import annotations

import dataclasses
import json
from numbers import Integral

import pytest

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options
from posgeom.cli._config_flags import cli_fields, config_from_args
from posgeom.cli.main import build_parser, main
from posgeom.pipeline import config as config_module

# the public functions read GeometryConfig when their module is imported
# (pipeline.keywords.takes_geometry_config): import it before a test swaps the class in, or the
# swap would outlive the test in every function first imported under it
from posgeom.pipeline import job as _job  # noqa: F401
from posgeom.pipeline.config import GeometryConfig

#: the source arguments each command needs before its options (nothing is read when parsing)
COMMANDS = {
    "geometry": ["counts.npz", "-o", "out"],
    "run": ["corpus.txt", "-n", "8", "-o", "out"],
    "demo": [],
    "compare": ["--counts", "counts.npz", "-o", "out"],
}


def _actions(parser, command):
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {a.dest: a for a in sub._actions}


def test_every_field_is_a_flag_of_every_pipeline_command_with_its_default():
    parser = build_parser()
    fields = {f.name: f.default for f in cli_fields()}
    assert set(fields) == {f.name for f in dataclasses.fields(GeometryConfig)} - {
        "estimator_options"  # a mapping: the library's only
    }
    for command, argv in COMMANDS.items():
        actions = _actions(parser, command)
        assert set(fields) <= set(actions), command
        own = {k for k, v in fields.items() if actions[k].default != v}
        assert own == ({"estimator"} if command == "demo" else set()), command
        config = config_from_args(parser.parse_args([command, *argv]))
        want = GeometryConfig(estimator="plugin") if command == "demo" else GeometryConfig()
        assert config == want, command
    assert _actions(parser, "demo")["estimator"].default == "plugin"  # the paper's Algorithm 1


def test_the_choices_are_the_stages_declared_constraints():
    """A field with a fixed set of values offers exactly the set the stage that uses it declares
    (read from the stage's @validate_params, not from the config), its default first."""
    from posgeom.embed.mds import classical_mds
    from posgeom.geometry.distributions import positional_distributions
    from posgeom.geometry.divergences import hellinger_distances
    from posgeom.geometry.noise import noise_floor

    def declared(fn, name):
        return set(fn.__posgeom_constraints__[name][0].values)

    stages = {
        "smoothing": declared(positional_distributions, "smoothing"),
        "below_min": declared(positional_distributions, "below_min"),
        "convention": declared(hellinger_distances, "convention"),
        "solver": declared(classical_mds, "solver"),
        "noise": declared(noise_floor, "method") | {None},  # None: no noise floor ("none")
    }
    parser = build_parser()
    for command in COMMANDS:
        actions = _actions(parser, command)
        for name, values in stages.items():
            assert set(actions[name].choices) == values, (command, name)
            assert actions[name].choices[0] == actions[name].default, (command, name)
    run = _actions(parser, "run")
    model = _actions(parser, "analyze-model")  # its own flag, the same noise floors
    assert set(model["noise"].choices) == {"none" if c is None else c for c in run["noise"].choices}
    assert run["noise"].metavar.endswith(",none}") and run["refine"].option_strings == [
        "--no-refine"
    ]


def test_flags_read_back_into_the_config():
    argv = [
        "run",
        "corpus.txt",
        "-n",
        "8",
        "-o",
        "out",
        "--smoothing",
        "add-alpha",
        "--alpha",
        "0.5",
        "--min-samples",
        "2",
        "--below-min",
        "drop",
        "--estimator",
        "plugin",
        "--resolution",
        "top:4",
        "--smooth-positions",
        "0.25",
        "--convention",
        "normalized",
        "-d",
        "16",
        "-r",
        "3",
        "--solver",
        "exact",
        "--no-refine",
        "--noise",
        "none",
        "--noise-repeats",
        "3",
        "--max-rank",
        "4",
        "--seed",
        "7",
        "--encodings",
        "sinusoidal,rope",
        "--n-heads",
        "2",
        "--rope-head-dim",
        "4",
        "--rope-base",
        "500",
        "--low-rank",
        "2",
    ]
    config = config_from_args(build_parser().parse_args(argv))
    given = {
        "smoothing": "add-alpha",
        "alpha": 0.5,
        "min_samples": 2,
        "below_min": "drop",
        "estimator": "plugin",
        "resolution": "top:4",
        "smooth_positions": 0.25,
        "convention": "normalized",
        "model_dim": 16,
        "n_components": 3,
        "solver": "exact",
        "refine": False,
        "noise": None,
        "noise_repeats": 3,
        "max_rank": 4,
        "seed": 7,
        "families": ("sinusoidal", "rope"),
        "n_heads": 2,
        "rope_head_dim": 4,
        "rope_base": 500.0,
        "low_rank": 2,
    }
    assert config == GeometryConfig(**given)
    auto = build_parser().parse_args(["demo", "--smooth-positions", "auto"])
    assert config_from_args(auto).smooth_positions == "auto"


def test_an_out_of_range_flag_is_refused_by_the_config_naming_the_flag(tmp_path, capsys):
    with pytest.raises(PosgeomError, match="smooth_positions"):
        config_from_args(build_parser().parse_args(["demo", "--smooth-positions", "wide"]))
    out = tmp_path / "out"
    code = main(["-q", "demo", "-n", "6", "--smooth-positions", "wide", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--smooth-positions" in err[0], err
    assert not out.exists()
    code = main(["-q", "demo", "-n", "6", "--encodings", "sinusoidal,,rope", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()  # a list item left empty: one line
    assert code == 2 and len(err) == 1 and "--encodings is given an empty value" in err[0], err
    assert not out.exists()


@dataclasses.dataclass(frozen=True)
class _Wider(GeometryConfig):
    """GeometryConfig with two options more, as a contributor would add them."""

    probe_width: int = dataclasses.field(
        default=7,
        metadata={"allowed": (Interval(Integral, 1, None),), "group": "scores", "help": "width"},
    )
    probe_kind: str = dataclasses.field(
        default="flat",
        metadata={"allowed": (Options({"flat", "steep"}),), "group": "scores", "help": "kind"},
    )


def test_a_new_config_field_is_a_flag_of_each_command(monkeypatch):
    monkeypatch.setattr(config_module, "GeometryConfig", _Wider)
    parser = build_parser()
    for command, argv in COMMANDS.items():
        actions = _actions(parser, command)
        assert actions["probe_width"].option_strings == ["--probe-width"], command
        assert actions["probe_width"].default == 7, command
        assert actions["probe_kind"].choices == ("flat", "steep"), command  # default first
        args = parser.parse_args([command, *argv, "--probe-width", "9"])
        got = config_from_args(args)
        assert (type(got), got.probe_width, got.probe_kind) == (_Wider, 9, "flat"), command


def test_a_new_config_field_is_in_the_summary_options(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(config_module, "GeometryConfig", _Wider)
    out = tmp_path / "demo"
    argv = ["-q", "demo", "-n", "6", "--sequences", "80", "-d", "8", "--probe-width", "9"]
    assert main([*argv, "--probe-kind", "steep", "-o", str(out)]) == 0, capsys.readouterr().err
    options = json.loads((out / "summary.json").read_text())["options"]
    assert (options["probe_width"], options["probe_kind"]) == (9, "steep")
    code = main(["-q", "demo", "--probe-width", "0", "-o", str(tmp_path / "bad")])
    assert code == 2 and "--probe-width" in capsys.readouterr().err


def test_the_three_count_sources_give_one_result(tmp_path, capsys):
    """demo (the synthetic corpus), run (the same token ids as a corpus file), geometry and
    compare (its counts file) are one handler: the same counts and flags give the same rows,
    each equal to a direct computation, and one summary schema."""
    import numpy as np

    from posgeom import encodings, hellinger_distances, positional_distributions, stress
    from posgeom.corpus.counting import PositionCounts
    from posgeom.synthetic import synthetic_corpus

    flags = ["-d", "8", "--estimator", "plugin", "--noise", "none", "--seed", "3"]
    demo = tmp_path / "demo"
    assert main(["-q", "demo", "-n", "8", "--sequences", "300", *flags, "-o", str(demo)]) == 0
    ids = tmp_path / "ids.npy"
    np.save(ids, np.stack(synthetic_corpus(300, length=8, seed=3)))
    counts = demo / "counts.npz"
    runs = {
        "run": ["run", str(ids), "-n", "8"],
        "geometry": ["geometry", str(counts)],
        "compare": ["compare", "--counts", str(counts)],
    }
    docs = {"demo": json.loads((demo / "summary.json").read_text())}
    for name, argv in runs.items():
        assert main(["-q", *argv, *flags, "-o", str(tmp_path / name)]) == 0, name
        summary = "comparison.json" if name == "compare" else "summary.json"
        docs[name] = json.loads((tmp_path / name / summary).read_text())
    capsys.readouterr()
    c = PositionCounts.load(tmp_path / "run" / "counts.npz")
    np.testing.assert_array_equal(c.counts.toarray(), PositionCounts.load(counts).counts.toarray())
    target = hellinger_distances(positional_distributions(c))
    want = stress(encodings.sinusoidal(8, d=8), target)
    for name, doc in docs.items():
        assert doc["kind"] == name and set(doc) == set(docs["demo"]), name  # one schema
        assert doc["scores"] == docs["demo"]["scores"], name
        assert doc["scores"]["sinusoidal"]["paper"] == pytest.approx(want, rel=1e-12), name
        assert doc["options"] == docs["demo"]["options"], name
