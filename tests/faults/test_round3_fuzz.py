"""Fuzzing what issue 27 found unchecked: family specs, token-id archives and job folders.

Whatever the input: a result that is right (checked against an independent reading) or one
PosgeomError, never another exception and never a silently different result.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posgeom import PosgeomError
from posgeom.corpus.jobs import count_resumable
from posgeom.corpus.token_ids import read_token_ids

_FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_NUMBERS = st.sampled_from(
    ["0", "1", "2", "3", "-1", "64", "64.7", "1e4", "nan", "inf", "-inf", "1e400", "0.5", "x", ""]
)
_KEYS = st.sampled_from(
    [
        "theta",
        "head_dim",
        "partial_rotary_factor",
        "heads",
        "d",
        "base",
        "num_buckets",
        "max_distance",
        "max_position_embeddings",
        "bogus",
    ]
)


@_FUZZ
@given(
    family=st.sampled_from(["rope", "alibi", "sinusoidal", "t5", "nope", "learned", ""]),
    items=st.lists(st.tuples(_KEYS, _NUMBERS), max_size=4),
)
def test_fuzz_family_specs(family, items):
    from posgeom.encodings import extension_of
    from posgeom.encodings._extension import SPEC_LENGTH
    from posgeom.extension.model import parse_family_spec

    spec = family + (":" + ",".join(f"{k}={v}" for k, v in items) if items else "")
    try:
        model = parse_family_spec(spec)
    except PosgeomError:
        return
    given_values = {k: float(v) for k, v in items}  # every accepted value is in its range, kept
    for key, value in given_values.items():
        assert np.isfinite(value)
        ranges = {**extension_of(model.family).spec_keys, "max_position_embeddings": SPEC_LENGTH}
        assert ranges[key].accepts(int(value) if value.is_integer() else value)
    if "head_dim" in given_values:
        assert model.head_dim == given_values["head_dim"]
    if "max_position_embeddings" in given_values:
        assert model.trained_length == given_values["max_position_embeddings"]


@_FUZZ
@given(
    rows=st.integers(0, 4),
    width=st.integers(0, 5),
    lengths=st.lists(st.integers(-3, 8), max_size=6) | st.none(),
    lengths_dtype=st.sampled_from(["int64", "int8", "uint16", "float64", "bool"]),
    two_d_lengths=st.booleans(),
)
def test_fuzz_token_id_archives(tmp_path, rows, width, lengths, lengths_dtype, two_d_lengths):
    ids = np.arange(rows * width, dtype=np.int64).reshape(rows, width)
    arrays = {"input_ids": ids}
    if lengths is not None:
        cut = np.array(lengths).astype(lengths_dtype)
        arrays["lengths"] = cut[None, :] if two_d_lengths else cut
    path = tmp_path / "ids.npz"
    np.savez(path, **arrays)
    try:
        got = [r.tolist() for r in read_token_ids(path)]
    except PosgeomError:
        return
    if lengths is None:
        assert got == ids.tolist()
    else:  # accepted lengths are one valid cut per row, applied as given
        assert not two_d_lengths and len(lengths) == rows and lengths_dtype not in ("float64",)
        assert got == [ids[i, : int(n)].tolist() for i, n in enumerate(arrays["lengths"])]


@pytest.fixture(scope="module")
def recorded_job(tmp_path_factory):
    root = tmp_path_factory.mktemp("job")
    rng = np.random.default_rng(0)
    corpus = root / "c.txt"
    words = [f"w{k}" for k in range(20)]
    lines = (" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(240))
    corpus.write_text("\n".join(lines) + "\n")
    whole = count_resumable(
        corpus, "word", max_positions=8, job_dir=root / "job", shard_lines=80, progress=False
    )
    return corpus, root / "job", whole


@_FUZZ
@given(
    shard=st.integers(0, 2),
    field=st.sampled_from(["path", "start", "stop", "first_line", "last_line", "index", "format"]),
    value=st.none() | st.integers(-5, 10**4) | st.sampled_from(["", "x.txt", "text", "jsonl"]),
    drop=st.booleans(),
)
def test_fuzz_job_manifests(recorded_job, tmp_path, shard, field, value, drop):
    corpus, job, whole = recorded_job
    folder = tmp_path / "job"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(job, folder)
    doc = json.loads((folder / "manifest.json").read_text())
    if drop:
        del doc["shards"][shard]
    else:
        doc["shards"][shard][field] = value
    (folder / "manifest.json").write_text(json.dumps(doc))
    try:
        counts = count_resumable(
            corpus, "word", max_positions=8, job_dir=folder, shard_lines=80, progress=False
        )
    except PosgeomError:
        return
    assert (counts.counts != whole.counts).nnz == 0  # only an unchanged plan resumes
    assert counts.fingerprint == whole.fingerprint
