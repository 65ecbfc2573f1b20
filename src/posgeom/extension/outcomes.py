"""Long-context outcomes of a strategy: per-token losses, key-token loss (LongPPL), passkey.

- :func:`token_losses`: ``-log p(x_{t+1} | x_{<=t})`` for every predicted position ``t + 1`` of
  one window (float64 log-softmax, logits in chunks of positions), index ``i`` = the loss of the
  token at position ``i + 1``; shape ``(L - 1,)``.
- :func:`short_context_losses`: the same tokens at positions ``start ..`` predicted from a
  truncated context: positions are taken in blocks of ``block``; a block ``[s, s + block)`` is
  predicted by a forward of ``ids[s - context : s + block]``, so every token sees between
  ``context`` and ``context + block - 1`` tokens (never more than ``L0`` when
  ``context + block <= L0``: the model as trained).
- :func:`key_token_mask`: LongPPL's key tokens (Fang et al., "What is Wrong with Perplexity for
  Long-context Language Modeling?", ICLR 2025, arXiv 2410.23771): with long-context loss
  ``l_long`` and short-context loss ``l_short`` (nats), the long-short difference
  ``LSD = l_short - l_long`` and the long-context likelihood ``LCL = -l_long``; a token is key when
  ``LSD > alpha`` and ``LCL > beta`` (the paper's ``alpha = 2``, ``beta = -2``). The key-token loss
  of a strategy is its mean loss over the key tokens (:func:`key_token_loss`).
- :func:`passkey_ids` / :func:`passkey_outcome`: the passkey retrieval test (Mohtashami & Jaggi
  2023): filler text of ``length`` tokens, a five-digit key stated at relative depth ``depth``,
  the question at the end and the key teacher-forced after it; the outcome is the mean
  log-probability of the key's tokens and whether every one is the model's argmax (retrieved).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "consensus_key_mask",
    "key_token_loss",
    "key_token_mask",
    "passkey_ids",
    "passkey_outcome",
    "short_context_losses",
    "token_losses",
]

#: LongPPL's thresholds (nats): key when l_short - l_long > LSD_MIN and -l_long > LCL_MIN.
LSD_MIN, LCL_MIN = 2.0, -2.0

_FILLER = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise PosgeomError(message)


def _runner(model: Any) -> Any:
    from posgeom.extension.runners import runner_for

    return model if hasattr(model, "hidden_and_head") else runner_for(model)


def _inputs(runner: Any, ids: Any) -> Any:
    """``ids`` as a ``(1, T)`` tensor on the device the runner's model takes its inputs on."""
    import torch

    from posgeom._placement import input_device

    model = getattr(runner, "model", None)
    x = torch.as_tensor(np.asarray(ids, dtype=np.int64))[None]
    return x.to(input_device(model)) if isinstance(model, torch.nn.Module) else x


def _nll(runner: Any, ids: np.ndarray, chunk: int) -> np.ndarray:
    """Per-token next-token loss of one forward (float64 on the host, whatever the model's
    dtype and device), shape ``(len(ids) - 1,)``."""
    import torch

    x = _inputs(runner, ids)
    with torch.no_grad():
        hidden, head = runner.hidden_and_head(x)
        hidden, target = hidden[:-1], x[0, 1:].cpu()
        out = []
        for s in range(0, hidden.shape[0], chunk):
            logp = torch.log_softmax(head(hidden[s : s + chunk]).cpu().double(), dim=-1)
            out.append(-logp.gather(1, target[s : s + chunk, None])[:, 0])
    return torch.cat(out).numpy().astype(np.float64)


def token_losses(model: Any, ids: np.ndarray, *, chunk: int = 1024) -> np.ndarray:
    """Loss of every predicted token of ``ids`` (module docstring); ``model``: a transformers
    causal LM, a posgeom ``CausalDecoder`` or a runner; shape ``(len(ids) - 1,)``."""
    return _nll(_runner(model), ids, chunk)


