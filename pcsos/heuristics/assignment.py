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
* With cannot-link pairs it is a MILP (NP-hard). The model is built once per engine; between
  calls only the objective costs change and the previous assignment is passed as a warm
  start. Backends: ``'highs'`` (default; :mod:`highspy`, falling back to
  :func:`scipy.optimize.milp` — the same HiGHS solver, model rebuilt per call — when highspy
  is not installed) and ``'gurobi'`` (:mod:`gurobipy`; the engine opens one Gurobi
  environment on its first MILP solve and disposes it in :meth:`AssignmentEngine.close`, on
  leaving its ``with`` block, or when it is garbage collected).

Infeasibility (no k-colouring of the cannot-link graph, or fewer super-points than clusters)
is reported as ``status='infeasible'``, a time limit without any assignment as
``status='time_limit'``; neither raises.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csc_matrix

from pcsos.errors import BackendUnavailableError, InputError
from pcsos.problem import group_sums

__all__ = ["Assignment", "AssignmentEngine", "squared_costs", "centres_of", "group_sums",
           "BACKENDS"]

#: names accepted by ``AssignmentEngine(backend=...)``
BACKENDS = ("highs", "gurobi")


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
    """

    def __init__(self, points: np.ndarray, weights: np.ndarray, cl: np.ndarray, k: int, *,
                 backend: str = "highs", threads: int = 1, mip_rel_gap: float = 1e-6):
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
        self._closed = False
        self._milp = None
        if len(self.cl) and self.s >= self.k:
            if backend == "gurobi":
                self._milp = _GurobiModel(self.s, self.k, self.cl, threads, mip_rel_gap)
            else:
                try:
                    self._milp = _HighsModel(self.s, self.k, self.cl, threads, mip_rel_gap)
                except ImportError:
                    self._milp = _ScipyMilpModel(self.s, self.k, self.cl, mip_rel_gap)

    def close(self) -> None:
        """Release the solver's resources (Gurobi: the model and its Env); idempotent.

        Further :meth:`solve` calls raise :class:`~pcsos.errors.InputError`. The engine is
        also a context manager, and Gurobi's resources are released when it is garbage
        collected, so callers that simply drop it leak nothing either.
        """
        self._closed = True
        close = getattr(self._milp, "close", None)
        if close is not None:
            close()

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
        return "matching" if self._milp is None else self._milp.name

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
        if self._milp is None:
            labels = _match_assign(costs)
            status = "optimal"
        else:
            if time_limit is not None and time_limit <= 0:
                return Assignment(None, float("inf"), "time_limit",
                                  time.perf_counter() - t0, self.method)
            if warm is not None and not self._is_feasible(warm):
                warm = None
            labels, status = self._milp.solve(costs, warm, time_limit)
            if labels is not None and not self._is_feasible(labels):
                # a solver answer that breaks the model (tolerance trouble) is not returned,
                # and proves nothing about feasibility
                labels, status = None, "failed"
        cost = float(costs[np.arange(self.s), labels].sum()) if labels is not None \
            else float("inf")
        return Assignment(labels, cost, status, time.perf_counter() - t0, self.method)

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


def _model_matrix(s: int, k: int, cl: np.ndarray):
    """The assignment MILP's rows in CSC form: s equalities, k cover rows, q*k CL rows.

    Column ``i * k + h`` is x_ih.
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
    lo = np.concatenate([np.ones(s), np.ones(k), np.full(q * k, -np.inf)])
    hi = np.concatenate([np.ones(s), np.full(k, np.inf), np.ones(q * k)])
    return A, lo, hi


def _labels_from_values(x: np.ndarray, s: int, k: int) -> np.ndarray | None:
    X = np.asarray(x, dtype=np.float64).reshape(s, k)
    labels = np.argmax(X, axis=1)
    if np.any(X[np.arange(s), labels] < 0.5):
        return None
    return labels


def _integral_labels(x, s: int, k: int, tol: float = 1e-6) -> np.ndarray | None:
    """Labels when the LP solution is 0/1 within ``tol`` everywhere, else None."""
    X = np.asarray(x, dtype=np.float64).reshape(s, k)
    if np.all((np.abs(X) <= tol) | (np.abs(X - 1.0) <= tol)):
        return _labels_from_values(X, s, k)
    return None


