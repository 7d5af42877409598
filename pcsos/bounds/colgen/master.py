"""The restricted master: the set-partitioning LP over the columns generated so far, kept in
one HiGHS model that is warm-started as columns come and go (by the primal simplex; or
solved afresh by the interior-point method: :data:`METHODS`).

    min  sum_c cost_c lambda_c
    s.t. sum_{c covers g} lambda_c = 1   for every row g                 (duals alpha_g)
         sum_{c in class j} lambda_c = k_j    for every size class j          (duals sigma_j)
         sum_{c enters cut t} lambda_c <= 1   for every subset-row cut t      (duals rho_t)
         lambda >= 0

Without sizes there is one class, of all k clusters; with exact sizes one per size value,
holding as many clusters as the sizes have of it (pcsos.bounds.colgen.pricing.PricingData
.classes). The cut rows (pcsos.bounds.colgen.subset_rows) come after the class rows, each
column entering those that the caller names.

A row is a super-point, or with constraint aggregation a group of them (pcsos.bounds.colgen
.aggregation); a column is given by its members (the key) and the rows it covers.

Artificial columns (one per row, at a cost above any clustering's) keep it feasible from the
first solve on, whatever columns it holds; their duals are then bounded by that cost. The
master's value is never used as a bound: the bound comes from its duals (pcsos.bounds.colgen
.engine).

Box columns (two per row, +1 at cost c_g + delta and -1 at cost -(c_g - delta)) keep each
dual alpha_g within [c_g - delta, c_g + delta] when :meth:`Master.set_box` sets them (dual
box stabilization, "BoxStep"); at cost ``big`` they are inert. While one carries weight the
master is a relaxation of the restricted LP, not the LP itself.
"""

from __future__ import annotations

import math

import highspy
import numpy as np

from pcsos.milp import _quiet_highs

__all__ = ["Master", "MasterError", "METHODS"]

#: how HiGHS solves the master: 'simplex' (primal simplex, warm-started from the last basis)
#: or 'ipm' (its interior-point method without crossover, from scratch each time: a central
#: solution of the master's optimal face, whose duals are central too)
METHODS = ("simplex", "ipm")
#: the interior-point method's optimality tolerance (HiGHS's default, 1e-8, took more
#: iterations for duals the pricing does not need that close)
IPM_TOL = 1e-7
#: the largest artificial cost passed to HiGHS as it is (a power of two near 1e15, five
#: orders below its infinite_cost, 1e20); above, the master's costs go in units (Master)
COST_MAX = 2.0 ** 50
#: an interior solution has every variable above zero: below this a weight counts as zero
IPM_ZERO = 1e-6


def _cost_unit(big: float) -> float:
    """The unit of the costs HiGHS is given (:class:`Master`): a power of two near ``big``
    below 1 and above COST_MAX, else 1."""
    return 2.0 ** round(math.log2(big)) if 0 < big < 1 or big > COST_MAX else 1.0


class MasterError(RuntimeError):
    """HiGHS could not solve the master LP (the engine stops; its bound so far stands)."""


