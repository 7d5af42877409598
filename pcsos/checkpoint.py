"""Checkpoint files: a solve's open nodes, incumbent and bounds, to resume after a stop.

Loading a checkpoint never runs code, whoever wrote the file. A checkpoint is one NumPy
``.npz`` archive (a zip) holding

- ``header``: UTF-8 JSON bytes: ``{"format": "pcsos-checkpoint", "version": 2,
  "fingerprint": ..., "written", "n", "k", "meta": {...}, "tree": ...}``;
- ``a0``, ``a1``, ...: the numeric arrays the header refers to.

The search state is written as a tree of JSON values in which an array is
``{"array": index}``, a tuple ``{"tuple": [...]}``, a non-finite float ``{"float": "inf"}``
and an object ``{"type": NAME, "fields": {...}}`` where NAME is one of the few classes in
``_TYPES`` (node, problem, cuts, warm start, tree state, branching records). Reading
builds only those classes, only numeric arrays are accepted (``np.load(allow_pickle=False)``
refuses object arrays), and the decoded state is checked against the instance (array
shapes, index ranges, finite values, each node's super-points against the data, the
incumbent against its clustering) before any node is handed to the solver. Why not pickle: a pickle
runs any function its file names when it is loaded, and checkpoints are exactly the files
people copy between machines and attach to bug reports. A file of the old pickle format
(version 1) is recognised by its first bytes and refused without being loaded.

The file is written atomically (to ``FILE.tmp``, flushed and fsynced, then renamed over
``FILE``), so a crash or ``kill -9`` at any moment leaves the previous checkpoint or the new
one, never half of one. The fingerprint is a SHA-256 of the data, k and the pairs: resuming
against other data is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
import zipfile
import zlib
from typing import Any

import numpy as np

from pcsos.bounds.colgen import ColumnStart
from pcsos.bounds.cutset import CutSet
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.branching import PseudoCosts
from pcsos.errors import InputError, is_integer
from pcsos.heuristics import check_labels
from pcsos.io import open_input
from pcsos.node import NodeData
from pcsos.problem import Instance, Problem, group_sums, pairs_satisfied
from pcsos.tree import TreeState

__all__ = ["fingerprint", "write_checkpoint", "read_checkpoint", "VERSION", "FORMAT"]

FORMAT = "pcsos-checkpoint"
#: bumped whenever the encoded objects change in a way an older file cannot follow
VERSION = 2
_PICKLE_MAGIC = b"\x80"  # protocols 2-5 open with PROTO; version 1 files used protocol 5
_ZIP_MAGIC = b"PK\x03\x04"
# dtype kinds an array may have: bool, signed and unsigned integers, floats
_ARRAY_KINDS = "biuf"


def fingerprint(instance: Instance) -> str:
    """SHA-256 of the data (float64 bytes and shape), k, the deduplicated pairs, and the
    weights and size constraints when set."""
    h = hashlib.sha256()
    for a in (np.ascontiguousarray(instance.X, dtype=np.float64),
              np.ascontiguousarray(instance.ml, dtype=np.int64),
              np.ascontiguousarray(instance.cl, dtype=np.int64)):
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    h.update(f"k={instance.k}".encode())
    # only when set, so that the checkpoints of instances without them keep their hash
    if instance.weights is not None:
        w = np.ascontiguousarray(instance.weights, dtype=np.float64)
        h.update(f"weights{w.shape}".encode())
        h.update(w.tobytes())
    if instance.has_sizes:
        h.update(f"size_min={instance.size_min},size_max={instance.size_max},"
                 f"sizes={instance.sizes}".encode())
    return h.hexdigest()


# ----------------------------------------------------------------------------- encoding
def _problem_fields(p: Problem) -> dict:
    # the instance is not written: it is the user's data, which the fingerprint pins
    return {"e": p.e, "W": p.W, "cl": p.cl, "point_labels": p.point_labels, "c0": p.c0,
            "infer_k2": p.infer_k2, "parent_map": p.parent_map}


def _cutset_fields(c: CutSet) -> dict:
    return {name: getattr(c, name) for name in ("indptr", "i", "j", "coef", "rhs", "family")}


def _dataclass_fields(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


# NAME -> (class, its fields as a dict); the only classes a checkpoint can hold
_TYPES: dict[str, tuple[type, Any]] = {
    "TreeState": (TreeState, _dataclass_fields),
    "NodeData": (NodeData, _dataclass_fields),
    "Problem": (Problem, _problem_fields),
    "CutSet": (CutSet, _cutset_fields),
    "WarmStart": (WarmStart, _dataclass_fields),
    "SDPResult": (SDPResult, _dataclass_fields),
    "ColumnStart": (ColumnStart, _dataclass_fields),
    "PseudoCosts": (PseudoCosts, _dataclass_fields),
}
_NAMES = {cls: name for name, (cls, _) in _TYPES.items()}


class _Encoder:
    """Turns a search state into JSON values and a list of arrays (module doc)."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []
        self._seen: dict[int, int] = {}  # id -> index: an array shared by nodes is written once
        self._keep: list[np.ndarray] = []  # holds the ids' objects alive while encoding

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            x = float(obj)
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.ndarray):
            return {"array": self._array(obj)}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, list):
            return [self.encode(v) for v in obj]
        if isinstance(obj, dict):
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        name = _NAMES.get(type(obj))
        if name is None:
            raise TypeError(f"a checkpoint cannot hold a {type(obj).__name__}")
        fields = _TYPES[name][1](obj)
        return {"type": name, "fields": {k: self.encode(v) for k, v in fields.items()}}

    def _array(self, a: np.ndarray) -> int:
        if a.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"a checkpoint cannot hold an array of dtype {a.dtype}")
        idx = self._seen.get(id(a))
        if idx is None:
            idx = self._seen[id(a)] = len(self.arrays)
            self.arrays.append(a)
            self._keep.append(a)
        return idx


