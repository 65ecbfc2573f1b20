"""A pretrained model against a corpus: its position table and its layer-wise positional signal,
both scored against the corpus's own Hellinger geometry.

:func:`analyze_model` tokenizes the corpus **once** with the model's tokenizer and uses the same
token-id sequences for both halves, so positions line up exactly:

1. counts ``C[i, t]`` for positions ``0..n-1`` (:func:`posgeom.corpus.counting.count_positions`,
   start-aligned, with the same special-token handling as the signal), then the geometry pipeline
   (:func:`posgeom.pipeline.analyze_counts`: positional distributions, the Hellinger target
   ``D`` (chord convention, ``[0, sqrt 2]``), the MDS encoding, and the scores of every encoding
   of the model's own positional mechanism from
   :func:`~posgeom.models.mechanisms.mechanism_encodings`);
2. the layer-wise signal (:func:`~posgeom.models.layerwise.layerwise_positional_signal`): the
   per-position mean hidden state of every layer, centred, its Euclidean distances scored against
   ``D`` with every stress kind, and the variance share explained by position.

Special tokens. ``include_special=True``: ``[CLS]`` is position 0 and counted like any token.
``include_special=False``: special tokens are removed from the counts *and* skipped by the signal
(the model still sees them), and positions are re-indexed over the remaining tokens. The special
set is the tokenizer's special ids **minus its unknown token** (an ``[UNK]`` stands for a real
word), for both halves. The learned table is then read from row ``k`` on, where ``k`` is the
number of leading special tokens every sequence shares (1 for ``[CLS]``), so table row and corpus
position refer to the same token slot.

Long sequences. Every sequence is fed to the model whole, up to ``limit = min(model positions,
max_length)`` tokens; longer ones are cut to their first ``limit`` tokens (``on_long="truncate"``,
reported in ``n_truncated``) or refused (``on_long="refuse"``). Counting only uses positions
``< n <= limit``, so truncation never changes the counts, only the context the model sees.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from posgeom._errors import PosgeomError
from posgeom._version import __version__
from posgeom.models.layerwise import STRESS_KINDS, LayerwiseSignal, layerwise_positional_signal
from posgeom.models.mechanisms import (
    PositionalMechanism,
    find_positional_mechanisms,
    mechanism_encodings,
    model_position_limit,
)
from posgeom.pipeline import score_table

__all__ = ["ModelAnalysis", "analyze_model", "check_tokenizer_matches", "special_ids_for"]

log = logging.getLogger("posgeom")

_PAD_NAMES = ("[PAD]", "<pad>", "<|pad|>", "<PAD>", "[pad]")


# ------------------------------------------------------------------------------------ tokenizer


def _backend(tokenizer: Any) -> Any:
    return getattr(tokenizer, "_tok", None)


def special_ids_for(tokenizer: Any) -> set[int]:
    """Special ids of a posgeom tokenizer, without its unknown token (an ``[UNK]`` is a word)."""
    special = {int(i) for i in getattr(tokenizer, "special_ids", set())}
    backend = _backend(tokenizer)
    unk: int | None = None
    if backend is not None and hasattr(backend, "token_to_id"):  # tokenizers.Tokenizer
        name = getattr(getattr(backend, "model", None), "unk_token", None)
        unk = backend.token_to_id(name) if name else None
    elif backend is not None:  # transformers tokenizer
        unk = getattr(backend, "unk_token_id", None)
    elif hasattr(tokenizer, "unk_id"):  # posgeom word tokenizer
        unk = int(tokenizer.unk_id)
    return special - ({int(unk)} if unk is not None else set())


def _tokenizer_pad_id(tokenizer: Any) -> int | None:
    backend = _backend(tokenizer)
    if backend is None:
        return None
    if hasattr(backend, "get_added_tokens_decoder"):
        for i, tok in backend.get_added_tokens_decoder().items():
            if tok.content in _PAD_NAMES:
                return int(i)
        return None
    value = getattr(backend, "pad_token_id", None)
    return None if value is None else int(value)


def check_tokenizer_matches(model: torch.nn.Module, tokenizer: Any) -> None:
    """Raise :class:`PosgeomError` when ``tokenizer`` evidently belongs to another model.

    Two checks: the tokenizer's vocabulary must fit the model's input embedding (ids ``<`` rows),
    and, when both name one, the tokenizer's padding token must be the model's
    ``config.pad_token_id`` (BERT uses 0, RoBERTa/MPNet 1: a BERT tokenizer on MPNet passes the
    first check but fails this one).
    """
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = None if embeddings is None else int(embeddings.weight.shape[0])
    vocab = getattr(tokenizer, "vocab_size", None)
    name = (getattr(tokenizer, "identity", None) or {}).get("name", type(tokenizer).__name__)
    if rows is not None and vocab is not None and int(vocab) > rows:
        raise PosgeomError(
            f"the tokenizer {name} has {vocab} tokens but the model's input embedding has only "
            f"{rows} rows: tokenizer and model do not match. Fix: use the tokenizer that belongs "
            "to this model (omit --tokenizer to use the model's own folder)"
        )
    config_pad = getattr(getattr(model, "config", None), "pad_token_id", None)
    tok_pad = _tokenizer_pad_id(tokenizer)
    if isinstance(config_pad, int) and tok_pad is not None and tok_pad != config_pad:
        raise PosgeomError(
            f"the tokenizer {name} pads with id {tok_pad} but the model's config says "
            f"pad_token_id={config_pad}: tokenizer and model do not match. Fix: use the tokenizer "
            "that belongs to this model (omit --tokenizer to use the model's own folder)"
        )


# -------------------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """What :func:`analyze_model` computed (see :meth:`summary` for the JSON form).

    Attributes:
        model_name: the name or path given (or the class name of a loaded model).
        mechanisms: the model's positional mechanisms (detection order).
        encodings: key -> :class:`posgeom.encodings.PositionEncoding` of the mechanisms (n rows).
        counts: :class:`~posgeom.corpus.counting.PositionCounts` of the corpus at ``n``.
        geometry: :class:`~posgeom.pipeline.PipelineResult` (target ``D``, MDS, every score).
        signal: :class:`~posgeom.models.layerwise.LayerwiseSignal` with ``stress`` against ``D``.
        options: every option that shaped the numbers.
        timings: seconds per step (tokenize, count, geometry, signal).
    """

    model_name: str
    corpus_name: str
    mechanisms: tuple[PositionalMechanism, ...]
    encodings: dict[str, Any]
    counts: Any
    geometry: Any
    signal: LayerwiseSignal
    options: dict[str, Any]
    model_info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    layer_violation_rate: np.ndarray | None = None

    @property
    def target(self) -> np.ndarray:
        """The ``(n, n)`` Hellinger target (chord convention)."""
        return self.geometry.distances

    def layer_rows(self) -> list[dict[str, Any]]:
        """One dict per layer: name, variance explained, mean distance, every stress kind."""
        sig = self.signal
        n = sig.n_positions
        pairs = max(n * (n - 1), 1)
        rows = []
        for layer, name in enumerate(sig.layer_names):
            row: dict[str, Any] = {
                "layer": name,
                "variance_explained": float(sig.variance_explained[layer]),
                "mean_distance": float(sig.distances[layer].sum() / pairs),
            }
            for kind, values in (sig.stress or {}).items():
                row[f"stress_{kind}"] = float(values[layer])
            if self.layer_violation_rate is not None:
                row["violation_rate"] = float(self.layer_violation_rate[layer])
            rows.append(row)
        return rows

    def peaks(self) -> dict[str, Any]:
        """Layer of the largest and smallest value of every stress kind and of R^2."""
        sig = self.signal
        out: dict[str, Any] = {}
        for kind, values in (sig.stress or {}).items():
            out[f"stress_{kind}"] = {
                "max_layer": sig.layer_names[int(np.argmax(values))],
                "max": float(np.max(values)),
                "min_layer": sig.layer_names[int(np.argmin(values))],
                "min": float(np.min(values)),
            }
        ve = sig.variance_explained
        out["variance_explained"] = {
            "max_layer": sig.layer_names[int(np.nanargmax(ve))],
            "max": float(np.nanmax(ve)),
            "min_layer": sig.layer_names[int(np.nanargmin(ve))],
            "min": float(np.nanmin(ve)),
        }
        return out

    def summary(self) -> dict[str, Any]:
        counts = self.counts
        totals = np.asarray(counts.totals)
        return {
            "posgeom_version": __version__,
            "model": {"name": self.model_name, **self.model_info},
            "mechanisms": [m.summary() for m in self.mechanisms],
            "corpus": {
                "name": self.corpus_name,
                "n_sequences": int(counts.n_sequences),
                "n_tokens_counted": int(counts.n_tokens),
                "n_truncated": int(self.signal.n_truncated or self.options.get("n_truncated", 0)),
                "samples_per_position": {
                    "min": int(totals.min()),
                    "median": float(np.median(totals)),
                    "max": int(totals.max()),
                },
                "tokenizer": counts.tokenizer,
                "fingerprint": counts.fingerprint,
            },
            "options": self.options,
            "conventions": {
                "target": "Hellinger chord D_ij = ||sqrt(mu_i) - sqrt(mu_j)||, range [0, sqrt 2]",
                "layer_signal": "per-position mean hidden state m_l(i), centred over positions; "
                "Euclidean distances between centred means scored against D",
                "stress": "paper = sum_{i<j}(delta-D)^2 / sum_{i<j} D^2 (no rescaling); "
                "stress1 = sqrt(sum(delta-D)^2 / sum delta^2); scale_optimal = paper stress of "
                "alpha* delta, alpha* = sum(delta D)/sum(delta^2); raw = sum_{i<j}(delta-D)^2",
                "variance_explained": "R^2_l = sum_i c_i ||m_l(i) - m_l||^2 / "
                "sum_tokens ||h_l(t) - m_l||^2",
                "violation_rate": "fraction of triples (i,j,k) with D_ij != D_ik whose "
                "distances order the pair the other way (random: about 0.5)",
                "layers": "layer 'embeddings' is the embedding output (token + position + type, "
                "after LayerNorm); layer k is the output of block k",
            },
            "layers": self.layer_rows(),
            "peaks": self.peaks(),
            "position_encodings": {
                key: self.geometry.scores[key]
                for key in self.encodings
                if key in self.geometry.scores
            },
            "geometry": self.geometry.summary(),
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }

    def markdown(self) -> str:
        """``table.md``: the per-layer table and the scores of the position encodings."""
        s = self.summary()
        corpus = s["corpus"]
        lines = [
            f"# {self.model_name} on {self.corpus_name}",
            "",
            f"n = {self.signal.n_positions} positions; {corpus['n_sequences']} sequences; "
            f"samples per position {corpus['samples_per_position']['min']} .. "
            f"{corpus['samples_per_position']['max']}; special tokens "
            + ("counted" if self.options["include_special"] else "excluded (re-indexed)")
            + (f"; {corpus['n_truncated']} sequences truncated" if corpus["n_truncated"] else "")
            + ". Target: Hellinger chord distances.",
            "",
            "Mechanisms: " + "; ".join(s["mechanisms"]),
            "",
            "## Layer-wise positional signal",
            "",
        ]
        kinds = list(self.signal.stress or {})
        head = ["layer", "R^2 (position)", "mean distance", *[f"stress ({k})" for k in kinds]]
        has_order = self.layer_violation_rate is not None
        if has_order:
            head.append("violation rate")
        lines += ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for row in s["layers"]:
            cells = [
                row["layer"],
                f"{row['variance_explained']:.4g}",
                f"{row['mean_distance']:.4g}",
            ]
            cells += [f"{row[f'stress_{k}']:.4g}" for k in kinds]
            if has_order:
                cells.append(f"{row['violation_rate']:.3f}")
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "## Encodings against the corpus geometry", ""]
        lines += score_table(self.geometry.scores)
        return "\n".join(lines) + "\n"

    def plot(self, path: str | os.PathLike, *, title: str | None = None) -> Path:
        """PNG: scale-optimal stress, paper stress (log) and R^2 per layer (matplotlib, Agg)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        sig = self.signal
        x = np.arange(sig.n_layers)
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        stress = sig.stress or {}
        ax = axes[0]
        if "scale_optimal" in stress:
            ax.plot(x, stress["scale_optimal"], "o-", label="layer signal")
        table = self.geometry.scores.get("learned")
        if table is not None:
            ax.axhline(table["scale_optimal"], ls="--", c="C1", label="position table")
        mds = self.geometry.scores.get("mds")
        if mds is not None:
            ax.axhline(mds["scale_optimal"], ls=":", c="C2", label="MDS encoding")
        ax.set_title("scale-optimal stress (lower = closer to D)")
        ax.legend(fontsize=8)
        ax = axes[1]
        if "paper" in stress:
            ax.semilogy(x, stress["paper"], "o-", c="C3")
        ax.set_title("paper stress (no rescaling, log scale)")
        ax = axes[2]
        ax.plot(x, sig.variance_explained, "o-", c="C4")
        ax.set_title("variance explained by position (R^2)")
        for ax in axes:
            ax.set_xticks(x)
            ax.set_xticklabels(["emb", *sig.layer_names[1:]], fontsize=8)
            ax.set_xlabel("layer")
            ax.grid(alpha=0.3)
        fig.suptitle(
            title
            or f"{_short(self.model_name)} on {_short(self.corpus_name)}, "
            f"n = {sig.n_positions}, special tokens "
            + ("counted" if self.options.get("include_special", True) else "excluded")
        )
        fig.tight_layout()
        path = Path(path)
        from posgeom.artifacts import atomic_path

        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format="png")
        plt.close(fig)
        return path

    def save(self, directory: str | os.PathLike, *, plot: bool = True) -> Path:
        """Write ``summary.json``, ``arrays.npz`` (+ sidecar), ``table.md``, ``counts.npz`` and
        ``stress_per_layer.png`` into ``directory`` (wrap in
        :func:`posgeom.artifacts.atomic_directory` for an all-or-nothing folder)."""
        from posgeom.artifacts import atomic_write_text, json_default, save_artifact

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        sig = self.signal
        arrays: dict[str, Any] = {
            "hellinger": self.target,
            "totals": np.asarray(self.counts.totals),
            "layer_counts": sig.counts,
            "layer_means": sig.means,
            "layer_distances": sig.distances,
            "variance_explained": sig.variance_explained,
            **(
                {}
                if self.layer_violation_rate is None
                else {"layer_violation_rate": self.layer_violation_rate}
            ),
            "mds_embedding": self.geometry.mds.embedding,
        }
        for kind, values in (sig.stress or {}).items():
            arrays[f"stress_{kind}"] = values
        for key, enc in self.encodings.items():
            arrays[f"encoding_{key}"] = enc.vectors if enc.vectors is not None else enc.distances()
        meta = {
            "model": self.model_name,
            "corpus": self.corpus_name,
            "options": self.options,
            "layer_names": list(sig.layer_names),
        }
        save_artifact(out / "arrays.npz", arrays, meta, kind="model_analysis")
        self.counts.save(out / "counts.npz")
        atomic_write_text(
            out / "summary.json", json.dumps(self.summary(), indent=2, default=json_default)
        )
        atomic_write_text(out / "table.md", self.markdown())
        if plot:
            self.plot(out / "stress_per_layer.png")
        return out


