"""The one assignment engine of every ILP-based heuristic (spec §6).

Given k fixed centres, assign every super-point i (size ``e_i``, mean ``mu_i``) to one
cluster, minimising ``sum_i sum_h cost_ih x_ih`` (by default ``cost_ih = e_i ||mu_i - c_h||^2``,
which differs from the squared distances of the original points only by a constant), with
exactly k non-empty clusters and every cannot-link pair in different clusters.

* Without cannot-link pairs the problem is a transportation problem (its constraint matrix
  is an interval/bipartite incidence matrix, hence totally unimodular). It is solved exactly
  and combinatorially: every super-point goes to its nearest centre except k "representatives"
  that open the k clusters, chosen by one rectangular assignment problem (Hungarian method,
  :func:`scipy.optimize.linear_sum_assignment`) on the regret ``cost_ih - min_h' cost_ih'``.
  Any feasible assignment picks one member per cluster as representative and pays at least
  the nearest-centre cost for the others, so this is optimal; no LP or MILP is needed.
* With cannot-link pairs it is NP-hard, but it decomposes (``decompose=True``, the
  default). Drop the k cover rows: what is left separates into the super-points without a
  cannot-link partner (each takes its nearest centre) and the connected components of the
  cannot-link graph. A component that is a tree is solved exactly by dynamic programming
  (``f_v(h) = cost_vh + sum_children min_{g != h} f_c(g)``, in O(size * k), all trees at once
  level by level); the components with cycles go together into one MILP without cover rows.
  When the combined labelling opens all k clusters it is optimal for the full problem (it is
  optimal for a relaxation and feasible); otherwise, and with ``decompose=False``, the full
  MILP is solved (above ``full_milp_columns`` columns, the empty clusters are opened by a
  cheap repair instead and the answer is only ``'feasible'``). At n = 20 000 with 1 000
  pairs and k = 100 the full model has 2 million columns; the decomposition touches only
  the ~2 000 constrained super-points.
* The MILP (NP-hard) is built once per engine, when first needed, as a
  :class:`pcsos.milp.Milp` and kept by the backend's adapter (:mod:`pcsos.milp`); between
  calls only the objective costs change and the previous assignment is passed as a warm
  start. Backends: ``'highs'`` (default; :mod:`highspy`) and ``'gurobi'`` (:mod:`gurobipy`;
  each model opens one Gurobi environment on its first solve, disposed in
  :meth:`AssignmentEngine.close`, on leaving its ``with`` block, or when it is garbage
  collected).

Cluster sizes (``counts``: points per super-point; ``size_bounds`` or the exact multiset
``sizes``; :meth:`AssignmentEngine.from_problem` takes them from the instance) add k rows
``lo_h <= sum_i counts_i x_ih <= hi_h``, which replace the cover rows and couple all
super-points, so neither the representatives' matching nor the decomposition applies.
Which centre gets which exact size is part of the least-cost assignment (fixing it
beforehand, e.g. by sorting the nearest-centre counts, is a guess that can miss the
optimum), so it is decided exactly:

* bounds, or all exact sizes equal: one problem with ``lo_h``, ``hi_h`` the bounds;
* distinct exact sizes with at most ``size_permutations`` (24) distinct arrangements on
  the centres (every k <= 4): one fixed-size problem per arrangement, the best kept. The
  model is built once with cluster slot j of the j-th smallest size; an arrangement only
  permutes the cost columns, so each solve is a warm-started one of the same model;
* more arrangements: one MILP in which binaries ``y_hj`` choose the size of centre h
  (each centre one size, each size as often as the multiset has it, ``sum_i counts_i x_ih
  = sum_j v_j y_hj``). Its LP relaxation is weak (a centre may take half of two sizes), so
  the MIP search runs: without CL pairs, single points, k = 5, 0.05-1 s per call at
  s = 200 and 2-5 s at s = 1 000, where one warm-started fixed-size solve (the flow
  below) takes 0.002-0.004 s; all 120 arrangements took 0.3 s and 1.6-2.4 s: the y model
  is the better choice at s = 200, the enumeration at s = 1 000, both exact.

Each fixed-size problem of single-point super-points without cannot-link pairs
(``flow=True``, the default) is a transportation problem, i.e. a min-cost flow (points ->
centres, centre h carrying lo_h..hi_h units): its constraint matrix is totally
unimodular, so a simplex optimum is a 0/1 assignment. It is that LP (no integrality) in
a model kept by the backend's adapter and warm-started from the previous basis (method
``'flow'``; 0.004 s per call at s = 1 000, k = 5, 0.05 s through a
:func:`scipy.optimize.linprog` rebuilt per call); the answer is checked to be 0/1, and
the MILP decides in the unlikely case it is not. Must-link groups of several points make the
size rows' coefficients > 1 (a bin-packing-like problem whose LP can split a group), so
they go to the MILP, as do cannot-link pairs: x, the size rows and the cannot-link rows,
built once, solved as below.

Infeasibility (no k-colouring of the cannot-link graph, fewer super-points than clusters,
or no assignment meeting the sizes) is reported as ``status='infeasible'``, a time limit
without any assignment as ``status='time_limit'``; neither raises. The MILP's verdict does
not depend on the centres (nor on which centre has which size), so an infeasible sized
assignment proves that no clustering of the super-points meets the pairs and the sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix, csc_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from pcsos.clock import Deadline
from pcsos.errors import InputError
from pcsos.milp import BACKENDS, Milp, adapter
from pcsos.problem import group_sums

__all__ = ["Assignment", "AssignmentEngine", "squared_costs", "centres_of", "group_sums",
           "BACKENDS"]


@dataclass
class Assignment:
    """The result of one assignment call.

    ``labels`` are super-point labels 0..k-1 (every cluster non-empty) or None; ``cost`` is
    the objective value of the assignment (inf when none); ``status`` is ``'optimal'``,
    ``'feasible'`` (stopped at the time limit with an assignment), ``'infeasible'``,
    ``'time_limit'`` (stopped with none) or ``'failed'`` (the solver's answer broke the
    model, numerical trouble); ``method`` names the algorithm that produced it.
    """

    labels: np.ndarray | None
    cost: float
    status: str
    seconds: float
    method: str


def squared_costs(points: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The (s, k) matrix ``weights_i * ||points_i - centres_h||^2``."""
    pp = np.einsum("ij,ij->i", points, points)
    cc = np.einsum("ij,ij->i", centres, centres)
    d2 = pp[:, None] - 2.0 * points @ centres.T + cc[None, :]
    np.maximum(d2, 0.0, out=d2)  # the expansion can go slightly negative by rounding
    return weights[:, None] * d2