def _quiet_highs(highspy):
    """A HiGHS instance that prints nothing. highspy's ``Highs()`` registers its Python
    callbacks in the constructor, before any option can be set, and HiGHS writes its banner
    to stdout on that first call (HiGHS issues #1702, #2749); the core class makes no such
    call, and this model needs no callbacks."""
    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


class _HighsModel:
    """The assignment MILP in :mod:`highspy`: built once, costs and warm start per call."""

    name = "highs"

    def __init__(self, s, k, cl, threads, mip_rel_gap):
        import highspy

        self._hs = highspy
        self.s, self.k = s, k
        A, lo, hi = _model_matrix(s, k, cl)
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_ = s * k
        lp.num_row_ = A.shape[0]
        lp.col_cost_ = np.zeros(s * k)
        lp.col_lower_ = np.zeros(s * k)
        lp.col_upper_ = np.ones(s * k)
        lp.row_lower_ = np.where(np.isinf(lo), -inf, lo)
        lp.row_upper_ = np.where(np.isinf(hi), inf, hi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data
        lp.integrality_ = [highspy.HighsVarType.kInteger] * (s * k)
        h = _quiet_highs(highspy)
        h.setOptionValue("threads", int(threads))
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
        h.passModel(lp)
        self.h = h
        self.lp_hits = 0   # calls answered by an integral LP optimum
        self.mip_runs = 0  # calls that needed the MIP search
        self._idx = np.arange(s * k, dtype=np.int32)

    def solve(self, costs, warm, time_limit):
        h, hs = self.h, self._hs
        M = hs.HighsModelStatus
        h.changeColsCost(len(self._idx), self._idx, costs.ravel())
        h.setOptionValue("time_limit", float(time_limit) if time_limit is not None
                         else float("inf"))
        # The LP relaxation is integral on most instances (CL graphs are sparse forests with
        # few cycles); an integral LP optimum is a MILP optimum, found by a simplex warm
        # started from the previous call's basis (only the costs changed), many times
        # faster than the MIP solver's presolve and search.
        h.setOptionValue("solve_relaxation", True)
        h.run()
        st = h.getModelStatus()
        if st == M.kInfeasible:
            return None, "infeasible"
        if st == M.kOptimal:
            labels = _integral_labels(h.getSolution().col_value, self.s, self.k)
            if labels is not None:
                self.lp_hits += 1
                return labels, "optimal"
        self.mip_runs += 1
        h.setOptionValue("solve_relaxation", False)
        basis = h.getBasis()
        h.clearSolver()  # the MIP search starts afresh; the LP basis is restored after it
        if warm is not None:
            x = np.zeros((self.s, self.k))
            x[np.arange(self.s), warm] = 1.0
            sol = hs.HighsSolution()
            sol.col_value = x.ravel().tolist()
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        st = h.getModelStatus()
        labels = None
        info = h.getInfo()
        if info.primal_solution_status == 2:  # kSolutionStatusFeasible
            labels = _labels_from_values(h.getSolution().col_value, self.s, self.k)
        h.clearSolver()
        h.setBasis(basis)
        if st == M.kInfeasible:
            return None, "infeasible"
        if labels is None:
            return None, "time_limit"
        return labels, "optimal" if st == M.kOptimal else "feasible"


class _ScipyMilpModel:
    """Fallback when highspy is absent: :func:`scipy.optimize.milp` (HiGHS, rebuilt per call)."""

    name = "scipy-milp"

    def __init__(self, s, k, cl, mip_rel_gap):
        from scipy.optimize import Bounds, LinearConstraint

        self.s, self.k = s, k
        A, lo, hi = _model_matrix(s, k, cl)
        self.cons = LinearConstraint(A.tocsr(), lo, hi)
        self.bounds = Bounds(0, 1)
        self.gap = mip_rel_gap

    def solve(self, costs, warm, time_limit):
        from scipy.optimize import milp

        opts = {"mip_rel_gap": self.gap}
        if time_limit is not None:
            opts["time_limit"] = float(time_limit)
        res = milp(costs.ravel(), constraints=self.cons, integrality=np.ones(self.s * self.k),
                   bounds=self.bounds, options=opts)
        if res.status == 2:
            return None, "infeasible"
        if res.x is None:
            return None, "time_limit"
        labels = _labels_from_values(res.x, self.s, self.k)
        if labels is None:
            return None, "time_limit"
        return labels, "optimal" if res.status == 0 else "feasible"


class _GurobiModel:
    """The assignment MILP in :mod:`gurobipy`: built once, ``Obj`` and ``Start`` per call.

    The model owns at most one ``gurobipy.Env`` for its whole life, started on the first
    solve (a started environment checks out a licence token and spawns Gurobi's threads, so
    one per call leaks both and costs a licence check each time). :meth:`close` disposes the
    model and then the environment; a :func:`weakref.finalize` does the same when the model
    is garbage collected without being closed (heuristics drop their engine on return).
    """

    name = "gurobi"

    def __init__(self, s, k, cl, threads, mip_rel_gap):
        try:
            import gurobipy as gp
        except ImportError:
            raise BackendUnavailableError(
                "backend 'gurobi' needs gurobipy (pip install 'pcsos[gurobi]')") from None
        self.gp = gp
        self.s, self.k = s, k
        self._cl, self._threads, self._gap = cl, int(threads), float(mip_rel_gap)
        # Env and model live in a holder that the finalizer reaches without a reference to
        # self (a reference to self would keep it alive forever).
        self._res = {"env": None, "model": None}
        self._finalizer = weakref.finalize(self, _dispose_gurobi, self._res)
        self._error = None  # a refused start, re-raised without opening another Env
        self.x = None

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def env(self):
        """The Env, or None before the first solve and after :meth:`close`."""
        return self._res["env"]

    @property
    def m(self):
        """The Gurobi model, or None before the first solve and after :meth:`close`."""
        return self._res["model"]

    def close(self) -> None:
        """Dispose the model and the environment (idempotent)."""
        self._finalizer()
        self.x = None

    def _build(self):
        if self.closed:
            raise InputError("solve called on a closed assignment engine")
        if self._error is not None:
            raise BackendUnavailableError(self._error)
        if self._res["model"] is not None:
            return self._res["model"]
        gp = self.gp
        s, k = self.s, self.k
        try:
            env = self._res["env"] = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
            m = self._res["model"] = gp.Model(env=env)
            m.Params.Threads = self._threads
            m.Params.MIPGap = self._gap
            A, lo, hi = _model_matrix(s, k, self._cl)
            x = m.addMVar(s * k, vtype=gp.GRB.BINARY)
            A = A.tocsr()
            m.addConstr(A[:s] @ x == 1)
            m.addConstr(A[s:s + k] @ x >= 1)
            m.addConstr(A[s + k:] @ x <= 1)
        except gp.GurobiError as exc:
            # no licence (10009) or another refusal: free what was created now and remember
            # why, so that later calls fail fast and never open a second Env
            _dispose_gurobi(self._res)
            self._error = f"Gurobi is not usable: {exc}"
            raise BackendUnavailableError(self._error) from None
        except BaseException:
            # an interrupt or a bug mid-build: free the half-built model and Env all the same
            _dispose_gurobi(self._res)
            raise
        self.x = x
        return m

    def solve(self, costs, warm, time_limit):
        gp = self.gp
        m = self._build()
        x = self.x
        m.reset()
        x.Obj = costs.ravel()
        m.Params.TimeLimit = float(time_limit) if time_limit is not None else gp.GRB.INFINITY
        if warm is not None:
            start = np.zeros((self.s, self.k))
            start[np.arange(self.s), warm] = 1.0
            x.Start = start.ravel()
        try:
            m.optimize()
        except gp.GurobiError as exc:  # e.g. the size-limited licence refuses the model
            raise BackendUnavailableError(f"Gurobi cannot solve the assignment: {exc}") \
                from None
        if m.Status in (gp.GRB.INFEASIBLE, gp.GRB.INF_OR_UNBD):
            return None, "infeasible"
        if m.SolCount == 0:
            return None, "time_limit"
        labels = _labels_from_values(x.X, self.s, self.k)
        if labels is None:
            return None, "time_limit"
        return labels, "optimal" if m.Status == gp.GRB.OPTIMAL else "feasible"


def _dispose_gurobi(res: dict) -> None:
    """Dispose the model before its environment (a model must not outlive its Env)."""
    for key in ("model", "env"):
        obj, res[key] = res[key], None
        if obj is not None:
            obj.dispose()
