"""One problem representation for the MILPs of pcsos, and one adapter per solver backend.

A :class:`Milp` is ``min c @ x`` subject to ``row_lo <= A @ x <= row_hi``,
``col_lo <= x <= col_hi`` and ``x_j`` integral where ``integrality[j]``. The adapters,
chosen by name (:func:`adapter`, :data:`ADAPTERS`), pass it to one backend with its rows
and columns in the same order (HiGHS being deterministic, the same model and options give
the same answer; Gurobi gets no free rows), and answer with a :class:`MilpResult` whose
status is one of :data:`STATUSES`. Each adapter offers

* ``solve(problem, time_limit=..., threads=..., mip_rel_gap=...)``: one solve of a model
  built for it and discarded after (the feasibility check's colouring ILP);
* ``model(problem, threads=..., mip_rel_gap=...)``: a model built once whose costs change
  between solves (:meth:`set_costs`), with an optional start per solve (the assignment
  engine's MILP, solved many times per heuristic run).

Backends: ``'highs'`` (HiGHS: one-shot solves through :func:`scipy.optimize.milp`, kept
models through :mod:`highspy`, a core dependency) and ``'gurobi'`` (:mod:`gurobipy`,
imported on first use; a missing module or a refusing licence raises
:class:`~pcsos.errors.BackendUnavailableError`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import highspy
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csc_matrix

from pcsos.clock import Deadline
from pcsos.errors import BackendUnavailableError, InputError

__all__ = ["Milp", "MilpResult", "STATUSES", "ADAPTERS", "BACKENDS", "adapter",
           "HighsAdapter", "GurobiAdapter"]

#: ``'optimal'``; ``'feasible'`` (a solution, not proved optimal: stopped at a limit);
#: ``'infeasible'``; ``'time_limit'`` (stopped without a solution); ``'error'`` (any other
#: end without a solution, described by ``message``)
STATUSES = ("optimal", "feasible", "infeasible", "time_limit", "error")

#: a solution value this close to an integer counts as integral (the LP-first test)
_INTEGRALITY_TOL = 1e-6

GUROBIPY_MISSING = ("backend 'gurobi' needs gurobipy (pip install 'pcsos[gurobi]'); the default "
                    "backend 'highs' needs nothing extra")


@dataclass
class Milp:
    """``min c @ x`` s.t. ``row_lo <= A @ x <= row_hi``, ``col_lo <= x <= col_hi``, and
    ``x[integrality]`` integral.

    ``A`` is a canonical CSC matrix (sorted indices, no duplicates); infinite row or column
    bounds are ``±np.inf``. ``name`` says what the model is in error messages.
    """

    c: np.ndarray
    A: csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integrality: np.ndarray
    name: str = "MILP"

    @property
    def num_cols(self) -> int:
        """Number of variables."""
        return self.A.shape[1]

    @property
    def num_rows(self) -> int:
        """Number of constraint rows."""
        return self.A.shape[0]


@dataclass
class MilpResult:
    """A solver's answer: ``status`` (one of :data:`STATUSES`), the solution ``x`` (None
    unless ``'optimal'`` or ``'feasible'``), its ``objective`` (nan without one) and a
    ``message`` (the reason for ``'error'``; else empty)."""

    status: str
    x: np.ndarray | None = None
    objective: float = float("nan")
    message: str = ""


def _integral(x: np.ndarray, integrality: np.ndarray | None) -> bool:
    """Whether the integer columns (all when ``integrality`` is None) are integral."""
    xi = x if integrality is None else x[integrality]
    return bool(np.all(np.abs(xi - np.round(xi)) <= _INTEGRALITY_TOL))


# --------------------------------------------------------------------------- HiGHS
def _quiet_highs(highspy):
    """A HiGHS instance that prints nothing. highspy's ``Highs()`` registers its Python
    callbacks in the constructor, before any option can be set, and HiGHS writes its banner
    to stdout on that first call (HiGHS issues #1702, #2749); the core class makes no such
    call, and these models need no callbacks."""
    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def _seconds(time_limit: float | Deadline | None) -> float | None:
    """A limit as an outside solver takes it: seconds left, or None for none."""
    return Deadline.of(time_limit).seconds()


def _scipy_solve(problem: Milp, c: np.ndarray, constraint, time_limit: float | Deadline | None,
                 mip_rel_gap: float | None) -> MilpResult:
    opts: dict = {}
    if mip_rel_gap is not None:
        opts["mip_rel_gap"] = float(mip_rel_gap)
    seconds = _seconds(time_limit)
    if seconds is not None:
        opts["time_limit"] = seconds
    res = milp(c, constraints=constraint, integrality=problem.integrality,
               bounds=Bounds(problem.col_lo, problem.col_hi), options=opts)
    # scipy: 0 optimal, 1 time or iteration limit, 2 infeasible, 3 unbounded, 4 other
    if res.status == 2:
        return MilpResult("infeasible")
    if res.x is not None:
        return MilpResult("optimal" if res.status == 0 else "feasible", res.x, float(res.fun))
    if res.status == 1:
        return MilpResult("time_limit")
    return MilpResult("error", message=f"HiGHS failed on the {problem.name}: {res.message}")


class HighsAdapter:
    """HiGHS. One-shot solves go through :func:`scipy.optimize.milp` (SciPy's own copy of
    HiGHS, always installed, and the one the feasibility check has always used, so its
    witnesses stay the same); kept models through :mod:`highspy`, whose model survives
    between solves."""

    name = "highs"

    def installed(self) -> bool:
        """True: SciPy's HiGHS is always there."""
        return True

    def require(self, what: str = "") -> HighsAdapter:
        """This adapter: HiGHS is a core dependency."""
        return self

    def solve(self, problem: Milp, *, time_limit: float | Deadline | None = None,
              threads: int | None = None, mip_rel_gap: float | None = None) -> MilpResult:
        """Solve ``problem`` once (SciPy's interface has no ``threads`` option: ignored)."""
        cons = LinearConstraint(problem.A, problem.row_lo, problem.row_hi)
        return _scipy_solve(problem, problem.c, cons, time_limit, mip_rel_gap)

    def model(self, problem: Milp, *, threads: int = 1,
              mip_rel_gap: float | None = None) -> HighsModel:
        """A kept model of ``problem`` in highspy."""
        return HighsModel(problem, threads, mip_rel_gap)


class HighsModel:
    """A :class:`Milp` in :mod:`highspy`, built once; costs and start change per solve.

    Each solve first solves the LP relaxation, by a simplex warm-started from the previous
    solve's basis, and returns it when it is integral: on the sparse cannot-link graphs of
    the assignment engine it almost always is, and that is many times faster than the MIP
    solver's presolve and search. Otherwise the MIP search runs and the LP basis is
    restored after it. ``lp_hits`` and ``mip_runs`` count the two outcomes.
    """

    name = "highs"

    def __init__(self, problem: Milp, threads: int = 1, mip_rel_gap: float | None = None):
        self._hs = highspy
        n = problem.num_cols
        A = problem.A
        lp = highspy.HighsLp()  # kHighsInf is np.inf: the bounds pass as they are
        lp.num_col_ = n
        lp.num_row_ = A.shape[0]
        lp.col_cost_ = np.asarray(problem.c, dtype=np.float64)
        lp.col_lower_ = np.asarray(problem.col_lo, dtype=np.float64)
        lp.col_upper_ = np.asarray(problem.col_hi, dtype=np.float64)
        lp.row_lower_ = np.asarray(problem.row_lo, dtype=np.float64)
        lp.row_upper_ = np.asarray(problem.row_hi, dtype=np.float64)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data
        integ = np.asarray(problem.integrality, dtype=bool)
        kint, kcont = highspy.HighsVarType.kInteger, highspy.HighsVarType.kContinuous
        lp.integrality_ = [kint] * n if integ.all() else \
            [kint if b else kcont for b in integ.tolist()]
        h = _quiet_highs(highspy)
        h.setOptionValue("threads", int(threads))
        # HiGHS's feasibility jump runs before the root LP and does not look at the clock:
        # on a 100 000-binary sized assignment it took 4.4 s of a 2.1 s limit. The callers
        # hand the search a feasible start whenever they hold one, which it would only seek
        h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
        if mip_rel_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
        h.passModel(lp)
        self.h = h
        self._integ = None if integ.all() else integ  # None: no mask copy per solve
        self._idx = np.arange(n, dtype=np.int32)
        self.lp_hits = 0   # solves answered by an integral LP optimum
        self.mip_runs = 0  # solves that needed the MIP search

    def set_costs(self, c: np.ndarray) -> None:
        """Replace the objective vector."""
        self.h.changeColsCost(len(self._idx), self._idx, c)

    def close(self) -> None:
        """Free the HiGHS instance (idempotent)."""
        self.h = None

    def solve(self, *, time_limit: float | Deadline | None = None,
              start: np.ndarray | None = None) -> MilpResult:
        """Solve (LP relaxation first, see the class doc); ``start`` is a feasible solution
        handed to the MIP search, and the LP's seconds count against ``time_limit``."""
        if self.h is None:
            raise InputError("solve called on a closed HiGHS model")
        deadline = Deadline.of(time_limit)
        h, hs = self.h, self._hs
        M = hs.HighsModelStatus
        h.setOptionValue("time_limit", deadline.remaining())
        h.setOptionValue("solve_relaxation", True)
        h.run()
        st = h.getModelStatus()
        if st == M.kInfeasible:
            return MilpResult("infeasible")
        if st == M.kOptimal:
            x = np.asarray(h.getSolution().col_value, dtype=np.float64)
            if _integral(x, self._integ):
                self.lp_hits += 1
                return MilpResult("optimal", x, h.getObjectiveValue())
        self.mip_runs += 1
        h.setOptionValue("solve_relaxation", False)
        if deadline.expired():
            return MilpResult("time_limit")
        h.setOptionValue("time_limit", deadline.remaining())
        basis = h.getBasis()
        h.clearSolver()  # the MIP search starts afresh; the LP basis is restored after it
        if start is not None:
            sol = hs.HighsSolution()
            sol.col_value = np.asarray(start, dtype=np.float64).tolist()
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        st = h.getModelStatus()
        x = obj = None
        if h.getInfo().primal_solution_status == 2:  # kSolutionStatusFeasible
            x = np.asarray(h.getSolution().col_value, dtype=np.float64)
            obj = h.getObjectiveValue()
        h.clearSolver()
        h.setBasis(basis)
        if st == M.kInfeasible:
            return MilpResult("infeasible")
        if x is not None:
            return MilpResult("optimal" if st == M.kOptimal else "feasible", x, obj)
        if st == M.kTimeLimit:
            return MilpResult("time_limit")
        return MilpResult("error", message=f"HiGHS ended with: {h.modelStatusToString(st)}")


# --------------------------------------------------------------------------- Gurobi
def _gurobipy(what: str = ""):
    """gurobipy, or :class:`BackendUnavailableError` naming ``what`` needed it."""
    try:
        import gurobipy
    except ImportError:
        raise BackendUnavailableError(f"{what} {GUROBIPY_MISSING}".lstrip()) from None
    return gurobipy


def _gurobi_build(gp, model, problem: Milp):
    """Add ``problem``'s variables and rows to a Gurobi model, in its order; the MVar.

    Equal bounds give '=' rows, one finite bound '<' or '>' rows; a ranged row is its '>'
    row in place plus a '<' row after all others; free rows are left out.
    """
    GRB = gp.GRB
    integ = np.asarray(problem.integrality, dtype=bool)
    lo, hi = problem.col_lo, problem.col_hi
    binary = integ & (lo >= 0) & (hi <= 1)
    vtype = np.where(binary, GRB.BINARY, np.where(integ, GRB.INTEGER, GRB.CONTINUOUS))
    if len(vtype) and np.all(vtype == vtype[0]):
        vtype = str(vtype[0])
    x = model.addMVar(problem.num_cols, vtype=vtype, lb=lo, ub=hi)
    if np.any(problem.c != 0):
        x.Obj = problem.c
    rl, rh = problem.row_lo, problem.row_hi
    fl, fh = np.isfinite(rl), np.isfinite(rh)
    eq = fl & fh & (rl == rh)
    ranged = fl & fh & ~eq
    keep = fl | fh
    sense = np.where(eq, "=", np.where(fl, ">", "<"))[keep]
    rhs = np.where(fl, rl, rh)[keep]
    A = problem.A.tocsr()
    if keep.all():
        model.addMConstr(A, x, sense, rhs)
    elif keep.any():
        model.addMConstr(A[np.flatnonzero(keep)], x, sense, rhs)
    if ranged.any():
        rows = np.flatnonzero(ranged)
        model.addMConstr(A[rows], x, "<", rh[rows])
    return x


def _gurobi_result(gp, model, x) -> MilpResult:
    GRB = gp.GRB
    if model.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
        return MilpResult("infeasible")
    if model.SolCount > 0:
        return MilpResult("optimal" if model.Status == GRB.OPTIMAL else "feasible",
                          np.asarray(x.X, dtype=np.float64), float(model.ObjVal))
    if model.Status == GRB.TIME_LIMIT:
        return MilpResult("time_limit")
    return MilpResult("error", message=f"Gurobi ended with status {model.Status}")


def _gurobi_params(model, gp, time_limit, threads, mip_rel_gap) -> None:
    if threads is not None:
        model.Params.Threads = int(threads)
    if mip_rel_gap is not None:
        model.Params.MIPGap = float(mip_rel_gap)
    seconds = _seconds(time_limit)
    model.Params.TimeLimit = seconds if seconds is not None else gp.GRB.INFINITY


class GurobiAdapter:
    """Gurobi through :mod:`gurobipy`, imported on first use. Without it every method but
    :meth:`installed` raises :class:`BackendUnavailableError` (:data:`GUROBIPY_MISSING`)."""

    name = "gurobi"

    def installed(self) -> bool:
        """Whether gurobipy imports (its licence is only checked by a solve)."""
        try:
            import gurobipy  # noqa: F401
        except ImportError:
            return False
        return True

    def require(self, what: str = "") -> GurobiAdapter:
        """This adapter, once gurobipy imports; else :class:`BackendUnavailableError`
        saying that ``what`` (e.g. 'feasibility') needs it."""
        _gurobipy(what)
        return self

    def solve(self, problem: Milp, *, time_limit: float | Deadline | None = None,
              threads: int | None = None, mip_rel_gap: float | None = None) -> MilpResult:
        """Solve ``problem`` once in its own Gurobi environment, disposed after.

        No licence (errno 10009) or a model too large for the size-limited one (10010)
        raises :class:`BackendUnavailableError`; other Gurobi errors propagate.
        """
        gp = _gurobipy()
        try:
            with gp.Env(empty=True) as env:
                env.setParam("OutputFlag", 0)
                env.start()
                with gp.Model(env=env) as model:
                    x = _gurobi_build(gp, model, problem)
                    _gurobi_params(model, gp, time_limit, threads, mip_rel_gap)
                    model.optimize()
                    return _gurobi_result(gp, model, x)
        except gp.GurobiError as exc:
            if getattr(exc, "errno", None) in (10009, 10010):
                raise BackendUnavailableError(
                    f"Gurobi cannot solve this {problem.name} ({problem.num_cols} variables): "
                    f"{exc}. Use the default backend 'highs' or install a full Gurobi licence"
                ) from None
            raise

    def model(self, problem: Milp, *, threads: int = 1,
              mip_rel_gap: float | None = None) -> GurobiModel:
        """A kept model of ``problem``; its environment starts on the first solve."""
        return GurobiModel(problem, threads, mip_rel_gap)


class GurobiModel:
    """A :class:`Milp` in :mod:`gurobipy`, built on the first solve; ``Obj`` and ``Start``
    change per solve.

    It owns at most one ``gurobipy.Env`` for its whole life, started on the first solve (a
    started environment checks out a licence token and spawns Gurobi's threads, so one per
    solve leaks both and costs a licence check each time). :meth:`close` disposes the model
    and then the environment; a :func:`weakref.finalize` does the same when the object is
    garbage collected unclosed (heuristics drop their engine on return). A refused start
    is remembered and raised again without opening another environment.
    """

    name = "gurobi"

    def __init__(self, problem: Milp, threads: int = 1, mip_rel_gap: float | None = None):
        self.gp = _gurobipy()
        self.problem = problem  # dropped once the Gurobi model holds it
        self.label = problem.name
        self._threads, self._gap = threads, mip_rel_gap
        self._c = problem.c
        # Env and model live in a holder that the finalizer reaches without a reference to
        # self (a reference to self would keep it alive forever).
        self._res = {"env": None, "model": None}
        self._finalizer = weakref.finalize(self, _dispose_gurobi, self._res)
        self._error = None
        self.x = None

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (or collection)."""
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

    def set_costs(self, c: np.ndarray) -> None:
        """Replace the objective vector (applied by the next solve)."""
        self._c = c

    def _build(self):
        if self.closed:
            raise InputError("solve called on a closed Gurobi model")
        if self._error is not None:
            raise BackendUnavailableError(self._error)
        if self._res["model"] is not None:
            return self._res["model"]
        gp = self.gp
        try:
            env = self._res["env"] = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
            m = self._res["model"] = gp.Model(env=env)
            m.Params.Threads = int(self._threads)
            if self._gap is not None:
                m.Params.MIPGap = float(self._gap)
            self.x = _gurobi_build(gp, m, self.problem)
        except gp.GurobiError as exc:
            # no licence (10009) or another refusal: free what was created now and remember
            # why, so that later solves fail fast and never open a second Env
            _dispose_gurobi(self._res)
            self._error = f"Gurobi is not usable: {exc}"
            raise BackendUnavailableError(self._error) from None
        except BaseException:
            # an interrupt or a bug mid-build: free the half-built model and Env all the same
            _dispose_gurobi(self._res)
            raise
        self.problem = None
        return m

    def solve(self, *, time_limit: float | Deadline | None = None,
              start: np.ndarray | None = None) -> MilpResult:
        """Solve from the current costs; ``start`` is a MIP start (it stays set for later
        solves until replaced)."""
        gp = self.gp
        m = self._build()
        x = self.x
        m.reset()
        x.Obj = self._c
        seconds = _seconds(time_limit)
        m.Params.TimeLimit = seconds if seconds is not None else gp.GRB.INFINITY
        if start is not None:
            x.Start = start
        try:
            m.optimize()
        except gp.GurobiError as exc:  # e.g. the size-limited licence refuses the model
            raise BackendUnavailableError(f"Gurobi cannot solve the {self.label}: {exc}") \
                from None
        return _gurobi_result(gp, m, x)


def _dispose_gurobi(res: dict) -> None:
    """Dispose the model before its environment (a model must not outlive its Env)."""
    for key in ("model", "env"):
        obj, res[key] = res[key], None
        if obj is not None:
            obj.dispose()


#: the adapters by backend name
ADAPTERS: dict[str, HighsAdapter | GurobiAdapter] = {
    "highs": HighsAdapter(), "gurobi": GurobiAdapter()}
BACKENDS = tuple(ADAPTERS)


def adapter(name: str) -> HighsAdapter | GurobiAdapter:
    """The adapter of backend ``name`` (one of :data:`BACKENDS`)."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise InputError(f"unknown MILP backend {name!r}; choose one of {BACKENDS}",
                         source="backend") from None
