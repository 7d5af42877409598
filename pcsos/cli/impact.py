"""Which pairs cost the most: each pair's estimated cost to the optimum, ranked.

For every must-link / cannot-link pair, how much the optimum would drop without it
(``score``, a proven lower bound on that drop given the clustering scored against; see
``docs/impact.md``), highest first. A wrong pair usually ranks near the top. Prints the
top pairs; ``--json FILE`` writes them all (a ``pairs`` list of objects with ``i``, ``j``,
``type``, ``score``, ``drop`` and ``dual``, highest score first). Ctrl-C (or SIGTERM, or
the end of --time-limit, which counts the whole command) stops it with the pairs scored so
far, reported and written as usual with ``interrupted: true``; a second Ctrl-C quits at
once (130). Exit codes: 0 done (interrupted or not), 1 no clustering to score against found
within the first solve's half of --time-limit (or an internal error), 2 invalid input, 3
infeasible constraints, 130 interrupted before such a clustering was found.
"""

from __future__ import annotations

import argparse
import sys

from pcsos.cli import Interrupts
from pcsos.cli.common import (
    add_instance_arguments,
    add_quiet_argument,
    load_instance,
    nonnegative_int,
    positive_int,
    report_stream,
    seconds,
)
from pcsos.errors import UndecidedError
from pcsos.io import read_labels, write_json
from pcsos.problem import check_start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos impact``."""
    add_instance_arguments(parser)
    parser.add_argument("--labels", dest="label_file", metavar="FILE", default=None,
                        help="the clustering to score against, one label per line "
                             "(default: the optimum, solved first)")
    parser.add_argument("--heuristic", default="ipc-kmeans", metavar="NAME",
                        help="re-solves each instance without one pair (default: ipc-kmeans)")
    parser.add_argument("--exact", action="store_true",
                        help="re-solve each instance without one pair exactly (slow)")
    parser.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                        help="for the whole command: the first solve takes at most half, "
                             "each re-solve an equal share of the rest; when it is spent, "
                             "the pairs scored so far are reported (interrupted: true)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default: 0)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="nodes solved at once by the first solve and by --exact's "
                             "re-solves (default: CPU count; 1 makes a run reproducible)")
    parser.add_argument("--top", type=nonnegative_int, default=20, metavar="N",
                        help="pairs printed (default: 20; --json has them all)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write every pair's scores as JSON ('-' = stdout)")
    add_quiet_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Score the pairs and report them."""
    from pcsos.pair_impact import impact  # lazy: start-up (the solver loads for this command only)

    inst, info = load_instance(args)
    # checked here, so that an error names the file, not the API's 'labels'
    labels = (check_start(inst, read_labels(args.label_file), source=args.label_file)
              if args.label_file else None)
    out = report_stream(args)

    def progress(done: int, total: int) -> None:
        # the first pair too: from then on a Ctrl-C keeps something
        if not args.quiet and (done in (1, total) or done % max(1, total // 10) == 0):
            print(f"pcsos impact: {done} of {total} pairs scored", file=sys.stderr,
                  flush=True)

    with Interrupts.armed_for(args, "impact", args.quiet, abort=False,
                              keeps="the pairs scored so far") as intr:
        try:
            res = impact(inst.X, inst.k, inst.ml, inst.cl, labels, heuristic=args.heuristic,
                         exact=args.exact, seed=args.seed, time_limit=args.time_limit,
                         progress=progress, stop_event=intr.stop,
                         workers=args.workers)
        except UndecidedError:
            if intr.stop.is_set():  # stopped before a clustering existed: exit code 130
                raise KeyboardInterrupt from None
            raise
    if not args.quiet:
        print(f"clustering value {res.objective:.10g} ("
              f"{'optimal' if res.optimal else 'not certified optimal'}), "
              f"{len(res.pairs)} pairs, {res.seconds:.1f} s", file=out)
        for note in res.notes:
            print(f"note: {note}", file=out)
        print(f"{'rank':>4} {'type':>4} {'i':>6} {'j':>6} {'score':>14} {'dual':>14}",
              file=out)
        for r, p in enumerate(res.pairs[:max(0, args.top)], 1):
            print(f"{r:4d} {p.type:>4} {p.i:6d} {p.j:6d} {p.score:14.6g} {p.dual:14.6g}",
                  file=out)
    if args.json is not None:
        write_json(args.json, {"data": info["data"], "constraints": info["constraints"],
                               "k": inst.k, **res.to_dict()})
    return 0
