"""Compute a certified SDP lower bound on the optimal SSE at the root (spec §3).

Prints the number of super-points s, the SDP objective, the safe lower bound (provably
<= the optimal SSE whatever the solver's accuracy), the relative KKT residuals, the
iterations and the seconds. The instance's feasibility is checked first (within a tenth
of the time, 10 s at most; undecided, the bound goes on). Exit codes: 0 bound computed
(also when the solver stopped at a limit: the bound is still valid), 1 the SDP cannot run
a few iterations in the time limit (an estimate from the size; the message says what it
needs), 2 invalid input or an unavailable backend, 3 the constraints are infeasible, 130
interrupted before the bound started. Ctrl-C during the ADMM solve, the cutting-plane loop
or the column generation stops it and reports the best safe bound so far (valid, status
'interrupted'; MOSEK, SCS and Clarabel finish their solve first); a second Ctrl-C quits
without a result.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

import numpy as np

from pcsos.bounds import BACKENDS, ENGINES, SDP_TOL, SDPModel, SDPResult, solve_sdp
from pcsos.bounds.colgen import ColGenResult, colgen_bound
from pcsos.bounds.eig import eig_methods
from pcsos.bounds.settings import AUTO_RULE, BoundSettings
from pcsos.bounds.solve import blas_threads
from pcsos.cli import Interrupts
from pcsos.cli.common import (
    add_bound_arguments,
    add_cut_arguments,
    add_instance_arguments,
    add_quiet_argument,
    bound_settings,
    cut_settings,
    describe_weights_sizes,
    load_instance,
    nonnegative_int,
    positive_int,
    positive_number,
    report_stream,
    seconds,
    sse_value,
    tolerance,
    weights_sizes,
)
from pcsos.clock import Deadline
from pcsos.cuts.loop import TIME_LIMIT, cutting_plane_loop
from pcsos.errors import InfeasibleError, PcsosError, UndecidedError
from pcsos.feasibility import check_problem
from pcsos.heuristics import run_heuristic
from pcsos.io import write_json
from pcsos.memory import memory_shortfall, sdp_memory_short
from pcsos.node import sdp_seconds
from pcsos.problem import Problem

CUT_MODES = ("all", "all,star", "pair", "triangle", "clique", "star", "none")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos bound``."""
    add_instance_arguments(parser, weights=True, sizes=True)
    add_quiet_argument(parser)
    # a metavar: argparse lists choices joined by commas, and 'all,star' read as two
    parser.add_argument("--cuts", choices=CUT_MODES, default="none", metavar="MODE",
                        help="cutting planes at the root: all (pair, triangle and clique), "
                             "all,star (and the star cuts), one family (pair, triangle, "
                             "clique or star), or none (default: none, the plain SDP)")
    add_cut_arguments(parser, children=False)
    cp = parser.add_argument_group("root options (with --cuts other than none)")
    cp.add_argument("--upper-bound", type=sse_value, default=float("inf"), metavar="SSE",
                    help="a known SSE: stop once (UB - LB)/UB <= --prune-tol (the last "
                         "solve stops there, status 'target': its SDP objective is then that "
                         "of an unconverged iterate; the safe bound is valid)")
    cp.add_argument("--prune-tol", type=tolerance, default=1e-4,
                    help="pruning tolerance for --upper-bound (default 1e-4)")
    cp.add_argument("--seed", type=nonnegative_int, default=0,
                    help="seed of the triangle visiting order (default 0)")
    parser.add_argument("--method", choices=ENGINES, default="sdp",
                        help="the bound: sdp (default: the Peng-Wei SDP, with --cuts), "
                             "colgen (the set-partitioning LP by column generation, for many "
                             "clusters in few dimensions; --upper-bound, --time-limit, "
                             "--max-iter and --seed apply) or auto (the one pcsos solve's "
                             f"default takes for the instance: {AUTO_RULE})")
    parser.add_argument("--backend", choices=BACKENDS, default="admm",
                        help="SDP solver: admm (default, built in), mosek (licensed), "
                             "scs or clarabel (via cvxpy, references)")
    parser.add_argument("--tol", type=positive_number, default=SDP_TOL,
                        help="relative KKT tolerance (default %(default)g); the bound is valid at "
                             "any tol, but may sit further than tol below the SDP "
                             "optimum (docs/safe_bound.md)")
    parser.add_argument("--max-iter", type=positive_int, default=None, metavar="N",
                        help="iteration cap of the solver (default: the backend's)")
    parser.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                        help="wall-clock limit of the solve (the bound stays valid)")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="BLAS threads for the solve (default: 1 below s = 500 super-points, "
                             "where more were slower, else as configured); with --method "
                             "colgen, threads of its exact pricing over the cluster's mean "
                             "(default: 1)")
    parser.add_argument("--eig", choices=eig_methods(), default="auto",
                        help="eigensolver of the ADMM (default: auto)")
    add_bound_arguments(parser)
    parser.add_argument("--verbose", action="store_true", help="print the solver's log")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write the results as JSON ('-' = stdout)")


