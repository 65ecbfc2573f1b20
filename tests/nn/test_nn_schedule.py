"""The learning-rate schedule of posgeom.nn.tasks.fit_classifier against torch's own schedulers
(LinearLR warmup, then CosineAnnealingLR or a constant factor)."""

from __future__ import annotations

import math

import pytest
import torch

from posgeom._errors import PosgeomError
from posgeom.nn import TinyEncoder, fit_classifier, order_task
from posgeom.nn.tasks import lr_factor


def _torch_factors(steps: int, warmup: int, schedule: str) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    after = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - warmup, eta_min=0.0)
        if schedule == "cosine"
        else torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    )
    if warmup:
        first = torch.optim.lr_scheduler.LinearLR(
            opt, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup - 1
        )
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [first, after], milestones=[warmup])
    else:
        sched = after
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("steps", "warmup", "schedule"), [(20, 5, "cosine"), (12, 0, "cosine"), (9, 3, "constant")]
)
def test_lr_factor_matches_torch_schedulers(steps, warmup, schedule):
    want = _torch_factors(steps, warmup, schedule)
    got = [lr_factor(t, steps, warmup=warmup, schedule=schedule) for t in range(steps)]
    assert got == pytest.approx(want, abs=1e-12)


def test_lr_factor_hand_values():
    # warmup 4 of 10: 1/4, 2/4, 3/4, 4/4, then cosine over the 6 steps left
    got = [lr_factor(t, 10, warmup=4, schedule="cosine") for t in range(10)]
    assert got[:5] == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    assert got[7] == pytest.approx(0.5)  # t = 3/6: (1 + cos(pi / 2)) / 2
    assert got[9] == pytest.approx(0.5 * (1 + math.cos(5 * math.pi / 6)))


def test_fit_classifier_follows_the_schedule():
    """The trained weights equal a plain AdamW loop driven by torch's schedulers."""
    task = order_task(256, 6, 10, seed=0)
    steps, warmup = 8, 3

    def model() -> TinyEncoder:
        torch.manual_seed(0)
        return TinyEncoder(10, 16, 2, 1, 6, "sinusoidal")

    ours = model()
    fit_classifier(
        ours,
        task.tokens,
        task.labels,
        steps=steps,
        lr=1e-2,
        batch_size=16,
        seed=3,
        warmup=warmup,
        schedule="cosine",
    )
    ref = model()
    gen = torch.Generator().manual_seed(3)
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)
    factors = _torch_factors(steps, warmup, "cosine")
    ref.train()
    for f in factors:
        for g in opt.param_groups:
            g["lr"] = 1e-2 * f
        idx = torch.randint(0, task.tokens.shape[0], (16,), generator=gen)
        loss = torch.nn.functional.cross_entropy(ref(task.tokens[idx]), task.labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    plain = model()  # and the schedule matters: a constant lr ends elsewhere
    fit_classifier(plain, task.tokens, task.labels, steps=steps, lr=1e-2, batch_size=16, seed=3)
    pairs = zip(ours.parameters(), plain.parameters(), strict=True)
    assert any(not torch.allclose(a, b) for a, b in pairs)


def test_bad_schedule_options_fail_before_training():
    task = order_task(8, 4, 6, seed=0)
    m = TinyEncoder(6, 8, 2, 1, 4, None)
    with pytest.raises(PosgeomError, match="schedule must be"):
        fit_classifier(m, task.tokens, task.labels, steps=4, schedule="linear")
    with pytest.raises(PosgeomError, match="warmup must be"):
        fit_classifier(m, task.tokens, task.labels, steps=4, warmup=4)
