"""Studies that regenerate docs pages from posgeom runs, run from the repository root:

- ``python -m studies.estimation`` (``docs/ESTIMATION.md``; its follow-ups
  ``studies.estimation.resolution_rule`` and the others write ``docs/estimation/``);
- ``python -m studies.extension --track ...`` (``docs/EXTENSION.md``, ``docs/extension/``);
- ``python -m studies.reproduction`` (``docs/REPRODUCTION.md``, through ``posgeom reproduce``);
- ``python -m studies.atlas`` (``docs/ATLAS.md``, ``docs/atlas.html``);
- ``python -m studies.support`` (``docs/SUPPORT.md``: every architecture of transformers' model
  mapping, built tiny, its positional mechanisms with their layers);
- ``python -m studies.call_trace`` (the folder-level call trace of a CLI command);
- ``python -m studies.static_walk`` (the static walk of one parameter through the calls that pass
  it on; ``docs/ARCHITECTURE.md``'s issue-35 figures);
- ``python -m studies.source_size [--base REV]`` (the package's lines by folder and kind: code,
  docstring, comment, blank; now and at a git revision).

What they share is in :mod:`studies._common`; performance benchmarks are in ``benchmarks/``.
"""
