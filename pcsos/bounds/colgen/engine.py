"""The set-partitioning LP bound by column generation, safe at every iteration.

For any duals pi (one per super-point) the Lagrangian bound

    L(pi) = sum_i pi_i + k * min(0, least reduced cost of a cluster against pi)

is at most the LP's value, hence at most the optimal SSE (docs/safe_bound.md, "The
set-partitioning LP"); with cluster sizes, sum_i pi_i + sum over size classes of the class's
clusters times its least reduced cost. The LP's reported value is never used as a bound:
only L at duals whose least reduced costs were bounded by the exact pricing
(:func:`~.pricing.price_bound`), rounded outward.

The loop: solve the restricted master (HiGHS), its duals held in a box around the duals of
the best bound so far (column generation on this LP is highly degenerate, and the LP's duals
jump; the box starts at the parent's duals or at a clustering's, and without a centre or
under constraint aggregation the duals priced are smoothed towards the best ones instead,
Wentges); add the clusters of negative reduced cost that the heuristic pricing finds, and
(every ``exact_every`` masters, and whenever the heuristic finds none) those the exact pricing
meets as it proves L at those duals; when no column improves the master, the box moves or
widens where it binds, and where it does not
(and the duals were not smoothed) L matches the LP's value within the pricing's tolerance
(the LP is solved).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csc_matrix

from pcsos.bounds.colgen.aggregation import Aggregation
from pcsos.bounds.colgen.master import IPM_TOL, Master, MasterError
from pcsos.bounds.colgen.pricing import (
    EPS,
    PricingData,
    price_bound,
    price_heuristic,
)
from pcsos.bounds.colgen.subset_rows import SubsetRows
from pcsos.bounds.model import scatter_unit
from pcsos.clock import Deadline
from pcsos.errors import is_integer
from pcsos.milp import Milp, adapter
from pcsos.problem import Problem

__all__ = ["ColGenResult", "ColumnStart", "colgen_bound", "inherit_columns", "column_mip"]

#: smoothing of the pricing duals towards the best ones so far (0: none)
SMOOTHING = 0.8
#: the heuristic pricing starts from at most this many centres per iteration beyond the
#: means of the master's clusters in use
RANDOM_CENTRES = 30
#: columns added per iteration at most
COLUMNS_PER_ITERATION = 60
#: dual box stabilization (BoxStep; the default of ``box``): the master's duals stay within
#: BOX_SHARE times the mean |dual| of the best bound's duals of them, the box moving to each
#: better bound's duals and widening BOX_GROWTH-fold when it binds at a master that no
#: column improves. Without it the master's duals jump between vertices of its degenerate
#: optimal face: ali535, k = 4, from an optimal incumbent, held a master at the optimum for
#: 600 s while every bound proven at its duals (smoothed or not) stayed below -600 000 (the
#: optimum: 320 279). Under the interior-point master (docs/solver.md, "Many clusters"),
#: without a box fl417 and ali535 at k = 4 had not solved their root LPs at 180 s; 0.03
#: solves the TSPLIB roots of k = 4 and 10 in 3.5-8 s (1 in 0.5-2.6 s), and the overlapping
#: n = 2 000, k = 20 root (500 pairs) reached 359.9 at 300 s, against 340.3 at 1, 350.3 at
#: 0.3, 351.9 at 0.01 and 325.6 at 0.003
BOX_SHARE = 0.03
BOX_GROWTH = 4.0
#: with cluster sizes the box also grows this much after each better bound it held back:
#: from the incumbent's duals, whose size classes price far below zero, a box of fixed
#: width walked to blobs' (n = 75, sizes 30, 25, 20) optimum in steps of 1 % of it and had
#: not reached it at 60 s, and growing it solved that LP in 9 s. Without sizes it slowed
#: the TSPLIB roots 2-20x (pr299, k = 4: 56 s against 10 s; fl417, k = 4: unfinished at
#: 180 s against 8 s), so it is off there
SERIOUS_GROWTH = 2.0
#: the exact pricing also runs every this many iterations (not only when the heuristic
#: finds nothing), so that a bound exists early and the box follows each better one. Every
#: iteration: the overlapping n = 2 000, k = 20 root (500 pairs) reached 358.55 at 300 s,
#: against 356.74 every 2 and 351.23 every 5 iterations (its 600 s bound); the 12 TSPLIB
#: solves of k = 4-10 took 538 s against 574 s. Where it searches over the cluster's mean,
#: every 5th helped glass with sizes 17..54 (0.221 % at 600 s on two workers against
#: 0.371 %) but stalled vertebral's k = 6 root (sizes 25..78) at 6.31 % from 26 s to 120 s,
#: where every master solved it in 63 s (docs/benchmarks.md, "Cluster sizes")
EXACT_EVERY = 1
#: ... and below the root, where it searches over the cluster's mean, after every 3rd master
#: (``mean_exact_every``): a child starts from its parent's duals, so its box is centred
#: from the first master, and there the exact pricing took three quarters of a child's time
#: (glass, sizes 17..54: 227 searches of 0.82 s in 16 children). Two workers, 600 s on
#: glass: 0.145 % and 0.196 % in two runs (55 and 46 nodes), against 0.371 % and 47 after
#: every master (2: 0.199 %, 54; 5: 0.200 %, 51; docs/benchmarks.md, "Cluster sizes").
#: The root keeps EXACT_EVERY: every 5th there stalled vertebral's k = 6 root (above)
CHILD_EXACT_EVERY = 3
#: how HiGHS solves the master (pcsos.bounds.colgen.master.METHODS): its interior-point method
#: without crossover, whose duals are central on the master's optimal face. One worker, one
#: after the other (docs/benchmarks.md, "Large k, overlapping classes"): the 12 TSPLIB
#: solves of k = 4-10 took 210 s against the primal simplex's 547 s with the same nodes, the
#: six root LPs of k = 4 and 10 1.4-22x less time, and the overlapping n = 2 000, k = 20
#: root stood higher at every time to 1 200 s
MASTER_METHOD = "ipm"
#: relative tolerance of the exact pricing: L loses at most this share of the LP's value
PRICING_TOL = 1e-7
#: constraint aggregation splits the partition by the best column when the best compatible
#: column's reduced cost is at most this share of it (or there is none; CG+DCA's default)
SPLIT_SHARE = 0.25
#: a split refines the partition by this many of the best columns at most
SPLIT_COLUMNS = 5
#: once the groups are more than this share of the super-points, aggregation stops (one row
#: per super-point): the LP needs nearly every row apart (pr299, k = 4: the split columns
#: never stop cutting groups, where fl417's many near-duplicate points stay in 150 groups)
AGGREGATE_MAX_SHARE = 0.5
#: incompatible columns kept for when a split makes them compatible, at most (the latest)
INCOMPATIBLE_KEPT = 3000
#: the master keeps at most RETIRE_ABOVE generated columns: beyond, those out of its solution
#: of largest reduced cost leave it until RETIRE_TO remain (each simplex iteration prices
#: every column, and at small k a column holds hundreds of points)
RETIRE_ABOVE = 3000
RETIRE_TO = 1500
#: a child inherits the columns of its parent's LP solution and at most this many more, those
#: of least reduced cost at the parent's bound duals (more slow its first masters and cost
#: memory in every open node)
INHERITED_COLUMNS = 1500
#: boxes of one exact pricing: at first (far from the LP's optimum the duals are large, the
#: disks overlap and the search is wide; a pricing cut short is still a valid bound and
#: still finds columns), and at most, the budget doubling after each one it cut short. It
#: must grow whether or not the heuristic finds columns: on the overlapping n = 2 000,
#: k = 20 root (500 pairs) a complete pricing took 7 000-10 600 boxes (0.3-0.55 s) after
#: its 7th, and 5 000 left each bound 2.0-6.8 below the complete one's
FIRST_BOXES = 5000
MAX_BOXES = 100000
#: rounds of subset-row cuts (module subset_rows) a node separates once its LP is solved, at
#: most SR_PER_ROUND each (the default of ``sr_rounds``; 0: none). They need the search over
#: the cluster's mean as the exact pricing (with sizes, or in more than CIRCLES_MAX_D
#: dimensions) and one row per super-point (no aggregation)
SR_ROUNDS = 0
SR_PER_ROUND = 30
#: with one size class, a pricing at duals whose bound cannot better the best stops at the
#: first cluster that shows it and prices out against the master (``price_bound``'s
#: ``stop_below``): it can bring columns only. On glass 17..54 (one worker, 25 nodes, two
#: runs side by side) the root's exact pricing took 14.9 s against 45.1 s over the same 200
#: masters, and the children 7.5 s against 11.0 s each; two workers' trees to optimal (one
#: run each): 574.7 s (93 nodes) with it everywhere, 752.7 s (115 nodes) at the root only,
#: 584.1 s (91 nodes) without: the tree's size varies more than that from run to run
STOP_HOPELESS = True


@dataclass
class ColGenResult:
    """Outcome of :func:`colgen_bound`.

    ``lower_bound``: the best safe Lagrangian bound (-inf if none was proven);
    ``lp_value``: the last restricted master's value (an upper bound on the LP's, not a
    bound on the SSE; inf where a time limit stopped it with the dual box binding);
    ``status``: 'solved' (no cluster of negative reduced cost is left: the bound is then
    within the pricing tolerance of the LP's value, or with sizes and cannot-link
    pairs of the LP that relaxes those pairs in its pricing), 'target' (the bound
    reached ``bound_target``), 'branch' (the master fell below ``branch_below``),
    'time_limit', 'max_iter', 'stalled' (no cluster found completes the master: with size
    bounds) or 'failed' (HiGHS could not solve the
    master; the bound so far stands);
    ``columns``: the columns of the last master solved (sorted super-point tuples; the
    master retires columns beyond RETIRE_ABOVE), ``costs``: their SSEs and ``lam``: their
    weights; ``Z``: the master's solution as a
    Peng-Wei matrix, sum_c lam_c 1_c 1_c^T / e(c) (s x s; it drives branching); ``labels``:
    super-point labels when that solution is a clustering, else None; ``pi``: the duals of
    the bound; ``history``: (iteration, seconds, restricted LP's value, bound) after each
    exact pricing, the value inf where artificial or box columns held that master (its
    value is then not the restricted LP's, nor a bound on the LP's); ``rows``: the master's rows
    at the end (groups of super-points under constraint aggregation) and ``splits``: how
    often the aggregation was refined;
    ``profile``: where the time went, in seconds of the run's clock: ``master_seconds`` over
    ``master_solves`` solves of ``master_pivots`` HiGHS iterations, ``exact_seconds`` over
    ``exact_pricings`` exact pricings, ``heuristic_seconds`` in the heuristic pricing,
    and ``master_columns``, the master's columns at the end (``columns`` holds those its last
    solution weighs, none where a stop left the box binding);
    ``cuts``: the subset-row cuts of the master at the end ((t, 3) super-points; module
    :mod:`.subset_rows`).
    """

    lower_bound: float
    lp_value: float
    status: str
    columns: list
    lam: np.ndarray
    Z: np.ndarray
    labels: np.ndarray | None
    pi: np.ndarray | None
    iterations: int
    seconds: float
    message: str
    pricing_boxes: int = 0
    history: list = field(default_factory=list)
    backend: str = "colgen"
    costs: list = field(default_factory=list)
    rows: int = 0
    splits: int = 0
    profile: dict = field(default_factory=dict)
    cuts: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))


@dataclass
class ColumnStart:
    """What a node's LP starts from (its warm start; what a child inherits), packed: column
    j holds the super-points ``members[indptr[j]:indptr[j + 1]]``, sorted; ``duals``: duals
    to bound first and to smooth towards (the parent's, summed over merged super-points),
    or None; ``cuts``: subset-row cuts to start with ((t, 3) super-points), or None."""

    members: np.ndarray
    indptr: np.ndarray
    duals: np.ndarray | None = None
    cuts: np.ndarray | None = None

    @classmethod
    def pack(cls, columns: list[tuple], duals: np.ndarray | None = None,
             cuts: np.ndarray | None = None) -> ColumnStart:
        lens = [len(c) for c in columns]
        return cls(np.fromiter((i for c in columns for i in c), dtype=np.int64,
                               count=sum(lens)),
                   np.concatenate([[0], np.cumsum(lens, dtype=np.int64)]).astype(np.int64),
                   duals, cuts)

    def columns(self) -> list[tuple]:
        """The columns as sorted member tuples."""
        m, ip = self.members.tolist(), self.indptr.tolist()
        return [tuple(m[ip[j]:ip[j + 1]]) for j in range(len(ip) - 1)]

    def __len__(self) -> int:
        return len(self.indptr) - 1


def _clusters(labels) -> list[tuple]:
    """The clusters of a labelling of the super-points, as sorted member tuples (none for
    None)."""
    if labels is None:
        return []
    lab = np.asarray(labels)
    return [tuple(np.flatnonzero(lab == h).tolist()) for h in np.unique(lab)]


def _start_columns(data: PricingData, problem: Problem, columns, clusters: list[tuple]
                   ) -> list[tuple]:
    out = list(clusters)
    out += [tuple(c) for c in columns]
    out += [(i,) for i in range(problem.s)]
    seen, keep = set(), []
    for c in out:
        if c and c not in seen and data.allowed(np.asarray(c, dtype=np.int64)):
            seen.add(c)
            keep.append(c)
    return keep


def _incumbent_duals(data: PricingData, clusters: list[tuple]) -> np.ndarray:
    """Duals read off a clustering (its ``clusters``): each super-point's SSE in its
    cluster, e_i ||m_i - mu||^2 + within_i. They sum to the clustering's SSE, and every
    cluster of it prices at zero: a centre to start the box from where no better duals are
    known."""
    pi = data.within.copy()
    for c in clusters:
        idx = np.asarray(c)
        mu = (data.e[idx, None] * data.m[idx]).sum(axis=0) / data.e[idx].sum()
        pi[idx] += data.e[idx] * np.einsum("ij,ij->i", data.m[idx] - mu, data.m[idx] - mu)
    return pi


def _bound(pi: np.ndarray, term) -> float:
    """sum(pi) + sum(term) (the pricing's terms, clusters times a lower bound each), rounded
    down: fsum is correctly rounded, and the products and the last sum add a rounding each,
    which 4 ulps of their magnitudes cover."""
    total, extra = math.fsum(pi), math.fsum(term)
    return total + extra - 4 * EPS * (abs(total) + math.fsum(abs(t) for t in term))


def _matrix(s: int, columns: list[tuple], lam: np.ndarray, e: np.ndarray) -> np.ndarray:
    Z = np.zeros((s, s))
    for c, w in zip(columns, lam):
        if w > 1e-12:
            idx = np.asarray(c)
            Z[np.ix_(idx, idx)] += w / e[idx].sum()
    return Z


def _labels(s: int, columns: list[tuple], lam: np.ndarray) -> np.ndarray | None:
    lab = np.full(s, -1, dtype=np.int64)
    used = [c for c, w in zip(columns, lam) if w > 0.5]
    if not all(abs(w - round(w)) <= 1e-9 for w in lam):
        return None
    for h, c in enumerate(used):
        lab[list(c)] = h
    return lab if np.all(lab >= 0) else None


def _retire(master: Master, pi: np.ndarray, lam: np.ndarray, keep: int,
            protect=frozenset()) -> None:
    """Retire the master's columns out of its last solution ``lam`` (which weighs its first
    len(lam) columns) of largest reduced cost at its duals ``pi`` until ``keep`` remain, or
    until none is left to retire (the pricing finds them again if they price out later):
    those in ``protect``, those of the solution and those added since it stay."""
    rc = np.array([-np.inf if c in protect else v - float(np.sum(pi[list(c)]))
                   for c, v in zip(master.columns, master.costs)])
    rc[np.flatnonzero(lam > 1e-12)] = -np.inf
    rc[len(lam):] = -np.inf  # added since that solve
    # only these may leave: an interior solution can weigh more than ``keep`` columns, and
    # then the rest must not be cut among the ones that stay (the incumbent's clusters
    # left a root's master that way, n = 2 000, k = 20)
    free = np.flatnonzero(np.isfinite(rc))
    extra = min(len(rc) - keep, len(free))
    if extra > 0:
        master.retire(free[np.argpartition(-rc[free], extra - 1)[:extra]])


def _improving(data: PricingData, found, pi: np.ndarray, sigma: np.ndarray, rc_tol: float,
               held: dict, cuts: SubsetRows | None = None, rho=None
               ) -> list[tuple[tuple, float]]:
    """The clusters of ``found`` ((rc, members) pairs) not ``held`` by the master whose
    reduced cost against its duals (``pi``, ``sigma`` of their size class, and ``rho`` of
    the subset-row ``cuts`` they enter) is below ``-rc_tol``, with their costs. (A held
    column can price slightly negative within the LP's own tolerances.)"""
    out = []
    new = [c for _, c in found if c not in held]
    extra = (cuts.charge(new, rho) if cuts is not None and len(cuts) and new
             else np.zeros(len(new)))
    for c, x in zip(new, extra):
        idx = np.asarray(c)
        j = data.size_class(idx)
        if j < 0:
            continue
        cost = data.cost(idx)
        if cost - math.fsum(pi[idx]) - sigma[j] + x < -rc_tol:
            out.append((c, cost))
    return out


def colgen_bound(problem: Problem, *, columns=(), labels=None, upper_bound: float = math.inf,
                 bound_target: float | None = None,
                 time_limit: float | Deadline | None = None, max_iter: int | None = None, seed=0,
                 aggregate: bool = False, box: float = BOX_SHARE,
                 exact_every: int = EXACT_EVERY, mean_exact_every: int | None = None,
                 master_method: str = MASTER_METHOD,
                 duals: np.ndarray | None = None, cuts=None, sr_rounds: int = SR_ROUNDS,
                 branch_below: float | None = None, threads: int = 1, verbose: bool = False,
                 progress: Callable[[int, float], None] | None = None) -> ColGenResult:
    """The set-partitioning LP bound of ``problem`` (a node's super-point problem) by column
    generation, with a safe Lagrangian bound (module doc).

    ``columns``: clusters to start from (super-point tuples, e.g. the parent's, restricted to
    this node); ``labels``: a clustering of the super-points whose clusters start the master
    too; ``upper_bound``: the incumbent SSE (it scales the tolerances); ``bound_target``:
    stop with status 'target' once the bound reaches it (the exact pricing proves no more
    than it needs: docs/safe_bound.md); ``time_limit`` (seconds or a
    :class:`~pcsos.clock.Deadline`, its stop signal polled every iteration) ends the run
    with status 'time_limit', and
    ``max_iter`` with 'max_iter'; the bound is valid at any stop. ``seed``: the random
    pricing centres. ``aggregate``: constraint aggregation from the clusters of ``labels``
    (module :mod:`.aggregation`; without labels there is none). ``box``: the dual box's
    half-width as a share of the mean |dual| at its centre (module doc; 0: off, the duals
    priced are then smoothed). ``exact_every``: the exact pricing runs after every this many
    masters, and after any whose heuristic pricing finds no column; ``mean_exact_every``:
    where that pricing searches over the cluster's mean (with size bounds, or in more than
    CIRCLES_MAX_D dimensions), this many instead (None: ``exact_every``; the tree passes
    CHILD_EXACT_EVERY below the root).
    ``master_method``: how HiGHS solves the master (:data:`~.master.METHODS`). ``duals``:
    duals (one per super-point) to bound before the first master, whose bound is then the
    one to beat and towards which the pricing is smoothed (e.g. the parent's).
    ``branch_below``: stop with status 'branch' once the master (free of artificial columns)
    is worth less than this, after one exact pricing: the LP's value is then below it too,
    so a node whose pruning needs this much will branch whatever the rest of the generation
    proves (with subset-row cuts, once their rounds are spent). ``cuts``: subset-row cuts to
    start with ((t, 3) super-points, e.g. the parent's; module :mod:`.subset_rows`),
    ``sr_rounds``: rounds of them to separate once the LP is solved, at most SR_PER_ROUND
    each (neither applies where the exact pricing cannot carry them: SR_ROUNDS' doc).
    ``threads``: the exact pricing's search over the mean runs in so many threads
    (:func:`~.pricing.price_sized`; the tree gives the root, which runs alone, its workers).
    ``progress``: called with (iteration, bound) at each better bound, so that a caller that
    stops waiting for the result (a tree's time limit) still holds it.
    """
    clock = Deadline.of(time_limit).within()  # its elapsed() counts this run
    rng = np.random.default_rng(seed)
    data = PricingData.from_problem(problem)
    s, k = problem.s, problem.k
    total = float(np.sum(data.q))
    for name, every in (("exact_every", exact_every), ("mean_exact_every", mean_exact_every)):
        if every is not None and not (is_integer(every) and every >= 1):
            raise ValueError(f"{name} must be a positive integer, got {every!r}")
    if mean_exact_every is not None and data.searches_mean:
        exact_every = int(mean_exact_every)
    # the artificial columns' cost boxes the master's duals (each pi_i and sigma is at most
    # about it): at twice the incumbent's SSE, not at the data's whole scatter, the first
    # masters' degenerate duals stay of the optimum's size (fl417, k = 8, from the optimal
    # incumbent: 18 s, where duals of the scatter's size stalled it for 450 s). Where the
    # LP needs wider duals, the box widens (below); any duals give a valid bound.
    # the slack keeps big above every SSE (0 included); 1 alone was 10^7 times the costs of
    # data at 1e-4, and the master's duals followed it
    slack = scatter_unit(total)
    big_max = 2.0 * total + slack
    big = (min(2.0 * upper_bound + slack, big_max) if math.isfinite(upper_bound)
           else big_max)
    # constraint aggregation from the incumbent's clusters (module aggregation); without
    # a clustering to start from, one row per super-point
    agg = (Aggregation(data.e, labels) if labels is not None and aggregate
           else Aggregation.singletons(data.e))
    clusters = _clusters(labels)
    start = _start_columns(data, problem, columns, clusters)
    # the incumbent's clusters stay in the master: while the box binds, its solution may
    # not use them, and without them the restricted LP has no clustering to fall back on
    incumbent = frozenset(clusters)
    waiting: dict[tuple, float] = {}  # incompatible columns met, by members: their costs
    # subset-row cuts: their charges need the search over the mean (and its knapsack) and a
    # row per super-point; their points must have no cannot-link partner (module subset_rows)
    sr = None
    free = np.diff(data.cl_ptr) == 0  # the points a cut may hold
    if (agg.n == s and data.searches_mean
            and (sr_rounds > 0 or (cuts is not None and len(cuts)))):
        start_cuts = np.zeros((0, 3), dtype=np.int64) if cuts is None else np.asarray(cuts)
        sr = SubsetRows(s, [t for t in start_cuts.reshape(-1, 3) if free[t].all()])
    sr_round = 0
    rho = np.zeros(0 if sr is None else len(sr))
    master = _build(agg, data, big, start, [data.cost(np.asarray(c)) for c in start], waiting,
                    master_method, sr)
    splits = 0
    best, best_pi, center = -math.inf, None, None
    alpha, history, boxes = SMOOTHING, [], 0
    status, message = "max_iter", "iteration limit reached"
    max_iter = 100000 if max_iter is None else int(max_iter)
    lam = np.zeros(0)
    lp_value = math.inf
    restricted = math.inf  # the last master's value where it is the restricted LP's
    art_weight, pi_lp = math.inf, None
    it = 0

    budget = FIRST_BOXES
    widened = False  # the last exact pricing was cut short by its budget, which then grew
    profile = dict.fromkeys(("master_seconds", "exact_seconds", "heuristic_seconds"), 0.0)
    profile.update(master_solves=0, master_pivots=0, exact_pricings=0)

    def solve_master(vertex: bool = False):
        nonlocal rho
        t, before = clock.elapsed(), master.pivots
        try:
            out = master.solve(vertex)
            # a cut row's dual is <= 0 at the optimum: clipped, any is a valid multiplier
            rho = np.minimum(master.cut_duals, 0.0)
            return out
        finally:
            profile["master_seconds"] += clock.elapsed() - t
            profile["master_solves"] += 1
            profile["master_pivots"] += master.pivots - before

    def prove(pi: np.ndarray, found, tol: float, sigma=None):
        nonlocal best, best_pi, center, boxes, budget, widened
        t = clock.elapsed()
        # with a target, the pricing proves only what the bound needs to reach it: where it
        # does, the node stops at its target with that bound and no column of this pricing
        enough = (bound_target - math.fsum(pi)
                  if bound_target is not None and sr is None else None)
        # with one size class, L(pi) <= sum(pi) + k rc(c) for every cluster c: once one
        # lies below the best's level, pi cannot better the bound, and a cluster that also
        # prices out against the master's duals (sigma, where pi is the master's) is all
        # this pricing can bring
        stop_below = None
        if (STOP_HOPELESS and sigma is not None and sr is None and data.sized
                and len(data.classes) == 1 and math.isfinite(best)):
            stop_below = min((best - math.fsum(pi)) / k, float(sigma[0]) - tol)
        pr = price_bound(data, pi, k, tol=tol, max_boxes=budget, deadline=clock, found=found,
                         cuts=sr, rho=rho, threads=threads, enough=enough,
                         stop_below=stop_below)
        if pr.sufficed and _bound(pi, pr.term) < bound_target and not clock.expired():
            # short of the target by the bound's rounding alone: price to the minimum
            boxes += pr.boxes
            pr = price_bound(data, pi, k, tol=tol, max_boxes=budget, deadline=clock,
                             found=found, threads=threads)
        profile["exact_seconds"] += clock.elapsed() - t
        profile["exact_pricings"] += 1
        boxes += pr.boxes
        widened = pr.capped and budget < MAX_BOXES
        if widened:
            # cut short by its budget: its bound is weak, and the box centres on it
            budget = min(2 * budget, MAX_BOXES)
        # the cuts' rows are at most 1: each adds its dual (<= 0) to the bound
        L = _bound(pi, tuple(pr.term) + tuple(float(r) for r in rho if r < 0))
        if L > best:
            best, best_pi, center = L, pi.copy(), pi.copy()
            if progress is not None:
                progress(it, best)
        history.append((it, clock.elapsed(), restricted, best))
        return pr

    scale0 = abs(upper_bound) if math.isfinite(upper_bound) else total
    if duals is not None and len(duals) == s and np.all(np.isfinite(duals)):
        prove(np.asarray(duals, dtype=np.float64), (), PRICING_TOL * max(scale0, 1e-300) / k)
    elif labels is not None and box > 0:
        prove(_incumbent_duals(data, clusters), (), PRICING_TOL * max(scale0, 1e-300) / k)
    # the box needs one dual per row: off under constraint aggregation
    delta, box_at = None, None
    box_weight = 0.0
    want_vertex = False  # the next master ends at a vertex (master_method 'ipm')
    for it in range(1, max_iter + 1):
        if bound_target is not None and best >= bound_target:
            # (the duals it started from may prune the node: then no master runs)
            status, message = "target", "the bound reached the target"
            break
        if len(master.columns) > RETIRE_ABOVE and pi_lp is not None:
            _retire(master, pi_lp, lam, RETIRE_TO, incumbent)
        if box > 0 and agg.n == s and center is not None and box_at is not center:
            if delta is None:
                delta = box * max(float(np.mean(np.abs(center))), EPS * total)
            if delta < big:
                master.set_box(center, delta)
            elif master.boxed:
                master.set_box(None)
            box_at = center
        try:
            alpha_lp, sigma, lam, lp_value = solve_master(want_vertex)
        except MasterError as exc:
            status, message = "failed", str(exc)
            break
        want_vertex = False
        pi_lp = agg.disaggregate(alpha_lp)
        art_weight = master.artificial_weight()
        box_weight = master.box_weight() if master.boxed else 0.0
        # the master is the restricted LP (its value bounds the LP's from above, its
        # solution a fractional clustering) when neither artificial nor box columns carry
        # weight
        clean = art_weight < 1e-9 and box_weight < 1e-9
        restricted = lp_value if clean else math.inf
        # the tolerances scale with the optimum: the master's value once it holds a
        # clustering, else the incumbent's, else the total scatter (any SSE is below it)
        scale = (abs(lp_value) if clean else
                 abs(upper_bound) if math.isfinite(upper_bound) else total)
        scale = max(scale, 1e-12 * total, 1e-300)
        rc_tol = 1e-9 * scale / k
        p_tol = PRICING_TOL * scale / k
        if (branch_below is not None and clean and lp_value < branch_below
                and best_pi is not None and (sr is None or sr_round >= sr_rounds)):
            # the restricted master's value bounds the LP's from above: the LP cannot reach
            # the target, so no bound of this node will prune it
            status, message = "branch", "the LP's value is below the target: branch"
            break
        if clock.expired():
            status, message = "time_limit", "time limit reached"
            break
        # in the box, the master's duals are stable enough to price as they are
        smooth = center is not None and alpha > 0 and not master.boxed
        pi = alpha * center + (1 - alpha) * pi_lp if smooth else pi_lp
        used = [np.asarray(c) for c, w in zip(master.columns, lam) if w > 1e-9]
        centres = [(data.e[c, None] * data.m[c]).sum(axis=0) / data.e[c].sum() for c in used]
        pick = rng.choice(s, size=min(s, RANDOM_CENTRES), replace=False)
        centres = np.vstack(centres + [data.m[pick]]) if centres else data.m[pick]
        t = clock.elapsed()
        found = price_heuristic(data, pi, centres, max_columns=COLUMNS_PER_ITERATION,
                                deadline=clock)
        if sr is not None and np.any(rho < 0):
            def value(c, pi_lp=pi_lp, rho=rho):
                idx = np.asarray(c)
                return (data.cost(idx) - math.fsum(pi_lp[idx])
                        + float(sr.charge([c], rho)[0]))

            # as the heuristic's: uncharged, at the duals priced (price_bound adds charges)
            found += [(data.cost(np.asarray(c)) - math.fsum(pi[np.asarray(c)]), c)
                      for c in sr.relieve([c for _, c in found], rho, value,
                                          lambda c: data.allowed(np.asarray(c)))]
        profile["heuristic_seconds"] += clock.elapsed() - t

        add = _improving(data, found, pi_lp, sigma, rc_tol, master.index, sr, rho)
        # while artificial columns hold the master, its duals are of their cost's size and
        # the exact pricing would meet every disk everywhere: the heuristic goes first
        artificial = art_weight > 1e-9
        if (it % exact_every == 0 and not artificial) or not add:
            was = best
            pr = prove(pi, found, p_tol, None if smooth else sigma)
            more = _improving(data, pr.columns, pi_lp, sigma, rc_tol, master.index, sr, rho)
            if pr.stopped and not add and not more:
                # stopped at a cluster that does not price out after all: to the minimum
                pr = prove(pi, found, p_tol)
                more = _improving(data, pr.columns, pi_lp, sigma, rc_tol, master.index, sr, rho)
            if bound_target is not None and best >= bound_target:
                status, message = "target", "the bound reached the target"
                break
            if best > was and box_weight > 1e-9 and delta is not None and data.sized:
                # with sizes, a better bound at duals the box held back: the LP's lie
                # further out, so the next box reaches further (SERIOUS_GROWTH)
                delta *= SERIOUS_GROWTH
            have = {c for c, _ in add}
            add += [c for c in more if c[0] not in have]
            if verbose:
                print(f"colgen it {it:5d} cols {len(master.columns):6d} lp {lp_value:.10g} "
                      f"bound {best:.10g} ({clock.elapsed():.1f} s)", file=sys.stderr,
                      flush=True)  # stdout may carry a --json - document
            if not add:
                if artificial and big < big_max:
                    # the artificial columns are in use: the box may be what holds them
                    big = min(10.0 * big, big_max)
                    master.set_big(big)
                    continue
                if artificial and smooth:
                    # smoothed duals may misprice: price the master's before calling it a
                    # stall (from no clustering, the stall ended sized draws of 32-37 points
                    # at bounds of -45 000 to -360 000, where the master's duals solve them)
                    alpha = 0.0
                    continue
                if artificial:
                    # the clusters the exact pricing meets break the sizes or pairs (where
                    # it relaxes them) and the heuristic finds none that completes the
                    # master: a wider search would not help it
                    status, message = "stalled", ("the pricing finds no cluster that the "
                                                  "sizes allow to complete the master")
                    break
                if widened and not clock.expired():
                    continue  # cut short with nothing to add: price again, wider
                if smooth:
                    alpha = 0.0  # mispricing: the next round prices at the master's duals
                    continue
                if box_weight > 1e-9:
                    # the box binds, and nothing prices out inside it: the LP's duals lie
                    # beyond. Its centre has moved if this bound was the best; else widen it
                    if box_at is center:
                        delta *= BOX_GROWTH
                        box_at = None
                    continue
                if pr.complete and not master.basic and (
                        best < lp_value - k * p_tol - IPM_TOL * abs(lp_value)):
                    # an interior solution stops here once the bound is its value within the
                    # pricing's and the interior-point method's tolerances; else solve again
                    # to a vertex and price its duals (at a vertex of the degenerate master
                    # more columns may price out, which each such round adds)
                    want_vertex = True
                    continue
                if pr.complete and sr is not None and sr_round < sr_rounds and clean:
                    # the LP with these cuts is solved: cut its solution off if it can be
                    sr_round += 1
                    held = master.columns[:len(lam)]
                    first = len(sr)
                    if sr.separate(held, lam, free, SR_PER_ROUND):
                        rows = sr.rows(master.columns)
                        master.add_cuts([[j for j, r in enumerate(rows) if t in r]
                                         for t in range(first, len(sr))])
                        rho = np.concatenate([rho, np.zeros(len(sr) - first)])
                        continue
                if pr.complete:
                    status, message = "solved", "no column of negative reduced cost: LP solved"
                    break
                status, message = "time_limit", "the exact pricing was stopped"
                break
        if add:
            rows = agg.rows([c for c, _ in add])
            rc = [v - math.fsum(pi_lp[list(c)]) - sigma[data.size_class(c)] for c, v in add]
            comp = [j for j, r in enumerate(rows) if r is not None]
            best_j = int(np.argmin(rc))
            if not comp or min(rc[j] for j in comp) >= SPLIT_SHARE * rc[best_j]:
                # the compatible columns are far worse than the best: split the groups the
                # best ones cut, and rebuild the master on the finer rows
                for j in np.argsort(rc, kind="stable")[:SPLIT_COLUMNS]:
                    agg.split(add[int(j)][0])
                splits += 1
                if agg.n > AGGREGATE_MAX_SHARE * s:
                    agg = Aggregation.singletons(data.e)
                waiting.update(add)
                master = _build(agg, data, big, master.columns, master.costs, waiting,
                                master_method, sr)
                lam = np.zeros(0)
            else:
                master.add([add[j][0] for j in comp], [add[j][1] for j in comp],
                           [rows[j] for j in comp],
                           [data.size_class(add[j][0]) for j in comp],
                           sr.rows([add[j][0] for j in comp]) if sr is not None else None)
                waiting.update(add[j] for j, r in enumerate(rows) if r is None)
            while len(waiting) > INCOMPATIBLE_KEPT:
                del waiting[next(iter(waiting))]
            alpha = SMOOTHING
    if status == "solved" and not master.basic:
        # an interior solution of the solved LP: end at a vertex, whose solution is the
        # restricted LP's to the simplex's accuracy (a clustering where it is integral)
        try:
            alpha_lp, sigma, lam, lp_value = solve_master(True)
            art_weight = master.artificial_weight()
        except MasterError:
            pass
    if master.boxed and box_weight > 1e-9 and status != "failed":
        # the box bound the last master: its value and solution are not the restricted LP's
        lam, lp_value, art_weight = np.zeros(0), math.inf, math.inf
        if status not in ("time_limit", "target"):
            # solve the restricted LP itself for its solution (freeing the box may take the
            # simplex many pivots: n = 2 000, k = 20, 17-35 s past a 150 s limit, for which
            # a time limit has no room, so none is reported there; a node pruned at its
            # target needs no solution)
            master.set_box(None)
            try:
                alpha_lp, sigma, lam, lp_value = solve_master()
                art_weight = master.artificial_weight()
            except MasterError:
                pass
    if best_pi is None and status != "failed":
        # stopped before any exact pricing: bound the master's duals now (a stop request
        # cuts this pricing short too; its bound is valid, if weak)
        pi_lp = agg.disaggregate(solve_master()[0]) if it == 0 else pi_lp
        prove(pi_lp, (), PRICING_TOL * max(abs(lp_value) if math.isfinite(lp_value) else total,
                                             1e-300) / k)
    profile["master_columns"] = len(master.columns)  # at the end, retired ones not counted
    # the columns of the last master solved, which lam weighs (more may have come since)
    held, held_costs = master.columns[:len(lam)], master.costs[:len(lam)]
    Z = _matrix(s, held, lam, data.e)
    lab = _labels(s, held, lam) if held and art_weight < 1e-9 else None
    # an SSE is never negative: a Lagrangian below 0 (duals far from the LP's, as after a stop
    # in the first pricing) bounds no better than 0
    return ColGenResult(max(best, 0.0), lp_value, status, list(held), lam, Z, lab, best_pi,
                        it, clock.elapsed(), message, boxes, history,
                        costs=list(held_costs), rows=agg.n, splits=splits, profile=profile,
                        cuts=(sr.triples.copy() if sr is not None
                              else np.zeros((0, 3), dtype=np.int64)))


def _build(agg: Aggregation, data: PricingData, big: float, columns: list[tuple],
           costs: list[float], waiting: dict, method: str,
           cuts: SubsetRows | None = None) -> Master:
    """A master (solved by ``method``) on ``agg``'s groups and ``data``'s size classes
    (and the subset-row ``cuts``, on one row per super-point) holding the compatible ones of
    ``columns`` (with their ``costs``) and of the ``waiting`` incompatible columns (which
    lose those)."""
    held = set(columns)
    cols = list(columns) + [c for c in waiting if c not in held]
    vals = list(costs) + [waiting[c] for c in cols[len(columns):]]
    rows = agg.rows(cols)
    # without sizes the class row may hold at most k clusters (Master): the same LP, and a
    # dual sigma <= 0, which an interior solution's central duals need (with k = s, sigma
    # is free on the optimal face, and its centre put it above zero, the bound far below)
    master = Master(agg.n, [n for _, _, n in data.classes], big, method,
                    at_most=not data.sized)
    keep = [j for j, r in enumerate(rows) if r is not None]
    if cuts is not None and len(cuts):
        master.add_cuts([[] for _ in range(len(cuts))])
    master.add([cols[j] for j in keep], [vals[j] for j in keep], [rows[j] for j in keep],
               [data.size_class(cols[j]) for j in keep],
               cuts.rows([cols[j] for j in keep]) if cuts is not None else None)
    for j in keep:
        waiting.pop(cols[j], None)
    for j, r in enumerate(rows):
        if r is None:
            waiting[cols[j]] = vals[j]
    return master


def inherit_columns(res: ColGenResult, parent_map: np.ndarray, s_child: int,
                    limit: int = INHERITED_COLUMNS) -> ColumnStart:
    """The columns of a parent's result that are columns of a child whose super-points are
    ``parent_map`` of the parent's (a must-link merge, or the identity): those that hold
    each child super-point whole or not at all, mapped onto it. Kept: the LP solution's and
    up to ``limit`` more of least reduced cost at the parent's bound duals (the child's
    master drops those that break its cannot-link pairs or sizes), and those duals mapped
    onto the child."""
    parent_map = np.asarray(parent_map, dtype=np.int64)
    lam = np.asarray(res.lam)
    order = np.arange(len(res.columns))
    if res.pi is not None and len(res.costs) == len(res.columns):
        rc = np.array([v - math.fsum(res.pi[list(c)]) for c, v in zip(res.columns, res.costs)])
        order = np.argsort(rc, kind="stable")
    used = np.zeros(len(res.columns), dtype=bool)
    used[:len(lam)] = lam > 1e-9
    picked = np.concatenate([np.flatnonzero(used), [j for j in order if not used[j]][:limit]])
    whole = np.bincount(parent_map, minlength=s_child)
    out, seen = [], set()
    for j in picked.astype(np.int64):
        mapped = parent_map[list(res.columns[j])]
        kids, n_in = np.unique(mapped, return_counts=True)
        if np.array_equal(n_in, whole[kids]):
            key = tuple(int(v) for v in kids)
            if key not in seen:
                seen.add(key)
                out.append(key)
    # a child's clusters are clusters of the parent (a merge keeps a pair together, a
    # cannot-link pair forbids some), so at the parent's duals summed over merged points its
    # least reduced cost is no lower: its bound there is at least the parent's (at the same
    # duals without cuts; the tree keeps the larger of the two bounds anyway)
    duals = (None if res.pi is None else
             np.bincount(parent_map, weights=res.pi, minlength=s_child).astype(np.float64))
    cuts = SubsetRows(len(parent_map), res.cuts).inherit(parent_map) if len(res.cuts) else None
    return ColumnStart.pack(out, duals, cuts)


def column_mip(res: ColGenResult, problem: Problem, *,
               time_limit: float | Deadline | None = None) -> np.ndarray | None:
    """The best clustering of ``problem``'s super-points made of ``res``'s columns (a
    set-partitioning MIP in HiGHS, with a row per size class, within ``time_limit``:
    seconds or a Deadline), as labels; None when it finds none."""
    if not res.columns or len(res.costs) != len(res.columns):
        return None
    data = PricingData.from_problem(problem)
    s = problem.s
    cls = np.array([data.size_class(c) for c in res.columns], dtype=np.int64)
    keep = np.flatnonzero(cls >= 0)
    cols = [res.columns[j] for j in keep]
    if not cols:
        return None
    idx = np.concatenate([np.asarray(c, dtype=np.int64) for c in cols] + [s + cls[keep]])
    jdx = np.concatenate([np.full(len(c), j, dtype=np.int64) for j, c in enumerate(cols)] +
                         [np.arange(len(cols), dtype=np.int64)])
    r = len(data.classes)
    A = csc_matrix((np.ones(len(idx)), (idx, jdx)), shape=(s + r, len(cols)))
    A.sort_indices()
    rows = np.concatenate([np.ones(s), [float(n) for _, _, n in data.classes]])
    m = len(cols)
    mip = Milp(np.asarray(res.costs, dtype=np.float64)[keep], A, rows, rows, np.zeros(m),
               np.ones(m), np.ones(m, dtype=bool), name="column MIP")
    out = adapter("highs").solve(mip, time_limit=time_limit)
    if out.x is None:
        return None
    lab = np.full(s, -1, dtype=np.int64)
    for h, j in enumerate(np.flatnonzero(out.x > 0.5)):
        lab[list(cols[j])] = h
    return lab if np.all(lab >= 0) else None
