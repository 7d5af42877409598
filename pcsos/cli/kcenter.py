"""Constrained k-center (paper 004): a 2-approximation with a certified radius lower bound.

Prints the radius, the certified lower bound on the optimal radius r* and their ratio;
``--json FILE`` also writes labels, centres (point indices) and statistics. Exit codes:
0 every constraint satisfied (status solved, time_limit or run_limit), 1 the cannot-link
repair found no assignment in its time limit (repair_failed) or an internal error, 2
invalid input, 3 infeasible constraints.
"""

from __future__ import annotations

import argparse

from pcsos.cli.common import (
    add_instance_arguments,
    add_quiet_argument,
    load_instance,
    nonnegative_int,
    report_stream,
    seconds,
)
from pcsos.heuristics.metrics import adjusted_rand_index
from pcsos.io import write_json
from pcsos.kcenter import solve_problem
from pcsos.problem import Problem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos kcenter``."""
    add_instance_arguments(parser)
    add_quiet_argument(parser)
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write the result (labels, centers, radius, bound) as JSON "
                             "('-' = stdout)")
    parser.add_argument("--seed", type=nonnegative_int, default=None,
                        help="order of equal-size cannot-link cliques (default: fixed)")
    parser.add_argument("--search", choices=("auto", "exact", "bisect"), default="auto",
                        help="radius search: exact over all pairwise distances, bisection, "
                             "or auto (exact when n <= 2000)")
    parser.add_argument("--rtol", type=float, default=1e-4,
                        help="relative width at which bisection stops (default 1e-4)")
    parser.add_argument("--time-limit", metavar="SECONDS", type=seconds, default=None,
                        help="stop the radius search after this many seconds")
    parser.add_argument("--no-refine", action="store_true",
                        help="keep the algorithm's centres (no move to the cluster member "
                             "of least eccentricity)")


def run(args: argparse.Namespace) -> int:
    """Solve and report; returns the exit code."""
    inst, info = load_instance(args)
    res = solve_instance(inst, args)
    rep = {"data": info["data"], "constraints": info["constraints"], "n": inst.n,
           "d": inst.d, "k": inst.k, "notes": info["data_notes"] + info["constraint_notes"],
           **res.to_dict()}
    classes = info.get("classes")
    if classes is not None:
        rep["ari"] = float(adjusted_rand_index(classes, res.labels))
    out = report_stream(args)
    print(f"radius       {res.radius:.10g}", file=out)
    print(f"lower bound  {res.lower_bound:.10g}  (certified: optimal radius >= this)",
          file=out)
    print(f"ratio        {res.ratio:.6g}", file=out)
    print(f"clusters     {len(res.centers)} (k = {inst.k}), centres {res.centers.tolist()}",
          file=out)
    if "ari" in rep:
        print(f"ARI          {rep['ari']:.4f} against the class column", file=out)
    print(f"status       {res.status}: {res.message}", file=out)
    print(f"seconds      {res.stats['seconds']:.3f}", file=out)
    if args.json is not None:
        write_json(args.json, rep)
    return 0 if res.success else 1


def solve_instance(inst, args: argparse.Namespace):
    """Run :func:`pcsos.kcenter.solve_problem` with the CLI options."""
    return solve_problem(Problem.from_instance(inst), seed=args.seed, search=args.search,
                         rtol=args.rtol, time_limit=args.time_limit,
                         refine=not args.no_refine)


__all__ = ["add_arguments", "run", "solve_instance"]
