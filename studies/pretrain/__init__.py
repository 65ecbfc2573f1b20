"""Issue 34: does stress computed before training rank what small language models reach?

Run from the repository root:

- ``python -m studies.pretrain run RESULTS [--resume]``: the default grid of
  ``posgeom experiment pretrain`` on the three corpora of :mod:`studies.pretrain.corpora` (prose,
  LaTeX, code), into ``RESULTS`` (keep it outside the repository, e.g. ``/work/pretrain-results``);
- ``python -m studies.pretrain control CONTROL [--resume]``: the control arm ``mds_scaled`` (the
  MDS table at the token embeddings' scale), causal, the same corpora and seeds, into its own
  folder;
- ``python -m studies.pretrain page RESULTS [--control CONTROL]``: the analysis (:mod:`studies.pretrain.analysis`)
  into ``docs/EVIDENCE.md``, the figures under ``docs/evidence/`` and the per-run records
  ``docs/evidence/pretrain_runs.jsonl`` (quick: reads the records, trains nothing).
"""
