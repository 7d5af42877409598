"""Brute-force reference for tiny instances: enumerate every partition (tests only).

Independent of the code under test on purpose: it uses neither the problem model nor the
super-point shrinking, only the definition of the problem (spec §1).
"""

from __future__ import annotations

from functools import cache

import numpy as np


@cache
def _partitions(n: int, k: int) -> np.ndarray:
    """All restricted-growth strings of length n using exactly k labels, as an (m, n) array."""
    out: list[tuple[int, ...]] = []

    def rec(prefix: list[int], used: int) -> None:
        pos = len(prefix)
        if pos == n:
            if used == k:
                out.append(tuple(prefix))
            return
        if used + (n - pos) < k:  # not enough points left to open the remaining clusters
            return
        for h in range(min(used + 1, k)):
            prefix.append(h)
            rec(prefix, max(used, h + 1))
            prefix.pop()

    rec([], 0)
    arr = np.array(out, dtype=np.int64).reshape(-1, n)
    arr.setflags(write=False)
    return arr


def feasible_partitions(n: int, k: int, ml=(), cl=()) -> np.ndarray:
    """Every labelling of n points with exactly k non-empty clusters obeying all pairs."""
    P = _partitions(n, k)
    ok = np.ones(len(P), dtype=bool)
    for i, j in ml:
        ok &= P[:, i] == P[:, j]
    for i, j in cl:
        ok &= P[:, i] != P[:, j]
    return P[ok]


def brute_force(X, k: int, ml=(), cl=(), *, weights=None, size_min=None, size_max=None,
                sizes=None) -> tuple[float, np.ndarray | None]:
    """(optimal SSE, one optimal labelling), or (inf, None) when no labelling is feasible.

    ``weights``: point weights (objective sum_i w_i ||x_i - mu_c||^2, mu_c the weighted mean);
    ``size_min`` / ``size_max`` bound every cluster's number of points; ``sizes`` is the
    multiset of exact cluster sizes (any order). Sizes count points, not weights.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    P = feasible_partitions(n, k, ml, cl)
    if len(P) and (size_min is not None or size_max is not None or sizes is not None):
        counts = np.stack([(P == h).sum(axis=1) for h in range(k)], axis=1)  # (m, k)
        ok = np.ones(len(P), dtype=bool)
        if size_min is not None:
            ok &= counts.min(axis=1) >= size_min
        if size_max is not None:
            ok &= counts.max(axis=1) <= size_max
        if sizes is not None:
            ok &= np.all(np.sort(counts, axis=1) == np.sort(np.asarray(sizes)), axis=1)
        P = P[ok]
    if len(P) == 0:
        return float("inf"), None
    onehot = np.eye(k)[P]                      # (m, n, k)
    if weights is None:
        # SSE = sum ||x||^2 - sum_h ||sum_{p in h} x_p||^2 / |h|, evaluated per partition
        sizes_h = onehot.sum(axis=1)                # (m, k)
        sums = np.einsum("mnk,nd->mkd", onehot, X)  # (m, k, d)
        vals = float((X ** 2).sum()) - (np.einsum("mkd,mkd->mk", sums, sums) / sizes_h).sum(axis=1)
    else:
        # SSE = sum w ||x||^2 - sum_h ||sum_{p in h} w_p x_p||^2 / w(h)
        w = np.asarray(weights, dtype=np.float64)
        mass = np.einsum("mnk,n->mk", onehot, w)
        sums = np.einsum("mnk,nd->mkd", onehot, w[:, None] * X)
        vals = float(w @ (X ** 2).sum(axis=1)) - (np.einsum("mkd,mkd->mk", sums, sums)
                                                 / mass).sum(axis=1)
    best = int(np.argmin(vals))
    return float(vals[best]), P[best].copy()


def labelling_sse(X, labels, weights=None) -> float:
    """The SSE of ``labels`` from the definition: each cluster about its (weighted) mean."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=np.float64)
    total = 0.0
    for h in np.unique(labels):
        m = labels == h
        mu = (w[m, None] * X[m]).sum(axis=0) / w[m].sum()
        total += float((w[m] * ((X[m] - mu) ** 2).sum(axis=1)).sum())
    return total


def assert_labels_obey(labels, k: int, ml=(), cl=()) -> None:
    """One label per point in 0..k-1, all k used, every ML pair together, CL pair apart."""
    labels = np.asarray(labels)
    assert sorted(np.unique(labels).tolist()) == list(range(k)), labels
    for i, j in ml:
        assert labels[i] == labels[j], ("must-link broken", i, j)
    for i, j in cl:
        assert labels[i] != labels[j], ("cannot-link broken", i, j)


def assert_certified_optimum(res, X, k: int, ml, cl, opt: float, *, tol: float,
                             abs_tol: float | None, weights=None) -> None:
    """A solve's answer against the enumerated optimum ``opt``: labels that obey the pairs,
    an objective that is their SSE and lies in [opt, opt within the tolerances], and a
    certificate: a lower bound at most opt whose gap to the objective meets the
    tolerances (so it is itself within them of opt). ``abs_tol`` None: the solver's
    documented default for these data, computed here on its own: 64 eps of their scatter
    and 16 eps^2 of their second moment (docs/solver.md, ``--abs-tol``)."""
    if abs_tol is None:
        P = np.asarray(X, dtype=float).reshape(len(X), -1)
        w = np.ones(len(P)) if weights is None else np.asarray(weights, dtype=float)
        mean = (w @ P) / w.sum()
        eps = np.finfo(float).eps
        abs_tol = (64 * eps * float(w @ ((P - mean) ** 2).sum(axis=1))
                   + 16 * eps ** 2 * float(w @ (P ** 2).sum(axis=1)))
    assert res.status == "optimal", res
    assert len(res.labels) == len(X)
    assert_labels_obey(res.labels, k, ml, cl)
    slack = 1e-9 * max(1.0, abs(opt))
    assert abs(res.objective - labelling_sse(X, res.labels, weights)) <= slack, res
    assert opt - slack <= res.objective <= opt + tol * abs(opt) + abs_tol + slack, (res, opt)
    assert res.lower_bound <= opt + slack, (res, opt)
    assert res.root_lower_bound <= opt + slack, (res, opt)
    assert res.objective - res.lower_bound <= tol * abs(res.objective) + abs_tol + slack, res


def assignment_costs(points, weights, centres) -> np.ndarray:
    """The (s, k) matrix weights_i ||points_i - centres_h||^2, from differences (the engine
    expands the square instead)."""
    points = np.asarray(points, dtype=np.float64)
    centres = np.asarray(centres, dtype=np.float64)
    diff = points[:, None, :] - centres[None, :, :]
    return np.asarray(weights, dtype=np.float64)[:, None] * (diff ** 2).sum(axis=2)
