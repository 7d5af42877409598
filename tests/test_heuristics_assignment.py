"""The assignment engine against independent references (enumeration, scipy LP)."""

import itertools
import sys

import numpy as np
import pytest
from bruteforce import assignment_costs
from scipy.optimize import linprog

from pcsos.errors import BackendUnavailableError, InputError
from pcsos.heuristics.assignment import AssignmentEngine


def enumerate_assignment(costs, cl):
    """Optimal cost by trying all k^s labellings (tiny s only); inf when infeasible."""
    s, k = costs.shape
    best = np.inf
    for lab in itertools.product(range(k), repeat=s):
        lab = np.array(lab)
        if len(set(lab.tolist())) != k:
            continue
        if any(lab[i] == lab[j] for i, j in cl):
            continue
        best = min(best, costs[np.arange(s), lab].sum())
    return best


def valid(labels, s, k, cl):
    return (labels.shape == (s,) and len(np.unique(labels)) == k
            and all(labels[i] != labels[j] for i, j in cl))


def random_cl(rng, s, m):
    pairs = set()
    while len(pairs) < m:
        i, j = sorted(rng.choice(s, 2, replace=False).tolist())
        pairs.add((i, j))
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def test_transportation_matches_lp_and_is_integral():
    """Without CL: the matching answer equals the LP optimum (scipy linprog, independent)."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        s, k = int(rng.integers(3, 25)), int(rng.integers(2, 6))
        k = min(k, s)
        pts = rng.normal(size=(s, 2))
        # centres far from most points, so the nearest-centre rule leaves clusters empty
        C = rng.normal(size=(k, 2)) * 3
        w = rng.integers(1, 4, size=s).astype(float)
        eng = AssignmentEngine(pts, w, np.empty((0, 2)), k)
        a = eng.solve(C)
        assert eng.method == "matching"
        assert valid(a.labels, s, k, [])
        costs = assignment_costs(pts, w, C)
        A_eq = np.kron(np.eye(s), np.ones((1, k)))
        A_ub = -np.kron(np.ones((1, s)), np.eye(k))
        lp = linprog(costs.ravel(), A_ub=A_ub, b_ub=-np.ones(k), A_eq=A_eq,
                     b_eq=np.ones(s), bounds=(0, 1), method="highs")
        assert lp.status == 0
        # total unimodularity: the LP vertex is 0/1
        assert np.allclose(lp.x, np.round(lp.x), atol=1e-7)
        assert a.cost == pytest.approx(lp.fun, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("decompose", [True, False])
def test_milp_matches_enumeration(decompose):
    """With CL: HiGHS equals enumeration, through the decomposition and through the full
    MILP."""
    rng = np.random.default_rng(1)
    infeasible = 0
    for _ in range(40):
        s, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
        pts = rng.normal(size=(s, 2))
        w = rng.integers(1, 3, size=s).astype(float)
        cl = random_cl(rng, s, int(rng.integers(1, min(10, s * (s - 1) // 2) + 1)))
        eng = AssignmentEngine(pts, w, cl, k, decompose=decompose)
        assert eng.method == "highs"
        warm = None
        for _rep in range(2):  # the second call reuses the model with new costs
            C = rng.normal(size=(k, 2))
            ref = enumerate_assignment(assignment_costs(pts, w, C), cl)
            a = eng.solve(C, warm=warm)
            if np.isinf(ref):
                assert a.status == "infeasible" and a.labels is None
                infeasible += 1
                break
            assert a.status == "optimal"
            assert valid(a.labels, s, k, cl)
            assert a.cost == pytest.approx(ref, rel=1e-7, abs=1e-9)
            warm = a.labels
    assert infeasible > 0  # the sample covers infeasible CL graphs too


def test_milp_fractional_lp_path():
    """Dense CL graphs make the LP relaxation fractional: the MIP search must take over."""
    rng = np.random.default_rng(2)
    runs = 0
    for _ in range(30):
        s, k = 9, 3
        pts = rng.normal(size=(s, 2))
        w = np.ones(s)
        cl = random_cl(rng, s, 14)
        eng = AssignmentEngine(pts, w, cl, k, decompose=False)
        C = rng.normal(size=(k, 2))
        ref = enumerate_assignment(assignment_costs(pts, w, C), cl)
        a = eng.solve(C)
        if np.isinf(ref):
            assert a.status == "infeasible"
        else:
            assert a.cost == pytest.approx(ref, rel=1e-7, abs=1e-9)
        runs += eng._milp.mip_runs
    assert runs > 0


def test_highs_engine_writes_nothing_to_stdout(capfd):
    """HiGHS prints its banner from C++ on the first call of a fresh instance unless output
    is off before it: it must not reach the CLI's stdout (the LP and the MIP path both run)."""
    pytest.importorskip("highspy", reason="highspy is not installed")
    rng = np.random.default_rng(2)
    pts = rng.normal(size=(9, 2))
    capfd.readouterr()
    eng = AssignmentEngine(pts, np.ones(9), random_cl(rng, 9, 14), 3, decompose=False)
    for _ in range(5):
        eng.solve(rng.normal(size=(3, 2)))
    out = capfd.readouterr()
    assert out.out == "" and out.err == ""


