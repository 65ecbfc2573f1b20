"""The error path (issue 27, item 20): a library's exception on a user's input is one line naming
the file and the fix, not "<Type>: <text> (an unexpected failure)", and what the library prints
about the same failure (transformers' load report, distributed's traceback, a Rust panic written
to file descriptor 2) stays off the terminal. Every case is a real damaged or hostile input made
here and run through the real libraries."""

from __future__ import annotations

import gzip
import json
import logging
import os
import resource
import shutil
import socket
import struct
import threading
from pathlib import Path

import pytest
from fault_helpers import MARKER, Evil, cli, one_line, panicking_tokenizer, temporaries

from helpers.models import tiny_bert_config
from helpers.training import tiny_train_config
from posgeom._errors import PosgeomError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("code_never_runs")


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    """A tiny random BERT folder (config.json, model.safetensors, a WordLevel tokenizer)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    folder = tmp_path_factory.mktemp("models") / "bert"
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", *(f"w{k}" for k in range(20))])}
    torch.manual_seed(0)
    config = tiny_bert_config(len(vocab), 16, num_hidden_layers=1)
    transformers.BertModel(config).save_pretrained(folder)
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def _copy(bert: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(bert, tmp_path / name))


def _edit_safetensors_header(path: Path, edit) -> None:
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + blob[8 + n :])


def test_item20_model_folders_are_one_line_naming_the_file(bert, tmp_path, small_corpus, capsys):
    """A damaged or mismatched model.safetensors, a 100k-deep config.json, a pickled
    pytorch_model.bin (with torch's advice to pass weights_only=False) and a safetensors dimension
    of 10^20 reached the generic fallback; a config.json that is not JSON was told to download."""
    torch = pytest.importorskip("torch")
    damaged = _copy(bert, tmp_path, "damaged")
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    mismatched = _copy(bert, tmp_path, "mismatched")
    config = json.loads((mismatched / "config.json").read_text())
    (mismatched / "config.json").write_text(json.dumps({**config, "intermediate_size": 40}))
    deep = _copy(bert, tmp_path, "deep")
    (deep / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    pickled = _copy(bert, tmp_path, "pickled")
    (pickled / "model.safetensors").unlink()
    torch.save({"weights": Evil()}, pickled / "pytorch_model.bin")
    huge = _copy(bert, tmp_path, "huge")
    key = "embeddings.word_embeddings.weight"
    _edit_safetensors_header(huge / "model.safetensors", lambda h: h[key].update(shape=[10**20]))
    broken = _copy(bert, tmp_path, "broken")
    (broken / "config.json").write_text('{"model_type": "bert", ')
    cases = {
        broken: "config.json' is not a valid JSON file.); restore the file named there",
        damaged: "its weights file (model.safetensors) is damaged",
        mismatched: "do not have the shapes its config.json describes (encoder.layer.0.",
        deep: "is nested too deeply to be read; restore the original file",
        pickled: "posgeom never unpickles them",
        huge: "its weights file (model.safetensors) is damaged or forged",
    }
    for folder, words in cases.items():
        for argv in (["extract", folder], ["analyze-model", folder, small_corpus, "-n", 6]):
            code, err = cli(capsys, *argv, "-o", tmp_path / "out")
            line = one_line(err)
            assert code == 2 and str(folder) in line and words in line, line
            if folder == mismatched:
                # the first mismatched weight (which one varies): 24 rows or columns, now 40
                assert "ckpt: torch.Size([" in line and "vs model:torch.Size([" in line, line
                assert "24" in line.split("ckpt:")[1] and "40" in line.split("vs model:")[1]
            assert "unexpected failure" not in line and "weights_only=False" not in line
    assert not (tmp_path / "out").exists()


def test_item20_the_load_report_of_a_failed_load_stays_off_the_terminal(bert, tmp_path, caplog):
    """transformers logs a table of mismatched weights before it raises; with posgeom's one line
    it is dropped; for a load that succeeds it is dropped too (issue 32: nothing from a library
    on success), the weights the checkpoint lacks named in one posgeom line instead."""
    transformers = pytest.importorskip("transformers")
    from posgeom._hub import pretrained_model

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    library = logging.getLogger("transformers")
    library.addHandler(handler)
    logging.getLogger("posgeom").addHandler(handler)
    try:
        mismatched = _copy(bert, tmp_path, "mismatched")
        config = json.loads((mismatched / "config.json").read_text())
        (mismatched / "config.json").write_text(json.dumps({**config, "intermediate_size": 40}))
        with pytest.raises(PosgeomError, match=r"do not have the shapes its config\.json"):
            pretrained_model(mismatched)
        assert not any("LOAD REPORT" in r.getMessage() for r in records)
        # a model class with weights the folder lacks: loads quietly, the missing ones named
        with caplog.at_level(logging.INFO, logger="posgeom"):
            pretrained_model(bert, model_class=transformers.BertForMaskedLM)
        assert not any("LOAD REPORT" in r.getMessage() for r in records)
        notes = [r.getMessage() for r in records if r.name == "posgeom"]
        assert len(notes) == 1 and "initialised at random (cls.predictions" in notes[0], notes
    finally:
        library.removeHandler(handler)
        logging.getLogger("posgeom").removeHandler(handler)


def test_item20_training_checkpoints_with_bad_metadata_or_shapes(tmp_path):
    """A checkpoint with metadata that is not JSON, a history record of other fields, a missing
    optimizer entry or a tensor of another shape ended in JSONDecodeError, TypeError, KeyError or
    torch's RuntimeError. (A run folder refuses a checkpoint edited since it was recorded; these
    files are read here as train reads them: load_checkpoint, then restore into the run's model.)
    Each is now one ArtifactError naming the file and the fix."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    from posgeom.training import TextData, train
    from posgeom.training.runfiles import load_checkpoint, restore

    words = "the film is a good bad slow story with great acting".split()
    texts = [" ".join(words[(i + k) % len(words)] for k in range(6)) for i in range(12)]
    data = TextData(texts[:8], texts[8:], [i % 2 for i in range(8)], [0, 1, 0, 1])
    config = tiny_train_config(max_len=6, steps_per_epoch=1)
    model = train(config, tmp_path / "run", data=data).model
    meta, tensors = load_checkpoint(tmp_path / "run" / "checkpoint.safetensors")
    assert tensors.keys() == load_file(str(tmp_path / "run" / "checkpoint.safetensors")).keys()
    bad_history = [{**r, "bogus": 1} for r in meta["history"]]
    wrong_head = {**tensors, "model.head.weight": tensors["model.head.weight"][:, :3].clone()}
    cases = [
        (tensors, "{not json", "metadata is not valid JSON"),
        (tensors, json.dumps({**meta, "history": bad_history}), "a history record is malformed"),
        (tensors, json.dumps({**meta, "epoch": "x"}), "epoch 'x' is not a count of epochs"),
        (tensors, json.dumps({**meta, "history": []}), "the history does not hold epochs 0 .. 1"),
        (tensors, json.dumps({**meta, "step_shapes": {}}), "does not fit this run's model"),
        (wrong_head, json.dumps(meta), "size mismatch for head.weight"),
    ]
    ckpt = tmp_path / "forged.safetensors"
    for tensors_written, raw, words in cases:
        save_file(tensors_written, str(ckpt), metadata={"posgeom": raw})
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
        with pytest.raises(PosgeomError) as info:
            restore(model, opt, *load_checkpoint(ckpt), ckpt)
        message = str(info.value)
        assert words in message and str(ckpt) in message, message
        assert "delete it to restart the run" in message and "\n" not in message
    save_file(tensors, str(ckpt), metadata={"posgeom": json.dumps(meta)})
    restore(model, torch.optim.AdamW(model.parameters()), *load_checkpoint(ckpt), ckpt)


def test_item20_a_full_disk_while_writing_a_checkpoint(tmp_path, capsys):
    """A full disk while the checkpoint was written ended in safetensors' SafetensorError. The
    checkpoint is now written by posgeom's atomic writer: one line naming the file, no temporary.
    (RLIMIT_FSIZE stands in for the full disk: the write fails with EFBIG at 8 KiB.)"""
    pytest.importorskip("torch")
    argv = [
        "train",
        "--task",
        "order",
        "--d-model",
        16,
        "--heads",
        2,
        "--layers",
        1,
        "--max-len",
        8,
        "--steps-per-epoch",
        1,
        "--order-samples",
        32,
        "--eval-limit",
        16,
        "--threads",
        1,
        "--epochs",
        1,
        "-o",
        tmp_path / "run",
    ]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        code, err = cli(capsys, *argv)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    line = one_line(err)
    assert code == 2 and "checkpoint.safetensors" in line and "too large" in line, line
    assert "unexpected failure" not in line
    assert not (tmp_path / "run" / "checkpoint.safetensors").exists()
    assert temporaries(tmp_path / "run") == []


def test_item20_dataset_folders(tmp_path, capsys):
    """A truncated .arrow file said "a file: Expected to be able to read ..."; a folder with a
    loading script ended in RuntimeError (the script is never run)."""
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    datasets.Dataset.from_dict({"text": [f"w{i} w{i + 1}" for i in range(3000)]}).save_to_disk(
        saved
    )
    capsys.readouterr()  # the datasets library's own progress bar
    arrow = next(saved.glob("*.arrow"))
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    script = tmp_path / "scripted"
    script.mkdir()
    (script / "scripted.py").write_text(f"open({str(MARKER)!r}, 'w')\n")
    (script / "data.txt").write_text("a b\n")
    out = tmp_path / "c.npz"
    code, err = cli(capsys, "count", saved, "-n", 4, "-o", out)
    line = one_line(err)
    assert code == 2 and f"{saved} cannot be read" in line and "Dataset.save_to_disk" in line
    code, err = cli(capsys, "count", script, "--format", "hf-hub", "-n", 4, "-o", out)
    line = one_line(err)
    assert code == 2 and "loading script" in line and "never runs" in line, line
    assert not out.exists()


def _garbage_server(frame_size: int) -> tuple[socket.socket, int]:
    """A TCP service that passes posgeom's handshake probe (a plausible 8-byte length first),
    then sends frames no Dask client can read."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            body = struct.pack("<Q", 1) + struct.pack("<Q", frame_size) + bytes(range(200))
            try:
                conn.sendall(struct.pack("<Q", len(body)) + body)
                conn.recv(1 << 16)
            except OSError:
                pass
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


@pytest.mark.parametrize("frame_size", [200, 1 << 40])
def test_item20_a_dask_endpoint_sending_garbage(small_corpus, caplog, frame_size):
    """msgpack's ExtraData, distributed's AssertionError and its "Failed to deserialize"
    traceback reached the terminal; now one line, and distributed's log of it is held back."""
    pytest.importorskip("distributed")
    from posgeom.corpus.distributed import count_distributed

    server, port = _garbage_server(frame_size)
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(PosgeomError) as info:
            count_distributed(
                small_corpus,
                "word",
                max_positions=4,
                scheduler=f"tcp://127.0.0.1:{port}",
                connect_timeout=3,
            )
    finally:
        server.close()
    assert "is it a Dask scheduler?" in str(info.value) and f":{port}" in str(info.value)
    assert not any("deserialize" in r.getMessage() for r in caplog.records)


def test_item20_option_values_reaching_a_library(small_corpus, tmp_path, capsys):
    """`count --token-dtype nonsense` (numpy's TypeError) and `analyze-model --threads -2`
    (torch's RuntimeError) ended in the generic fallback."""
    code, err = cli(
        capsys,
        "count",
        small_corpus,
        "-n",
        4,
        "--token-dtype",
        "nonsense",
        "-o",
        tmp_path / "c.npz",
    )
    assert code == 2 and "--token-dtype must be one of uint16, uint32" in one_line(err)
    code, err = cli(
        capsys,
        "analyze-model",
        tmp_path,
        small_corpus,
        "-n",
        6,
        "--threads",
        -2,
        "-o",
        tmp_path / "a",
    )
    assert code == 2 and "--threads must be an integer >= 1 and <= 1024" in one_line(err)
    assert not (tmp_path / "c.npz").exists() and not (tmp_path / "a").exists()


def test_item20_a_tokenizer_panic_keeps_the_rust_text_off_stderr(tmp_path, capfd):
    """A normalizer regex hitting Oniguruma's retry limit exited 2 with one posgeom line, but the
    Rust panic message (and a backtrace with RUST_BACKTRACE) reached file descriptor 2 first."""
    pytest.importorskip("tokenizers")
    from posgeom.cli.main import main

    evil, corpus = panicking_tokenizer(tmp_path)
    argv = ["-q", "count", corpus, "-n", 4, "-t", evil, "-o", tmp_path / "x.npz"]
    assert main([str(a) for a in argv]) == 2
    err = capfd.readouterr().err
    assert "panicked" not in err and "retry-limit" in one_line(err)


def test_item20_held_stderr_passes_output_of_a_call_that_succeeds(capfd):
    """The holder of descriptor 2 drops only a failing call's output."""
    from posgeom._library_output import held_stderr

    with held_stderr() as captured:
        os.write(2, b"native note\n")
    assert capfd.readouterr().err == "native note\n" and captured == ["native note\n"]
    with pytest.raises(RuntimeError), held_stderr():
        os.write(2, b"thread panicked at ...\n")
        raise RuntimeError("the call failed")
    assert capfd.readouterr().err == ""


def test_item20_damaged_training_data_files(tmp_path, capsys):
    """train's TSV reader opened files itself: a bad UTF-8 byte and a truncated .tsv.gz ended in
    UnicodeDecodeError / EOFError. It now reads through the corpus layer's located line reader."""
    pytest.importorskip("torch")
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"text\tlabel\nok text\t1\nbad \xff byte\t0\n")
    whole = gzip.compress(b"text\tlabel\n" + b"a b c\t1\n" * 5000)
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    cases = {bad: "bad.tsv, line 3: bytes cannot be decoded as UTF-8", cut: "damaged or non-gzip"}
    for path, words in cases.items():
        code, err = cli(
            capsys,
            "train",
            "--train-file",
            path,
            "--eval-file",
            path,
            "--d-model",
            16,
            "--heads",
            2,
            "--layers",
            1,
            "--epochs",
            1,
            "--threads",
            1,
            "-o",
            tmp_path / "run",
        )
        line = one_line(err)
        assert code == 2 and words in line and "unexpected failure" not in line, line


def test_item20_extend_strategies_file(small_corpus, tmp_path, capsys):
    """`extend --strategies` read its file whole and parsed it unguarded: a 100k-deep JSON ended
    in RecursionError, /dev/zero was read until memory ran out."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    base = ["extend", "rope:theta=10000,head_dim=64", small_corpus, "--target-length", 64]
    for path, words in ((deep, "nested too deeply"), ("/dev/zero", "not a regular file")):
        code, err = cli(capsys, *base, "--strategies", path, "-o", tmp_path / "e")
        line = one_line(err)
        assert code == 2 and f"cannot read --strategies ({path}" in line and words in line, line
    assert not (tmp_path / "e").exists()
