"""A certified gap for instances too large for one SDP: bound subsets of the data and add.

Splits the points into subsets of at most about --subset-size points, as many as needed
rounded up to a multiple of --workers (each must-link group whole, each subset a share of
every cluster of the clustering), bounds each subset by its root SDP with cuts, --workers
at once in as many processes (or on --dask), and adds the bounds: a valid lower bound of
the whole (proof in docs/decomposition.md). Certifies --labels, or the clustering of
--heuristic (default s-mdeclust, within a quarter of --time-limit). Prints the bound, the
objective and the gap; --json FILE writes them with the partition and the per-subset
bounds. Ctrl-C (or SIGTERM) once the clustering exists stops the bounding: the subsets
bounded so far count with their bounds, the running ones with the safe bound of their SDP's
last iterate, the others with their spectral floor, a valid bound in all (the report and
--json name the subsets cut short); a second Ctrl-C quits at once (130). Exit codes: 0 done
(interrupted or not), 1 no clustering found within --time-limit (or an internal error), 2
invalid input, 3 infeasible constraints, 130 interrupted before a clustering was found.
"""

from __future__ import annotations

import argparse
import sys
import time

from pcsos.cli import Interrupts
from pcsos.cli.common import (
    add_bound_arguments,
    add_instance_arguments,
    add_parallel_arguments,
    add_quiet_argument,
    bound_settings,
    load_instance,
    nonnegative_int,
    report_stream,
    seconds,
)
from pcsos.clock import Deadline
from pcsos.errors import InputError, UndecidedError
from pcsos.io import read_labels, write_json
from pcsos.problem import check_start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos certify``."""
    add_instance_arguments(parser, weights=True)
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
    parser.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                        help="for the whole run (default: none)")
    add_parallel_arguments(parser, what="subsets", where="bounded at once, each in its own "
                           "process")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default: 0)")
    add_bound_arguments(parser)
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write the result with the partition as JSON ('-' = stdout)")
    add_quiet_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Certify and report."""
    # lazy: start-up (the solver loads for this command only)
    from pcsos.certification import certify

    if args.subset_size is not None and args.subset_size < 1:
        raise InputError(f"--subset-size must be >= 1, got {args.subset_size}",
                         source="--subset-size")
    t0 = time.perf_counter()
    time_limit = Deadline(args.time_limit)  # it covers loading too
    inst, info = load_instance(args)
    # checked here, so that an error names the file, not the API's 'labels'
    labels = (check_start(inst, read_labels(args.label_file), source=args.label_file)
              if args.label_file else None)
    out = report_stream(args)

    def progress(stage, done, total, bound):
        if args.quiet:
            return
        if stage == "heuristic":
            print(f"pcsos certify: {args.heuristic} for the clustering "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
        elif stage == "clustering":
            print(f"pcsos certify: clustering of objective {bound:.10g}; bounding {total} "
                  f"subsets ({time.perf_counter() - t0:.1f} s)", file=sys.stderr,
                  flush=True)
        elif stage == "wider":
            print(f"pcsos certify: a second pass on {total} larger subsets "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
        else:
            print(f"pcsos certify: {done} of {total} subsets bounded, sum {bound:.6g} "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)

    with Interrupts.armed_for(args, "certify", args.quiet, abort=False,
                              keeps="the clustering and the bounds so far") as intr:
        try:
            res = certify(inst.X, inst.k, inst.ml, inst.cl, labels, sample_weight=inst.weights,
                          subset_size=args.subset_size, time_limit=time_limit,
                          workers=args.workers, dask=args.dask, heuristic=args.heuristic,
                          seed=args.seed, progress=progress, stop_event=intr.stop,
                          bound_settings=bound_settings(args))
        except UndecidedError:
            if intr.stop.is_set():  # stopped before a clustering existed: exit code 130
                raise KeyboardInterrupt from None
            raise
    if not args.quiet:
        cut = res.cut_short
        if res.interrupted:
            which = f" ({', '.join(map(str, cut))})" if cut else ""
            print(f"status          interrupted: {len(cut)} of {len(res.subsets)} subsets "
                  f"cut short{which}, each with a valid bound", file=out)
        else:
            print("status          done", file=out)
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
