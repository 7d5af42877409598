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
