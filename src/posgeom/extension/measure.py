"""``--measure``: the loss of each strategy on held-out windows, within and beyond ``L0``.

Each strategy is applied as its family says (:mod:`posgeom.extension.runners`: a transformers
causal LM gets its ``rope_parameters``, a posgeom ``CausalDecoder`` a new position module); one its
family cannot apply is refused before any forward, never measured as ``none``. On each window of
``L`` tokens the per-token loss ``-log p(x_{t+1} | x_{<=t})`` (float64, :mod:`.outcomes`) is summed
over the targets at positions ``1 .. L0 - 1`` ("within") and ``L0 .. L - 1`` ("beyond"); a
strategy's row holds the token-weighted mean losses and ``exp`` of the mean loss beyond.

**Resumable.** Every finished ``(strategy, window)`` is written at once, atomically, as one JSON
file in ``cache_dir`` (a :class:`posgeom.io.workfolders.WorkFolder` of kind ``measure-cache``)
named by a digest of the model, the strategy's parameters and the window's tokens; a rerun reads
back only the files posgeom listed, unchanged, and computes the rest. ``progress`` gets the cost
first (one forward of up to 256 tokens timed and scaled linearly to ``L``, a lower bound), then
``done/total``, elapsed and ETA per computed item."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of
from posgeom.encodings._extension import Strategy
from posgeom.extension.runners import runner_for
from posgeom.io.jsonfiles import json_text
from posgeom.io.workfolders import WorkFolder

__all__ = ["estimate_cost", "measure_strategies", "window_losses"]


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode() + b"\0")
    return h.hexdigest()[:20]


def window_losses(model: Any, ids: np.ndarray, trained_length: int, *, chunk: int = 1024) -> dict:
    """Summed losses of one window: ``within_sum``/``within_n`` (targets at positions
    ``1 .. L0-1``) and ``beyond_sum``/``beyond_n`` (positions ``L0 ..``), float64, and
    ``beyond_losses``, the per-token losses past ``L0`` (for the key tokens). ``model``: a
    transformers causal LM, a posgeom ``CausalDecoder`` or a runner (:func:`runner_for`)."""
    from posgeom.extension.outcomes import token_losses

    loss = token_losses(model, ids, chunk=chunk)
    pos = np.arange(1, loss.size + 1)  # the position of each predicted token
    inside = pos < trained_length
    return {
        "within_sum": float(loss[inside].sum()),
        "within_n": int(inside.sum()),
        "beyond_sum": float(loss[~inside].sum()),
        "beyond_n": int((~inside).sum()),
        "beyond_losses": [float(x) for x in loss[~inside]],
    }


MEASURE_KIND = "measure-cache"


def _cached(cache: WorkFolder, rel: str) -> dict | None:
    """What posgeom stored as ``rel`` in ``cache``, or None (absent, not written by posgeom, or
    stored under another name: then it is redone)."""
    if not cache.listed(rel):
        return None
    try:
        doc = json.loads((cache.path / rel).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    ok = isinstance(doc, dict) and doc.get("key") == rel and isinstance(doc.get("value"), dict)
    return doc["value"] if ok else None


def _mean(total: float, n: int) -> float | None:
    """``total / n``, or None (null in ``summary.json``: nothing was measured) when ``n`` is 0."""
    return total / n if n else None


def _aggregate(name: str, parts: list[dict]) -> dict[str, Any]:
    """One strategy's row: mean losses over all windows (token-weighted). The outcomes past
    ``L0`` are null, and ``window_beyond_loss`` absent, when no window reaches past ``L0`` (only
    the in-window loss was measured); a window without tokens past ``L0`` is null in the list."""
    tot = {
        k: sum(p[k] for p in parts) for k in ("within_sum", "within_n", "beyond_sum", "beyond_n")
    }
    beyond = _mean(tot["beyond_sum"], tot["beyond_n"])
    row: dict[str, Any] = {
        "name": name,
        "within_loss": _mean(tot["within_sum"], tot["within_n"]),
        "beyond_loss": beyond,
        "beyond_perplexity": None if beyond is None else math.exp(beyond),
        "windows": len(parts),
        "tokens_within": tot["within_n"],
        "tokens_beyond": tot["beyond_n"],
    }
    row["window_within_loss"] = [_mean(p["within_sum"], p["within_n"]) for p in parts]
    if tot["beyond_n"]:
        row["window_beyond_loss"] = [_mean(p["beyond_sum"], p["beyond_n"]) for p in parts]
    return row


def _key_tokens(
    rows: list[dict], parts: dict[str, list[dict]], short: list[np.ndarray]
) -> dict[str, Any]:
    """Key tokens per window (LongPPL: the per-token median over the measured strategies as the
    long-context loss, the unscaled model's short-context loss) and each row's key-token loss."""
    from posgeom.extension.outcomes import consensus_key_mask

    masks = [
        consensus_key_mask([parts[r["name"]][i]["beyond_losses"] for r in rows], ref)
        for i, ref in enumerate(short)
    ]
    n_key = int(sum(m.sum() for m in masks))
    for r in rows:
        got = [np.asarray(parts[r["name"]][i]["beyond_losses"])[m] for i, m in enumerate(masks)]
        r["key_token_loss"] = float(np.mean(np.concatenate(got))) if n_key else None
        r["key_tokens"] = n_key
    return {"key_tokens": n_key, "short_context": "unscaled model, L0/2 + up to L0/4 - 1 tokens"}


class _Progress:
    """``done/total`` of the items, with the elapsed time and an ETA from the items computed so
    far (items read back from the cache cost nothing and are left out of the rate)."""

    def __init__(self, total: int, say: Callable[[str], None] | None) -> None:
        import time

        self.done, self.total, self.say = 0, total, say
        self.computed, self.start, self.clock = 0, time.perf_counter(), time.perf_counter

    def elapsed(self) -> float:
        return self.clock() - self.start

    def step(self, what: str, computed: bool) -> None:
        """Count one item; say ``done/total``, elapsed and ETA when it was computed."""
        self.done += 1
        self.computed += computed
        if computed and self.say:
            spent = self.elapsed()
            eta = spent / self.computed * (self.total - self.done)
            self.say(
                f"measure: {self.done}/{self.total} ({what}); elapsed {_clock(spent)}, "
                f"ETA {_clock(eta)}"
            )


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def estimate_cost(
    runner: Any, windows: Sequence[np.ndarray], items: int, trained_length: int
) -> dict[str, Any]:
    """The cost of ``items`` forwards of ``len(windows[0])`` tokens, from one timed forward of
    the first window's first ``min(L, L0, 256)`` tokens (the model as it is runs them) scaled
    linearly to ``L`` (a lower bound: attention grows faster than linearly): ``forwards``,
    ``tokens``, ``seconds_per_forward``, ``estimated_minutes``."""
    import time

    length = len(windows[0])
    probe = np.asarray(windows[0][: min(length, trained_length, 256)])
    t0 = time.perf_counter()
    window_losses(runner, probe, trained_length)
    per = (time.perf_counter() - t0) * length / max(len(probe), 1)
    return {
        "forwards": int(items),
        "tokens": length,
        "seconds_per_forward": per,
        "estimated_minutes": per * items / 60.0,
    }


class _Session:
    """One measurement: the cache, the runner, the digest of the model (``model_id`` and the
    runner's weights) and the progress."""

    def __init__(
        self, cache: WorkFolder, runner: Any, model_id: str, trained_length: int, steps: _Progress
    ) -> None:
        self.cache, self.runner, self.steps = cache, runner, steps
        self.ident = (model_id, *((runner.identity,) if runner.identity else ()))
        self.trained_length = trained_length

    def stored(self, rel: str, compute: Callable[[], dict], what: str) -> dict:
        """The value stored as ``rel`` in the cache, else ``compute()`` stored there (atomically,
        recorded in the cache's manifest, with its name)."""
        got = _cached(self.cache, rel)
        computed = got is None
        if got is None:
            got = compute()
            self.cache.write_text(rel, json_text({"key": rel, "value": got}, indent=None))
        self.steps.step(what, computed)
        return got

    def strategy(
        self, s: Strategy, windows: Sequence[np.ndarray], target: int, passkey: Any
    ) -> tuple[dict[str, Any], list[dict]]:
        """``(row, per-window parts)`` of strategy ``s`` (applied only when something is not
        cached yet)."""
        from posgeom.extension.outcomes import passkey_outcome

        keys = [_digest(*self.ident, s.summary(), np.asarray(w).tolist()) for w in windows]
        todo = [k for k in keys if _cached(self.cache, f"{k}.json") is None]
        if todo or (passkey is not None and not _cached(self.cache, f"{keys[0]}.passkey.json")):
            self.runner.apply(s, self.trained_length, target)
        parts = [
            self.stored(
                f"{k}.json",
                lambda w=w: window_losses(self.runner, w, self.trained_length),
                f"strategy {s.name}, window {i + 1}",
            )
            for i, (k, w) in enumerate(zip(keys, windows, strict=True))
        ]
        row = _aggregate(s.name, parts)
        if passkey is not None:
            row.update(
                self.stored(
                    f"{keys[0]}.passkey.json",
                    lambda: passkey_outcome(self.runner, *passkey),
                    f"passkey, strategy {s.name}",
                )
            )
        return row, parts

    def short_context(self, i: int, window: np.ndarray) -> np.ndarray:
        """The unscaled model's short-context losses on ``window`` (the key-token reference:
        ``L0/2`` tokens of context, blocks of ``L0/4``)."""
        from posgeom.extension.outcomes import short_context_losses

        l0 = self.trained_length
        key = _digest(*self.ident, "short", np.asarray(window).tolist())

        def compute() -> dict[str, list[float]]:
            losses = short_context_losses(self.runner, window, l0, l0 // 2, block=max(l0 // 4, 1))
            return {"losses": [float(x) for x in losses]}

        what = f"short-context reference, window {i + 1}"
        return np.asarray(self.stored(f"{key}.json", compute, what)["losses"])


def measure_strategies(
    model: Any,
    strategies: Sequence[Strategy],
    windows: Sequence[np.ndarray],
    *,
    trained_length: int,
    cache_dir: str | os.PathLike | WorkFolder,
    model_id: str = "model",
    progress: Callable[[str], None] | None = None,
    position_distances: Any = None,
    passkey: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Mean loss within and beyond ``trained_length`` of every strategy on ``windows`` (module
    docstring); ``cache_dir`` keeps each finished (strategy, window); ``position_distances``:
    the corpus's per-position geometry (Gower extension of a decoder's learned table). Windows
    longer than ``L0`` also give the key-token loss (LongPPL, :mod:`posgeom.extension.outcomes`;
    the unscaled model's short-context losses are one more item per window); ``passkey``
    (``(ids, answer positions)``, :func:`~posgeom.extension.outcomes.passkey_ids`) one passkey
    prompt per strategy."""
    if not windows:
        raise PosgeomError("no held-out window to measure on; give more held-out text")
    target = int(max(len(w) for w in windows))
    cache = (
        cache_dir
        if isinstance(cache_dir, WorkFolder)
        else WorkFolder.open(cache_dir, kind=MEASURE_KIND, option="window cache")
    )
    runner = runner_for(model, position_distances)
    for s in strategies:  # before any forward: never measured as none
        if not runner.supports(s):
            extension_of(s.family).check_apply(s, runner.target)  # its family's own line
            raise PosgeomError(
                f"strategy {s.name!r} ({s.family}) does not apply to this {runner.target} model"
            )
    long = target > trained_length and min(len(w) for w in windows) > trained_length
    total = len(strategies) * (len(windows) + (passkey is not None)) + long * len(windows)
    cost: dict[str, Any] = {"forwards": total, "tokens": target}
    if progress:  # one short timed forward, only when someone reads the estimate
        cost = estimate_cost(runner, windows, total, int(trained_length))
        progress(
            f"measure: {total} forwards of up to {target} tokens ({len(strategies)} strategies x "
            f"{len(windows)} windows"
            + (", a passkey each" if passkey is not None else "")
            + (", a short-context reference per window" if long else "")
            + f"): about {cost['estimated_minutes']:.1f} min on this machine or more (one "
            f"forward timed, scaled linearly in length; items already in the cache are read back)"
        )
    steps = _Progress(total, progress)
    run = _Session(cache, runner, model_id, int(trained_length), steps)
    out, parts_by = [], {}
    try:
        for s in strategies:
            row, parts_by[s.name] = run.strategy(s, windows, target, passkey)
            out.append(row)
        extra: dict[str, Any] = {}
        if long and out:
            runner.restore()
            short = [run.short_context(i, w) for i, w in enumerate(windows)]
            extra = _key_tokens(out, parts_by, short)
    finally:
        runner.restore()
    scaled = getattr(runner, "scaled", lambda: None)()
    return {
        **({"scaled": scaled} if scaled else {}),
        "trained_length": int(trained_length),
        "window_length": target,
        "windows": len(windows),
        "cost": {**cost, "elapsed_seconds": steps.elapsed()},
        "definition": "mean -log p(next token) over held-out windows; within: predicted "
        "positions 1 .. L0-1, beyond: L0 .. L-1; perplexity = exp(mean loss beyond); key-token "
        "loss: mean loss beyond on LongPPL's key tokens (short-context loss minus long-context "
        "loss > 2 nats and long-context loss < 2 nats); passkey: mean log p of the key's tokens "
        "and whether each is the argmax",
        **extra,
        "strategies": out,
    }
