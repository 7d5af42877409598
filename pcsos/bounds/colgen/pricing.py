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
counts only the more negative end of each pair of a matching of the pairs inside (any
matching bounds the best set obeying all of them), and the clusters it meets are repaired.
Cluster sizes are relaxed there: the minimum over more clusters is lower, so the bound stays
valid (it may be weaker). The heuristic returns only clusters that obey the pairs and sizes.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from pcsos._kernels._pricing import box_lower, centre_cluster, cluster_rc
from pcsos.clock import Deadline
from pcsos.problem import Problem, cl_adjacency

__all__ = ["PricingData", "PricingResult", "price_heuristic", "price_exact"]

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
    size_min: int = 1
    size_max: int | None = None
    cl_adj: list = field(default_factory=list)
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
        lo, hi = problem.instance.size_bounds()
        adj = cl_adjacency(problem.s, problem.cl)
        counts = np.asarray(problem.counts, dtype=np.int64)
        ptr = np.zeros(problem.s + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(a) for a in adj])
        idx = np.concatenate([np.zeros(0, dtype=np.int64), *adj])
        return cls(e, counts, np.ascontiguousarray(m), q, within, mag,
                   np.asarray(problem.cl, dtype=np.int64), int(lo),
                   None if hi >= int(counts.sum()) else int(hi), adj, ptr, idx)

    @property
    def s(self) -> int:
        return len(self.e)

    def cost(self, col: np.ndarray) -> float:
        """The SSE of the cluster made of the super-points ``col``."""
        Wc = (self.e[col, None] * self.m[col]).sum(axis=0)
        return float(math.fsum(self.q[col]) - Wc @ Wc / self.e[col].sum())

    def allowed(self, col: np.ndarray) -> bool:
        """Whether the cluster ``col`` obeys the cannot-link pairs and the size bounds."""
        size = int(self.counts[col].sum())
        if size < self.size_min or (self.size_max is not None and size > self.size_max):
            return False
        inside = np.zeros(self.s, dtype=bool)
        inside[col] = True
        return not (len(self.cl) and np.any(inside[self.cl[:, 0]] & inside[self.cl[:, 1]]))


def _members(data: PricingData, pi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The super-points with g_i(y) < 0; with size bounds, the most negative ones up to
    size_max points, or the size_min points of least g_i (a cluster the sizes allow)."""
    diff = data.m - y
    g = data.e * np.einsum("ij,ij->i", diff, diff) + data.within - pi
    col = np.flatnonzero(g < 0)
    size = int(data.counts[col].sum())
    if data.size_max is not None and size > data.size_max or size < data.size_min:
        order = np.argsort(g, kind="stable")
        filled = np.cumsum(data.counts[order])
        if size > (data.size_max or size):
            col = order[:int(np.searchsorted(filled, data.size_max, side="right"))]
        else:
            col = order[:int(np.searchsorted(filled, data.size_min, side="left")) + 1]
        col = np.sort(col)
    return col


def _repair(data: PricingData, pi: np.ndarray, col: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Drop members until no cannot-link pair is inside: of each violated pair, the member
    whose term g_i(y) is the larger (the one the cluster gains less from)."""
    if not len(data.cl):
        return col
    inside = set(int(i) for i in col)
    diff = data.m[col] - y
    g = dict(zip(col.tolist(), (data.e[col] * np.einsum("ij,ij->i", diff, diff)
                                + data.within[col] - pi[col]).tolist()))
    for i in sorted(inside, key=lambda t: g[t]):  # the most negative terms stay
        if i in inside:
            for j in data.cl_adj[i]:
                inside.discard(j)
    return np.array(sorted(inside), dtype=np.int64)


def price_heuristic(data: PricingData, pi: np.ndarray, centres: np.ndarray,
                    max_columns: int = 50, rc_tol: float = 0.0) -> list[tuple[float, tuple]]:
    """Clusters of reduced cost below ``-rc_tol`` found by Lloyd steps from ``centres``
    ((t, d) points): the best ``max_columns``, as (reduced cost, sorted member tuple); each
    obeys the cannot-link pairs and the size bounds."""
    found: dict[tuple, float] = {}
    for y in np.atleast_2d(centres):
        col = _members(data, pi, y)
        for _ in range(LLOYD_STEPS):
            if not len(col):
                break
            col = _repair(data, pi, col, y)
            y_new = (data.e[col, None] * data.m[col]).sum(axis=0) / data.e[col].sum()
            nxt = _repair(data, pi, _members(data, pi, y_new), y_new)
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
    (cannot-link pairs and sizes relaxed); ``best``: the least reduced cost found, with its
    ``columns`` (reduced cost, members), those that obey the pairs and sizes; ``complete``:
    the search ended (``lower`` is then within its tolerance of the relaxed minimum);
    ``boxes``: boxes evaluated."""

    lower: float
    best: float
    columns: list
    complete: bool
    boxes: int


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
    box, e_i dist(m_i, B)^2 + within_i - pi_i, when negative; of a matching of the
    cannot-link pairs among them only the more negative end counts (any matching bounds the
    best set obeying all of them).
    """
    # every term is computed with a relative error of a few (d + 4) ulps of its magnitude
    # (e_i (||m_i||^2 + ||y||^2) <= 3 e_i ||m_i||^2 + 2 e_i far_i^2 for y in the box), and
    # the sums add at most len ulps of the total (docs/safe_bound.md): the kernel takes
    # that margin off its value
    return box_lower(data.m, data.e, base, data.mag, pi, cand, lo, hi, data.cl_ptr,
                     data.cl_idx, EXACT_CROSSING, work)


def price_exact(data: PricingData, pi: np.ndarray, *, tol: float, max_boxes: int = 200000,
                deadline: Deadline | None = None, start: float = 0.0) -> PricingResult:
    """Branch-and-bound over the centre y (module doc): a proven lower bound on
    min(0, least reduced cost), within ``tol`` of it when the search completes.

    Stops after ``max_boxes`` boxes or when ``deadline`` (a :class:`~pcsos.clock.Deadline`)
    has expired (polled every 64 boxes); the bound is valid at any stop. ``start``: a
    reduced cost already found (an upper bound on the minimum, e.g. the heuristic's best),
    to prune from the outset.
    """
    pi = np.asarray(pi, dtype=np.float64)
    cand = np.flatnonzero(data.within - pi < 0)
    best, columns, seen = min(0.0, float(start)), [], set()
    if not len(cand):
        return PricingResult(0.0, 0.0, [], True, 0)
    # the disks g_i < 0, a little wider than computed, so that rounding cannot leave a
    # point of one outside the first box
    r = np.sqrt((pi[cand] - data.within[cand]) / data.e[cand]) * (1 + 1e-6)
    pad = r[:, None] + 1e-9 * (1.0 + np.abs(data.m[cand]))
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
                found = price_heuristic(data, pi, y[None, :], max_columns=1)
                if data.allowed(mem):
                    found.append((relaxed, tuple(int(i) for i in mem)))
                for rc, key in found:
                    if key not in seen:
                        seen.add(key)
                        columns.append((rc, key))
        width = hi - lo
        axis = int(np.argmax(width))
        if not width[axis] > 1e-12 * (1.0 + float(np.abs(lo).max())):
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
    return PricingResult(lower, best, [c for c in columns if c[0] < 0], complete, boxes)
