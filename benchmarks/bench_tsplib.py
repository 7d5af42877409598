"""TSPLIB sets without pairs (issue 50, acceptance 1): ``pcsos.solve`` with its defaults (the
'auto' bound engine) on pr299, fl417 and ali535 for k = 2, 4, 6, 8, 10, each in a process of
its own, beside the published SOS-SDP and CG+DCA rows (../shared/instances/tsplib/README.md;
their hardware, one thread for the tree). One JSON line per case goes to ``--out``: status,
objective, bound, gap, root gap, nodes, seconds, the engine that bounded the root.

    python benchmarks/bench_tsplib.py --data pr299 fl417 ali535 --k 2 4 6 8 10 \\
        --time-limit 1800 --workers 2
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

from bench_scale import print_row, run_child
from instances import INSTANCES, RESULTS, append_jsonl, code_version, literal_settings

#: published (root gap %, nodes, seconds) of SOS-SDP and CG+DCA, by (data, k)
PUBLISHED = {
    ("pr299", 2): ((0.15, 5, 68.69), (0.01, 1, 60.74)),
    ("pr299", 4): ((1.19, 73, 906.77), (0.00, 1, 88.73)),
    ("pr299", 6): ((1.31, 97, 1255.27), (0.01, 1, 29.42)),
    ("pr299", 8): ((0.55, 35, 429.58), (0.73, 5, 127.75)),
    ("pr299", 10): ((0.84, 21, 338.12), (0.00, 1, 21.43)),
    ("fl417", 2): ((0.00, 1, 22.98), (0.00, 1, 49.34)),
    ("fl417", 4): ((6.04, 57, 1432.39), (0.00, 1, 8.36)),
    ("fl417", 6): ((0.97, 13, 243.12), (0.00, 1, 8.13)),
    ("fl417", 8): ((1.08, 17, 334.84), (0.00, 1, 11.39)),
    ("fl417", 10): ((0.00, 1, 216.93), (0.00, 1, 10.31)),
    ("ali535", 2): ((0.39, 15, 977.48), (0.00, 1, 849.72)),
    ("ali535", 4): ((1.01, 43, 1243.10), (0.00, 1, 192.75)),
    ("ali535", 6): ((0.80, 39, 1060.07), (0.00, 1, 744.23)),
    ("ali535", 8): ((5.13, 179, 4896.03), (0.10, 3, 739.30)),
    ("ali535", 10): ((4.65, 163, 4558.82), (0.00, 1, 573.26)),
}


def one_case(spec: dict) -> dict:
    import numpy as np

    import pcsos
    from pcsos.io import read_data

    X = np.asarray(read_data(INSTANCES / "tsplib" / f"{spec['data']}.txt").X)
    t0 = time.perf_counter()
    res = pcsos.solve(X, spec["k"], time_limit=spec["time_limit"], workers=spec["workers"],
                      seed=0, bound_settings=spec.get("bound_settings") or None)
    secs = time.perf_counter() - t0
    root = res.log[0] if res.log and res.log[0].get("node") == 0 else {}
    sos, cg = PUBLISHED.get((spec["data"], spec["k"]), (None, None))
    return {**spec, "status": res.status, "objective": res.objective,
            "lower_bound": res.lower_bound, "gap": res.gap, "root_gap": res.root_gap,
            "nodes": res.nodes, "seconds": secs, "engine": root.get("engine"),
            "sos_sdp": sos, "cg_dca": cg}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=["pr299", "fl417", "ali535"])
    ap.add_argument("--k", nargs="+", type=int, default=[2, 4, 6, 8, 10])
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "tsplib_solve.jsonl"))
    ap.add_argument("--bound", action="append", default=[], metavar="NAME=VALUE",
                    help="a BoundSettings field for this run, e.g. aggregate=True (repeatable; "
                         "values are read as Python literals; default: none, the defaults)")
    args = ap.parse_args(argv)
    command = "python benchmarks/bench_tsplib.py " + " ".join(sys.argv[1:])
    for data in args.data:
        for k in args.k:
            spec = {"data": data, "k": k, "time_limit": args.time_limit,
                    "workers": args.workers, "bound_settings": literal_settings(args.bound)}
            row = run_child(spec, __file__)
            row.update(command=command, code=code_version(), host=platform.node(),
                       when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
            append_jsonl(args.out, row)
            print(json.dumps({key: row.get(key) for key in (
                "data", "k", "status", "root_gap", "nodes", "seconds", "engine")}), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "_one":
        print_row(one_case(json.loads(sys.argv[2])))
    else:
        sys.exit(main())
