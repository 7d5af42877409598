"""Run one upper-bound heuristic on an instance and report its clustering.

Exit codes: 0 a clustering was found, 1 none was found (e.g. COP-k-means failed or the
time limit hit first; a normal outcome, reported with status 'no_solution'), 2 invalid
input or an unknown heuristic, 3 the instance is infeasible (found by preprocessing or
proved by the heuristic's assignment problem).
"""

from __future__ import annotations

import argparse
import json

from pcsos.cli.common import add_instance_arguments, load_instance, write_json
from pcsos.errors import InfeasibleError, InputError, PcsosError
from pcsos.heuristics import available_heuristics, run_heuristic
from pcsos.heuristics.metrics import adjusted_rand_index
from pcsos.io import write_result_matrix
from pcsos.problem import Problem


class NoSolutionError(PcsosError):
    """The heuristic found no clustering (exit code 1); the report is still written."""

    exit_code = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos heuristic``."""
    parser.add_argument("name", metavar="NAME",
                        help="heuristic: " + ", ".join(available_heuristics()))
    add_instance_arguments(parser)
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed (default: fresh entropy)")
    parser.add_argument("--time-limit", metavar="SECONDS", type=float, default=None,
                        help="wall-clock limit of the heuristic (default: none)")
    parser.add_argument("--option", "-o", metavar="KEY=VALUE", action="append", default=[],
                        help="a heuristic option, e.g. -o n_init=100 -o variant=SMG-MDE "
                             "(VALUE is read as JSON when it parses, else as a string)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write the report as JSON ('-' = stdout)")
    parser.add_argument("--result", metavar="FILE", default=None,
                        help="write the n x k 0/1 assignment matrix (pc-sos-sdp result format)")


def parse_options(items: list[str]) -> dict:
    """``['a=1', 'b=x']`` -> ``{'a': 1, 'b': 'x'}`` (JSON values where they parse)."""
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"an option must read KEY=VALUE, got {item!r}", source="--option")
        try:
            val = json.loads(raw)
        except json.JSONDecodeError:
            val = raw
        out[key.strip()] = val
    return out


def run(args: argparse.Namespace) -> int:
    """``pcsos heuristic``: load, run, print a summary, write --json / --result."""
    options = parse_options(args.option)
    inst, info = load_instance(args)
    problem = Problem.from_instance(inst)
    res = run_heuristic(args.name, problem, seed=args.seed, time_limit=args.time_limit,
                        **options)
    rep = {
        "heuristic": args.name,
        "status": res.status,
        "objective": res.objective,
        "seconds": res.stats.get("seconds"),
        "n": inst.n, "d": inst.d, "k": inst.k,
        "ml": len(inst.ml), "cl": len(inst.cl), "super_points": problem.s,
        "data": info["data"], "constraints": info["constraints"],
        "seed": args.seed, "time_limit": args.time_limit, "options": options,
        "message": res.message,
        "stats": res.stats,
        "labels": res.labels,
    }
    classes = info.get("classes")
    if classes is not None and res.labels is not None:
        rep["ari"] = adjusted_rand_index(classes, res.labels)
    print(f"heuristic   {args.name}")
    print(f"status      {res.status}" + (f" ({res.message})" if res.message else ""))
    print(f"objective   {res.objective:.10g}")
    print(f"seconds     {rep['seconds']:.3f}")
    if "ari" in rep:
        print(f"ARI         {rep['ari']:.4f} against the class column")
    if args.json is not None:
        write_json(args.json, rep)
    if res.status == "infeasible":
        raise InfeasibleError(res.message or "the heuristic proved the instance infeasible",
                              reason="assignment_infeasible")
    if res.status != "found":
        raise NoSolutionError(f"{args.name} found no clustering: {res.message}")
    if args.result is not None:
        write_result_matrix(args.result, res.labels, inst.k)
    return 0