class _Corrupt(Exception):
    """The file's content is not what a pcsos checkpoint holds."""


class _Decoder:
    """The inverse of :class:`_Encoder`; builds only the classes of :data:`_TYPES`."""

    def __init__(self, arrays: list[np.ndarray], instance: Instance):
        self.arrays = arrays
        self.instance = instance
        self.reference = _Reference(instance)

    def decode(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        if not isinstance(v, dict) or len(v) not in (1, 2):
            raise _Corrupt(f"unexpected value {_short(v)}")
        if "array" in v and len(v) == 1:
            idx = v["array"]
            if isinstance(idx, bool) or not isinstance(idx, int) or not (
                    0 <= idx < len(self.arrays)):
                raise _Corrupt(f"no array {_short(idx)}")
            return self.arrays[idx]
        if "float" in v and len(v) == 1:
            if v["float"] not in ("inf", "-inf", "nan"):
                raise _Corrupt(f"unexpected float {_short(v['float'])}")
            return float(v["float"])
        if "tuple" in v and len(v) == 1 and isinstance(v["tuple"], list):
            return tuple(self.decode(x) for x in v["tuple"])
        if "dict" in v and len(v) == 1 and isinstance(v["dict"], list):
            out = {}
            for item in v["dict"]:
                if not (isinstance(item, list) and len(item) == 2):
                    raise _Corrupt("a malformed mapping")
                key = self.decode(item[0])
                if not isinstance(key, (str, int, float, bool, tuple, type(None))):
                    raise _Corrupt(f"an unhashable key {_short(item[0])}")
                out[key] = self.decode(item[1])
            return out
        if set(v) == {"type", "fields"} and isinstance(v["fields"], dict):
            return self._object(v["type"], v["fields"])
        raise _Corrupt(f"unexpected value {_short(v)}")

    def _object(self, name, raw: dict):
        if name not in _TYPES:
            raise _Corrupt(f"an object of unknown type {_short(name)}")
        cls, fields_of = _TYPES[name]
        fields = {k: self.decode(x) for k, x in raw.items()}
        if name == "Problem":
            return self._problem(fields)
        if name == "CutSet":
            if set(fields) != set(_cutset_fields(CutSet.empty())):
                raise _Corrupt("a cut set with other fields")
            ints = ("indptr", "i", "j", "family")
            if not all(isinstance(a, np.ndarray) and a.ndim == 1 and (
                    a.dtype.kind in "iu" if key in ints else a.dtype.kind in "iuf")
                       for key, a in fields.items()):
                raise _Corrupt("a cut set with malformed arrays")
            return CutSet(**fields)
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING}
        if not set(fields) <= names or not required <= set(fields):
            raise _Corrupt(f"a {name} with other fields")
        return cls(**fields)

    def _problem(self, f: dict) -> Problem:
        expected = {"e", "W", "cl", "point_labels", "c0", "infer_k2", "parent_map"}
        if set(f) != expected:
            raise _Corrupt("a problem with other fields")
        inst = self.instance
        e, W, cl, labels = f["e"], f["W"], f["cl"], f["point_labels"]
        if not all(isinstance(a, np.ndarray) for a in (e, W, cl, labels)):
            raise _Corrupt("a problem without its arrays")
        s = len(e)
        ok = (e.ndim == 1 and W.shape == (s, inst.d) and cl.ndim == 2 and cl.shape[1] == 2
              and labels.shape == (inst.n,) and labels.dtype.kind in "iu"
              and cl.dtype.kind in "iu" and isinstance(f["c0"], float)
              and isinstance(f["infer_k2"], bool))
        ok = ok and (labels.size == 0 or (labels.min() >= 0 and labels.max() < s))
        ok = ok and (cl.size == 0 or (cl.min() >= 0 and cl.max() < s))
        pm = f["parent_map"]
        ok = ok and (pm is None or (isinstance(pm, np.ndarray) and pm.ndim == 1
                                    and pm.dtype.kind in "iu"
                                    and (pm.size == 0 or (pm.min() >= 0 and pm.max() < s))))
        if not ok:
            raise _Corrupt("a problem whose arrays do not fit the data")
        _check_problem_values(inst, self.reference, e, W, cl, labels, f["c0"])
        return Problem(inst, e.astype(np.float64), W.astype(np.float64),
                       cl.astype(np.int64), labels.astype(np.int64), f["c0"],
                       infer_k2=f["infer_k2"],
                       parent_map=None if pm is None else pm.astype(np.int64))


