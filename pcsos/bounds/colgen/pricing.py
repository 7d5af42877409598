"""Pricing for the set-partitioning LP: find clusters of negative reduced cost, and prove a
lower bound on the least reduced cost (docs/safe_bound.md, "The set-partitioning LP").

A cluster c of super-points costs cost(c) = sum_{i in c} q_i - ||W(c)||^2 / e(c) (its SSE;
q_i is super-point i's weighted sum of squared centred norms, W and e as in
:class:`~pcsos.problem.Problem`). Against duals pi its reduced cost is
rc(c) = cost(c) - pi(c), and

    min over c of rc(c) = min over y in R^d of sum_i min(0, g_i(y)),
    g_i(y) = e_i ||m_i - y||^2 + within_i - pi_i,

with m_i = W_i / e_i and within_i = q_i - ||W_i||^2 / e_i >= 0 (the scatter inside the
super-point): for a fixed y the best cluster takes the i with g_i(y) < 0, and for a fixed c
the best y is its mean. The empty cluster (value 0) is inside the min on the right, so the
right side is min(0, the least reduced cost), which is all a lower bound needs.

:func:`price_heuristic` improves clusters from given centres (a few Lloyd steps on the
disks g_i < 0). :func:`price_exact` is a best-first branch-and-bound over boxes of y: over
a box B, g_i >= e_i dist(m_i, B)^2 + within_i - pi_i, so the sum of the negative parts of
these is a lower bound of the least reduced cost of any y in B. Its result is a proven lower
bound at any stop (the least bound over the boxes still open), rounded outward.
The exact pricing minimises over clusters that obey the cannot-link pairs: a box's bound
sums the points' least values over the sets that obey the pairs inside (an exact search per
component of the pairs' graph; a matching of them where that search is too long), and the
clusters it meets are repaired.

With cluster sizes, the clusters fall into size classes (:attr:`PricingData.classes`: one per
exact size value, or one for the size range), each with the number of clusters it holds,
and :func:`price_sized` bounds the least reduced cost within one class by a search over the
cluster's mean: for a cluster T whose mean lies in a box B (centre y0, half diagonal r),
rc(T) = g_T(mean) >= sum_{i in T} (g_i(y0) - e_i r^2), so the least of that sum over the
sets of count in [lo, hi] that obey the cannot-link pairs (an exact knapsack,
:func:`knapsack_groups`) bounds every such cluster. The heuristic returns only clusters that
obey the pairs and the sizes.
"""

from __future__ import annotations

import heapq
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pcsos._kernels._pricing import (
    box_lower,
    centre_cluster,
    cluster_rc,
    knapsack,
    repair,
    sized_search,
)
from pcsos.bounds.colgen.subset_rows import SubsetRows
from pcsos.clock import Deadline
from pcsos.problem import Problem, cl_adjacency

__all__ = ["PricingData", "PricingResult", "price_heuristic", "price_exact", "price_sized",
           "price_bound"]

EPS = float(np.finfo(np.float64).eps)
#: Lloyd steps of the heuristic pricing from each centre
LLOYD_STEPS = 8


