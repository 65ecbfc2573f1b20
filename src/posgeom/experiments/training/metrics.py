# ----------------------------------------------------------------------------- geometry
def _target_geometry(cfg: TrainConfig, prep: _Prepared, model_dim: int) -> Any:
    """``PipelineResult`` of the training split at ``n = max_len`` (distances + MDS)."""
    from posgeom.corpus.counting import count_positions
    from posgeom.pipeline import analyze_counts

    counts = count_positions(prep.count_ids, max_positions=cfg.max_len,
                             vocab_size=prep.count_vocab)
    totals = np.asarray(counts.totals)
    if (totals <= 0).any():
        first = int(np.flatnonzero(totals <= 0)[0])
        raise PosgeomError(
            f"max_len={cfg.max_len} asks for positions beyond the corpus: no training sequence "
            f"reaches position {first} (n = {first} positions have samples); set max_len <= "
            f"{first}"
        )
    return analyze_counts(counts, model_dim=model_dim, refine=False, noise=None, max_rank=1,
                          seed=cfg.seed)



def position_geometry(model: Any, cfg: TrainConfig, target: np.ndarray) -> Any:
    """The encoding scored each epoch: ``(n, d)`` float64 vectors or a posgeom encoding.

    Additive tables: rows ``0 … n-1`` of ``module.table()``; MiniLM: rows ``0 … n-1`` of
    ``embeddings.position_embeddings``; RoPE / ALiBi / NoPE: :mod:`posgeom.encodings` geometry
    (ALiBi: the head of lowest paper stress against ``target``).
    """
    import torch

    from posgeom import encodings
    from posgeom.nn import ALiBiBias, PositionEmbedding, RotaryEmbedding

    n = cfg.max_len
    if hasattr(model, "bert"):
        w = model.bert.embeddings.position_embeddings.weight[:n]
        return w.detach().to(torch.float64).cpu().numpy()
    pos = _position_module(model)
    if isinstance(pos, PositionEmbedding):
        with torch.no_grad():
            return pos.table().detach().to(torch.float64).cpu().numpy()
    if isinstance(pos, RotaryEmbedding):
        return encodings.rope(n, head_dim=pos.head_dim, base=pos.base)
    if isinstance(pos, ALiBiBias):
        return encodings.alibi(n, pos.n_heads, head="best", target=target)
    return encodings.nope(n, cfg.d_model)


def geometry_scores(encoding: Any, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Separation margin, every stress kind and the violation rate of ``encoding`` vs ``target``."""
    from posgeom.scores import monotonicity_violation_rate, separation_margin, stress_scores

    return {
        "separation": separation_margin(encoding),
        "stress": stress_scores(encoding, target).as_dict(),
        "violation_rate": monotonicity_violation_rate(encoding, target, seed=seed).rate,
    }

