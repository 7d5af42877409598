"""pcsos.feasibility: exact verdicts, witnesses, every decision path, both ILP backends."""

import importlib.util
import sys

import networkx as nx
import numpy as np
import pytest
from bruteforce import feasible_partitions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcsos.errors import BackendUnavailableError, InfeasibleError, InputError
from pcsos.feasibility import check_instance, check_problem, spread_labels
from pcsos.problem import Problem, make_instance, pairs_satisfied

# 3-colourable, but DSATUR (networkx tie-breaking) needs 4 colours; found by random search
DSATUR_FAILS_3 = [(0, 1), (0, 3), (0, 4), (0, 5), (1, 2), (1, 6), (1, 7), (2, 4), (2, 5),
                  (2, 7), (3, 5), (3, 6), (3, 7), (4, 6), (5, 7)]
# Groetzsch graph: triangle-free (no 4-clique) with chromatic number 4
GROETZSCH = sorted(nx.mycielski_graph(4).edges())


def _inst(n, k, ml=(), cl=(), seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return make_instance(X, k, ml, cl)


def _assert_witness(res, inst):
    assert res.feasible is True and res.labels is not None
    assert res.labels.shape == (inst.n,)
    assert sorted(np.unique(res.labels)) == list(range(inst.k))
    assert pairs_satisfied(res.labels, inst.ml, inst.cl)


def _has_gurobi():
    return importlib.util.find_spec("gurobipy") is not None


# ------------------------------------------------------------------ each decision path
def test_ml_cl_conflict_names_chain():
    res = check_instance(_inst(5, 2, ml=[(0, 1), (1, 2)], cl=[(0, 2)]))
    assert res.feasible is False and res.reason == "ml_cl_conflict"
    assert (0, 2) in res.pairs and (0, 1) in res.pairs and (1, 2) in res.pairs
    assert "0 - 1 - 2" in res.message
    with pytest.raises(InfeasibleError) as ei:
        res.raise_if_infeasible()
    assert ei.value.reason == "ml_cl_conflict" and ei.value.pairs == res.pairs


def test_too_few_groups_after_ml():
    res = check_instance(_inst(4, 3, ml=[(0, 1), (2, 3)]))
    assert res.feasible is False and res.reason == "too_few_groups" and res.s == 2


def test_s_is_counted_after_k2_inference():
    # CL path 0-1-2 at k = 2: inference merges {0, 2}, so s = 2 (from 3), still feasible
    inst = _inst(3, 2, cl=[(0, 1), (1, 2)])
    res = check_instance(inst)
    assert res.s == 2 and res.reason == "bipartite"
    _assert_witness(res, inst)
    assert check_instance(inst, infer_k2=False).s == 3
    # one must-link group only: at most one cluster at k = 2
    res2 = check_instance(_inst(3, 2, ml=[(0, 1), (1, 2)]))
    assert res2.feasible is False and res2.reason == "too_few_groups" and res2.s == 1


def test_odd_cycle_k2():
    inst = _inst(5, 2, cl=[(0, 1), (1, 2), (2, 0), (3, 4)])
    res = check_instance(inst)
    assert res.feasible is False and res.reason == "odd_cycle"
    assert {tuple(sorted(p)) for p in res.pairs} == {(0, 1), (1, 2), (0, 2)}
    # without inference the problem builds, and check_problem finds the cycle itself
    res2 = check_instance(inst, infer_k2=False)
    assert res2.feasible is False and res2.reason == "odd_cycle"


def test_bipartite_k2():
    inst = _inst(6, 2, cl=[(0, 1), (1, 2), (2, 3), (4, 5)])
    res = check_instance(inst, infer_k2=False)
    assert res.reason == "bipartite"
    _assert_witness(res, inst)


def test_dsatur_and_spread():
    inst = _inst(8, 4, cl=[(0, 1)])
    res = check_instance(inst)
    assert res.reason == "dsatur"
    _assert_witness(res, inst)


def test_clique():
    inst = _inst(6, 3, cl=[(a, b) for a in range(4) for b in range(a + 1, 4)])
    res = check_instance(inst)
    assert res.feasible is False and res.reason == "clique" and len(res.pairs) == 6
    res1 = check_instance(_inst(3, 1, cl=[(0, 2)]))
    assert res1.feasible is False and res1.reason == "clique" and res1.pairs == [(0, 2)]


@pytest.mark.parametrize("backend", ["highs", "gurobi"])
def test_ilp_path_feasible_when_dsatur_fails(backend):
    if backend == "gurobi" and not _has_gurobi():
        pytest.skip("gurobipy is not installed")
    G = nx.Graph(DSATUR_FAILS_3)
    if max(nx.coloring.greedy_color(G, "saturation_largest_first").values()) + 1 <= 3:
        pytest.skip("this networkx DSATUR colours the graph with 3 colours")
    inst = _inst(10, 3, cl=DSATUR_FAILS_3)  # 2 extra isolated points
    try:
        res = check_instance(inst, backend=backend)
    except BackendUnavailableError as exc:
        pytest.skip(f"Gurobi licence: {exc}")
    assert res.reason == "ilp" and res.backend == backend
    _assert_witness(res, inst)
    assert len(feasible_partitions(10, 3, (), DSATUR_FAILS_3)) > 0  # the reference agrees


@pytest.mark.parametrize("backend", ["highs", "gurobi"])
def test_ilp_path_infeasible(backend):
    if backend == "gurobi" and not _has_gurobi():
        pytest.skip("gurobipy is not installed")
    inst = _inst(11, 3, cl=GROETZSCH)
    try:
        res = check_instance(inst, backend=backend)
    except BackendUnavailableError as exc:
        pytest.skip(f"Gurobi licence: {exc}")
    assert res.feasible is False and res.reason == "ilp_infeasible"
    assert len(res.pairs) == len(GROETZSCH)
    assert len(feasible_partitions(11, 3, (), GROETZSCH)) == 0
    ok = check_instance(_inst(11, 4, cl=GROETZSCH), backend=backend, method="ilp")
    assert ok.reason == "ilp"
    _assert_witness(ok, _inst(11, 4, cl=GROETZSCH))


def test_time_limit_gives_unknown():
    res = check_instance(_inst(11, 3, cl=GROETZSCH), time_limit=0.0)
    assert res.feasible is None and res.reason == "time_limit" and res.status == "unknown"
    assert not res.success and res.labels is None
    res.raise_if_infeasible()  # unknown is not infeasible


def test_gurobi_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    with pytest.raises(BackendUnavailableError, match="gurobipy"):
        check_instance(_inst(11, 3, cl=GROETZSCH), backend="gurobi")


def test_bad_backend_and_method():
    with pytest.raises(InputError):
        check_instance(_inst(3, 2), backend="cplex")
    with pytest.raises(InputError):
        check_instance(_inst(3, 2), method="magic")


def test_check_problem_on_a_child_node():
    inst = _inst(6, 3, cl=[(0, 1), (1, 2)])
    root = Problem.from_instance(inst)
    child = root.add_cl(0, 2)  # now a triangle 0-1-2 plus three free points: still 3-colourable
    res = check_problem(child)
    assert res.feasible is True and child.satisfies(res.super_labels)
    res2 = check_problem(child.add_cl(0, 3).add_cl(1, 3).add_cl(2, 3))
    assert res2.feasible is False and res2.reason == "clique"


def test_spread_labels():
    lab = spread_labels(np.array([5, 5, 5, 7]), 4)
    assert sorted(np.unique(lab)) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        spread_labels(np.array([0, 1]), 3)


# ------------------------------------------------------------------ properties vs brute force
@st.composite
def instances(draw):
    n = draw(st.integers(1, 9))
    k = draw(st.integers(1, min(n, 4)))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    ml = draw(st.lists(pair, max_size=4)) if n > 1 else []
    cl = draw(st.lists(pair, max_size=14)) if n > 1 else []
    seed = draw(st.integers(0, 2**16))
    return n, k, ml, cl, seed


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(["auto", "ilp"]), st.booleans())
def test_verdict_agrees_with_brute_force(data, method, infer_k2):
    n, k, ml, cl, seed = data
    inst = _inst(n, k, ml, cl, seed)
    res = check_instance(inst, method=method, infer_k2=infer_k2)
    assert res.feasible is not None
    n_ref = len(feasible_partitions(n, k, ml, cl))
    if res.feasible:
        _assert_witness(res, inst)
        assert n_ref > 0
    else:
        assert n_ref == 0, res.message
        assert res.labels is None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.integers(0, 2**16), st.booleans())
