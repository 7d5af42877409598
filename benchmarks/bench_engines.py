"""Root bounds of the two engines on the shared instances (issue 50, acceptance 5: where
the set-partitioning LP's exact pricing stops paying on real data).

For each instance chosen: its optimum (the last optimal row of ``bench_solve.jsonl``), then
``pcsos bound DATA -c CONS --method M --upper-bound OPT --time-limit T --json F`` for each
method (``sdp`` with ``--cuts all``, as the tree's root runs it, and ``colgen``), one after
the other. A row per (instance, method) goes to ``benchmarks/results/engines_root.jsonl``:
the bound, its gap to the optimum, seconds, status, and for the LP its pricing boxes.

    python benchmarks/bench_engines.py --datasets glass ECG5000 --seeds 0 --time-limit 60
"""

from __future__ import annotations

import argparse
import sys

from instances import (
    INSTANCES,
    RESULTS,
    append_jsonl,
    bound_methods,
    code_version,
    instances,
    read_jsonl,
    utc_now,
)

OUT = RESULTS / "engines_root.jsonl"


def optima() -> dict[str, float]:
    """{instance: optimal SSE} from the optimal rows of bench_solve.jsonl (the last wins)."""
    return {r["instance"]: r["objective"] for r in read_jsonl(RESULTS / "bench_solve.jsonl")
            if r.get("status") == "optimal"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["glass", "ECG5000"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--methods", nargs="+", default=["sdp", "colgen"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    version, best = code_version(), optima()
    for ds, path, ml, cl, _seed in instances(args.datasets, set(args.seeds)):
        name = f"{ds}/{path.stem}"
        ub = best.get(name)
        if ub is None:
            print(f"{name}: no optimum in bench_solve.jsonl, skipped", flush=True)
            continue
        for fields in bound_methods([str(INSTANCES / ds / "data.txt"), "-c", str(path)],
                                    args.methods, ub, args.time_limit,
                                    lambda m: ["--cuts", "all"] if m == "sdp" else []):
            row = {"instance": name, "ml": ml, "cl": cl, "optimum": ub, **fields,
                   "code_version": version, "date": utc_now()}
            method = fields["method"]
            append_jsonl(args.out, row)
            print(f"{name} {method}: gap {row['gap']}, {row['seconds']} s, {row['status']}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
