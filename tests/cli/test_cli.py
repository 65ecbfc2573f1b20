"""The command line: the happy path end to end, and every bad input gives one line and exit 2."""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.artifacts import edit_header
from helpers.cli import run_cli
from posgeom import PositionCounts, hellinger_distances, positional_distributions
from posgeom.cli.main import main


def run(argv, capsys):
    return run_cli(capsys, *argv)


def test_count_geometry_score_pipeline(corpus, tmp_path, capsys):
    counts_file = tmp_path / "counts.npz"
    code, out, _ = run(["count", str(corpus), "-n", "6", "-o", str(counts_file)], capsys)
    assert code == 0 and counts_file.exists() and not Path(str(counts_file) + ".json").exists()
    counts = PositionCounts.load(counts_file)
    assert counts.n_sequences == 300 and counts.counts.shape[0] == 6
    results = tmp_path / "res"
    code, out, _ = run(
        ["geometry", str(counts_file), "-d", "16", "--estimator", "plugin", "-o", str(results)],
        capsys,
    )
    assert code == 0 and "| mds |" in out
    summary = json.loads((results / "summary.json").read_text())
    assert summary["conventions"]["hellinger"] == "chord"
    assert summary["scores"]["mds"]["paper"] < 1e-12
    # score an encoding file against the geometry, compared with a direct computation
    vecs = np.random.default_rng(1).standard_normal((6, 4))
    np.save(tmp_path / "enc.npy", vecs)
    code, out, _ = run(
        [
            "score",
            "--target",
            str(results / "arrays.npz"),
            "--json",
            f"mine={tmp_path / 'enc.npy'}",
        ],
        capsys,
    )
    assert code == 0
    from posgeom import stress

    target = hellinger_distances(positional_distributions(counts))
    assert json.loads(out)["mine"]["paper"] == pytest.approx(stress(vecs, target))


def test_run_writes_a_complete_results_folder(corpus, tmp_path, capsys):
    out_dir = tmp_path / "results"
    code, _out, _ = run(["run", str(corpus), "-n", "6", "-d", "8", "-o", str(out_dir)], capsys)
    assert code == 0
    assert {p.name for p in out_dir.iterdir()} >= {
        "summary.json",
        "table.md",
        "arrays.npz",
        "counts.npz",
    }
    code, _, err = run(["run", str(corpus), "-n", "6", "-o", str(out_dir)], capsys)
    assert code == 2 and "--overwrite" in err


def one_line_error(code, err, *needles):
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("posgeom: error:"), err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("content", "args", "needles"),
    [
        ("", [], ("no sequences",)),
        ("\n\n   \n", [], ("no sequences",)),
        ("a b c\nd e\n", ["-n", "9"], ("no samples",)),
    ],
)
def test_bad_corpora(tmp_path, capsys, content, args, needles):
    path = tmp_path / "c.txt"
    path.write_text(content)
    out_dir = tmp_path / "out"
    code, _, err = run(["run", str(path), *(args or ["-n", "3"]), "-o", str(out_dir)], capsys)
    one_line_error(code, err, *needles)
    assert not out_dir.exists()


def test_undecodable_bytes_name_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine line\nsecond \xff\xfe line\n")
    code, _, err = run(["count", str(path), "-n", "2", "-o", str(tmp_path / "c.npz")], capsys)
    one_line_error(code, err, "bad.txt", "line 2")
    assert not (tmp_path / "c.npz").exists()


def test_missing_column_tokenizer_and_corpus(tmp_path, capsys, corpus):
    tsv = tmp_path / "d.tsv"
    tsv.write_text("sentence\tlabel\nhello world\t1\n")
    code, _, err = run(
        ["count", str(tsv), "--text-column", "text", "-n", "2", "-o", str(tmp_path / "x.npz")],
        capsys,
    )
    one_line_error(code, err, "text", "sentence")
    code, _, err = run(
        [
            "count",
            str(corpus),
            "-t",
            str(tmp_path / "nope" / "tokenizer.json"),
            "-n",
            "2",
            "-o",
            str(tmp_path / "x.npz"),
        ],
        capsys,
    )
    one_line_error(code, err, "does not exist")
    code, _, err = run(
        ["count", str(tmp_path / "missing.txt"), "-n", "2", "-o", str(tmp_path / "x.npz")], capsys
    )
    one_line_error(code, err, "missing.txt")


