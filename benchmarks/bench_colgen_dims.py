"""Root bounds of the two engines as the dimension grows (issue 50: up to which d the exact
pricing is practical, and so where ``auto`` should stop taking the set-partitioning LP).

For each d: n points around k centres uniform in [0, 10]^d, unit standard deviation, seed
``--seed``; the incumbent is S-MDEClust's (30 s); then ``pcsos bound DATA -k K --method M
--upper-bound UB --time-limit T --json F`` for each method, one after the other. A row per
(d, method) goes to ``benchmarks/results/colgen_dims.jsonl``: the bound, the gap to the
incumbent, seconds, and for the LP its pricing boxes and whether it finished.

``--cl P ...``: the same for each number P of cannot-link pairs, drawn uniformly among the
pairs of points of different centres (so the centres' clustering obeys them; the rows say
``cl``): how the engines fare as the pairs grow (the LP's pricing relaxes what its matching
bound cannot hold).

    python benchmarks/bench_colgen_dims.py --dims 2 3 4 5 --n 300 --k 10 --time-limit 120
    python benchmarks/bench_colgen_dims.py --dims 2 --cl 0 150 300 --time-limit 90
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from instances import RESULTS, append_jsonl, bound_methods, code_version, utc_now

from pcsos.heuristics import run_heuristic
from pcsos.problem import Problem, make_instance


def data(n: int, k: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The points and the index of each one's centre."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 10.0, size=(k, d))
    y = rng.integers(k, size=n)
    return centres[y] + rng.normal(size=(n, d)), y


def cannot_links(y: np.ndarray, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` distinct pairs of points of different centres."""
    rng = np.random.default_rng(seed + 1)
    out: set[tuple[int, int]] = set()
    while len(out) < count:
        i, j = sorted(int(v) for v in rng.choice(len(y), 2, replace=False))
        if y[i] != y[j]:
            out.add((i, j))
    return sorted(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--methods", nargs="+", default=["colgen", "sdp"])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cl", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "colgen_dims.jsonl")
    args = ap.parse_args(argv)
    version = code_version()
    with tempfile.TemporaryDirectory() as tmp:
        for d, n_cl in ((d, c) for d in args.dims for c in args.cl):
            X, y = data(args.n, args.k, d, args.seed)
            path = Path(tmp) / f"d{d}.txt"
            np.savetxt(path, X, header=f"{args.n} {d}", comments="")
            cl = cannot_links(y, n_cl, args.seed)
            cons = Path(tmp) / f"d{d}_cl{n_cl}.txt"
            cons.write_text("".join(f"CL {i} {j}\n" for i, j in cl))
            prob = Problem.from_instance(make_instance(X, args.k, cl=cl))
            ub = run_heuristic("s-mdeclust", prob, seed=args.seed, time_limit=30).objective
            for fields in bound_methods([str(path), "-k", str(args.k)]
                                        + (["-c", str(cons)] if cl else []),
                                        args.methods, ub, args.time_limit):
                row = {"d": d, "n": args.n, "k": args.k, "seed": args.seed, "cl": n_cl,
                       "upper_bound": ub, **fields, "code_version": version,
                       "date": utc_now()}
                method = fields["method"]
                append_jsonl(args.out, row)
                print(f"d = {d}, cl = {n_cl} {method}: gap {row['gap']}, {row['seconds']} s, "
                      f"{row['status']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
