@dataclass(frozen=True)
class EpochRecord:
    """One line of ``log.jsonl`` (see the module docstring)."""

    epoch: int
    steps: int
    train_loss: float | None
    train_accuracy: float | None
    eval_loss: float
    eval_accuracy: float
    separation: float
    stress: dict[str, float]
    violation_rate: float
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """What :func:`train` returns: the config, the per-epoch history, the model and its geometry."""

    config: TrainConfig
    history: list[EpochRecord]
    output: Path
    model: Any
    target: np.ndarray
    resumed_from: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> EpochRecord:
        return self.history[-1]



# ----------------------------------------------------------------------------- batches
def _pad(seqs: list[list[int]], pad: int = PAD_ID) -> tuple[Any, Any]:
    import torch

    length = max(len(s) for s in seqs)
    tok = torch.full((len(seqs), length), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for k, s in enumerate(seqs):
        tok[k, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[k, : len(s)] = 1
    return tok, mask


def _mask_tokens(tok: Any, attn: Any, prob: float, gen: Any) -> tuple[Any, Any]:
    """Replace a ``prob`` share of real tokens by ``[MASK]``; labels ``-100`` elsewhere."""
    import torch

    chosen = (torch.rand(tok.shape, generator=gen) < prob) & attn.bool()
    if not bool(chosen.any()):  # at least one target per batch
        first = int(torch.nonzero(attn.bool())[0, 1])
        chosen[0, first] = True
    labels = torch.where(chosen, tok, torch.full_like(tok, -100))
    return tok.masked_fill(chosen, MASK_ID), labels


def _batch_loss(model: Any, cfg: TrainConfig, seqs: list[list[int]], labels: np.ndarray | None,
                gen: Any) -> tuple[Any, int, int]:
    """``(mean loss, n correct, n predictions)`` of one batch."""
    import torch
    from torch import nn

    tok, attn = _pad(seqs)
    if cfg.task == "imdb-mlm":
        inp, tgt = _mask_tokens(tok, attn, cfg.mlm_probability, gen)
        sel = tgt != -100
        out, y = model(inp, attn, sel), tgt[sel]
    else:
        out = model(tok, attn)
        y = torch.as_tensor(labels, dtype=torch.long)
    loss = nn.functional.cross_entropy(out, y)
    correct = int((out.detach().argmax(-1) == y).sum())
    return loss, correct, int(y.numel())


def _evaluate(model: Any, cfg: TrainConfig, ids: list[list[int]], labels: np.ndarray | None
              ) -> tuple[float, float]:
    import torch

    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + 1_234_567)  # same masks every epoch
    tot_loss = tot_correct = tot = 0.0
    bs = max(cfg.batch_size, 64)
    with torch.no_grad():
        for s in range(0, len(ids), bs):
            lab = None if labels is None else labels[s: s + bs]
            loss, c, m = _batch_loss(model, cfg, ids[s: s + bs], lab, gen)
            tot_loss += float(loss) * m
            tot_correct += c
            tot += m
    return tot_loss / tot, tot_correct / tot


# ----------------------------------------------------------------------------- training
def _epoch_seeds(cfg: TrainConfig, epoch: int) -> tuple[np.random.Generator, int]:
    return np.random.default_rng([cfg.seed, epoch]), cfg.seed * 1_000_003 + epoch


def _json_line(rec: EpochRecord) -> str:
    return json.dumps(rec.as_dict(), sort_keys=True)


def train(
    config: TrainConfig,
    output: str | os.PathLike,
    *,
    data: TextData | None = None,
    on_epoch: Callable[[EpochRecord], None] | None = None,
) -> TrainResult:
    """Train ``config`` into the folder ``output`` (created), resuming a finished epoch if any.

    ``data`` supplies the texts in memory (else they are read from ``config``'s files);
    ``on_epoch`` is called with each new :class:`EpochRecord`. Writes ``config.json``,
    ``log.jsonl``, ``checkpoint.safetensors``, ``tokenizer.json`` (word tokenizer) and
    ``result.json`` (the last record and the run's facts).
    """
    import torch

    from posgeom.artifacts import atomic_write_text

    cfg = config.validate()
    torch.set_num_threads(cfg.threads)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / CHECKPOINT
    t0 = time.perf_counter()
    prep = _prepare(cfg, data)
    if not prep.train_ids:
        raise PosgeomError("no training sequence is left after tokenization")
    model_dim = cfg.d_model if cfg.model == "tiny" else 384
    geometry = _target_geometry(cfg, prep, model_dim)
    target = geometry.distances
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, prep.vocab_size, geometry)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    history: list[EpochRecord] = []
    start = 0
    if ckpt.is_file():
        meta, tensors = _load_checkpoint(ckpt)
        if meta.get("fingerprint") != cfg.fingerprint():
            raise PosgeomError(
                f"{out} holds a run of another configuration ({meta.get('config')}); use a new "
                "output folder or delete it"
            )
        _restore(model, opt, meta, tensors)
        history = [EpochRecord(**r) for r in meta["history"]]
        start = int(meta["epoch"])
        # the log may hold a line of an epoch whose checkpoint was not written: rewrite it
        atomic_write_text(out / LOG, "".join(_json_line(r) + "\n" for r in history))
        log.info("resuming %s from epoch %d", out, start)
    atomic_write_text(out / "config.json", json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    if prep.tokenizer is not None and hasattr(prep.tokenizer, "save"):
        prep.tokenizer.save(out / "tokenizer.json")
    n_train = len(prep.train_ids)
    steps_full = math.ceil(n_train / cfg.batch_size)
    steps = min(steps_full, cfg.steps_per_epoch or steps_full)
    tqdm = require("tqdm", "torch").tqdm

    def record(epoch: int, n_steps: int, tl: float | None, ta: float | None, secs: float
               ) -> EpochRecord:
        el, ea = _evaluate(model, cfg, prep.eval_ids, prep.eval_labels)
        g = geometry_scores(position_geometry(model, cfg, target), target, seed=cfg.seed)
        rec = EpochRecord(epoch, n_steps, tl, ta, el, ea, g["separation"], g["stress"],
                          g["violation_rate"], secs)
        history.append(rec)
        with open(out / LOG, "a", encoding="utf-8") as fh:
            fh.write(_json_line(rec) + "\n")
        if on_epoch is not None:
            on_epoch(rec)
        return rec

    if start == 0:
        (out / LOG).unlink(missing_ok=True)
        record(0, 0, None, None, 0.0)
    for epoch in range(start + 1, cfg.epochs + 1):
        te = time.perf_counter()
        rng, tseed = _epoch_seeds(cfg, epoch)
        torch.manual_seed(tseed)
        gen = torch.Generator().manual_seed(tseed)
        order = rng.permutation(n_train)
        model.train()
        tot_loss = tot_correct = tot = 0.0
        bar = tqdm(range(steps), desc=f"{cfg.task}/{cfg.encoding} s{cfg.seed} e{epoch}",
                   disable=not cfg.progress, leave=False)
        for b in bar:
            idx = order[b * cfg.batch_size: (b + 1) * cfg.batch_size]
            lab = None if prep.train_labels is None else prep.train_labels[idx]
            loss, c, m = _batch_loss(model, cfg, [prep.train_ids[i] for i in idx], lab, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot_loss += float(loss.detach()) * m
            tot_correct += c
            tot += m
            if cfg.progress and b % 20 == 0:
                bar.set_postfix(loss=f"{tot_loss / tot:.3f}")
        rec = record(epoch, steps, tot_loss / tot, tot_correct / tot, time.perf_counter() - te)
        meta = {"config": dataclasses.asdict(cfg), "fingerprint": cfg.fingerprint(),
                "epoch": epoch, "history": [r.as_dict() for r in history]}
        _save_checkpoint(ckpt, model, opt, meta)
        log.info("%s", _json_line(rec))
    result = {
        "config": dataclasses.asdict(cfg),
        "final": history[-1].as_dict(),
        "n_train": n_train,
        "n_eval": len(prep.eval_ids),
        "vocab_size": prep.vocab_size,
        "n_parameters": int(sum(p.numel() for p in model.parameters())),
        "n_position_parameters": _n_position_parameters(model),
        "target": {"n": int(target.shape[0]), "hellinger": "chord",
                   "corpus_sequences": len(prep.count_ids)},
        "seconds_this_call": time.perf_counter() - t0,
    }
    atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")
    return TrainResult(cfg, history, out, model, target, resumed_from=start,
                       extras={"n_train": n_train, "geometry": geometry})


def read_log(output: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run folder (``log.jsonl``)."""
    path = Path(output) / LOG
    if not path.is_file():
        raise PosgeomError(f"{path} does not exist; is {output} a training run folder?")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


