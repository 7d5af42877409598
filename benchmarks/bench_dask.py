"""The tree on a thread pool against the same tree on Dask worker processes.

Solves one instance twice with the same settings: ``workers`` threads, then a Dask
``LocalCluster`` of ``workers`` processes (1 thread each). Reports wall time, nodes, the
median node time (the ``time`` of each log row: the work inside the node), the overhead per
node (wall time x workers / nodes - the median node time, for each), the bytes of node data
sent to workers and of outcomes sent back per node (Dask), and a projection of the wall
time with 16 and 64 workers from the measured per-node times: the root alone, then the
other nodes' work divided over the workers plus the per-node overhead (an optimistic
model: it assumes the tree offers that many open nodes at once and that the node count
does not grow with the workers).

Writes one JSON object (default ``benchmarks/results/bench_dask.json``).

Example::

    python benchmarks/bench_dask.py --instance glass/ml_50_cl_50_3 --workers 2
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

from instances import RESULTS, code_version, load_instance, split_name, write_json


def _run(inst, workers: int, dask, time_limit):
    import pcsos
    from pcsos.api import solve_instance

    t0 = time.perf_counter()
    traffic = {}
    if dask is None:
        res = solve_instance(inst, workers=workers, time_limit=time_limit)
    else:
        from pcsos.distributed import DaskExecutor, DaskSignals

        ex = DaskExecutor(dask, inst)
        from threadpoolctl import threadpool_limits

        from pcsos import api

        # solve(dask=...) builds the same executor and signals; built here to read the
        # executor's traffic counters
        opts = pcsos.SolverOptions(workers=workers, time_limit=time_limit).checked()
        with threadpool_limits(limits=1, user_api="blas"):
            res = api._solve(inst, opts, init_labels=None, executor=ex, callback=None,
                             progress=None, stop_event=None, abort_event=None,
                             verbose=False, remote=DaskSignals())
        traffic = {"bytes_sent": ex.bytes_sent, "bytes_back": ex.bytes_back,
                   "jobs": ex.jobs}
    wall = time.perf_counter() - t0
    rows = res.log
    root = rows[0]["time"] if rows else 0.0
    others = [r["time"] for r in rows[1:]]
    return {"status": res.status, "objective": res.objective, "nodes": res.nodes,
            "wall": wall, "root_seconds": root,
            "median_node_seconds": statistics.median(others) if others else None,
            "sum_other_node_seconds": sum(others), **traffic}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instance", default="glass/ml_50_cl_50_3")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--out", default=str(RESULTS / "bench_dask.json"))
    args = ap.parse_args()
    import logging

    import distributed

    inst = load_instance(*split_name(args.instance))
    threads = _run(inst, args.workers, None, args.time_limit)
    print("threads", json.dumps(threads), flush=True)
    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None,
                                       silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    startup = time.perf_counter() - t0
    try:
        dask = _run(inst, args.workers, client, args.time_limit)
    finally:
        client.close()
        cluster.close()
    dask["cluster_startup"] = startup
    print("dask", json.dumps(dask), flush=True)
    out = {"instance": args.instance, "workers": args.workers, "threads": threads,
           "dask": dask}
    for r in (threads, dask):
        others = max(1, r["nodes"] - 1)
        per_node_wall = (r["wall"] - r["root_seconds"]) * args.workers / others
        r["overhead_per_node"] = per_node_wall - (r["sum_other_node_seconds"] / others)
        r["projection"] = {
            str(w): r["root_seconds"] + (r["sum_other_node_seconds"]
                                         + others * max(0.0, r["overhead_per_node"])) / w
            for w in (args.workers, 16, 64)}
    if dask.get("jobs"):
        out["bytes_per_node"] = {"sent": dask["bytes_sent"] / dask["jobs"],
                                 "back": dask["bytes_back"] / dask["jobs"]}
    out.update(code=code_version(), command="python " + " ".join(sys.argv),
               machine={"python": platform.python_version(), "platform": platform.platform()})
    write_json(args.out, out)
    print(json.dumps({k: out[k] for k in ("bytes_per_node",) if k in out}))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
