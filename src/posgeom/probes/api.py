"""``posgeom.probe``: where a model keeps position.

Without a corpus, ``source`` is a position table: an ``(n, d)`` array, a ``.npy`` / ``.npz`` /
``.safetensors`` file (``key`` picks the array when it holds several), a Hugging Face model or a
posgeom decoder file with a learned table (:mod:`posgeom.probes.sources`); the table probes run
on its first ``n`` positions. With a corpus (texts), ``source`` is a model (Hugging Face, a
posgeom decoder, a ``TinyEncoder`` with token-id sequences), probed layer by layer in one pass
(:mod:`posgeom.probes.model_probe`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import SEED, Interval, check_int, validate_params
from posgeom.corpus.bootstrap_weights import PROBE_REPLICATES
from posgeom.probes.layers import check_kinds
from posgeom.probes.result import ProbeResult
from posgeom.probes.sources import read_table
from posgeom.probes.table import PAIRS, SEEDS, probe_table

__all__ = ["BOOTSTRAP", "LAYER_OPTIONS", "probe"]

#: half-sample replicates of the per-layer stress intervals by default
#: (:data:`posgeom.corpus.bootstrap_weights.PROBE_REPLICATES`)
BOOTSTRAP = PROBE_REPLICATES


#: the options of the layer probes: given (other than their defaults) without a corpus they
#: would be ignored, so they are refused
LAYER_OPTIONS = (
    "tokenizer",
    "per_position",
    "kinds",
    "geometry",
    "estimator",
    "bootstrap",
    "include_special",
    "batch_size",
    "table_probes",
)


def _check_options(corpus: Any, kinds: Any, estimator: Any, given: dict[str, Any]) -> None:
    """Before any work: the probe names and the estimator exist, and no option is given that
    this mode ignores (a layer option without a corpus)."""
    check_kinds(kinds)
    if isinstance(estimator, str):
        from posgeom.estimators import get

        get(estimator)  # the registry's one-line refusal of an unknown name
    if corpus is not None:
        return
    defaults = inspect.signature(probe).parameters
    ignored = [k for k in LAYER_OPTIONS if _differs(given[k], defaults[k].default)]
    if ignored:
        raise PosgeomError(
            f"probe: {', '.join(f'{k}={_shown(given[k])!r}' for k in ignored)} "
            f"{'is' if len(ignored) == 1 else 'are'} used by the layer probes only, with a "
            "corpus; give a corpus, or drop it for a table"
        )


def _shown(value: Any) -> Any:
    """A value as the message shows it (a list of names comma-separated, as the CLI takes it)."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return value


def _differs(value: Any, default: Any) -> bool:
    value = tuple(value) if isinstance(value, list) else value
    if value is None or default is None:
        return value is not default
    try:
        return bool(value != default)
    except Exception:  # an object without a plain comparison: it was given
        return True


@validate_params(
    {
        "n": [Interval(Integral, 3, None), None],
        "start": [Interval(Integral, 0, None)],
        "per_position": [Interval(Integral, 2, None)],
        "batch_size": [Interval(Integral, 1, None)],
        "level": [Interval(Real, 0, 1, closed="neither")],
        "seed": [SEED],
        "seeds": SEEDS,
        "pairs": [*PAIRS, None],
        "folds": [Interval(Integral, 2, None)],
        "bootstrap": [Interval(Integral, 2, None), None],
    }
)
def probe(
    source: Any,
    corpus: Iterable[Any] | None = None,
    *,
    n: int | None = None,
    tokenizer: Any = None,
    gguf_file: str | None = None,
    device: Any = None,
    dtype: Any = None,
    key: str | None = None,
    start: int = 0,
    pairs: int | None = None,
    seeds: int = 5,
    folds: int = 5,
    per_position: int = 64,
    kinds: tuple[str, ...] = ("linear", "mlp"),
    geometry: bool = True,
    estimator: str = "recommended",
    bootstrap: int | None = BOOTSTRAP,
    include_special: bool = True,
    batch_size: int = 32,
    table_probes: bool = True,
    level: float = 0.95,
    seed: int = 0,
    progress: bool = False,
) -> ProbeResult:
    """Probe ``source`` (module docstring). ``n``: positions (required with a corpus);
    ``pairs``, ``seeds``, ``folds``: the table probes' (:func:`posgeom.probes.table.probe_table`);
    ``per_position``: sampled tokens per position for the layer probes; ``kinds``: layer probes
    (``"linear"``, ``"mlp"``); ``geometry``: score the layers against the corpus (``estimator``:
    the target, as in ``analyze-model``; ``bootstrap``: half-sample replicates of the counts for
    the per-layer stress intervals, :func:`posgeom.models.targets.layer_intervals` as in
    ``analyze-model``, default :data:`BOOTSTRAP` to keep a probe cheap, ``None``: none);
    ``table_probes``: also probe a model's learned table.
    ``device``, ``dtype``: where and in what precision a model named by ``source`` is loaded
    (:func:`posgeom.models.loading.load_model`; default the CPU, float32)."""
    given = {k: v for k, v in locals().items() if k in LAYER_OPTIONS}
    _check_options(corpus, kinds, estimator, given)
    if corpus is None:
        t0 = time.perf_counter()
        table, name = read_table(
            source, n=n, start=start, key=key, gguf_file=gguf_file, device=device, dtype=dtype
        )
        result = probe_table(
            table, pairs=pairs, seeds=seeds, folds=folds, level=level, start=start, source=name
        )
        timings = {"table_probes": time.perf_counter() - t0}
        return ProbeResult(source=name, table=result, options={"mode": "table"}, timings=timings)
    if n is None:
        raise PosgeomError("probing layers needs the number of positions: pass n (-n N)")
    from posgeom.probes.model_probe import probe_model

    table_options = {"pairs": pairs, "seeds": seeds, "folds": folds, "level": level}
    return probe_model(
        source,
        corpus,
        n=check_int(n, "n", 3),
        tokenizer=tokenizer,
        gguf_file=gguf_file,
        device=device,
        dtype=dtype,
        table_options=table_options if table_probes else None,
        per_position=check_int(per_position, "per_position", 2),
        kinds=check_kinds(kinds),
        folds=folds,
        geometry=geometry,
        estimator=estimator,
        bootstrap=bootstrap,
        include_special=include_special,
        batch_size=check_int(batch_size, "batch_size", 1),
        level=level,
        seed=seed,
        progress=progress,
    )
