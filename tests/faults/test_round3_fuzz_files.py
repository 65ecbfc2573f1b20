"""Fuzzing the files of round three (issue 27) byte by byte: job folders, token-id archives
and decoder files (test_round3_fuzz.py mutates family specs, lengths arrays and job plans by
field). Whatever the bytes or values, each reader gives a correct result or one PosgeomError: a
resumed job equals one pass over the corpus (or refuses) and never deletes a file it did not
write, a token-id archive gives int64 ids without allocating what it declares, a decoder file
gives a model whose tensors are the file's."""

from __future__ import annotations

import io
import json
import shutil
import tracemalloc
import zipfile

import numpy as np
import pytest
from fault_helpers import mutate_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posgeom._errors import PosgeomError
from posgeom.corpus import read_token_ids
from posgeom.io._inflate import INFLATION_FLOOR

_FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats()
    | st.text(max_size=4)
    | st.lists(st.integers(-3, 10**12), max_size=3)
)


def _edit_bytes(blob: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    raw = bytearray(blob)
    for at, value in edits:
        if raw:
            raw[at % len(raw)] = value
    return bytes(raw if cut is None else raw[: cut % (len(raw) + 1)])


_EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6)


# ------------------------------------------------------------------------------ job folders


@pytest.fixture(scope="module")
def job(tmp_path_factory, small_corpus):
    """A finished counting job (three shards, word tokenizer) and the one-pass counts."""
    from posgeom import count_corpus
    from posgeom.corpus.jobs import count_resumable

    folder = tmp_path_factory.mktemp("jobs") / "job"
    args = {"max_positions": 6, "shard_lines": 150, "progress": False}
    count_resumable(small_corpus, "word", job_dir=folder, **args)
    return folder, args, count_corpus(small_corpus, "word", max_positions=6)


@_FUZZ
@given(
    which=st.integers(0, 20),
    how=st.sampled_from(["json", "bytes", "delete"]),
    path=st.lists(st.integers(0, 40), min_size=1, max_size=5),
    value=_VALUES,
    edits=_EDITS,
    cut=st.none() | st.integers(0, 10**6),
    drop_result=st.booleans(),
    user_file=st.booleans(),
)
def test_fuzz_job_folders(
    job, small_corpus, tmp_path, which, how, path, value, edits, cut, drop_result, user_file
):
    from posgeom.corpus.jobs import count_resumable

    source, args, reference = job
    folder = tmp_path / "job"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    files = sorted(folder.iterdir())
    if user_file:  # a file posgeom did not write: never deleted, whatever happens
        (folder / "notes.txt").write_text("the user's own file")
    target = files[which % len(files)]
    if how == "delete":
        target.unlink()
    elif how == "json" and target.suffix == ".json":
        target.write_text(json.dumps(mutate_json(json.loads(target.read_text()), path, value)))
    else:
        target.write_bytes(_edit_bytes(target.read_bytes(), edits, cut))
    if drop_result and (folder / "counts.npz").exists():
        (folder / "counts.npz").unlink()
    try:
        got = count_resumable(small_corpus, "word", job_dir=folder, **args)
    except PosgeomError:
        got = None
    if got is not None:  # resumed or recounted: the one-pass counts, exactly
        assert (got.counts != reference.counts).nnz == 0
        assert got.n_sequences == reference.n_sequences and got.n_tokens == reference.n_tokens
    if user_file:
        assert (folder / "notes.txt").read_text() == "the user's own file"


# ----------------------------------------------------------------------- token-id archives


