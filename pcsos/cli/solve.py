"""Solve constrained MSSC to certified optimality by SDP branch-and-cut.

Prints the readers' notes (on stderr) and a MIP-style progress table (nodes, open nodes,
best bound, incumbent, gap, what the running node does), from the first second on, unless
-q. Ctrl-C (or SIGTERM) stops the search: the best clustering found so far is printed and
written with its certified gap, status 'interrupted'; a second Ctrl-C stops at once
(running nodes are abandoned, their bounds stay in the gap); a third quits without a
result (exit code 130). A time limit or a node limit behaves like the first Ctrl-C.
Output paths are checked before any work starts.

Exit codes: 0 solved, or stopped at a limit / interrupted (status and certified gap in the
output); 2 invalid input; 3 infeasible constraints (the message names the conflicting
pairs); 130 interrupted before any clustering was found; 1 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

from pcsos.bounds.settings import AUTO_RULE, ENGINES, BoundSettings
from pcsos.bounds.settings import BACKENDS as SDP_BACKENDS
from pcsos.branching import RULES
from pcsos.cli import Interrupts
from pcsos.cli.common import (
    add_bound_arguments,
    add_cut_arguments,
    add_instance_arguments,
    add_parallel_arguments,
    add_quiet_argument,
    bound_settings,
    cut_settings,
    describe_weights_sizes,
    load_instance,
    nonnegative_int,
    positive_int,
    positive_number,
    positive_seconds,
    report_stream,
    seconds,
    tolerance,
    weights_sizes,
)
from pcsos.cuts.loop import TREE_CUT_DEFAULTS
from pcsos.errors import InfeasibleError
from pcsos.io import read_labels, write_labels, write_result_matrix
from pcsos.log import GapLog, JsonlLog, ProgressPrinter
from pcsos.options import SolverOptions, resolve_workers
from pcsos.problem import check_start

_ORDERS = {"best": 0, "depth": 1, "breadth": 2}
#: the solver's defaults, which the arguments' defaults are (tests/test_options.py pins it)
_DEFAULTS = SolverOptions()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos solve``."""
    add_instance_arguments(parser, weights=True, sizes=True)
    out = parser.add_argument_group("output")
    out.add_argument("--log", metavar="FILE", help="write the pc-sos-sdp gap log (header, one "
                     "row per node, footer)")
    out.add_argument("--jsonl", metavar="FILE", help="write one JSON object per node")
    out.add_argument("--result", metavar="FILE", help="write the n x k 0/1 assignment matrix "
                     "(pc-sos-sdp result format)")
    out.add_argument("--labels", metavar="FILE", help="write one label per line")
    out.add_argument("--json", metavar="FILE", help="write the result as JSON ('-' = stdout)")
    add_quiet_argument(out)
    out.add_argument("--checkpoint", metavar="FILE",
                     help="write the open nodes, incumbent and bounds to FILE (atomically) "
                          "every --checkpoint-every seconds and at the end, to --resume later")
    out.add_argument("--checkpoint-every", type=positive_seconds, default=60.0, metavar="SECONDS",
                     help="seconds between checkpoints (default: 60)")
    out.add_argument("--resume", metavar="FILE",
                     help="go on from a checkpoint of the same data and pairs (nodes and "
                          "time are summed; --time-limit applies to this run)")
    lim = parser.add_argument_group("limits")
    lim.add_argument("--tol", type=tolerance, default=_DEFAULTS.tol,
                     help="relative gap tolerance (UB - LB) / UB (default: %(default)g)")
    lim.add_argument("--abs-tol", type=float, default=None, metavar="TOL",
                     help="absolute gap tolerance UB - LB, in units of the SSE; closes a zero "
                          "or tiny optimum (default: 64 eps times the data's total scatter, "
                          "the SSE of one cluster, plus a floor of rounding; 0 turns it off)")
    lim.add_argument("--max-nodes", type=positive_int, default=None, metavar="N",
                     help="stop after N nodes (default: none; the paper used 200)")
    lim.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                     help="stop after this many seconds (default: none)")
    alg = parser.add_argument_group("algorithm")
    add_parallel_arguments(alg, what="nodes", where="processed in parallel")
    alg.add_argument("--threads", type=positive_int, default=None,
                     help="BLAS threads per worker (default: 1; more pays only on an "
                          "otherwise idle machine)")
    alg.add_argument("--root-threads", type=positive_int, default=None,
                     help="BLAS threads for the root node, which runs alone (default: "
                          "--threads; more pays only on an otherwise idle machine); the "
                          "root's LP prices over the cluster's mean in max(this, "
                          "--workers) threads, at most the CPU count")
    alg.add_argument("--order", choices=sorted(_ORDERS), default=_DEFAULTS.order,
                     help="visiting order (default: best-first, ties deeper first)")
    alg.add_argument("--branching", choices=RULES, default=_DEFAULTS.branching,
                     help="the pair a node branches on: pseudocost (of the paper's best "
                          "pairs, the one whose points' earlier children gained most) or "
                          "paper (PC-SOS-SDP's score; default: %(default)s)")
    alg.add_argument("--heuristic", default=_DEFAULTS.heuristic, metavar="NAME",
                     help="upper-bound heuristic run at every node (default: %(default)s)")
    alg.add_argument("--root-heuristic", default=_DEFAULTS.root_heuristic, metavar="NAME",
                     help="heuristic run before the root's bound, within a quarter of the "
                          "time left (default: %(default)s; none: skip it)")
    alg.add_argument("--bound", choices=ENGINES, default=BoundSettings.engine,
                     help="the bound of every node: sdp (the Peng-Wei SDP with cuts), colgen "
                          "(the set-partitioning LP by column generation, for many clusters "
                          f"in few dimensions) or auto (default: {AUTO_RULE})")
    alg.add_argument("--sdp-backend", default=BoundSettings.backend, metavar="NAME",
                     choices=SDP_BACKENDS,  # argparse names the flag and the choices
                     help="SDP backend: admm (default), mosek, scs, clarabel")
    add_bound_arguments(alg)
    alg.add_argument("--sdp-tol", type=positive_number, default=BoundSettings.tol,
                     help="relative KKT tolerance of the SDP solver (default: %(default)g)")
    alg.add_argument("--cuts", default=TREE_CUT_DEFAULTS["families"], metavar="FAMILIES",
                     help="cut families: a comma list of all (pair, triangle and clique), "
                          "pair, triangle, clique, star, or none (default: %(default)s)")
    alg.add_argument("--feasibility-backend", choices=("highs", "gurobi"),
                     default=_DEFAULTS.feasibility_backend,
                     help="ILP backend of the node feasibility checks (default: highs)")
    alg.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default: 0)")
    alg.add_argument("--init-labels", metavar="FILE",
                     help="a clustering to start from, one integer label per line (k distinct "
                          "values, every pair obeyed): the first incumbent")
    add_cut_arguments(parser, children=True)


