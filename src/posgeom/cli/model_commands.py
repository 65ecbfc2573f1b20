"""``posgeom extract | analyze-model``: a pretrained model's positional geometry
(:mod:`posgeom.models.mechanisms`, :mod:`posgeom.models.analysis`); models load offline only.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, printable
from posgeom._paths import portable_path
from posgeom.cli import _options as options
from posgeom.cli._count_flags import add_reader_arguments
from posgeom.io.jsonfiles import json_text

log = logging.getLogger("posgeom")


def _load(args: argparse.Namespace) -> Any:
    from posgeom._errors import require

    require("torch", "torch")  # one line "install posgeom[torch]" when it is missing
    require("transformers", "hf")
    from posgeom.models.loading import load_model

    options.apply_threads(args)
    model_path = Path(args.model).expanduser()
    kwargs = {"gguf_file": args.gguf_file} if args.gguf_file else {}
    if not kwargs and model_path.exists() and not model_path.is_dir():
        raise PosgeomError(
            f"{model_path} is a file; pass the model folder (with config.json and the weights), "
            "or the folder plus --gguf-file NAME for a GGUF checkpoint"
        )
    if model_path.is_dir() and not kwargs and not (model_path / "config.json").exists():
        raise PosgeomError(
            f"{model_path} has no config.json, so it is not a Hugging Face model folder; pass the "
            "folder that holds config.json and the weights (or --gguf-file NAME)"
        )
    where = options.placement(args)
    log.info("loading %s (offline; %s on %s)", args.model, where["dtype"], where["device"])
    return load_model(args.model, **where, **kwargs)


def _tokenizer(args: argparse.Namespace) -> Any:
    from posgeom.models.loading import load_tokenizer, model_tokenizer

    if args.tokenizer:
        return model_tokenizer(args.tokenizer)
    if not args.gguf_file:
        return model_tokenizer(args.model)
    tok = load_tokenizer(args.model, gguf_file=args.gguf_file)
    return model_tokenizer(tok, name=portable_path(Path(args.model) / args.gguf_file))


# ------------------------------------------------------------------------------------- extract


def _extract(args: argparse.Namespace) -> int:
    """a model's positional mechanism(s) and the encodings they become

    Find the positional mechanisms of a model (learned table, rotary, ALiBi, relative buckets) and
    print them as posgeom encodings; -o saves one array per encoding (.npz or .safetensors, its
    metadata inside)."""
    if args.json:  # one JSON document on stdout, nothing else
        from posgeom.models.mechanisms import mechanisms_document

        if args.output:
            raise PosgeomError(
                "--json prints the mechanisms only; drop -o (or drop --json to save)"
            )
        print(json_text(mechanisms_document(_load(args), name=str(args.model)), indent=2))
        return 0
    if args.output:  # before torch and the model: writable, and never a file posgeom did not write
        from posgeom.io.artifacts import check_output_file

        check_output_file(args.output, overwrite=True, kinds=("model_encodings",))
    options.placement(args)  # before torch loads anything
    from posgeom.models.loading import model_position_limit
    from posgeom.models.mechanisms import find_positional_mechanisms, mechanism_encodings

    model = _load(args)
    config = getattr(model, "config", None)
    limit = model_position_limit(model)
    if args.max_positions is None and limit is None:
        raise PosgeomError("the model states no position limit; pass -n N")
    n = min(limit, 512) if args.max_positions is None else args.max_positions
    if limit is not None and n > limit:
        raise PosgeomError(
            f"n = {n} but the model takes at most {limit} positions; use -n <= {limit}"
        )
    mechanisms = find_positional_mechanisms(model, on_missing="none")
    encodings = mechanism_encodings(mechanisms, n, start=args.start)
    print(
        f"model: {printable(args.model)} ({printable(type(model).__name__)}, model_type="
        f"{printable(getattr(config, 'model_type', None))}, {printable(getattr(config, 'num_hidden_layers', '?'))} "
        f"layers, hidden {printable(getattr(config, 'hidden_size', '?'))}, position limit {printable(limit)})"
    )
    print("positional mechanisms:")
    for m in mechanisms:
        print(f"  {printable(m.kind)}: {printable(m.summary())}")
    for m in mechanisms:
        if not m.params.encodings(1, start=0, params={}) and m.kind != "none":
            print(
                f"  note: {printable(m.kind)} has no encoding below ({printable(m.params.summary())})"
            )
    print(f"encodings for n = {printable(n)} positions (start row {printable(args.start)}):")
    print("| key | family | geometry | mean distance | min distance (separation) |")
    print("|---|---|---|---:|---:|")
    for key, enc in encodings.items():
        d = enc.distances
        off = d[~np.eye(n, dtype=bool)] if n > 1 else np.zeros(1)
        shape = (
            f"vectors {enc.vectors.shape}" if enc.vectors is not None else f"distances {d.shape}"
        )
        print(
            f"| {printable(key)} | {printable(enc.name)} | {printable(shape)} | {off.mean():.4g} | {off.min():.4g} |"
        )
    if args.output:
        from posgeom.io.artifacts import save_artifact

        arrays = {
            key: enc.vectors if enc.vectors is not None else enc.distances
            for key, enc in encodings.items()
        }
        meta = {
            "model": str(args.model),
            "n_positions": n,
            "start": args.start,
            "mechanisms": [m.summary() for m in mechanisms],
            "encodings": {
                key: {
                    "family": enc.name,
                    "representation": "vectors" if enc.vectors is not None else "distances",
                    "params": enc.params,
                }
                for key, enc in encodings.items()
            },
        }
        path = save_artifact(args.output, arrays, meta, kind="model_encodings")
        print(
            f"wrote {printable(path)} (metadata inside); one array per key, e.g. "
            f"`posgeom score --target arrays.npz NAME={printable(path)}` after picking one key"
        )
    return 0


# ------------------------------------------------------------------------------- analyze-model


def _analyze_model(args: argparse.Namespace) -> int:
    """a model's position table and layer-wise positional signal against a corpus

    Count CORPUS with the model's tokenizer (same n, same special-token handling as the model
    analysis), build its Hellinger geometry, score the model's positional encoding and the per-layer
    mean hidden state per position against it, and write summary.json, arrays.npz, table.md,
    counts.npz and stress_per_layer.png to -o DIR (created atomically)."""
    from posgeom.io.outputs import check_output
    from posgeom.models.analysis import analyze_model
    from posgeom.reports import results_folder

    out = Path(args.output)  # the output rule, before the model loads (the commit checks again)
    check_output(
        out, kinds=("analyze-model",), overwrite=args.overwrite, inputs=[args.corpus], folder=True
    )
    options.placement(args)  # a device this machine lacks: refused before the corpus is read
    texts = options.sample_texts(args)
    # a GGUF's tokenizer is parsed from its metadata (~10^5 small arrays): before the weights
    # exist, so that its transient memory does not add to theirs
    tokenizer = _tokenizer(args) if args.gguf_file else None
    model = _load(args)
    tokenizer = _tokenizer(args) if tokenizer is None else tokenizer
    result = analyze_model(
        model,
        tokenizer,
        texts,
        max_positions=args.max_positions,
        include_special=not args.no_special,
        batch_size=args.batch_size,
        on_long=args.on_long,
        max_length=args.max_length,
        refine=not args.no_refine,
        noise=None if args.noise == "none" else args.noise,
        seed=args.seed,
        progress=not args.quiet,
        model_name=portable_path(Path(args.model) / (args.gguf_file or "")),
        corpus_name=portable_path(args.corpus),
        target=args.target,
        resolution=args.resolution,
        bootstrap=args.bootstrap or None,
        level=args.level,
    )
    with results_folder(
        out, overwrite=args.overwrite, with_report=args.report, content="analyze-model"
    ) as tmp:
        result.save(tmp, plot=not args.no_plot)
    n_trunc = result.options["n_truncated"]
    if n_trunc:
        print(
            f"note: {printable(n_trunc)} sequences were longer than {printable(result.options['sequence_limit'])} "
            "tokens and were cut to that length (--on-long truncate)"
        )
    peaks = result.peaks()
    so = peaks.get("stress_scale_optimal")
    if so:
        print(
            f"scale-optimal stress: highest at layer {printable(so['max_layer'])} ({so['max']:.4g}), lowest "
            f"at layer {printable(so['min_layer'])} ({so['min']:.4g}); variance explained by position "
            f"peaks at layer {printable(peaks['variance_explained']['max_layer'])}"
        )
    print(result.markdown(), end="")  # ends with the verdict line and the stored hints
    print(
        f"results in {printable(out)}/ (summary.json, arrays.npz, table.md, counts.npz"
        + ("" if args.no_plot else ", stress_per_layer.png")
        + (", report.html" if args.report else "")
        + ")"
    )
    return 0


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        help="a local model folder (config.json + weights) or a Hugging Face "
        "name already in the local cache; nothing is downloaded",
    )
    options.add_gguf_argument(p)
    options.add_threads_argument(p)
    options.add_placement_arguments(p)


def register(sub: Any) -> None:
    p = options.add_command(sub, "extract", _extract)
    _add_model_arguments(p)
    p.add_argument(
        "-n",
        "--max-positions",
        type=int,
        default=None,
        help="positions to extract (default: min(model limit, 512))",
    )
    p.add_argument(
        "--start",
        type=int,
        default=0,
        help="first table row used as position 0 (1 lines a BERT table up with a corpus "
        "counted without [CLS])",
    )
    p.add_argument("-o", "--output", default=None, help="save the encodings (.npz or .safetensors)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document (model, model_type, num_layers, mechanisms with their "
        "layers and parameters) on stdout and nothing else",
    )

    p = options.add_command(sub, "analyze-model", _analyze_model)
    _add_model_arguments(p)
    p.add_argument(
        "corpus",
        help="corpus file: .txt, .jsonl, .csv, .tsv, .parquet (optionally "
        ".gz) or a saved datasets folder",
    )
    p.add_argument("-n", "--max-positions", type=int, required=True, help="positions 0 .. n-1")
    options.add_tokenizer_argument(p)
    add_reader_arguments(p)
    p.add_argument("--batch-size", type=int, default=32, help="max sequences per forward pass")
    options.add_sample_arguments(p)
    p.add_argument(
        "--no-special",
        action="store_true",
        help="leave special tokens ([CLS], [SEP], BOS/EOS; not [UNK]) out of the counts "
        "and of the layer means, re-indexing positions over the other tokens",
    )
    p.add_argument(
        "--on-long",
        choices=("truncate", "refuse"),
        default="truncate",
        help="sequences longer than the model's positions (or --max-length): cut them "
        "to their first tokens and say so, or stop with an error",
    )
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="tokens per sequence fed to the model (default and maximum: the model's "
        "position limit); >= n",
    )
    p.add_argument("--no-refine", action="store_true", help="skip the SMACOF refinement of MDS")
    options.add_noise_argument(p)
    options.add_estimator_argument(
        p,
        dest="target",
        what="estimator of the corpus geometry the layers are scored against",
    )
    options.add_resolution_argument(p)
    p.add_argument(
        "--bootstrap",
        type=int,
        default=100,
        help="half-sample replicates of the counts for a per-layer stress interval (0: none)",
    )
    p.add_argument("--level", type=float, default=0.95, help="coverage of the intervals")
    p.add_argument("--no-plot", action="store_true", help="do not draw stress_per_layer.png")
    options.add_seed_argument(p, what="random seed (violation rate, noise floor)")
    options.add_results_folder_arguments(p)