def test_infeasible_cases_do_not_raise():
    pts = np.zeros((4, 1))
    k4 = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
    a = AssignmentEngine(pts, np.ones(4), k4, 3).solve(np.zeros((3, 1)))
    assert a.status == "infeasible" and a.labels is None and np.isinf(a.cost)
    # fewer points than clusters
    a = AssignmentEngine(pts[:2], np.ones(2), np.empty((0, 2)), 3).solve(np.zeros((3, 1)))
    assert a.status == "infeasible"


def test_decomposition_matches_enumeration_and_full_milp():
    """Forests, cycles, k = 1 and starts where the relaxation leaves a cluster empty: the
    decomposition's answer is the enumerated optimum, and it builds no MILP on a forest."""
    rng = np.random.default_rng(11)
    kinds = {"forest": 0, "cycles": 0, "empty": 0, "infeasible": 0}
    for t in range(150):
        s, k = int(rng.integers(3, 9)), int(rng.integers(1, 4))
        pts = rng.normal(size=(s, 2))
        w = rng.integers(1, 4, size=s).astype(float)
        cl = random_cl(rng, s, int(rng.integers(1, min(12, s * (s - 1) // 2) + 1)))
        eng = AssignmentEngine(pts, w, cl, k)
        C = rng.normal(size=(k, 2)) * (0.2 if t % 3 == 0 else 2.0)
        costs = assignment_costs(pts, w, C)
        ref = enumerate_assignment(costs, cl)
        a = eng.solve(C)
        if np.isinf(ref):
            assert a.status == "infeasible" and a.labels is None
            kinds["infeasible"] += 1
            continue
        assert a.status == "optimal" and valid(a.labels, s, k, cl)
        assert a.cost == pytest.approx(ref, rel=1e-9, abs=1e-12)
        if eng.decomposed_calls == 0:
            kinds["empty"] += 1  # the full MILP decided
        elif "cycles" in eng._models:
            kinds["cycles"] += 1
        else:
            kinds["forest"] += 1
            assert "full" not in eng._models
    assert min(kinds.values()) > 0, kinds


def test_repair_of_empty_clusters_above_the_full_milp_size():
    """Above ``full_milp_columns`` a relaxation that leaves clusters empty is repaired with
    free super-points: a valid labelling, never below the enumerated optimum."""
    rng = np.random.default_rng(12)
    repaired = 0
    for _ in range(60):
        s, k = int(rng.integers(5, 9)), 3
        pts = rng.normal(size=(s, 2))
        cl = random_cl(rng, s, 2)
        eng = AssignmentEngine(pts, np.ones(s), cl, k, full_milp_columns=0)
        C = rng.normal(size=(k, 2)) * 0.2 + np.array([[0.0, 0.0], [0.1, 0], [9.0, 9.0]])
        ref = enumerate_assignment(assignment_costs(pts, np.ones(s), C), cl)
        a = eng.solve(C)
        repaired += eng.repaired_calls
        assert a.labels is not None and valid(a.labels, s, k, cl)
        assert a.cost >= ref - 1e-9
        assert a.status == ("feasible" if eng.repaired_calls else "optimal")
        assert "full" not in eng._models or not eng.repaired_calls
    assert repaired > 0


def test_decomposition_adds_only_broken_pairs():
    """Row generation: pairs between clusters far apart never enter the relaxation."""
    rng = np.random.default_rng(5)
    centres = rng.uniform(-50, 50, size=(10, 2))
    y = np.repeat(np.arange(10), 30)
    pts = centres[y] + rng.normal(size=(300, 2))
    cl = np.array([(i, j) for i in range(300) for j in range(i + 1, 300)
                   if y[i] != y[j] and rng.random() < 0.02])
    eng = AssignmentEngine(pts, np.ones(300), cl, 10)
    a = eng.solve(centres)
    assert a.status == "optimal" and valid(a.labels, 300, 10, cl)
    assert eng._active.sum() < 0.1 * len(cl)
    full = AssignmentEngine(pts, np.ones(300), cl, 10, decompose=False).solve(centres)
    assert a.cost == pytest.approx(full.cost, rel=1e-9)


def test_call_time_limit_returns_the_warm_start():
    """A call cut short with nothing better returns its (feasible) warm start."""
    pts = np.arange(6.0)[:, None]
    cl = np.array([[0, 1], [1, 2], [0, 2]])
    eng = AssignmentEngine(pts, np.ones(6), cl, 3, decompose=False, call_time_limit=1e-9)
    warm = np.array([0, 1, 2, 2, 2, 2])
    a = eng.solve(np.array([[0.0], [3.0], [5.0]]), warm=warm)
    assert a.status == "feasible" and np.array_equal(a.labels, warm)
    for bad in (0, -1.0, "abc", True, float("nan")):
        with pytest.raises(InputError, match="seconds > 0"):
            AssignmentEngine(pts, np.ones(6), cl, 3, call_time_limit=bad)


def test_time_limit_zero_is_reported():
    pts = np.arange(6.0)[:, None]
    eng = AssignmentEngine(pts, np.ones(6), np.array([[0, 1]]), 2)
    a = eng.solve(np.array([[0.0], [5.0]]), time_limit=0.0)
    assert a.status == "time_limit" and a.labels is None


def test_bad_arguments():
    eng = AssignmentEngine(np.zeros((3, 2)), np.ones(3), np.array([[0, 1]]), 2)
    with pytest.raises(InputError):
        eng.solve(np.zeros((3, 2)))  # wrong centre count
    with pytest.raises(InputError):
        AssignmentEngine(np.zeros((3, 2)), np.ones(3), np.array([[0, 1]]), 2, backend="cplex")


def test_gurobi_backend_or_clear_error(monkeypatch):
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(6, 2))
    cl = np.array([[0, 1], [1, 2], [2, 3]])
    C = rng.normal(size=(2, 2))
    try:
        eng = AssignmentEngine(pts, np.ones(6), cl, 2, backend="gurobi")
        a = eng.solve(C)
    except BackendUnavailableError:
        pass
    else:
        ref = enumerate_assignment(assignment_costs(pts, np.ones(6), C), cl)
        assert a.cost == pytest.approx(ref, rel=1e-7)
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    with pytest.raises(BackendUnavailableError, match="gurobipy"):
        AssignmentEngine(pts, np.ones(6), cl, 2, backend="gurobi")


@pytest.mark.slow
def test_ecg5000_assignment_obeys_the_pairs(shared_instances):
    """The HiGHS assignment MILP on ECG5000 ml_0_cl_250_0 (k = 5): optimal, every cluster
    filled, no cannot-link pair together, its cost that of its labels and not below the
    nearest-centre cost. Its time per call is a benchmark (benchmarks/bench_heuristics.py)."""
    from pcsos.io import read_constraints, read_data
    from pcsos.problem import Problem, make_instance

    d = shared_instances / "ECG5000"
    data = read_data(d / "data.txt")
    cons = read_constraints(d / "constraints" / "ml_0_cl_250_0.txt", n=data.n)
    p = Problem.from_instance(make_instance(data.X, 5, cons.ml, cons.cl))
    eng = AssignmentEngine.from_problem(p)
    rng = np.random.default_rng(0)
    cl = np.asarray(p.cl).reshape(-1, 2)
    for _ in range(5):
        C = p.centroids[rng.choice(p.s, 5, replace=False)]
        a = eng.solve(C)
        assert a.status == "optimal"
        assert len(np.unique(a.labels)) == 5
        assert not np.any(a.labels[cl[:, 0]] == a.labels[cl[:, 1]])
        # bruteforce's, not squared_costs, which the engine itself uses
        costs = assignment_costs(p.centroids, p.e, C)
        assert a.cost == pytest.approx(costs[np.arange(p.s), a.labels].sum(), rel=1e-9)
        assert a.cost >= costs.min(axis=1).sum() * (1 - 1e-12)


def _counting_env(gp, monkeypatch):
    """Replace gurobipy.Env by a subclass that records every instance and its disposal."""
    made = []

    class CountingEnv(gp.Env):
        def __init__(self, *args, **kwargs):
            made.append(self)
            self.disposed = 0
            super().__init__(*args, **kwargs)

        def dispose(self):
            self.disposed += 1
            super().dispose()

    monkeypatch.setattr(gp, "Env", CountingEnv)
    return made


def _gurobi_engine_or_skip(gp, made, pts, cl, k):
    """A Gurobi engine after one solve; skips with Gurobi's reason when it cannot start.

    Before skipping it checks what needs no licence: the refused start opened one Env and
    disposed it, and a second call neither opens another nor hides the reason.
    """
    eng = AssignmentEngine(pts, np.ones(len(pts)), cl, k, backend="gurobi", decompose=False)
    assert made == []  # the Env is opened lazily, on the first MILP solve
    C = np.zeros((k, pts.shape[1]))
    try:
        eng.solve(C)
    except BackendUnavailableError as exc:
        assert len(made) == 1 and made[0].disposed >= 1
        with pytest.raises(BackendUnavailableError, match="Gurobi is not usable"):
            eng.solve(C)
        assert len(made) == 1
        eng.close()
        pytest.skip(f"Gurobi cannot start here: {exc}")
    return eng


def test_gurobi_engine_owns_one_env_and_disposes_it(monkeypatch):
    """Many solves through one engine open exactly one Env; close() frees model and Env."""
    gp = pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    made = _counting_env(gp, monkeypatch)
    rng = np.random.default_rng(4)
    s, k = 7, 3
    pts = rng.normal(size=(s, 2))
    cl = np.array([[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [0, 6]])
    with _gurobi_engine_or_skip(gp, made, pts, cl, k) as eng:
        warm = None
        for _ in range(25):
            C = rng.normal(size=(k, 2))
            a = eng.solve(C, warm=warm)
            ref = enumerate_assignment(assignment_costs(pts, np.ones(s), C), cl)
            assert a.status == "optimal" and valid(a.labels, s, k, cl)
            assert a.cost == pytest.approx(ref, rel=1e-7, abs=1e-9)
            warm = a.labels
        assert len(made) == 1 and made[0].disposed == 0
        model = eng._milp.m
        assert model.NumVars == s * k
    # leaving the block disposed the model, then the Env; Gurobi refuses both afterwards
    assert len(made) == 1 and made[0].disposed == 1
    with pytest.raises(gp.GurobiError):
        model.NumVars  # noqa: B018
    with pytest.raises(gp.GurobiError):
        made[0].setParam("OutputFlag", 0)
    eng.close()  # idempotent
    assert made[0].disposed == 1
    with pytest.raises(InputError, match="closed"):
        eng.solve(np.zeros((k, 2)))
    assert len(made) == 1


def test_gurobi_engine_released_by_garbage_collection(monkeypatch):
    """An engine dropped without close() (as the heuristics do) still disposes its Env."""
    import gc

    gp = pytest.importorskip("gurobipy", reason="gurobipy is not installed")
    made = _counting_env(gp, monkeypatch)
    pts = np.arange(6.0)[:, None]
    eng = _gurobi_engine_or_skip(gp, made, pts, np.array([[0, 1], [2, 3]]), 2)
    model = eng._milp.m
    del eng
    gc.collect()
    assert len(made) == 1 and made[0].disposed == 1
    with pytest.raises(gp.GurobiError):
        model.NumVars  # noqa: B018


def test_gurobi_refused_start_disposes_env_without_licence(monkeypatch):
    """Needs neither gurobipy nor a licence: a fake module whose Env.start() is refused."""
    import types

    class GurobiError(Exception):
        errno = 10009

    made = []

    class Env:
        def __init__(self, empty=False):
            made.append(self)
            self.disposed = 0

        def setParam(self, name, value):
            pass

        def start(self):
            raise GurobiError("No Gurobi license found")

        def dispose(self):
            self.disposed += 1

    def model(*args, **kwargs):  # pragma: no cover - never reached, start() fails first
        raise AssertionError("no model may be built on a refused Env")

    fake = types.SimpleNamespace(Env=Env, Model=model, GurobiError=GurobiError)
    monkeypatch.setitem(sys.modules, "gurobipy", fake)
    eng = AssignmentEngine(np.arange(6.0)[:, None], np.ones(6), np.array([[0, 1]]), 2,
                           backend="gurobi", decompose=False)
    assert made == []
    for _ in range(3):
        with pytest.raises(BackendUnavailableError, match="No Gurobi license found"):
            eng.solve(np.array([[0.0], [5.0]]))
    assert len(made) == 1 and made[0].disposed == 1
    eng.close()
    eng.close()
    assert made[0].disposed == 1