def _short(name: str, parts: int = 2) -> str:
    """The last ``parts`` components of a path-like name (titles stay readable)."""
    pieces = [p for p in str(name).replace("\\", "/").split("/") if p]
    return "/".join(pieces[-parts:]) if pieces else str(name)


# ------------------------------------------------------------------------------------ analysis


def _leading_specials(seqs: list[np.ndarray], special: np.ndarray) -> int:
    """Number of leading special tokens shared by every sequence (0 when they differ)."""
    if special.size == 0 or not seqs:
        return 0
    counts = set()
    for s in seqs:
        keep = ~np.isin(s, special)
        counts.add(int(np.argmax(keep)) if keep.any() else len(s))
        if len(counts) > 1:
            return 0
    return counts.pop()


def _model_info(model: torch.nn.Module) -> dict[str, Any]:
    config = getattr(model, "config", None)
    return {
        "class": type(model).__name__,
        "model_type": getattr(config, "model_type", None),
        "num_hidden_layers": getattr(config, "num_hidden_layers", None),
        "hidden_size": getattr(config, "hidden_size", None),
        "position_limit": model_position_limit(model),
        "parameters": int(sum(p.numel() for p in model.parameters())),
    }


def analyze_model(
    model: Any,
    tokenizer: Any,
    texts: Iterable[str],
    *,
    max_positions: int,
    include_special: bool = True,
    batch_size: int = 32,
    on_long: str = "truncate",
    max_length: int | None = None,
    refine: bool = True,
    noise: str | None = "split_half",
    seed: int = 0,
    progress: bool = False,
    model_name: str | None = None,
    corpus_name: str = "corpus",
    stress_kinds: tuple[str, ...] = STRESS_KINDS,
    baselines: bool = True,
) -> ModelAnalysis:
    """Score a model's positional mechanism and its layer-wise signal against a corpus.

    Args:
        model: a loaded Hugging Face model, or a name / local folder (loaded offline).
        tokenizer: anything :func:`posgeom.corpus.tokenize.load_tokenizer` accepts (a
            ``tokenizer.json``, a folder, a transformers name) or a posgeom tokenizer; it must
            be the model's (checked with :func:`check_tokenizer_matches`).
        texts: the corpus, one string per sequence (read once).
        max_positions: ``n``, positions ``0..n-1``; every position needs at least one token.
        include_special: count special tokens (see the module docstring).
        on_long: ``"truncate"`` or ``"refuse"`` sequences longer than ``min(model positions,
            max_length)`` tokens.
        refine, noise, seed: passed to :func:`posgeom.pipeline.analyze_counts` (SMACOF refinement
            of the MDS encoding; noise floor of ``D``).
        baselines: also score two reference encodings of the model's width, ``sinusoidal``
            (Vaswani, base 10000) and ``random`` (seeded Gaussian, whose distances are all about
            equal: its scale-optimal stress is what "no positional structure" scores).
        batch_size: sequences per forward pass (sequences are sorted by length first, so batches
            carry little padding; the per-position means do not depend on the order).

    Returns:
        :class:`ModelAnalysis`.
    """
    from posgeom.corpus.counting import count_positions
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.pipeline import analyze_counts

    if on_long not in ("truncate", "refuse"):
        raise PosgeomError(f"on_long must be 'truncate' or 'refuse', got {on_long!r}")
    if int(max_positions) != max_positions or max_positions < 3:
        raise PosgeomError(f"max_positions must be an integer >= 3, got {max_positions!r}")
    n = int(max_positions)
    timings: dict[str, float] = {}
    if model_name is None:
        is_path = isinstance(model, (str, os.PathLike))
        model_name = str(model) if is_path else type(model).__name__
    name = model_name
    if isinstance(model, (str, os.PathLike)):
        from posgeom.models.loading import load_model

        model = load_model(model)
    tok = load_tokenizer(tokenizer)
    check_tokenizer_matches(model, tok)

    limit = model_position_limit(model)
    if max_length is not None:
        if int(max_length) != max_length or max_length < n:
            raise PosgeomError(f"max_length must be an integer >= n = {n}, got {max_length!r}")
        limit = int(max_length) if limit is None else min(limit, int(max_length))
    if limit is not None and n > limit:
        raise PosgeomError(
            f"n = {n} positions but the model takes at most {limit}; use -n <= {limit}"
        )

    special = sorted(special_ids_for(tok))
    special_arr = np.asarray(special, dtype=np.int64)
    t0 = time.perf_counter()
    seqs: list[np.ndarray] = []
    chunk: list[str] = []

    def flush() -> None:
        for ids in tok.encode_batch(chunk):
            seqs.append(np.asarray(ids, dtype=np.int64))
        chunk.clear()

    for text in texts:
        chunk.append(text)
        if len(chunk) >= 1024:
            flush()
    if chunk:
        flush()
    timings["tokenize"] = time.perf_counter() - t0
    read = len(seqs)
    if include_special:
        seqs = [s for s in seqs if s.size]
    else:
        seqs = [s for s in seqs if s.size and not np.all(np.isin(s, special_arr))]
    if not seqs:
        raise PosgeomError(
            "no sequences with ordinary tokens: the corpus is empty or every text is blank; "
            "check the text column"
        )
    n_long = 0
    if limit is not None:
        n_long = sum(int(s.size > limit) for s in seqs)
        if n_long and on_long == "refuse":
            longest = max(s.size for s in seqs)
            raise PosgeomError(
                f"{n_long} sequences are longer than the model's {limit} positions (longest "
                f"{longest} tokens); pass --on-long truncate to cut them to their first {limit} "
                "tokens, or shorten the texts"
            )
        if n_long:
            log.warning(
                "%d of %d sequences are longer than %d tokens and were cut to their first %d "
                "tokens (counts of positions < n are unchanged; the model sees less context)",
                n_long,
                len(seqs),
                limit,
                limit,
            )
            seqs = [s[:limit] for s in seqs]

    t0 = time.perf_counter()
    counts = count_positions(
        seqs,
        max_positions=n,
        vocab_size=int(tok.vocab_size),
        include_special=include_special,
        special_ids=special,
    )
    counts = dataclasses.replace(counts, tokenizer=tok.identity)
    timings["count"] = time.perf_counter() - t0
    empty = np.flatnonzero(np.asarray(counts.totals) == 0)
    if empty.size:
        raise PosgeomError(
            f"position {int(empty[0])} received no tokens: no sequence of the corpus is that "
            f"long{'' if include_special else ' (special tokens excluded)'}; use -n <= "
            f"{int(empty[0])}"
        )

    mechanisms = find_positional_mechanisms(model, on_missing="none")
    start = 0 if include_special else _leading_specials(seqs, special_arr)
    table = next((m for m in mechanisms if m.kind == "learned"), None)
    if table is not None and table.n_positions is not None and n + start > table.n_positions:
        start = 0
    encodings = mechanism_encodings(mechanisms, n, start=start)
    hidden = getattr(getattr(model, "config", None), "hidden_size", None)
    references: dict[str, Any] = {}
    if baselines:
        from posgeom import encodings as families

        width = int(hidden) if hidden else 128
        references = {
            "sinusoidal": families.sinusoidal(n, d=width + width % 2),
            "random": families.random(n, d=width, seed=seed),
        }

    t0 = time.perf_counter()
    geometry = analyze_counts(
        counts,
        model_dim=int(hidden) if hidden else 128,
        encodings={**encodings, **references},
        refine=refine,
        noise=noise,
        seed=seed,
    )
    timings["geometry"] = time.perf_counter() - t0

    order = sorted(range(len(seqs)), key=lambda i: seqs[i].size)
    t0 = time.perf_counter()
    signal = layerwise_positional_signal(
        model,
        None,
        (seqs[i] for i in order),
        max_positions=n,
        batch_size=batch_size,
        include_special=include_special,
        special_token_ids=special,
        target=geometry.distances,
        progress=progress,
        truncate=False,
        stress_kinds=stress_kinds,
    )
    timings["signal"] = time.perf_counter() - t0
    from posgeom.scores.order import monotonicity_violation_rate

    violation = np.array(
        [
            monotonicity_violation_rate(
                d, geometry.distances, seed=seed, encoding_kind="distances"
            ).rate
            for d in signal.distances
        ]
    )
    if not np.array_equal(signal.counts, np.asarray(counts.totals)):
        raise PosgeomError(  # pragma: no cover - a bug, not a user mistake
            "internal mismatch: the layer-wise token counts differ from the corpus counts"
        )
    options = {
        "max_positions": n,
        "include_special": bool(include_special),
        "special_ids": special,
        "table_start_row": start,
        "batch_size": int(batch_size),
        "on_long": on_long,
        "sequence_limit": limit,
        "n_truncated": int(n_long),
        "sequences_read": read,
        "refine": refine,
        "noise": noise,
        "seed": seed,
        "torch_threads": torch.get_num_threads(),
    }
    return ModelAnalysis(
        model_name=name,
        corpus_name=corpus_name,
        mechanisms=tuple(mechanisms),
        encodings=encodings,
        counts=counts,
        geometry=geometry,
        signal=dataclasses.replace(signal, n_truncated=int(n_long)),
        options=options,
        model_info=_model_info(model),
        timings=timings,
        layer_violation_rate=violation,
    )
