"""``posgeom.extend``: a model and a corpus in, ranked extension strategies (and a folder) out.

The thin layer over :func:`~posgeom.extension.score_strategies` that reads what a user has
(``docs/EXTENSION.md``):

- **model**: a Hugging Face folder or cached name (loaded offline through :mod:`posgeom._hub`;
  ``gguf_file`` for GGUF checkpoints), a family spec such as ``"rope:theta=10000,head_dim=64"``
  (then ``tokenizer=`` or token-id corpora), or a posgeom decoder file or ``CausalDecoder``
  (:mod:`posgeom.extension.decoder`: its position module, trained length and recorded tokenizer).
  ``L0`` defaults to ``max_position_embeddings``.
- **corpus**: paths (:mod:`posgeom.extension.documents`): a plain-text file is one document,
  record formats one per record, token-id files one per row.
- **held-out text** for ``measure``: ``heldout`` paths, else the last ``heldout_fraction`` of every
  document (then not counted in the geometry); at most ``max_windows`` windows of ``L`` tokens;
  ``measure_top``: only the best so many strategies by score, plus ``none``.

With ``output`` the results go to a results folder (:func:`posgeom.reports.results_folder`:
complete or absent): ``summary.json``, ``rope_parameters.json``, ``table.md``, ``arrays.npz`` (and
``report.html``). The measured windows are kept meanwhile in ``<output>.measure/``, so an
interrupted run resumes there; it is removed once the folder is written."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._placement import check_device, check_dtype
from posgeom._validation import Interval, Options, validate_params
from posgeom.corpus.bootstrap_weights import REPLICATES
from posgeom.encodings import extension_of
from posgeom.extension.decoder import check_token_ids, is_decoder
from posgeom.extension.documents import (
    corpus_paths,
    measured_windows,
    position_estimate,
    read_documents,
    split_heldout,
)
from posgeom.extension.loading import encoder, is_spec, load_extension_model
from posgeom.extension.model import ExtensionModel
from posgeom.extension.result import ExtensionResult
from posgeom.extension.verdict import heldout_note

__all__ = ["extend"]


def _model_use(lm: Any, ext: ExtensionModel, strategies: Any = None) -> tuple[Any, str]:
    """A rotary model's plane use for the model-aware predictor
    (:func:`posgeom.extension.usage.plane_use`) and ``""``, or ``None`` and the note saying why
    that predictor is left out: its query/key projections are not ``q_proj``/``k_proj`` (fused
    or low-rank, as GPT-J's or MLA's) or do not split into the rotary planes (partial rotary).
    A ``proportional`` rope without given ``strategies`` is refused (no built-in ones)."""
    from posgeom.encodings._extension import Strategy
    from posgeom.extension.usage import plane_use

    rotary = extension_of(ext.family).rotary
    if rotary and strategies is None and ext.rope_parameters.get("rope_type") == "proportional":
        raise PosgeomError(
            "extend has no built-in strategies for rope_type 'proportional' (the first planes of "
            "each head rotate, the rest are kept: Gemma 4, LFM 3); pass --strategies FILE with "
            'proportional rope_parameters, e.g. {"x2": {"rope_type": "proportional", "factor": 2}}'
        )
    if lm is None or not rotary:
        return None, ""
    try:
        use = plane_use(lm)
    except (PosgeomError, AttributeError, ValueError) as exc:
        why = str(exc).splitlines()[0] if isinstance(exc, PosgeomError) else "unreadable"
        return None, f"the model-aware predictor is left out (plane use: {why})"[:240]
    length = int(ext.trained_length or 2)
    planes = Strategy("own", "rope", "none", dict(ext.rope_parameters)).frequencies(
        ext, length, length
    )[0]
    if use.weights.size != np.asarray(planes).size:
        return None, (
            f"the model-aware predictor is left out: the query/key projections give "
            f"{use.weights.size} planes, the rotary {np.asarray(planes).size} (partial rotary)"
        )
    return use, ""


@validate_params(
    {
        "target_length": [Interval(Integral, 2, None)],
        "trained_length": [Interval(Integral, 1, None), None],
        "heldout_fraction": [Interval(Real, 0, 1, closed="neither")],
        "max_windows": [Interval(Integral, 1, None)],
        "measure_top": [Interval(Integral, 1, None), None],
        "replicates": [Interval(Integral, 0, 0), REPLICATES],
        "seed": [Interval(Integral, 0, 2**63 - 1)],
        "classes": [str],
        "strategies": [Mapping, list, tuple, None],
        "decoding": [Mapping, None],
        "measure": [bool, Options({"full", "quick"}), None],
        **{key: [bool] for key in ("overwrite", "report", "fit", "positions", "model_weights")},
    }
)
def extend(
    model: Any,
    corpus: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    target_length: int,
    trained_length: int | None = None,
    output: str | os.PathLike | None = None,
    overwrite: bool = False,
    report: bool = False,
    measure: bool | str = False,
    heldout: Sequence[str | os.PathLike] | None = None,
    heldout_fraction: float = 0.2,
    max_windows: int = 4,
    measure_top: int | None = None,
    gguf_file: str | None = None,
    device: Any = None,
    dtype: Any = None,
    tokenizer: Any = None,
    classes: str = "top:30",
    replicates: int = 40,
    strategies: Any = None,
    fit: bool = True,
    positions: bool = False,
    model_weights: bool = True,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    emit: Sequence[str] | None = None,
    decoding: Mapping[str, Any] | None = None,
) -> ExtensionResult:
    """Rank the extension strategies of ``model`` on ``corpus`` at ``target_length`` (module
    docstring); with ``measure`` also their loss on held-out windows (``True`` / ``"full"``:
    windows of ``L`` tokens, loss past ``L0``, key-token loss and a passkey prompt at ``L``;
    ``"quick"``: the in-window loss on windows of ``min(2048, L0)`` tokens); with ``output`` write the
    results folder; with ``positions`` also score against the per-position geometry of the
    documents' starts (:func:`position_estimate`); with ``model_weights`` (default) a RoPE model's
    weights are read for the model-aware predictor (its plane use,
    :func:`posgeom.extension.usage.plane_use`; no forward). ``device``, ``dtype``: where and in
    what precision the weights load (:func:`posgeom.models.loading.load_model`; default the CPU,
    float32; the losses are float64 whatever the dtype). Returns the
    :class:`~posgeom.extension.ExtensionResult`. ``emit``: engines whose spelling of the
    recommendation goes into the folder too (:mod:`posgeom.extension.engines`); ``decoding``:
    ``read_texts``' keywords."""
    from posgeom.extension.scoring import score_strategies
    from posgeom.extension.strategies import given_strategies

    if emit:
        from posgeom.extension.engines import engine_names

        engine_names(emit)  # refused before any work

    paths = corpus_paths(corpus)
    if strategies is not None:
        given_strategies(strategies)  # refused before any work
    if not isinstance(model, (str, os.PathLike)) and not is_decoder(model):
        raise PosgeomError(
            f"extend: model must be a model folder or name, a family spec, a posgeom decoder "
            f"file or a CausalDecoder, not a {type(model).__name__}"
        )
    placement = {"device": check_device(device), "dtype": check_dtype(dtype)}  # before any work
    embedding = str(classes).startswith("embedding:")
    encode = encoder(model, tokenizer, gguf_file)
    weights = measure or embedding or (model_weights and not is_spec(model))
    ext, lm, own = load_extension_model(
        model, gguf_file, weights=weights, placement=placement, measure=measure
    )
    encode = own or encode
    docs = read_documents(paths, encode, decoding)
    held: list[np.ndarray] = []
    if measure and heldout is None:
        docs, held = split_heldout(docs, heldout_fraction)
    elif measure:
        held = read_documents(list(heldout), encode, decoding)
    held_note = heldout_note(docs, held, heldout_fraction if heldout is None else None)
    if own is not None:
        check_token_ids([*docs, *held], lm)
    embeddings = None
    if embedding:
        table = lm.tok if own is not None else lm.get_input_embeddings()
        embeddings = table.weight.detach().double().cpu().numpy()
    say = progress or (lambda _line: None)
    say(f"lag geometry of {sum(d.size for d in docs)} tokens in {len(docs)} documents")
    if measure:
        say(held_note)
    where = position_estimate(docs, target_length, seed=seed) if positions else None
    use, use_note = _model_use(lm if model_weights else None, ext, strategies)
    result = score_strategies(
        ext,
        docs,
        trained_length,
        target_length,
        strategies,
        fit=fit,
        classes=classes,
        embeddings=embeddings,
        replicates=replicates,
        seed=seed,
        position_distances=where,
        plane_use=use,
    )
    if use_note:
        result = dataclasses.replace(result, notes=(*result.notes, use_note))
    sizes = (max_windows, measure_top, where, measure)
    if not output:
        if measure:
            with tempfile.TemporaryDirectory() as scratch:
                result = _measure(result, lm, held, sizes, scratch, say, encode, held_note)
        return result
    from posgeom.extension.measure import MEASURE_KIND
    from posgeom.io.workfolders import WorkFolder
    from posgeom.reports import results_folder

    cache = None
    with results_folder(
        output, overwrite=overwrite, with_report=report, inputs=paths, content="extend"
    ) as tmp:
        if measure:
            cache = WorkFolder.open(
                Path(output).with_name(Path(output).name + ".measure"),
                kind=MEASURE_KIND,
                inputs=paths,
                option="window cache",
            )
            result = _measure(result, lm, held, sizes, cache, say, encode, held_note)
        result.write(tmp)
        if emit:
            from posgeom.extension.engines import target_of, write_engines

            write_engines(tmp, target_of(result, model=model, gguf_file=gguf_file), emit)
    if cache is not None:
        cache.discard()  # only what posgeom wrote there
    return result


