"""The exact pricing's two searches side by side, by dimension: the search over the disks
g_i < 0 (``price_exact`` up to ``CIRCLES_MAX_D``) against the search over the cluster's mean
(``price_sized`` with every count), at the same near-optimal duals of the set-partitioning
LP. The duals: column generation with the heuristic pricing alone
(``lp_value.estimate``, ``--cg-time`` seconds), the restricted master's last duals.

    python benchmarks/pricing_dims.py iris:6 seeds:6 glass:6 pr299:10 --time-limit 120

(NAME:K: a shared dataset, or a TSPLIB set of ../shared/instances/tsplib). One JSON line per
instance and search in ``benchmarks/results/pricing_dims.jsonl``: the bound, the best
reduced cost found, whether the search completed, its boxes and seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

os.environ.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                    "MKL_NUM_THREADS")})

import lp_value  # noqa: E402
import numpy as np  # noqa: E402
from bench_sizes import data_of  # noqa: E402
from instances import INSTANCES, RESULTS, append_jsonl, code_version  # noqa: E402

import pcsos.bounds.colgen.engine as engine  # noqa: E402
from pcsos.bounds.colgen import pricing  # noqa: E402
from pcsos.clock import Deadline  # noqa: E402
from pcsos.heuristics import run_heuristic  # noqa: E402
from pcsos.io import read_data  # noqa: E402
from pcsos.problem import Problem, make_instance  # noqa: E402


def duals(problem: Problem, seconds: float):
    """The restricted master's duals after heuristic column generation, and its value."""
    start = run_heuristic("s-mdeclust", problem, seed=0)
    res = lp_value.estimate(problem, np.asarray(start.super_labels), time_limit=seconds)
    return res["duals"], res["master_value"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", help="NAME:K")
    ap.add_argument("--cg-time", type=float, default=30.0)
    ap.add_argument("--time-limit", type=float, default=120.0, help="per search (s)")
    ap.add_argument("--out", default=str(RESULTS / "pricing_dims.jsonl"))
    args = ap.parse_args(argv)
    for case in args.cases:
        name, k = case.split(":")
        tsp = INSTANCES / "tsplib" / f"{name}.txt"
        X = read_data(tsp).X if tsp.is_file() else data_of(name)[0]
        problem = Problem.from_instance(make_instance(X, int(k), (), ()))
        pi, value = duals(problem, args.cg_time)
        data = pricing.PricingData.from_problem(problem)
        tol = engine.PRICING_TOL * abs(value) / int(k)  # the engine's, at the LP's value
        d = X.shape[1]
        for search in ("disks", "mean"):
            saved = pricing.CIRCLES_MAX_D
            pricing.CIRCLES_MAX_D = max(d, saved) if search == "disks" else min(d - 1, saved)
            try:
                t = time.perf_counter()
                res = pricing.price_exact(data, pi, tol=tol, max_boxes=10 ** 9,
                                          deadline=Deadline(args.time_limit))
                secs = time.perf_counter() - t
            finally:
                pricing.CIRCLES_MAX_D = saved
            row = {"data": name, "n": len(X), "d": d, "k": int(k), "search": search,
                   "master_value": value, "lower": res.lower, "best": res.best,
                   "complete": res.complete, "boxes": res.boxes, "seconds": round(secs, 3),
                   "time_limit": args.time_limit, "cg_time": args.cg_time,
                   "code": code_version(), "machine": platform.platform(),
                   "command": "python benchmarks/pricing_dims.py " + " ".join(
                       argv if argv is not None else sys.argv[1:])}
            append_jsonl(args.out, row)
            print(f"{name} d={d} k={k} {search}: lower {res.lower:.8g} best {res.best:.8g} "
                  f"complete {res.complete} {res.boxes} boxes {secs:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
