"""Issue 17 item 4 on tasks where position matters: copy, reverse, sort and associative recall.

Each run trains a :class:`posgeom.nn.TinyEncoder` (bidirectional, d = 64, 4 heads, 2 layers, no
dropout) with one position encoding, built by the training package's own
:func:`posgeom.training.build_model` (its masked-LM head gives a vocabulary logit per
token) and trained by :func:`posgeom.nn.tasks.fit_classifier` (AdamW, peak lr 3e-3, ``STEPS`` = 500
steps of 32 sequences drawn from 20,000, linear warmup over 50 steps then cosine decay to 0,
cross-entropy on the answer slots only; every other label is -100), one thread, about 15-20
CPU-seconds per run; posgeom's MDS table only on sort and recall (``MDS_TASKS``). The recipe
(``RECIPE``) is written into every record and is part of a record's key: a record trained under
another recipe is neither skipped as done nor analysed with these. The first sweep (300 steps at a
constant lr) is kept in ``tasks.jsonl``; this one writes ``tasks_v2.jsonl``. Sequences (token ids: 1 separator, 2 query slot, values ``3 ... 18``, recall keys
``19 ... 34``), ``n = 8`` items at the trained length, 16 at 2x:

- ``copy``    ``x_1 .. x_n SEP Q .. Q`` -> the ``n`` query slots read ``x_1 .. x_n``;
- ``reverse`` the same input -> ``x_n .. x_1``;
- ``sort``    the same input -> ``x`` sorted ascending;
- ``recall``  ``k_1 v_1 .. k_n v_n SEP q Q`` (distinct keys) -> the one query slot reads the value
  of key ``q``.

Outcomes per run: accuracy and mean cross-entropy (nats) over the answer slots of 1,000 held-out
sequences at ``n`` and at ``2n`` (learned and MDS tables interpolated past the trained length,
sinusoidal computed, the relative encodings as they are).

The corpus geometry is the task's own data: 4,000 *solved* sequences (the answers in the query
slots) drawn like the training set, counted in two ways, each with the recommended estimator:

- lag geometry (:func:`posgeom.lags.lag_geometry`, every token its own class, every lag
  ``1 .. T-1``): the distances between the distributions of (token, token ``k`` later). This is
  the primary geometry of copy (the answer is the token exactly ``n + 1`` earlier, a relative
  rule), recall (the value follows its key at lag 1) and reverse (its only dependence is between
  token pairs; the per-position marginals are flat);
- per-position geometry (:func:`posgeom.analyze`, the MDS row only): the Hellinger
  distances between the distributions of the token at each position. Primary for sort, whose
  answer slot ``i`` holds the ``i``-th order statistic, a distribution that changes with ``i``.

Scores: the stress of the encoding *as trained* (learned and T5 tables after training) against
each geometry: lag vectors from :mod:`posgeom.lags.kernels` (via :func:`studies.extension.stress.lag_vectors`) and the
per-position geometry of :func:`posgeom.training.position_geometry`; scale-optimal
stress is the primary score (the tool's default), paper stress beside it. Both are computed at
the trained length and again at 2x against the geometry of the 2x data. One JSONL record per
(task, encoding, seed, recipe) in ``RESULTS``; a finished record is skipped when run again.
``TASK_SEEDS`` (e.g. ``2``) and ``TASK_TASKS`` (e.g. ``recall``) run a subset, ``TASK_REVERSE``
in the reverse order, so several processes can share the work (each rereads the file before every
run; a record done twice is read once); ``TASK_STEPS``, ``TASK_WARMUP`` and ``TASK_SCHEDULE``
override the recipe (and so start a new set of records).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

TASKS = ("copy", "reverse", "sort", "recall")
#: trainable families this study leaves out, with why: ``random`` is a fixed random table (the
#: comparison's baseline, not a trained encoding), ``low_rank_mds`` the MDS table at a lower rank
#: (the ``mds`` row is the study's MDS table)
NOT_TRAINED = ("random", "low_rank_mds")


def encodings() -> tuple[str, ...]:
    """The position encodings trained: every family the trainer can train
    (:func:`posgeom.training.trainable_encodings`, the registry read when called) but
    :data:`NOT_TRAINED`, so a family file dropped into :mod:`posgeom.encodings` is trained here
    with no change."""
    from posgeom.training import trainable_encodings

    return tuple(e for e in trainable_encodings() if e not in NOT_TRAINED)


#: posgeom's MDS table only where the task's per-position geometry is not flat: copy's and
#: reverse's positions all hold the same uniform distribution (only the separator differs)
MDS_TASKS = ("sort", "recall")
PRIMARY = {"copy": "lag", "reverse": "lag", "sort": "position", "recall": "lag"}
SEEDS = tuple(int(x) for x in os.environ.get("TASK_SEEDS", "0,1,2").split(","))
N_ITEMS, N_VALUES = 8, 16
SEP, QUERY, FIRST_VALUE = 1, 2, 3
FIRST_KEY = FIRST_VALUE + N_VALUES
VOCAB = FIRST_KEY + N_VALUES
D, HEADS, LAYERS, BATCH, LR = 64, 4, 2, 32, 3e-3
STEPS = int(os.environ.get("TASK_STEPS", 500))
WARMUP = int(os.environ.get("TASK_WARMUP", 50))
SCHEDULE = os.environ.get("TASK_SCHEDULE", "cosine")
#: everything about the training that differs between sweeps; stored in every record
RECIPE = {
    "steps": STEPS,
    "warmup": WARMUP,
    "schedule": SCHEDULE,
    "lr": LR,
    "batch": BATCH,
    "layers": LAYERS,
    "d_model": D,
}
RESULTS = "tasks_v2.jsonl"
#: the training loss is kept as this many block means (did the run still improve at the end?)
CURVE_BLOCKS = 10
N_TRAIN, N_EVAL, N_GEOMETRY = 20_000, 1_000, 4_000


# ------------------------------------------------------------------------------ data
def make_task(task: str, n: int, count: int, seed: int) -> dict[str, np.ndarray]:
    """``inputs``, ``solved`` (answers in the query slots) and ``labels`` (-100 off the answer
    slots), each ``(count, T)`` int64."""
    rng = np.random.default_rng(seed)
    if task == "recall":
        keys = np.argsort(rng.random((count, N_VALUES)), axis=1)[:, :n] + FIRST_KEY
        vals = rng.integers(FIRST_VALUE, FIRST_KEY, (count, n))
        pairs = np.stack([keys, vals], 2).reshape(count, 2 * n)
        pick = rng.integers(0, n, count)
        rows = np.arange(count)
        head = np.concatenate([pairs, np.full((count, 1), SEP), keys[rows, pick][:, None]], 1)
        answer = vals[rows, pick][:, None]
    else:
        head = rng.integers(FIRST_VALUE, FIRST_KEY, (count, n))
        answer = {"copy": head, "reverse": head[:, ::-1], "sort": np.sort(head, 1)}[task]
        head = np.concatenate([head, np.full((count, 1), SEP)], 1)
    slots = np.full_like(answer, QUERY)
    ignore = np.full_like(head, -100)
    return {
        "inputs": np.concatenate([head, slots], 1).astype(np.int64),
        "solved": np.concatenate([head, answer], 1).astype(np.int64),
        "labels": np.concatenate([ignore, answer], 1).astype(np.int64),
    }


def task_geometry(task: str, n: int) -> dict[str, Any]:
    """Lag and per-position geometry of ``N_GEOMETRY`` solved training sequences at ``n``."""
    from posgeom.corpus.counting import count_positions
    from posgeom.lags import count_lags, lag_geometry, top_classes
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.pipeline.rows import MDS_ROWS

    solved = make_task(task, n, N_GEOMETRY, seed=10_000 + n)["solved"]
    length = solved.shape[1]
    classes = top_classes(np.bincount(solved.ravel(), minlength=VOCAB), VOCAB)
    lag = lag_geometry(count_lags(list(solved), classes, lags=np.arange(1, length)))
    counts = count_positions(solved.tolist(), max_positions=length, vocab_size=VOCAB)
    only_mds = GeometryConfig(
        families=MDS_ROWS,  # the MDS rows (no SMACOF: refine=False)
        model_dim=D,
        refine=False,
        noise=None,
        max_rank=1,
        intervals=False,
        seed=0,
    )
    pos = analyze(counts, only_mds)
    return {"lag": lag, "position": pos, "length": length}


# ------------------------------------------------------------------------------ model
def config(encoding: str, seed: int, length: int) -> Any:
    from posgeom.training import TrainConfig

    return TrainConfig(
        task="imdb-mlm",  # the tiny encoder with a vocabulary head on every token
        encoding=encoding,
        seed=seed,
        d_model=D,
        n_heads=HEADS,
        n_layers=LAYERS,
        dropout=0.0,
        max_len=length,
        progress=False,
    )


def build(encoding: str, seed: int, geometry: dict[str, Any]) -> Any:
    """The masked-LM tiny encoder of ``encoding``, its logits as ``(B, V, T)`` (the layout
    :func:`~posgeom.nn.tasks.fit_classifier`'s cross-entropy takes with ``(B, T)`` labels)."""
    import torch
    from torch import nn

    from posgeom.training import build_model

    torch.manual_seed(seed)
    cfg = config(encoding, seed, geometry["length"])
    mlm = build_model(cfg, VOCAB, geometry["position"])

    class PerToken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlm = mlm

        @property
        def position(self) -> Any:
            return self.mlm.position

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return self.mlm(tokens).transpose(1, 2)

    return PerToken(), cfg


def allow_longer(model: Any) -> None:
    """Past the trained length: a position table that can compute its formula there does
    (sinusoidal), any other table interpolates (learned, MDS); the relative encodings need
    nothing (their module is not a :class:`~posgeom.nn.position.PositionEmbedding`)."""
    from posgeom.nn.position import PositionEmbedding

    pos = model.position
    if isinstance(pos, PositionEmbedding):
        pos.beyond = "compute" if "compute" in type(pos)._allowed_policies else "interpolate"


def outcome(model: Any, data: dict[str, np.ndarray]) -> dict[str, float]:
    """Accuracy and mean cross-entropy over the answer slots."""
    import torch

    x, y = torch.from_numpy(data["inputs"]), torch.from_numpy(data["labels"])
    with torch.inference_mode():
        logits = model(x).double()
    keep = y != -100
    nll = torch.nn.functional.cross_entropy(logits, y, reduction="none")[keep]
    hit = (logits.argmax(1) == y)[keep]
    return {"accuracy": float(hit.double().mean()), "loss": float(nll.mean())}


# ------------------------------------------------------------------------------ scores
def _additive_rows(pos: Any, length: int) -> np.ndarray:
    import torch

    with torch.no_grad():
        return pos(torch.arange(length)).double().numpy()


def scores(model: Any, encoding: str, seed: int, geometry: dict[str, Any]) -> dict[str, Any]:
    """Scale-optimal and paper stress against the lag and the per-position geometry."""
    from posgeom.encodings.learned_extension import learned_lag_vectors
    from posgeom.nn.position import PositionEmbedding
    from posgeom.scores.table import score_encoding
    from posgeom.training import position_geometry
    from studies.extension.stress import lag_vectors

    length, lag, pos = geometry["length"], geometry["lag"], geometry["position"]
    if isinstance(model.position, PositionEmbedding):  # an additive table (as the encoder adds it)
        rows = _additive_rows(model.position, length)
        vec = learned_lag_vectors(rows, lag.lags)
        per_pos: Any = rows
    else:
        vec = lag_vectors(model.position, encoding, lag.lags, length)
        per_pos = position_geometry(model, config(encoding, seed, length), pos.distances)
    out = {}
    for name, enc, target in (("lag", vec, lag.distances), ("position", per_pos, pos.distances)):
        s = score_encoding(enc, target)
        out[name] = {"scale_optimal": float(s["scale_optimal"]), "paper": float(s["paper"])}
    return out


# ------------------------------------------------------------------------------ run
def same_recipe(record: dict) -> bool:
    """Whether ``record`` was trained under ``RECIPE`` (first-sweep records carry none)."""
    return record.get("recipe") == RECIPE


def run_one(task: str, encoding: str, seed: int, geos: dict[int, dict[str, Any]]) -> dict:
    import torch

    from posgeom.nn.tasks import fit_classifier

    t0 = time.process_time()
    model, _ = build(encoding, seed, geos[N_ITEMS])
    train = make_task(task, N_ITEMS, N_TRAIN, seed=seed)
    losses = fit_classifier(
        model,
        torch.from_numpy(train["inputs"]),
        torch.from_numpy(train["labels"]),
        steps=STEPS,
        lr=LR,
        batch_size=BATCH,
        seed=seed,
        warmup=WARMUP,
        schedule=SCHEDULE,
    )
    rec: dict[str, Any] = {"task": task, "encoding": encoding, "seed": seed, "steps": STEPS}
    rec["recipe"] = RECIPE
    rec["train_loss_last100"] = float(np.mean(losses[-100:]))
    rec["train_loss_curve"] = [float(b.mean()) for b in np.array_split(losses, CURVE_BLOCKS)]
    rec["trained"] = outcome(model, make_task(task, N_ITEMS, N_EVAL, seed=1_000 + seed))
    rec["scores_trained"] = scores(model, encoding, seed, geos[N_ITEMS])
    allow_longer(model)
    rec["double"] = outcome(model, make_task(task, 2 * N_ITEMS, N_EVAL, seed=2_000 + seed))
    rec["scores_double"] = scores(model, encoding, seed, geos[2 * N_ITEMS])
    rec["cpu_s"] = round(time.process_time() - t0, 1)
    return rec


def run(results: Path) -> None:
    import torch

    from posgeom.pipeline.rows import MDS_ROW

    torch.set_num_threads(1)
    results.parent.mkdir(parents=True, exist_ok=True)

    def finished() -> set[tuple[str, str, int]]:  # reread: two processes may share the file
        if not results.exists():
            return set()
        rows = (json.loads(line) for line in results.read_text().splitlines() if line.strip())
        return {(r["task"], r["encoding"], r["seed"]) for r in rows if same_recipe(r)}

    tasks = os.environ.get("TASK_TASKS", ",".join(TASKS)).split(",")
    trained = encodings()
    keys = [
        (t, e, s) for s in SEEDS for t in tasks for e in trained if e != MDS_ROW or t in MDS_TASKS
    ]  # seed 0 of every cell first
    if os.environ.get("TASK_REVERSE"):  # a helper process working from the other end
        keys = keys[::-1]
    geos: dict[str, dict[int, dict[str, Any]]] = {}
    for key in keys:
        done = finished()
        if key in done:
            continue
        if key[0] not in geos:
            geos[key[0]] = {n: task_geometry(key[0], n) for n in (N_ITEMS, 2 * N_ITEMS)}
        rec = run_one(*key, geos[key[0]])
        with results.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        done.add(key)
        print(
            f"[{len(done & set(keys))}/{len(keys)}] {key[0]} {key[1]} seed {key[2]}: accuracy "
            f"{rec['trained']['accuracy']:.3f} (2x {rec['double']['accuracy']:.3f}), "
            f"{rec['cpu_s']:.0f} CPU-s",
            flush=True,
        )
    print("tasks complete", flush=True)