def centres_of(labels: np.ndarray, W: np.ndarray, e: np.ndarray, k: int,
               fallback: np.ndarray | None = None) -> np.ndarray:
    """Cluster means ``sum_i w_i / sum_i e_i`` from super-point row sums ``W`` and sizes ``e``.

    A cluster without members keeps its row of ``fallback`` (zeros when none is given).
    """
    labels = np.asarray(labels, dtype=np.int64)
    S = group_sums(labels, W, k)
    m = np.bincount(labels, weights=e, minlength=k)
    out = np.zeros_like(S) if fallback is None else np.array(fallback, dtype=np.float64)
    used = m > 0
    out[used] = S[used] / m[used, None]
    return out


class AssignmentEngine:
    """Assign s weighted points to k fixed centres under cannot-link pairs (see module doc).

    Parameters
    ----------
    points : (s, d) the super-point means ``w_i / e_i``.
    weights : (s,) the super-point sizes ``e_i``.
    cl : (q, 2) cannot-link pairs between super-points.
    k : number of clusters, all of which must be non-empty.
    backend : ``'highs'`` (default) or ``'gurobi'``; only used when there are CL pairs.
    threads : solver threads (1 by default: heuristics run inside a busy tree search).
    mip_rel_gap : relative MIP gap at which the solver stops (default 1e-6, i.e. optimal up
        to rounding, which keeps the assignment/update loop monotone).
    decompose : solve by the decomposition of the module doc (default) or always by the
        full MILP.
    full_milp_columns : when the decomposition leaves a cluster empty and ``s * k`` is
        above this, the empty clusters are opened by the cheapest moves of one super-point
        each (status ``'feasible'``, not proven optimal) instead of building the full MILP
        (about 1.3 kB per column: 2.6 GB at s = 20 000, k = 100; 1.5 GB at s = 906,
        k = 100 with 9 855 cannot-link pairs).
    call_time_limit : seconds at most per :meth:`solve` call (None: only its own
        ``time_limit``). A call cut short returns the solver's best assignment, or the warm
        start when it has none better, with status ``'feasible'``.
    counts : (s,) points per super-point, what sizes count (default: 1 each).
    size_bounds : ``(lo, hi)``, bounds on every cluster's count (None: no bound on that side).
    sizes : the multiset of exact cluster counts (k values); not with ``size_bounds``.
    flow : solve the sized case of single points without CL pairs as a min-cost flow
        (default) rather than by the MILP (module doc).
    size_permutations : distinct exact sizes are tried in every arrangement on the centres
        when there are at most this many arrangements (default 24: every k <= 4), else
        chosen inside one MILP (module doc).
    """

    def __init__(self, points: np.ndarray, weights: np.ndarray, cl: np.ndarray, k: int, *,
                 backend: str = "highs", threads: int = 1, mip_rel_gap: float = 1e-6,
                 decompose: bool = True, call_time_limit: float | None = None,
                 full_milp_columns: int = 20_000, counts: np.ndarray | None = None,
                 size_bounds: tuple[int | None, int | None] | None = None,
                 sizes=None, flow: bool = True, size_permutations: int = 24):
        self.points = np.asarray(points, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
        self.k = int(k)
        self.s = len(self.weights)
        if backend not in BACKENDS:
            raise InputError(f"unknown assignment backend {backend!r}; choose one of "
                             f"{', '.join(BACKENDS)}", source="backend")
        self.sized = _Sizes.make(self.s, self.k, counts, size_bounds, sizes,
                                 int(size_permutations))
        self.backend = backend
        self.calls = 0
        self.decomposed_calls = 0  # calls answered by the decomposition alone
        self.call_time_limit = None
        if call_time_limit is not None:
            try:
                self.call_time_limit = float(call_time_limit)
            except (TypeError, ValueError):
                self.call_time_limit = math.nan
            if not self.call_time_limit > 0 or isinstance(call_time_limit, bool):
                raise InputError(f"must be a number of seconds > 0, got {call_time_limit!r}",
                                 source="call_time_limit (assign_time_limit)")
        self._closed = False
        self._opts = (threads, mip_rel_gap)
        self._models: dict[str, object] = {}  # 'full' and 'cycles' MILPs, built on first use
        sz = self.sized
        self._flow = sz is not None and flow and sz.flow_ok and not len(self.cl)
        self._has_milp = (bool(len(self.cl)) or (sz is not None and not self._flow)) \
            and self.s >= self.k
        self._solver = adapter(backend)
        if self._has_milp or self._flow:
            # the model is built on first use; a missing package is said at once
            self._solver.require("assignment")
        # the name is fixed here, not per call: solve() reports it in every Assignment
        self._method = self._solver.name if self._has_milp else \
            "flow" if self._flow else "matching"
        self._decompose = self._has_milp and decompose and sz is None
        # the cannot-link pairs in the decomposition's relaxation: those ever broken by its
        # answer (see _solve_parts); the structure is rebuilt when the set grows
        self._ucl = np.unique(np.sort(self.cl, axis=1), axis=0) if self._decompose else None
        self._active = np.zeros(len(self._ucl), dtype=bool) if self._decompose else None
        self._parts = _Decomposition(self.s, self.k, self._ucl[:0]) if self._decompose \
            else None
        self.rebuilds = 0
        self.repaired_calls = 0  # calls answered by _open_empty (status 'feasible')
        self.full_milp_columns = int(full_milp_columns)

    @property
    def _milp(self):
        """The full assignment MILP (built on first access)."""
        return self._model("full")

    def _model(self, which: str):
        m = self._models.get(which)
        if m is None:
            threads, gap = self._opts
            if which == "flow":  # the sized transportation LP (module doc): no integrality
                milp = self.sized.milp(self.cl)
                milp.integrality = np.zeros(milp.num_cols, dtype=bool)
            elif which == "full":
                milp = _assignment_milp(self.s, self.k, self.cl, True) if self.sized is None \
                    else self.sized.milp(self.cl)
            else:
                milp = _assignment_milp(len(self._parts.cyc_nodes), self.k, self._parts.cyc_cl,
                                        False)
            m = self._solver.model(milp, threads=threads, mip_rel_gap=gap)
            self._models[which] = m
        return m

    def close(self) -> None:
        """Release the solver's resources (Gurobi: the model and its Env); idempotent.

        Further :meth:`solve` calls raise :class:`~pcsos.errors.InputError`. The engine is
        also a context manager, and Gurobi's resources are released when it is garbage
        collected, so callers that simply drop it leak nothing either.
        """
        self._closed = True
        for m in self._models.values():
            m.close()

    def __enter__(self) -> AssignmentEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def from_problem(cls, problem, *, k: int | None = None, sizes: bool = True,
                     **kwargs) -> AssignmentEngine:
        """An engine on a :class:`pcsos.problem.Problem`'s super-points and CL pairs, with
        the instance's cluster sizes unless ``sizes`` is false or ``k`` differs from the
        problem's (a (k-1)-cluster engine cannot meet them)."""
        kk = problem.k if k is None else k
        inst = problem.instance
        if sizes and kk == problem.k and inst.has_sizes:
            kwargs.update(counts=problem.counts, sizes=inst.sizes,
                          size_bounds=None if inst.sizes is not None
                          else (inst.size_min, inst.size_max))
        return cls(problem.centroids, problem.e, problem.cl, kk, **kwargs)

    @property
    def method(self) -> str:
        """Which algorithm :meth:`solve` uses: ``'matching'``, ``'flow'`` (sizes, module
        doc) or the MILP backend's name."""
        return self._method

    def costs(self, centres: np.ndarray) -> np.ndarray:
        """The squared-distance cost matrix for the given (k, d) centres."""
        centres = np.asarray(centres, dtype=np.float64)
        if centres.shape != (self.k, self.points.shape[1]):
            raise InputError(f"centres must have shape {(self.k, self.points.shape[1])}, "
                             f"got {centres.shape}", source="centres")
        return squared_costs(self.points, self.weights, centres)

    def solve(self, centres: np.ndarray | None = None, *, costs: np.ndarray | None = None,
              warm: np.ndarray | None = None,
              time_limit: float | Deadline | None = None) -> Assignment:
        """Optimal assignment for ``centres`` (or an explicit (s, k) ``costs`` matrix).

        ``warm`` is a feasible labelling passed to the MILP as a starting incumbent (ignored
        when infeasible for the current model); ``time_limit`` (seconds or a
        :class:`~pcsos.clock.Deadline`) caps the solver's time.
        """
        if self._closed:
            raise InputError("solve called on a closed assignment engine")
        deadline = Deadline.of(time_limit)
        self.calls += 1
        if costs is None:
            if centres is None:
                raise InputError("solve needs centres or costs")
            costs = self.costs(centres)
        costs = np.asarray(costs, dtype=np.float64)
        if costs.shape != (self.s, self.k) or not np.all(np.isfinite(costs)):
            raise InputError(f"costs must be a finite ({self.s}, {self.k}) matrix")
        if self.s < self.k:
            return Assignment(None, float("inf"), "infeasible", deadline.elapsed(),
                              self.method)
        if not self._has_milp and not self._flow:
            labels = _match_assign(costs)
            status = "optimal"
        else:
            if deadline.expired():
                return Assignment(None, float("inf"), "time_limit", deadline.elapsed(),
                                  self.method)
            if warm is not None and not self._is_feasible(warm):
                warm = None
            labels, status = None, ""
            call = deadline.within(self.call_time_limit)
            if self._decompose:
                labels, status = self._solve_parts(costs, warm, call)
            if labels is None and status not in ("infeasible", "time_limit"):
                if call.expired():
                    labels, status = None, "time_limit"
                elif self.sized is not None and self.sized.perms is not None:
                    labels, status = self._solve_slots(costs, warm, call)
                else:
                    labels, status = _solve_model(self._milp, costs, warm, call, self.sized)
            if labels is None and status == "time_limit" and warm is not None:
                # the solver stopped with nothing better than the start it was given
                labels, status = np.array(warm, dtype=np.int64), "feasible"
            if labels is not None and not self._is_feasible(labels):
                # a solver answer that breaks the model (tolerance trouble) is not returned,
                # and proves nothing about feasibility
                labels, status = None, "failed"
        cost = float(costs[np.arange(self.s), labels].sum()) if labels is not None \
            else float("inf")
        return Assignment(labels, cost, status, deadline.elapsed(), self.method)

    def _solve_slots(self, costs, warm, deadline: Deadline):
        """Sizes fixed per cluster slot (module doc): the best assignment over the listed
        arrangements of the sizes on the centres, each by the flow or the fixed-size MILP
        with the cost columns permuted; (None, 'infeasible' | 'time_limit') without one."""
        sz, s = self.sized, self.s
        best, best_cost, status = None, math.inf, "optimal"
        wsize = None if warm is None else np.bincount(warm, weights=sz.counts, minlength=self.k)
        for P in sz.perms:  # P[h]: the slot (size) of centre h
            inv = np.argsort(P)  # the centre of each slot
            cs = costs[:, inv]
            if deadline.expired():
                status = "feasible" if best is not None else "time_limit"
                break
            lab, st = _flow_assign(self._model("flow"), cs, deadline) if self._flow \
                else ("", "failed")
            if st == "failed":  # the MILP; for the flow only on a fractional answer, never seen
                w = P[warm] if wsize is not None and np.array_equal(sz.lo[P], wsize) else None
                lab, st = _solve_model(self._milp, cs, w, deadline)
            if st == "infeasible":
                # feasibility does not depend on which centre has which size
                return None, "infeasible"
            if lab is None:
                status = "feasible" if best is not None else st
                break
            if st != "optimal":
                status = "feasible"
            lab = inv[lab]
            c = float(costs[np.arange(s), lab].sum())
            if c < best_cost:
                best, best_cost = lab, c
        return best, status

    def _solve_parts(self, costs, warm, deadline: Deadline):
        """The decomposition (module doc): labels and 'optimal' when they open all k clusters;
        (None, 'infeasible' | 'time_limit') when the cycles' MILP says so; else (None, '').

        The relaxation holds only the cannot-link pairs that some earlier answer broke (row
        generation): it is solved, the pairs its labels break are added, and it is solved
        again until none is broken. Every round solves a relaxation of the assignment, so
        the first labelling that breaks no pair is optimal; pairs between far-apart clusters,
        most of them when k is large, never enter a model.
        """
        if self.k < 2:
            return None, "infeasible"  # a cannot-link pair needs two clusters
        ucl = self._ucl
        while True:
            parts = self._parts
            labels = np.argmin(costs, axis=1)
            parts.solve_trees(costs, labels)
            status = "optimal"
            if len(parts.cyc_nodes):
                sub = parts.cyc_nodes
                if deadline.expired():
                    return None, "time_limit"
                lab, status = _solve_model(
                    self._model("cycles"), costs[sub], None if warm is None else warm[sub],
                    deadline)
                if lab is None:
                    return None, status if status in ("infeasible", "time_limit") else ""
                labels[sub] = lab
            broken = ~self._active & (labels[ucl[:, 0]] == labels[ucl[:, 1]])
            if not broken.any():
                break
            self._active |= broken
            self._parts = _Decomposition(self.s, self.k, ucl[self._active])
            old = self._models.pop("cycles", None)
            if old is not None:
                old.close()
            self.rebuilds += 1
        if np.bincount(labels, minlength=self.k).min() == 0:
            if self.s * self.k <= self.full_milp_columns or not self._open_empty(labels, costs):
                return None, ""
            self.repaired_calls += 1
            return labels, "feasible"
        self.decomposed_calls += 1
        return labels, status

    def _open_empty(self, labels, costs) -> bool:
        """Open the clusters ``labels`` leaves empty by moving one super-point into each,
        chosen by one assignment problem on the regret (in place). A super-point moved into
        an empty cluster breaks no cannot-link pair (its partners are elsewhere, or moved
        into another of the empty clusters); candidates are those whose cluster keeps
        another member. False when that leaves another cluster empty."""
        size = np.bincount(labels, minlength=self.k)
        empty = np.flatnonzero(size == 0)
        cand = np.flatnonzero(size[labels] > 1)
        if len(cand) < len(empty):
            return False
        regret = costs[np.ix_(cand, empty)] - costs[cand, labels[cand]][:, None]
        rows, cols = linear_sum_assignment(regret.T)
        labels[cand[cols]] = empty[rows]
        return bool(np.bincount(labels, minlength=self.k).min() > 0)

    def _is_feasible(self, labels) -> bool:
        labels = np.asarray(labels)
        if labels.shape != (self.s,) or labels.min() < 0 or labels.max() >= self.k:
            return False
        if len(np.unique(labels)) != self.k:
            return False
        if self.sized is not None and not self.sized.ok(labels):
            return False
        return bool(len(self.cl) == 0
                    or np.all(labels[self.cl[:, 0]] != labels[self.cl[:, 1]]))


class _Sizes:
    """The size rows of an engine (module doc). Per-slot bounds ``lo``/``hi`` on the counts
    of the clusters, with ``perms`` the arrangements of the slots on the centres to try
    (``perms[t][h]``: the slot of centre h; the identity for bounds); or, with ``perms``
    None, the distinct exact sizes ``values`` taken ``mult`` times each, chosen per centre
    by the MILP's y columns. ``multiset``: the exact sizes, sorted (None for bounds)."""

    def __init__(self, counts, k, lo, hi, perms=None, multiset=None):
        self.counts, self.k = counts, k
        self.lo, self.hi = lo, hi
        self.perms, self.multiset = perms, multiset
        self.values = self.mult = None
        if perms is None:
            self.values, self.mult = np.unique(multiset, return_counts=True)

    @classmethod
    def make(cls, s: int, k: int, counts, size_bounds, sizes,
             max_perms: int) -> _Sizes | None:
        if size_bounds is None and sizes is None:
            return None
        if size_bounds is not None and sizes is not None:
            raise InputError("give size_bounds or sizes, not both", source="sizes")
        counts = np.ones(s, dtype=np.int64) if counts is None else \
            np.asarray(counts, dtype=np.int64).reshape(-1)
        if counts.shape != (s,) or np.any(counts < 1):
            raise InputError(f"counts must be {s} integers >= 1", source="counts")
        ident = [np.arange(k)]
        if sizes is not None:
            v = np.asarray(sorted(int(x) for x in sizes), dtype=np.int64)
            if len(v) != k or v[0] < 1:
                raise InputError(f"sizes must be k = {k} integers >= 1, got {list(v)}",
                                 source="sizes")
            if v[0] == v[-1]:  # a balanced clustering: bounds lo = hi
                return cls(counts, k, v, v, ident)
            _, mult = np.unique(v, return_counts=True)
            n_perms = math.factorial(k) // math.prod(math.factorial(int(m)) for m in mult)
            perms = _slot_arrangements(v) if n_perms <= max_perms else None
            return cls(counts, k, v, v, perms, v)
        lo, hi = size_bounds
        lo = 1 if lo is None else max(1, int(lo))
        hi = int(counts.sum()) if hi is None else int(hi)
        return cls(counts, k, np.full(k, lo), np.full(k, hi), ident)

    @property
    def flow_ok(self) -> bool:
        """True when each sized assignment is a min-cost flow (fixed slots, single points)."""
        return self.perms is not None and bool(np.all(self.counts == 1))

    @property
    def extra_columns(self) -> int:
        """The y columns after x (0 without the size choice)."""
        return 0 if self.values is None else self.k * len(self.values)

    def ok(self, labels: np.ndarray) -> bool:
        """True when the clusters of ``labels`` meet the sizes."""
        c = np.bincount(labels, weights=self.counts, minlength=self.k).astype(np.int64)
        if self.multiset is not None:
            return bool(np.array_equal(np.sort(c), self.multiset))
        return bool(np.all((c >= self.lo) & (c <= self.hi)))

    def choice_start(self, labels: np.ndarray) -> np.ndarray:
        """The y columns that go with a labelling meeting the sizes."""
        c = np.bincount(labels, weights=self.counts, minlength=self.k).astype(np.int64)
        y = np.zeros((self.k, len(self.values)))
        y[np.arange(self.k), np.searchsorted(self.values, c)] = 1.0
        return y.ravel()

    def milp(self, cl: np.ndarray) -> Milp:
        """The sized assignment MILP with zero costs: column ``i * k + h`` is x_ih, then
        ``s k + h m + j`` is y_hj; rows: s 'one cluster each', k size rows, with the
        choice k 'one size per centre' and m 'each size mult_j times', then q k CL rows."""
        counts, k = self.counts, self.k
        s, q = len(counts), len(cl)
        m = 0 if self.values is None else len(self.values)
        nx_ = s * k
        col = np.arange(nx_)
        i_of, h_of = np.divmod(col, k)
        r, c, v = [i_of, s + h_of], [col, col], [np.ones(nx_), counts[i_of].astype(float)]
        lo = [np.ones(s)]
        hi = [np.ones(s)]
        row = s + k
        if m:
            ycol = nx_ + np.arange(k * m)
            h_y, j_y = np.divmod(ycol - nx_, m)
            r += [s + h_y, row + h_y, row + k + j_y]
            c += [ycol, ycol, ycol]
            v += [-self.values[j_y].astype(float), np.ones(k * m), np.ones(k * m)]
            lo += [np.zeros(k), np.ones(k), self.mult.astype(float)]
            hi += [np.zeros(k), np.ones(k), self.mult.astype(float)]
            row += k + m
        else:
            lo.append(self.lo.astype(float))
            hi.append(self.hi.astype(float))
        if q:
            t = np.repeat(np.arange(q), k)
            h = np.tile(np.arange(k), q)
            for side in (0, 1):
                r.append(row + t * k + h)
                c.append(cl[t, side] * k + h)
                v.append(np.ones(q * k))
            lo.append(np.full(q * k, -np.inf))
            hi.append(np.ones(q * k))
        n_cols = nx_ + k * m
        A = csc_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))),
                       shape=(row + q * k, n_cols))
        A.sum_duplicates()
        A.sort_indices()
        return Milp(c=np.zeros(n_cols), A=A, row_lo=np.concatenate(lo),
                    row_hi=np.concatenate(hi), col_lo=np.zeros(n_cols),
                    col_hi=np.ones(n_cols), integrality=np.ones(n_cols, dtype=bool),
                    name="sized assignment")


