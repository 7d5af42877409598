"""Subsets bounded on two threads of one process against two processes.

Takes subsets 0 and 1 of :func:`pcsos.decomposition.partition` (subsets of
``--subset-size`` points, reference: Lloyd's iterations from the true classes' means) of a
synthetic set of :func:`bench_scale.synthetic`, and bounds them with
:func:`pcsos.decomposition.decomposition_bound` for ``--time-limit`` seconds each:
``threads`` runs both in one call on a pool of two threads (as ``certify`` did before its
worker processes); ``process I`` runs subset I alone (start two at once for the
comparison). Appends one JSON line per subset to ``--out``: its share of the reference,
its bound and how far below the share.

Example (the comparison in docs/decomposition.md, run one after the other)::

    python benchmarks/bench_subset_threads.py threads
    python benchmarks/bench_subset_threads.py process 0 &
    python benchmarks/bench_subset_threads.py process 1
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

from bench_certify import reference_instance
from instances import RESULTS, append_jsonl


def main() -> int:
    import numpy as np

    from pcsos.decomposition import _sub_instance, decomposition_bound, partition
    from pcsos.problem import sse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["threads", "process"])
    ap.add_argument("index", nargs="?", type=int, default=0)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--subset-size", type=int, default=600)
    ap.add_argument("--time-limit", type=float, default=200.0)
    ap.add_argument("--out", default=str(RESULTS / "bench_subset_threads.jsonl"))
    args = ap.parse_args()
    _, inst, ref = reference_instance(args.n, args.k, 1000, 0)
    subs = partition(inst, ref, args.subset_size, seed=0)
    which = [0, 1] if args.mode == "threads" else [args.index]
    pts = np.concatenate([subs[i] for i in which])
    sub = _sub_instance(inst, pts)  # the chosen subsets as one instance, bounded apart
    local = np.split(np.arange(len(pts)), np.cumsum([len(subs[i]) for i in which])[:-1])
    lab = ref[pts]
    # threads: an explicit pool, since decomposition_bound's own is one of processes
    with ThreadPoolExecutor(len(which)) as pool:
        _, parts = decomposition_bound(sub, local, time_limit=args.time_limit,
                                       workers=len(which), executor=pool, labels=lab)
    for i, p, b in zip(which, local, parts):
        share = sse(sub.X[p], lab[p])
        row = {"mode": args.mode, "subset": i, "n": args.n, "k": args.k,
               "subset_size": args.subset_size, "time_limit": args.time_limit,
               "share": share, "lower_bound": b.lower_bound,
               "below_share": (share - b.lower_bound) / share, "seconds": b.seconds,
               "message": b.message, "command": "python " + " ".join(sys.argv)}
        append_jsonl(args.out, row)
        print(f"{args.mode} subset {i}: {100 * row['below_share']:.2f} % below its share",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
