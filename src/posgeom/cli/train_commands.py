"""``posgeom train`` and ``posgeom experiment``: train small models and track their geometry.

``train`` trains one model into -o DIR (resumed when DIR holds a checkpoint of the same
configuration); ``experiment stress-vs-accuracy`` and ``experiment order-necessity`` run an
encoding x seed grid; ``experiment pretrain``: :mod:`posgeom.cli.pretrain_commands`.
"""

from __future__ import annotations

import argparse
from typing import Any

from posgeom._errors import printable
from posgeom.cli import _options as options
from posgeom.io.jsonfiles import json_text


def _model_arguments(p: argparse.ArgumentParser, *, max_len: int = 48, epochs: int = 3) -> None:
    g = p.add_argument_group("model and optimisation")
    g.add_argument("--epochs", type=int, default=epochs, help="epochs (total, also on resume)")
    g.add_argument(
        "--model",
        choices=("tiny", "minilm"),
        default=_default("model"),
        help="tiny: posgeom TinyEncoder; minilm: fine-tune all-MiniLM-L6-v2 (offline "
        "weights, --encoding pretrained, sst2 only)",
    )
    _field_flag(g, "--d-model", int, "model width d")
    _field_flag(g, "--heads", int, "attention heads", field="n_heads")
    _field_flag(g, "--layers", int, "encoder layers", field="n_layers")
    _field_flag(g, "--dropout", float, "dropout")
    g.add_argument(
        "--max-len",
        type=int,
        default=max_len,
        help="n: positions of the model and of the corpus geometry (longer sequences "
        "are truncated)",
    )
    _field_flag(g, "--batch-size", int, "batch size")
    _field_flag(g, "--lr", float, "AdamW learning rate (constant)")
    _field_flag(g, "--weight-decay", float, "AdamW weight decay")
    _field_flag(g, "--rank", int, "rank r of low_rank_mds")
    _field_flag(g, "--random-scale", float, "entry standard deviation of the fixed random table")
    g.add_argument(
        "--train-positions",
        choices=("default", "yes", "no"),
        default="default",
        help="train the position table (default: learned and low_rank_mds only)",
    )
    g.add_argument(
        "--steps-per-epoch",
        type=int,
        default=None,
        help="optimizer steps per epoch (default: one pass over the training set)",
    )
    _field_flag(g, "--threads", int, "torch.set_num_threads")
    d = p.add_argument_group("data")
    d.add_argument(
        "--data-dir",
        default=None,
        help="folder with sst2/sentence/{train,validation}.tsv.gz and "
        "imdb/train.jsonl.gz (default: $POSGEOM_DATA)",
    )
    d.add_argument("--train-file", default=None, help="training file (overrides --data-dir)")
    d.add_argument("--eval-file", default=None, help="evaluation file (overrides --data-dir)")
    d.add_argument("--train-limit", type=int, default=None, help="seeded subset of training rows")
    d.add_argument("--eval-limit", type=int, default=None, help="seeded subset of eval rows")
    _field_flag(d, "--order-samples", int, "training sequences of the order task")
    options.add_estimator_argument(
        d,
        dest="target_estimator",
        what="estimator of the target geometry the run is scored against",
    )


def _field_flag(g: Any, flag: str, kind: type, help_text: str, *, field: str = "") -> None:
    """``flag`` of the :class:`~posgeom.training.TrainConfig` field ``field``, its default."""
    field = field or flag.removeprefix("--").replace("-", "_")
    g.add_argument(flag, dest=field, type=kind, default=_default(field), help=help_text)


def _default(name: str) -> Any:
    """The default of the :class:`~posgeom.training.TrainConfig` field ``name``."""
    from posgeom.training import TrainConfig

    return TrainConfig.__dataclass_fields__[name].default


def _config(args: argparse.Namespace, **override: Any) -> Any:
    """The :class:`TrainConfig` of the parsed options: every option whose dest is a field fills it."""
    import dataclasses

    from posgeom.training import TrainConfig

    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    kw = {k: v for k, v in vars(args).items() if k in fields and (k != "encoding" or v is not None)}
    kw["train_positions"] = {"default": None, "yes": True, "no": False}[args.train_positions]
    kw["progress"] = not getattr(args, "quiet", False)
    kw.update(override)
    return TrainConfig(**kw)