def test_tampered_and_mismatched_artifacts(corpus, tmp_path, capsys):
    counts_file = tmp_path / "counts.npz"
    assert run(["count", str(corpus), "-n", "6", "-o", str(counts_file)], capsys)[0] == 0
    edit_header(counts_file, lambda h: {**h, "metadata": {**h["metadata"], "n_sequences": 1}})
    code, _, err = run(["geometry", str(counts_file), "-o", str(tmp_path / "g")], capsys)
    one_line_error(code, err)
    assert not (tmp_path / "g").exists()
    # an edited file is no longer posgeom's: --overwrite refuses to replace it
    argv = ["count", str(corpus), "-n", "6", "-o", str(counts_file), "--overwrite"]
    one_line_error(*run(argv, capsys)[::2], "changed since")
    counts_file.unlink()
    # another version
    assert run(argv, capsys)[0] == 0
    edit_header(counts_file, lambda h: {**h, "posgeom_version": "9.9.0"})
    code, _, err = run(["geometry", str(counts_file), "-o", str(tmp_path / "g")], capsys)
    one_line_error(code, err, "9.9")


def test_bad_encodings_and_dimensions(corpus, tmp_path, capsys):
    results = tmp_path / "res"
    assert run(["run", str(corpus), "-n", "5", "-d", "4", "-o", str(results)], capsys)[0] == 0
    target = str(results / "arrays.npz")
    np.save(tmp_path / "nan.npy", np.array([[0.0], [np.nan], [1.0], [2.0], [3.0]]))
    code, _, err = run(["score", "--target", target, str(tmp_path / "nan.npy")], capsys)
    one_line_error(code, err, "NaN")
    np.save(tmp_path / "short.npy", np.zeros((3, 2)))
    code, _, err = run(["score", "--target", target, str(tmp_path / "short.npy")], capsys)
    one_line_error(code, err, "3")
    code, _, err = run(["run", str(corpus), "-n", "2", "-o", str(tmp_path / "n2")], capsys)
    one_line_error(code, err, "at least 3")
    code, _, err = run(
        ["run", str(corpus), "-n", "5", "-d", "0", "-o", str(tmp_path / "d0")], capsys
    )
    one_line_error(code, err, "d")
    assert not (tmp_path / "n2").exists() and not (tmp_path / "d0").exists()


