"""A certified gap for instances too large for one SDP: bound subsets of the data and add.

Splits the points into subsets of at most about --subset-size points, as many as needed
rounded up to a multiple of --workers (each must-link group whole, each subset a share of
every cluster of the clustering), bounds each subset by its root SDP with cuts, --workers
at once in as many processes (or on --dask), and adds the bounds: a valid lower bound of
the whole (proof in docs/decomposition.md). Certifies --labels, or the clustering of
--heuristic (default s-mdeclust, within a quarter of --time-limit). Prints the bound, the
objective and the gap; --json FILE writes them with the partition and the per-subset
bounds. Exit codes: 0 done, 2 invalid input, 3 infeasible constraints.
"""

from __future__ import annotations

import argparse
import sys
import time

from pcsos.cli.common import (
    add_instance_arguments,
    add_parallel_arguments,
    load_instance,
    report_stream,
    write_json,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos certify``."""
    add_instance_arguments(parser)
    parser.add_argument("--labels", dest="label_file", metavar="FILE", default=None,
                        help="the clustering to certify, one label per line (default: the "
                             "heuristic's)")
    parser.add_argument("--heuristic", default="s-mdeclust", metavar="NAME",
                        help="makes the clustering when --labels is not given "
                             "(default: s-mdeclust)")
    parser.add_argument("--subset-size", type=int, default=None, metavar="M",
                        help="points per subset (default: 30 per cluster, or 50 when the "
                             "time limit gives each subset enough time; 300 to 1000; "
                             "larger: a stronger bound, slower subsets)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="for the whole run (default: none)")
    add_parallel_arguments(parser, what="subsets", where="bounded at once, each in its own "
                           "process")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write the result with the partition as JSON ('-' = stdout)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")


def run(args: argparse.Namespace) -> int:
    """Certify and report."""
    from pcsos.bounds.decomposition import certify
    from pcsos.errors import InputError
    from pcsos.io import read_labels

    if args.subset_size is not None and args.subset_size < 1:
        raise InputError(f"--subset-size must be >= 1, got {args.subset_size}",
                         source="--subset-size")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be >= 1, got {args.workers}", source="--workers")
    t0 = time.perf_counter()
    inst, info = load_instance(args)
    labels = read_labels(args.label_file) if args.label_file else None
    out = report_stream(args.json)

    def progress(stage, done, total, bound):
        if args.quiet:
            return
        if stage == "heuristic":
            print(f"pcsos certify: {args.heuristic} for the clustering "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
        else:
            print(f"pcsos certify: {done} of {total} subsets bounded, sum {bound:.6g} "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)

    time_limit = None if args.time_limit is None else max(
        0.0, args.time_limit - (time.perf_counter() - t0))
    res = certify(inst.X, inst.k, inst.ml, inst.cl, labels, subset_size=args.subset_size,
                  time_limit=time_limit, workers=args.workers, dask=args.dask,
                  heuristic=args.heuristic,
                  seed=args.seed, progress=progress)
    if not args.quiet:
        print(f"lower bound     {res.lower_bound:.10g}  (certified: the optimum is at least "
              f"this)", file=out)
        print(f"objective       {res.objective:.10g}  ({res.heuristic})", file=out)
        print(f"gap             {100 * res.gap:.4f}%", file=out)
        print(f"spectral floor  {res.spectral_floor:.10g}", file=out)
        print(f"subsets         {res.message}", file=out)
        print(f"time            {time.perf_counter() - t0:.1f} s", file=out)
    if args.json is not None:
        write_json(args.json, {"data": info["data"], "constraints": info["constraints"],
                               "n": inst.n, "k": inst.k,
                               **res.to_dict()})
    return 0
