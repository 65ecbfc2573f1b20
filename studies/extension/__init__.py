"""The context-extension study (issues 17 and 23): ``python -m studies.extension --track TRACK``.

Modules: :mod:`~studies.extension.track_a` (SmolLM2 under each RoPE strategy),
:mod:`~studies.extension.track_b` (byte decoders trained here), :mod:`~studies.extension.heldout`,
:mod:`~studies.extension.record` (the validation record ``posgeom extend`` reads),
:mod:`~studies.extension.scores`, :mod:`~studies.extension.stress`,
:mod:`~studies.extension.tasks` and their analyses (:mod:`~studies.extension.analysis`,
:mod:`~studies.extension.tasks_analysis`, :mod:`~studies.extension.why`), the page
(:mod:`~studies.extension.report`) and what they share (:mod:`~studies.extension.common`). See
``__main__`` for the tracks and what each writes.
"""