class _Reference:
    """What every node's problem is checked against, once per read: the data's own
    super-point problem (its centring, weights and c0, as every node's were made) and the
    weighted centred points whose group sums a node's W must be."""

    def __init__(self, inst: Instance):
        self.root = Problem.from_instance(inst, infer_k2=False)
        self.w = self.root.point_weights
        self.wXc = self.w[:, None] * self.root.Xc
        self.c0 = self.root.c0
        self.tol = 1e-9 * (float(np.abs(self.wXc).sum()) + float(self.w.sum()))


def _check_problem_values(inst: Instance, ref: _Reference, e, W, cl, labels,
                          c0: float) -> None:
    """A node's super-points are groups of the data's points: every one non-empty, every
    must-link pair inside one and every cannot-link pair between two that the node keeps
    apart, and the masses, sums and constant those groups give (up to rounding). The
    solver would otherwise bound a problem that is not the data's, and certify it."""
    s = len(e)
    if s and np.bincount(labels, minlength=s).min() == 0:
        raise _Corrupt("a problem with an empty super-point")
    if not pairs_satisfied(labels, inst.ml, np.zeros((0, 2), dtype=np.int64)):
        raise _Corrupt("a problem that splits a must-link pair")
    # as keys a * s + b of sorted pairs, in numpy: a resume reads every open node
    need = np.sort(labels[inst.cl], axis=1) if len(inst.cl) else np.zeros((0, 2), np.int64)
    have = np.sort(cl, axis=1)
    if np.any(need[:, 0] == need[:, 1]) or not np.isin(
            need[:, 0] * s + need[:, 1], have[:, 0] * s + have[:, 1]).all():
        raise _Corrupt("a problem that drops a cannot-link pair")
    e_ref = np.bincount(labels, weights=ref.w, minlength=s)
    W_ref = group_sums(labels, ref.wXc, s)
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(W)) and math.isfinite(c0)
            and np.abs(e - e_ref).max(initial=0.0) <= ref.tol
            and np.abs(W - W_ref).max(initial=0.0) <= ref.tol
            and abs(c0 - ref.c0) <= 1e-9 * abs(ref.c0) + 1e-300):
        raise _Corrupt("a problem whose values are not those of the data")


