"""The counting options are declared once (CountOptions): the library's keyword signatures, the
CLI's count flags and a sharded job's manifest derive from it, and one set of constraints refuses
a bad value the same way everywhere."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from helpers.pipeline import keyword_options
from posgeom._errors import PosgeomError
from posgeom.corpus._jobfiles import count_options, manifest_record
from posgeom.corpus.counting import count_corpus, count_positions
from posgeom.corpus.options import BOOTSTRAP, COUNT, READER, CountOptions, option_fields

FIELDS = {f.name: f.default for f in dataclasses.fields(CountOptions)}


def _as_fields(options):
    return {
        k: (dataclasses.MISSING if v is inspect.Parameter.empty else v) for k, v in options.items()
    }


def test_the_keyword_signatures_are_the_dataclass_fields():
    """count_positions takes the count and bootstrap fields, count_corpus every field: same
    names, same defaults (max_positions required), nothing else but their own run options."""
    positions = keyword_options(count_positions, {"tokenizer", "progress"})
    corpus = keyword_options(count_corpus, {"progress", "allow_empty"})
    assert _as_fields(corpus) == FIELDS
    wanted = {f.name: f.default for f in option_fields(COUNT, BOOTSTRAP)}
    assert _as_fields(positions) == wanted
    assert set(FIELDS) - set(positions) == {f.name for f in option_fields(READER)}
    assert FIELDS["max_positions"] is dataclasses.MISSING
    own = [p.name for p in inspect.signature(count_positions).parameters.values()]
    assert own[0] == "sequences" and own[-2:] == ["tokenizer", "progress"]


def test_the_keyword_signatures_behave_like_functions():
    seqs = [[1, 2, 3], [4, 5]]
    with pytest.raises(TypeError, match="unexpected keyword argument 'pool'"):
        count_positions(seqs, max_positions=3, pool=2)
    with pytest.raises(TypeError, match="max_positions"):
        count_positions(seqs)
    with pytest.raises(TypeError, match="format"):  # a reader option: count_corpus only
        count_positions(seqs, max_positions=3, format="npy")
    counts = count_positions(seqs, max_positions=np.int32(3), align="end", min_length=2)
    # hand-counted: position 0 is the last token (3 and 5), position 2 only the first sequence's 1
    assert counts.counts.toarray()[:, :6].tolist() == [
        [0, 0, 0, 1, 0, 1],
        [0, 0, 1, 0, 1, 0],
        [0, 1, 0, 0, 0, 0],
    ]
    assert counts.options["align"] == "end" and counts.options["max_positions"] == 3


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("batch_size", 0, "batch_size must be an integer >= 1"),
        ("min_length", -1, "min_length must be an integer >= 0"),
        ("align", "middle", "align must be one of 'end', 'start'"),
        ("vocab_size", 0, "vocab_size must be an integer >= 1"),
        ("bootstrap_seed", -2, "bootstrap_seed must be an integer >= 0"),
        # the counter's generator takes 64-bit seeds; the options refuse more before counting
        ("bootstrap_seed", 2**64, r"bootstrap_seed must be an integer >= 0 and <= 2\*\*64 - 1"),
        ("bootstrap_scheme", "jackknife", "bootstrap_scheme must be one of 'half', 'poisson'"),
        ("bootstrap", 1, "at least 2 replicates"),
        ("special_ids", ["x"], "special_ids must be token ids"),
        ("pad_id", 2.0, "pad_id must be an integer >= 0"),
    ],
)
def test_one_set_of_constraints(option, value, needle):
    """The library, the dataclass and a sharded job's options refuse a bad value with the same
    one-line message (the CLI spells it with the flag: tests/faults/test_fault_cli.py)."""
    calls = [
        lambda: CountOptions(max_positions=4, **{option: value}),
        lambda: count_options(max_positions=4, **{option: value}),
        lambda: count_corpus(np.ones((3, 4), dtype=np.int64), max_positions=4, **{option: value}),
    ]
    if option not in {f.name for f in option_fields(READER)}:
        calls.append(lambda: count_positions([[1, 2]], max_positions=4, **{option: value}))
    for call in calls:
        with pytest.raises(PosgeomError, match=needle):
            call()


def test_a_bootstrap_stream_past_64_bits_is_refused_before_counting():
    """A job sets the stream itself (below); the library refuses one past 2**64 - 1."""
    ids = np.ones((3, 4), dtype=np.int64)
    for call in (lambda **kw: CountOptions(**kw), lambda **kw: count_corpus(ids, **kw)):
        with pytest.raises(PosgeomError, match=r"bootstrap_stream must be .* <= 2\*\*64 - 1"):
            call(max_positions=4, bootstrap=2, bootstrap_stream=2**64)


def test_a_job_refuses_what_it_cannot_apply_per_shard():
    with pytest.raises(PosgeomError, match="global limits"):
        count_options(max_positions=4, limit=10)
    with pytest.raises(PosgeomError, match="bootstrap_stream itself"):
        count_options(max_positions=4, bootstrap=4, bootstrap_stream=3)
    with pytest.raises(PosgeomError, match="unknown count options"):
        count_options(max_positions=4, pool=2)


def test_the_manifest_records_what_it_recorded_before():
    """Jobs started before the options moved resume: a plain job's manifest compares the same
    12 keys, a bootstrap job's 3 more; batch_size and the per-shard options never."""
    plain = manifest_record(CountOptions(max_positions=4, batch_size=7, special_ids=[5, 2]))
    assert set(plain) == {
        "max_positions",
        "format",
        "text_column",
        "split",
        "pad_id",
        "separator_id",
        "token_dtype",
        "vocab_size",
        "include_special",
        "special_ids",
        "align",
        "min_length",
    }
    assert plain["special_ids"] == [2, 5]
    boot = manifest_record(CountOptions(max_positions=4, bootstrap=3))
    assert set(boot) - set(plain) == {"bootstrap", "bootstrap_seed", "bootstrap_scheme"}


