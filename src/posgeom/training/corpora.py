"""The corpora of the pretraining study: files split into train / validation / test by document,
byte windows that start at line starts, and the corpus geometry of the training split.

Documents: each file is one document, or, with ``block_bytes``, cut at line ends into documents of
about ``block_bytes`` bytes. One seeded permutation assigns them to the splits (``0.8 / 0.1 /
0.1``, each at least one document) before anything is computed, so no validation or test window
shares a document with the training split.

Windows: a sample of length ``L`` is the ``L`` bytes (ids ``0 .. 255``) that follow a line start
(position 0 of the file or the byte after ``\\n``; an empty line does not start one) inside one
document, so position ``i`` is ``i`` bytes after a line start; :func:`corpus_geometry` counts every
training window (``max_positions = L``) and runs :func:`posgeom.analyze` (the MDS rows).
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "SPLITS",
    "CorpusSplits",
    "corpus_geometry",
    "load_corpus",
    "mds_geometry",
    "window_starts",
]

SPLITS = ("train", "validation", "test")
_FRACTIONS = (0.8, 0.1, 0.1)


@dataclass(frozen=True, eq=False)
class CorpusSplits:
    """Per split: the concatenated bytes ``data[split]`` ((N,) uint8; documents separated by one
    ``\\n``), the document offsets ``bounds[split]`` ((k + 1,) int64) and the document names
    ``names[split]``; ``files``: every file read with its size and SHA-256."""

    data: dict[str, np.ndarray]
    bounds: dict[str, np.ndarray]
    names: dict[str, list[str]]
    files: list[dict[str, Any]]

    def describe(self) -> dict[str, Any]:
        """JSON-able record: files, documents and bytes per split."""
        return {
            "files": self.files,
            "splits": {
                s: {"documents": self.names[s], "bytes": int(self.data[s].size)} for s in SPLITS
            },
        }


def _read(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PosgeomError(f"cannot read corpus file {path} ({exc}); pass a readable file") from exc


def _blocks(name: str, text: bytes, block_bytes: int | None) -> list[tuple[str, bytes]]:
    """``text`` as one document, or cut after the first line end past every ``block_bytes``."""
    if block_bytes is None or len(text) <= block_bytes:
        return [(name, text)]
    out, start = [], 0
    while start < len(text):
        cut = text.find(b"\n", start + block_bytes)
        end = len(text) if cut < 0 else cut + 1
        out.append((f"{name}@{start}", text[start:end]))
        start = end
    return out


def load_corpus(
    files: list[str | Path], *, seed: int = 0, block_bytes: int | None = None
) -> CorpusSplits:
    """Read ``files`` (plain or ``.gz``), cut them into documents and split them (module
    docstring). One line for an unreadable file or too few documents."""
    if not files:
        raise PosgeomError("a corpus needs at least one file; pass its files")
    docs: list[tuple[str, bytes]] = []
    record = []
    for f in sorted(Path(p) for p in files):
        text = _read(f)
        record.append(
            {"file": str(f), "bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()}
        )
        docs += _blocks(f.name, text, block_bytes)
    if len(docs) < len(SPLITS):
        raise PosgeomError(
            f"the corpus has {len(docs)} documents; the split needs >= 3: pass more files or a "
            "smaller block size"
        )
    order = np.random.default_rng(seed).permutation(len(docs))
    n_val = max(1, round(_FRACTIONS[1] * len(docs)))
    n_test = max(1, round(_FRACTIONS[2] * len(docs)))
    parts = {
        "validation": order[:n_val],
        "test": order[n_val : n_val + n_test],
        "train": order[n_val + n_test :],
    }
    data, bounds, names = {}, {}, {}
    for split in SPLITS:
        chosen = [docs[i] for i in sorted(parts[split])]
        sizes = np.array([len(t) + 1 for _, t in chosen], dtype=np.int64)
        bounds[split] = np.concatenate([[0], np.cumsum(sizes)])
        data[split] = np.frombuffer(b"".join(t + b"\n" for _, t in chosen), dtype=np.uint8)
        names[split] = [n for n, _ in chosen]
    return CorpusSplits(data, bounds, names, record)


def window_starts(splits: CorpusSplits, split: str, length: int) -> np.ndarray:
    """``(m,)`` int64 starts of the windows of ``length`` bytes in ``split`` (module docstring):
    line starts whose window ends inside the same document, first byte not ``\\n``."""
    data, bounds = splits.data[split], splits.bounds[split]
    nl = np.flatnonzero(data == 10)
    starts = np.concatenate([[0], nl + 1])
    starts = starts[starts < data.size]
    starts = starts[data[starts] != 10]
    doc_end = bounds[np.searchsorted(bounds, starts, side="right")]
    return starts[starts + length <= doc_end - 1].astype(np.int64)


def windows(data: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """``(m, length)`` int64 byte ids of the windows at ``starts``."""
    return data[starts[:, None] + np.arange(length)[None, :]].astype(np.int64)


def corpus_geometry(
    splits: CorpusSplits, length: int, *, estimator: str, model_dim: int, seed: int = 0
) -> Any:
    """``GeometryResult`` (distances + MDS) of every training window of ``length`` bytes, by
    ``estimator`` (``"recommended"``: posgeom's default; ``"plugin"``: the paper's)."""
    from posgeom.corpus.counting import count_positions

    starts = window_starts(splits, "train", length)
    if starts.size < 2:
        raise PosgeomError(
            f"the training split has {starts.size} windows of {length} bytes; use a shorter "
            "context or more text"
        )
    counts = count_positions(
        windows(splits.data["train"], starts, length), max_positions=length, vocab_size=256
    )
    return mds_geometry(counts, model_dim=model_dim, seed=seed, estimator=estimator)


def mds_geometry(counts: Any, *, model_dim: int, seed: int, estimator: str) -> Any:
    """``GeometryResult`` of ``counts`` by ``estimator``: distances and the MDS rows only (no
    SMACOF refinement, noise floor or intervals; rank curve to rank 1), the trainer's target."""
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.pipeline.rows import MDS_ROWS

    config = GeometryConfig(
        families=MDS_ROWS,
        model_dim=model_dim,
        refine=False,
        noise=None,
        max_rank=1,
        intervals=False,
        seed=seed,
        estimator=estimator,
    )
    return analyze(counts, config)