def _finite(a) -> bool:
    return a is None or bool(np.all(np.isfinite(a)))


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_state(state, instance: Instance, root: Problem) -> TreeState:
    """The decoded state's structure, so that no malformed node reaches the solver."""
    if not isinstance(state, TreeState):
        raise _Corrupt("no search state")
    rows = {}
    for name in ("open", "unresolved"):
        rows[name] = []
        if not isinstance(getattr(state, name), list):
            raise _Corrupt(f"malformed {name} nodes")
        for row in getattr(state, name):
            if not (isinstance(row, tuple) and len(row) == 5 and all(is_integer(x) for x in row[:3])
                    and isinstance(row[4], NodeData)):
                raise _Corrupt(f"a malformed {name} node")
            if not (row[0] >= 0 and row[1] >= -1 and row[2] >= 0):
                raise _Corrupt(f"a {name} node with a negative id or depth")
            _check_node(row[4], instance)
            rows[name].append((*row[:3], _number(row[3], "node bound"), row[4]))
    if not all(is_integer(getattr(state, name)) and getattr(state, name) >= 0
               for name in ("processed", "next_id")):
        raise _Corrupt("counts that are not integers >= 0")
    ids = [row[0] for name in ("open", "unresolved") for row in rows[name]]
    if ids and state.next_id <= max(ids):
        raise _Corrupt("a node id at or past the next id")
    incumbent = _number(state.incumbent, "incumbent")
    if state.solution is None:
        if incumbent != math.inf:
            raise _Corrupt("an incumbent value without its clustering")
    else:
        # the incumbent is the clustering's: a value or clustering that is not would be
        # reported as the optimum
        _check_labels(state.solution, instance, "incumbent")
        sol = state.solution
        if (why := check_labels(root, sol)) is not None:
            raise _Corrupt("an incumbent that is not a clustering of the data into k "
                           f"clusters obeying the pairs: {why}")
        value = instance.objective(sol)
        if not abs(incumbent - value) <= 1e-9 * max(1.0, abs(value)):
            raise _Corrupt(f"an incumbent value {_short(incumbent)} that is not its "
                           f"clustering's ({value!r})")
    h = state.history
    if h is not None:
        t = h.table if isinstance(h, PseudoCosts) else None
        if not (isinstance(t, np.ndarray) and t.shape == (2, instance.n, 2)
                and t.dtype.kind == "f" and bool(np.all(np.isfinite(t)))
                and bool(np.all(t >= 0))):
            raise _Corrupt("a malformed branching history")
    numbers = {name: _number(getattr(state, name), name) for name in (
        "incumbent", "closed", "seconds", "root_bound", "root_objective")}
    if not (math.isfinite(numbers["seconds"]) and numbers["seconds"] >= 0):
        raise _Corrupt("a malformed time")
    return dataclasses.replace(state, **rows, **numbers)


def _number(x, what: str) -> float:
    # inf and -inf are values a bound or an incumbent takes; nan is none
    if not (isinstance(x, (int, float)) and not isinstance(x, bool)) or math.isnan(x):
        raise _Corrupt(f"a non-numeric {what}")
    return float(x)


def _check_labels(labels, instance: Instance, what: str) -> None:
    if not (isinstance(labels, np.ndarray) and labels.shape == (instance.n,)
            and labels.dtype.kind in "iu"):
        raise _Corrupt(f"a malformed {what} clustering")


