"""``posgeom extend``: rank context-extension strategies for a model on a corpus."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom.cli import _options as options
from posgeom.cli._count_flags import add_text_arguments
from posgeom.corpus.options import text_decoding
from posgeom.io.jsonfiles import json_text


def _extend(args: argparse.Namespace) -> int:
    """rank context-extension strategies (RoPE scaling, table extension) from the corpus

    Enumerate the strategies that run MODEL past its trained length (RoPE: none, linear,
    static/dynamic NTK, YaRN, llama3, LongRoPE, factors fitted to the corpus; learned tables: clamp,
    interpolate, Gower), score each one's lag kernel at the target length against the corpus's lag
    geometry (recommended estimator, half-sample intervals), and write summary.json,
    rope_parameters.json (the best's, transformers 5 spelling), table.md and arrays.npz to -o DIR
    (created atomically). --measure also measures each strategy's loss on held-out windows
    (resumable)."""
    from posgeom.extension.run import extend

    if args.target_length < 2:
        raise PosgeomError(f"--target-length must be >= 2, got {args.target_length}")
    strategies = None
    if args.strategies:
        from posgeom.io.jsonfiles import read_json

        try:  # a regular file of bounded size, its JSON of bounded depth
            strategies = read_json(args.strategies, max_bytes=16 << 20)
        except PosgeomError as exc:
            raise PosgeomError(
                f"cannot read --strategies ({exc}); pass a JSON file "
                '{"name": {"rope_type": ..., "rope_theta": ...}, ...}'
            ) from exc
    # a device this machine lacks: refused before the corpus is read
    where = options.placement(args)
    say = None if args.quiet else (lambda line: print(printable(line), file=sys.stderr, flush=True))
    result = extend(
        args.model,
        args.corpus,
        target_length=args.target_length,
        trained_length=args.trained_length,
        output=args.output,
        overwrite=args.overwrite,
        report=args.report,
        measure=args.measure,
        heldout=args.heldout,
        heldout_fraction=args.heldout_fraction,
        max_windows=args.max_windows,
        measure_top=args.measure_top,
        gguf_file=args.gguf_file,
        **where,
        tokenizer=args.tokenizer,
        classes=args.classes,
        replicates=args.replicates,
        strategies=strategies,
        fit=not args.no_fit,
        positions=args.positions,
        seed=args.seed,
        progress=say,
        emit=args.emit,
        decoding=text_decoding(args),
    )
    print(result.markdown())
    if result.rope_parameters is not None:
        changes = result.recommended.config_changes(result.trained_length, result.target_length)
        changes = ", ".join(f"{k} = {v}" for k, v in changes.items())
        print(
            "rope_parameters for config.json"
            + (f" (and set {printable(changes)})" if changes else "")
            + ":"
        )
        print(json_text(result.rope_parameters, indent=None))
    print(printable(result.verdict_line()))
    print(
        f"results in {printable(args.output)}/ (summary.json, table.md, arrays.npz"
        + (", rope_parameters.json" if result.rope_parameters is not None else "")
        + (", report.html" if args.report else "")
        + (", engines.md and each engine's file" if args.emit else "")
        + ")"
    )
    return 0


def register(sub: Any) -> None:
    p = options.add_command(sub, "extend", _extend)
    p.add_argument(
        "model",
        help="a Hugging Face folder or cached name (offline), a posgeom decoder file "
        "(posgeom.nn.decoder.save_decoder), or a family spec such as "
        "rope:theta=10000,head_dim=64[,max_position_embeddings=2048]",
    )
    p.add_argument(
        "corpus",
        nargs="+",
        help="text files (each one document; .gz ok), .jsonl/.csv/.parquet (one per record) or "
        "token ids (.npy/.npz/.bin)",
    )
    p.add_argument("--target-length", type=int, required=True, help="the length L to run at")
    p.add_argument(
        "--trained-length",
        type=int,
        default=None,
        help="the trained length L0 (default: the model's max_position_embeddings)",
    )
    options.add_gguf_argument(p)
    options.add_placement_arguments(p)
    options.add_tokenizer_argument(p)
    add_text_arguments(p)
    p.add_argument(
        "--classes",
        default="top:30",
        help="token classes of the lag statistics: top:K (K most frequent + other) or "
        "embedding:K (K clusters of the model's token embeddings; for long range)",
    )
    p.add_argument("--replicates", type=int, default=40, help="half-sample replicates (0: none)")
    p.add_argument("--strategies", default=None, help="JSON file {name: rope_parameters} to score")
    p.add_argument("--no-fit", action="store_true", help="skip the fitted per-plane factors")
    p.add_argument(
        "--positions",
        action="store_true",
        help="also score against the per-position geometry of the documents' starts (for "
        "corpora of records with a start; Gower extension of learned tables needs it)",
    )
    p.add_argument(
        "--measure",
        nargs="?",
        const="full",
        choices=("full", "quick"),
        default=None,
        help="measure each strategy: 'full' (the default) the loss past L0, key-token loss and a "
        "passkey at L; 'quick' the in-window loss on windows of <= 2,048 tokens",
    )
    p.add_argument("--heldout", nargs="+", default=None, help="held-out texts for --measure")
    p.add_argument(
        "--heldout-fraction",
        type=float,
        default=0.2,
        help="without --heldout: the last share of every document, kept out of the geometry",
    )
    p.add_argument(
        "--windows", dest="max_windows", type=int, default=4, help="held-out windows to measure"
    )
    p.add_argument(
        "--measure-top",
        type=int,
        default=None,
        help="measure only the best N strategies by score, plus none (default: all)",
    )
    options.add_seed_argument(p)
    options.add_results_folder_arguments(p)
    p.add_argument(
        "--emit",
        nargs="+",
        default=None,
        metavar="ENGINE",
        help="also write the recommendation for these engines (all, transformers5, transformers4, "
        "vllm, sglang, llamacpp, llama-cpp-python, ollama, exllamav2) beside the results, with "
        "engines.md (notes, refusals, rope-check findings)",
    )
