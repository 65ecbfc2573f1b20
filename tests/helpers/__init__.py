"""Helpers shared by test folders (tests/ is on pytest's path: ``pythonpath`` in pyproject.toml):
``helpers.artifacts`` (edit an artifact's header, the two-file legacy layout), ``helpers.cli`` (the
command line in-process), ``helpers.decoder`` (a Gower-row reference), ``helpers.mds`` (an
independent classical MDS), ``helpers.models`` (tiny random models and their configs, a padded
batch) and ``helpers.pipeline`` (the config of the MDS rows only, a function's keyword options). Helpers of one
folder live in that folder (``faults/fault_helpers.py``)."""
