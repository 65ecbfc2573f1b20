"""Helpers of the fault suite: a corpus, the CLI in-process and in a subprocess, temporaries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.cli import run_cli

SRC = str(Path(__file__).resolve().parents[2] / "src")
CLI = "import sys; from posgeom.cli.main import main; sys.exit(main(sys.argv[1:]))"


def write_corpus(path: Path, lines: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{k}" for k in range(200)])
    lengths = rng.integers(4, 40, size=lines)
    text = "\n".join(" ".join(rng.choice(words, size=k)) for k in lengths)
    path.write_text(text + "\n")
    return path


def cli(capsys, *argv) -> tuple[int, str]:
    """Run the CLI in this process: (exit status, stderr)."""
    code, _, err = run_cli(capsys, *argv)
    return code, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("posgeom: error:"), err
    return lines[0]


def spawn(*argv, **kwargs) -> subprocess.Popen:
    """The CLI in a new process (its own session, so a signal can go to its whole group)."""
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *map(str, argv)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **kwargs,
    )


def temporaries(folder: Path) -> list[str]:
    """posgeom's temporaries left in ``folder`` (and one level below)."""
    found = []
    for p in [folder, *(q for q in folder.iterdir() if q.is_dir())] if folder.exists() else []:
        found += [q.name for q in p.iterdir() if ".posgeom-" in q.name]
    return found


MARKER = Path(os.environ.get("TMPDIR", "/tmp")) / "posgeom-pickle-ran"


class Evil:
    """Unpickling this creates MARKER: proof that a loader ran a pickle (fixture
    ``code_never_runs`` checks it)."""

    def __reduce__(self):
        return (open, (str(MARKER), "w"))


def panicking_tokenizer(folder: Path) -> tuple[Path, Path]:
    """(tokenizer.json, corpus): a normalizer regex that hits Oniguruma's retry limit on the
    corpus's one line, so the tokenizers library panics (a Rust panic, pyo3's PanicException)."""
    import tokenizers

    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.Replace(tokenizers.Regex("(a+)+b"), "x")
    tok.save(str(folder / "evil.json"))
    corpus = folder / "c.txt"
    corpus.write_text("a" * 4000 + "\n")
    return folder / "evil.json", corpus


def mutate_json(doc, path, value):
    """``doc`` with the value at ``path`` (a list of choices into nested keys) replaced."""
    node = doc
    for step in path[:-1]:
        if isinstance(node, dict) and node:
            node = node[sorted(node)[step % len(node)]]
        elif isinstance(node, list) and node:
            node = node[step % len(node)]
    if isinstance(node, dict) and node:
        node[sorted(node)[path[-1] % len(node)]] = value
    elif isinstance(node, list) and node:
        node[path[-1] % len(node)] = value
    return doc