def _check_node(node: NodeData, instance: Instance) -> None:
    p = node.problem
    if not isinstance(p, Problem):
        raise _Corrupt("a node without its problem")
    s = p.s
    if node.hint is not None:
        _check_labels(node.hint, instance, "hint")
        # the node takes it as a clustering of its own (its parent's, which obeys it)
        if check_labels(p, node.hint) is not None:
            raise _Corrupt("a node whose clustering breaks its constraints")
    if not isinstance(node.known_feasible, bool):
        raise _Corrupt("a node with a malformed feasibility flag")
    if node.known_feasible and node.hint is None:
        raise _Corrupt("a node whose feasibility is claimed without its clustering")
    _number(node.parent_bound, "parent bound")
    if not (isinstance(node.kind, str) and node.kind in ("root", "ml", "cl")
            and isinstance(node.pair, tuple) and len(node.pair) == 2
            and all(is_integer(x) and -1 <= x < instance.n for x in node.pair)):
        raise _Corrupt("a node of an unknown kind")
    pts, change = node.points, node.change
    if not (isinstance(pts, tuple) and len(pts) == 2 and all(is_integer(x) for x in pts)
            and isinstance(change, (int, float)) and not isinstance(change, bool)
            and (math.isnan(change) or 0.0 <= change <= 1.0)
            # no points, no record: the root, and children of files before pseudo-costs
            and (all(0 <= x < instance.n for x in pts)
                 or (pts == (-1, -1) and (change == 0.0 or math.isnan(change))))):
        raise _Corrupt("a node with a malformed branching record")
    cuts = node.cuts
    if cuts is not None:
        if not isinstance(cuts, CutSet):
            raise _Corrupt("a node with malformed cuts")
        m, nnz = len(cuts.rhs), len(cuts.i)
        ip = cuts.indptr
        ok = (ip.shape == (m + 1,) and len(cuts.j) == nnz == len(cuts.coef)
              and len(cuts.family) == m and (m == 0 or (ip[0] == 0 and ip[-1] == nnz
                                                        and np.all(np.diff(ip) >= 0))))
        ok = ok and (nnz == 0 or (min(cuts.i.min(), cuts.j.min()) >= 0
                                  and max(cuts.i.max(), cuts.j.max()) < s))
        ok = ok and _finite(cuts.coef) and _finite(cuts.rhs)
        if not ok:
            raise _Corrupt("a node whose cuts do not fit its problem")
    ws = node.warm_start
    if isinstance(ws, ColumnStart):
        ip, mem = ws.indptr, ws.members
        ok = (isinstance(ip, np.ndarray) and isinstance(mem, np.ndarray) and ip.ndim == 1
              and mem.ndim == 1 and len(ip) >= 1 and ip[0] == 0 and ip[-1] == len(mem)
              and bool(np.all(np.diff(ip) >= 0))
              and (len(mem) == 0 or (mem.min() >= 0 and mem.max() < s))
              and (ws.duals is None or (isinstance(ws.duals, np.ndarray)
                                        and ws.duals.shape == (s,) and _finite(ws.duals)))
              and (ws.cuts is None or (isinstance(ws.cuts, np.ndarray)
                                       and ws.cuts.dtype.kind in "iu"
                                       and ws.cuts.ndim == 2 and ws.cuts.shape[1] == 3
                                       and (ws.cuts.size == 0 or (ws.cuts.min() >= 0
                                                                  and ws.cuts.max() < s)))))
        if not ok:
            raise _Corrupt("a node whose columns do not fit its problem")
    elif ws is not None:
        if not isinstance(ws, (WarmStart, SDPResult)):
            raise _Corrupt("a node with a malformed warm start")
        shapes = {"Z": (s, s), "N": (s, s), "S": (s, s), "y": (s + 1,)}
        for name, shape in shapes.items():
            a = getattr(ws, name)
            if a is not None and not (isinstance(a, np.ndarray) and a.shape == shape
                                      and _finite(a)):
                raise _Corrupt(f"a warm start whose {name} does not fit its problem")
        for name in ("y_cl", "u"):
            a = getattr(ws, name)
            if a is not None and not (isinstance(a, np.ndarray) and a.ndim == 1
                                      and _finite(a)):
                raise _Corrupt(f"a warm start with a malformed {name}")
        if ws.u is not None and cuts is not None and len(ws.u) > len(cuts.rhs):
            raise _Corrupt("a warm start with more multipliers than cuts")