def _slot_arrangements(slots: np.ndarray) -> list[np.ndarray]:
    """Every distinct arrangement of the sorted sizes ``slots`` on k centres, as the slot of
    each centre (centres of equal size take that size's slots in increasing order)."""
    values, mult = np.unique(slots, return_counts=True)
    first = np.concatenate([[0], np.cumsum(mult)[:-1]])
    k = len(slots)
    out: list[np.ndarray] = []
    left = mult.copy()
    cur: list[int] = []

    def rec() -> None:
        if len(cur) == k:
            used = first.copy()
            P = np.empty(k, dtype=np.int64)
            for h, j in enumerate(cur):
                P[h] = used[j]
                used[j] += 1
            out.append(P)
            return
        for j in range(len(values)):
            if left[j]:
                left[j] -= 1
                cur.append(j)
                rec()
                cur.pop()
                left[j] += 1

    rec()
    return out


def _flow_assign(model, costs: np.ndarray, time_limit: Deadline
                 ) -> tuple[np.ndarray | None, str]:
    """One sized assignment of single points without CL pairs by the kept transportation LP
    (a min-cost flow; totally unimodular, so the simplex's vertex is 0/1): labels and
    'optimal', (None, 'infeasible' | 'time_limit'), or (None, 'failed') when the answer is
    fractional (not seen; the caller then asks the MILP)."""
    s, k = costs.shape
    model.set_costs(costs.ravel())
    res = model.solve(time_limit=time_limit)
    if res.status == "infeasible":
        return None, "infeasible"
    if res.x is None:
        return None, "time_limit" if res.status == "time_limit" else "failed"
    if np.any(np.abs(res.x - np.round(res.x)) > 1e-6):  # pragma: no cover - not a vertex
        return None, "failed"
    return _labels_from_values(res.x, s, k), "optimal"