def short_context_losses(
    model: Any, ids: np.ndarray, start: int, context: int, *, block: int = 1024
) -> np.ndarray:
    """Losses of the tokens at positions ``start .. L-1`` from at most ``context + block - 1``
    preceding tokens (module docstring); shape ``(L - start,)``."""
    ids = np.asarray(ids, dtype=np.int64)
    _check(
        0 < context <= start < ids.size,
        f"short context {context} and start {start} must satisfy 0 < context <= start < "
        f"{ids.size}; give a shorter context",
    )
    runner = _runner(model)
    parts = []
    for s in range(start, ids.size, block):
        e = min(s + block, ids.size)
        parts.append(_nll(runner, ids[s - context : e], block)[context - 1 :])
    return np.concatenate(parts)


def key_token_mask(
    long_loss: np.ndarray,
    short_loss: np.ndarray,
    *,
    lsd_min: float = LSD_MIN,
    lcl_min: float = LCL_MIN,
) -> np.ndarray:
    """LongPPL's key tokens: ``short - long > lsd_min`` and ``-long > lcl_min`` (nats)."""
    long_loss, short_loss = np.asarray(long_loss, float), np.asarray(short_loss, float)
    _check(long_loss.shape == short_loss.shape, "long and short losses must have one shape")
    return (short_loss - long_loss > lsd_min) & (-long_loss > lcl_min)


def consensus_key_mask(long_losses: Sequence[np.ndarray], short_loss: np.ndarray) -> np.ndarray:
    """Key tokens of one window with the per-token median over the measured strategies'
    long-context losses (``(S, n)``) as the long-context loss: no single strategy's view
    decides which tokens need the long context (LongPPL uses a separate evaluator model)."""
    return key_token_mask(np.median(np.asarray(long_losses, float), axis=0), short_loss)


def key_token_loss(losses: np.ndarray, mask: np.ndarray) -> float:
    """Mean loss over the key tokens (nan when there is none)."""
    mask = np.asarray(mask, bool)
    return float(np.mean(np.asarray(losses, float)[mask])) if mask.any() else float("nan")


def passkey_ids(
    encode: Callable[[str], Sequence[int]], length: int, *, depth: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A passkey prompt of exactly ``length`` tokens ending with the key (teacher-forced) and the
    positions of the key's tokens there; the key is ``seed``'s five-digit number; ``encode``:
    text -> token ids (no special tokens)."""
    key = str(int(np.random.default_rng(seed).integers(10_000, 100_000)))

    def enc(text: str) -> list[int]:
        return [int(t) for t in encode(text)]

    intro = enc(
        "There is important info hidden inside a lot of irrelevant text. Find it and "
        "memorize it. I will quiz you about the important information there. "
    )
    needle = enc(f" The pass key is {key}. Remember it. {key} is the pass key. ")
    question = enc(" What is the pass key? The pass key is")
    answer = enc(f" {key}")
    filler = enc(_FILLER)
    room = length - len(intro) - len(needle) - len(question) - len(answer)
    _check(room > 0, f"a passkey prompt needs more than {length} tokens; give a longer target")
    fill = (filler * (room // len(filler) + 1))[:room]
    cut = round(depth * room)
    ids = intro + fill[:cut] + needle + fill[cut:] + question + answer
    return np.asarray(ids, np.int64), np.arange(len(ids) - len(answer), len(ids))


def passkey_outcome(model: Any, ids: np.ndarray, answer: np.ndarray) -> dict[str, float]:
    """Mean log-probability of the key's tokens and 1.0 when each is the argmax, else 0.0."""
    import torch

    runner = _runner(model)
    x = _inputs(runner, ids)
    with torch.no_grad():
        hidden, head = runner.hidden_and_head(x)
        logp = torch.log_softmax(head(hidden[np.asarray(answer) - 1]).cpu().double(), dim=-1)
    target = torch.as_tensor(np.asarray(ids)[answer])
    lp = logp.gather(1, target[:, None])[:, 0].numpy()
    hit = bool((logp.argmax(dim=-1) == target).all())
    return {"passkey_logprob": float(lp.mean()), "passkey_retrieved": float(hit)}