def _train(args: argparse.Namespace) -> int:
    """train a small model and track its position geometry per epoch

    Train one model (TinyEncoder with any encoding, or MiniLM fine-tuning) and record per epoch:
    loss, accuracy, the separation margin, stress (all kinds) against the corpus Hellinger geometry
    and the monotonicity violation rate. Resumes DIR."""
    from posgeom.training import train

    encoding = args.encoding or ("pretrained" if args.model == "minilm" else "sinusoidal")
    res = train(_config(args, encoding=encoding), args.output, overwrite=args.overwrite)
    final = ("epoch", "eval_accuracy", "separation", "stress", "violation_rate")
    line = {"output": str(res.output)} | {k: getattr(res.final, k) for k in final}
    print(json_text(line, indent=None))
    return 0


def _experiment(args: argparse.Namespace) -> int:
    from posgeom.training import order_necessity, stress_vs_accuracy

    kw = {"encodings": args.encodings.split(",")} if args.encodings is not None else {}
    kw |= {"seeds": options.seeds_of(args.seeds), "overwrite": args.overwrite}
    if args.name == "stress-vs-accuracy":
        summary = stress_vs_accuracy(args.output, base=_config(args, task="sst2"), **kw)
        print(json_text(summary["spearman_accuracy_vs_stress"], indent=1))
    else:
        base = _config(args, task="order", max_len=args.max_len)
        summary = order_necessity(args.output, base=base, **kw)
        means = {e: r["accuracy_mean"] for e, r in summary["per_encoding"].items()}
        print(json_text(means, indent=None))
    print(f"wrote {printable(args.output)}/results.json and table.md")
    return 0


def register(sub: Any) -> None:
    from posgeom.training import TASKS, trainable_encodings

    p = options.add_command(sub, "train", _train)
    p.add_argument("--task", choices=TASKS, default="sst2", help="task")
    p.add_argument(
        "--encoding",
        default=None,
        help=f"position encoding: {', '.join(trainable_encodings())} (or 'pretrained' with "
        "--model minilm); default sinusoidal / pretrained",
    )
    options.add_seed_argument(p)
    options.add_results_folder_arguments(
        p,
        report=None,
        output="run folder: new, empty, or a run posgeom wrote (resumed)",
        overwrite="start the run in -o over (deletes only the files posgeom wrote there)",
    )
    _model_arguments(p)

    e = sub.add_parser(
        "experiment",
        help="run a documented experiment grid (encodings x seeds)",
        description="stress-vs-accuracy: SST-2 accuracy of every encoding x seed against its "
        "stress (paper and scale-optimal) with a Spearman correlation, bootstrap CI and exact "
        "permutation p-value. order-necessity: Theorem 1's order-only task. pretrain: small "
        "language models with every encoding on real corpora, against stress computed before "
        "training (posgeom experiment pretrain --help).",
    )
    es = e.add_subparsers(
        dest="name",
        metavar="EXPERIMENT",
        required=True,
        help="the experiment to run (its own --help)",
    )
    for name, what in (
        ("stress-vs-accuracy", "SST-2 accuracy of every encoding x seed against its stress"),
        ("order-necessity", "Theorem 1's order-only task for every encoding x seed"),
    ):
        x = options.add_command(es, name, _experiment, help=what, description=what)
        options.add_results_folder_arguments(
            x,
            report=None,
            output="experiment folder: new, empty, or one posgeom wrote (finished runs are reused)",
            overwrite="start the experiment in -o over (deletes only the files posgeom wrote there)",
        )
        x.add_argument(
            "--encodings", default=None, help="comma-separated encodings (default: all eight)"
        )
        options.add_seeds_argument(x)
        _model_arguments(x, epochs=5)
    from posgeom.cli.pretrain_commands import add_parser

    add_parser(es)
