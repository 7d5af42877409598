"""Node-effort policies compared from one root (issue 32: what a child's effort buys).

Solves the root of one shared instance once (the checkpoint ``--root``, reused when it
exists), then resumes the tree from it once per policy, with that policy's changes to the
cutting-plane settings, until ``--nodes`` nodes (the root included) or ``--seconds`` of
tree, and appends one JSON line per policy to ``--out``: the certified global bound, the
incumbent, nodes, seconds and every node's log row. All policies start from the same
root, bounds and open nodes, so their global bounds after the same time or nodes compare.

    python benchmarks/bench_node_effort.py --instance ECG5000/ml_0_cl_150_3 \\
        --policy default --policy no_tail_off:tail_off=None \\
        --policy tight_rounds:loose_tol=None --seconds 600 --nodes 200

A policy is ``NAME`` (the defaults) or ``NAME:FIELD=VALUE[,FIELD=VALUE...]`` with fields of
:class:`pcsos.cuts.loop.CuttingPlaneSettings` (values read as Python literals) or SDP
options prefixed ``sdp_`` (``sdp_tol``, ``sdp_polish``).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import threading
import time

from instances import (
    RESULTS,
    append_jsonl,
    code_version,
    constraint_path,
    literal_settings,
    load_instance,
)

from pcsos.api import solve_instance


def parse_policy(text: str) -> tuple[str, dict, dict]:
    """``NAME[:FIELD=VALUE,...]`` -> (name, cutting-plane changes, SDP options: the fields
    prefixed ``sdp_``, without the prefix)."""
    name, _, rest = text.partition(":")
    cp, sdp = {}, {}
    for key, value in literal_settings(filter(None, rest.split(","))).items():
        if key.startswith("sdp_"):
            sdp[key.removeprefix("sdp_")] = value
        else:
            cp[key] = value
    return name, cp, sdp


def solve(inst, args, seconds: float | None, **kw):
    rows: list[dict] = []
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set) if seconds else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    t0 = time.time()
    res = solve_instance(inst, workers=args.workers, seed=0, time_limit=args.time_limit,
                         callback=rows.append, stop_event=stop, **kw)
    if timer is not None:
        timer.cancel()
    return res, rows, time.time() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", required=True, help="dataset/ml_A_cl_B_S")
    ap.add_argument("--policy", action="append", required=True)
    ap.add_argument("--nodes", type=int, default=200, help="nodes in all, the root included")
    ap.add_argument("--seconds", type=float, default=None, help="seconds of tree per policy")
    ap.add_argument("--time-limit", type=float, default=3000.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--root", type=pathlib.Path, default=None,
                    help="root checkpoint (default: /tmp/<dataset>_<instance>_<commit>_root.ckpt)")
    ap.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_node_effort.jsonl")
    args = ap.parse_args(argv)
    dataset, stem = args.instance.split("/")
    inst = load_instance(dataset, constraint_path(dataset, stem))

    code = code_version()
    # one root per code version: a root of other code would start every policy elsewhere
    root = args.root or pathlib.Path(f"/tmp/{dataset}_{stem}_{code.split()[0]}_root.ckpt")
    if not root.exists():
        res, _rows, sec = solve(inst, args, None, max_nodes=1, checkpoint=str(root))
        print(f"root: bound {res.lower_bound:.6f}, incumbent {res.objective:.6f}, "
              f"{sec:.1f} s", flush=True)
    for text in args.policy:
        name, cp, sdp = parse_policy(text)
        res, rows, sec = solve(inst, args, args.seconds, max_nodes=args.nodes, resume=str(root),
                               cp_settings=cp, bound_settings=sdp)
        row = {"instance": args.instance, "policy": name, "cp_settings": cp, "sdp": sdp,
               "nodes": res.nodes, "bound": res.lower_bound, "objective": res.objective,
               "gap": res.gap, "status": res.status, "seconds": sec, "code": code,
               "command": " ".join(["python", "benchmarks/bench_node_effort.py",
                                    *(argv if argv is not None else sys.argv[1:])]),
               "node_rows": rows}
        append_jsonl(args.out, row)
        print(f"{name}: bound {res.lower_bound:.6f} after {res.nodes} nodes, {sec:.1f} s "
              f"({res.status})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
