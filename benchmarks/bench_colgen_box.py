"""Root LPs of the set-partitioning bound for several sizes of the dual box (issue 50:
``BoundSettings.box``, the master's dual stabilization).

For each data set, k and box: ``pcsos bound DATA -k K --method colgen --time-limit T
--bound-option box=B --json F``, one after the other, each in a process of its own (its
first columns come from IPC-k-means). A row per case goes to
``benchmarks/results/colgen_box.jsonl``: status, bound, LP value, iterations, seconds.

    python benchmarks/bench_colgen_box.py --data pr299 fl417 ali535 --k 4 \\
        --box 0 0.01 0.03 0.1 1 --time-limit 180
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from instances import INSTANCES, RESULTS, append_jsonl, code_version, run_bound, utc_now


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["pr299", "fl417", "ali535"],
                    help="TSPLIB names (../shared/instances/tsplib) or paths")
    ap.add_argument("--k", type=int, nargs="+", default=[4])
    ap.add_argument("--box", type=float, nargs="+", default=[0.0, 0.01, 0.03, 0.1, 1.0])
    ap.add_argument("--time-limit", type=float, default=180.0)
    ap.add_argument("--run", default="box", help="a name for this run's rows")
    ap.add_argument("--out", type=Path, default=RESULTS / "colgen_box.jsonl")
    args = ap.parse_args(argv)
    version = code_version()
    for name in args.data:
        path = Path(name) if Path(name).is_file() else INSTANCES / "tsplib" / f"{name}.txt"
        for k in args.k:
            for box in args.box:
                res, rc = run_bound([str(path), "-k", str(k), "--method", "colgen",
                                     "--time-limit", str(args.time_limit),
                                     "--bound-option", f"box={box!r}"])
                row = {"run": args.run, "data": path.stem, "k": k, "box": box,
                       "status": res.get("status"), "lower_bound": res.get("lower_bound"),
                       "lp_value": res.get("lp_value"), "iterations": res.get("iterations"),
                       "seconds": res.get("total_seconds", res.get("seconds")),
                       "rc": rc, "time_limit": args.time_limit, "code_version": version,
                       "command": " ".join(["python", "benchmarks/bench_colgen_box.py",
                                            *(argv if argv is not None else sys.argv[1:])]),
                       "date": utc_now()}
                append_jsonl(args.out, row)
                print(f"{path.stem} k = {k} box = {box}: {row['status']}, bound "
                      f"{row['lower_bound']}, {row['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