def _passkey(encode: Any, length: int) -> Any:
    """A passkey prompt of ``length`` tokens through the corpus's encoder, or None (a byte-level
    decoder's raw-bytes reader, or a vocabulary that cannot spell it)."""
    from posgeom.extension.outcomes import passkey_ids

    if encode is None or getattr(encode, "reads_raw_bytes", False):
        return None
    try:
        return passkey_ids(lambda text: encode([text])[0], length)
    except (PosgeomError, KeyError, IndexError, ValueError):
        return None


def _measure(
    result: ExtensionResult,
    lm: Any,
    held: list,
    sizes: tuple,
    cache: Any,
    say: Any,
    encode: Any = None,
    held_note: str = "",
) -> ExtensionResult:
    """Measure the strategies the model can run (those its family can apply to it: every RoPE
    strategy on a transformers model, every strategy on a posgeom decoder; the best ``top`` by
    score plus ``none`` when ``top`` is set; none it can run: one line); ``"quick"``: every
    strategy, in-window loss on windows of ``min(2048, L0)`` tokens."""
    from posgeom.extension.measure import measure_strategies
    from posgeom.extension.runners import runner_for

    max_windows, top, where, mode = sizes
    quick = mode == "quick"
    length = min(2048, result.trained_length) if quick else result.target_length
    windows = measured_windows(held, length, max_windows)
    runner = runner_for(lm, where)
    rows = [r.strategy for r in result.rows if runner.supports(r.strategy)]
    if not rows:
        fam = result.model.family
        raise PosgeomError(
            f"--measure: the {fam} family can apply none of its strategies "
            f"({', '.join(r.name for r in result.rows)}) to a {runner.target} model; drop "
            "--measure (the scores stand) or measure a posgeom decoder"
        )
    if not quick and top is not None and top < len(rows):
        rows = rows[:top] + [s for s in rows[top:] if s.kind == "none"]
    say(f"measuring {len(rows)} strategies on {len(windows)} windows of {len(windows[0])} tokens")
    measured = measure_strategies(
        lm,
        rows,
        windows,
        trained_length=result.trained_length,
        cache_dir=cache,
        model_id=result.model.name,
        progress=say,
        position_distances=where,
        passkey=None if quick else _passkey(encode, result.target_length),
    )
    return result.with_measurements(
        {**measured, "mode": "quick" if quick else "full", "heldout": held_note}
    )
