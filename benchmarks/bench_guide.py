"""The runs behind docs/guide/choosing.md ("Which bound, which command"), one at a time.

Each case is the page's own command line, run as a child process with ``--json``; a row per
case goes to ``benchmarks/results/guide_runs.jsonl``: the command, the date, the result's
status, objective, bound, gap, nodes and seconds, and the child's wall time.

    python benchmarks/bench_guide.py                  # every case
    python benchmarks/bench_guide.py --case abalone   # one
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instances import RESULTS, SHARED, append_jsonl, code_version, utc_now

CASES = {
    "iris_pairs": ["solve", "iris/data.txt", "-c", "iris/constraints/ml_50_cl_50_0.txt",
                   "-k", "3"],
    "iris_cl": ["solve", "iris/data.txt", "-c", "iris/constraints/ml_0_cl_100_0.txt",
                "-k", "3"],
    "iris_sizes": ["solve", "iris/data.txt", "-k", "3", "--sizes", "50,50,50"],
    # point i weighs 1 + (i mod 3): WEIGHTS is that file, written for the run
    "iris_weights": ["solve", "iris/data.txt", "-c", "iris/constraints/ml_50_cl_50_0.txt",
                     "-k", "3", "--weights", "WEIGHTS"],
    "abalone": ["solve", "abalone/data.txt", "-k", "3"],
    "pr299_k20": ["solve", "tsplib/pr299.txt", "-k", "20", "--time-limit", "600"],
}


def run(name: str, workers: int) -> dict:
    args = [str(SHARED / "instances" / a) if a.endswith(".txt") else a for a in CASES[name]]
    with tempfile.TemporaryDirectory() as tmp:
        if "WEIGHTS" in args:
            weights = Path(tmp) / "weights.txt"
            n = int(Path(args[1]).read_text().split()[0])
            weights.write_text("".join(f"{1 + i % 3}\n" for i in range(n)))
            args[args.index("WEIGHTS")] = str(weights)
        out = Path(tmp) / "result.json"
        cmd = ["pcsos", *args, "--workers", str(workers), "--json", str(out), "-q"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        res = json.loads(out.read_text()) if out.is_file() else {}
    shown = " ".join("WEIGHTS" if c.endswith("weights.txt") else c.replace(str(SHARED), "../shared")
                     for c in cmd[:-5])
    return {"case": name, "command": f"{shown} --workers {workers}", "rc": proc.returncode,
            "date": utc_now(),
            **{key: res.get(key) for key in ("status", "objective", "lower_bound", "gap",
                                              "nodes", "seconds", "root_gap")},
            "wall": round(wall, 2), "stderr": proc.stderr[-500:] if proc.returncode else "",
            "code_version": code_version()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "guide_runs.jsonl")
    args = ap.parse_args(argv)
    for name in args.case or list(CASES):
        row = run(name, args.workers)
        append_jsonl(args.out, row)
        print(f"{name}: {row['status']}, gap {row['gap']}, {row['seconds']} s "
              f"({row['wall']} s wall)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
