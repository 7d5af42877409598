"""Certified gaps where k is large and the clusters overlap (issue 31, acceptance 2 and 4).

Each case is one set of :func:`bench_scale.synthetic` (the benchmarks' generator, "bench")
or :func:`bench_scale.overlapping` (classes that are one blob, "overlap"), solved by
``pcsos.solve`` with ``--time-limit`` and ``--workers`` in a process of its own (its peak
memory is its own). One JSON line per case goes to ``--out``: the root's bound after its
first SDP (no cuts) and after its cutting-plane rounds, with their times, as sampled by
the progress snapshots (once a second: a round shorter than that may be missed), the
final bound, objective, gap, nodes, seconds, peak memory, and the cost of the true classes
over the best k-means value of 20 runs without pairs (how much the classes overlap).

    python benchmarks/bench_large_k.py --gen overlap --n 1000 --k 20 --pairs 1000 \\
        --time-limit 1800 --workers 2
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import sys
import time

from bench_scale import GENERATORS, print_row, run_child
from instances import RESULTS, append_jsonl, code_version


def one_case(spec: dict) -> dict:
    from bench_certify import kmeans_best

    import pcsos
    from pcsos.bounds.settings import BoundSettings
    from pcsos.problem import sse

    X, y, ml, cl = GENERATORS[spec["gen"]](spec["n"], spec["k"], spec["pairs"], spec["seed"],
                                           d=spec.get("d", 2))
    rounds: dict[int, dict] = {}
    t0 = time.perf_counter()

    def progress(snap):
        job = (snap.get("running") or {}).get(0)
        if snap.get("nodes") == 0 and job and "round" in job and "bound" in job:
            rounds.setdefault(int(job["round"]), {"bound": float(job["bound"]),
                                                  "seconds": time.perf_counter() - t0})

    res = pcsos.solve(X, spec["k"], ml, cl, time_limit=spec["time_limit"],
                      workers=spec["workers"], seed=spec["seed"], progress=progress,
                      bound_settings={"engine": spec.get("bound", "auto")})
    secs = time.perf_counter() - t0
    first = rounds[min(rounds)] if rounds else None
    root = res.log[0] if res.log and res.log[0].get("node") == 0 else None
    return {**spec, "ml": len(ml), "cl": len(cl),
            "classes_over_kmeans": sse(X, y) / kmeans_best(X, spec["k"], runs=20),
            "status": res.status, "lower_bound": res.lower_bound, "objective": res.objective,
            "gap": res.gap, "nodes": res.nodes, "seconds": secs,
            "engine": BoundSettings(engine=spec.get("bound", "auto")).engine_for(
                spec["k"], X.shape[1], None, len(cl) / len(X)),
            "first_round": None if first is None else min(rounds),
            "first_bound": None if first is None else first["bound"],
            "first_gap": None if first is None else (res.objective - first["bound"])
            / res.objective,
            "first_seconds": None if first is None else first["seconds"],
            "root_bound": res.root_lower_bound, "root_gap": res.root_gap,
            "root_rounds": None if root is None else root.get("cp_iter"),
            "root_cuts": None if root is None else root.get("cp_ineq"),
            "root_seconds": None if root is None else root.get("elapsed"),
            "rounds": {str(r): v for r, v in sorted(rounds.items())},
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "message": res.message}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gen", choices=sorted(GENERATORS), nargs="+", default=["overlap"])
    ap.add_argument("--n", type=int, nargs="+", default=[1000])
    ap.add_argument("--k", type=int, nargs="+", default=[20])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d", type=int, default=2, help="the dimension")
    ap.add_argument("--bound", nargs="+", default=["auto"], help="engines, one case each")
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "bench_large_k.jsonl"))
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a case, in its own process
    args = ap.parse_args(argv)
    if args.one:
        print_row(one_case(json.loads(args.one)))
        return 0
    code = code_version()  # at the start: the cases take long, and commits may land meanwhile
    for gen in args.gen:
        for n in args.n:
            for k, bound in ((k, b) for k in args.k for b in args.bound):
                spec = {"gen": gen, "n": n, "k": k, "d": args.d, "bound": bound,
                        "pairs": args.pairs, "seed": args.seed,
                        "time_limit": args.time_limit, "workers": args.workers}
                row = run_child(spec, __file__, "--one")
                row.update(code=code, machine=platform.platform(),
                           command="python benchmarks/bench_large_k.py " + " ".join(
                               sys.argv[1:] if argv is None else argv))
                append_jsonl(args.out, row)
                gap = row.get("gap", math.nan)
                print(f"{gen} n {n} k {k} d {args.d} {bound}: {row['status']} gap {gap:.4%} "
                      f"first {row.get('first_gap')} root {row.get('root_gap')} "
                      f"nodes {row.get('nodes')} {row.get('seconds', math.nan):.0f} s",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