def _archive(
    ids: np.ndarray, lengths: np.ndarray, compression: int, declared: int | None = None
) -> bytes:
    """An .npz of ``ids`` and ``lengths``; ``declared``: the ids' .npy header claims that many
    rows (the data stays that of ``ids``)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as zf:
        for name, array in (("input_ids", ids), ("lengths", lengths)):
            member = io.BytesIO()
            if name == "input_ids" and declared is not None:
                shape = (declared, *array.shape[1:])
                header = {"descr": "<i8", "fortran_order": False, "shape": shape}
                np.lib.format.write_array_header_1_0(member, header)
                member.write(array.astype("<i8").tobytes())
            else:
                np.save(member, array)
            zf.writestr(f"{name}.npy", member.getvalue())
    return out.getvalue()


@_FUZZ
@given(
    compression=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
    edits=st.none() | _EDITS,
    cut=st.none() | st.integers(0, 10**6),
    sizes=st.none() | st.tuples(st.integers(0, 2**40), st.integers(0, 2**20)),
    declared=st.none() | st.integers(0, 2**40),
)
def test_fuzz_token_id_archives(tmp_path, compression, edits, cut, sizes, declared):
    """Byte edits, forged zip sizes (the central directory's uncompressed and compressed sizes
    of the first member) and forged row counts in the .npy header: ids as int64 arrays, or one
    PosgeomError (never an allocation of what the file declares)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 500, size=(30, 12))
    blob = _archive(ids, rng.integers(1, 13, size=30), compression, declared)
    if sizes is not None:  # the central directory entry of input_ids.npy
        at = blob.rindex(b"PK\x01\x02", 0, blob.rindex(b"PK\x01\x02"))
        raw = bytearray(blob)
        raw[at + 20 : at + 28] = sizes[1].to_bytes(4, "little") + (sizes[0] % 2**32).to_bytes(
            4, "little"
        )
        blob = bytes(raw)
    path = tmp_path / "ids.npz"
    path.write_bytes(blob if edits is None else _edit_bytes(blob, edits, cut))
    tracemalloc.start()
    try:
        rows = list(read_token_ids(path))
    except PosgeomError:
        rows = []
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < INFLATION_FLOOR + (16 << 20), peak  # never what the file declares
    assert all(r.dtype == np.int64 and r.ndim == 1 for r in rows)


# ------------------------------------------------------------------------------ decoder files


@pytest.fixture(scope="module")
def decoder_file(tmp_path_factory):
    pytest.importorskip("torch")
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig, save_decoder

    config = DecoderConfig(
        position="learned", d_model=8, n_heads=2, n_layers=1, d_ff=16, trained_length=16
    )
    path = tmp_path_factory.mktemp("decoder") / "d.safetensors"
    return save_decoder(CausalDecoder(config, seed=0), path).read_bytes()


def _with_config(blob: bytes, path: list[int], value) -> bytes:
    """The decoder file with one value of its configuration (in the JSON header) replaced."""
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + n])
    meta = json.loads(header["__metadata__"]["posgeom"])
    meta["config"] = mutate_json(meta["config"], path, value)
    header["__metadata__"]["posgeom"] = json.dumps(meta)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + blob[8 + n :]


@_FUZZ
@given(
    mode=st.sampled_from(["config", "bytes"]),
    path=st.lists(st.integers(0, 20), min_size=1, max_size=1),
    value=_VALUES | st.integers(0, 1 << 22),
    edits=_EDITS,
    cut=st.none() | st.integers(0, 10**6),
)
def test_fuzz_decoder_files(decoder_file, tmp_path, mode, path, value, edits, cut):
    """A damaged file or any configuration value: a decoder whose tensors are the file's, or one
    PosgeomError (sizes past the bounds, or not matching the tensors, refused before building)."""
    from safetensors.torch import load_file

    from posgeom.nn.decoder import load_decoder

    blob = _with_config(decoder_file, path, value) if mode == "config" else decoder_file
    target = tmp_path / "d.safetensors"
    target.write_bytes(_edit_bytes(blob, edits, cut) if mode == "bytes" else blob)
    try:
        model, _ = load_decoder(target)
    except PosgeomError:
        return
    assert isinstance(model.config.tokenizer, str) and model.config.vocab_size <= 1 << 20
    stored = load_file(str(target))
    assert all(
        np.array_equal(stored[k].numpy(), v.detach().numpy()) for k, v in model.state_dict().items()
    )


def test_the_fuzzed_archive_reads_back_exactly(tmp_path):
    """The archive the token-id fuzzer starts from: its rows, cut to their lengths, as written."""
    rng = np.random.default_rng(0)
    ids, lengths = rng.integers(0, 500, size=(30, 12)), rng.integers(1, 13, size=30)
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        (tmp_path / "ids.npz").write_bytes(_archive(ids, lengths, compression))
        rows = list(read_token_ids(tmp_path / "ids.npz"))
        assert [r.tolist() for r in rows] == [ids[i, : lengths[i]].tolist() for i in range(30)]
