"""Checkpoint files: a solve's open nodes, incumbent and bounds, to resume after a stop.

A checkpoint is a pickle of ``{"format": "pcsos-checkpoint", "version": VERSION,
"fingerprint": ..., "tree": TreeState, ...}`` written atomically (to ``FILE.tmp``, flushed
and fsynced, then renamed over ``FILE``), so that a crash or ``kill -9`` at any moment leaves
the previous checkpoint or the new one, never half of one. The fingerprint is a SHA-256 of
the data, k and the pairs: resuming against other data is refused. Pickles run code when
loaded: resume only checkpoints you wrote.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time

import numpy as np

from pcsos.errors import InputError
from pcsos.problem import Instance
from pcsos.tree import TreeState

__all__ = ["fingerprint", "write_checkpoint", "read_checkpoint", "VERSION"]

FORMAT = "pcsos-checkpoint"
#: bumped whenever the pickled objects change in a way an older file cannot follow
VERSION = 1


def fingerprint(instance: Instance) -> str:
    """SHA-256 of the data (float64 bytes and shape), k and the deduplicated pairs."""
    h = hashlib.sha256()
    for a in (np.ascontiguousarray(instance.X, dtype=np.float64),
              np.ascontiguousarray(instance.ml, dtype=np.int64),
              np.ascontiguousarray(instance.cl, dtype=np.int64)):
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    h.update(f"k={instance.k}".encode())
    return h.hexdigest()


def write_checkpoint(path, state: TreeState, instance: Instance, **meta) -> None:
    """Write ``state`` for ``instance`` to ``path`` atomically (module doc)."""
    path = os.fspath(path)
    blob = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint(instance),
            "written": time.time(), "n": instance.n, "k": instance.k, "tree": state, **meta}
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as fh:
            pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write the checkpoint: {exc.strerror}", source=path) from None
    except Exception:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_checkpoint(path, instance: Instance) -> tuple[TreeState, dict]:
    """The :class:`TreeState` in ``path`` and the extra keys written with it;
    :class:`InputError` when the file is not a pcsos checkpoint, is of another version, or
    was written for other data."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            blob = pickle.load(fh)
    except FileNotFoundError:
        raise InputError("no such checkpoint file", source=path) from None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        raise InputError(f"not a readable pcsos checkpoint: {exc}", source=path) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise InputError("not a pcsos checkpoint", source=path)
    if blob.get("version") != VERSION:
        raise InputError(f"checkpoint format version {blob.get('version')}, this pcsos reads "
                         f"version {VERSION}", source=path)
    if blob.get("fingerprint") != fingerprint(instance):
        raise InputError(f"the checkpoint was written for other data (n = {blob.get('n')}, "
                         f"k = {blob.get('k')}, or other points or pairs): refusing to resume",
                         source=path)
    if not isinstance(blob.get("tree"), TreeState):
        raise InputError("not a pcsos checkpoint (no search state)", source=path)
    meta = {key: v for key, v in blob.items() if key != "tree"}
    return blob["tree"], meta
