"""Cluster sizes (issue 33) in every layer but the SDP: feasibility, the assignment engine,
the heuristics, the node, and whole solves against enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import assignment_costs, brute_force, feasible_partitions

from pcsos.api import solve_instance
from pcsos.cli import main
from pcsos.cuts.separation import clique_rhs
from pcsos.errors import InfeasibleError
from pcsos.feasibility import check_instance, check_problem
from pcsos.heuristics import register_heuristic, run_heuristic
from pcsos.heuristics.assignment import AssignmentEngine
from pcsos.heuristics.base import HeuristicResult
from pcsos.node import NodeData, clustering_from_Z, process_node
from pcsos.options import SolverOptions
from pcsos.problem import Problem, make_instance, pairs_satisfied
from pcsos.tree import Context

FAST = {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3}}


# ------------------------------------------------------------------ random tiny instances
def _pairs(rng, n, m):
    return [tuple(int(v) for v in rng.choice(n, 2, replace=False)) for _ in range(m)]


def _size_kw(rng, n, k):
    """One of: exact sizes, size_max, size_min, both bounds (always a valid input)."""
    kind = int(rng.integers(4))
    if kind == 0:
        cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
        return {"sizes": np.diff(np.r_[0, cuts, n]).tolist()}
    lo = int(rng.integers(1, n // k + 1))
    hi = int(rng.integers(-(-n // k), n + 1))
    return [{"size_max": hi}, {"size_min": lo}, {"size_min": lo, "size_max": hi}][kind - 1]


def _case(rng, n_max=9, k_max=3):
    n = int(rng.integers(3, n_max + 1))
    k = int(rng.integers(1, min(k_max, n) + 1))
    X = rng.normal(size=(n, 2))
    ml = _pairs(rng, n, int(rng.integers(0, 3)))
    cl = _pairs(rng, n, int(rng.integers(0, 5)))
    return X, k, ml, cl, _size_kw(rng, n, k)


def _n_feasible(n, k, ml, cl, kw):
    P = feasible_partitions(n, k, ml, cl)
    if not len(P):
        return 0
    counts = np.stack([(P == h).sum(axis=1) for h in range(k)], axis=1)
    ok = np.ones(len(P), dtype=bool)
    if "sizes" in kw:
        ok &= np.all(np.sort(counts, axis=1) == np.sort(kw["sizes"]), axis=1)
    ok &= counts.min(axis=1) >= kw.get("size_min", 0)
    ok &= counts.max(axis=1) <= kw.get("size_max", n)
    return int(ok.sum())


def _check_solves(seed, cases):
    rng = np.random.default_rng(seed)
    seen = {"optimal": 0, "infeasible": 0}
    for t in range(cases):
        X, k, ml, cl, kw = _case(rng)
        inst = make_instance(X, k, ml, cl, **kw)
        opt, _ = brute_force(X, k, ml, cl, **kw)
        res = solve_instance(inst, seed=0, workers=1, **FAST)
        what = f"case {t}: k={k} ml={ml} cl={cl} {kw}: {res.status} {res.message}"
        if opt == math.inf:
            assert res.status == "infeasible", what
        else:
            assert res.status == "optimal", what
            assert res.objective == pytest.approx(opt, rel=1e-6, abs=1e-9), what
            assert res.lower_bound <= opt + 1e-9 * max(1.0, opt), what
            assert inst.sizes_ok(res.labels), what
            assert pairs_satisfied(res.labels, inst.ml, inst.cl), what
        seen[res.status] += 1
    assert seen["optimal"] and seen["infeasible"]  # both outcomes are exercised


def test_solve_against_enumeration():
    """(a) 100 tiny instances with sizes and pairs: status, objective, bound."""
    _check_solves(2026, 100)


@pytest.mark.slow
def test_solve_against_enumeration_slow():
    _check_solves(33, 500)


def test_weighted_solve_against_enumeration():
    """Sizes count points while the objective weighs them."""
    rng = np.random.default_rng(9)
    for t in range(20):
        X, k, ml, cl, kw = _case(rng)
        w = rng.uniform(0.5, 3.0, size=len(X))
        inst = make_instance(X, k, ml, cl, weights=w, **kw)
        opt, _ = brute_force(X, k, ml, cl, weights=w, **kw)
        res = solve_instance(inst, seed=0, workers=1, **FAST)
        if opt == math.inf:
            assert res.status == "infeasible", (t, res.message)
        else:
            assert res.status == "optimal", (t, res.message)
            assert res.objective == pytest.approx(opt, rel=1e-6, abs=1e-9)
            assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)
            assert inst.sizes_ok(res.labels)


def test_clique_rhs_with_sizes_is_valid_and_tight():
    """With sizes the clique cuts' right-hand side is 1 / the heaviest cluster the sizes
    allow: against every clustering that meets them (with and without point weights), the
    least sum_{a<b in Q} Z_ab over k + 1 points Q is never below it and reaches it, and it
    is above the 1 / (n - k + 1) of no sizes where size_max or size_min bind."""
    rng = np.random.default_rng(41)
    stronger = 0
    for t in range(60):
        n = int(rng.integers(4, 9))
        k = int(rng.integers(2, min(4, n - 1) + 1))
        kw = _size_kw(rng, n, k)
        w = rng.uniform(0.5, 3.0, size=n) if t % 2 else None
        inst = make_instance(rng.normal(size=(n, 2)), k, weights=w, **kw)
        rhs = clique_rhs(n, k, inst.max_cluster_weight)
        weights = np.ones(n) if w is None else w
        worst, biggest = math.inf, 0
        for lab in feasible_partitions(n, k):
            if not inst.sizes_ok(lab):
                continue
            mass = np.bincount(lab, weights=weights)
            biggest = max(biggest, int(np.bincount(lab).max()))
            Z = (lab[:, None] == lab[None, :]) / mass[lab][:, None]
            for Q in itertools.combinations(range(n), k + 1):
                worst = min(worst, sum(Z[a, b] for a, b in itertools.combinations(Q, 2)))
        what = f"case {t}: n={n} k={k} {kw} weights={w is not None}"
        if worst == math.inf:
            continue  # no clustering meets the sizes
        assert biggest == inst.max_cluster_points, what
        assert rhs <= worst <= rhs * (1 + 1e-12), what
        stronger += rhs > clique_rhs(n, k, make_instance(inst.X, k, weights=w).max_cluster_weight)
    assert stronger >= 10


@pytest.mark.parametrize("method", ["auto", "ilp"])
def test_feasibility_against_enumeration(method):
    rng = np.random.default_rng(7 if method == "auto" else 8)
    reasons = set()
    for t in range(150):
        X, k, ml, cl, kw = _case(rng)
        inst = make_instance(X, k, ml, cl, **kw)
        res = check_instance(inst, method=method)
        ref = _n_feasible(inst.n, k, ml, cl, kw)
        assert res.feasible is (ref > 0), f"case {t}: {kw} {ml} {cl}: {res.message}"
        reasons.add(res.reason)
        if res.feasible:
            assert inst.sizes_ok(res.labels) and len(np.unique(res.labels)) == k
            assert pairs_satisfied(res.labels, inst.ml, inst.cl)
    assert "sizes_ilp" in reasons
    if method == "auto":
        assert "sizes_greedy" in reasons


def test_child_nodes_feasibility_against_enumeration():
    """check_problem on branched children: the merge may build a group too large."""
    rng = np.random.default_rng(5)
    for _ in range(80):
        X, k, ml, cl, kw = _case(rng)
        inst = make_instance(X, k, ml, cl, **kw)
        try:
            root = Problem.from_instance(inst)
        except InfeasibleError:
            continue
        if root.s < 2:
            continue
        a, b = (int(v) for v in rng.choice(root.s, 2, replace=False))
        ia, ib = int(np.argmax(root.point_labels == a)), int(np.argmax(root.point_labels == b))
        as_cl = bool(rng.integers(2))
        try:
            child = root.add_cl(a, b) if as_cl else root.merge(a, b)
        except InfeasibleError:
            continue
        ref = _n_feasible(inst.n, k, ml + ([] if as_cl else [(ia, ib)]),
                          cl + ([(ia, ib)] if as_cl else []), kw)
        res = check_problem(child)
        assert res.feasible is (ref > 0), res.message
        if res.feasible:
            assert inst.sizes_ok(res.labels) and child.satisfies(res.super_labels)


# ------------------------------------------------------------------ explanations
def _X(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 2))


def test_group_larger_than_size_max_is_named():
    inst = make_instance(_X(10), 3, ml=[(0, 1), (1, 2), (2, 7), (7, 8)], size_max=4)
    res = check_instance(inst)
    assert res.feasible is False and res.reason == "group_too_large"
    assert "a must-link group of 5 points is larger than size_max = 4" in res.message
    assert "[0, 1, 2, 7, 8]" in res.message
    assert set(res.pairs) == {(0, 1), (1, 2), (2, 7), (7, 8)}
    with pytest.raises(InfeasibleError, match=r"points \[0, 1, 2, 7, 8\]") as ei:
        res.raise_if_infeasible()
    assert ei.value.reason == "group_too_large"
    r = solve_instance(inst, seed=0, **FAST)
    assert r.status == "infeasible" and "larger than size_max" in r.message


def test_group_larger_than_every_exact_size():
    inst = make_instance(_X(6), 2, ml=[(0, 1), (1, 2), (2, 3)], sizes=[3, 3])
    res = check_instance(inst)
    assert res.reason == "group_too_large"
    assert "the largest exact size is 3 but a must-link group has 4 points" in res.message


def test_sizes_that_cannot_be_packed():
    # three must-link pairs cannot make two clusters of 3, whatever the cannot-link pairs
    inst = make_instance(_X(6), 2, ml=[(0, 1), (2, 3), (4, 5)], cl=[(0, 2)], sizes=[3, 3])
    res = check_instance(inst)
    assert res.feasible is False and res.reason == "sizes_packing"
    assert "3 must-link group(s) of 2, 2, 2 points" in res.message
    assert "exact sizes 3, 3" in res.message
    # size_min: a group of 4 leaves 2 points for the other cluster
    res2 = check_instance(make_instance(_X(6), 2, ml=[(0, 1), (1, 2), (2, 3)], size_min=3))
    assert res2.reason == "sizes_packing" and "size_min = 3" in res2.message


# point 0 needs a partner, but it is cannot-linked to everyone else (k = 3: no k = 2
# inference merges the other points into one group first)
CONFLICT = {"n": 6, "k": 3, "cl": [(0, j) for j in range(1, 6)], "sizes": [2, 2, 2]}


def _conflict(**kw):
    return make_instance(_X(6), 3, cl=CONFLICT["cl"], **(kw or {"sizes": CONFLICT["sizes"]}))


def test_sizes_conflicting_with_cannot_links():
    res = check_instance(_conflict())
    assert res.feasible is False and res.reason == "sizes_ilp_infeasible"
    assert set(res.pairs) == set(CONFLICT["cl"])
    assert "5 cannot-link pairs and the exact sizes 2, 2, 2 conflict" in res.message
    assert _n_feasible(6, 3, [], CONFLICT["cl"], {"sizes": [2, 2, 2]}) == 0
    # the same pairs with bounds that leave room are feasible
    ok = check_instance(_conflict(size_min=1, size_max=3))
    assert ok.feasible and ok.reason in ("sizes_greedy", "sizes_ilp")
    # at k = 2 the inference merges points 1..5 into one group, which is named instead
    k2 = check_instance(make_instance(_X(4), 2, cl=[(0, 1), (0, 2), (0, 3)], sizes=[2, 2]))
    assert k2.reason == "group_too_large" and "after k = 2 inference" in k2.message


def test_cli_check_exits_3_with_the_explanation(capsys, tmp_path):
    d = tmp_path / "d.txt"
    d.write_text("6 2\n" + "".join(f"{i} {i % 2}\n" for i in range(6)))
    c = tmp_path / "c.txt"
    c.write_text("".join(f"CL {i} {j}\n" for i, j in CONFLICT["cl"]))
    code = main(["check", str(d), "-c", str(c), "-k", "3", "--sizes", "2,2,2"])
    out = capsys.readouterr()
    assert code == 3, out.err
    assert "conflict" in out.err and "(0, 1)" in out.err
    code = main(["check", str(d), "-c", str(c), "-k", "3", "--size-max", "3"])
    assert code == 0, capsys.readouterr().err


def test_time_limit_gives_unknown():
    res = check_instance(_conflict(), time_limit=0.0, method="ilp")
    assert res.feasible is None and res.reason == "time_limit"


# ------------------------------------------------------------------ the assignment engine
def _enumerate(costs, cl, counts, kw):
    """The least cost over all k^s labellings meeting pairs and sizes (inf: none)."""
    s, k = costs.shape
    best = math.inf
    for lab in itertools.product(range(k), repeat=s):
        lab = np.array(lab)
        if len(set(lab.tolist())) != k or any(lab[i] == lab[j] for i, j in cl):
            continue
        c = np.bincount(lab, weights=counts, minlength=k)
        if "sizes" in kw and sorted(c) != sorted(kw["sizes"]):
            continue
        lo, hi = kw.get("size_bounds", (None, None))
        if (lo is not None and c.min() < lo) or (hi is not None and c.max() > hi):
            continue
        best = min(best, float(costs[np.arange(s), lab].sum()))
    return best


@pytest.mark.parametrize("with_cl", [False, True])
def test_engine_with_sizes_against_enumeration(with_cl):
    """(c) the flow and the MILP agree with enumeration; groups of several points too."""
    rng = np.random.default_rng(11 + with_cl)
    paths = set()
    for _ in range(70):
        s = int(rng.integers(3, 8))
        k = int(rng.integers(2, min(4, s) + 1))
        pts, C = rng.normal(size=(s, 2)), rng.normal(size=(k, 2))
        counts = np.ones(s, dtype=np.int64) if rng.random() < 0.6 else rng.integers(1, 4, s)
        n = int(counts.sum())
        cl = np.array(sorted({tuple(sorted(p)) for p in _pairs(rng, s, 3)}) if with_cl
                      else [], dtype=np.int64).reshape(-1, 2)
        if rng.random() < 0.5:
            kw = {"sizes": [int(v) for v in _size_kw_exact(rng, n, k)]}
        else:
            kw = {"size_bounds": (int(rng.integers(1, n // k + 1)),
                                  int(rng.integers(-(-n // k), n + 1)))}
        w = counts.astype(float)
        ref = _enumerate(assignment_costs(pts, w, C), cl.tolist(), counts, kw)
        # the flow, the fixed-size MILP per arrangement of the sizes, the size-choice MILP
        for flow, perms in ((True, 24), (False, 24), (False, 1)):
            eng = AssignmentEngine(pts, w, cl, k, counts=counts, flow=flow,
                                   size_permutations=perms, **kw)
            a = eng.solve(C)
            paths.add((eng.method, eng.sized.perms is None))
            if ref == math.inf:
                assert a.status == "infeasible" and a.labels is None
                continue
            assert a.status == "optimal" and a.cost == pytest.approx(ref, rel=1e-9, abs=1e-9)
            assert eng.sized.ok(a.labels) and not np.any(a.labels[cl[:, 0]] == a.labels[cl[:, 1]])
            assert (eng.method == "flow") == (flow and not with_cl and bool(np.all(counts == 1)))
    assert ("highs", False) in paths and ("highs", True) in paths
    if not with_cl:
        assert ("flow", False) in paths


def _size_kw_exact(rng, n, k):
    cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    return np.diff(np.r_[0, cuts, n])


def test_engine_warm_start_must_meet_the_sizes():
    rng = np.random.default_rng(0)
    pts, C = rng.normal(size=(6, 2)), rng.normal(size=(2, 2))
    eng = AssignmentEngine(pts, np.ones(6), [(0, 1)], 2, sizes=[4, 2])
    bad_warm = np.array([0, 1, 0, 1, 0, 1])  # sizes 3, 3
    a = eng.solve(C, warm=bad_warm)
    assert a.status == "optimal" and sorted(np.bincount(a.labels)) == [2, 4]
    b = eng.solve(C, warm=a.labels)
    assert b.cost == pytest.approx(a.cost)


def test_engine_without_sizes_is_unchanged():
    """(d) no sizes: the same methods and answers as before."""
    rng = np.random.default_rng(3)
    inst = make_instance(rng.normal(size=(12, 2)), 3, ml=[(0, 1)], cl=[(2, 3), (4, 5)])
    p = Problem.from_instance(inst)
    eng = AssignmentEngine.from_problem(p)
    assert eng.sized is None and eng.method == "highs"
    ref = AssignmentEngine(p.centroids, p.e, p.cl, 3)
    C = rng.normal(size=(3, 2))
    np.testing.assert_array_equal(eng.solve(C).labels, ref.solve(C).labels)
    assert AssignmentEngine(p.centroids, p.e, np.empty((0, 2)), 3).method == "matching"


def test_from_problem_takes_the_sizes_only_for_k_clusters():
    inst = make_instance(_X(8), 3, ml=[(0, 1)], size_max=3)
    p = Problem.from_instance(inst)
    eng = AssignmentEngine.from_problem(p)
    assert eng.sized is not None and list(eng.sized.counts) == list(p.counts)
    assert AssignmentEngine.from_problem(p, k=2).sized is None
    assert AssignmentEngine.from_problem(p, sizes=False).sized is None


# ------------------------------------------------------------------ heuristics
HEURISTICS = ["ipc-kmeans", "s-mdeclust", "blpkm-cc", "cop-kmeans", "repair"]


@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristics_never_return_a_size_violating_clustering(name):
    rng = np.random.default_rng(4)
    found = 0
    opts = {"s-mdeclust": {"P": 4, "N_max": 20}}.get(name, {})
    for _ in range(12):
        X, k, ml, cl, kw = _case(rng, n_max=9, k_max=3)
        inst = make_instance(X, k, ml, cl, **kw)
        opt, _ = brute_force(X, k, ml, cl, **kw)
        try:
            p = Problem.from_instance(inst)
        except InfeasibleError:
            continue
        res = run_heuristic(name, p, seed=0, time_limit=10, **opts)
        if res.status == "found":
            found += 1
            assert inst.sizes_ok(res.labels), res.labels
            assert res.objective >= opt - 1e-9
        elif res.status == "infeasible":
            assert opt == math.inf, res.message
    if name in ("ipc-kmeans", "s-mdeclust", "blpkm-cc"):
        assert found


@pytest.mark.parametrize("name", ["ipc-kmeans", "blpkm-cc", "s-mdeclust"])
def test_exact_assignment_heuristics_prove_size_infeasibility(name):
    res = run_heuristic(name, Problem.from_instance(_conflict()), seed=0, time_limit=10)
    assert res.status == "infeasible", res.message


def test_run_heuristic_rejects_broken_sizes():
    def bad(problem, Z, rng, deadline, **kw):
        return HeuristicResult(status="found", labels=np.arange(problem.n) % problem.k)

    register_heuristic("test-sizes-bad", bad, replace=True)
    inst = make_instance(_X(6), 2, sizes=[4, 2])
    res = run_heuristic("test-sizes-bad", Problem.from_instance(inst))
    assert res.status == "no_solution" and "size" in res.stats["rejected"]
    assert res.labels is None


def test_repair_says_when_it_misses_the_sizes():
    inst = make_instance(_X(6), 2, sizes=[5, 1])
    res = run_heuristic("repair", Problem.from_instance(inst), seed=0,
                        labels=np.array([0, 0, 0, 1, 1, 1]))
    assert res.status == "no_solution" and "size constraints" in res.message


# ------------------------------------------------------------------ the node
def _clustering_matrix(labels, e):
    labels = np.asarray(labels)
    m = np.bincount(labels, weights=e)
    return np.where(labels[:, None] == labels[None, :], 1.0 / m[labels][:, None], 0.0)


def test_clustering_from_Z_checks_the_sizes():
    X = np.arange(6, dtype=float)[:, None]
    labels = np.array([0, 0, 0, 1, 1, 1])
    p = Problem.from_instance(make_instance(X, 2, sizes=[4, 2]))
    assert clustering_from_Z(_clustering_matrix(labels, p.e), p) is None
    p2 = Problem.from_instance(make_instance(X, 2, sizes=[3, 3]))
    assert clustering_from_Z(_clustering_matrix(labels, p2.e), p2) is not None


def test_leaf_that_misses_the_sizes_is_infeasible():
    # s = k = 2 after the must-link closure: groups of 4 and 2 points, sizes 3, 3
    inst = make_instance(_X(6), 2, ml=[(0, 1), (1, 2), (2, 3), (4, 5)], size_max=3)
    p = Problem.from_instance(inst)
    assert p.s == 2
    ctx = Context(math.inf, None, SolverOptions(seed=0).checked(), is_root=True)
    out = process_node(NodeData(p), ctx)
    assert out.bound == math.inf and out.solution is None
    ok = Problem.from_instance(make_instance(_X(6), 2, ml=[(0, 1), (1, 2), (4, 5)],
                                             size_max=4))
    assert ok.s == 3  # not a leaf; with s == k the one clustering is evaluated
    leaf = Problem.from_instance(make_instance(_X(6), 2, ml=[(0, 1), (1, 2), (3, 4), (4, 5)],
                                               sizes=[3, 3]))
    out2 = process_node(NodeData(leaf), Context(math.inf, None,
                                                SolverOptions(seed=0).checked(), is_root=True))
    assert out2.bound < math.inf and inst.sizes_ok(out2.solution)