def _match_assign(costs: np.ndarray) -> np.ndarray:
    """Exact transportation solution: nearest centres plus k representatives (module doc)."""
    labels = np.argmin(costs, axis=1)
    if len(np.unique(labels)) == costs.shape[1]:
        return labels  # already k non-empty clusters: the unconstrained optimum is feasible
    regret = costs - costs[np.arange(len(costs)), labels][:, None]
    rows, cols = linear_sum_assignment(regret.T)  # cluster h -> its representative point
    labels = labels.copy()
    labels[cols] = rows
    return labels


class _Decomposition:
    """The cannot-link graph split for :meth:`AssignmentEngine.solve` (module doc): its tree
    components, ordered for the dynamic programme, and the super-points of the components
    that have cycles, with their pairs re-indexed."""

    def __init__(self, s: int, k: int, cl: np.ndarray):
        self.k = k
        cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
        A = coo_matrix((np.ones(len(cl)), (cl[:, 0], cl[:, 1])), shape=(s, s)).tocsr()
        A = (A + A.T).tocsr()
        ncomp, comp = connected_components(A, directed=False)
        size = np.bincount(comp, minlength=ncomp)
        edges = np.bincount(comp[cl[:, 0]], minlength=ncomp)
        is_tree = (size > 1) & (edges == size - 1)
        cyclic = edges > size - 1
        self.cyc_nodes = np.flatnonzero(cyclic[comp])
        pos = np.full(s, -1)
        pos[self.cyc_nodes] = np.arange(len(self.cyc_nodes))
        keep = cyclic[comp[cl[:, 0]]]
        self.cyc_cl = pos[cl[keep]]
        # every tree rooted at its first node; nodes listed by depth, parents first
        roots = np.full(ncomp, -1)
        tree_nodes = np.flatnonzero(is_tree[comp])
        first = np.unique(comp[tree_nodes], return_index=True)[1]
        roots[comp[tree_nodes[first]]] = tree_nodes[first]
        dep = np.full(s, -1)
        par = np.full(s, -1)
        for r in roots[roots >= 0]:
            nodes, pred = breadth_first_order(A, int(r), directed=False)
            par[nodes] = pred[nodes]
            par[r] = -1
            dep[r] = 0
            for v in nodes[1:]:
                dep[v] = dep[par[v]] + 1
        nodes = tree_nodes[np.argsort(dep[tree_nodes], kind="stable")]
        self.parent = par
        d = dep[nodes]
        self.levels = [nodes[d == t] for t in range(int(d.max()) + 1)] if len(nodes) else []

    def solve_trees(self, costs: np.ndarray, labels: np.ndarray) -> None:
        """Optimal labels of the tree components, written into ``labels`` (in place).

        f_v(h) = cost_vh + sum over children c of min_{g != h} f_c(g); the message of a child
        is its smallest f except at its argmin, where it is its second smallest (k >= 2).
        """
        if not self.levels:
            return
        f = costs.copy()  # rows of tree nodes accumulate their children's messages
        best = []
        for level in reversed(self.levels[1:]):
            fl = f[level]
            a1 = np.argmin(fl, axis=1)
            rows = np.arange(len(level))
            m1 = fl[rows, a1]
            fl2 = fl.copy()
            fl2[rows, a1] = np.inf
            a2 = np.argmin(fl2, axis=1)
            m2 = fl2[rows, a2]
            par = self.parent[level]
            np.add.at(f, par, np.repeat(m1[:, None], self.k, axis=1))
            np.add.at(f, (par, a1), m2 - m1)
            best.append((a1, a2))
        roots = self.levels[0]
        labels[roots] = np.argmin(f[roots], axis=1)
        for level, (a1, a2) in zip(self.levels[1:], reversed(best)):
            lp = labels[self.parent[level]]
            labels[level] = np.where(a1 != lp, a1, a2)


