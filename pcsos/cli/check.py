"""Validate an instance, show its super-point form and decide feasibility exactly.

Exit codes: 0 feasible, 2 invalid input (the message names file and line), 3 infeasible
(the message names the conflicting pairs), 1 undecided within --time-limit or an internal
error.
"""

from __future__ import annotations

import argparse

from pcsos.cli.common import (
    add_instance_arguments,
    add_quiet_argument,
    describe_weights_sizes,
    load_instance,
    report_stream,
    seconds,
    weights_sizes,
)
from pcsos.errors import InfeasibleError, PcsosError, UndecidedError
from pcsos.feasibility import BACKENDS, check_instance
from pcsos.io import write_json
from pcsos.problem import Problem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos check``."""
    add_instance_arguments(parser, weights=True, sizes=True)
    add_quiet_argument(parser)
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write the report as JSON ('-' = stdout)")
    parser.add_argument("--backend", choices=BACKENDS, default="highs",
                        help="ILP backend for the exact step (default: highs)")
    parser.add_argument("--time-limit", metavar="SECONDS", type=seconds, default=None,
                        help="time limit of the feasibility check (default: none)")


def summarize(inst, info: dict, backend: str = "highs", time_limit: float | None = None) -> dict:
    """The report of ``pcsos check`` as a dict (the JSON keys)."""
    res = check_instance(inst, backend=backend, time_limit=time_limit)
    rep = {
        "data": info["data"], "constraints": info["constraints"],
        "n": inst.n, "d": inst.d, "k": inst.k, "k_source": info["k_source"],
        "header": info["header"], "data_notes": info["data_notes"],
        "constraint_notes": info["constraint_notes"],
        "ml_given": info["ml_given"], "cl_given": info["cl_given"],
        "ml": len(inst.ml), "cl": len(inst.cl),
        "ml_duplicates": inst.ml_duplicates, "cl_duplicates": inst.cl_duplicates,
        "super_points": None, "super_points_before_k2": None, "k2_merged": None,
        "cl_super": None, **weights_sizes(inst, info),
    }
    # super-point statistics, when the ML closure is consistent (else the verdict says why)
    try:
        p0 = Problem.from_instance(inst, infer_k2=False)
        rep["super_points_before_k2"] = p0.s
        rep["cl_super_before_k2"] = len(p0.cl)
        p = Problem.from_instance(inst)
        rep["super_points"], rep["cl_super"] = p.s, len(p.cl)
        rep["k2_merged"] = p0.s - p.s
    except PcsosError:
        pass
    rep.update({
        "verdict": res.status, "feasible": res.feasible, "reason": res.reason,
        "message": res.message, "pairs": res.pairs, "backend": res.backend,
        "seconds": res.seconds, "labels": res.labels,
    })
    return rep


def _source(path: str | None) -> str:
    """A file as the report names it: '-' is stdin, named as the errors name it."""
    return "none" if path is None else "<stdin>" if path == "-" else path


def _fmt(v) -> str:
    return "-" if v is None else str(v)


def run(args: argparse.Namespace) -> int:
    """Print the report, write --json, return 0 (feasible) or raise (infeasible/undecided)."""
    inst, info = load_instance(args, notes=False)  # in the report
    rep = summarize(inst, info, args.backend, args.time_limit)
    out = report_stream(args)
    print(f"data:          {_source(rep['data'])}  (header {rep['header']!r})", file=out)
    for note in rep["data_notes"]:
        print(f"  note: {note}", file=out)
    print(f"constraints:   {_source(rep['constraints'])}", file=out)
    for note in rep["constraint_notes"]:
        print(f"  note: {note}", file=out)
    print(f"n = {rep['n']}, d = {rep['d']}, k = {rep['k']} (k from {rep['k_source']})",
          file=out)
    print(f"must-link:     {rep['ml']} pairs after deduplication "
          f"({rep['ml_duplicates']} duplicates dropped)", file=out)
    print(f"cannot-link:   {rep['cl']} pairs after deduplication "
          f"({rep['cl_duplicates']} duplicates dropped)", file=out)
    extra = describe_weights_sizes(inst, info)
    print(f"weights/sizes: {extra or 'none (every point weighs 1, no size constraints)'}",
          file=out)
    print(f"super-points:  {_fmt(rep['super_points'])} (from {rep['n']} points; "
          f"{_fmt(rep['super_points_before_k2'])} before k = 2 inference)", file=out)
    print(f"CL between super-points: {_fmt(rep['cl_super'])}", file=out)
    print(f"k = 2 inference: {_fmt(rep['k2_merged'])} super-points merged", file=out)
    print(f"verdict:       {rep['verdict']} ({rep['reason']}, {rep['seconds']:.3f} s)", file=out)
    print(f"  {rep['message']}", file=out)
    if args.json is not None:
        write_json(args.json, rep)
    if rep["feasible"] is False:
        raise InfeasibleError(rep["message"],
                              reason=rep["reason"], pairs=rep["pairs"])
    if rep["feasible"] is None:
        raise UndecidedError(rep["message"])
    return 0
