"""Distances between must-link "big points" without an n x n matrix (paper 004, Def. 12).

A big point is a must-link group X; its distance to another group Y is
max_{p in X, q in Y} d(p, q) (unsquared Euclidean). Two groups of one cluster of an optimal
solution of radius r* are within 2 r* of each other under this distance, which is all the
factor-2 argument needs. Everything here is computed one centre at a time: a column of s
values costs one n x |Y| distance block, evaluated in chunks.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["BigPoints"]

_CHUNK = 2_000_000  # distance entries per block (16 MB of float64)


class BigPoints:
    """Must-link groups of the rows of ``X`` given by ``point_labels`` (0..s-1, all used)."""

    def __init__(self, X: np.ndarray, point_labels: np.ndarray):
        # translation does not change distances; centring keeps the numbers small
        self.X = np.asarray(X, dtype=np.float64) - np.asarray(X, dtype=np.float64).mean(axis=0)
        self.labels = np.asarray(point_labels, dtype=np.int64)
        self.n = len(self.labels)
        self.s = int(self.labels.max()) + 1 if self.n else 0
        self.order = np.argsort(self.labels, kind="stable")
        self.sizes = np.bincount(self.labels, minlength=self.s)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.members = np.split(self.order, np.cumsum(self.sizes)[:-1])
        self._diam, self._rep = self._diameters()

    # ---------------------------------------------------------------- per group
    def _diameters(self) -> tuple[np.ndarray, np.ndarray]:
        """Diameter of each group and its representative (the member of least eccentricity)."""
        diam = np.zeros(self.s)
        rep = np.empty(self.s, dtype=np.int64)
        for g, mem in enumerate(self.members):
            if len(mem) == 1:
                rep[g] = mem[0]
                continue
            ecc = self.max_dist(self.X[mem], mem)
            diam[g] = ecc.max()
            rep[g] = mem[int(np.argmin(ecc))]
        return diam, rep

    @property
    def diam(self) -> np.ndarray:
        """(s,) max distance between two members of each group (0 for singletons)."""
        return self._diam

    @property
    def rep(self) -> np.ndarray:
        """(s,) a representative point of each group: its member of smallest eccentricity."""
        return self._rep

    # ---------------------------------------------------------------- distances
    def max_dist(self, P: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """For each row of P, the max distance to the points ``cols`` (chunked)."""
        P = np.atleast_2d(P)
        cols = np.asarray(cols, dtype=np.int64)
        out = np.zeros(len(P))
        step = max(1, _CHUNK // max(1, len(P)))
        for a in range(0, len(cols), step):
            np.maximum(out, cdist(P, self.X[cols[a:a + step]]).max(axis=1), out=out)
        return out

    def group_max(self, values: np.ndarray) -> np.ndarray:
        """Reduce per-point values (n,) or (n, m) to per-group maxima (s,) or (s, m)."""
        v = np.asarray(values)[self.order]
        return np.maximum.reduceat(v, self.starts, axis=0)

    def column(self, g: int) -> np.ndarray:
        """(s,) the big-point distance max_{p in X_i, q in X_g} d(p, q) for every group i."""
        return self.group_max(self.max_dist(self.X, self.members[g]))

    def to_points(self, pts: np.ndarray) -> np.ndarray:
        """(n, m) distances from every point to the points ``pts`` (chunked over rows)."""
        pts = np.asarray(pts, dtype=np.int64)
        out = np.empty((self.n, len(pts)))
        step = max(1, _CHUNK // max(1, len(pts)))
        for a in range(0, self.n, step):
            out[a:a + step] = cdist(self.X[a:a + step], self.X[pts])
        return out
