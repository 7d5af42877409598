"""COP-k-means (Wagstaff et al. 2001): k-means with a greedy constrained assignment.

Each pass visits the super-points (must-link groups, so every must-link pair holds by
construction) in a random order and puts each into the nearest centre that holds none of
its cannot-link partners assigned so far in this pass; when no such centre exists the run
fails. Centres are then updated and the passes repeat until the labels stop changing.
Initial centres are drawn by weighted k-means++. A failed run is restarted from new
centres, up to ``n_init`` runs; when every run fails the result is ``'no_solution'``, a
normal outcome (COP-k-means has no backtracking and fails on many feasible instances).
A pass that leaves a cluster empty moves into it the super-point farthest from its centre
among the clusters with two or more (no cannot-link pair can break: the cluster is empty);
the common implementation fails there instead, even on data with fewer distinct points than
k. A run that still has an empty cluster (fewer super-points than k) fails.

With cluster sizes every super-point takes part in the greedy pass, which also skips
clusters that its points would push past the largest size allowed (size_max, or the
largest exact size); a run whose final clustering misses the sizes (a cluster below
size_min, or counts other than the exact multiset) fails like any other.
"""

from __future__ import annotations

import math

import numpy as np

from pcsos.errors import InputError
from pcsos.heuristics.assignment import centres_of, squared_costs
from pcsos.heuristics.base import Deadline, HeuristicResult, kmeanspp, start_centres
from pcsos.problem import cl_adjacency

__all__ = ["cop_kmeans"]


def cop_kmeans(problem, Z, rng: np.random.Generator, deadline: Deadline, *,
               n_init: int = 10, max_iter: int = 300, tol: float = 1e-4,
               init_labels=None, **_ignored) -> HeuristicResult:
    """COP-k-means with restarts on a node's super-point problem (see module doc).

    Options: ``n_init`` runs (default 10); ``max_iter`` passes per run and ``tol`` the
    relative centre shift at which a run has converged (defaults 300 and 1e-4, as the
    common implementation); ``init_labels`` a clustering of the original points whose
    centres start one more run, first. Z is not used.
    """
    if _ignored:
        raise InputError(f"unknown cop-kmeans option(s): {', '.join(sorted(_ignored))}")
    k, s = problem.k, problem.s
    adj = cl_adjacency(s, problem.cl)
    inst = problem.instance
    # the room a cluster has in a pass: a greedy pass cannot aim at exact sizes, only stay
    # below the largest one
    cap = (problem.counts, inst.size_bounds()[1]) if inst.has_sizes else None
    # centre shifts are compared with the data's spread, so tol does not depend on units
    scale = float(problem.c0) / max(problem.n, 1)
    best, best_v = None, math.inf
    fails = runs = iters = 0
    reasons: dict[str, int] = {}
    starts = [] if init_labels is None else [start_centres(problem, init_labels)]
    starts += [None] * max(1, int(n_init))
    for C in starts:
        if runs and deadline.expired():
            break
        runs += 1
        if s < k:
            fails += 1
            reasons["fewer super-points than k"] = runs
            break
        if C is None:
            C = problem.centroids[kmeanspp(problem.centroids, problem.e, k, rng)]
        order = rng.permutation(s)  # one random order per run, so that passes can settle
        labels = None
        why = "max_iter"
        for _it in range(max_iter):
            iters += 1
            costs = squared_costs(problem.centroids, problem.e, C)
            new = _greedy_pass(costs, adj, order, cap)
            if new is not None:
                _fill_empty(new, costs, k)
            if new is None:
                labels, why = None, "no feasible centre for a point"
                break
            if labels is not None and np.array_equal(new, labels):
                why = "converged"
                break
            labels = new
            C_new = centres_of(labels, problem.W, problem.e, k, fallback=C)
            shift = float(((C_new - C) ** 2).sum())
            C = C_new
            if shift <= tol * tol * max(scale, 1e-300):
                why = "converged"
                break
            if deadline.expired():
                why = "time_limit"
                break
        if labels is not None and len(np.unique(labels)) < k:
            labels, why = None, "empty cluster"
        if labels is not None and not inst.sizes_ok(problem.to_points(labels)):
            labels, why = None, "cluster sizes not met"
        if labels is None:
            fails += 1
            reasons[why] = reasons.get(why, 0) + 1
            continue
        v = problem.super_objective(labels)
        if v < best_v:
            best, best_v = labels, v
    stats = {"iterations": iters, "ilp_solves": 0, "runs": runs, "failed_runs": fails,
             "failures": reasons}
    if best is None:
        return HeuristicResult(status="no_solution", stats=stats,
                               message=f"COP-k-means failed on all {runs} runs: {reasons}")
    return HeuristicResult(status="found", super_labels=best, stats=stats)


def _fill_empty(labels: np.ndarray, costs: np.ndarray, k: int) -> None:
    """Move into each empty cluster the farthest super-point of a cluster that keeps another
    member (in place; labels are left with an empty cluster when s < k)."""
    own = costs[np.arange(len(labels)), labels]
    for h in np.flatnonzero(np.bincount(labels, minlength=k) == 0):
        movable = np.bincount(labels, minlength=k)[labels] > 1
        if not movable.any():
            return
        g = int(np.argmax(np.where(movable, own, -1.0)))
        labels[g] = h
        own[g] = costs[g, h]


def _greedy_pass(costs: np.ndarray, adj: list[np.ndarray], order: np.ndarray, cap=None):
    """One COP-k-means assignment pass; None when some super-point has no allowed centre.

    ``cap``: (points per super-point, the most points a cluster may hold), or None."""
    s, k = costs.shape
    labels = np.argmin(costs, axis=1)  # super-points without CL partners do not interact
    done = np.zeros(s, dtype=bool)
    load = np.zeros(k, dtype=np.int64)
    for i in order:
        nb = adj[i]
        if not len(nb) and cap is None:
            continue
        taken = labels[nb[done[nb]]]
        c = costs[i]
        full = None if cap is None else load + cap[0][i] > cap[1]
        if len(taken) or full is not None:
            c = c.copy()
            c[taken] = np.inf
            if full is not None:
                c[full] = np.inf
            if np.all(np.isinf(c)):
                return None
        labels[i] = int(np.argmin(c))
        done[i] = True
        if cap is not None:
            load[labels[i]] += cap[0][i]
    return labels