def test_child_node_verdict_agrees_with_brute_force(data, pick, as_cl):
    """check_problem on a branched child equals brute force with the branching pair added."""
    n, k, ml, cl, seed = data
    inst = _inst(n, k, ml, cl, seed)
    try:
        root = Problem.from_instance(inst)
    except InfeasibleError:
        return
    if root.s < 2:
        return
    a = pick % root.s
    b = (a + 1 + (pick // root.s) % (root.s - 1)) % root.s
    ia, ib = int(np.argmax(root.point_labels == a)), int(np.argmax(root.point_labels == b))
    try:
        child = root.add_cl(a, b) if as_cl else root.merge(a, b)
    except InfeasibleError:
        child = None
    extra_ml = [] if as_cl else [(ia, ib)]
    extra_cl = [(ia, ib)] if as_cl else []
    n_ref = len(feasible_partitions(n, k, list(ml) + extra_ml, list(cl) + extra_cl))
    if child is None:
        assert n_ref == 0
        return
    res = check_problem(child)
    assert res.feasible is (n_ref > 0), res.message
    if res.feasible:
        assert pairs_satisfied(res.labels, np.array(list(ml) + extra_ml).reshape(-1, 2),
                               np.array(list(cl) + extra_cl).reshape(-1, 2))
        assert len(np.unique(res.labels)) == k


def test_dsatur_colours_as_networkx_does():
    # the heap-based DSATUR replaced networkx's O(s^2) one (13 s at s = 5 000): the same
    # order and the same colours, vertex for vertex, and a proper colouring
    import networkx as nx

    from pcsos.feasibility import dsatur

    rng = np.random.default_rng(11)
    for _ in range(60):
        s = int(rng.integers(1, 80))
        m = int(rng.integers(0, 3 * s + 1))
        edges = {tuple(sorted(map(int, rng.choice(s, 2, replace=False))))
                 for _ in range(m)} if s > 1 else set()
        edges = sorted(edges)
        G = nx.Graph()
        G.add_nodes_from(range(s))
        G.add_edges_from(edges)
        ref = nx.coloring.greedy_color(G, strategy="saturation_largest_first")
        col = dsatur(s, edges)
        assert col.tolist() == [ref[v] for v in range(s)]
        assert all(col[a] != col[b] for a, b in edges)
