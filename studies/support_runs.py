"""The support matrix's smoke runs: ``analyze-model``, ``probe`` and ``extend`` on a tiny model.

For every architecture whose mechanism is rotary or a learned table, the support matrix runs
the library entry points the three commands call, each on the tiny random model with a small
synthetic corpus:

- the corpus: :data:`SEQUENCES` sequences of :data:`LENGTH` token ids, the id at position ``k``
  drawn uniformly from ``1 + (3 k + {0..5}) mod (V - 1)`` (``V``: the input embedding's rows), so
  the token distributions drift with position and the geometry is not flat; spelt ``t<id>`` and
  read back by a word-level tokenizer whose ``t<i>`` is id ``i`` (:func:`id_tokenizer`: the models
  have no tokenizer of their own; the ids the model sees are exactly the drawn ones);
- ``analyze-model``: :func:`posgeom.models.analysis.analyze_model` on :data:`POSITIONS` positions
  (no SMACOF refinement, no noise floor, no bootstrap): the number of layers scored and the range
  of their scale-optimal stress against the corpus geometry;
- ``probe``: :func:`posgeom.probe` with the corpus (linear probes, 2 seeds x 2 folds, 8 tokens per
  position): the learned table's absolute-position error when there is one, the layers' linear
  probe error range and the chance error;
- ``extend``: :func:`posgeom.extension.run.extend` on the model saved to a folder with its
  tokenizer (the way a user's checkpoint looks; passed as ``tokenizer=`` its ``tokenizer.json``,
  as ``-t`` does, since transformers maps some model types to their own tokenizer class) and the
  corpus as one document, trained length 16, target 32, no replicates, no fitted factors: the
  family read, the recommended strategy and the layers it scales.

A :class:`~posgeom._errors.PosgeomError` is a refusal (its one line is recorded). Any other
exception is an error (a posgeom bug), recorded with its type, unless the tiny model fails by
itself: its own forward on the same kind of token ids raises too, or it does not save and load
back (a limit of the tiny build, status ``tiny``).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "COMMANDS",
    "LENGTH",
    "POSITIONS",
    "SEQUENCES",
    "TinyModelFault",
    "cell",
    "id_tokenizer",
    "run_tally",
    "runs",
    "smoke_corpus",
]

#: sequences of the synthetic corpus, their length and the positions analysed
SEQUENCES, LENGTH, POSITIONS = 48, 10, 8
#: trained and target length of the extend run
TRAINED, TARGET = 16, 32
#: the mechanism kinds whose architectures are run
RUN_KINDS = ("rotary", "learned")
#: the tokenizer's vocabulary for a model without a token embedding (the tiny models' own)
VOCABULARY = 256


def id_tokenizer(rows: int) -> Any:
    """A word-level ``transformers`` tokenizer whose word ``t<i>`` is id ``i`` (``0 <= i <
    rows``), no special tokens: token ids spelt as text."""
    import tokenizers
    import transformers

    vocab = {f"t{i}": i for i in range(rows)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="t0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok)


def smoke_corpus(rows: int, *, seed: int = 0) -> list[str]:
    """:data:`SEQUENCES` texts of :data:`LENGTH` ids each (module docstring), spelt ``t<id>``."""
    rng = np.random.default_rng(seed)
    k = np.arange(LENGTH)
    ids = 1 + (3 * k[None, :] + rng.integers(0, 6, (SEQUENCES, LENGTH))) % (rows - 1)
    return [" ".join(f"t{i}" for i in row) for row in ids]


def _embedding_rows(model: Any) -> int | None:
    get = getattr(model, "get_input_embeddings", None)
    try:
        weight = getattr(get(), "weight", None) if callable(get) else None
    except NotImplementedError:
        return None
    return None if weight is None else int(weight.shape[0])


def _analyze(model: Any, tok: Any, texts: list[str]) -> str:
    from posgeom.models.analysis import analyze_model

    result = analyze_model(
        model, tok, texts, max_positions=POSITIONS, refine=False, noise=None, bootstrap=None
    )
    stress = np.asarray(result.signal.stress["scale_optimal"])
    scored = ", ".join(result.encodings) or "no encoding"
    return (
        f"{stress.size} layers, stress {stress.min():.3f}-{stress.max():.3f}; encodings: {scored}"
    )


def _probe(model: Any, tok: Any, texts: list[str]) -> str:
    import posgeom

    result = posgeom.probe(
        model,
        texts,
        n=POSITIONS,
        tokenizer=tok,
        seeds=2,
        folds=2,
        per_position=8,
        kinds=("linear",),
        bootstrap=None,
    )
    s = result.summary()
    mae = [layer["linear_mae"]["estimate"] for layer in s["layers"]]
    table = s.get("table_probes")
    head = f"table MAE {table['absolute_mae']['estimate']:.2f}; " if table else ""
    return (
        f"{head}{len(mae)} layers, linear MAE {min(mae):.2f}-{max(mae):.2f} "
        f"(chance {s['options']['chance_mae']:.2f})"
    )


class TinyModelFault(Exception):
    """The tiny model itself fails (its own forward on token ids, or it does not save and load
    back): a limit of the tiny build, not of posgeom."""


def _own_forward(model: Any, rows: int) -> None:
    """The model's own forward on token ids (an encoder-decoder's encoder), as transformers
    runs it; :class:`TinyModelFault` when it fails."""
    import torch

    from posgeom.models.token_input import forward_module

    ids = torch.as_tensor(np.arange(2 * LENGTH).reshape(2, LENGTH) % (rows - 1) + 1)
    try:
        with torch.no_grad():
            forward_module(model)(input_ids=ids, attention_mask=torch.ones_like(ids))
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        raise TinyModelFault(f"the tiny model's own forward fails: {line}") from exc


def _loads_back(folder: str) -> None:
    """:class:`TinyModelFault` when transformers itself cannot load the saved tiny model (a
    sub-configuration's width the tiny build changed but the weights kept)."""
    from transformers import AutoModel

    try:
        AutoModel.from_pretrained(folder)
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        raise TinyModelFault(f"the tiny model does not save and load back: {line}") from exc


def _extend(model: Any, tok: Any, texts: list[str]) -> str:
    from transformers import AutoConfig

    from posgeom._errors import PosgeomError
    from posgeom.extension.run import extend

    with tempfile.TemporaryDirectory() as folder:
        try:
            model.save_pretrained(folder)
            tok.save_pretrained(folder)
            AutoConfig.from_pretrained(folder)
        except Exception as exc:
            line = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            raise TinyModelFault(f"the tiny model does not save and load back: {line}") from exc
        corpus = Path(folder) / "corpus.txt"
        corpus.write_text(" ".join(texts) + "\n")
        try:
            result = extend(
                folder,
                [corpus],
                target_length=TARGET,
                trained_length=TRAINED,
                replicates=0,
                fit=False,
                tokenizer=str(Path(folder) / "tokenizer.json"),  # -t: the id tokenizer itself
            )
        except PosgeomError:
            _loads_back(folder)
            raise
    layers = result.model.params.get("layers")
    scales = f" (layers {list(layers)})" if layers else ""
    return f"{result.model.family}: {result.recommended.name}{scales}"


def _outcome(run: Any, model: Any, tok: Any, texts: list[str]) -> tuple[str, str]:
    """``(status, line)``: ``ok`` and the measured outcome, ``refused`` and posgeom's line,
    ``tiny`` and the tiny model's own fault (:class:`TinyModelFault`: its own forward fails
    too), or ``error`` and the exception (a posgeom bug)."""
    from posgeom._errors import PosgeomError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", run(model, tok, texts)
        except PosgeomError as exc:
            return "refused", str(exc).splitlines()[0][:300]
        except TinyModelFault as exc:
            return "tiny", str(exc)
        except Exception as exc:  # posgeom's bug unless the model's own forward fails too
            try:
                _own_forward(model, len(tok))
            except TinyModelFault as fault:
                return "tiny", str(fault)
            return "error", f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def runs(model: Any, kinds: set[str]) -> dict[str, dict[str, Any]]:
    """``{command: {"status", "outcome", "seconds"}}`` of the three smoke runs on ``model``
    (``{}`` when no mechanism of ``kinds`` is rotary or learned)."""
    if not set(RUN_KINDS) & kinds:
        return {}
    rows = _embedding_rows(model) or VOCABULARY  # a model without one refuses token ids itself
    tok, texts = id_tokenizer(rows), smoke_corpus(rows)
    out: dict[str, dict[str, Any]] = {}
    for command, run in _RUNS.items():
        t0 = time.perf_counter()
        status, line = _outcome(run, model, tok, texts)
        out[command] = {
            "status": status,
            "outcome": line,
            "seconds": round(time.perf_counter() - t0, 3),
        }
    return out


_RUNS = {"analyze-model": _analyze, "probe": _probe, "extend": _extend}
#: the commands run, in the page's column order
COMMANDS = tuple(_RUNS)


def cell(run: dict[str, Any] | None, would: str) -> str:
    """A page cell: what the command found when it ran (its refusal or fault in bold), else
    ``not run:`` and ``would``, what it would do with the mechanism."""
    if run is None:
        return f"not run: {would}"
    text = run["outcome"].replace("|", "/")
    return text if run["status"] == "ok" else f"**{run['status']}**: {text}"


def run_tally(every: list[dict[str, dict[str, Any]]]) -> str:
    """Architectures run and their outcomes per command (``every``: each row's runs)."""
    ran = [r for r in every if r]
    parts = []
    for command in COMMANDS:
        statuses: dict[str, int] = {}
        for r in ran:
            statuses[r[command]["status"]] = statuses.get(r[command]["status"], 0) + 1
        parts.append(f"{command} " + ", ".join(f"{k} {n}" for k, n in sorted(statuses.items())))
    seconds = sum(run["seconds"] for r in ran for run in r.values())
    return (
        f"Smoke runs on the {len(ran)} architectures with a rotary or learned mechanism "
        f"({seconds:.0f} s of running in all): " + "; ".join(parts) + "."
    )
