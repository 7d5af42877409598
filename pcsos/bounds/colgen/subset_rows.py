"""Subset-row cuts on triples of super-points for the set-partitioning LP (Jepsen, Petersen,
Spoorendonk and Pisinger 2008).

For a triple T of super-points, a clustering has at most one cluster that holds two or more
of them, so every clustering's columns obey

    sum over the columns c holding at least two points of T of lambda_c <= 1,

and the LP with these rows is still a relaxation of the clustering problem, tighter where its
solution is fractional (glass with sizes 17..54: the root LP's solution weighs 21 clusters
by 0.1-0.5, and 19 697 triples break this row by up to 0.5).

A row's dual rho_T (<= 0 in the minimising master) charges -rho_T to each cluster holding
two points of T, so the pricing must see it: the sized search's knapsack (pcsos.bounds.colgen
.pricing.knapsack_groups) takes each triple of a cut with rho_T < 0 as a group whose options
are its non-empty subsets, those of two or three points at the constant -rho_T. So that the
groups stay apart, the cuts held are point-disjoint and avoid every point with a cannot-link
partner. The Lagrangian bound adds sum_T rho_T (docs/safe_bound.md): valid for any rho <= 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SubsetRows", "SR_VIOLATION"]

#: a triple is separated when the LP's solution breaks its row by more than this
SR_VIOLATION = 1e-3
#: pairs of points that share clusters of at least this total weight seed the separation
#: (a violated triple has a pair of weight at least 1/3: its row's total, over 1, spread
#: over its three pairs)
PAIR_WEIGHT = 1.0 / 3.0


class SubsetRows:
    """The subset-row cuts of a node: point-disjoint ``triples`` ((t, 3) super-points) of a
    problem of ``s`` super-points."""

    def __init__(self, s: int, triples=()):
        self.s = int(s)
        self.triples = np.zeros((0, 3), dtype=np.int64)
        self.cut_of = np.full(self.s, -1, dtype=np.int64)
        self.add(triples)

    def __len__(self) -> int:
        return len(self.triples)

    def add(self, triples) -> int:
        """Hold the ``triples`` that are three distinct super-points none of which a cut
        holds already; returns how many were added."""
        added = []
        for t in np.asarray(triples, dtype=np.int64).reshape(-1, 3):
            if len(set(t.tolist())) == 3 and np.all(self.cut_of[t] < 0):
                self.cut_of[t] = len(self.triples) + len(added)
                added.append(np.sort(t))
        if added:
            self.triples = np.vstack([self.triples, np.asarray(added, dtype=np.int64)])
        return len(added)

    def rows(self, columns) -> list[tuple]:
        """For each column (super-points), the cuts whose row it enters: those of which it
        holds two points or three."""
        out = []
        for c in columns:
            hit = self.cut_of[np.asarray(c, dtype=np.int64)]
            hit = hit[hit >= 0]
            if len(hit) < 2:
                out.append(())
                continue
            cut, n_in = np.unique(hit, return_counts=True)
            out.append(tuple(int(t) for t in cut[n_in >= 2]))
        return out

    def charge(self, columns, rho: np.ndarray) -> np.ndarray:
        """What the cuts' duals ``rho`` (<= 0) add to each column's reduced cost:
        sum of -rho_T over the cuts it enters."""
        rho = np.asarray(rho, dtype=np.float64)
        return np.array([-float(np.sum(rho[list(r)])) if r else 0.0
                         for r in self.rows(columns)])

    def relieve(self, columns, rho: np.ndarray, value, allowed) -> list[tuple]:
        """The heuristic pricing does not see the charges: from each of ``columns`` that
        enters a cut of ``rho_T < 0``, drop one point of such a cut at a time while that
        lowers ``value`` (a column's reduced cost with its charges) and ``allowed`` holds;
        returns the columns so changed."""
        rho = np.asarray(rho, dtype=np.float64)
        out = []
        for col in columns:
            cur, best = tuple(col), value(col)
            while True:
                charged = [t for t in self.rows([cur])[0] if rho[t] < 0]
                if not charged:
                    break
                drop = {int(i) for t in charged for i in self.triples[t]}.intersection(cur)
                trials = [tuple(j for j in cur if j != i) for i in sorted(drop)]
                trials = [(value(c), c) for c in trials if c and allowed(c)]
                if not trials:
                    break
                v, c = min(trials)
                if v >= best:
                    break
                cur, best = c, v
            if cur != tuple(col):
                out.append(cur)
        return out

    def separate(self, columns, lam: np.ndarray, free: np.ndarray, limit: int) -> int:
        """Add at most ``limit`` cuts that the LP solution (``columns`` weighted by ``lam``)
        breaks by more than SR_VIOLATION, the most broken first, among the super-points
        that ``free`` allows and no cut holds; returns how many were added."""
        sup = [np.asarray(c, dtype=np.int64) for c, w in zip(columns, lam) if w > 1e-9]
        w = np.asarray([x for x in lam if x > 1e-9], dtype=np.float64)
        if limit <= 0 or not sup:
            return 0
        ok = np.asarray(free, dtype=bool) & (self.cut_of < 0)
        M = np.zeros((len(sup), self.s))
        for j, c in enumerate(sup):
            M[j, c] = 1.0
        M[:, ~ok] = 0.0
        F = (M.T * w) @ M  # pair weights
        # the points of some fractional pair (a whole point's pairs are 0 or 1)
        cand = np.flatnonzero(ok & ((F > 1e-9) & (F < 1 - 1e-9)).any(axis=1))
        found: dict[tuple, float] = {}
        for x, a in enumerate(cand):
            # the heavy pair (a, b) of a triple may be any two of its points: the third
            # ranges over every other candidate
            for b in cand[x + 1:][F[a, cand[x + 1:]] >= PAIR_WEIGHT - 1e-12]:
                rest = cand[(cand != a) & (cand != b)]
                if not len(rest):
                    continue
                n_in = (M[:, a] + M[:, b])[:, None] + M[:, rest]  # support x rest
                v = w @ (n_in >= 2)
                for h in np.flatnonzero(v > 1 + SR_VIOLATION):
                    found[tuple(sorted((int(a), int(b), int(rest[h]))))] = float(v[h])
        found = sorted(((v, t) for t, v in found.items()), key=lambda f: (-f[0], f[1]))
        picked, used = [], set()
        for _, t in found:
            if len(picked) >= limit:
                break
            if used.isdisjoint(t):
                picked.append(t)
                used.update(t)
        return self.add(picked)

    def inherit(self, parent_map: np.ndarray) -> np.ndarray:
        """The cuts mapped onto a child whose super-points are ``parent_map`` of these (a
        must-link merge, or the identity): those whose three points stay apart (a triple
        of super-points is a valid cut for any node)."""
        mapped = np.asarray(parent_map, dtype=np.int64)[self.triples]
        keep = ((mapped[:, 0] != mapped[:, 1]) & (mapped[:, 0] != mapped[:, 2])
                & (mapped[:, 1] != mapped[:, 2]))
        return mapped[keep]
