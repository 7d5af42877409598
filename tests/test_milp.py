"""The MILP adapter layer (pcsos.milp): one representation, one adapter per backend."""

import sys
import types

import numpy as np
import pytest
from scipy.sparse import coo_matrix, csc_matrix

from pcsos.errors import BackendUnavailableError, InputError
from pcsos.milp import BACKENDS, GUROBIPY_MISSING, STATUSES, Milp, MilpResult, adapter


def _milp(A, row_lo, row_hi, c, col_lo=0.0, col_hi=np.inf, integrality=True, name="MILP"):
    A = csc_matrix(np.asarray(A, dtype=np.float64))
    n = A.shape[1]
    return Milp(np.asarray(c, dtype=np.float64), A, np.asarray(row_lo, dtype=np.float64),
                np.asarray(row_hi, dtype=np.float64), np.broadcast_to(col_lo, n).astype(float),
                np.broadcast_to(col_hi, n).astype(float),
                np.broadcast_to(integrality, n).astype(bool), name)


def _knapsack():
    """min -(5x + 4y), 6x + 4y <= 24, x + 2y <= 6, x, y >= 0 integer: LP optimum 21 at
    (3, 1.5), integer optimum 20 at (4, 0) (unique)."""
    return _milp([[6, 4], [1, 2]], [-np.inf, -np.inf], [24, 6], [-5, -4])


def _pigeonhole(p: int) -> Milp:
    """p pigeons in p - 1 holes: LP-feasible, integer-infeasible, no solution to find."""
    h = p - 1
    i, j = np.meshgrid(np.arange(p), np.arange(h), indexing="ij")
    rows = np.concatenate([i.ravel(), p + j.ravel()])
    cols = np.concatenate([(i * h + j).ravel()] * 2)
    A = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(p + h, p * h)).tocsc()
    return _milp(A.toarray(), np.r_[np.ones(p), np.full(h, -np.inf)], np.ones(p + h),
                 np.zeros(p * h), col_hi=1.0)


def _gurobi_or_skip():
    """The gurobi adapter after a tiny solve; skips with Gurobi's reason when it cannot."""
    pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    try:
        adapter("gurobi").solve(_knapsack())
    except BackendUnavailableError as exc:
        pytest.skip(f"Gurobi cannot solve here: {exc}")
    return adapter("gurobi")


# every route to a solver: one-shot and kept models, HiGHS and Gurobi
ROUTES = ["highs-once", "highs-model", "gurobi-once", "gurobi-model"]


def _solve(route, problem, monkeypatch, **kw):
    backend, how = route.split("-")
    if backend == "gurobi":
        _gurobi_or_skip()
    a = adapter(backend)
    if how == "once":
        return a.solve(problem, **kw)
    m = a.model(problem)
    assert m.name == backend
    try:
        return m.solve(**kw)
    finally:
        m.close()


@pytest.mark.parametrize("route", ROUTES)
def test_known_optimum(route, monkeypatch):
    res = _solve(route, _knapsack(), monkeypatch)
    assert res.status == "optimal"
    assert np.allclose(res.x, [4, 0]) and res.objective == pytest.approx(-20)


@pytest.mark.parametrize("route", ROUTES)
def test_continuous_columns_stay_continuous(route, monkeypatch):
    """min x + y with x, y >= 0.5; only y integral: (0.5, 1)."""
    p = _milp([[1, 0], [0, 1]], [0.5, 0.5], [np.inf, np.inf], [1, 1], col_hi=10.0,
              integrality=[False, True])
    res = _solve(route, p, monkeypatch)
    assert res.status == "optimal" and np.allclose(res.x, [0.5, 1.0])


@pytest.mark.parametrize("route", ROUTES)
def test_infeasible(route, monkeypatch):
    p = _milp([[1, 1]], [3], [3], [0, 0], col_hi=1.0)
    assert _solve(route, p, monkeypatch).status == "infeasible"
    assert _solve(route, _pigeonhole(6), monkeypatch).status == "infeasible"


@pytest.mark.parametrize("route", ROUTES)
def test_time_limit_without_a_solution(route, monkeypatch):
    """Pigeonhole has no solution, so a limit too short to prove it leaves 'time_limit'."""
    res = _solve(route, _pigeonhole(12), monkeypatch, time_limit=1e-9)
    assert res.status == "time_limit" and res.x is None
    assert res.status in STATUSES


def test_highs_model_changes_costs_and_keeps_lp_first():
    """A kept HiGHS model: new costs per solve; integral LP optima skip the MIP search."""
    pytest.importorskip("highspy", reason="highspy is not installed")
    m = adapter("highs").model(_knapsack())
    assert m.solve().objective == pytest.approx(-20)
    assert (m.lp_hits, m.mip_runs) == (0, 1)  # the LP optimum (3, 1.5) is fractional
    m.set_costs(np.array([-1.0, -4.0]))  # LP optimum (0, 3): integral
    res = m.solve(start=np.array([4.0, 0.0]))
    assert res.status == "optimal" and np.allclose(res.x, [0, 3])
    assert (m.lp_hits, m.mip_runs) == (1, 1)
    m.set_costs(np.array([-5.0, -4.0]))
    res = m.solve(start=np.array([0.0, 3.0]))  # a feasible start for the MIP search
    assert np.allclose(res.x, [4, 0]) and (m.lp_hits, m.mip_runs) == (1, 2)
    m.close()
    m.close()
    with pytest.raises(InputError, match="closed"):
        m.solve()


