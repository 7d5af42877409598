"""IPC-k-means's SDP start: 50 k-means restarts (pcsos's default) against the reference
code's 200 (issue 19), on the root SDP solutions of shared instances.

For each instance: the root cutting-plane loop (default settings) gives Z; then
``ipc-kmeans`` with ``init='sdp'`` runs with ``sdp_n_init`` 50 and 200 for several seeds
(the start is one IPC run from the k-means centres, as paper 000's Alg. 2). One JSON line
per instance in ``--out``; a summary at the end.

    python benchmarks/bench_ipc_restarts.py --datasets glass,iris,wine,seeds --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import time

from instances import RESULTS, append_jsonl, constraint_files, load_problem
from threadpoolctl import threadpool_limits

from pcsos.cuts.loop import cutting_plane_loop
from pcsos.heuristics import run_heuristic


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="glass,iris,wine,seeds")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--restarts", default="50,200")
    ap.add_argument("--out", type=pathlib.Path,
                    default=RESULTS / "bench_ipc_restarts.jsonl")
    args = ap.parse_args(argv)
    seeds = [int(v) for v in args.seeds.split(",")]
    restarts = [int(v) for v in args.restarts.split(",")]
    rows = []
    for ds in args.datasets.split(","):
        for f in constraint_files(ds, seeds={0}):
            p = load_problem(ds, f)
            with threadpool_limits(1):
                t0 = time.perf_counter()
                loop = cutting_plane_loop(p, root=True, seed=0)
                row = {"instance": f"{ds}/{f.stem}", "s": p.s, "k": p.k,
                       "root_seconds": time.perf_counter() - t0, "runs": {}}
                for r in restarts:
                    vals, secs = [], []
                    for seed in seeds:
                        t1 = time.perf_counter()
                        res = run_heuristic("ipc-kmeans", p, Z=loop.sdp.Z, seed=seed,
                                            init="sdp", sdp_n_init=r)
                        secs.append(time.perf_counter() - t1)
                        vals.append(res.objective if math.isfinite(res.objective) else None)
                    row["runs"][str(r)] = {"objectives": vals, "seconds": secs}
            rows.append(row)
            append_jsonl(args.out, row)
            print(row["instance"], {r: (min(v for v in row["runs"][r]["objectives"] if v),
                                        round(statistics.median(row["runs"][r]["seconds"]), 3))
                                    for r in row["runs"]}, flush=True)
    a, b = (str(r) for r in restarts[:2])
    better = worse = same = 0
    ratios = []
    for row in rows:
        for va, vb in zip(row["runs"][a]["objectives"], row["runs"][b]["objectives"],
                          strict=True):
            if va is None or vb is None:
                continue
            if vb < va * (1 - 1e-9):
                better += 1
            elif vb > va * (1 + 1e-9):
                worse += 1
            else:
                same += 1
        ratios.append(statistics.median(row["runs"][b]["seconds"])
                      / statistics.median(row["runs"][a]["seconds"]))
    print(f"{b} restarts against {a}, per instance and seed: better {better}, same {same}, "
          f"worse {worse}; median time ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
