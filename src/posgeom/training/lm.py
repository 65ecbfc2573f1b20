"""The language models of the pretraining study: one small Transformer, causal or masked, with
the position module of any trained encoding arm (:data:`ARMS`).

Architecture (pre-LN, the blocks of :class:`posgeom.nn.encoder.EncoderLayer`, no dropout), for
byte ids ``x`` of shape ``(B, L)``::

    h_0 = E[x] (+ P[0 .. L-1] for an additive position module)               (B, L, d)
    h_l = h_{l-1} + MHA(LN h_{l-1}; bias + mask);  h_l += FFN(LN h_l)         l = 1 .. n_layers
    logits = W LN(h_n) + b                                                    (B, L, V)

``causal=True``: the mask is ``-inf`` above the diagonal (next-byte prediction); ``False``: no mask
(masked-language modelling). The position module comes from the family registry
(:func:`posgeom.training.model.position_encoding`), so every arm differs only there. The control
``mds_scaled`` is the fixed MDS table multiplied so that its median row norm is ``sqrt(d)``, the
expected row norm of the ``N(0, 1)`` token embedding. Arms without an ``n``-row table
(:data:`EXTENDABLE`) are also evaluated at 2x and 4x the trained length; the sinusoidal table is
built for ``4 n`` rows (its first ``n`` rows are the trained ones).
"""

from __future__ import annotations

from typing import Any

from posgeom.encodings.mds import MDSFamily

__all__ = ["ARMS", "DEFAULT_ARMS", "EXTENDABLE", "arm_config", "build_lm", "lm_position_geometry"]

_MDS = MDSFamily.name  # the MDS table's family (its row name is spelled in one place)

#: arm -> (registry family, train the table?  None: the family's default)
ARMS: dict[str, tuple[str, bool | None]] = {
    "sinusoidal": ("sinusoidal", None),
    "learned": ("learned", None),
    "learned_mds_init": (_MDS, True),
    "rope": ("rope", None),
    "alibi": ("alibi", None),
    "t5": ("t5", None),
    "nope": ("nope", None),
    _MDS: (_MDS, None),
    "low_rank_mds": ("low_rank_mds", None),
    "random": ("random", None),
    "mds_scaled": (_MDS, None),
}
#: the ten arms of the default grid (``mds_scaled`` is a control: the MDS table rescaled)
DEFAULT_ARMS = tuple(a for a in ARMS if a != "mds_scaled")
#: arms that run at any length (no table of n rows)
EXTENDABLE = ("sinusoidal", "rope", "alibi", "t5", "nope")


def arm_config(arm: str, *, n: int, d: int, n_heads: int, seed: int, rank: int = 3) -> Any:
    """The :class:`~posgeom.training.TrainConfig` that names ``arm``'s position module for the
    registry (``max_len = n``; only the position fields are read)."""
    from posgeom.training.config import TrainConfig

    fam, trained = ARMS[arm]
    return TrainConfig(
        encoding=fam,
        max_len=n,
        d_model=d,
        n_heads=n_heads,
        seed=seed,
        rank=rank,
        train_positions=trained,
    )


def _lm_class() -> type:
    from posgeom.nn.encoder import TinyEncoder, run_layers

    class PretrainLM(TinyEncoder):
        """The model of the module docstring (a :class:`~posgeom.nn.encoder.TinyEncoder` with a
        vocabulary head on every token): ``forward(x (B, L)) -> logits (B, L, V)``."""

        def __init__(
            self, vocab: int, d: int, n_heads: int, n_layers: int, position: Any, causal: bool
        ) -> None:
            super().__init__(vocab, d, n_heads, n_layers, 0, position, n_classes=vocab)
            self.causal = causal

        def forward(self, x: Any) -> Any:
            h = run_layers(self.position, self.token_embedding(x), self.layers, causal=self.causal)
            return self.head(self.ln_f(h))

    return PretrainLM


def build_lm(
    arm: str,
    *,
    n: int,
    d: int,
    n_heads: int,
    n_layers: int,
    causal: bool,
    seed: int,
    geometry: Any = None,
    vocab: int = 256,
) -> Any:
    """The model of ``arm`` (module docstring), its weights drawn from ``seed`` (torch's global
    generator seeded here, again after the position module is built, so every arm of a seed
    starts from the same embedding, blocks and head);
    ``geometry``: the corpus ``GeometryResult`` the MDS arms are built from."""
    import dataclasses

    import torch

    from posgeom.training.model import position_encoding

    cfg = arm_config(arm, n=n, d=d, n_heads=n_heads, seed=seed)
    if arm == "sinusoidal":  # computed rows: built for 4n so that 2n and 4n can be read
        cfg = dataclasses.replace(cfg, max_len=4 * n)
    torch.manual_seed(seed)
    pos = position_encoding(cfg, geometry)
    if arm == "mds_scaled":
        with torch.no_grad():
            pos.weight.mul_(d**0.5 / pos.weight.norm(dim=1).median())
    torch.manual_seed(seed)  # the same body weights for every arm of a seed
    return _lm_class()(vocab, d, n_heads, n_layers, pos, causal)


def lm_position_geometry(model: Any, arm: str, *, n: int, n_heads: int, target: Any) -> Any:
    """The geometry of ``model``'s position module over positions ``0 .. n-1`` (the family's
    ``module_geometry``: a table's rows, or RoPE / ALiBi / T5 / NoPE geometry)."""
    from posgeom.encodings import family

    cfg = arm_config(arm, n=n, d=model.d_model, n_heads=n_heads, seed=0)
    return family(ARMS[arm][0]).module_geometry(model.position, cfg.torch_spec(), target)