def test_highs_model_runs_no_feasibility_jump():
    """HiGHS's feasibility jump does not look at the clock (4.4 s of a 2.1 s limit, on a
    sized assignment of 100 000 binaries): the kept model turns it off."""
    pytest.importorskip("highspy", reason="highspy is not installed")
    m = adapter("highs").model(_knapsack())
    status, value = m.h.getOptionValue("mip_heuristic_run_feasibility_jump")
    if status != m.h.getOptionValue("threads")[0]:  # the threads option is always there
        pytest.skip("this HiGHS has no feasibility jump to turn off")
    assert value is False


def test_registry_and_unknown_backend():
    assert BACKENDS == ("highs", "gurobi")
    assert adapter("highs").name == "highs" and adapter("gurobi").name == "gurobi"
    with pytest.raises(InputError, match="unknown MILP backend 'cplex'"):
        adapter("cplex")
    assert np.isnan(MilpResult("time_limit").objective) and MilpResult("time_limit").x is None


def test_gurobi_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    g = adapter("gurobi")
    assert not g.installed()
    for call in (lambda: g.solve(_knapsack()), lambda: g.model(_knapsack())):
        with pytest.raises(BackendUnavailableError) as info:
            call()
        assert str(info.value) == GUROBIPY_MISSING
    # every layer asks the adapter: one message, naming who needed it
    with pytest.raises(BackendUnavailableError) as info:
        g.require("feasibility")
    assert str(info.value) == f"feasibility {GUROBIPY_MISSING}"
    assert "'highs' needs nothing extra" in str(info.value)
    assert adapter("highs").require("feasibility").name == "highs"


class _FakeGRB:
    BINARY, INTEGER, CONTINUOUS, INFINITY = "B", "I", "C", 1e100
    OPTIMAL, INFEASIBLE, INF_OR_UNBD, TIME_LIMIT = 2, 3, 4, 9


def _fake_gurobipy(start_errno=None):
    """A gurobipy stand-in that records the model it is given (no licence needed)."""

    class GurobiError(Exception):
        def __init__(self, msg, errno):
            super().__init__(msg)
            self.errno = errno

    log = {"envs": [], "constrs": []}

    class Env:
        def __init__(self, empty=False):
            self.disposed = 0
            log["envs"].append(self)

        def setParam(self, name, value):
            pass

        def start(self):
            if start_errno is not None:
                raise GurobiError("No Gurobi license found", start_errno)

        def dispose(self):
            self.disposed += 1

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.dispose()

    class MVar:
        Obj = None

    class Model:
        def __init__(self, env=None):
            self.Params = types.SimpleNamespace()

        def addMVar(self, n, vtype, lb, ub):
            log["var"] = (n, vtype, np.array(lb), np.array(ub))
            return MVar()

        def addMConstr(self, A, x, sense, b):
            log["constrs"].append((A.toarray(), np.broadcast_to(sense, len(b)).tolist(),
                                   np.array(b)))

        def dispose(self):
            pass

    gp = types.SimpleNamespace(Env=Env, Model=Model, GurobiError=GurobiError, GRB=_FakeGRB)
    return gp, log


def test_gurobi_translation_without_licence():
    """Rows go to Gurobi in the representation's order with their senses; a ranged row is
    its '>' row in place plus a '<' row after the others; a free row is left out."""
    from pcsos.milp import _gurobi_build

    gp, log = _fake_gurobipy()
    A = [[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1], [2, 0, 0]]
    p = _milp(A, [1, -np.inf, 0.5, -np.inf, 0], [1, 2, 4, np.inf, np.inf], [0, 0, 0],
              col_lo=[0, 0, -1], col_hi=[1, 5, 1], integrality=[True, True, False])
    model = gp.Model()
    _gurobi_build(gp, model, p)
    n, vtype, lb, ub = log["var"]
    assert n == 3 and list(vtype) == ["B", "I", "C"]
    assert lb.tolist() == [0, 0, -1] and ub.tolist() == [1, 5, 1]
    (A1, s1, b1), (A2, s2, b2) = log["constrs"]
    assert A1.tolist() == [A[0], A[1], A[2], A[4]] and s1 == ["=", "<", ">", ">"]
    assert b1.tolist() == [1, 2, 0.5, 0]
    assert A2.tolist() == [A[2]] and s2 == ["<"] and b2.tolist() == [4]


def test_gurobi_refused_licence_without_licence(monkeypatch):
    """A refused start: the one-shot solve names the model and its size, the kept model
    disposes its one Env and says so again without opening another."""
    gp, log = _fake_gurobipy(start_errno=10009)
    monkeypatch.setitem(sys.modules, "gurobipy", gp)
    g = adapter("gurobi")
    assert g.installed()
    p = _knapsack()
    p.name = "toy ILP"
    with pytest.raises(BackendUnavailableError,
                       match=r"Gurobi cannot solve this toy ILP \(2 variables\): No Gurobi"):
        g.solve(p)
    assert len(log["envs"]) == 1 and log["envs"][0].disposed == 1
    m = g.model(p)
    for _ in range(2):
        with pytest.raises(BackendUnavailableError, match="Gurobi is not usable: No Gurobi"):
            m.solve()
    assert len(log["envs"]) == 2 and log["envs"][1].disposed == 1
    m.close()


def test_gurobi_model_matches_the_representation():
    """With a licence: the Gurobi model holds the representation's matrix and senses."""
    g = _gurobi_or_skip()
    p = _knapsack()
    m = g.model(p)
    m.solve()
    assert m.m.NumVars == 2 and m.m.NumConstrs == 2
    assert np.array_equal(m.m.getA().toarray(), p.A.toarray())
    assert [c.Sense for c in m.m.getConstrs()] == ["<", "<"]
    m.close()
    assert m.closed and m.m is None