class Master:
    """The restricted master LP of ``s`` rows and ``k`` clusters (an int, or the clusters of
    each size class); ``big`` is the cost of an artificial column (above the SSE of any
    clustering); ``method``: one of :data:`METHODS`; ``at_most``: the one class row holds
    at most k clusters, not exactly k (the same LP value: splitting a cluster never raises
    its SSE, so a solution of fewer clusters' weight splits into one of k). Its dual is then
    at most zero, so at the LP's optimal duals the Lagrangian bound, which takes the least
    reduced cost only where it is below zero, is the LP's value (docs/safe_bound.md)."""

    def __init__(self, s: int, k, big: float, method: str = "simplex", at_most: bool = False):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method = method
        per_class = np.atleast_1d(np.asarray(k, dtype=np.float64))
        r = len(per_class)
        self.s, self.k, self.r = s, int(per_class.sum()), r
        self.h = _quiet_highs(highspy)
        h = self.h
        # HiGHS's tolerances are absolute (1e-7 on duals and reduced costs): below 1, the
        # costs go to it in units of ``unit``, a power of two near ``big``, so that they
        # are not of the tolerances' size (on data at 1e-4, costs near 1e-9 left the
        # master's duals inaccurate and the generation stalled). A power of two scales
        # every rounding the same way; duals and values come back multiplied by it. Above
        # COST_MAX too: HiGHS reads a cost of 1e20 or more as infinite (data at 1e10, SSEs
        # near 1e22, ended its master in status Unknown). Between, the costs go as they
        # are, as before
        self.unit = _cost_unit(big)
        h.setOptionValue("solver", "simplex")
        # one thread, as every HiGHS model of pcsos (pcsos.milp): the tree runs nodes side
        # by side, and HiGHS's scheduler is process-wide, sized by the first model that runs
        h.setOptionValue("threads", 1)
        # primal simplex: new columns leave the last basis primal feasible, so each solve
        # goes on from it (HiGHS's default dual simplex needs 2.7x the time on pr299,
        # k = 10, and its other duals take the generation 2.8x the iterations)
        h.setOptionValue("simplex_strategy", 4)
        if method == "ipm":
            h.setOptionValue("solver", "ipm")
            h.setOptionValue("run_crossover", "off")
            h.setOptionValue("ipm_optimality_tolerance", IPM_TOL)
        ones = np.ones(s + r)
        target = np.concatenate([np.ones(s), per_class])
        if at_most and r != 1:
            raise ValueError("at_most needs one class row")
        lower = np.concatenate([np.ones(s), [0.0]]) if at_most else target
        h.addRows(s + r, lower, target, 0, np.zeros(0, dtype=np.int32),
                  np.zeros(0, dtype=np.int32), np.zeros(0))
        # artificials: +1 in each row, and -1 in each class row (so that its count is
        # reachable from above and below)
        idx = np.concatenate([np.arange(s + r), s + np.arange(r)]).astype(np.int32)
        vals = np.concatenate([ones, -np.ones(r)])
        n_art = s + 2 * r
        h.addCols(n_art, np.full(n_art, float(big) / self.unit), np.zeros(n_art),
                  np.full(n_art, highspy.kHighsInf), n_art, np.arange(n_art, dtype=np.int32),
                  idx, vals)
        # the box columns: +1 (alpha_g <= cost) then -1 (alpha_g >= -cost) in each row
        box_idx = np.concatenate([np.arange(s), np.arange(s)]).astype(np.int32)
        box_vals = np.concatenate([np.ones(s), -np.ones(s)])
        h.addCols(2 * s, np.full(2 * s, float(big) / self.unit), np.zeros(2 * s),
                  np.full(2 * s, highspy.kHighsInf), 2 * s, np.arange(2 * s, dtype=np.int32),
                  box_idx, box_vals)
        self.n_artificial = n_art
        self.n_art = n_art + 2 * s  # generated column j sits at j + n_art
        self.big = float(big)
        self._box_costs = np.full(2 * s, float(big))  # in the data's units
        self.boxed = False
        #: simplex, interior-point and crossover iterations over every solve so far
        self.pivots = 0
        #: the last solution is basic (a vertex): the simplex's, or the interior-point
        #: method's after a crossover
        self.basic = False
        self.columns: list[tuple] = []   # members of the column j + n_art
        self.index: dict[tuple, int] = {}
        self.costs: list[float] = []
        #: the cut rows, and their duals at the last solve (<= 0 at an optimum)
        self.n_cuts = 0
        self.cut_duals = np.zeros(0)

    def add_cuts(self, enters: list[list[int]]) -> None:
        """Add one cut row per entry of ``enters``, sum lambda_c <= 1 over the generated
        columns it lists (positions in ``columns``)."""
        if not enters:
            return
        starts, idx = [], []
        for cols in enters:
            starts.append(len(idx))
            idx.extend(int(j) + self.n_art for j in cols)
        n = len(enters)
        self.h.addRows(n, np.full(n, -highspy.kHighsInf), np.ones(n), len(idx),
                       np.array(starts, dtype=np.int32), np.array(idx, dtype=np.int32),
                       np.ones(len(idx)))
        self.n_cuts += n

    def add(self, columns: list[tuple], costs: list[float], rows: list[tuple] | None = None,
            classes: list[int] | None = None, cuts: list[tuple] | None = None) -> int:
        """Add the columns (sorted member tuples) not already held, covering ``rows`` (their
        members when None), each in its size class of ``classes`` (all in class 0 when
        None) and entering the cut rows of ``cuts`` (none when None); returns how many."""
        rows = columns if rows is None else rows
        classes = [0] * len(columns) if classes is None else classes
        cuts = [()] * len(columns) if cuts is None else cuts
        new, seen = [], set()
        for c, v, r, j, t in zip(columns, costs, rows, classes, cuts):
            if c not in self.index and c not in seen:  # a batch may repeat a column
                seen.add(c)
                new.append((c, v, r, j, t))
        if not new:
            return 0
        starts, idx, vals = [], [], []
        for _, _, r, j, t in new:
            starts.append(len(idx))
            idx.extend(r)
            idx.append(self.s + j)
            idx.extend(self.s + self.r + int(u) for u in t)
        vals = np.ones(len(idx))
        self.h.addCols(len(new), np.array([v for _, v, _, _, _ in new]) / self.unit,
                       np.zeros(len(new)),
                       np.full(len(new), highspy.kHighsInf), len(idx),
                       np.array(starts, dtype=np.int32), np.array(idx, dtype=np.int32), vals)
        for c, v, _, _, _ in new:
            self.index[c] = len(self.columns)
            self.columns.append(c)
            self.costs.append(float(v))
        return len(new)

    def set_big(self, big: float) -> None:
        """Give every artificial column the cost ``big``, and the box columns too while no
        box is set (as :meth:`set_box` with None would); the basis stays valid."""
        self.big = float(big)
        # the unit follows big: past 1e20, HiGHS's infinite cost, the change would be lost
        # and the master solved as before. A new unit changes every cost, only costs, so
        # the basis stays valid, and duals come back in the data's units
        unit = _cost_unit(big)
        rescale, self.unit = unit != self.unit, unit
        if not self.boxed:
            self._box_costs = np.full(2 * self.s, self.big)
        if rescale or not self.boxed:
            self.h.changeColsCost(2 * self.s, np.arange(self.n_artificial, self.n_art,
                                                        dtype=np.int32),
                                  self._box_costs / self.unit)
        if rescale and self.columns:
            self.h.changeColsCost(len(self.columns), np.arange(
                self.n_art, self.n_art + len(self.columns), dtype=np.int32),
                np.asarray(self.costs) / self.unit)
        self.h.changeColsCost(self.n_artificial, np.arange(self.n_artificial, dtype=np.int32),
                              np.full(self.n_artificial, float(big) / self.unit))

    def set_box(self, center: np.ndarray | None, delta: float = 0.0) -> None:
        """Keep the rows' duals within ``delta`` of ``center`` (one value per row), or free
        them (``center`` None: the box columns cost ``big`` and the master is the restricted
        LP again). Only costs change: the basis stays valid."""
        s = self.s
        if center is None:
            costs = np.full(2 * s, self.big)
        else:
            c = np.asarray(center, dtype=np.float64)
            costs = np.concatenate([c + delta, -(c - delta)])
        self.boxed = center is not None
        self._box_costs = costs
        self.h.changeColsCost(2 * s, np.arange(self.n_artificial, self.n_art, dtype=np.int32),
                              costs / self.unit)

    def retire(self, drop) -> None:
        """Delete the generated columns at positions ``drop`` (positions in ``columns``);
        the others keep their order. Columns out of the basis leave it valid."""
        drop = np.unique(np.asarray(drop, dtype=np.int64))
        if not len(drop):
            return
        self.h.deleteCols(len(drop), (drop + self.n_art).astype(np.int32))
        keep = np.ones(len(self.columns), dtype=bool)
        keep[drop] = False
        self.columns = [c for c, kp in zip(self.columns, keep) if kp]
        self.costs = [v for v, kp in zip(self.costs, keep) if kp]
        self.index = {c: j for j, c in enumerate(self.columns)}

    def _run(self) -> highspy.HighsModelStatus:
        h = self.h
        h.run()
        info = h.getInfo()
        self.pivots += (int(info.simplex_iteration_count) + int(info.ipm_iteration_count)
                        + int(info.crossover_iteration_count))
        self.basic = bool(h.getBasis().valid)
        return h.getModelStatus()

    def solve(self, vertex: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Solve; returns (the rows' duals, the class rows' duals sigma, lambda of the
        generated columns, the LP's value). ``vertex``: under 'ipm', end with a crossover to
        a basic solution (the simplex's solutions are basic)."""
        h = self.h
        if vertex and self.method == "ipm":
            h.setOptionValue("run_crossover", "on")
            try:
                return self.solve()
            finally:
                h.setOptionValue("run_crossover", "off")
        status = self._run()
        if self.boxed and status in (highspy.HighsModelStatus.kUnbounded,
                                     highspy.HighsModelStatus.kUnboundedOrInfeasible):
            # the box's floor puts the duals of some column above its cost: no duals in
            # the box are feasible. Free them (the engine sets a box again at its next
            # better bound)
            self.set_box(None)
            status = self._run()
        if status != highspy.HighsModelStatus.kOptimal:
            # a warm-started simplex can end 'unknown' on this degenerate LP: solve it again
            # from scratch, then by the interior-point method
            h.clearSolver()
            status = self._run()
        if status != highspy.HighsModelStatus.kOptimal:
            # then by the other method
            other = "simplex" if self.method == "ipm" else "ipm"
            h.clearSolver()
            h.setOptionValue("solver", other)
            status = self._run()
            h.setOptionValue("solver", self.method)
        if status != highspy.HighsModelStatus.kOptimal:
            raise MasterError(f"the master LP ended with status "
                              f"{h.modelStatusToString(status)}")
        sol = h.getSolution()
        y = np.asarray(sol.row_dual, dtype=np.float64) * self.unit
        self.cut_duals = y[self.s + self.r:].copy()
        lam = self._values()[self.n_art:]
        return (y[:self.s].copy(), y[self.s:self.s + self.r].copy(), lam,
                float(h.getInfo().objective_function_value) * self.unit)

    def _values(self) -> np.ndarray:
        """The last solution's column values; of an interior one (not :attr:`basic`) those
        below IPM_ZERO are zero (the engine reads a zero weight as a column out of the
        solution)."""
        x = np.array(self.h.getSolution().col_value, dtype=np.float64)
        if not self.basic:
            x[x < IPM_ZERO] = 0.0
        return x

    def artificial_weight(self) -> float:
        """The total weight on the artificial columns in the last solution (0: the master's
        solution is a fractional clustering)."""
        return float(np.sum(self._values()[:self.n_artificial]))

    def box_weight(self) -> float:
        """The total weight on the box columns in the last solution (0: the box does not
        bind, and the solution is the restricted LP's too)."""
        return float(np.sum(self._values()[self.n_artificial:self.n_art]))