@dataclass(frozen=True)
class PricingData:
    """What pricing reads of a node's :class:`~pcsos.problem.Problem` (fixed per node)."""

    e: np.ndarray        # (s,) masses
    counts: np.ndarray   # (s,) numbers of original points
    m: np.ndarray        # (s, d) means of the super-points (centred data)
    q: np.ndarray        # (s,) weighted sums of squared centred norms
    within: np.ndarray   # (s,) scatter inside each super-point, >= 0
    mag: np.ndarray      # (s,) q_i + e_i ||m_i||^2: the magnitude that rounding scales with
    cl: np.ndarray       # (p, 2) cannot-link pairs between super-points
    #: the size classes ((lo, hi, clusters) each: so many clusters have a count in
    #: [lo, hi]); one class (1, n, k) without sizes
    classes: tuple = ()
    cl_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    cl_idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def from_problem(cls, problem: Problem) -> PricingData:
        e = np.asarray(problem.e, dtype=np.float64)
        W = np.asarray(problem.W, dtype=np.float64)
        Xc, w = problem.Xc, problem.point_weights
        q = np.bincount(problem.point_labels, weights=w * np.einsum("ij,ij->i", Xc, Xc),
                        minlength=problem.s)
        m = W / e[:, None]
        within = np.maximum(q - np.einsum("ij,ij->i", W, m), 0.0)
        mag = q + e * np.einsum("ij,ij->i", m, m)
        inst = problem.instance
        if inst.sizes is not None:
            values = sorted(set(inst.sizes), reverse=True)
            classes = tuple((v, v, inst.sizes.count(v)) for v in values)
        else:
            lo, hi = inst.size_bounds()
            classes = ((int(lo), int(hi), int(problem.k)),)
        adj = cl_adjacency(problem.s, problem.cl)
        counts = np.asarray(problem.counts, dtype=np.int64)
        ptr = np.zeros(problem.s + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(a) for a in adj])
        idx = np.concatenate([np.zeros(0, dtype=np.int64), *adj])
        return cls(e, counts, np.ascontiguousarray(m), q, within, mag,
                   np.asarray(problem.cl, dtype=np.int64), classes, ptr, idx)

    @property
    def s(self) -> int:
        return len(self.e)

    @cached_property
    def groups(self) -> tuple:
        """The sized search's knapsack groups (:func:`knapsack_groups`), fixed per node."""
        return knapsack_groups(self.counts, self.cl_ptr, self.cl_idx)

    @cached_property
    def unit(self) -> float:
        """The least length that counts as a magnitude in the floors of the box search: 1
        in the data's units, or the largest |coordinate| of the means where that is
        smaller (positive even when all are 0). A floor of 1 alone stopped the splits of
        data at 1e-12 at boxes of their own size, and their pricing never closed."""
        return max(min(1.0, float(np.abs(self.m).max(initial=0.0))), 1e-300)

    @cached_property
    def principal(self) -> tuple:
        """``(m, margin)``: the super-points' means in their principal axes (the
        mass-weighted covariance's eigenvectors, largest first) and the relative error of
        distances in that frame (the rotation's defect from orthogonality and the product's
        rounding; docs/safe_bound.md), fixed per node."""
        d = self.m.shape[1]
        mw = (self.e[:, None] * self.m).sum(axis=0) / self.e.sum()
        cov = ((self.m - mw).T * self.e) @ (self.m - mw)
        R = np.ascontiguousarray(np.linalg.eigh(cov)[1][:, ::-1])
        margin = float(np.linalg.norm(R.T @ R - np.eye(d), 2)) + 4.0 * d * EPS
        return np.ascontiguousarray(self.m @ R), margin

    def cost(self, col: np.ndarray) -> float:
        """The SSE of the cluster made of the super-points ``col``."""
        Wc = (self.e[col, None] * self.m[col]).sum(axis=0)
        return float(math.fsum(self.q[col]) - Wc @ Wc / self.e[col].sum())

    @property
    def sized(self) -> bool:
        """Whether any size constraint binds (else the one class holds every cluster)."""
        (lo, hi, _), *rest = self.classes
        return bool(rest) or lo > 1 or hi < int(self.counts.sum())

    @property
    def searches_mean(self) -> bool:
        """Whether the exact pricing searches over the cluster's mean (:func:`price_sized`:
        with sizes, or in more than CIRCLES_MAX_D dimensions), not over the disks."""
        return self.sized or self.m.shape[1] > CIRCLES_MAX_D

    def size_class(self, col) -> int:
        """The index of the size class of the cluster ``col`` (-1: no class allows it)."""
        size = int(self.counts[np.asarray(col, dtype=np.int64)].sum())
        for j, (lo, hi, _) in enumerate(self.classes):
            if lo <= size <= hi:
                return j
        return -1

    def allowed(self, col: np.ndarray) -> bool:
        """Whether the cluster ``col`` obeys the cannot-link pairs and the sizes."""
        if self.size_class(col) < 0:
            return False
        inside = np.zeros(self.s, dtype=bool)
        inside[col] = True
        return not (len(self.cl) and np.any(inside[self.cl[:, 0]] & inside[self.cl[:, 1]]))


def _members(data: PricingData, base: np.ndarray, y: np.ndarray, lo: int, hi: int
             ) -> np.ndarray:
    """The super-points with g_i(y) = e_i ||m_i - y||^2 + base_i < 0 (``base``: within_i -
    pi_i) if they hold a count in [lo, hi]; else the most negative ones up to hi points, or
    the lo points of least g_i (a cluster the range allows)."""
    diff = data.m - y
    g = data.e * np.einsum("ij,ij->i", diff, diff) + base
    col = np.flatnonzero(g < 0)
    size = int(data.counts[col].sum())
    if size > hi or size < lo:
        order = np.argsort(g, kind="stable")
        filled = np.cumsum(data.counts[order])
        if size > hi:
            col = order[:int(np.searchsorted(filled, hi, side="right"))]
        else:
            col = order[:int(np.searchsorted(filled, lo, side="left")) + 1]
        col = np.sort(col)
    return col