def sdp_settings(args: argparse.Namespace) -> BoundSettings:
    """``pcsos bound``'s :class:`BoundSettings`: its flags, then ``--bound-option``."""
    return bound_settings(args, engine=args.method, backend=args.backend, tol=args.tol,
                          max_iter=args.max_iter, eig=args.eig, verbose=args.verbose)


def compute_bound(problem: Problem, args: argparse.Namespace,
                  deadline: Deadline) -> tuple[SDPResult, dict]:
    """The bounding step of ``pcsos bound``: the root SDP with ``args``' options, by
    ``deadline`` (``--time-limit`` from the command's start).

    Returns the result of the last solve and extra JSON fields. This is the one place the
    cutting-plane loop plugs in (``--cuts`` other than 'none').
    """
    bs = sdp_settings(args)
    threads = blas_threads(problem.s, args.threads)
    if args.cuts == "none":
        model = SDPModel.from_problem(problem)
        _not_stopped(deadline)
        res = solve_sdp(model, bs, time_limit=deadline, threads=threads)
        return _stopped(res, deadline, res.status == "time_limit"), {
            "cuts": args.cuts, "n_cuts": model.cuts.m}
    settings = cut_settings(args, args.cuts, args.prune_tol)
    _not_stopped(deadline)
    loop = cutting_plane_loop(problem, upper_bound=args.upper_bound, settings=settings,
                              root=True, bound_settings=bs, threads=threads,
                              seed=args.seed, time_limit=deadline)
    if loop.sdp is None:
        if deadline.stopped():  # Ctrl-C before the first solve ended: exit code 130
            raise KeyboardInterrupt
        raise PcsosError(f"the cutting-plane loop produced no bound: {loop.message}")
    # the best safe bound over the rounds (each is valid), with the last round's solve; a
    # stop in a solve or between rounds (separating) ends the loop as its time limit does
    stopped = deadline.stopped() and loop.flag == TIME_LIMIT
    res = _stopped(replace(loop.sdp, lower_bound=loop.lower_bound, iterations=loop.iterations,
                           seconds=loop.seconds), deadline, stopped)
    summ = loop.summary()
    return res, {"cuts": args.cuts, "n_cuts": loop.cuts.m, "cuts_by_family": summ["cuts"],
                 "cp_rounds": summ["cp_iter"], "cp_flag": loop.flag,
                 "cp_message": "stopped on request" if stopped else loop.message,
                 "avg_added": loop.avg_added, "rounds": summ["rounds"]}


