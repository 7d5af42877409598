"""How far the cuts raise a root: the cutting-plane loop alone on a generated set (issue 31).

Builds one set of :func:`bench_scale.overlapping` or :func:`bench_scale.synthetic`, then runs
:func:`pcsos.cuts.loop.cutting_plane_loop` at its root (one BLAS thread) against
``--upper-bound`` (the best clustering known; none given: the loop's own pruning test never
fires), with the defaults of :class:`pcsos.cuts.loop.CuttingPlaneSettings` changed by
``--set FIELD=VALUE`` (Python literals). One JSON line per round goes to ``--out``: the
round's safe bound and the ADMM's own value, iterations, seconds, cuts in the model, cuts
found / added per family and cuts removed; a last line ends the case. Where the rounds
run out of violated cuts, the ADMM's value is the closure of these cut families at the
violation threshold, whatever the time.

    python benchmarks/bench_closure.py --gen overlap --n 1000 --k 20 --pairs 1000 \\
        --upper-bound 215.32825071530772 --time-limit 1500 --tag tri20 \\
        --set "fraction={'triangle': 0.2, 'pair': 0.2}"
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from bench_scale import GENERATORS
from instances import RESULTS, append_jsonl, code_version, literal_settings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gen", choices=sorted(GENERATORS), default="overlap")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--upper-bound", type=float, default=math.inf)
    ap.add_argument("--time-limit", type=float, default=1500.0)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--tag", default="default")
    ap.add_argument("--out", default=str(RESULTS / "bench_closure.jsonl"))
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from pcsos.cuts.loop import CuttingPlaneSettings, cutting_plane_loop
    from pcsos.problem import Problem, make_instance

    changes = literal_settings(args.set)
    X, _, ml, cl = GENERATORS[args.gen](args.n, args.k, args.pairs, args.seed)
    prob = Problem.from_instance(make_instance(X, args.k, ml, cl))
    case = {"gen": args.gen, "n": args.n, "k": args.k, "pairs": args.pairs,
            "seed": args.seed, "s": prob.s, "tag": args.tag, "settings": changes,
            "upper_bound": args.upper_bound if math.isfinite(args.upper_bound) else None,
            "code": code_version(),
            "command": "python " + " ".join(sys.argv)}
    t0 = time.perf_counter()

    def record(st) -> None:
        row = {**case, "clock": time.perf_counter() - t0, "round": st.round,
               "bound": st.lower_bound, "sdp_value": st.sdp_value, "status": st.status,
               "iterations": st.iterations, "seconds": st.seconds, "cuts": st.cuts_in_model,
               "found": st.found, "added": st.added, "removed": st.removed}
        append_jsonl(args.out, row)
        print(json.dumps(row), flush=True)

    with threadpool_limits(1):
        res = cutting_plane_loop(prob, upper_bound=args.upper_bound,
                                 settings=CuttingPlaneSettings(**changes), root=True,
                                 seed=args.seed, time_limit=args.time_limit, callback=record)
    end = {**case, "end": True, "clock": time.perf_counter() - t0,
           "bound": res.lower_bound, "message": res.message, "rounds": res.n_rounds}
    append_jsonl(args.out, end)
    print(json.dumps(end), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
