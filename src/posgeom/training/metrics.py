"""The geometry tracked during training: the corpus target and the model's position encoding.

Target: the Hellinger distances (chord convention) ``D`` (n, n) of the positional distributions of
the *whole* training split (counted with the model's tokenizer, ``n = max_len``, the MDS row
only); the ``mds`` and ``low_rank_mds`` encodings are Algorithm 1 on the same counts.

Encoding: each family's ``module_geometry`` (:mod:`posgeom.encodings`): the rows ``0 … n-1`` of
an additive table, or the RoPE, ALiBi (the head of lowest paper stress), T5 or NoPE geometry.

Scores (one set per epoch): ``separation`` = ``min_{i<j} ||p_i - p_j||`` (Theorem 4),
``stress`` = every kind of :func:`posgeom.scores.stress_scores` against ``D``,
``violation_rate`` = monotonicity violations over triples (Conjecture 5).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.training.config import TrainConfig
from posgeom.training.corpora import mds_geometry
from posgeom.training.data import Prepared
from posgeom.training.model import position_module

__all__ = ["geometry_scores", "position_geometry", "target_geometry"]


def target_geometry(cfg: TrainConfig, prep: Prepared, model_dim: int) -> Any:
    """``GeometryResult`` of the training split at ``n = max_len`` (distances + MDS), against the
    estimator ``cfg.target_estimator`` (default the recommended one; ``"plugin"`` is the paper's
    and the one ``docs/EXPERIMENTS.md`` was measured with)."""
    from posgeom.corpus.counting import count_positions

    counts = count_positions(prep.count_ids, max_positions=cfg.max_len, vocab_size=prep.count_vocab)
    totals = np.asarray(counts.totals)
    if (totals <= 0).any():
        first = int(np.flatnonzero(totals <= 0)[0])
        raise PosgeomError(
            f"max_len={cfg.max_len} asks for positions beyond the corpus: no training sequence "
            f"reaches position {first} (n = {first} positions have samples); set max_len <= "
            f"{first}"
        )
    return mds_geometry(counts, model_dim=model_dim, seed=cfg.seed, estimator=cfg.target_estimator)


def position_geometry(model: Any, cfg: TrainConfig, target: np.ndarray) -> Any:
    """The encoding scored each epoch: ``(n, d)`` float64 vectors or a posgeom encoding.

    MiniLM: rows ``0 … n-1`` of ``embeddings.position_embeddings``; the tiny model: the family's
    ``module_geometry`` (additive tables: rows ``0 … n-1`` of ``module.table()``; RoPE / ALiBi /
    NoPE / T5: :mod:`posgeom.encodings` geometry, ALiBi: the head of lowest paper stress against
    ``target``).
    """
    import torch

    from posgeom.encodings import family

    n = cfg.max_len
    if hasattr(model, "bert"):
        weight = model.bert.embeddings.position_embeddings.weight[:n]
        return weight.detach().to(torch.float64).cpu().numpy()
    pos = position_module(model)
    return family(cfg.encoding).module_geometry(pos, cfg.torch_spec(), target)


def geometry_scores(encoding: Any, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Separation margin, every stress kind and the violation rate of ``encoding`` vs ``target``."""
    from posgeom.scores import monotonicity_violation_rate, separation_margin, stress_scores

    return {
        "separation": separation_margin(encoding),
        "stress": stress_scores(encoding, target).as_dict(),
        "violation_rate": monotonicity_violation_rate(encoding, target, seed=seed).rate,
    }
