"""The clustering node of the branch-and-cut tree (spec §5); it knows nothing about queues.

:func:`process_node` is the picklable process function handed to
:func:`pcsos.tree.branch_and_bound`. On one node it

1. checks feasibility (skipped when the parent's clustering satisfies the node's new
   constraint, which then proves it feasible);
2. bounds it with the cutting-plane loop, warm-started from the parent's SDP point and with
   the parent's cuts inherited; node LB = max(own safe LB, parent LB). A root of at least
   ``DECOMPOSITION_FIRST_SIZE`` super-points is first bounded by subsets of its data (the
   decomposition bound), and its SDP runs only if that bound does not prune it; a root
   whose SDP cannot finish in the time left gets the decomposition bound alone;
3. prunes it against the incumbent;
4. runs the upper-bound heuristic (default ``ipc-kmeans`` initialised from the node's Z);
5. branches on the pair argmax_{i<j} min(Z_ij, ||Z_i. - Z_j.||^2) into a must-link child
   (:meth:`Problem.merge`) and a cannot-link child (:meth:`Problem.add_cl`). When the best
   score is below 1e-5, Z is (numerically) a clustering matrix: its clustering is extracted,
   its true SSE evaluated from the original data and used as an upper bound, and the node
   is closed.

A node with s = k super-points has one possible clustering, which is evaluated directly
(and is infeasible when it misses the cluster sizes).
Solutions are original-point labels; objectives are SSEs computed from the original data.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

from pcsos._kernels import branching_score
from pcsos.bounds.colgen import (
    ColGenResult,
    ColumnStart,
    colgen_bound,
    column_mip,
    inherit_columns,
)
from pcsos.bounds.cutset import CutSet
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.branching import CANDIDATES, choose_pair, relation, unit_gain
from pcsos.cuts.loop import (
    NO_CUT,
    PRUNED,
    TIME_LIMIT,
    BoundResult,
    cutting_plane_loop,
    inherit_cuts_map,
    inherited_selection,
)
from pcsos.decomposition import (
    SUBSET_MAX,
    decomposition_bound,
    largest_subset_size,
    partition,
    restricted_value,
    spectral_floor,
    subset_settings,
    subset_size_for,
)
from pcsos.errors import InfeasibleError
from pcsos.feasibility import check_problem
from pcsos.heuristics import run_heuristic
from pcsos.memory import MEMORY, Grant, sdp_bytes, sdp_memory_short
from pcsos.options import SolverOptions
from pcsos.problem import Problem
from pcsos.tree import Context, NodeOutcome, gap_closed

__all__ = ["NodeData", "process_node", "root_node", "clustering_from_Z",
           "FLAG_SOLVED", "FLAG_FAILED", "FLAG_PARTIAL", "FLAG_INFEASIBLE", "CP_FLAG_INFEASIBLE",
           "CP_FLAG_PRUNED"]

# FLAG column of the gap log (SDP status of the node), as in the reference program
FLAG_SOLVED, FLAG_FAILED, FLAG_PARTIAL, FLAG_INFEASIBLE = 0, 1, -1, 2
# CP_FLAG values this module sets itself (the loop reports the others)
CP_FLAG_PRUNED, CP_FLAG_INFEASIBLE = 2, 4
_SDP_FLAGS = {"solved": FLAG_SOLVED, "max_iter": FLAG_PARTIAL, "time_limit": FLAG_PARTIAL,
              "failed": FLAG_FAILED,
              # stopped once the safe bound pruned the node: what the node needed is solved
              "target": FLAG_SOLVED,
              # the LP engine: no cluster the sizes allow completes its master
              "stalled": FLAG_PARTIAL,
              # the LP engine: its master fell below the pruning target, the node branches
              "branch": FLAG_PARTIAL}


#: below this branching score Z is taken as a clustering matrix (module doc, step 5)
BRANCH_THRESHOLD = 1e-5


@dataclass
class NodeData:
    """One open node: its problem and what it inherits from its parent.

    pair : the parent's super-point pair whose branching created the node ((-1, -1): root).
    kind : 'root', 'ml' or 'cl'.
    known_feasible : the parent's clustering satisfies this node (feasibility check skipped).
    hint : original-point labels feasible for this node (the parent's clustering), or None.
    points : the first original points of ``pair``'s super-points ((-1, -1): root).
    change : how far the split moved the pair's relation at the parent (pcsos.branching):
        1 - r for 'ml', r for 'cl'.
    """

    problem: Problem
    cuts: Any = None
    warm_start: Any = None
    parent_bound: float = -math.inf
    pair: tuple[int, int] = (-1, -1)
    kind: str = "root"
    known_feasible: bool = False
    hint: np.ndarray | None = None
    points: tuple[int, int] = (-1, -1)
    change: float = 0.0


def root_node(problem: Problem) -> NodeData:
    """The root's data."""
    return NodeData(problem)


def _seed(options: SolverOptions, ctx: Context):
    return np.random.SeedSequence([0 if options.seed is None else int(options.seed),
                                   int(ctx.node_id)])


def _blas_limit(options: SolverOptions, ctx: Context):
    """BLAS threads for this job (see module pcsos.api for the thread-pool policy)."""
    limit = options.root_threads if ctx.is_root else options.threads
    if limit is None:
        return None
    # in the manager's process the caller has set the pool-wide limit already (threadpoolctl
    # limits are process-wide, so threads must not each set and restore one); only the root
    # (which runs alone) and jobs in worker processes set their own
    if not ctx.is_root and multiprocessing.parent_process() is None:
        return None
    return threadpool_limits(limits=int(limit), user_api="blas")


def process_node(data: NodeData, ctx: Context) -> NodeOutcome:
    """Process one node (see the module docstring); the tree's process function.

    ``ctx.options`` is the solve's checked :class:`~pcsos.options.SolverOptions` with
    ``threads`` and ``root_threads`` resolved to numbers (BLAS threads per job / root)."""
    options: SolverOptions = ctx.options
    limiter = _blas_limit(options, ctx)
    try:
        return _process(data, ctx, options)
    finally:
        if limiter is not None:
            limiter.restore_original_limits()


def _row(data: NodeData, **kw) -> dict:
    row = {"n": data.problem.s, "lb_parent": data.parent_bound, "lb": math.inf,
           "flag": FLAG_SOLVED, "time": 0.0, "cp_iter": 0, "cp_flag": 0, "cp_ineq": 0,
           "pair": 0.0, "triangle": 0.0, "clique": 0.0, "star": 0.0, "ub": math.inf,
           "i": data.pair[0], "j": data.pair[1], "kind": data.kind}
    row.update(kw)
    return row


def _process(data: NodeData, ctx: Context, options: SolverOptions) -> NodeOutcome:
    problem = data.problem
    k = problem.k
    if problem.s < k:
        return NodeOutcome(math.inf, row=_row(data, flag=FLAG_INFEASIBLE,
                                              cp_flag=CP_FLAG_INFEASIBLE))
    if problem.s == k:
        # one clustering left: every super-point is a cluster (CL pairs hold trivially)
        t0 = time.perf_counter()
        labels = problem.to_points(np.arange(k))
        if not problem.instance.sizes_ok(labels):  # that one clustering misses the sizes
            return NodeOutcome(math.inf, row=_row(data, flag=FLAG_INFEASIBLE,
                                                  cp_flag=CP_FLAG_INFEASIBLE,
                                                  time=time.perf_counter() - t0,
                                                  feasibility="sizes"))
        val = problem.instance.objective(labels)
        return NodeOutcome(val, val, labels,
                           row=_row(data, lb=val, ub=val, time=time.perf_counter() - t0))
    return _NodeRun(data, ctx, options).run()


class _NodeRun:
    """One node's steps 1-5 (module doc) and what they share: the best clustering found,
    the node's own heuristic value and its log row."""

    def __init__(self, data: NodeData, ctx: Context, options: SolverOptions):
        self.t0 = time.perf_counter()
        self.data, self.ctx, self.options = data, ctx, options
        self.problem = data.problem
        self.best_val, self.best_labels = math.inf, None
        self.own_val = math.inf  # what this node's own search found (the log's UB column)
        self.lb = data.parent_bound
        self.row: dict = {}
        self._heuristic_z = None  # the Z of the heuristic's last run
        self.heuristic_val = math.inf  # the best its runs found (the log's heuristic_ub)
        self.learned = None  # this node's pseudo-cost record (pcsos.branching), once bounded
        self.witness = None  # the feasibility check's clustering
        self.decomposed: dict = {}  # the root's decomposition bound's log fields, once run
        self.row_note: dict = {}  # why the decomposition was skipped, for the log row
        self.engine = options.bound_settings.engine_of(self.problem.instance)

    # ------------------------------------------------------------ shared helpers
    def consider(self, labels, own: bool = True) -> None:
        if labels is None:
            return
        v = self.problem.instance.objective(labels)
        if own:
            self.own_val = min(self.own_val, v)
        if v < self.best_val:
            self.best_val, self.best_labels = v, np.asarray(labels)
            # shared at once: other jobs prune against it, and a stop keeps it
            self.ctx.offer(v, self.best_labels)

    @property
    def upper(self) -> float:
        """The best value known to this node: the shared incumbent or its own."""
        return min(self.ctx.incumbent, self.best_val)

    def heuristic(self, Z) -> None:
        """The node's heuristic on ``Z``, its clustering considered. Run once per Z: the
        loop's last round often handed it the Z that step 4 gets."""
        if self._heuristic_z is Z:
            return
        hres = _heuristic(self.options, self.problem, Z, self.ctx, self.best_labels)
        if hres.status == "found":
            self.consider(hres.labels)
            self.heuristic_val = min(self.heuristic_val, hres.objective)
        self._heuristic_z = Z

    def closed(self, lb: float) -> bool:
        return gap_closed(self.upper, lb, self.options.tol, self.options.abs_gap)

    def unfinished(self, bound: float) -> NodeOutcome:
        # stopped by the deadline or a cancellation: the node stays open for the tree
        return NodeOutcome(bound, self.best_val, self.best_labels,
                           row=_row(self.data, lb=bound, flag=FLAG_PARTIAL, **self.decomposed),
                           finished=False)

    def finish_row(self, **fields) -> None:
        """The node's log row at its end: time, own UB, the heuristic's best (inside the
        loop or after it) and ``fields``."""
        self.row.update(time=time.perf_counter() - self.t0, ub=self.own_val, **fields)
        if math.isfinite(self.heuristic_val):
            self.row["heuristic_ub"] = self.heuristic_val

    def done(self, reason: str | None = None) -> NodeOutcome:
        self.finish_row()
        if reason:
            self.row["closed"] = reason
        return NodeOutcome(self.lb, self.best_val, self.best_labels, row=self.row,
                           learned=self.learned)

    # ------------------------------------------------------------ the steps
    def run(self) -> NodeOutcome:
        data, ctx = self.data, self.ctx
        stop = self.feasibility()
        if stop is not None:
            return stop
        if ctx.cancelled():
            return self.unfinished(data.parent_bound)
        self.consider(self.witness, own=False)
        self.consider(data.hint, own=False)
        if data.kind == "root" and self.options.root_heuristic:
            self.root_heuristic()
            if ctx.cancelled():
                return self.unfinished(data.parent_bound)
        # the SDP's size limits and the decomposition ahead of it are the SDP's alone
        sdp_engine = self.engine == "sdp"
        need = sdp_seconds(self.problem.s) if sdp_engine else 0.0
        bs = self.options.bound_settings
        if sdp_engine:  # what the running SDPs hold is free again once they end (MEMORY)
            short = sdp_memory_short(self.problem.s, bs, freed=MEMORY.held)
            if short is not None:  # the OS would kill the process mid-solve, result and all
                return self.too_large(need, memory=short)
        first = sdp_engine and data.kind == "root" and self.problem.s >= DECOMPOSITION_FIRST_SIZE
        # the decomposition gets all the time there is when the SDP cannot run after it
        if need > ctx.deadline.remaining() * ((1.0 - DECOMPOSITION_FIRST_SHARE) if first
                                              else 1.0):
            return self.too_large(need)
        if first and self.decomposition_first(need):
            if ctx.cancelled():
                return self.unfinished(self.lb)
            if self.closed(self.lb):
                self.row = _row(data, lb=self.lb, cp_flag=CP_FLAG_PRUNED, **self.decomposed)
                return self.done("pruned")
            if need > ctx.deadline.remaining():  # the passes overran what they left the SDP
                return self.too_large(need)
        hold = MEMORY.hold(sdp_bytes(self.problem.s, bs), ctx.cancelled,
                           lambda: ctx.report("waiting for memory", bound=self.lb)
                           ) if sdp_engine else nullcontext(Grant(True))
        with hold as grant:
            if grant.short is not None:  # alone, it no longer fits
                return self.too_large(need, memory=grant.short)
            if not grant.ok:  # stopped while other nodes' SDPs held the memory it needs
                return self.unfinished(self.lb)
            if grant.waited and need > ctx.deadline.remaining():
                return self.too_large(need)
            br = self.bound()
        sdp = br.sdp
        if ctx.cancelled() and not self.closed(self.lb) and getattr(sdp, "status", "") not in (
                "solved", "target"):
            # stopped inside the loop: the node stays open, with the (valid) bound it reached
            return self.unfinished(self.lb)
        # 3. prune
        if self.closed(self.lb):
            self.row["cp_flag"] = CP_FLAG_PRUNED
            return self.done("pruned")
        if sdp is None or sdp.Z is None:
            return self.done("no_sdp")
        # 4. heuristic
        ctx.report("heuristic", name=self.options.heuristic, bound=self.lb)
        self.heuristic(sdp.Z)
        if self.closed(self.lb):
            return self.done("pruned")
        if ctx.cancelled():
            return self.unfinished(self.lb)
        return self.branch(br)

    def feasibility(self) -> NodeOutcome | None:
        """1. An exact check, skipped when the parent's clustering proves the node feasible;
        an outcome when it ends the node, else None (its clustering kept as ``witness``)."""
        if self.data.known_feasible:
            return None
        self.ctx.report("feasibility")
        fz = check_problem(self.problem, self.options.feasibility_backend,
                           time_limit=self.ctx.deadline)
        if fz.feasible is False:
            return NodeOutcome(math.inf, row=_row(self.data, flag=FLAG_INFEASIBLE,
                                                  cp_flag=CP_FLAG_INFEASIBLE,
                                                  time=time.perf_counter() - self.t0,
                                                  feasibility=fz.reason))
        if fz.feasible is None:  # stopped by the deadline: nothing proven
            return self.unfinished(self.data.parent_bound)
        self.witness = fz.labels
        return None

    def root_heuristic(self) -> None:
        # an upper bound before the root's cutting-plane loop lets the loop stop as soon as
        # the root can be pruned, and leaves a good clustering even if a limit stops the root
        name = self.options.root_heuristic
        self.ctx.report("heuristic", name=name)
        h0 = _heuristic(self.options, self.problem, None, self.ctx, self.best_labels, name=name)
        if h0.status == "found":
            self.consider(h0.labels)

    def decomposition_first(self, need: float) -> bool:
        """A large root is first bounded by subsets of its data (seconds, where its own SDP
        takes many minutes); the SDP runs only if that bound does not prune it. A first
        pass on small subsets (``_decomposition_size``) within
        ``DECOMPOSITION_FIRST_SHARE`` of the time left; if it does not prune, a second on
        subsets as large as ``DECOMPOSITION_SECOND_SHARE`` of the time left affords, less
        what leaves the SDP its estimated ``need`` (:func:`largest_subset_size`, at least
        twice the first's). A pass is skipped when
        its subsets would hold fewer than ``DECOMPOSITION_FIRST_PER_CLUSTER`` points per
        cluster, or when the subsets' restrictions of the clustering, which the bound cannot
        pass, already miss what prunes the root (docs/decomposition.md). True when a pass
        ran."""
        labels, ub = self.best_labels, self.upper
        if labels is None or not math.isfinite(ub):
            return False
        k, n = self.problem.k, self.problem.instance.n
        least = DECOMPOSITION_FIRST_PER_CLUSTER * k
        size = _decomposition_size(k)
        ran = False
        if size >= least:
            ran = self.decompose(labels, size, DECOMPOSITION_FIRST_SHARE)
        else:
            self.row_note = {"decomposition_per_cluster": size / k}
        if self.ctx.cancelled() or self.closed(self.lb):
            return ran
        left = self.ctx.deadline.remaining()
        share = min(DECOMPOSITION_SECOND_SHARE, 1.0 - need / left) if left > 0 else 0.0
        wider = largest_subset_size(n, share * left, lo=max(2 * size, least),
                                    hi=min(SUBSET_MAX, n // 2)) if share > 0 else None
        if wider is not None:
            ran = self.decompose(labels, wider, share) or ran
        return ran

    def decompose(self, labels, size: int, share: float) -> bool:
        """One pass of :meth:`decomposition_first` on subsets of at most ``size`` points
        within ``share`` of the time left; False when its ceiling skips it."""
        subsets = partition(self.problem.instance, labels, size,
                            seed=_decomposition_seed(self.options))
        ceiling = _decomposition_ceiling(self.problem, labels, subsets)
        if not self.closed(ceiling):
            self.row_note = {"decomposition_ceiling": ceiling}
            return False
        self.ctx.report("decomposition bound", size=size)
        out = _decomposition(self.problem, labels, self.ctx, self.options, share=share,
                             subsets=subsets)
        if out["decomposition_bound"] > self.decomposed.get("decomposition_bound", -math.inf):
            self.decomposed = out
        self.lb = max(self.lb, out["decomposition_bound"])
        # proved: a root abandoned mid-SDP at the stop keeps it (the rounds report only
        # their own bounds)
        self.ctx.report("decomposition bound", bound=self.lb,
                        subsets=self.decomposed["decomposition_subsets"])
        return True

    def too_large(self, need: float, memory: tuple[float, float] | None = None
                  ) -> NodeOutcome:
        # no bound can come out in the time left, or in the memory there is (a large
        # instance): say so at once rather than spend the time and GBs of memory on a solve
        # that cannot finish; the root bounds subsets of the data instead (an SSE is never
        # negative: 0 at the least). ``memory``: (bytes needed, bytes available)
        extra = dict(self.decomposed)
        if memory is not None:
            extra.update(sdp_memory=memory[0], memory_available=memory[1])
        bound = max(self.lb, 0.0)
        if self.data.kind == "root" and self.best_labels is not None and not self.decomposed:
            self.ctx.report("decomposition bound")
            extra.update(_decomposition(self.problem, self.best_labels, self.ctx, self.options))
            bound = max(bound, extra["decomposition_bound"])
        return NodeOutcome(bound, self.best_val, self.best_labels, row=_row(
            self.data, lb=bound, flag=FLAG_FAILED, time=time.perf_counter() - self.t0,
            ub=self.own_val, closed="sdp_too_large", sdp_estimate=need, **extra))

    def bound(self):
        """2. The cutting-plane loop, warm-started from the parent; sets ``lb`` and ``row``."""
        data, ctx, options = self.data, self.ctx, self.options
        ctx.report("bound", round=0)
        upper = self.upper
        if self.engine == "colgen":
            # a colgen node's warm start is the columns it inherits
            ws = data.warm_start if isinstance(data.warm_start, ColumnStart) else None
            br = _colgen(self.problem, upper, self.best_labels, ws, options, ctx)
            self.column_incumbent(br.sdp)
        else:
            br = cutting_plane_loop(
                self.problem, cuts=data.cuts, warm_start=data.warm_start,
                upper_bound=upper, settings=options.cp_settings,
                root=data.kind == "root", bound_settings=options.bound_settings,
                # the context's Deadline also ends a long SDP solve within one iteration on
                # Ctrl-C or when the tree stops
                seed=_seed(options, ctx), time_limit=ctx.deadline,
                callback=_round_callback(ctx), known_bound=data.parent_bound,
                incumbent=self.round_incumbent)
        # self.lb: the parent's bound, or at a large root its decomposition bound
        self.lb = max(float(br.lower_bound), self.lb)
        gain = unit_gain(data.kind, data.change, data.parent_bound, self.lb,
                         self.upper)
        # an LP cut short to branch has not computed its bound: nothing to learn from it
        if gain is not None and min(data.points) >= 0 and getattr(
                br.sdp, "status", None) != "branch":
            self.learned = (data.kind, data.points, gain)
        sdp = br.sdp
        self.row = _row(
            data, lb=self.lb, flag=_SDP_FLAGS.get(getattr(sdp, "status", "failed"), FLAG_FAILED),
            cp_iter=len(br.rounds), cp_flag=int(br.flag),
            cp_ineq=len(br.cuts) if br.cuts is not None else 0, **_family_averages(br),
            sdp_iterations=int(br.iterations), sdp_status=getattr(sdp, "status", None),
            sdp_bound=float(br.lower_bound), engine=self.engine,
            **self.decomposed, **self.row_note)
        return br

    def round_incumbent(self, sdp) -> float:
        """The loop's ``incumbent`` hook: the node's heuristic on a round's Z, and the
        incumbent now known (another job's included)."""
        if not self.ctx.cancelled():
            self.heuristic(sdp.Z)
        return self.upper

    def column_incumbent(self, res: ColGenResult) -> None:
        """At the root, when the LP's solution is not a clustering (branch() takes it when
        it is), the best clustering of the columns it generated: a MIP, with at most
        COLUMN_MIP_SHARE of the time left."""
        if res.labels is not None or self.data.kind != "root" or not res.columns:
            return
        labels = column_mip(res, self.problem,
                            time_limit=self.ctx.deadline.within(COLUMN_MIP_SECONDS,
                                                                share=COLUMN_MIP_SHARE))
        if labels is not None and self.problem.satisfies(labels):
            self.consider(self.problem.to_points(labels))

    def branch(self, br) -> NodeOutcome:
        """5. Split on the pair the branching score picks, or close the node when Z is a
        clustering matrix whose clustering the bound proves optimal."""
        problem, Z = self.problem, br.sdp.Z
        i, j, score = branching_score(Z)
        self.row["score"] = float(score)
        if score < BRANCH_THRESHOLD:
            sl = clustering_from_Z(Z, problem)
            if sl is not None:
                self.consider(problem.to_points(sl))
                if self.closed(self.lb):
                    self.row["pruned_by_optimality"] = True
                    return self.done("clustering_matrix")
            # Z looks like a clustering matrix but the bound does not close the node (an
            # inaccurate SDP): branching on any pair is still a valid split, so keep going
            i, j = _fallback_pair(Z, problem)
            if i < 0:
                return self.done("unresolved")
        elif _is_cl(problem, i, j):  # cannot happen for an accurate Z (Z_ij = 0 on CL pairs)
            i, j = _fallback_pair(Z, problem)
        elif self.options.branching == "pseudocost":
            pick = choose_pair(Z, _ranked_pairs(Z, problem, CANDIDATES), _first_points(problem),
                               self.ctx.history, own=self.learned)
            if pick is not None:
                self.row["pseudocost"] = True
                i, j = pick
        children = _children(self.data, problem, br, i, j, self.lb, self.best_labels,
                             self.options.cp_settings)
        self.finish_row(branch=(int(i), int(j)))
        return NodeOutcome(self.lb, self.best_val, self.best_labels, children=children,
                           row=self.row, learned=self.learned)


#: the root heuristic (run before the root's bound) gets at most this share of the time left
ROOT_HEURISTIC_SHARE = 0.25
#: a root of at least this many super-points is bounded by the decomposition first, with at
#: most DECOMPOSITION_FIRST_SHARE of the time left, and its SDP runs only if that bound does
#: not prune it. Abalone (s = 4 177, k = 3): the decomposition closes the root in 28 s
#: where the SDP ran for over 10 minutes without a bound; n = 2 000, k = 2, 500 pairs
#: (s = 1 701): 5.0e-5 in 32 s, where the SDP's rounds stood at 0.05 % after 30 minutes
#: (docs/solver.md)
DECOMPOSITION_FIRST_SIZE = 1000
DECOMPOSITION_FIRST_SHARE = 0.25
#: ... and only when its subsets hold at least this many points per cluster: with fewer, a
#: subset's own optimum falls short of its share by more than a pruning tolerance (k = 20,
#: subsets of 300: 4 %; of 1 000: 0.25 %; docs/decomposition.md, "Subset size"), so the
#: decomposition cannot prune the root and its time is the SDP's loss
DECOMPOSITION_FIRST_PER_CLUSTER = 50
#: ... and a second pass, on larger subsets, gets this share of the time left when the first
#: does not prune: n = 2 000, k = 5, 500 pairs (s = 1 908): subsets of 300 points 0.27 %
#: below the incumbent after 344 s, of 700 points 0.070 % after 900 s on one core, where
#: the root's SDP stood at 0.88 % after 30 minutes (docs/decomposition.md)
DECOMPOSITION_SECOND_SHARE = 0.5
#: points per subset at most in the decomposition bound of a root too large for its SDP:
#: the fallback runs because an SDP of this root's size cannot finish in the time left, so
#: its subsets stay far below that size (certify's default, up to 1 000, is not capped)
DECOMPOSITION_SUBSET = 300


#: the root's MIP over the columns of its LP gets at most this share of the time left, and
#: at most this many seconds
COLUMN_MIP_SHARE = 0.1
COLUMN_MIP_SECONDS = 60.0


def _decomposition_size(k: int) -> int:
    """Points per subset in the root's decomposition bound."""
    return min(subset_size_for(k), DECOMPOSITION_SUBSET)


def _decomposition_seed(options: SolverOptions) -> int:
    """The seed of the root's decomposition: of its split and of its subsets' bounds."""
    return 0 if options.seed is None else int(options.seed)


def _decomposition_subsets(problem: Problem, labels, seed: int) -> list[np.ndarray]:
    """The subsets the root's decomposition bound uses, guided by the clustering ``labels``."""
    inst = problem.instance
    return partition(inst, labels, _decomposition_size(inst.k), seed=seed)


def _decomposition_ceiling(problem: Problem, labels, subsets) -> float:
    """The sum of the clustering's restrictions to the subsets: each subset's bound is at
    most its own optimum, at most its restriction's value, so their sum caps the bound."""
    return sum(restricted_value(problem.instance, pts, labels) for pts in subsets)


class _Cancelled:
    """The context's cancellation as the ``is_set`` of an event (decomposition_bound's
    ``stop_event``): a stop starts no more subsets."""

    def __init__(self, ctx: Context):
        self.is_set = ctx.cancelled


def _decomposition(problem: Problem, labels, ctx: Context, options: SolverOptions,
                   share: float = 1.0, subsets=None) -> dict:
    """The decomposition bound of the root's instance (pcsos.decomposition) within
    ``share`` of the time left, on this job's thread, with the solve's SDP settings and its
    cut settings with loose rounds at the subsets' tolerance (``subset_settings``): the log
    row's fields."""

    inst = problem.instance
    if subsets is None:
        subsets = _decomposition_subsets(problem, labels, _decomposition_seed(options))
    lb, parts = decomposition_bound(
        inst, subsets, time_limit=ctx.deadline.within(share=share), workers=1, labels=labels,
        bound_settings=options.bound_settings, cp_settings=subset_settings(options.cp_settings),
        seed=_decomposition_seed(options), blas_limit=None,
        stop_event=_Cancelled(ctx))
    floor = spectral_floor(problem)
    return {"decomposition_bound": max(lb, floor), "decomposition_subsets": len(parts),
            "decomposition_sdp": sum(b.method == "sdp" for b in parts),
            "decomposition_size": max((len(pts) for pts in subsets), default=0)}


def _heuristic(options: SolverOptions, problem: Problem, Z, ctx: Context, best_labels,
               name: str | None = None):
    """The node's heuristic (or the root heuristic ``name``), handed the best clustering
    known to the node as a start."""
    # blas_threads=None: the pool (or _blas_limit) has set the limit; threadpoolctl limits
    # are process-wide, so a job in a worker thread must not set its own
    hopts = dict(options.heuristic_options)
    start = hopts.pop("init_labels", best_labels)  # a start the user gave comes first
    share = None
    if name is not None:  # the root heuristic, before the root's bound
        share = ROOT_HEURISTIC_SHARE
        if name != options.heuristic:
            hopts = {}  # the options are those of options.heuristic
    return run_heuristic(name or options.heuristic, problem, Z=Z, seed=_seed(options, ctx),
                         time_limit=ctx.deadline.within(options.heuristic_time_limit,
                                                        share=share),
                         blas_threads=None, init_labels=start, **hopts)


#: below this size an SDP solve is never refused for lack of time (it costs seconds)
SDP_CHECK_SIZE = 600
#: a lower estimate of the ADMM iterations of a solve (the 48 seed-0 roots took 90-1 020)
MIN_SDP_ITERATIONS = 50
_eig_cost: list[float] = []  # seconds per s^3 of one eigendecomposition, timed once


def sdp_seconds(s: int, iterations: int | None = None) -> float:
    """A lower estimate of the seconds of one SDP solve at size s (0 below SDP_CHECK_SIZE):
    ``iterations`` eigendecompositions (default MIN_SDP_ITERATIONS), timed once per process
    at s = 400 and scaled by s^3 (at s = 2 968 on one core: 4.8 s each, so about 4 minutes
    at the very least)."""
    if s < SDP_CHECK_SIZE:
        return 0.0
    if not _eig_cost:
        m = 400
        A = np.random.default_rng(0).standard_normal((m, m))
        A = A + A.T
        t = time.perf_counter()
        sla.eigh(A, driver="evr", check_finite=False)
        _eig_cost.append((time.perf_counter() - t) / m ** 3)
    if iterations is None:  # read at the call: the tests change it
        iterations = MIN_SDP_ITERATIONS
    return iterations * _eig_cost[0] * float(s) ** 3


def _round_callback(ctx: Context):
    """A loop callback: reports each round for progress output, and asks the loop to stop
    once the manager has cancelled (threads) or the deadline has passed."""
    def cb(stats, *_args, **_kw):
        ctx.report("bound", round=int(stats.round), bound=float(stats.lower_bound))
        return bool(ctx.cancelled())
    return cb


def _first_points(problem: Problem) -> np.ndarray:
    """Each super-point's first original point."""
    first = np.full(problem.s, problem.n, dtype=np.int64)
    np.minimum.at(first, problem.point_labels, np.arange(problem.n))
    return first


def _super_labels(problem: Problem, labels) -> np.ndarray | None:
    """The clustering ``labels`` of the original points as labels of the node's
    super-points, when it obeys the node (each super-point in one cluster, its cannot-link
    pairs apart, k clusters); else None."""
    if labels is None:
        return None
    labels = np.asarray(labels)
    sl = labels[_first_points(problem)]
    if not np.array_equal(sl[problem.point_labels], labels) or not problem.satisfies(sl) \
            or len(np.unique(sl)) != problem.k:
        return None
    return sl


def _colgen(problem: Problem, upper: float, labels, start: ColumnStart | None,
            options: SolverOptions, ctx: Context) -> BoundResult:
    """The node's bound by the set-partitioning LP (pcsos.bounds.colgen), in the shape of
    the cutting-plane loop's result: no cuts, its LP solution as the matrix that drives
    branching; its first columns are the parent's that this node allows, with the parent's
    duals (``start``), and the incumbent's clusters (where it obeys the node)."""
    target = None
    if math.isfinite(upper):
        # stop once the bound prunes the node (a hair inside the tree's pruning test)
        target = upper - 0.999 * max(options.tol * abs(upper), options.abs_gap)
    # two tests on purpose: a node with a parent's start (its columns and duals: its box is
    # centred from the first master) may stop to branch and prices exactly less often; the
    # root, which runs alone, takes every worker's core. A node without a start below the
    # root (its parent's bound was not the LP's) is a root of its subtree for the first,
    # and one of several nodes running for the second
    inherited = start is not None
    res = colgen_bound(problem, columns=start.columns() if inherited else (),
                       duals=start.duals if inherited else None,
                       cuts=start.cuts if inherited else None,
                       # below the child's pruning target its LP cannot prune it: branch
                       # (the root's LP runs to the end: its bound and columns serve all)
                       branch_below=target if inherited else None,
                       labels=_super_labels(problem, labels),
                       upper_bound=upper, bound_target=target,
                       time_limit=ctx.deadline, seed=_seed(options, ctx),
                       max_iter=options.bound_settings.max_iter,
                       **options.bound_settings.colgen_options(),
                       mean_exact_every=(options.bound_settings.child_exact_every
                                         if inherited else None),
                       threads=(min(max(int(options.root_threads or 1),
                                        int(options.workers or 1)), os.cpu_count() or 1)
                                if ctx.is_root else 1),
                       verbose=options.bound_settings.verbose,
                       # the tree keeps a reported bound of a job it stops waiting for
                       progress=lambda it, bound: ctx.report("bound", iteration=it,
                                                             bound=bound))
    flag = {"target": PRUNED, "time_limit": TIME_LIMIT}.get(res.status, NO_CUT)
    return BoundResult(res.lower_bound, res, CutSet.empty(), [], flag, res.iterations,
                       res.seconds, {}, f"column generation: {res.message}")


def _family_averages(br) -> dict:
    """Average cuts added per round, per family (PAIR / TRIANGLE / CLIQUE columns)."""
    out = {"pair": 0.0, "triangle": 0.0, "clique": 0.0, "star": 0.0}
    avg = br.avg_added
    if isinstance(avg, dict):
        for key in out:
            out[key] = float(avg.get(key, 0.0))
    return out


def _is_cl(problem: Problem, i: int, j: int) -> bool:
    if not len(problem.cl):
        return False
    a, b = min(i, j), max(i, j)
    return bool(np.any((problem.cl[:, 0] == a) & (problem.cl[:, 1] == b)))


def _ranked_pairs(Z: np.ndarray, problem: Problem, m: int) -> list[tuple[int, int]]:
    """The (at most) ``m`` best-scoring pairs i < j that are not cannot-link pairs, best
    first, by the branching score min(Z_ij, ||Z_i. - Z_j.||^2)."""
    s = problem.s
    Zs = 0.5 * (Z + Z.T)
    sq = np.einsum("ij,ij->i", Zs, Zs)
    D = sq[:, None] + sq[None, :] - 2.0 * (Zs @ Zs.T)
    score = np.minimum(Zs, D)
    score[np.tril_indices(s)] = -np.inf
    if len(problem.cl):
        score[problem.cl[:, 0], problem.cl[:, 1]] = -np.inf
    flat = score.ravel()
    m = min(int(m), flat.size)
    if m <= 0:
        return []
    # ties go to the first pair in row-major order, as in branching_score
    top = (np.array([np.argmax(flat)]) if m == 1
           else np.argpartition(-flat, m - 1)[:m])
    top = top[np.lexsort((top, -flat[top]))]
    return [tuple(int(v) for v in divmod(int(t), s)) for t in top if np.isfinite(flat[t])]


def _fallback_pair(Z: np.ndarray, problem: Problem) -> tuple[int, int]:
    """The best-scoring pair that is not a cannot-link pair ((-1, -1) when none exists)."""
    pairs = _ranked_pairs(Z, problem, 1)
    return pairs[0] if pairs else (-1, -1)


def clustering_from_Z(Z: np.ndarray, problem: Problem) -> np.ndarray | None:
    """The super-point labels of a (numerical) clustering matrix Z, or None if it is not one.

    In a clustering matrix Z_ij = 1/|C| >= 1/n inside a cluster and 0 across (|C| and n
    the weights of the cluster and of all points with point weights), so the graph
    Z_ij > 1/(2n) has the clusters as components. Accepted only with exactly k components
    that satisfy every cannot-link pair of the node and the instance's cluster sizes (the
    relaxation does not know the sizes, so its clustering may miss them).
    """
    thr = 0.5 / problem.instance.total_weight
    Zs = 0.5 * (Z + Z.T)
    ii, jj = np.nonzero(Zs > thr)
    g = coo_matrix((np.ones(len(ii)), (ii, jj)), shape=Zs.shape)
    m, labels = connected_components(g, directed=False)
    if m != problem.k:
        return None
    labels = labels.astype(np.int64)
    inst = problem.instance
    if not problem.satisfies(labels) or (
            inst.has_sizes and not inst.sizes_ok(problem.to_points(labels))):
        return None
    return labels


def _child(problem: Problem, parent_cuts, point, a: int, b: int, kind: str):
    """The must-link ('ml') or cannot-link ('cl') child on super-points a < b as
    ``(problem, inherited cuts, warm start)``; None when preprocessing proves it infeasible."""
    try:
        child = problem.merge(a, b) if kind == "ml" else problem.add_cl(a, b)
    except InfeasibleError:
        return None
    cuts, cut_map = inherit_cuts_map(parent_cuts, child)
    warm = None if point is None else WarmStart.transfer(point, problem, child, cut_map=cut_map)
    return child, cuts, warm


def _children(data: NodeData, problem: Problem, br, i: int, j: int, lb: float,
              labels: np.ndarray | None, settings) -> list[tuple[NodeData, float]]:
    """The must-link and cannot-link children (an infeasible child is not created), with
    the cuts they inherit and the parent's SDP point mapped onto them."""
    sel = inherited_selection(br, settings)
    parent_cuts = br.cuts.select(sel)
    # the SDP's point warm-starts a child's SDP; the LP engine's columns a child's LP
    point = WarmStart.for_cuts(br.sdp, sel) if isinstance(br.sdp, SDPResult) else None
    res = br.sdp if isinstance(br.sdp, ColGenResult) else None

    a, b = min(int(i), int(j)), max(int(i), int(j))
    first = _first_points(problem)
    points = (int(first[a]), int(first[b]))
    r = relation(br.sdp.Z, a, b) if getattr(br.sdp, "Z", None) is not None else math.nan
    pa = pb = None
    if labels is not None:
        # the clustering's label of each super-point (all its points share one label)
        pa, pb = labels[first[a]], labels[first[b]]
    out = []
    for kind in ("ml", "cl"):
        made = _child(problem, parent_cuts, point, a, b, kind)
        if made is None:
            continue
        child, cuts, warm = made
        if res is not None:
            warm = inherit_columns(res, child.parent_map, child.s)
        known = pa is not None and ((pa == pb) if kind == "ml" else (pa != pb))
        change = (1.0 - r) if kind == "ml" else r
        out.append((NodeData(child, cuts, warm, lb, (a, b), kind, bool(known),
                             labels if known else None, points, change), lb))
    return out
