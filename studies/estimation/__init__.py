"""The estimation study (issues 8, 16, 24): the estimators of the positional geometry against
known truths, written to ``docs/ESTIMATION.md`` and ``docs/estimation/``.

``python -m studies.estimation`` writes the page and ``estimation.json`` (synthetic truths,
coverage, cost, real populations); the follow-up studies write their data files beside it:
``python -m studies.estimation.resolution_rule``, ``.resolution_classes``,
``.variance_reduction`` and ``.interval_fixes``. Shared: :mod:`~studies.estimation.common`
(regimes, encodings, quality of an estimate) and :mod:`~studies.estimation.real_population`
(real corpora as populations).
"""
