"""Reverse dominating sets (paper 004, Def. 3 and Alg. 2) from a *maximum* matching.

For a cannot-link set Y and the current centres C, the auxiliary graph G(Y, C) joins y and
c when their (big-point) distance is at most the threshold. A reverse dominating set (RDS)
is a pair (Y', C' = N(Y')) with |C'| < |Y'|, i.e. a Hall violator. The paper's Alg. 2 grows
Y' from the vertices of Y left unmatched by a matching M by alternating paths; it says a
*maximal* matching suffices, which is wrong: the closure computes |Y'| - |C'| =
(unmatched Y) - (unmatched C reached), and a maximal matching can leave an augmenting path,
so an unmatched centre is reached and a real Hall violator is missed (see
``tests/test_kcenter.py::test_maximal_matching_misses_rds``). With a maximum matching no
augmenting path exists, the closure reaches no unmatched centre and yields the RDS of
maximum deficiency |Y'| - |C'| = |Y| - nu(G) (König), or proves none exists.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

__all__ = ["maximum_matching", "rds_from_matching", "max_rds"]


def maximum_matching(adj: np.ndarray) -> np.ndarray:
    """Maximum matching of a boolean |Y| x |C| adjacency by Hopcroft-Karp (SciPy).

    Returns, for every row y, the matched column or -1.
    """
    adj = np.asarray(adj, dtype=bool)
    ny, nc = adj.shape
    if ny == 0 or nc == 0 or not adj.any():
        return np.full(ny, -1, dtype=np.int64)
    r, c = np.nonzero(adj)
    g = csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(ny, nc))
    return np.asarray(maximum_bipartite_matching(g, perm_type="column"), dtype=np.int64)


def rds_from_matching(adj: np.ndarray, match_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paper's Alg. 2 closure for a given matching: (Y', C') or two empty arrays.

    Starting from the rows left unmatched by ``match_row``, alternately add all neighbours
    N(Y') to C' and the matched partners of C' to Y', until C' = N(Y'). Returns the closure
    when |Y'| > |C'| (an RDS), else empty arrays. Only a *maximum* matching makes
    "empty" mean "no RDS exists".
    """
    adj = np.asarray(adj, dtype=bool)
    ny, nc = adj.shape
    match_row = np.asarray(match_row, dtype=np.int64)
    match_col = np.full(nc, -1, dtype=np.int64)
    matched = match_row >= 0
    match_col[match_row[matched]] = np.nonzero(matched)[0]
    in_y = ~matched
    in_c = np.zeros(nc, dtype=bool)
    while True:
        new_c = adj[in_y].any(axis=0) if in_y.any() else np.zeros(nc, dtype=bool)
        if np.array_equal(new_c, in_c):
            break
        in_c = new_c
        partners = match_col[in_c]
        in_y[partners[partners >= 0]] = True
    if in_y.sum() > in_c.sum():
        return np.nonzero(in_y)[0], np.nonzero(in_c)[0]
    empty = np.empty(0, dtype=np.int64)
    return empty, empty.copy()


def max_rds(adj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An RDS of maximum |Y'| - |C'| in the bipartite graph ``adj`` (rows Y, columns C).

    Returns (rows Y', columns C' = N(Y')), both empty when Y can be matched perfectly into C
    (Hall's theorem).
    """
    return rds_from_matching(adj, maximum_matching(adj))
