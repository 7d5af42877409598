"""The LP engine on one fixed set of tree nodes, under several bound settings (issue 50).

A 10-minute tree on two workers varies by tens of nodes from run to run (glass, sizes
17..54: 50 to 115 nodes at 600 s on the same code), which hides a change of a tenth in a
node's cost. This script holds the nodes fixed instead. It processes the root and then
``--nodes`` nodes breadth first with the default settings, on one thread, the incumbent
fixed at the starting clustering's value (so that every node has the same pruning target),
as :func:`pcsos.node.process_node` does in a tree: each node with its parent's columns and
duals. Then each configuration processes the same nodes again, each from the same warm
start, in a process of its own, two configurations at a time side by side (``--parallel``)
so that they share the machine's conditions. One row per configuration goes to ``--out``:
per node its kind, seconds, how its LP ended (``target``: pruned at its target,
``branch``, ...), masters and bound, and the totals.

The instance and the starting clustering are :mod:`bench_colgen_root`'s (``--data`` or
``--gen``, ``--heuristic``); a configuration is a comma-separated list of
:class:`~pcsos.bounds.settings.BoundSettings` fields (``NAME=VALUE``; "" for the defaults).

    python benchmarks/bench_lp_nodes.py --data glass --size-min 17 --size-max 54 \\
        --heuristic s-mdeclust --heuristic-time 10 --nodes 16 --config "" "" --run noise
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import multiprocessing
import os
import shlex
import sys
import time

from bench_colgen_root import (
    ONE_THREAD,
    instance_arguments,
    instance_spec,
    load,
    sizes_of,
    start,
)
from instances import RESULTS, append_jsonl, code_version, utc_now


def _options(config: str):
    """The solve's options with the bound settings of ``config``, one worker, one thread."""
    from pcsos.bounds.settings import BoundSettings
    from pcsos.cli.common import parse_options
    from pcsos.options import SolverOptions

    items = [item for item in config.split(",") if item]
    bs = BoundSettings.make(parse_options(items, "--config"), source="--config")
    opts = SolverOptions.make(seed=0, workers=1, bound_settings=bs).checked()
    return dataclasses.replace(opts, workers=1, threads=1, root_threads=1)


def _run(node, upper: float, options, history, is_root: bool = False):
    """Process one node as the tree does: (outcome, seconds)."""
    from pcsos.node import process_node
    from pcsos.tree import Context

    ctx = Context(upper, None, options, is_root=is_root, history=history)
    t = time.perf_counter()
    out = process_node(node, ctx)
    return out, time.perf_counter() - t


def _summary(node, out, seconds: float) -> list:
    row = out.row or {}
    return [node.kind, round(seconds, 3), row.get("sdp_status"), row.get("sdp_iterations"),
            out.bound]


def build(spec: dict, count: int):
    """(root row, nodes, pseudo-cost history, the instance's name, n and k) under the
    defaults: the root, then ``count`` nodes breadth first (each processed, so that its
    children exist)."""
    from threadpoolctl import threadpool_limits

    from pcsos.branching import PseudoCosts
    from pcsos.node import NodeData
    from pcsos.problem import Problem, make_instance

    threadpool_limits(1)
    X, k, ml, cl, name = load(spec)
    instance = make_instance(X, k, ml, cl, **sizes_of(spec))
    options = _options("")
    history = PseudoCosts.empty(instance.n)
    root = NodeData(Problem.from_instance(instance), known_feasible=True)
    out, seconds = _run(root, spec["upper_bound"], options, history, is_root=True)
    if out.learned is not None:
        history.record(out.learned)
    queue, nodes = [c for c, _ in out.children], []
    while queue and len(nodes) < count:
        node = queue.pop(0)
        nodes.append(node)
        o, _ = _run(node, spec["upper_bound"], options, history)
        if o.learned is not None:
            history.record(o.learned)
        queue += [c for c, _ in o.children]
    return _summary(root, out, seconds), nodes, history, {"data": name, "n": len(X), "k": k}


def replay(job) -> dict:
    """One configuration over the fixed nodes (in a process of its own)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    config, nodes, history, upper = job
    options = _options(config)
    rows = []
    for node in nodes:
        out, seconds = _run(node, upper, options, copy.deepcopy(history))
        rows.append(_summary(node, out, seconds))
    return {"config": config, "nodes": rows,
            "seconds": round(sum(r[1] for r in rows), 3),
            "masters": sum(int(r[3] or 0) for r in rows),
            "pruned": sum(r[2] == "target" for r in rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    instance_arguments(ap, "s-mdeclust", 10.0)
    ap.add_argument("--nodes", type=int, default=16, help="nodes below the root to replay")
    ap.add_argument("--config", nargs="+", default=["", ""],
                    help="bound settings per configuration: NAME=VALUE[,NAME=VALUE...]")
    ap.add_argument("--parallel", type=int, default=2, help="configurations side by side")
    ap.add_argument("--run", default="nodes", help="a name for this run's rows")
    ap.add_argument("--out", default=RESULTS / "bench_lp_nodes.jsonl")
    args = ap.parse_args(argv)
    spec = instance_spec(ap, args)
    if args.nodes < 1 or args.parallel < 1:
        ap.error("--nodes and --parallel must be positive")
    os.environ.update(ONE_THREAD)
    spec.update(start(spec))
    t = time.perf_counter()
    root, nodes, history, named = build(spec, args.nodes)
    built = round(time.perf_counter() - t, 1)
    print(f"root {root}; {len(nodes)} nodes built in {built} s", flush=True)
    command = shlex.join(["python", "benchmarks/bench_lp_nodes.py",
                          *(argv if argv is not None else sys.argv[1:])])
    jobs = [(config, nodes, history, spec["upper_bound"]) for config in args.config]
    # spawned, not forked: HiGHS's threads do not survive a fork
    with multiprocessing.get_context("spawn").Pool(min(args.parallel, len(jobs))) as pool:
        results = pool.map(replay, jobs, chunksize=1)
    version = code_version()
    for res in results:
        row = {"run": args.run, **named, **{key: spec[key] for key in ("gen", "pairs", "size_min",
                                                                       "size_max")},
               "upper_bound": spec["upper_bound"], "root": root, "build_seconds": built,
               **res, "parallel": min(args.parallel, len(jobs)), "code_version": version,
               "command": command, "date": utc_now()}
        append_jsonl(args.out, row)
        print(f"config {res['config'] or '(defaults)'}: {res['seconds']} s, "
              f"{res['masters']} masters, {res['pruned']} pruned", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
