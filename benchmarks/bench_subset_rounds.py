"""The cutting-plane loop on one subset of the decomposition bound, round by round.

Takes subset ``--subset`` of :func:`pcsos.decomposition.partition` (subsets of
``--subset-size`` points) of a synthetic set of :func:`bench_scale.synthetic`, the
reference clustering being Lloyd's iterations from the true classes' means, and runs
:func:`pcsos.cuts.loop.cutting_plane_loop` on it (one BLAS thread, as ``certify`` does) for
``--time-limit`` seconds with the cutting-plane settings ``--set FIELD=VALUE`` (fields of
CuttingPlaneSettings, values as Python literals; repeatable) and the SDP options ``--sdp
KEY=VALUE`` (arguments of ``solve_sdp``, e.g. ``--sdp eig="'auto32'"``). Appends one JSON line per
round to ``--out`` (default ``benchmarks/results/bench_subset_rounds.jsonl``, many runs): the
run's name (``--run``), seconds, bound, the bound's distance below the subset's share of the
reference and below the best of 40 k-means runs on the subset (scikit-learn, the test
extra).

Example (the two loose tolerances compared in docs/decomposition.md, run side by side)::

    python benchmarks/bench_subset_rounds.py --set loose_tol=1e-3 --run tol3 &
    python benchmarks/bench_subset_rounds.py --set loose_tol=1e-2 --run tol2
"""

from __future__ import annotations

import argparse
import sys
import time

from bench_certify import kmeans_best, reference_instance
from instances import RESULTS, append_jsonl, literal_settings


def main() -> int:
    from threadpoolctl import threadpool_limits

    from pcsos.cuts.loop import CuttingPlaneSettings, cutting_plane_loop
    from pcsos.decomposition import _sub_instance, partition
    from pcsos.problem import Problem, sse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--subset-size", type=int, default=600)
    ap.add_argument("--subset", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=330.0)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--sdp", action="append", default=[], metavar="KEY=VALUE",
                    help="an option of solve_sdp (e.g. eig='auto32'); repeatable")
    ap.add_argument("--out", default=str(RESULTS / "bench_subset_rounds.jsonl"))
    ap.add_argument("--run", default="default",
                    help="this run's name, stored in every row (default: %(default)s)")
    args = ap.parse_args()
    fields, sdp = literal_settings(args.set), literal_settings(args.sdp)
    X, inst, ref = reference_instance(args.n, args.k, args.pairs, args.seed)
    pts = partition(inst, ref, args.subset_size, seed=args.seed)[args.subset]
    share = sse(X[pts], ref[pts])
    best = kmeans_best(X[pts], args.k)
    problem = Problem.from_instance(_sub_instance(inst, pts), infer_k2=False)
    base = {"run": args.run, "n": args.n, "k": args.k, "subset_size": args.subset_size,
            "subset": args.subset, "s": problem.s, "settings": fields, "bound_settings": sdp,
            "share": share, "kmeans_best_of_40": best,
            "command": "python " + " ".join(sys.argv)}
    t0 = time.perf_counter()

    def record(st):
        row = {**base, "round": st.round, "seconds": time.perf_counter() - t0,
               "lower_bound": st.lower_bound, "below_share": (share - st.lower_bound) / share,
               "below_kmeans": (best - st.lower_bound) / best, "iterations": st.iterations,
               "cuts": st.cuts_in_model, "status": st.status}
        append_jsonl(args.out, row)
        print(f"{row['seconds']:7.1f} s  round {st.round:2d}  {100 * row['below_share']:.2f} % "
              f"below the share  ({st.iterations} iterations)", flush=True)

    with threadpool_limits(limits=1, user_api="blas"):
        cutting_plane_loop(problem, upper_bound=share, time_limit=args.time_limit,
                           settings=CuttingPlaneSettings(**fields), bound_settings=sdp,
                           callback=record, seed=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
