"""Greedy clique cover of a cannot-link graph (the paper needs disjoint cannot-link cliques).

The constrained k-center algorithm of paper 004 handles cannot-link constraints given as
disjoint sets of mutually cannot-linked points. General pairwise cannot-link data is first
partitioned into cliques; a pair whose ends land in different cliques is *not* seen by the
centre selection, so the factor-2 radius guarantee covers only pairs inside a clique (the
final assignment still enforces every pair, see :func:`pcsos.kcenter.solve`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["clique_cover"]


def clique_cover(s: int, edges: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Partition the non-isolated vertices of the graph on ``s`` vertices into cliques.

    Greedy: take the uncovered vertex of largest degree, then repeatedly add the uncovered
    common neighbour of largest degree. Returns (cliques, uncovered) where ``cliques`` are
    sorted vertex arrays (size >= 1, largest first) and ``uncovered`` the (q, 2) edges whose
    ends are in different cliques. Deterministic (ties broken by the smaller index).
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    adj: list[set[int]] = [set() for _ in range(s)]
    for a, b in edges:
        adj[a].add(int(b))
        adj[b].add(int(a))
    deg = np.array([len(a) for a in adj], dtype=np.int64)
    covered = np.zeros(s, dtype=bool)
    owner = np.full(s, -1, dtype=np.int64)
    cliques: list[np.ndarray] = []
    # largest degree first; stable sort keeps the smaller index first among ties
    for v in np.argsort(-deg, kind="stable"):
        v = int(v)
        if deg[v] == 0 or covered[v]:
            continue
        clique = [v]
        cand = {u for u in adj[v] if not covered[u]}
        while cand:
            u = max(cand, key=lambda x: (deg[x], -x))
            clique.append(u)
            cand &= adj[u]
        clique.sort()
        covered[clique] = True
        owner[clique] = len(cliques)
        cliques.append(np.array(clique, dtype=np.int64))
    order = sorted(range(len(cliques)), key=lambda t: (-len(cliques[t]), int(cliques[t][0])))
    cliques = [cliques[t] for t in order]
    if len(edges):
        uncovered = edges[owner[edges[:, 0]] != owner[edges[:, 1]]]
    else:
        uncovered = edges
    return cliques, uncovered
