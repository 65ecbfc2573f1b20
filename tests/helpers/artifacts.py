"""Test helpers: edit the metadata inside a single-file .npz artifact, or make the two-file
layout of earlier versions (arrays + ``<path>.json`` sidecar) out of one."""

from __future__ import annotations

import json

import numpy as np

from posgeom.io.artifacts import sidecar_path

MEMBER = "__posgeom__"


def npz_members(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def edit_header(path, edit):
    """Rewrite the metadata member of an .npz artifact with ``edit(header) -> header``."""
    members = npz_members(path)
    header = edit(json.loads(members[MEMBER].tobytes()))
    members[MEMBER] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **members)


def legacy_pair(path):
    """Turn a single-file .npz artifact into the two-file layout of earlier versions."""
    members = npz_members(path)
    header = json.loads(members.pop(MEMBER).tobytes())
    with open(path, "wb") as fh:
        np.savez(fh, **members)
    sidecar_path(path).write_text(json.dumps(header, sort_keys=True, indent=1))
    return header


def _no_constant(name):
    raise ValueError(f"{name} is not JSON (a strict parser refuses it)")


def strict_json(path):
    """The JSON of ``path`` read as a strict parser reads it: ``NaN``/``Infinity`` refused."""
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