def _assignment_milp(s: int, k: int, cl: np.ndarray, cover: bool = True) -> Milp:
    """The assignment MILP with zero costs: s equality rows, k cover rows, q*k CL rows.

    Column ``i * k + h`` is x_ih. Without ``cover`` the cover rows are free (bounds 0..inf).
    """
    q = len(cl)
    cols_i = np.repeat(np.arange(s), k)
    cols_h = np.tile(np.arange(k), s)
    col = np.arange(s * k)
    r = [cols_i, s + cols_h]
    c = [col, col]
    for side in (0, 1):
        # row s + k + t*k + h holds x_{cl[t, side], h}
        t = np.repeat(np.arange(q), k)
        h = np.tile(np.arange(k), q)
        r.append(s + k + t * k + h)
        c.append(cl[t, side] * k + h)
    rows = np.concatenate(r)
    cols = np.concatenate(c)
    A = csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(s + k + q * k, s * k))
    lo = np.concatenate([np.ones(s), np.full(k, 1.0 if cover else 0.0),
                         np.full(q * k, -np.inf)])
    hi = np.concatenate([np.ones(s), np.full(k, np.inf), np.ones(q * k)])
    return Milp(c=np.zeros(s * k), A=A, row_lo=lo, row_hi=hi, col_lo=np.zeros(s * k),
                col_hi=np.ones(s * k), integrality=np.ones(s * k, dtype=bool),
                name="assignment")