# ----------------------------------------------------------------------------- files
def write_checkpoint(path, state: TreeState, instance: Instance, **meta) -> None:
    """Write ``state`` for ``instance`` to ``path`` atomically (module doc); ``meta``:
    JSON-able extras (numbers, strings) returned by :func:`read_checkpoint`."""
    path = os.fspath(path)
    enc = _Encoder()
    header = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint(instance),
              "written": time.time(), "n": instance.n, "k": instance.k,
              "meta": enc.encode(dict(meta)), "tree": enc.encode(state)}
    blob = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    arrays = {f"a{t}": np.ascontiguousarray(a) for t, a in enumerate(enc.arrays)}
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, header=blob, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise InputError(f"cannot write the checkpoint: {exc.strerror or exc}",
                         source=path) from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def read_checkpoint(path, instance: Instance) -> tuple[TreeState, dict]:
    """The :class:`TreeState` in ``path`` and the extra keys written with it.

    Raises :class:`InputError` when the file is missing, is not a pcsos checkpoint (or is
    damaged), is of another format version (an old pickle checkpoint is refused unread), or
    was written for other data. Nothing in the file is executed (module doc).
    """
    path = os.fspath(path)
    fh = None
    try:
        fh = open_input(path, binary=True)
        magic = fh.read(4)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        if fh is not None:
            fh.close()
        if isinstance(exc, FileNotFoundError):
            raise InputError("no such checkpoint file", source=path) from None
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"cannot read the checkpoint: {why}", source=repr(path)
                         if isinstance(exc, ValueError) else path) from None
    with fh:
        return _read_checkpoint(fh, magic, path, instance)


def _read_checkpoint(fh, magic: bytes, path: str, instance: Instance
                     ) -> tuple[TreeState, dict]:
    if magic.startswith(_PICKLE_MAGIC):
        raise InputError(
            "a checkpoint in the old pickle format (pcsos checkpoint version 1), not "
            f"loaded: pickles can run code; this pcsos reads version {VERSION} (.npz of JSON "
            "and arrays); start the solve again to write one", source=path)
    if magic != _ZIP_MAGIC:
        raise InputError("not a pcsos checkpoint (not an .npz archive)", source=path)
    try:
        header, arrays = _load(fh)
    except _Corrupt as exc:
        raise InputError(f"not a readable pcsos checkpoint: {exc}", source=path) from None
    if header.get("format") != FORMAT:
        raise InputError("not a pcsos checkpoint", source=path)
    if header.get("version") != VERSION:
        raise InputError(f"checkpoint format version {_short(header.get('version'))}, this "
                         f"pcsos reads version {VERSION}", source=path)
    if header.get("fingerprint") != fingerprint(instance):
        raise InputError(f"the checkpoint was written for other data (n = "
                         f"{_short(header.get('n'))}, k = {_short(header.get('k'))}, or other "
                         "points or pairs): refusing to resume", source=path)
    dec = _Decoder(arrays, instance)
    try:
        state = _check_state(dec.decode(header.get("tree")), instance, dec.reference.root)
        meta = dec.decode(header.get("meta", {"dict": []}))
        if not isinstance(meta, dict):
            raise _Corrupt("malformed extras")
    except (_Corrupt, TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"not a readable pcsos checkpoint: {exc}", source=path) from None
    meta = {**meta, **{key: header[key] for key in ("format", "version", "fingerprint",
                                                    "written", "n", "k") if key in header}}
    return state, meta


def _load(fh) -> tuple[dict, list[np.ndarray]]:
    """The header and the arrays of the archive (``fh``: open, read from its start), every
    member read with ``allow_pickle=False``; :class:`_Corrupt` for anything else."""
    try:
        fh.seek(0)
        with np.load(fh, allow_pickle=False) as npz:
            names = set(npz.files)
            if "header" not in names:
                raise _Corrupt("no header")
            count = len(names) - 1
            if names != {"header"} | {f"a{t}" for t in range(count)}:
                raise _Corrupt("unexpected members")
            raw = npz["header"]
            arrays = [npz[f"a{t}"] for t in range(count)]
    except _Corrupt:
        raise
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile,
            zipfile.LargeZipFile, NotImplementedError, RuntimeError, zlib.error) as exc:
        # ValueError covers an object array refused by allow_pickle=False
        raise _Corrupt(str(exc) or type(exc).__name__) from None
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _Corrupt("a malformed header")
    for a in arrays:
        if a.dtype.kind not in _ARRAY_KINDS:
            raise _Corrupt(f"an array of dtype {a.dtype}")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _Corrupt(f"a malformed header ({exc})") from None
    if not isinstance(header, dict):
        raise _Corrupt("a malformed header")
    return header, arrays
