"""Root bounds of the two engines as the dimension grows (issue 50: up to which d the exact
pricing is practical, and so where ``auto`` should stop taking the set-partitioning LP).

For each d: n points around k centres uniform in [0, 10]^d, unit standard deviation, seed
``--seed``; the incumbent is S-MDEClust's (30 s); then ``pcsos bound DATA -k K --method M
--upper-bound UB --time-limit T --json F`` for each method, one after the other. A row per
(d, method) goes to ``benchmarks/results/colgen_dims.jsonl``: the bound, the gap to the
incumbent, seconds, and for the LP its pricing boxes and whether it finished.

    python benchmarks/bench_colgen_dims.py --dims 2 3 4 5 --n 300 --k 10 --time-limit 120
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from instances import RESULTS, append_jsonl, code_version, run_bound, utc_now

from pcsos.heuristics import run_heuristic
from pcsos.problem import Problem, make_instance


def data(n: int, k: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 10.0, size=(k, d))
    return centres[rng.integers(k, size=n)] + rng.normal(size=(n, d))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--methods", nargs="+", default=["colgen", "sdp"])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "colgen_dims.jsonl")
    args = ap.parse_args(argv)
    version = code_version()
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.dims:
            X = data(args.n, args.k, d, args.seed)
            path = Path(tmp) / f"d{d}.txt"
            np.savetxt(path, X, header=f"{args.n} {d}", comments="")
            prob = Problem.from_instance(make_instance(X, args.k))
            ub = run_heuristic("s-mdeclust", prob, seed=args.seed, time_limit=30).objective
            for method in args.methods:
                res, rc = run_bound([str(path), "-k", str(args.k), "--method", method,
                                     "--upper-bound", repr(ub),
                                     "--time-limit", str(args.time_limit)])
                lb = res.get("lower_bound")
                row = {"d": d, "n": args.n, "k": args.k, "seed": args.seed, "method": method,
                       "upper_bound": ub, "lower_bound": lb,
                       "gap": None if lb is None else (ub - lb) / ub,
                       "seconds": res.get("total_seconds", res.get("seconds")),
                       "status": res.get("status"), "pricing_boxes": res.get("pricing_boxes"),
                       "rc": rc, "time_limit": args.time_limit,
                       "code_version": version, "date": utc_now()}
                append_jsonl(args.out, row)
                print(f"d = {d} {method}: gap {row['gap']}, {row['seconds']} s, "
                      f"{row['status']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