def colgen_root(problem: Problem, args: argparse.Namespace, deadline: Deadline) -> ColGenResult:
    """The set-partitioning LP bound of ``pcsos bound --method colgen``: its first columns
    come from a k-means run (IPC-k-means, a tenth of the time left, 10 s at most)."""
    h = run_heuristic("ipc-kmeans", problem, seed=args.seed,
                      time_limit=deadline.within(10.0, share=0.1))
    upper = min(args.upper_bound, h.objective)
    target = (None if not math.isfinite(args.upper_bound)
              else args.upper_bound * (1 - 0.999 * args.prune_tol))
    bs = bound_settings(args)
    _not_stopped(deadline)
    res = colgen_bound(problem, labels=h.super_labels, upper_bound=upper, bound_target=target,
                       time_limit=deadline, max_iter=args.max_iter, seed=args.seed,
                       verbose=args.verbose, threads=args.threads or 1,
                       **bs.colgen_options())
    return _stopped(res, deadline, res.status == "time_limit")


def _print_instance(out, inst, info, problem: Problem) -> None:
    """The summary's first lines: the instance and its super-points."""
    print(f"instance:        n = {inst.n}, d = {inst.d}, k = {inst.k}, ml = {len(inst.ml)}, "
          f"cl = {len(inst.cl)}", file=out)
    if (extra_line := describe_weights_sizes(inst, info)) is not None:
        print(f"                 {extra_line}", file=out)
    print(f"super-points:    s = {problem.s} (cl pairs between them: {len(problem.cl)})",
          file=out)


def _instance_fields(inst, info, problem: Problem) -> dict:
    """The --json fields that describe the instance, for both methods."""
    return {"data": info["data"], "constraints": info["constraints"], "n": inst.n,
            "d": inst.d, "k": inst.k, "size": problem.s, "cl_super": len(problem.cl),
            **weights_sizes(inst, info)}


def report_colgen(args: argparse.Namespace, res: ColGenResult, problem: Problem, inst,
                  info, total: float) -> None:
    """``pcsos bound --method colgen``'s summary and --json."""
    out = report_stream(args)
    _print_instance(out, inst, info, problem)
    print(f"method:          colgen, status {res.status} ({res.message})", file=out)
    print(f"LP value:        {res.lp_value:.10g}  (the restricted master's; not a bound)"
          if math.isfinite(res.lp_value) else
          "LP value:        unknown (stopped at the target, or with the dual box binding its "
          "master)", file=out)
    print(f"safe bound:      {res.lower_bound:.10g}  (Lagrangian, from the exact pricing)",
          file=out)
    used = int(np.count_nonzero(np.asarray(res.lam) > 1e-9))
    print(f"columns:         {res.profile['master_columns']} in the master, {used} weighed by "
          f"its last solution, pricing boxes {res.pricing_boxes}", file=out)
    print(f"iterations:      {res.iterations}, {res.seconds:.2f} s solve, {total:.2f} s total",
          file=out)
    p = res.profile
    print(f"time:            master {p['master_seconds']:.2f} s ({p['master_solves']} solves, "
          f"{p['master_pivots']} HiGHS iterations), exact pricing {p['exact_seconds']:.2f} s "
          f"({p['exact_pricings']}), heuristic pricing {p['heuristic_seconds']:.2f} s",
          file=out)
    if args.json:
        write_json(args.json, {
            **_instance_fields(inst, info, problem), "method": "colgen",
            "lp_value": res.lp_value, "lower_bound": res.lower_bound,
            "columns": len(res.columns), "master_columns": res.profile["master_columns"],
            "solution_columns": used, "pricing_boxes": res.pricing_boxes,
            "iterations": res.iterations, "seconds": res.seconds, "total_seconds": total,
            "status": res.status, "message": res.message, "profile": res.profile,
            "history": [list(h) for h in res.history]})