def _count_args(*extra):
    from posgeom.cli.main import build_parser

    return build_parser().parse_args(["count", "corpus.txt", "-n", "8", "-o", "c.npz", *extra])


def test_the_count_flags_cover_every_option():
    """`posgeom count` has a flag for every field, with the dataclass's defaults and choices."""
    from posgeom.cli._count_flags import count_options_from_args

    options = count_options_from_args(_count_args())
    assert set(options) == set(FIELDS)
    assert CountOptions(**options) == CountOptions(max_positions=8)
    changed = count_options_from_args(
        _count_args(
            "--align",
            "end",
            "--no-special",
            "--special-ids",
            "3,1",
            "--vocab-size",
            "9",
            "--limit",
            "5",
            "--token-dtype",
            "uint16",
            "--bootstrap",
            "4",
            "--bootstrap-stream",
            "2",
            "--bootstrap-scheme",
            "poisson",
        )
    )
    diff = {k for k, v in CountOptions(**changed).__dict__.items() if v != FIELDS.get(k)}
    assert diff == {
        "max_positions",
        "align",
        "include_special",
        "special_ids",
        "vocab_size",
        "limit",
        "token_dtype",
        "bootstrap",
        "bootstrap_stream",
        "bootstrap_scheme",
    }
    assert CountOptions(**changed).special_ids == (1, 3)
    from posgeom.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["count"]
    actions = {a.dest: a for a in sub._actions}
    assert set(actions["align"].choices) == CountOptions.allowed("align")[0].values
    assert set(actions["bootstrap_scheme"].choices) == set(
        CountOptions.allowed("bootstrap_scheme")[0].values
    )


def test_the_cli_text_flags_and_the_options_give_the_same_reader_keywords():
    import argparse

    from posgeom.cli._count_flags import add_text_arguments
    from posgeom.corpus.options import CountOptions, text_decoding

    p = argparse.ArgumentParser()
    add_text_arguments(p)
    flags = ["--text-encoding", "latin-1", "--encoding-errors", "replace", "--text-field", "2"]
    want = {"encoding": "latin-1", "errors": "replace", "text_field": 2}
    assert text_decoding(p.parse_args(flags)) == want
    given = CountOptions(
        max_positions=4, text_encoding="latin-1", encoding_errors="replace", text_field=2
    )
    assert given.decoding() == want
    default = {"encoding": "utf-8", "errors": "strict", "text_field": 1}
    assert text_decoding(p.parse_args([])) == CountOptions(max_positions=4).decoding() == default
