"""Clustering agreement measures (no scikit-learn needed at run time)."""

from __future__ import annotations

import numpy as np

__all__ = ["adjusted_rand_index"]


# by hand, not scikit-learn's adjusted_rand_score: scikit-learn is an optional extra and
# scipy has no ARI (tests/test_heuristics_cli.py checks this against scikit-learn's)
def adjusted_rand_index(a, b) -> float:
    """Adjusted Rand index of two labellings (Hubert & Arabie 1985), as scikit-learn's.

    1 for identical partitions (up to renaming), about 0 for independent ones; 1 also when
    both put everything in one cluster or every point alone.
    """
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"labellings differ in length: {a.shape[0]} and {b.shape[0]}")
    n = a.size
    if n < 2:
        return 1.0
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
    np.add.at(table, (ia, ib), 1)

    def pairs(x):
        x = x.astype(np.float64)
        return float((x * (x - 1) / 2).sum())

    index = pairs(table)
    ra, rb = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    total = n * (n - 1) / 2
    expected = ra * rb / total
    top = (ra + rb) / 2
    if top == expected:  # both trivial partitions: perfect agreement by convention
        return 1.0
    return float((index - expected) / (top - expected))
