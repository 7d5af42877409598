"""Run one upper-bound heuristic on an instance and report its clustering.

Progress goes to stderr (what the heuristic reports, at most every 2 seconds; s-mdeclust:
its initial population and generations with the best objective, and always its first
generation, when the population is complete) unless -q. --time-limit covers the whole
command, loading and set-up included. Ctrl-C (or SIGTERM) stops the heuristic: its best
clustering so far is reported and written with status 'interrupted' (exit code 0); a second
Ctrl-C quits at once (130).

Exit codes: 0 a clustering was found (interrupted or not), 130 interrupted before one was
found, 1 none was found (e.g. COP-k-means failed or the
time limit hit first; a normal outcome, reported with status 'no_solution'), 2 invalid
input or an unknown heuristic, 3 the instance is infeasible (found by preprocessing or
proved by the heuristic's assignment problem).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from pcsos.cli import Interrupts
from pcsos.cli.common import (
    add_instance_arguments,
    add_quiet_argument,
    describe_weights_sizes,
    load_instance,
    nonnegative_int,
    parse_options,
    report_stream,
    seconds,
    weights_sizes,
)
from pcsos.clock import Deadline
from pcsos.errors import InfeasibleError, PcsosError
from pcsos.heuristics import available_heuristics, check_options, run_heuristic
from pcsos.heuristics.metrics import adjusted_rand_index
from pcsos.io import write_json, write_result_matrix
from pcsos.problem import Problem


class NoSolutionError(PcsosError):
    """The heuristic found no clustering (exit code 1); the report is still written."""

    exit_code = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos heuristic``."""
    parser.add_argument("name", metavar="NAME",
                        help="heuristic: " + ", ".join(available_heuristics()))
    add_instance_arguments(parser, weights=True, sizes=True)
    # 0 as in every other command: a run repeats from its own JSON, which records it
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="random seed (default: 0)")
    parser.add_argument("--time-limit", metavar="SECONDS", type=seconds, default=None,
                        help="wall-clock limit of the heuristic (default: none)")
    parser.add_argument("--option", "-o", metavar="KEY=VALUE", action="append", default=[],
                        help="a heuristic option, e.g. -o n_init=100 -o variant=SMG-MDE "
                             "(VALUE is read as JSON when it parses, else as a string)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="write the report as JSON ('-' = stdout)")
    parser.add_argument("--result", metavar="FILE", default=None,
                        help="write the n x k 0/1 assignment matrix (pc-sos-sdp result format)")
    add_quiet_argument(parser)


class _Progress:
    """Progress lines on stderr: what the heuristic reports, at most every 2 seconds, and
    the first generation (the initial population is complete) whenever it comes."""

    generation_said = False

    def __init__(self, name: str, t0: float, interval: float = 2.0):
        self.name = name
        self.t0 = t0
        self.interval = interval
        self.last = -math.inf

    def line(self, text: str) -> None:
        print(f"pcsos heuristic {self.name}: {text} ({time.perf_counter() - self.t0:.1f} s)",
              file=sys.stderr, flush=True)
        self.last = time.perf_counter()

    def __call__(self, info: dict) -> None:
        stage = info.get("stage", "")
        # the first generation says that a clustering exists: worth a line at once
        first = stage == "generation" and not self.generation_said
        if not first and time.perf_counter() - self.last < self.interval:
            return
        if stage == "generation":
            self.generation_said = True
        if stage == "population":
            what = f"initial population {info['members']} of {info['of']}"
        elif stage == "generation":
            what = f"generation {info['generation']}"
        else:
            what = stage or "running"
        if info.get("best") is not None:
            what += f", best {info['best']:.10g}"
        self.line(what)


def run(args: argparse.Namespace) -> int:
    """``pcsos heuristic``: load, run, print a summary, write --json / --result."""
    t0 = time.perf_counter()
    deadline = Deadline(args.time_limit)  # the time limit covers loading and set-up too
    options = parse_options(args.option, "--option")
    # before the call: an option named as one of its own arguments (-o seed=3) would be
    # Python's TypeError there
    check_options(args.name, options, "--option")
    inst, info = load_instance(args)
    problem = Problem.from_instance(inst)
    printer = None if args.quiet else _Progress(args.name, t0)
    if printer is not None:
        printer.line(f"n = {inst.n}, k = {inst.k}, {problem.s} groups, "
                     f"{len(problem.cl)} cannot-link pairs between them")
        if (extra := describe_weights_sizes(inst, info)) is not None:
            printer.line(extra)
    with Interrupts.armed_for(args, "heuristic", args.quiet, abort=False,
                              keeps="the best clustering so far") as intr:
        res = run_heuristic(args.name, problem, seed=args.seed, time_limit=deadline,
                            progress=printer, stop_event=intr.stop, **options)
    interrupted = bool(res.stats.get("interrupted"))
    if interrupted and res.status == "no_solution":
        raise KeyboardInterrupt  # nothing found yet: exit code 130, as before the run
    status = "interrupted" if interrupted and res.status == "found" else res.status
    if status == "interrupted":
        res.message = "stopped by a signal: the best clustering found so far" + (
            f"; {res.message}" if res.message else "")
    rep = {
        "heuristic": args.name,
        "status": status,
        "interrupted": interrupted,
        "objective": res.objective,
        "seconds": res.stats.get("seconds"),
        "n": inst.n, "d": inst.d, "k": inst.k,
        "ml": len(inst.ml), "cl": len(inst.cl), "super_points": problem.s,
        "data": info["data"], "constraints": info["constraints"],
        **weights_sizes(inst, info),
        "seed": args.seed, "time_limit": args.time_limit, "options": options,
        "message": res.message,
        "stats": res.stats,
        "labels": res.labels,
    }
    classes = info.get("classes")
    if classes is not None and res.labels is not None:
        rep["ari"] = adjusted_rand_index(classes, res.labels)
    out = report_stream(args)
    print(f"heuristic   {args.name}", file=out)
    print(f"status      {status}" + (f" ({res.message})" if res.message else ""), file=out)
    print(f"objective   {res.objective:.10g}", file=out)
    print(f"seconds     {rep['seconds']:.3f}", file=out)
    if "ari" in rep:
        print(f"ARI         {rep['ari']:.4f} against the class column", file=out)
    if args.json is not None:
        write_json(args.json, rep)
    if res.status == "infeasible":
        raise InfeasibleError(res.message or "the heuristic proved the instance infeasible",
                              reason="assignment_infeasible")
    if res.status != "found":
        raise NoSolutionError(f"{args.name} found no clustering: {res.message}")
    if args.result is not None:
        write_result_matrix(args.result, res.labels, inst.k)
    return 0
