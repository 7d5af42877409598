"""Shared pieces of the heuristics: the result type, deadlines, seeding and the k-means loop.

A heuristic is a callable ``h(problem, Z, rng, deadline, **options) -> HeuristicResult``
(or a class whose no-argument instances are such callables). It receives

* ``problem``: the node's :class:`pcsos.problem.Problem` (super-points, CL pairs, k);
* ``Z``: the node's SDP solution in super-point space (s x s) or None;
* ``rng``: a :class:`numpy.random.Generator` (the only source of randomness);
* ``deadline``: a :class:`~pcsos.clock.Deadline`, the caller's own
  (``deadline.remaining()`` seconds, ``inf`` without a limit; ``deadline.expired()``, also
  true once the caller stops);
* ``init_labels`` (keyword, default None): labels of the original points of a known
  clustering, e.g. the incumbent, to use as a start (``start_centres`` gives its
  centres). The tree hands every heuristic the best clustering it knows this way; a
  heuristic whose signature takes neither ``init_labels`` nor ``**kwargs`` is not passed it;

and returns a :class:`HeuristicResult` with at least ``status`` and, when found,
``super_labels`` (or original-point ``labels``). :func:`pcsos.heuristics.run_heuristic`
fills in the rest (original labels, SSE from the original data, seconds) after re-checking
the labelling against every original and node pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pcsos.clock import Deadline
from pcsos.errors import InputError
from pcsos.heuristics.assignment import (
    AssignmentEngine,
    centres_of,
    group_sums,
    squared_costs,
)

__all__ = ["HeuristicResult", "Deadline", "STATUSES", "kmeanspp", "weighted_kmeans",
           "assign_update_loop", "LoopResult", "start_centres"]

#: the statuses a heuristic may report
STATUSES = ("found", "infeasible", "no_solution")


@dataclass
class HeuristicResult:
    """Outcome of one heuristic run (SciPy ``OptimizeResult``-like: status and message).

    Attributes
    ----------
    labels : ndarray of shape (n,) or None
        Original-point labels 0..k-1 with exactly k non-empty clusters.
    objective : float
        The SSE, recomputed from the original data (inf when no labelling).
    status : {'found', 'infeasible', 'no_solution'}
        'infeasible': proved that no feasible clustering exists; 'no_solution': none
        found (e.g. COP-k-means failed or a time limit hit).
    super_labels : ndarray of shape (s,) or None
        The same labelling on the node's super-points.
    stats : dict
        Counters (``iterations``, ``ilp_solves``, ``seconds``, ...).
    name : str
        The heuristic's registered name.
    message : str
        Why it ended, when not found.

    Examples
    --------
    >>> from pcsos.heuristics import HeuristicResult
    >>> HeuristicResult().success
    False
    """

    labels: np.ndarray | None = None
    objective: float = math.inf
    status: str = "no_solution"
    super_labels: np.ndarray | None = None
    stats: dict = field(default_factory=dict)
    name: str = ""
    message: str = ""

    @property
    def success(self) -> bool:
        """True when a labelling was found."""
        return self.status == "found"


def start_centres(problem, init_labels) -> np.ndarray:
    """The cluster means (k x d, centred coordinates) of ``init_labels``, a clustering of
    the original points given as a start; an empty cluster's centre is the data mean.

    Raises :class:`InputError` unless it is n integer labels in 0..k-1.
    """
    k, n = problem.k, problem.n
    lab = np.asarray(init_labels)
    if (lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer)
            or lab.min() < 0 or lab.max() >= k):
        raise InputError(f"init_labels must be {n} integer labels in 0..{k - 1}",
                         source="init_labels")
    return centres_of(lab, problem.Xc, problem.point_weights, k)


# k-means++ and weighted Lloyd by hand, not scikit-learn's KMeans (which takes sample_weight):
# scikit-learn is an optional extra, not a core dependency, its KMeans cannot honour a
# Deadline between iterations, and scipy's kmeans2 takes no weights
def kmeanspp(X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct row indices of X chosen by weighted k-means++ (D^2 * w sampling)."""
    n = len(X)
    first = int(rng.choice(n, p=w / w.sum()))
    chosen = [first]
    d2 = ((X - X[first]) ** 2).sum(axis=1)
    for _ in range(1, k):
        p = w * d2
        p[chosen] = 0.0
        tot = p.sum()
        if tot <= 0:  # every remaining row coincides with a chosen one: pick uniformly
            free = np.setdiff1d(np.arange(n), chosen)
            nxt = int(rng.choice(free))
        else:
            nxt = int(rng.choice(n, p=p / tot))
        chosen.append(nxt)
        d2 = np.minimum(d2, ((X - X[nxt]) ** 2).sum(axis=1))
    return np.asarray(chosen, dtype=np.int64)