def _repair(data: PricingData, base: np.ndarray, col: np.ndarray, y: np.ndarray,
            work: np.ndarray) -> np.ndarray:
    """Drop members until no cannot-link pair is inside: of each violated pair, the member
    whose term g_i(y) is the larger (the one the cluster gains less from). ``work``: the
    kernel's scratch (module :mod:`pcsos._kernels._pricing`)."""
    if not len(data.cl):
        return col
    return repair(data.m, data.e, base, np.ascontiguousarray(col, dtype=np.int64),
                  np.ascontiguousarray(y, dtype=np.float64), data.cl_ptr, data.cl_idx, work)


def price_heuristic(data: PricingData, pi: np.ndarray, centres: np.ndarray,
                    max_columns: int = 50, rc_tol: float = 0.0,
                    deadline: Deadline | None = None) -> list[tuple[float, tuple]]:
    """Clusters of reduced cost below ``-rc_tol`` found by Lloyd steps from ``centres``
    ((t, d) points), in each size class: the best ``max_columns``, as (reduced cost, sorted
    member tuple); each obeys the cannot-link pairs and the sizes. Past ``deadline`` no
    further centre is tried (thousands of centres at s = 5 000 with 5 000 cannot-link pairs
    took 4 s a call, and a 3 s limit ran 30 s)."""
    found: dict[tuple, float] = {}
    work = np.full(data.s, -1, dtype=np.int64)
    base = data.within - pi  # g_i(y) = e_i ||m_i - y||^2 + base_i
    for y0 in np.atleast_2d(centres):
        if deadline is not None and deadline.expired():
            break
        for lo, hi, _ in data.classes:
            y = y0
            col = _members(data, base, y, lo, hi)
            for _ in range(LLOYD_STEPS):
                if not len(col):
                    break
                col = _repair(data, base, col, y, work)
                y_new = (data.e[col, None] * data.m[col]).sum(axis=0) / data.e[col].sum()
                nxt = _repair(data, base, _members(data, base, y_new, lo, hi), y_new, work)
                y = y_new
                if len(nxt) == len(col) and np.array_equal(nxt, col):
                    break
                col = nxt
            if not len(col):
                continue
            key = tuple(int(i) for i in col)
            if key in found or not data.allowed(col):
                continue
            rc = data.cost(col) - math.fsum(pi[col])
            if rc < -rc_tol:
                found[key] = rc
    best = sorted(found.items(), key=lambda kv: kv[1])[:max_columns]
    return [(rc, key) for key, rc in best]


@dataclass
class PricingResult:
    """``lower``: a proven lower bound on min(0, least reduced cost) over every cluster
    (:func:`price_exact`), or on the least reduced cost in one size class
    (:func:`price_sized`); ``best``: the least reduced cost found, with its ``columns``
    (reduced cost, members), those that obey the pairs and sizes; ``complete``: the search
    ended (``lower`` is then within its tolerance of the relaxed minimum); ``boxes``: boxes
    evaluated; ``term``: (:func:`price_bound`) what the Lagrangian bound adds to sum(pi),
    a sum of clusters times lower bounds, one per size class, as terms to add; ``capped``:
    a search stopped at its box budget (not by its deadline nor complete); ``sufficed``:
    (:func:`price_bound` with ``enough``) the searches ended and none met a cluster below
    the start that ``enough`` set: the term is then at least ``enough`` up to its rounding,
    and the result is not ``complete``, which says that the minimum is within the
    tolerance; ``stopped``: (``stop``, ``stop_below``) the search ended at a cluster below
    the value asked, before the minimum (not ``complete``): one of its columns, or the
    start it was given (``found``'s least)."""

    lower: float
    best: float
    columns: list
    complete: bool
    boxes: int
    term: tuple = ()
    capped: bool = False
    sufficed: bool = False
    stopped: bool = False


#: a box whose circles crossing it are at most this many is bounded exactly, one convex
#: quadratic per subset of them
EXACT_CROSSING = 10


