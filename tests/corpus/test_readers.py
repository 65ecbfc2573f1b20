"""Readers: every text and token-id format, gzip variants, and bad input."""

from __future__ import annotations

import csv
import gzip
import json
import re

import numpy as np
import pytest

from posgeom._errors import PosgeomError
from posgeom.corpus.counting import count_corpus
from posgeom.corpus.readers import detect_format, read_texts
from posgeom.corpus.token_ids import read_token_ids

TEXTS = ["the cat sat", 'a "quoted" word, with comma', "", "it 's\ttab-free ok", "ünïcödé ✓"]


def _write(path, data: bytes) -> None:
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)


def _make(tmp_path, fmt: str, gz: bool):
    name = tmp_path / (f"c.{fmt}" + (".gz" if gz else ""))
    if fmt == "txt":
        _write(name, "".join(t + "\n" for t in TEXTS).encode())
    elif fmt == "jsonl":
        rows = [json.dumps({"id": i, "body": t}, ensure_ascii=False) for i, t in enumerate(TEXTS)]
        _write(name, ("\n".join(rows) + "\n").encode())
    elif fmt == "csv":
        import io

        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["label", "body"])
        w.writerows([[i, t] for i, t in enumerate(TEXTS)])
        _write(name, buf.getvalue().encode())
    elif fmt == "tsv":  # SST-2 style: no quoting at all, quotes are literal characters
        lines = ["body\tlabel"] + [f"{t.replace(chr(9), ' ')}\t{i}" for i, t in enumerate(TEXTS)]
        _write(name, ("\n".join(lines) + "\n").encode())
    elif fmt == "parquet":
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        pq.write_table(pa.table({"label": list(range(5)), "body": TEXTS}), buf, row_group_size=2)
        _write(name, buf.getvalue())
    return name


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("fmt", ["txt", "jsonl", "csv", "tsv", "parquet"])
def test_text_formats(tmp_path, fmt, gz):
    path = _make(tmp_path, fmt, gz)
    column = None if fmt == "txt" else "body"
    expected = [t.replace("\t", " ") if fmt == "tsv" else t for t in TEXTS]
    assert list(read_texts(path, text_column=column)) == expected
    assert list(read_texts(path, text_column=column, limit=2)) == expected[:2]


@pytest.mark.parametrize(
    ("fmt", "columns"),
    [("csv", "['label', 'body']"), ("tsv", "['body', 'label']"), ("parquet", "['label', 'body']")],
)
def test_a_missing_column_is_named_with_the_columns_present(tmp_path, fmt, columns):
    path = _make(tmp_path, fmt, False)
    message = f"{path}: no column 'text'; columns present: {columns}; pass text_column= one of them"
    with pytest.raises(PosgeomError, match=f"^{re.escape(message)}$"):
        list(read_texts(path, text_column="text"))


def test_reading_is_lazy(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"ok line\n" + b"\xff broken\n")
    it = read_texts(path)
    assert next(it) == "ok line"  # the bad second line is not touched yet
    with pytest.raises(PosgeomError, match=r"big\.txt, line 2: .*UTF-8"):
        next(it)


def test_sst2_tsv_matches_pandas(shared_data):
    pd = pytest.importorskip("pandas")
    path = shared_data / "sst2" / "glue" / "validation.tsv.gz"
    ref = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
    got = list(read_texts(path, text_column="text"))
    assert got == ref["text"].tolist() and len(got) == 872


def test_imdb_jsonl_limit(shared_data):
    path = shared_data / "imdb" / "test.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        ref = [json.loads(next(fh))["text"] for _ in range(3)]
    assert list(read_texts(path, limit=3)) == ref


def test_hf_dataset_dir(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"body": TEXTS, "label": list(range(5))})
    ds.save_to_disk(str(tmp_path / "ds"))
    assert detect_format(tmp_path / "ds") == "hf-disk"
    assert list(read_texts(tmp_path / "ds", text_column="body")) == TEXTS
    dd = datasets.DatasetDict({"train": ds, "test": ds.select([0, 1])})
    dd.save_to_disk(str(tmp_path / "dd"))
    assert list(read_texts(tmp_path / "dd", text_column="body", split="test")) == TEXTS[:2]
    with pytest.raises(PosgeomError, match=r"splits \['train', 'test'\]"):
        list(read_texts(tmp_path / "dd", text_column="body"))
    with pytest.raises(PosgeomError, match=r"columns present: \['body', 'label'\]"):
        list(read_texts(tmp_path / "ds", text_column="sentence"))


SEQS = [[5, 1, 7], [2], [3, 3, 3, 3], [9, 8]]