def _solve_model(model, costs: np.ndarray, warm: np.ndarray | None,
                 time_limit: Deadline, sized: _Sizes | None = None
                 ) -> tuple[np.ndarray | None, str]:
    """Labels and status of one solve of a kept assignment model (an adapter's model);
    labels None with 'infeasible' or, for every other end without a solution, 'time_limit'.
    ``sized``: the model is ``sized.milp``, whose size-choice columns follow x."""
    s, k = costs.shape
    extra = 0 if sized is None else sized.extra_columns
    model.set_costs(np.concatenate([costs.ravel(), np.zeros(extra)]) if extra
                    else costs.ravel())
    start = None
    if warm is not None:
        start = np.zeros((s, k))
        start[np.arange(s), warm] = 1.0
        start = start.ravel()
        if extra:
            start = np.concatenate([start, sized.choice_start(warm)])
    res = model.solve(time_limit=time_limit, start=start)
    if res.status == "infeasible":
        return None, "infeasible"
    labels = None if res.x is None else _labels_from_values(res.x[: s * k], s, k)
    if labels is None:
        return None, "time_limit"
    return labels, res.status


def _labels_from_values(x: np.ndarray, s: int, k: int) -> np.ndarray | None:
    X = np.asarray(x, dtype=np.float64).reshape(s, k)
    labels = np.argmax(X, axis=1)
    if np.any(X[np.arange(s), labels] < 0.5):
        return None
    return labels