def solver_options(args: argparse.Namespace) -> SolverOptions:
    """The :class:`SolverOptions` of the command line (the one place it is built)."""
    return SolverOptions(
        tol=args.tol, abs_tol=args.abs_tol,
        max_nodes=args.max_nodes, time_limit=args.time_limit,
        # with --dask, None: the cluster's threads
        workers=args.workers if args.dask else resolve_workers(args.workers),
        threads=args.threads,
        root_threads=args.root_threads, heuristic=args.heuristic,
        root_heuristic=None if args.root_heuristic == "none" else args.root_heuristic,
        bound_settings=bound_settings(args, engine=args.bound, backend=args.sdp_backend,
                                      tol=args.sdp_tol),
        # SolverOptions sets the loop's prune tolerances to --tol and --abs-tol itself (and
        # says 'tol' when --tol is bad, not the loop's 'prune_tol')
        cp_settings=cut_settings(args, args.cuts, 0.0),
        feasibility_backend=args.feasibility_backend, seed=args.seed, order=args.order,
        branching=args.branching)


def _settings(opts: SolverOptions, args: argparse.Namespace, inst) -> dict:
    """The log header's settings: the reference program's keys, then pcsos's own."""
    cp, bs = opts.cp_settings, opts.bound_settings
    threads = opts.threads or 1
    return {
        "BRANCH_AND_BOUND_TOL": opts.tol,
        "BRANCH_AND_BOUND_ABS_TOL": opts.abs_tol,
        "BRANCH_AND_BOUND_PARALLEL": opts.workers or "the Dask cluster's threads",
        "DASK": args.dask or "none",
        "BRANCH_AND_BOUND_MAX_NODES": opts.max_nodes if opts.max_nodes else "none",
        "BRANCH_AND_BOUND_VISITING_STRATEGY": _ORDERS[opts.order],
        "BRANCHING": opts.branching,
        "SDP_SOLVER_SESSION_THREADS_ROOT": opts.root_threads or threads,
        "SDP_SOLVER_SESSION_THREADS": threads,
        # 'auto' says what it picked for this instance
        "BOUND_ENGINE": (bs.engine if bs.engine != "auto" else
                         f"auto ({bs.engine_of(inst)})"),
        "SDP_SOLVER_BACKEND": bs.backend,
        "SDP_SOLVER_TOL": bs.tol,
        "SDP_SOLVER_DEVICE": bs.device,
        "SDP_SOLVER_MAX_CP_ITER_ROOT": cp.max_rounds_root,
        "SDP_SOLVER_MAX_CP_ITER": cp.max_rounds_child,
        "SDP_SOLVER_CP_TOL": cp.cp_tol,
        "SDP_SOLVER_MAX_INEQ": cp.max_cuts,
        # pcsos inherits by multiplier, not a share of the cuts: 1.0 when every cut is passed
        "SDP_SOLVER_INHERIT_PERC": 1.0 if not cp.inherit_min_u else "by multiplier",
        "SDP_SOLVER_INHERIT_MIN_U": cp.inherit_min_u,
        "SDP_SOLVER_TAIL_OFF": cp.tail_off if cp.tail_off else "none",
        "SDP_SOLVER_TAIL_OFF_ROOT": cp.tail_off_root if cp.tail_off_root else "none",
        "SDP_SOLVER_EPS_INEQ": cp.eps_violation,
        "SDP_SOLVER_EPS_ACTIVE": cp.eps_active,
        "SDP_SOLVER_MAX_PAIR_INEQ": cp.max_collected["pair"],
        "SDP_SOLVER_PAIR_PERC": cp.fraction["pair"],
        "SDP_SOLVER_MAX_TRIANGLE_INEQ": cp.max_collected["triangle"],
        "SDP_SOLVER_TRIANGLE_PERC": cp.fraction["triangle"],
        "CUTS": ",".join(cp.families) if cp.families else "none",
        "TRIANGLE_COLLECT": cp.collect,
        "HEURISTIC": opts.heuristic,
        "ROOT_HEURISTIC": opts.root_heuristic or "none",
        "FEASIBILITY_BACKEND": opts.feasibility_backend,
        "TIME_LIMIT": opts.time_limit if opts.time_limit else "none",
        "SEED": opts.seed,
        "INIT_LABELS": args.init_labels or "none",
        "CHECKPOINT": args.checkpoint or "none",
        "RESUMED_FROM": args.resume or "none",
    }