def _box_lower(data: PricingData, pi: np.ndarray, base: np.ndarray, cand: np.ndarray,
               lo: np.ndarray, hi: np.ndarray, work: np.ndarray):
    """A lower bound of sum_i min(0, g_i(y)) over the box [lo, hi] among clusters obeying
    the cannot-link pairs, the candidates (of ``cand``) whose disk g_i < 0 meets it, and
    the set that attains the bound where it is exact (else None).

    A point whose disk holds the whole box (g_i < 0 at its farthest corner) and that has no
    cannot-link partner among those meeting the box is in the cluster of every y in the
    box. The sum of such g_i is a convex quadratic, e_S ||y||^2 - 2 b_S.y + c_S, least over
    the box at b_S / e_S clipped to it. With at most ``EXACT_CROSSING`` other points (the
    circles that cross the box, and the cannot-link ends), each subset of them that obeys
    the pairs adds its own terms to that quadratic, and the least over the subsets is the
    exact minimum over the box: so the search ends even where the optimal centre lies on
    a circle, as it does at degenerate duals. With more, each adds its least value over the
    box, e_i dist(m_i, B)^2 + within_i - pi_i, when negative, summed over the sets that obey
    the cannot-link pairs among them: the least such sum, by an exact search over the
    independent sets of each component of the pairs' graph (the set it takes is returned);
    a component too large for it takes a matching of its pairs, of which only the more
    negative end counts (any matching bounds the best set obeying all of them).
    """
    # every term is computed with a relative error of a few (d + 4) ulps of its magnitude
    # (e_i (||m_i||^2 + ||y||^2) <= 3 e_i ||m_i||^2 + 2 e_i far_i^2 for y in the box), and
    # the sums add at most len ulps of the total (docs/safe_bound.md): the kernel takes
    # that margin off its value
    return box_lower(data.m, data.e, base, data.mag, pi, cand, lo, hi, data.cl_ptr,
                     data.cl_idx, EXACT_CROSSING, work)


#: the exact pricing bounds boxes by the disks g_i < 0 (their crossings, exactly) up to this
#: dimension, and searches over the cluster's mean (:func:`price_sized`) above it: at d = 3
#: (n = 1 000, k = 20, 500 pairs) the mean's left the LP at 1.56 % after 300 s, where the
#: disks' had 0.14 %; from d = 4 on it is the faster (iris, seeds, glass: 0.01-0.17 s
#: against 1 s, 57 s and unfinished)
CIRCLES_MAX_D = 3


