"""Helpers shared by the subcommands: instance arguments, instance loading, JSON output."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pathlib
import sys
from typing import Any

import numpy as np

from pcsos.errors import InputError
from pcsos.io import read_constraints, read_data
from pcsos.problem import Instance, make_instance

__all__ = ["add_instance_arguments", "load_instance", "write_json", "jsonable"]


def add_instance_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``DATA``, ``-c/--constraints FILE`` (none: unconstrained) and ``-k/--k K``."""
    parser.add_argument("data", metavar="DATA",
                        help="data file: pc-sos-sdp text ('n d [k]' header), CSV with a "
                             "'class' column, .npy or .npz")
    parser.add_argument("-c", "--constraints", metavar="FILE", default=None,
                        help="constraint file: pc-sos-sdp text (ML/CL/DELTA/GAMMA lines) or "
                             "PCCC JSON; omitted: no constraints")
    parser.add_argument("-k", "--k", metavar="K", type=int, default=None,
                        help="number of clusters; default: the k of an 'n d k' header or "
                             "max + 1 of a CSV class column")


def load_instance(args: argparse.Namespace) -> tuple[Instance, dict]:
    """Read ``args.data`` / ``args.constraints`` and validate them with ``make_instance``.

    k is ``args.k`` when given, else the header's k, else max + 1 of the class column;
    with none of them, :class:`InputError`. Returns the instance and an info dict with keys
    ``data``, ``constraints``, ``header``, ``data_notes``, ``constraint_notes``, ``classes``
    (true labels or None), ``k``, ``k_source`` (``'-k'``, ``'header'``, ``'class column'``),
    ``ml_given``, ``cl_given`` (pairs read, DELTA/GAMMA expansions included),
    ``delta_pairs`` and ``gamma_pairs``.
    """
    data = read_data(args.data)
    info: dict[str, Any] = {
        "data": os.fspath(args.data),
        "constraints": None,
        "header": data.header,
        "data_notes": list(data.notes),
        "constraint_notes": [],
        "classes": data.classes,
    }
    k = getattr(args, "k", None)
    if k is not None:
        if k < 1:
            raise InputError(f"k must be a positive integer, got {k}", source="-k")
        info["k_source"] = "-k"
        if data.k is not None and data.k != k:
            where = "'n d k' header" if data.header.startswith("n d") else "class column"
            info["data_notes"].append(f"-k {k} overrides k = {data.k} from the {where}")
    elif data.k is not None:
        k = data.k
        info["k_source"] = "header" if data.header.startswith("n d") else "class column"
        info["data_notes"].append(f"k = {k} taken from the {info['k_source']} (no -k given)")
    else:
        raise InputError("k is unknown: give -k K (the data file has no 'n d k' header and "
                         "no class column)", source="-k")
    ml: list = []
    cl: list = []
    cpath = getattr(args, "constraints", None)
    info["delta_pairs"] = info["gamma_pairs"] = 0
    if cpath is not None:
        cons = read_constraints(cpath, n=data.n, X=data.X)
        ml, cl = cons.ml, cons.cl
        info["constraints"] = os.fspath(cpath)
        info["constraint_notes"] = list(cons.notes)
        info["delta_pairs"], info["gamma_pairs"] = cons.n_delta, cons.n_gamma
    else:
        info["constraint_notes"] = ["no constraint file: the unconstrained problem"]
    info["ml_given"], info["cl_given"] = len(ml), len(cl)
    if k > data.n:
        raise InputError(f"k = {k} exceeds the number of points n = {data.n}",
                         source="-k" if info["k_source"] == "-k" else data.source)
    inst = make_instance(data.X, k, ml, cl)
    info["k"] = k
    return inst, info


def jsonable(obj: Any) -> Any:
    """Convert numpy arrays/scalars, dataclasses, paths and sets to JSON types.

    Non-finite floats become ``null`` (strict JSON has no inf/nan).
    """
    if isinstance(obj, dict):
        return {str(key): jsonable(v) for key, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [jsonable(v) for v in sorted(obj)]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, pathlib.PurePath):
        return str(obj)
    return obj


def write_json(path, obj: Any) -> None:
    """Write ``obj`` as indented JSON (numpy-aware, see :func:`jsonable`); ``'-'`` = stdout."""
    text = json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n"
    if os.fspath(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(os.fspath(path), "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=os.fspath(path)) from None
