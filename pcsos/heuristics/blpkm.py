"""BLPKM-CC (paper 002): the assignment/update loop from k random data points.

The paper's loop: centres at k distinct random objects, then the binary-program assignment
(exact, all pairs respected, every cluster non-empty) and the centre update, repeated as
long as the total distance of the objects to their (updated) centres decreases; the
labelling before the first non-improving iteration is returned.

pcsos uses squared Euclidean costs by default (``distance='squared'``: the MSSC objective,
which makes the loop monotone; it is then the IPC-k-means loop from a random start). The
paper's unsquared costs (``distance='euclidean'``, sum over the original points of
``||x_p - c_h||``) reproduce its ARI experiments.
"""

from __future__ import annotations

import math

import numpy as np

from pcsos.errors import InputError
from pcsos.heuristics.assignment import (
    AssignmentEngine,
    centres_of,
    group_sums,
    squared_costs,
)
from pcsos.heuristics.base import (
    Deadline,
    HeuristicResult,
    assign_update_loop,
    start_centres,
)

__all__ = ["blpkm_cc", "random_point_centres"]


def random_point_centres(problem, rng: np.random.Generator, Xc: np.ndarray) -> np.ndarray:
    """Centres at k distinct original points drawn uniformly (centred coordinates)."""
    idx = rng.choice(problem.n, size=problem.k, replace=False)
    return Xc[idx].copy()


def blpkm_cc(problem, Z, rng: np.random.Generator, deadline: Deadline, *,
             distance: str = "squared", n_init: int = 1, max_iter: int = 100,
             tol: float = 1e-6, backend: str = "highs", init_labels=None,
             **_ignored) -> HeuristicResult:
    """BLPKM-CC on a node's super-point problem (see module doc; Z is not used).

    Options: ``distance`` ``'squared'`` (default) or ``'euclidean'`` (the paper's);
    ``n_init`` random starts (the paper: 1 per run); ``max_iter`` assignments per start;
    ``tol`` the relative stop of the squared loop; ``backend`` the MILP backend;
    ``init_labels`` a clustering of the original points whose centres are one more start,
    run first.
    """
    if _ignored:
        raise InputError(f"unknown blpkm-cc option(s): {', '.join(sorted(_ignored))}")
    if distance not in ("squared", "euclidean"):
        raise InputError(f"distance must be 'squared' or 'euclidean', got {distance!r}",
                         source="distance")
    k = problem.k
    engine = AssignmentEngine.from_problem(problem, backend=backend)
    Xc = problem.Xc
    best, best_v = None, math.inf
    iters = solves = done = 0
    infeasible = False
    starts = [] if init_labels is None else [start_centres(problem, init_labels)]
    starts += [None] * max(1, int(n_init))
    for C in starts:
        if done and deadline.expired():
            break
        if problem.s < k:
            infeasible = True
            break
        if C is None:
            C = random_point_centres(problem, rng, Xc)
        if distance == "squared":
            r = assign_update_loop(problem, engine, C, deadline, tol=tol, max_iter=max_iter)
            labels, status, it, sv = r.labels, r.status, r.iterations, r.solves
        else:
            labels, status, it, sv = _euclidean_loop(problem, engine, C, Xc, deadline,
                                                     max_iter)
        done += 1
        iters += it
        solves += sv
        if status == "infeasible":
            infeasible = True
            break
        if labels is not None:
            v = problem.super_objective(labels)
            if v < best_v:
                best, best_v = labels, v
    stats = {"iterations": iters, "ilp_solves": solves if engine.method != "matching" else 0,
             "assignments": solves, "starts": done, "distance": distance,
             "assignment_method": engine.method}
    if infeasible:
        return HeuristicResult(status="infeasible", stats=stats,
                               message="the assignment problem is infeasible")
    if best is None:
        return HeuristicResult(status="no_solution", stats=stats,
                               message="time limit reached before any assignment")
    return HeuristicResult(status="found", super_labels=best, stats=stats)


def _euclidean_loop(problem, engine, C, Xc, deadline, max_iter):
    """The paper's loop with unsquared costs; stops at the first non-improving iteration."""
    pl = problem.point_labels
    ones = np.ones(problem.n)
    k = problem.k
    prev_labels, prev_obj = None, math.inf
    solves = it = 0
    for it in range(1, max_iter + 1):
        if deadline.expired():
            return prev_labels, "time_limit", it - 1, solves
        D = np.sqrt(squared_costs(Xc, ones, C))  # (n, k) unsquared distances
        costs = group_sums(pl, D, problem.s)
        a = engine.solve(costs=costs, warm=prev_labels, time_limit=deadline)
        solves += 1
        if a.labels is None:
            return prev_labels, a.status if a.status == "infeasible" else "time_limit", \
                it, solves
        point_lab = a.labels[pl]
        C = centres_of(point_lab, Xc, problem.point_weights, k, fallback=C)  # weighted means
        obj = float(np.linalg.norm(Xc - C[point_lab], axis=1).sum())
        if obj >= prev_obj:
            return prev_labels, "converged", it, solves
        prev_labels, prev_obj = a.labels, obj
    return prev_labels, "max_iter", it, solves