def price_exact(data: PricingData, pi: np.ndarray, *, tol: float, max_boxes: int = 200000,
                deadline: Deadline | None = None, start: float = 0.0,
                cuts: SubsetRows | None = None, rho: np.ndarray | None = None,
                threads: int = 1
                ) -> PricingResult:
    """Branch-and-bound over the centre y (module doc): a proven lower bound on
    min(0, least reduced cost), within ``tol`` of it when the search completes. Above
    ``CIRCLES_MAX_D`` dimensions, :func:`price_sized`'s search over every count (with
    ``SIZED_BOXES`` times ``max_boxes``).

    Stops after ``max_boxes`` boxes or when ``deadline`` (a :class:`~pcsos.clock.Deadline`)
    has expired (polled every 64 boxes); the bound is valid at any stop. ``start``: a
    value to prune from at the outset, e.g. a reduced cost already found (the heuristic's
    best); from any start the bound is valid, and the search completes to the minimum
    where a cluster lies below it (:func:`price_bound`'s ``enough``). ``cuts``, ``rho``:
    subset-row cuts and their duals, whose charges the search over the mean carries
    (:func:`price_sized`); the search over the disks leaves them out, a lower bound still
    (they only add). ``threads``: the search over the mean's (:func:`price_sized`); the
    search over the disks runs in one.
    """
    pi = np.asarray(pi, dtype=np.float64)
    if data.m.shape[1] > CIRCLES_MAX_D:
        # in more dimensions the search over the cluster's mean (price_sized with every
        # count) closes where this one does not
        pr = price_sized(data, pi, 1, int(data.counts.sum()), tol=tol,
                         max_boxes=SIZED_BOXES * max_boxes, deadline=deadline,
                         start=min(0.0, float(start)), cuts=cuts, rho=rho, threads=threads)
        return PricingResult(min(0.0, pr.lower), min(0.0, pr.best),
                             [c for c in pr.columns if c[0] < 0], pr.complete, pr.boxes,
                             capped=pr.capped)
    cand = np.flatnonzero(data.within - pi < 0)
    best, columns, seen = min(0.0, float(start)), [], set()
    if not len(cand):
        return PricingResult(0.0, 0.0, [], True, 0)
    # the disks g_i < 0, a little wider than computed, so that rounding cannot leave a
    # point of one outside the first box
    r = np.sqrt((pi[cand] - data.within[cand]) / data.e[cand]) * (1 + 1e-6)
    pad = r[:, None] + 1e-9 * (data.unit + np.abs(data.m[cand]))
    lo = (data.m[cand] - pad).min(axis=0)
    hi = (data.m[cand] + pad).max(axis=0)
    base = data.within - pi
    work = np.full(data.s, -1, dtype=np.int64)
    lb0, cand0, _ = _box_lower(data, pi, base, cand, lo, hi, work)
    heap = [(lb0, 0, lo, hi, cand0)]
    counter, boxes, polls = 1, 1, 1
    # best is the value of a real (relaxed) cluster computed in floating point: the true one
    # may sit below it by this much (docs/safe_bound.md)
    slack = 8.0 * (data.m.shape[1] + 4 + data.s) * EPS * float(np.sum(data.mag + np.abs(pi)))
    while heap:
        lb, _, lo, hi, cand = heap[0]
        if lb >= best - tol:
            break  # every open box is within tol of the best found
        if boxes >= max_boxes or (deadline is not None and polls % 64 == 0
                                  and deadline.expired()):
            break
        polls += 1
        heapq.heappop(heap)
        # the cluster at the box's centre (cannot-link pairs repaired) bounds the minimum
        # from above; where it improves, Lloyd steps from there give more clusters
        y = 0.5 * (lo + hi)
        relaxed, mem = centre_cluster(data.m, data.e, base, data.q, pi, cand, y,
                                      data.cl_ptr, data.cl_idx, work)
        if len(mem):
            if relaxed < best:
                best = relaxed
                found = price_heuristic(data, pi, y[None, :], max_columns=1,
                                        deadline=deadline)
                if data.allowed(mem):
                    found.append((relaxed, tuple(int(i) for i in mem)))
                for rc, key in found:
                    if key not in seen:
                        seen.add(key)
                        columns.append((rc, key))
        width = hi - lo
        axis = int(np.argmax(width))
        if not width[axis] > 1e-12 * (data.unit + float(np.abs(lo).max())):
            heapq.heappush(heap, (lb, counter, lo, hi, cand))
            break  # a box too small to split: its bound is final
        mid = 0.5 * (lo[axis] + hi[axis])
        for a, b in ((lo[axis], mid), (mid, hi[axis])):
            clo, chi = lo.copy(), hi.copy()
            clo[axis], chi[axis] = a, b
            clb, ccand, cmem = _box_lower(data, pi, base, cand, clo, chi, work)
            boxes += 1
            if cmem is not None and len(cmem):
                # the set that attains a box's exact bound: the greedy repair at the centre
                # can miss it, and without it the search could not close the box
                val = cluster_rc(data.m, data.e, data.q, pi, cmem)
                if val < best:
                    best = val
                    key = tuple(int(i) for i in cmem)
                    if key not in seen and data.allowed(cmem):
                        seen.add(key)
                        columns.append((val, key))
            if len(ccand) and clb < best - tol:
                heapq.heappush(heap, (clb, counter, clo, chi, ccand))
                counter += 1
    # every box pruned had a bound >= best - tol at the time, and best only decreased
    open_lb = heap[0][0] if heap else math.inf
    complete = open_lb >= best - tol
    lower = min(0.0, open_lb, best - tol - slack)
    columns.sort()
    return PricingResult(lower, best, [c for c in columns if c[0] < 0], complete, boxes,
                         capped=not complete and boxes >= max_boxes)


def _sized_frame(data: PricingData, lo: int):
    """Where the sized search runs: ``(m, blo, bhi, margin)``, the super-points' means in
    their principal axes (:attr:`PricingData.principal`: the search splits the widest side,
    and there the boxes shrink along the data's spread first), a box of that frame that
    holds the mean of every cluster of at least ``lo`` points, and the relative error of
    distances in that frame."""
    m, margin = data.principal
    d = m.shape[1]
    blo, bhi = m.min(axis=0), m.max(axis=0)  # a mean is a convex combination of the m_i
    cnt = data.counts.astype(np.float64)
    if lo > 1 and np.array_equal(data.e, cnt):
        # without point weights a cluster's mean is that of its points, and along an axis
        # it is at least the mean of the lo lowest points (by the super-points' values,
        # the last taken in part) and at most that of the lo highest
        pad = 1e-12 * (data.unit + np.abs(m).max(axis=0))
        for side, sign in ((blo, 1.0), (bhi, -1.0)):
            order = np.argsort(sign * m, axis=0, kind="stable")
            for ax in range(d):
                col = order[:, ax]
                cum = np.cumsum(cnt[col])
                j = int(np.searchsorted(cum, lo))
                if j >= len(col):
                    continue
                whole = col[:j]
                total = float(np.dot(cnt[whole], m[whole, ax]))
                total += (lo - (float(cum[j - 1]) if j else 0.0)) * float(m[col[j], ax])
                edge = total / lo - sign * pad[ax]
                side[ax] = max(side[ax], edge) if sign > 0 else min(side[ax], edge)
        bhi = np.maximum(bhi, blo)
    return m, blo, bhi, margin