def run(args: argparse.Namespace) -> int:
    """Solve, write the requested files, print the summary; see the module doc for codes."""
    from pcsos.api import solve_instance  # lazy: start-up (the solver loads for this command only)
    inst, info = load_instance(args)
    start = None
    if args.init_labels:
        start = check_start(inst, read_labels(args.init_labels), source=args.init_labels)
    opts = solver_options(args).checked().for_instance(inst)  # the log shows the abs_tol used
    cp, workers = opts.cp_settings, opts.workers
    settings = _settings(opts, args, inst)
    gap_log = GapLog(args.log) if args.log else None
    jsonl = JsonlLog(args.jsonl) if args.jsonl else None
    out = report_stream(args)
    printer = None if args.quiet else ProgressPrinter(out)
    sums = {"ineq": 0.0, "cp_iter": 0.0}
    try:
        if gap_log is not None:
            gap_log.header(info["data"], inst.n, inst.d, inst.k, info["constraints"],
                           args.log, settings)
        if not args.quiet:
            print(f"pcsos solve: n = {inst.n}, d = {inst.d}, k = {inst.k}, "
                  f"{len(inst.ml)} ML, {len(inst.cl)} CL, "
                  + (f"{workers} worker(s)" if workers else f"Dask cluster {args.dask}"),
                  file=out)
            if (extra := describe_weights_sizes(inst, info)) is not None:
                print(f"  {extra}", file=out)
            out.flush()

        def on_row(row: dict) -> None:
            sums["ineq"] += row.get("pair", 0.0) + row.get("triangle", 0.0) + \
                row.get("clique", 0.0)
            sums["cp_iter"] += row.get("cp_iter", 0)
            if gap_log is not None:
                gap_log.row(row)
            if jsonl is not None:
                jsonl.record(row)
            if printer is not None:
                printer(row)

        with Interrupts.armed_for(args, "solve", args.quiet) as intr:
            res = solve_instance(
                inst, opts, init_labels=start, callback=on_row, checkpoint=args.checkpoint,
                checkpoint_every=args.checkpoint_every, resume=args.resume, dask=args.dask,
                progress=None if printer is None else printer.status,
                stop_event=intr.stop, abort_event=intr.abort)
        if printer is not None:
            printer.finish()
        if gap_log is not None:
            if res.status == "infeasible" and not res.log:
                gap_log.line(f"Infeasibility: {res.message}")
            nn = max(1, res.nodes)
            gap_log.footer(wall_time=res.seconds, n_nodes=res.nodes,
                           avg_ineq=sums["ineq"] / nn, avg_cp_iter=sums["cp_iter"] / nn,
                           root_gap=res.root_gap if math.isfinite(res.root_gap) else 0.0,
                           gap=res.gap if math.isfinite(res.gap) else 0.0,
                           best=res.objective,
                           extra={"STATUS": res.status, "LOWER_BOUND": f"{res.lower_bound:.6g}"})
    finally:
        for f in (gap_log, jsonl):
            if f is not None:
                f.close()
    if res.labels is not None:
        if args.result:
            write_result_matrix(args.result, res.labels, inst.k)
        if args.labels:
            write_labels(args.labels, res.labels)
    if args.json:
        res.to_json(args.json, data=info["data"], constraints=info["constraints"],
                    settings=settings, cp_settings=dataclasses.asdict(cp),
                    **weights_sizes(inst, info))
    if not args.quiet:
        _summary(res, out)
    if res.status == "infeasible":
        raise InfeasibleError(res.message, pairs=res.infeasible_pairs)
    if res.labels is None and res.status == "interrupted":
        return 130
    return 0


def _summary(res, out) -> None:
    gap = f"{100 * res.gap:.4f}%" if math.isfinite(res.gap) else "-"
    lines = [f"status:        {res.status} ({res.message})"]
    if res.labels is not None:
        lines.append(f"objective:     {res.objective:.10g}")
    lines += [f"lower bound:   {res.lower_bound:.10g}",
              f"gap:           {gap}",
              f"root:          size {res.root_size}, bound {res.root_lower_bound:.10g}, gap "
              + (f"{100 * res.root_gap:.4f}%" if math.isfinite(res.root_gap) else "-"),
              f"nodes:         {res.nodes}",
              f"time:          {res.seconds:.2f} s"]
    print("\n".join(lines), file=out)
    out.flush()

