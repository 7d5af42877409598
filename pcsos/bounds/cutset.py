"""A set of linear cuts <B_t, Z> >= rhs_t on a symmetric s x s matrix Z.

Stored in CSR form over cuts: cut t owns entries ``indptr[t]:indptr[t+1]`` of ``(i, j, coef)``
with i <= j, each contributing ``coef * Z[i, j]`` to <B_t, Z> (so B_t has coef/2 at (i, j)
and (j, i) off the diagonal). One representation serves the separator (which appends), the
SDP backends (which need apply / adjoint), the loop (which prunes) and the tree (which
re-indexes cuts for a must-link child).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

PAIR, TRIANGLE, CLIQUE, SIZE, SIZE_CUT, STAR = 0, 1, 2, 3, 4, 5
FAMILY_NAMES = {PAIR: "pair", TRIANGLE: "triangle", CLIQUE: "clique", STAR: "star"}
# the cluster-size constraints listed for an instance with sizes (SIZE: part of the
# relaxation like the equalities, so the loop never prunes them and every child inherits
# them) and those separated round by round (SIZE_CUT: pruned and inherited like any cut);
# see pcsos.bounds.sizes
SIZE_NAMES = {SIZE: "size", SIZE_CUT: "size_cut"}


def _cat(arrays, dtype) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)


class CutSet:
    """Cuts <B_t, Z> >= rhs_t in super-point space (see module docstring)."""

    __slots__ = ("indptr", "i", "j", "coef", "rhs", "family", "_mat")

    def __init__(self, indptr, i, j, coef, rhs, family):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.i = np.asarray(i, dtype=np.int64)
        self.j = np.asarray(j, dtype=np.int64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.rhs = np.asarray(rhs, dtype=np.float64)
        self.family = np.asarray(family, dtype=np.int8)
        self._mat: dict[int, sp.csr_matrix] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def empty(cls) -> CutSet:
        return cls([0], [], [], [], [], [])

    @classmethod
    def _uniform(cls, rows: np.ndarray, cols: np.ndarray, coefs: np.ndarray, rhs, family: int):
        """Cuts with the same number of entries each: rows/cols/coefs are (m, t) arrays."""
        m, t = rows.shape
        lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
        rhs = np.broadcast_to(np.asarray(rhs, dtype=np.float64), (m,))
        return cls(np.arange(m + 1) * t, lo.ravel(), hi.ravel(),
                   np.broadcast_to(coefs, (m, t)).ravel(), rhs, np.full(m, family))

    @classmethod
    def pairs(cls, i, j) -> CutSet:
        """Pair cuts Z_ii - Z_ij >= 0."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        return cls._uniform(np.c_[i, i], np.c_[i, j], np.array([1.0, -1.0]), 0.0, PAIR)

    @classmethod
    def triangles(cls, i, j, h) -> CutSet:
        """Triangle cuts Z_ii + Z_jh - Z_ij - Z_ih >= 0 (i is the apex)."""
        i, j, h = (np.asarray(a, np.int64) for a in (i, j, h))
        return cls._uniform(np.c_[i, j, i, i], np.c_[i, h, j, h],
                            np.array([1.0, 1.0, -1.0, -1.0]), 0.0, TRIANGLE)

    @classmethod
    def cliques(cls, Q, rhs: float) -> CutSet:
        """Clique cuts sum_{a<b in Q} Z_ab >= rhs, one per row of Q (m x q)."""
        Q = np.asarray(Q, np.int64)
        a, b = np.triu_indices(Q.shape[1], 1)
        return cls._uniform(Q[:, a], Q[:, b], np.ones(len(a)), rhs, CLIQUE)

    @classmethod
    def stars(cls, apex, leaves) -> CutSet:
        """Star cuts Z_ii + sum_{j<h in T} Z_jh - sum_{j in T} Z_ij >= 0, apex i = ``apex[t]``,
        T the entries of ``leaves[t]`` (an (m, t) array of distinct points, none the apex)."""
        apex = np.asarray(apex, np.int64)
        if not len(apex):
            return cls.empty()
        T = np.asarray(leaves, np.int64).reshape(len(apex), -1)
        a, b = np.triu_indices(T.shape[1], 1)
        rows = np.c_[apex, np.repeat(apex[:, None], T.shape[1], axis=1), T[:, a]]
        cols = np.c_[apex, T, T[:, b]]
        coefs = np.r_[1.0, -np.ones(T.shape[1]), np.ones(len(a))]
        return cls._uniform(rows, cols, coefs, 0.0, STAR)

    @classmethod
    def rows(cls, rows, cols, coefs, rhs, family: int = SIZE) -> CutSet:
        """Cuts of any length: cut t is sum_r coefs[t][r] Z[rows[t][r], cols[t][r]] >= rhs[t]
        (lists of arrays; an entry and its mirror must not both appear)."""
        rows = [np.asarray(r, np.int64) for r in rows]
        cols = [np.asarray(c, np.int64) for c in cols]
        lens = np.array([len(r) for r in rows], dtype=np.int64)
        r, c = _cat(rows, np.int64), _cat(cols, np.int64)
        return cls(np.concatenate([[0], np.cumsum(lens)]), np.minimum(r, c), np.maximum(r, c),
                   _cat([np.asarray(x, np.float64) for x in coefs], np.float64),
                   np.asarray(rhs, np.float64).reshape(len(lens)), np.full(len(lens), family))

    # ------------------------------------------------------------------ basics
    @property
    def m(self) -> int:
        return len(self.rhs)

    def __len__(self) -> int:
        return self.m

    def counts(self) -> dict[str, int]:
        """Cuts per separated family, and ``size`` when the set holds size constraints."""
        out = {name: int(np.sum(self.family == f)) for f, name in FAMILY_NAMES.items()}
        for f, name in SIZE_NAMES.items():
            if np.any(self.family == f):
                out[name] = int(np.sum(self.family == f))
        return out

    @property
    def is_size(self) -> np.ndarray:
        """Boolean mask of the size constraints (family SIZE)."""
        return self.family == SIZE

    def matrix(self, s: int) -> sp.csr_matrix:
        """The m x (s*s) operator with <B_t, Z> = (matrix @ Z.ravel())[t] for symmetric Z."""
        mat = self._mat.get(s)
        if mat is None:
            rows = np.repeat(np.arange(self.m), np.diff(self.indptr))
            mat = sp.csr_matrix((self.coef, (rows, self.i * s + self.j)), shape=(self.m, s * s))
            self._mat[s] = mat
        return mat

    def apply(self, Z: np.ndarray) -> np.ndarray:
        """<B_t, Z> for every cut t (Z symmetric)."""
        if self.m == 0:
            return np.zeros(0)
        rows = np.repeat(np.arange(self.m), np.diff(self.indptr))
        return np.bincount(rows, weights=self.coef * Z[self.i, self.j], minlength=self.m)

    def adjoint(self, u: np.ndarray, s: int) -> np.ndarray:
        """The symmetric s x s matrix sum_t u_t B_t."""
        out = np.zeros((s, s))
        if self.m == 0:
            return out
        w = np.repeat(np.asarray(u, dtype=np.float64), np.diff(self.indptr)) * self.coef
        np.add.at(out, (self.i, self.j), 0.5 * w)
        np.add.at(out, (self.j, self.i), 0.5 * w)
        return out

    def violation(self, Z: np.ndarray) -> np.ndarray:
        """rhs_t - <B_t, Z>: positive where the cut is violated."""
        return self.rhs - self.apply(Z)

    def norms(self) -> np.ndarray:
        """Frobenius norms ||B_t||_F (off-diagonal coefficients count twice, halved)."""
        if self.m == 0:
            return np.zeros(0)
        rows = np.repeat(np.arange(self.m), np.diff(self.indptr))
        sq = np.where(self.i == self.j, self.coef ** 2, 0.5 * self.coef ** 2)
        return np.sqrt(np.bincount(rows, weights=sq, minlength=self.m))

    # ------------------------------------------------------------------ editing
    def select(self, keep) -> CutSet:
        """The cuts picked by a boolean mask or an index array, in that order."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        idx = idx.astype(np.int64)
        lens = np.diff(self.indptr)[idx]
        indptr = np.concatenate([[0], np.cumsum(lens)])
        take = (np.repeat(self.indptr[idx] - indptr[:-1], lens) + np.arange(indptr[-1])
                if len(idx) else np.zeros(0, np.int64))
        return CutSet(indptr, self.i[take], self.j[take], self.coef[take], self.rhs[idx],
                      self.family[idx])

    def concat(self, *others: CutSet) -> CutSet:
        """This set followed by the others (the set itself when they are all empty: the
        loop appends the usually empty size cuts every round)."""
        if not any(o.m for o in others):
            return self
        sets = [self, *others]
        shifts = np.cumsum([0] + [len(c.i) for c in sets[:-1]])
        indptr = np.concatenate([[0]] + [c.indptr[1:] + sh for c, sh in zip(sets, shifts)])
        return CutSet(indptr, *(np.concatenate([getattr(c, f) for c in sets])
                                for f in ("i", "j", "coef", "rhs", "family")))

    def reindex(self, parent_map: np.ndarray) -> CutSet:
        """The cuts of a child whose super-point p of the parent became ``parent_map[p]``.

        A clustering of the child is a clustering of the parent in which merged super-points
        share rows, so substituting indices keeps every cut valid. Entries that now coincide
        are summed; cuts left with no terms (or that became trivially true) are dropped.
        """
        if self.m == 0:
            return self
        pm = np.asarray(parent_map, dtype=np.int64)
        a, b = pm[self.i], pm[self.j]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        rows = np.repeat(np.arange(self.m), np.diff(self.indptr))
        s = int(pm.max()) + 1
        key = (rows * s + lo) * s + hi
        uk, inv = np.unique(key, return_inverse=True)
        coef = np.bincount(inv, weights=self.coef)
        nz = np.abs(coef) > 1e-12
        uk, coef = uk[nz], coef[nz]
        r = uk // (s * s)
        lo, hi = (uk // s) % s, uk % s
        nterms = np.bincount(r, minlength=self.m)
        # a cut with no terms left reads 0 >= rhs, true for every cut built here: rhs <= 0,
        # or a size cut whose terms cannot all cancel (pcsos.bounds.sizes)
        keep = nterms > 0
        indptr = np.concatenate([[0], np.cumsum(nterms[keep])])
        sel = keep[r]
        return CutSet(indptr, lo[sel], hi[sel], coef[sel], self.rhs[keep], self.family[keep])

    def __repr__(self) -> str:
        c = self.counts()
        return f"CutSet(m={self.m}, " + ", ".join(f"{k}={v}" for k, v in c.items()) + ")"