def test_help_explains_options(capsys):
    """``run --help`` lists every option the parser of ``run`` has, each with a help line (the
    options read from the parser, not a list restated here)."""
    import argparse

    from posgeom.cli.main import build_parser

    with pytest.raises(SystemExit) as exc:
        main(["run", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    hidden = argparse.SUPPRESS  # an option hidden from help on purpose (--debug)
    actions = [a for a in sub.choices["run"]._actions if a.option_strings and a.help != hidden]
    assert len(actions) > 10 and "--max-positions" in {o for a in actions for o in a.option_strings}
    for action in actions:
        assert all(o in text for o in action.option_strings), action.option_strings
        assert action.help, f"{action.option_strings} has no help"


def test_every_command_has_its_line_and_description():
    """Every command and subcommand has its line in the list of commands and a description atop
    its own --help: by default its handler's docstring, first paragraph then the rest, with the
    docstring's line breaks read as spaces (cli/_options.add_command)."""
    import argparse

    from posgeom.cli.corpus_commands import _count
    from posgeom.cli.main import build_parser

    def commands(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                lines = {a.dest: a.help for a in action._choices_actions}
                for name, command in action.choices.items():
                    yield name, lines[name], command
                    yield from commands(command)

    found = {name: (line, command) for name, line, command in commands(build_parser())}
    assert {"count", "probe", "experiment", "pretrain", "order-necessity"} <= set(found)
    for name, (line, command) in found.items():
        assert line and "\n" not in line and "  " not in line, name
        assert command.description and "  " not in command.description, name
    line, command = found["count"]
    head, rest = _count.__doc__.split("\n\n", 1)
    assert line == head and command.description == " ".join(rest.split())


def test_counts_and_a_different_tokenizer_are_refused(corpus, tmp_path, capsys):
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    counts_file = tmp_path / "counts.npz"
    assert run(["count", str(corpus), "-n", "6", "-o", str(counts_file)], capsys)[0] == 0
    other = WordLevelTokenizer().fit(["completely different words here"])
    other.save(tmp_path / "other.json")
    code, _, err = run(
        [
            "compare",
            "--counts",
            str(counts_file),
            "-t",
            str(tmp_path / "other.json"),
            "-o",
            str(tmp_path / "cmp"),
        ],
        capsys,
    )
    one_line_error(code, err, "vocabulary")
    assert not (tmp_path / "cmp").exists()
    # the same tokenizer is accepted
    same = WordLevelTokenizer().fit(corpus.read_text().splitlines())
    counts = PositionCounts.load(counts_file)
    counts.check_tokenizer(same)


@pytest.mark.parametrize(
    ("argv", "dest"),
    [
        (["analyze-model", "m", "c.txt", "-n", "8", "-o", "out"], "target"),
        (["train", "-o", "out"], "target_estimator"),
    ],
)
def test_estimator_is_one_spelling(argv, dest, capsys):
    """--estimator everywhere (the old spellings were removed in 0.2.0:
    tests/project/test_deprecations.py)."""
    from posgeom.cli.main import build_parser

    parser = build_parser()
    args = parser.parse_args([*argv, "--estimator", "plugin"])
    assert getattr(args, dest) == "plugin" and capsys.readouterr().err == ""
    assert parser.parse_args(argv).__dict__[dest] == "recommended"


def test_train_options_are_the_train_configs_fields():
    """`posgeom train` fills TrainConfig from the options named like its fields (defaults read from
    the config, not restated): the parsed defaults give the config's defaults."""
    import dataclasses

    from posgeom.cli.main import build_parser
    from posgeom.cli.train_commands import _config
    from posgeom.training import TrainConfig

    args = build_parser().parse_args(["train", "-o", "run"])
    assert _config(args, encoding="sinusoidal") == TrainConfig()
    args = build_parser().parse_args(["train", "-o", "run", "--heads", "2", "--lr", "0.5"])
    cfg = _config(args, encoding="rope")
    changed = {
        f.name
        for f in dataclasses.fields(TrainConfig)
        if getattr(cfg, f.name) != getattr(TrainConfig(), f.name)
    }
    assert changed == {"n_heads", "lr", "encoding"} and cfg.n_heads == 2 and cfg.lr == 0.5


def test_compare_cuts_bootstrap_counts_with_their_replicates(corpus, tmp_path, capsys):
    """Issue 25's bug: `compare --counts BOOT.npz -n N` cut the counts but not their replicates
    ("replicates must be (nnz, B)"); the one truncation rule cuts both, and the intervals use
    all B replicates of the first N positions."""
    boot = tmp_path / "boot.npz"
    argv = ["count", str(corpus), "-n", "8", "--bootstrap", "4", "-o", str(boot)]
    assert run(argv, capsys)[0] == 0
    out = tmp_path / "cmp"
    argv = ["compare", "--counts", str(boot), "-n", "5", "-d", "8", "--estimator", "plugin"]
    code, _, err = run([*argv, "-o", str(out)], capsys)
    assert code == 0, err
    kept = PositionCounts.load(out / "counts.npz")
    full = PositionCounts.load(boot)
    head = full.counts[:5]
    assert kept.counts.shape[0] == 5 and kept.replicates.shape == (head.nnz, 4)
    np.testing.assert_array_equal(kept.replicates, full.replicates[: head.nnz])
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["uncertainty"]["n_replicates"] == 4 and doc["options"]["n_positions"] == 5


def test_a_model_reads_the_first_or_a_seeded_sample_of_the_corpus(tmp_path):
    import argparse

    from posgeom._errors import PosgeomError
    from posgeom.cli import _options
    from posgeom.cli._count_flags import add_reader_arguments

    lines = [f"label{i} text {i}" for i in range(10)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    p = argparse.ArgumentParser()
    p.add_argument("corpus")
    add_reader_arguments(p)
    _options.add_sample_arguments(p)
    first = p.parse_args([str(path), "--max-sequences", "3", "--text-field", "2"])
    assert list(_options.sample_texts(first)) == ["text 0", "text 1", "text 2"]
    seeded = p.parse_args([str(path), "--max-sequences", "4", "--shuffle-seed", "5"])
    pick = sorted(np.random.default_rng(5).choice(10, 4, replace=False))
    assert _options.sample_texts(seeded) == [lines[i] for i in pick]
    with pytest.raises(PosgeomError, match="does not exist; check the path"):
        _options.sample_texts(p.parse_args([str(tmp_path / "none.txt")]))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "pass a CORPUS file (with -n N) or --counts FILE"),
        (["CORPUS"], "pass -n N, the number of positions to compare"),
        (["CORPUS", "--counts", "COUNTS"], "pass either a CORPUS or --counts FILE, not both"),
    ],
)
def test_compare_needs_exactly_one_source(corpus, tmp_path, capsys, args, needle):
    """compare counts a CORPUS (with -n) or reads --counts FILE: none, or both, is refused in
    one line before any work (no results folder)."""
    paths = {"CORPUS": str(corpus), "COUNTS": str(tmp_path / "counts.npz")}
    out_dir = tmp_path / "out"
    code, _, err = run(["compare", *(paths.get(a, a) for a in args), "-o", str(out_dir)], capsys)
    one_line_error(code, err, needle)
    assert not out_dir.exists()
