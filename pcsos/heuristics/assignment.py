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
  start. Backends: ``'highs'`` (default; :mod:`highspy`, falling back to
  :func:`scipy.optimize.milp` — the same HiGHS solver, model rebuilt per call — when highspy
  is not installed) and ``'gurobi'`` (:mod:`gurobipy`; each model opens one Gurobi
  environment on its first solve, disposed in :meth:`AssignmentEngine.close`, on leaving
  its ``with`` block, or when it is garbage collected).

Infeasibility (no k-colouring of the cannot-link graph, or fewer super-points than clusters)
is reported as ``status='infeasible'``, a time limit without any assignment as
``status='time_limit'``; neither raises.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix, csc_matrix
from scipy.sparse.csgraph import connected_components

from pcsos.errors import BackendUnavailableError, InputError
from pcsos.milp import BACKENDS, GUROBIPY_MISSING, Milp, adapter
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
    """

    def __init__(self, points: np.ndarray, weights: np.ndarray, cl: np.ndarray, k: int, *,
                 backend: str = "highs", threads: int = 1, mip_rel_gap: float = 1e-6,
                 decompose: bool = True, call_time_limit: float | None = None,
                 full_milp_columns: int = 20_000):
        self.points = np.asarray(points, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
        self.k = int(k)
        self.s = len(self.weights)
        if backend not in BACKENDS:
            raise InputError(f"unknown assignment backend {backend!r}; choose one of "
                             f"{', '.join(BACKENDS)}", source="backend")
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
        self._has_milp = bool(len(self.cl)) and self.s >= self.k
        self._solver = adapter(backend)
        if self._has_milp and not self._solver.installed():
            # the model is built on first use; a missing package is said at once
            raise BackendUnavailableError(GUROBIPY_MISSING)
        # the name is fixed here, not per call: solve() reports it in every Assignment
        self._method = self._solver.model_name() if self._has_milp else "matching"
        self._decompose = self._has_milp and decompose
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
            if which == "full":
                s, cl, cover = self.s, self.cl, True
            else:
                s, cl, cover = len(self._parts.cyc_nodes), self._parts.cyc_cl, False
            threads, gap = self._opts
            m = self._solver.model(_assignment_milp(s, self.k, cl, cover), threads=threads,
                                   mip_rel_gap=gap)
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
    def from_problem(cls, problem, *, k: int | None = None, **kwargs) -> AssignmentEngine:
        """An engine on a :class:`pcsos.problem.Problem`'s super-points and CL pairs."""
        return cls(problem.centroids, problem.e, problem.cl,
                   problem.k if k is None else k, **kwargs)

    @property
    def method(self) -> str:
        """Which algorithm :meth:`solve` uses: ``'matching'`` or the MILP backend's name."""
        return self._method

    def costs(self, centres: np.ndarray) -> np.ndarray:
        """The squared-distance cost matrix for the given (k, d) centres."""
        centres = np.asarray(centres, dtype=np.float64)
        if centres.shape != (self.k, self.points.shape[1]):
            raise InputError(f"centres must have shape {(self.k, self.points.shape[1])}, "
                             f"got {centres.shape}", source="centres")
        return squared_costs(self.points, self.weights, centres)

    def solve(self, centres: np.ndarray | None = None, *, costs: np.ndarray | None = None,
              warm: np.ndarray | None = None, time_limit: float | None = None) -> Assignment:
        """Optimal assignment for ``centres`` (or an explicit (s, k) ``costs`` matrix).

        ``warm`` is a feasible labelling passed to the MILP as a starting incumbent (ignored
        when infeasible for the current model); ``time_limit`` caps the solver's seconds.
        """
        if self._closed:
            raise InputError("solve called on a closed assignment engine")
        t0 = time.perf_counter()
        self.calls += 1
        if costs is None:
            if centres is None:
                raise InputError("solve needs centres or costs")
            costs = self.costs(centres)
        costs = np.asarray(costs, dtype=np.float64)
        if costs.shape != (self.s, self.k) or not np.all(np.isfinite(costs)):
            raise InputError(f"costs must be a finite ({self.s}, {self.k}) matrix")
        if self.s < self.k:
            return Assignment(None, float("inf"), "infeasible", time.perf_counter() - t0,
                              self.method)
        if not self._has_milp:
            labels = _match_assign(costs)
            status = "optimal"
        else:
            if time_limit is not None and time_limit <= 0:
                return Assignment(None, float("inf"), "time_limit",
                                  time.perf_counter() - t0, self.method)
            if warm is not None and not self._is_feasible(warm):
                warm = None
            labels, status = None, ""
            if self.call_time_limit is not None:
                time_limit = self.call_time_limit if time_limit is None \
                    else min(time_limit, self.call_time_limit)
            if self._decompose:
                labels, status = self._solve_parts(costs, warm, time_limit, t0)
            if labels is None and status not in ("infeasible", "time_limit"):
                left = None if time_limit is None else \
                    time_limit - (time.perf_counter() - t0)
                labels, status = _solve_model(self._milp, costs, warm, left) \
                    if left is None or left > 0 else (None, "time_limit")
            if labels is None and status == "time_limit" and warm is not None:
                # the solver stopped with nothing better than the start it was given
                labels, status = np.array(warm, dtype=np.int64), "feasible"
            if labels is not None and not self._is_feasible(labels):
                # a solver answer that breaks the model (tolerance trouble) is not returned,
                # and proves nothing about feasibility
                labels, status = None, "failed"
        cost = float(costs[np.arange(self.s), labels].sum()) if labels is not None \
            else float("inf")
        return Assignment(labels, cost, status, time.perf_counter() - t0, self.method)

    def _solve_parts(self, costs, warm, time_limit, t0):
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
                left = None if time_limit is None else \
                    time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    return None, "time_limit"
                lab, status = _solve_model(
                    self._model("cycles"), costs[sub], None if warm is None else warm[sub],
                    left)
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
        return bool(len(self.cl) == 0
                    or np.all(labels[self.cl[:, 0]] != labels[self.cl[:, 1]]))


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
        from scipy.sparse.csgraph import breadth_first_order

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
                 time_limit: float | None) -> tuple[np.ndarray | None, str]:
    """Labels and status of one solve of a kept assignment model (an adapter's model);
    labels None with 'infeasible' or, for every other end without a solution, 'time_limit'."""
    s, k = costs.shape
    model.set_costs(costs.ravel())
    start = None
    if warm is not None:
        start = np.zeros((s, k))
        start[np.arange(s), warm] = 1.0
        start = start.ravel()
    res = model.solve(time_limit=time_limit, start=start)
    if res.status == "infeasible":
        return None, "infeasible"
    labels = None if res.x is None else _labels_from_values(res.x, s, k)
    if labels is None:
        return None, "time_limit"
    return labels, res.status


def _labels_from_values(x: np.ndarray, s: int, k: int) -> np.ndarray | None:
    X = np.asarray(x, dtype=np.float64).reshape(s, k)
    labels = np.argmax(X, axis=1)
    if np.any(X[np.arange(s), labels] < 0.5):
        return None
    return labels
