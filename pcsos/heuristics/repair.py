"""Feasibility repair (thesis 003, Alg. 6), time-boxed.

Starts from a labelling of the original points that may violate pairs (the ``labels``
option, e.g. a relaxation's rounding; by default unconstrained k-means on the original
points) and

1. moves every must-link group that is split (a super-point of the node: original
   must-link components and the node's merges) entirely to its best cluster;
2. while a cannot-link pair is violated: picks a random super-point involved in one and
   moves it to the best other cluster, preferring clusters that hold none of its
   cannot-link partners.

"Best" is the exact SSE increase of adding the group to a cluster,
``e_g m_h / (m_h + e_g) ||mu_g - c_h||^2`` (the removal cost is the same for every
destination). No guarantee: the loop stops after ``max_moves`` moves or ``max_seconds``
(and at the deadline) and then reports ``'no_solution'``. Finally an empty cluster (the
problem asks for exactly k) is filled with the super-point whose removal lowers the SSE
most among clusters holding two or more; a move into an empty cluster breaks no pair.
Cluster sizes are not aimed at: a repaired clustering that misses them is reported as
``'no_solution'`` (saying so), never returned.
"""

from __future__ import annotations

import numpy as np

from pcsos.errors import InputError
from pcsos.heuristics.assignment import group_sums
from pcsos.heuristics.base import Deadline, HeuristicResult, weighted_kmeans
from pcsos.problem import cl_adjacency

__all__ = ["repair"]


class _Clusters:
    """Cluster sums/sizes with O(d) moves and exact SSE-change queries."""

    def __init__(self, labels, W, e, k):
        self.labels = labels
        self.W, self.e = W, e
        self.S = group_sums(labels, W, k)
        self.m = np.bincount(labels, weights=e, minlength=k).astype(np.float64)

    def add_cost(self, g: int, exclude: int | None = None) -> np.ndarray:
        """SSE increase of adding super-point g to each cluster (its own cluster excluded)."""
        m, S = self.m.copy(), self.S.copy()
        if exclude is not None:
            m[exclude] -= self.e[g]
            S[exclude] -= self.W[g]
        mu = self.W[g] / self.e[g]
        out = np.zeros(len(m))
        nz = m > 1e-12
        c = S[nz] / m[nz, None]
        out[nz] = self.e[g] * m[nz] / (m[nz] + self.e[g]) * ((mu - c) ** 2).sum(axis=1)
        return out

    def move(self, g: int, h: int) -> None:
        a = self.labels[g]
        if a == h:
            return
        self.S[a] -= self.W[g]
        self.m[a] -= self.e[g]
        self.S[h] += self.W[g]
        self.m[h] += self.e[g]
        self.labels[g] = h


def repair(problem, Z, rng: np.random.Generator, deadline: Deadline, *, labels=None,
           n_init: int = 10, max_moves: int | None = None, max_seconds: float = 5.0,
           init_labels=None, **_ignored) -> HeuristicResult:
    """Thesis Alg. 6 on a node's problem (see module doc; Z is not used).

    Options: ``labels`` a starting labelling of the original points (0..k-1), by default
    ``init_labels`` (the start the tree hands every heuristic); ``n_init``
    k-means++ restarts of the default start; ``max_moves`` cannot-link moves (default
    100 * s); ``max_seconds`` the time box (default 5 s, also bounded by the deadline).
    """
    if _ignored:
        raise InputError(f"unknown repair option(s): {', '.join(sorted(_ignored))}")
    k, s, n = problem.k, problem.s, problem.n
    Xc = problem.Xc
    if labels is None:
        labels = init_labels
    if labels is None:
        _, lab, _ = weighted_kmeans(Xc, problem.point_weights, k, rng, n_init=n_init,
                                    deadline=deadline)
    else:
        lab = np.asarray(labels, dtype=np.int64)
        if lab.shape != (n,) or lab.min() < 0 or lab.max() >= k:
            raise InputError(f"labels must be {n} values in 0..{k - 1}", source="labels")
    box = deadline.within(max_seconds)  # the box covers the repair itself
    stats = {"iterations": 0, "ilp_solves": 0, "ml_moves": 0, "cl_moves": 0,
             "filled_empty": 0}
    pl = problem.point_labels
    # step 1: split must-link groups. Start every group in its majority cluster, then move
    # each split group to its best cluster given all the others.
    sl = np.empty(s, dtype=np.int64)
    votes = np.zeros((s, k))
    np.add.at(votes, (pl, lab), 1.0)
    sl[:] = np.argmax(votes, axis=1)
    split = np.flatnonzero((votes > 0).sum(axis=1) > 1)
    cl_state = _Clusters(sl, problem.W, problem.e, k)
    for g in split:
        h = int(np.argmin(cl_state.add_cost(g, exclude=sl[g])))
        if h != sl[g]:
            cl_state.move(g, h)
        stats["ml_moves"] += 1
    # step 2: cannot-link violations
    adj = cl_adjacency(s, problem.cl)
    cl = problem.cl
    limit = 100 * s if max_moves is None else int(max_moves)
    moves = 0
    stop = ""
    while True:
        viol = cl[sl[cl[:, 0]] == sl[cl[:, 1]]] if len(cl) else cl
        if len(viol) == 0:
            break
        if moves >= limit:
            stop = "max_moves"
            break
        if box.expired():
            stop = "time box"
            break
        g = int(rng.choice(np.unique(viol.ravel())))
        c = sl[g]
        cost = cl_state.add_cost(g, exclude=c)
        cost[c] = np.inf
        clash = np.zeros(k, dtype=bool)
        clash[sl[adj[g]]] = True
        free = ~clash
        free[c] = False
        if free.any():
            cost[~free] = np.inf
        h = int(np.argmin(cost))
        cl_state.move(g, h)
        moves += 1
    stats["cl_moves"] = moves
    stats["iterations"] = moves + stats["ml_moves"]
    if stop:
        return HeuristicResult(status="no_solution", stats=stats,
                               message=f"cannot-link violations remain after {moves} moves "
                                       f"({stop})")
    # exactly k non-empty clusters
    for h in np.flatnonzero(cl_state.m <= 1e-12):
        counts = np.bincount(sl, minlength=k)
        donors = np.flatnonzero(counts[sl] >= 2)
        if len(donors) == 0:
            return HeuristicResult(status="no_solution", stats=stats,
                                   message="fewer super-points than clusters")
        # removal gain of each donor from its cluster: e m/(m - e) ||mu - c||^2
        m = cl_state.m[sl[donors]]
        e = problem.e[donors]
        c = cl_state.S[sl[donors]] / m[:, None]
        mu = problem.W[donors] / e[:, None]
        gain = e * m / np.maximum(m - e, 1e-12) * ((mu - c) ** 2).sum(axis=1)
        cl_state.move(int(donors[np.argmax(gain)]), int(h))
        stats["filled_empty"] += 1
    if not problem.instance.sizes_ok(problem.to_points(sl)):
        got = sorted(np.bincount(problem.to_points(sl)).tolist(), reverse=True)
        return HeuristicResult(status="no_solution", stats=stats,
                               message=f"the repaired clustering has cluster sizes {got}, "
                                       "which break the size constraints (repair does not "
                                       "aim at sizes)")
    return HeuristicResult(status="found", super_labels=sl, stats=stats)