def test_token_ids_in_memory_and_npy(tmp_path):
    got = [a.tolist() for a in read_token_ids(SEQS)]
    assert got == SEQS
    padded = np.full((4, 5), 0, dtype=np.int32)
    for i, s in enumerate(SEQS):
        padded[i, : len(s)] = s
    np.save(tmp_path / "p.npy", padded)
    assert [a.tolist() for a in read_token_ids(tmp_path / "p.npy", pad_id=0)] == SEQS
    assert [a.tolist() for a in read_token_ids(padded, pad_id=0, limit=2)] == SEQS[:2]
    flat = np.array([5, 1, 7, 0, 2, 0, 3, 3, 3, 3, 0, 9, 8], dtype=np.int64)
    np.save(tmp_path / "f.npy", flat)
    assert [a.tolist() for a in read_token_ids(tmp_path / "f.npy", separator_id=0)] == SEQS
    assert all(a.dtype == np.int64 for a in read_token_ids(tmp_path / "p.npy", pad_id=0))


def test_token_ids_npz(tmp_path):
    padded = np.array([[5, 1, 7, 4], [2, 4, 4, 4], [3, 3, 3, 3], [9, 8, 4, 4]], dtype=np.int64)
    np.savez(tmp_path / "a.npz", input_ids=padded, labels=np.arange(4))
    assert [a.tolist() for a in read_token_ids(tmp_path / "a.npz", pad_id=4)] == SEQS
    np.savez(tmp_path / "b.npz", tokens=padded, lengths=np.array([3, 1, 4, 2]))
    assert [a.tolist() for a in read_token_ids(tmp_path / "b.npz", key="tokens")] == SEQS
    np.savez(tmp_path / "c.npz", x=padded, y=padded)
    with pytest.raises(PosgeomError, match=r"arrays present: \['x', 'y'\]"):
        read_token_ids(tmp_path / "c.npz")


@pytest.mark.parametrize("dtype,sep", [(np.uint16, 50256), (np.uint32, 100_000)])
def test_nanogpt_bin(tmp_path, dtype, sep):
    # nanoGPT prepare.py: ids of each document followed by the end-of-text id, one flat stream
    stream = []
    for s in SEQS:
        stream += [*s, sep]
    np.array(stream, dtype=dtype).tofile(tmp_path / "train.bin")
    got = read_token_ids(tmp_path / "train.bin", separator_id=sep, dtype=dtype)
    assert [a.tolist() for a in got] == SEQS
    counts = count_corpus(
        tmp_path / "train.bin", max_positions=4, separator_id=sep, token_dtype=dtype
    )
    assert counts.n_sequences == 4 and counts.totals.tolist() == [4, 3, 2, 1]


def test_token_id_bad_input(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([[1, 2], [3]], dtype=object), allow_pickle=True)
    with pytest.raises(PosgeomError, match="not a plain numeric dtype"):  # never unpickled
        read_token_ids(tmp_path / "obj.npy")
    np.array([1, 2, 3], dtype=np.uint16).tofile(tmp_path / "odd.bin")
    with pytest.raises(PosgeomError, match="not a multiple"):
        read_token_ids(tmp_path / "odd.bin", separator_id=0, dtype=np.uint32)
    with pytest.raises(PosgeomError, match="separator_id"):
        read_token_ids(tmp_path / "odd.bin")
    np.save(tmp_path / "fl.npy", np.full((2, 2), 3.0))  # whole numbers are ids ...
    assert [a.tolist() for a in read_token_ids(tmp_path / "fl.npy")] == [[3, 3], [3, 3]]
    np.save(tmp_path / "fl.npy", np.full((2, 2), 2.5))  # ... fractions are not
    with pytest.raises(PosgeomError, match="not a whole number"):
        list(read_token_ids(tmp_path / "fl.npy"))


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(PosgeomError, match="does not exist"):
        read_texts(tmp_path / "nope.txt")
    with pytest.raises(PosgeomError, match="does not exist"):
        read_token_ids(tmp_path / "nope.npy")
    (tmp_path / "data.xyz").write_text("a\n")
    with pytest.raises(PosgeomError, match="cannot tell the format"):
        read_texts(tmp_path / "data.xyz")
    assert list(read_texts(tmp_path / "data.xyz", format="text")) == ["a"]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
def test_missing_column_lists_columns(tmp_path, fmt):
    path = _make(tmp_path, fmt, gz=False)
    with pytest.raises(PosgeomError, match=r"no (column|field) 'sentence'.*\['?body'?|label"):
        list(read_texts(path, text_column="sentence"))
    with pytest.raises(PosgeomError, match="body"):
        list(read_texts(path, text_column="sentence"))


@pytest.mark.parametrize("name", ["bad.txt", "bad.tsv.gz", "bad.jsonl"])
def test_undecodable_bytes_name_file_and_line(tmp_path, name):
    header = b"text\tlabel\n" if ".tsv" in name else b""
    body = b'{"text": "fine"}\n{"text": "caf\xe9"}\n' if "jsonl" in name else b"fine\ncaf\xe9\n"
    if header:  # every row has the header's two fields
        body = b"fine\t1\ncaf\xe9\t0\n"
    _write(tmp_path / name, header + body)
    line = 3 if header else 2
    with pytest.raises(PosgeomError, match=rf"{name}, line {line}: .*UTF-8"):
        list(read_texts(tmp_path / name))