def _sdp_fits(problem: Problem, bs, deadline: Deadline) -> None:
    """Refuse (UndecidedError) an SDP that cannot run in the time or the memory left."""
    # a bound needs an iteration and a safe bound, three s x s eigendecompositions at least:
    # where those cannot end in the time left, say so before starting (s = 5 000 with
    # --time-limit 5 ran 29 s and took 4 GB), as the tree refuses such a root
    cpu = bs.on_cpu()
    need = sdp_seconds(problem.s, iterations=3) if cpu else 0.0
    if need > deadline.remaining():
        raise UndecidedError(
            f"the SDP at s = {problem.s} super-points needs at least {need:.0f} s, more than "
            f"the {deadline.remaining():.0f} s left: raise --time-limit, or bound subsets "
            "of the data with pcsos certify")
    short = sdp_memory_short(problem.s, bs)
    if short is not None:  # the OS would kill the process mid-solve, report and all
        raise UndecidedError(
            f"the SDP at s = {problem.s} super-points needs about {memory_shortfall(*short)}"
            + (f" with --backend {bs.backend}: use --backend admm, " if bs.backend != "admm"
               else ": use ") + "--method colgen, or bound subsets of the data with pcsos "
            "certify")


def _not_stopped(deadline: Deadline) -> None:
    """A stop request before the bound's solve began: nothing to report (exit code 130)."""
    if deadline.stopped():
        raise KeyboardInterrupt


def _stopped(res, deadline: Deadline, ended_by_time: bool):
    """``res`` with status 'interrupted' where a stop request ended it (its solve, or the
    cutting-plane loop, reports that as its time limit); its bound is valid either way."""
    if ended_by_time and deadline.stopped():
        return replace(res, status="interrupted",
                       message="stopped on request: the best safe bound so far")
    return res


def run(args: argparse.Namespace) -> int:
    """Load the instance, bound it, print the summary, write --json; returns 0."""
    deadline = Deadline(args.time_limit)  # the limit covers loading too
    inst, info = load_instance(args)
    problem = Problem.from_instance(inst)
    # --bound-option engine=... may name the method too (it wins, as every --bound-option)
    # the SDP's own flags (--backend, --eig, ...) are checked where the SDP runs
    method = bound_settings(args, engine=args.method).engine_of(inst)
    with Interrupts.armed_for(args, "bound", args.quiet, abort=False,
                              keeps="the safe bound so far") as intr:
        work = deadline.within(stop=intr.stop)
        # a bound of an infeasible instance is valid but says nothing: exit 3 naming the
        # pairs, as pcsos check does (a cannot-link clique larger than k ran 20 000
        # iterations first)
        fz = check_problem(problem, time_limit=work.within(10.0, share=0.1))
        _not_stopped(work)
        if fz.feasible is False:
            raise InfeasibleError(fz.message, reason=fz.reason, pairs=fz.pairs)
        if method == "colgen":
            res = colgen_root(problem, args, work)
        else:
            _sdp_fits(problem, sdp_settings(args), deadline)  # the limit's time, not a stop
            res, extra = compute_bound(problem, args, work)
    total = deadline.elapsed()
    if method == "colgen":
        report_colgen(args, res, problem, inst, info, total)
        return 0
    rel_gap = ((res.sdp_value - res.lower_bound) / abs(res.sdp_value)
               if res.sdp_value else float("nan"))
    out = report_stream(args)
    _print_instance(out, inst, info, problem)
    print(f"backend:         {res.backend}, status {res.status} ({res.message})", file=out)
    print(f"SDP objective:   {res.sdp_value:.10g}", file=out)
    print(f"safe bound:      {res.lower_bound:.10g}  (relative gap to the objective "
          f"{rel_gap:.2e})", file=out)
    print(f"KKT residuals:   primal {res.primal_residual:.2e}, dual {res.dual_residual:.2e}",
          file=out)
    print(f"device:          {res.device}", file=out)
    print(f"iterations:      {res.iterations}, {res.seconds:.2f} s solve, {total:.2f} s total",
          file=out)
    if args.json:
        write_json(args.json, {
            **_instance_fields(inst, info, problem), "sdp_value": res.sdp_value,
            "dual_value": res.dual_value,
            "lower_bound": res.lower_bound, "relative_gap": rel_gap,
            "primal_residual": res.primal_residual, "dual_residual": res.dual_residual,
            "iterations": res.iterations, "seconds": res.seconds, "total_seconds": total,
            "status": res.status, "backend": res.backend, "device": res.device,
            "message": res.message, "tol": args.tol, **extra})
    return 0