#: a component of the cannot-link pairs with more sets that obey them than this is relaxed
#: in the sized pricing's knapsack (its points enter it alone): a valid, weaker bound
GROUP_SETS = 256


def knapsack_groups(counts: np.ndarray, cl_ptr: np.ndarray, cl_idx: np.ndarray,
                    triples=(), charges=()):
    """The groups of the sized pricing's knapsack (``knapsack`` of the compiled kernel):
    ``(unit, gptr, ocnt, optr, omem, oadd)``, int64 arrays but the last (float64).
    ``unit``: the super-points of one point and no cannot-link partner; each other
    super-point without partners is a group of one option, and each component of the
    cannot-link pairs' graph a group whose options are its non-empty sets that obey the
    pairs (at most one option of a group is taken), or, past ``GROUP_SETS`` such sets, its
    points each on their own (the pairs relaxed). ``oadd``: what taking each option adds.

    ``triples``: point-disjoint triples of super-points without cannot-link partners, each
    a group whose options are its non-empty subsets, those of two or three points adding
    its ``charges`` (>= 0; a subset-row cut's, pcsos.bounds.colgen.subset_rows)."""
    s = len(counts)
    seen = np.zeros(s, dtype=bool)
    unit, gptr, ocnt, optr, omem, oadd = [], [0], [], [0], [], []

    def option(members, add=0.0):
        omem.extend(members)
        optr.append(len(omem))
        ocnt.append(int(counts[list(members)].sum()))
        oadd.append(float(add))

    for t, charge in zip(triples, charges):
        a, b, c = (int(v) for v in t)
        seen[[a, b, c]] = True
        for members in ((a,), (b,), (c,), (a, b), (a, c), (b, c), (a, b, c)):
            option(members, charge if len(members) > 1 else 0.0)
        gptr.append(len(ocnt))
    for i in range(s):
        if seen[i]:
            continue
        comp, stack = [], [i]
        seen[i] = True
        while stack:
            a = stack.pop()
            comp.append(a)
            for b in cl_idx[cl_ptr[a]:cl_ptr[a + 1]]:
                if not seen[b]:
                    seen[b] = True
                    stack.append(int(b))
        sets = [()]
        for a in sorted(comp):
            near = set(int(b) for b in cl_idx[cl_ptr[a]:cl_ptr[a + 1]])
            sets += [t + (a,) for t in sets if not near.intersection(t)]
            if len(sets) > GROUP_SETS + 1:
                break
        if len(comp) > 1 and len(sets) <= GROUP_SETS + 1:
            for t in sets[1:]:
                option(t)
            gptr.append(len(ocnt))
            continue
        for a in sorted(comp):
            if counts[a] == 1:
                unit.append(a)
            else:
                option((a,))
                gptr.append(len(ocnt))
    return (*(np.asarray(x, dtype=np.int64) for x in (sorted(unit), gptr, ocnt, optr, omem)),
            np.asarray(oadd, dtype=np.float64))


#: boxes of the sized search per box of :func:`price_bound`'s budget: a box there is one
#: pass over the points and two knapsacks (about 1.7 us on glass, s = 214, d = 9), where one
#: of :func:`price_exact` costs tens of microseconds (0.3-0.55 s per 7 000-10 600 boxes on
#: the overlapping n = 2 000, k = 20 root)
SIZED_BOXES = 64
#: centres of the search where its best improved whose clusters become columns (the last)
SIZED_COLUMNS = 8
#: with ``threads`` > 1 the sized search's box is cut into this many slabs per thread along
#: its widest side, which the threads take in turn (a slab of little work frees its thread
#: for the next), sharing the least value found and the budget of boxes
SLABS_PER_THREAD = 4


