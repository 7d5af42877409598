"""The exact pricing's search over the cluster's mean (``price_sized``) at one set of duals,
timed: the root LP's duals of a dataset with size bounds (glass with sizes 17..54 by
default), where the search of every exact pricing of that tree runs.

    python benchmarks/bench_sized_search.py --duals /tmp/glass_duals.npy --run NAME

The duals: the root LP's by column generation from S-MDEClust's clustering (one thread,
about 150 s on glass), saved to ``--duals`` (a .npy file, read without pickles) when it is
missing and read from it otherwise, so that two builds of the kernel (``PYTHONPATH``) time
the same search one after the other. One JSON line per run in
``benchmarks/results/sized_search.jsonl``: the median seconds of ``--repeats`` complete
searches, their boxes, the bound, and the kernel's path.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                    "MKL_NUM_THREADS")})

import numpy as np  # noqa: E402
from bench_sizes import data_of  # noqa: E402
from instances import RESULTS, append_jsonl, code_version, utc_now  # noqa: E402

from pcsos._kernels import _pricing as kernel  # noqa: E402
from pcsos.bounds.colgen import colgen_bound  # noqa: E402
from pcsos.bounds.colgen.engine import PRICING_TOL  # noqa: E402
from pcsos.bounds.colgen.pricing import PricingData, price_bound  # noqa: E402
from pcsos.heuristics import run_heuristic  # noqa: E402
from pcsos.problem import Problem, make_instance  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="glass", help="a dataset of ../shared/instances")
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--size-min", type=int, default=17)
    ap.add_argument("--size-max", type=int, default=54)
    ap.add_argument("--duals", type=Path, required=True,
                    help="the root LP's duals (.npy): written when missing, else read")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--run", default="sized_search", help="a name for this run's row")
    ap.add_argument("--out", type=Path, default=RESULTS / "sized_search.jsonl")
    args = ap.parse_args(argv)
    X, _ = data_of(args.data)
    none = np.zeros((0, 2), dtype=np.int64)
    problem = Problem.from_instance(make_instance(X, args.k, none, none,
                                                  size_min=args.size_min,
                                                  size_max=args.size_max))
    start = run_heuristic("s-mdeclust", problem, seed=0)
    upper = float(start.objective)
    if args.duals.exists():
        pi = np.load(args.duals, allow_pickle=False)
    else:
        res = colgen_bound(problem, labels=start.super_labels, upper_bound=upper, seed=0)
        pi = np.asarray(res.pi, dtype=np.float64)
        np.save(args.duals, pi, allow_pickle=False)
        print(f"root LP: bound {res.lower_bound:.10g}, {res.status}, {res.seconds:.1f} s",
              flush=True)
    if pi.shape != (problem.s,):
        print(f"{args.duals}: {pi.shape} duals, not {problem.s}", file=sys.stderr)
        return 2
    data = PricingData.from_problem(problem)
    tol = PRICING_TOL * upper / args.k
    seconds, out = [], None
    for _ in range(args.repeats):
        t = time.perf_counter()
        out = price_bound(data, pi, args.k, tol=tol, max_boxes=10**9)
        seconds.append(time.perf_counter() - t)
    row = {"run": args.run, "data": args.data, "k": args.k, "size_min": args.size_min,
           "size_max": args.size_max, "s": problem.s, "d": problem.d,
           "seconds_median": statistics.median(seconds), "seconds": seconds,
           "boxes": out.boxes, "complete": out.complete, "lower": out.lower,
           "kernel": kernel.__file__, "code_version": code_version(),
           "command": " ".join(["python", "benchmarks/bench_sized_search.py", *(
               argv if argv is not None else sys.argv[1:])]),
           "machine": platform.node(), "date": utc_now()}
    append_jsonl(args.out, row)
    print(f"{args.run}: median {row['seconds_median']:.3f} s over {args.repeats}, "
          f"{out.boxes} boxes, bound {out.lower:.10g}, complete {out.complete}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
