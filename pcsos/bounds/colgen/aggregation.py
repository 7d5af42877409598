"""Dynamic constraint aggregation (DCA; Elhallaoui et al. 2005, as CG+DCA uses it for MSSC):
the master holds one row per group of super-points instead of one per super-point.

A partition of the super-points into groups is kept. A column is *compatible* when it holds
every group it touches whole; the aggregated master covers each group once with compatible
columns only, so it has as many rows as groups (k at the start, from the incumbent's
clusters) and is far less degenerate. Its dual alpha_g of a group is split over the group's
super-points in proportion to their masses, pi_i = alpha_g e_i / e(g): a compatible column's
reduced cost is the same under pi as in the aggregated master, and the pricing runs on pi as
it would without aggregation. When the pricing's best column is incompatible and the best
compatible one is much weaker (or there is none), the groups that column cuts are split
along it: the partition only grows finer, so the loop ends, at worst with one super-point
per group (plain column generation).

The Lagrangian bound needs no change: it is valid at any pi (docs/safe_bound.md), and
sum_i pi_i = sum_g alpha_g.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Aggregation"]


class Aggregation:
    """A partition of ``s`` super-points of masses ``e`` into groups (``group[i]``)."""

    def __init__(self, e: np.ndarray, group: np.ndarray):
        self.e = np.asarray(e, dtype=np.float64)
        _, self.group = np.unique(np.asarray(group, dtype=np.int64), return_inverse=True)
        self._recount()

    @classmethod
    def singletons(cls, e: np.ndarray) -> Aggregation:
        """One super-point per group: no aggregation."""
        return cls(e, np.arange(len(e)))

    def _recount(self) -> None:
        self.n = int(self.group.max()) + 1 if len(self.group) else 0
        self.size = np.bincount(self.group, minlength=self.n)
        self.mass = np.bincount(self.group, weights=self.e, minlength=self.n)

    def rows(self, columns: list[tuple]) -> list[tuple | None]:
        """For each column (super-points), the groups it holds whole, or None when it holds
        part of a group (incompatible)."""
        if not columns:
            return []
        lens = np.fromiter((len(c) for c in columns), dtype=np.int64, count=len(columns))
        cid = np.repeat(np.arange(len(columns)), lens)
        gid = self.group[np.fromiter((i for c in columns for i in c), dtype=np.int64,
                                     count=int(lens.sum()))]
        key, n_in = np.unique(cid * self.n + gid, return_counts=True)
        kc, kg = np.divmod(key, self.n)
        bad = np.zeros(len(columns), dtype=bool)
        bad[kc[n_in != self.size[kg]]] = True
        bounds = np.searchsorted(kc, np.arange(len(columns) + 1))
        return [None if bad[j] else tuple(kg[bounds[j]:bounds[j + 1]].tolist())
                for j in range(len(columns))]

    def split(self, col) -> bool:
        """Split every group that ``col`` holds in part into its part inside and its part
        outside; returns whether a group was split."""
        inside = np.zeros(len(self.group), dtype=bool)
        inside[np.asarray(col, dtype=np.int64)] = True
        cut = np.bincount(self.group[inside], minlength=self.n)
        partial = (cut > 0) & (cut < self.size)
        if not partial.any():
            return False
        move = inside & partial[self.group]
        # the part inside a cut group becomes a new group
        new_id = np.full(self.n, -1, dtype=np.int64)
        new_id[partial] = self.n + np.arange(int(partial.sum()))
        self.group = np.where(move, new_id[self.group], self.group)
        self._recount()
        return True

    def disaggregate(self, alpha: np.ndarray) -> np.ndarray:
        """Per super-point duals pi_i = alpha_g e_i / e(g) (sum over a group: alpha_g)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        return alpha[self.group] * (self.e / self.mass[self.group])
