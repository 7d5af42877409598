"""k-center centres as a starting point for the MSSC heuristics (ipc-kmeans, BLPKM, ...)."""

from __future__ import annotations

import numpy as np

from pcsos.errors import InputError
from pcsos.kcenter.solver import solve_problem
from pcsos.problem import Problem

__all__ = ["kcenter_centres"]


def kcenter_centres(problem: Problem, seed=None, *, means: bool = True,
                    original: bool = False, time_limit: float | None = 10.0) -> np.ndarray:
    """Initial centres (k x d) from the constrained k-center solution of ``problem``.

    Uses the problem's must-link groups (including branching merges) and super-point
    cannot-link pairs. Coordinates are the *centred* ones of ``problem.W / problem.e``
    (data minus its mean). ``means=True`` returns the mean of each k-center cluster (a
    constraint-respecting partition, so a natural k-means start); ``means=False`` returns
    the k-center centre points themselves. ``original=True`` returns original coordinates
    instead (what ``run_heuristic("ipc-kmeans", problem, centres=...)`` expects).
    Raises InputError when fewer than k clusters exist (fewer than k super-points),
    InfeasibleError as :func:`pcsos.kcenter.solve`.
    """
    res = solve_problem(problem, seed=seed, time_limit=time_limit, refine=not means)
    k = problem.k
    if len(res.centers) < k:
        raise InputError(f"only {len(res.centers)} clusters for k = {k} "
                         f"({problem.s} super-points)", source="k")
    X = problem.instance.X
    mean = X.mean(axis=0)
    Xc = X - mean
    if not means:
        out = Xc[res.centers].copy()
    else:
        out = np.zeros((k, X.shape[1]))
        np.add.at(out, res.labels, Xc)
        out /= np.bincount(res.labels, minlength=k)[:, None]
    return out + mean if original else out
