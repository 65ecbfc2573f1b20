"""The studies ask the family registry for their families; they do not enumerate them by name.

Checked by derivation: a throwaway family is registered (a copy of ALiBi, a relative bias, or of
the learned table, an additive one, under a new name and with no mechanism kind: it has the
parent's decoder module, torch module and lag kernel), and the studies must pick it up with no
change to their code:

- Track B (``studies.extension.track_b``) trains and measures it, "as is" (its strategies are the
  study's own only for the families the study is about);
- the Track B stress (``studies.extension.stress``) reads its lag kernel from its trained module
  through the registry, checked against the kernel computed here by hand from the module's
  weights: ``v_k = (m_h k)_h`` with ALiBi's slopes, ``v_k = mean_{i < n-k} p_i * p_{i+k}`` of a
  table ``p``;
- the position tasks (``studies.extension.tasks``) train it, score it exactly as they score the
  family it copies (same module class and seed, so the same numbers), and run it past the trained
  length as its parent runs (a table interpolates, a relative bias is left as it is).

What stays named, and why (a reviewer can check each against this list):

- ``track_b.STUDIED`` names RoPE, the learned table and the sinusoidal table: the study is about
  their test-time strategies (its own RoPE scalings, the records' table interpolation, the
  sinusoidal policies, none of which is a registry strategy); ``tasks.MDS_TASKS`` and
  ``tasks.NOT_TRAINED`` name the MDS table and two left-out families, each with its reason;
  ``tasks_analysis.SCORES`` leaves NoPE out of one correlation (its stress is 1 by construction);
- ``studies/estimation/common.py`` scores a fixed panel of 8 reference encodings with hand-set
  parameters (ALiBi head 3 of 8, RoPE heads of 16, a smooth learned-like table that is no
  family): the estimators' Kendall tau is over that panel, so a new family must not change the
  published estimator numbers; it is a study design, not a family list;
- ``benchmarks/bench_reports.py`` compares four families above n = 1024 to keep the measured
  report affordable: a workload, not a list of the families.

Those are choices of a study, not facts about the registry, so no derivation can check them;
everything that lists "the families" is checked here.
"""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.encodings import _registry as registry
from posgeom.encodings import families, family

torch = pytest.importorskip("torch")

NAME = "throwaway"


def _alibi_kernel(module, lags):
    return lags[:, None] * module.slopes.double().numpy()[None, :]


def _table_kernel(module, lags):
    p = module.table().detach().double().numpy()
    rows = []
    for k in lags:
        pairs = [p[i] * p[i + k] for i in range(len(p) - k)]  # elementwise products, k apart
        rows.append(sum(pairs) / len(pairs))
    return np.array(rows)


#: parent family -> its lag kernel by hand, from the trained module's weights
HAND_KERNELS = {"alibi": _alibi_kernel, "learned": _table_kernel}


@pytest.fixture(params=sorted(HAND_KERNELS))
def throwaway(request):
    """A family registered for one test (a parent's code under another name), then removed;
    yields the parent's name."""
    saved = dict(registry._FAMILIES)

    class ThrowawayFamily(type(family(request.param))):
        name = NAME
        mechanism_kind = None  # one family per Hugging Face mechanism: this one has none
        order = 999

    registry.register(ThrowawayFamily)
    try:
        yield request.param
    finally:
        registry._FAMILIES.clear()
        registry._FAMILIES.update(saved)
    assert NAME not in families()


def test_track_b_trains_and_measures_a_registered_family(throwaway):
    from studies.extension import stress
    from studies.extension import track_b as B

    assert NAME in B.encodings()
    assert B.strategies(NAME) == B.AS_IS
    assert set(B.STUDIED) < set(B.encodings())  # the studied families are registered ones
    model = B.build(NAME, 0).eval()
    trained = model.position
    assert B.with_strategy(model, NAME, "as is", 4 * B.L0).position is trained

    lags = np.arange(0, B.L0, 9)
    vectors = stress.lag_vectors(trained, model.config.position, lags, B.L0)
    want = HAND_KERNELS[throwaway](trained, lags)
    np.testing.assert_allclose(vectors, want, rtol=1e-12, atol=1e-12)


def test_tasks_train_and_score_a_registered_family(throwaway, monkeypatch):
    from studies.extension import tasks as T

    assert NAME in T.encodings()
    assert not set(T.NOT_TRAINED) & set(T.encodings())
    monkeypatch.setattr(T, "N_GEOMETRY", 300)  # a small solved set: the scores' plumbing only
    geometry = T.task_geometry("recall", 4)
    new, _ = T.build(NAME, 0, geometry)
    parent, _ = T.build(throwaway, 0, geometry)
    assert T.scores(new, NAME, 0, geometry) == T.scores(parent, throwaway, 0, geometry)
    T.allow_longer(new)
    T.allow_longer(parent)
    assert getattr(new.position, "beyond", None) == getattr(parent.position, "beyond", None)