def test_not_gzip_and_bad_json(tmp_path):
    (tmp_path / "fake.txt.gz").write_bytes(b"plain text, not gzip\n")
    with pytest.raises(PosgeomError, match=r"fake.txt.gz"):
        list(read_texts(tmp_path / "fake.txt.gz"))
    (tmp_path / "b.jsonl").write_text('{"text": "ok"}\n{"text": \n')
    with pytest.raises(PosgeomError, match="line 2: invalid JSON"):
        list(read_texts(tmp_path / "b.jsonl"))


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_corpus_raises_when_counting(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    assert all(not t.strip() for t in read_texts(path))
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    tok = WordLevelTokenizer(["[UNK]", "a"])
    with pytest.raises(PosgeomError, match="no sequences to count"):
        count_corpus(path, tok, max_positions=8)


LABELLED = ["1 the cat sat on the mat", "0 a dog ran", "1 é è ü café naïve", "0", "1 the end"]


def _count_cli(tmp_path, name, *argv):
    from posgeom.cli.main import main
    from posgeom.corpus.counting import PositionCounts

    out = tmp_path / f"{name}.npz"
    assert main(["-q", "count", *map(str, argv), "-t", "word", "-n", "6", "-o", str(out)]) == 0
    return PositionCounts.load(out)


def test_gzipped_label_text_lines_with_an_unknown_suffix_count_directly(tmp_path, capsys):
    """A gzipped "label text" file named data.all.gz counts with --format text --text-field 2
    exactly as the same texts without their labels in a plain .txt (the reference)."""
    from posgeom.cli.main import main

    data = tmp_path / "data.all.gz"
    data.write_bytes(gzip.compress(("\n".join(LABELLED) + "\n").encode("utf-8"), mtime=0))
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(t.partition(" ")[2] for t in LABELLED) + "\n", encoding="utf-8")
    got = _count_cli(tmp_path, "got", data, "--format", "text", "--text-field", "2")
    want = _count_cli(tmp_path, "want", plain)
    assert got.counts.toarray().tolist() == want.counts.toarray().tolist()
    assert (got.n_sequences, got.n_tokens) == (want.n_sequences, want.n_tokens)
    assert got.tokenizer["vocab_size"] == want.tokenizer["vocab_size"]
    # the label is not counted: '1' and '0' are no token of the vocabulary
    assert list(read_texts(data, format="text", text_field=2))[:2] == [
        "the cat sat on the mat",
        "a dog ran",
    ]
    # without --format the suffix is refused in one line that names the flag
    assert (
        main(["-q", "count", str(data), "-t", "word", "-n", "6", "-o", str(tmp_path / "x.npz")])
        == 2
    )
    err = capsys.readouterr().err
    assert "pass --format" in err and "format=" in err and len(err.strip().splitlines()) == 1


def test_a_latin1_corpus_counts_with_its_text_encoding(tmp_path, capsys):
    from posgeom.cli.main import main

    texts = [t.partition(" ")[2] for t in LABELLED]
    latin = tmp_path / "latin.txt"
    latin.write_bytes(("\n".join(texts) + "\n").encode("latin-1"))
    utf8 = tmp_path / "utf8.txt"
    utf8.write_text("\n".join(texts) + "\n", encoding="utf-8")
    got = _count_cli(tmp_path, "latin", latin, "--text-encoding", "latin-1")
    want = _count_cli(tmp_path, "utf8", utf8)
    assert got.counts.toarray().tolist() == want.counts.toarray().tolist()
    assert list(read_texts(latin, encoding="latin-1"))[2] == "é è ü café naïve"
    # read as UTF-8 it is refused at its line, naming the flag; --encoding-errors replace reads it
    argv = ["-q", "count", str(latin), "-t", "word", "-n", "6", "-o", str(tmp_path / "x.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "--text-encoding" in err and not (tmp_path / "x.npz").exists()
    assert (
        list(read_texts(latin, errors="replace"))[2] == "\ufffd \ufffd \ufffd caf\ufffd na\ufffdve"
    )
    assert main([*argv, "--text-encoding", "no-such-codec"]) == 2
    assert "is not a Python codec" in capsys.readouterr().err
    with pytest.raises(PosgeomError, match="--encoding-errors must be one of"):
        list(read_texts(latin, errors="loud"))


def test_a_token_id_file_given_to_a_text_reader_names_the_fix(tmp_path):
    """A .npy of token ids where text is read: one line saying it is not text and what reads it."""
    path = tmp_path / "ids.npy"
    np.save(path, np.arange(12).reshape(3, 4))
    with pytest.raises(PosgeomError) as info:
        list(read_texts(path))
    message = str(info.value)
    assert "holds token ids (npy), not text" in message and "posgeom count" in message
    assert "\n" not in message