def _slabs(blo: np.ndarray, bhi: np.ndarray, parts: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The box [blo, bhi] cut into ``parts`` equal slabs along its widest side (their union
    is the box: linspace's ends are blo and bhi exactly, neighbours share each cut, and a
    mean on a shared face lies in both)."""
    if parts <= 1:
        return [(blo, bhi)]
    ax = int(np.argmax(bhi - blo))
    cuts = np.linspace(blo[ax], bhi[ax], parts + 1)
    out = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        lo, hi = blo.copy(), bhi.copy()
        lo[ax], hi[ax] = a, b
        out.append((lo, hi))
    return out


def price_sized(data: PricingData, pi: np.ndarray, lo: int, hi: int, *, tol: float,
                max_boxes: int = 200000, deadline: Deadline | None = None,
                start: float = math.inf, cuts: SubsetRows | None = None,
                rho: np.ndarray | None = None, threads: int = 1,
                stop: float = -math.inf) -> PricingResult:
    """Branch-and-bound over the centre y for the clusters of count in [``lo``, ``hi``]
    (module doc): a proven lower bound on their least reduced cost among the sets that
    obey the cannot-link pairs (:func:`knapsack_groups`), within ``tol`` of that minimum
    when the search completes. Stops as :func:`price_exact` does; ``start``: a value to
    prune from, as :func:`price_exact`'s (a reduced cost found: its cuts' charges
    included). ``cuts``, ``rho``: subset-row cuts and their duals (<= 0): a cluster's
    reduced cost then adds -rho_T for each cut T of which it holds two points or three,
    and the knapsack carries that as a group per cut with rho_T < 0
    (:func:`knapsack_groups`). ``threads``: searches run side by side on slabs of the box
    (SLABS_PER_THREAD; the search holds no GIL). ``stop``: end as soon as a cluster of
    reduced cost below it is found (``stopped``; the bound is then valid but not the
    minimum's).

    The search (the compiled ``sized_search``) partitions a box that holds every such
    cluster's mean, and bounds the clusters whose mean lies in a box B (y0 its centre, r its
    half diagonal) by the least sum of g_i(y0) - e_i r^2 over the sets of the count range
    (an exact knapsack): for such a cluster T, rc(T) = g_T(mean) = g_T(y0) - e_T
    ||mean - y0||^2. The bound is off by at most e_T r^2, so the search closes as the boxes
    shrink; the same knapsack of g_i(y0) is a cluster's value, at least its reduced cost.
    """
    pi = np.asarray(pi, dtype=np.float64)
    base = data.within - pi
    d = data.m.shape[1]
    m, blo, bhi, margin = _sized_frame(data, lo)
    # every value is a sum of s terms, each within a few (d + 4) ulps of its magnitude
    # (e_i ||m_i - y||^2 <= 2 e_i (||m_i||^2 + ||y||^2), y in the box): the margin covers
    # them and the sums; and a cluster's value in the rotated frame is within ``margin`` of
    # its scatter, at most 2 sum mag, of the true one (docs/safe_bound.md); the cuts'
    # charges enter the sums too
    groups, charges = data.groups, 0.0
    if cuts is not None and len(cuts):
        rho = np.minimum(np.asarray(rho, dtype=np.float64), 0.0)
        active = rho < 0
        groups = knapsack_groups(data.counts, data.cl_ptr, data.cl_idx,
                                 cuts.triples[active], -rho[active])
        charges = float(np.sum(-rho))
    far = float(np.sum(np.maximum(np.abs(blo), np.abs(bhi)) ** 2))
    slack = 8.0 * (d + 4 + data.s) * EPS * (float(
        np.sum(2 * data.mag + 2 * data.e * far + np.abs(pi))) + charges)
    slack += 2.0 * margin * float(np.sum(data.mag))
    poll = deadline.expired if deadline is not None else None
    # a search's best is a set's value, at least its reduced cost less the slack: below
    # stop - slack, that set's reduced cost is below stop
    stop_at = float(stop) - slack if math.isfinite(stop) else -math.inf
    threads = max(int(threads), 1)
    slabs = _slabs(blo, bhi, SLABS_PER_THREAD * threads if threads > 1 else 1)
    shared = np.array([float(start), 0.0, 0.0]) if len(slabs) > 1 else None

    def search(slab):
        # a slab begun after the deadline bounds its whole box once (a valid, weak bound)
        stopped = shared is not None and deadline is not None and deadline.expired()
        return sized_search(m, data.e, data.counts, base, slab[0], slab[1], int(lo), int(hi),
                            groups, float(start), float(tol), 0 if stopped else int(max_boxes),
                            poll, shared, stop_at, data.unit)

    if shared is None:
        parts = [search(slabs[0])]
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            parts = list(pool.map(search, slabs))
    # each part's open boxes and its best (the least of all once shared) bound its slab
    open_lb = min(p[0] for p in parts)
    best = min(p[1] for p in parts)
    boxes = sum(p[2] for p in parts)
    complete = open_lb >= best - tol
    # the last centres of each part where its own best improved (the best SIZED_COLUMNS
    # of their clusters are kept, below)
    per = max(2, -(-SIZED_COLUMNS // len(parts)))
    centres = [y for p in parts for y in p[4][::-1][:per]]
    columns, seen = [], set()
    for y in centres:
        diff = m - y
        g = data.e * np.einsum("ij,ij->i", diff, diff) + base
        col = knapsack(g, data.counts, lo, hi, groups)[2]
        if col is not None and len(col):
            key = tuple(int(i) for i in col)
            if key not in seen and data.allowed(col):
                seen.add(key)
                rc = data.cost(col) - math.fsum(pi[col])
                if cuts is not None and len(cuts):
                    rc += float(cuts.charge([key], rho)[0])
                columns.append((rc, key))
    lower = min(open_lb, best - tol) - slack
    columns = sorted(columns)[:SIZED_COLUMNS]
    stopped = not complete and best < stop_at
    return PricingResult(lower, min([best] + [rc for rc, _ in columns]), columns, complete,
                         boxes, capped=not complete and not stopped and boxes >= max_boxes,
                         stopped=stopped)


def price_bound(data: PricingData, pi: np.ndarray, k: int, *, tol: float,
                max_boxes: int = 200000, deadline: Deadline | None = None,
                found=(), cuts: SubsetRows | None = None, rho: np.ndarray | None = None,
                threads: int = 1, enough: float | None = None,
                stop_below: float | None = None) -> PricingResult:
    """The pricing term of the Lagrangian bound at ``pi``: without sizes k times
    :func:`price_exact`'s bound, with them the sum over size classes of their clusters
    times :func:`price_sized`'s bound in the class (docs/safe_bound.md; its searches get
    ``SIZED_BOXES`` times ``max_boxes``). ``found``: clusters already met ((reduced cost,
    members) pairs, e.g. the heuristic's) to prune from. ``cuts``, ``rho``: subset-row cuts
    and their duals (<= 0), whose charges the searches over the mean carry
    (:func:`price_sized`; the caller adds sum(rho) to the bound). The reduced costs of
    ``found`` are taken without the charges, at ``pi``, and the charges are added here: from
    a start below the true minimum a search would prune every box and return that start
    less its tolerance, a valid bound but below the minimum, and no column. ``threads``:
    the searches over the mean run in so many threads (:func:`price_sized`). ``enough``: a
    term that suffices (what a node's bound needs to reach its pruning target), with one
    size class or none: the search then proves only that the term is at least it, where it
    is (``sufficed``; no minimum, and no column, came out of it). ``stop_below``: with
    sizes and one class, the search ends at a cluster of reduced cost below it
    (:func:`price_sized`'s ``stop``; ``stopped``), where the caller needs only columns.
    """
    found = list(found)
    if cuts is not None and len(cuts) and found:
        extra = cuts.charge([c for _, c in found], rho)
        found = [(rc + x, c) for (rc, c), x in zip(found, extra)]
    start = min((rc for rc, _ in found), default=0.0)
    # a search from a start prunes every box that cannot hold a cluster below it, and
    # returns at least that start less its tolerance where none is below: from a start of
    # enough / k plus two tolerances, a term of at least enough (docs/safe_bound.md). Where
    # a cluster lies below that start the search goes on to the minimum as from any start
    cap = math.inf
    if enough is not None and math.isfinite(enough) and len(data.classes) <= 1:
        cap = enough / k + 2.0 * tol
    if not data.sized:
        pr = price_exact(data, pi, tol=tol, max_boxes=max_boxes, deadline=deadline,
                         start=min(start, cap), cuts=cuts, rho=rho, threads=threads)
        pr.term = (k * pr.lower,)
        pr.sufficed = pr.complete and pr.best >= cap
        pr.complete = pr.complete and not pr.sufficed
        return pr
    starts = [math.inf] * len(data.classes)
    for rc, c in found:
        j = data.size_class(c)
        if j >= 0:
            starts[j] = min(starts[j], rc)
    # (at most the cap: a start from enough is no cluster, and must not stop a search)
    stop = (min(stop_below, cap) if stop_below is not None and len(data.classes) == 1
            else -math.inf)
    results = [price_sized(data, pi, lo, hi, tol=tol, max_boxes=SIZED_BOXES * max_boxes,
                           deadline=deadline, start=min(st, cap), cuts=cuts, rho=rho,
                           threads=threads, stop=stop)
               for (lo, hi, _), st in zip(data.classes, starts)]
    lowers = [r.lower for r in results]
    columns = sorted(c for r in results for c in r.columns)
    best, ended = min(r.best for r in results), all(r.complete for r in results)
    sufficed = ended and best >= cap  # (a finite cap means one class)
    return PricingResult(min(lowers), best, columns, ended and not sufficed,
                         sum(r.boxes for r in results),
                         tuple(n * v for (_, _, n), v in zip(data.classes, lowers)),
                         any(r.capped for r in results), sufficed,
                         any(r.stopped for r in results))