def weighted_kmeans(X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator, *,
                    n_init: int = 10, max_iter: int = 100, tol: float = 1e-6,
                    deadline: Deadline | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Unconstrained weighted Lloyd k-means, k-means++ restarts: (centres, labels, inertia).

    Used on the SDP centroid estimates (spec §6), so it is the plain algorithm; a cluster
    that empties is re-seeded at the point with the largest weighted distance.
    """
    best_c, best_l, best_v = None, None, math.inf
    ww = w / w.sum()
    ones = np.ones(len(X))
    for _ in range(max(1, n_init)):
        C = X[kmeanspp(X, w, k, rng)].copy()
        prev = math.inf
        for _ in range(max_iter):
            D = squared_costs(X, ones, C)
            lab = np.argmin(D, axis=1)
            dist = D[np.arange(len(X)), lab]
            val = float((w * dist).sum())
            cnt = np.bincount(lab, weights=w, minlength=k)
            for h in np.flatnonzero(cnt == 0):
                # the farthest point whose cluster keeps another member: with fewer
                # distinct rows than k every distance is 0, and the farthest point overall
                # could be the one just moved, emptying its cluster again
                movable = np.bincount(lab, minlength=k)[lab] > 1
                far = int(np.argmax(np.where(movable, ww * dist, -1.0)))
                lab[far] = h
                dist[far] = 0.0
                cnt = np.bincount(lab, weights=w, minlength=k)
            C = group_sums(lab, w[:, None] * X, k) / cnt[:, None]
            if prev - val <= tol * max(val, 1e-300):
                break
            prev = val
        if val < best_v:
            best_v, best_c, best_l = val, C, lab
        if deadline is not None and deadline.expired():
            break
    return best_c, best_l, best_v


@dataclass
class LoopResult:
    """Result of :func:`assign_update_loop` (super-point labels, SSE, counters, status)."""

    labels: np.ndarray | None
    sse: float
    iterations: int
    solves: int
    status: str  # 'converged', 'max_iter', 'time_limit', 'infeasible', 'failed'


def assign_update_loop(problem, engine: AssignmentEngine, centres: np.ndarray,
                       deadline: Deadline, *, tol: float = 1e-6, max_iter: int = 100,
                       warm: np.ndarray | None = None) -> LoopResult:
    """IPC-k-means / BLPKM-CC local search: exact assignment then centre update, repeated.

    Stops when |SSE_t - SSE_{t-1}| < tol * SSE_t (spec §6), after ``max_iter`` assignments
    or at the deadline, and returns the best labelling seen (the loop is monotone when every
    assignment is optimal; the best-so-far guards the time-limited case).
    """
    best, best_v = None, math.inf
    prev = math.inf
    solves = 0
    status = "max_iter"
    it = 0
    for it in range(1, max_iter + 1):
        if deadline.expired():
            status = "time_limit"
            it -= 1
            break
        a = engine.solve(centres, warm=warm, time_limit=deadline)
        solves += 1
        if a.labels is None:
            status = a.status if a.status in ("infeasible", "failed") else "time_limit"
            break
        v = problem.super_objective(a.labels)
        if v < best_v:
            best, best_v = a.labels, v
        centres = centres_of(a.labels, problem.W, problem.e, problem.k, fallback=centres)
        warm = a.labels
        if abs(prev - v) < tol * max(abs(v), 1e-300):
            status = "converged"
            break
        prev = v
    return LoopResult(best, best_v, it, solves, status)
