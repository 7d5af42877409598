"""Constrained k-center (pcsos.kcenter): brute-force checks on tiny instances, the RDS
subroutine against Hall's theorem, the maximal-matching counterexample, errors and limits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import random_instance
from scipy.spatial.distance import cdist

from pcsos.errors import InfeasibleError, InputError
from pcsos.kcenter import clique_cover, kcenter_centres, max_rds, rds_from_matching, solve
from pcsos.problem import Problem, make_instance, pairs_satisfied

# ----------------------------------------------------------------------------- references


def brute_kcenter(X, k, ml=(), cl=()) -> float:
    """Optimal constrained k-center radius by enumeration (inf when infeasible).

    Definition used (the paper's): centres are data points, every point p is sent to a
    centre sigma(p) (at most k distinct centres), ML pairs share and CL pairs differ in
    sigma; the radius is max_p d(p, sigma(p)). Enumerates k-subsets S of the points and
    every labelling in {0..k-1}^n that obeys the pairs (labels need not all be used).
    """
    X = np.asarray(X, dtype=float)
    n = len(X)
    D = cdist(X, X)
    L = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)
    ok = np.ones(len(L), dtype=bool)
    for i, j in ml:
        ok &= L[:, i] == L[:, j]
    for i, j in cl:
        ok &= L[:, i] != L[:, j]
    L = L[ok]
    if len(L) == 0:
        return float("inf")
    best = float("inf")
    rows = np.arange(n)
    for S in itertools.combinations(range(n), k):
        cost = D[rows, np.asarray(S)[L]].max(axis=1)
        best = min(best, float(cost.min()))
    return best


def hall_deficiency(adj: np.ndarray) -> int:
    """max over row subsets S of |S| - |N(S)| (>= 0), by enumeration."""
    ny = adj.shape[0]
    best = 0
    for r in range(1, ny + 1):
        for S in itertools.combinations(range(ny), r):
            best = max(best, r - int(adj[list(S)].any(axis=0).sum()))
    return best


def check_result(X, k, ml, cl, res):
    """Properties every returned clustering must have, recomputed from the output."""
    n = len(X)
    assert res.labels.shape == (n,)
    assert pairs_satisfied(res.labels, np.reshape(ml, (-1, 2)), np.reshape(cl, (-1, 2)))
    nclu = len(res.centers)
    assert nclu <= k
    assert set(np.unique(res.labels)) == set(range(nclu))  # no empty cluster
    d = np.linalg.norm(np.asarray(X, float) - np.asarray(X, float)[res.centers[res.labels]],
                       axis=1)
    assert res.radius == pytest.approx(d.max(), rel=1e-12, abs=1e-12)
    assert 0 <= res.lower_bound <= res.radius * (1 + 1e-9)


def labelled_constraints(rng, classes, m):
    """All pairs among m labelled points: ML within a class, CL across (the usual data)."""
    idx = rng.choice(len(classes), size=m, replace=False)
    ml, cl = [], []
    for a, b in itertools.combinations(idx, 2):
        (ml if classes[a] == classes[b] else cl).append((int(a), int(b)))
    return ml, cl

# ----------------------------------------------------------------------------- RDS


def test_maximal_matching_misses_rds():
    # Y = {y0, y1, y2}, C = {c0, c1, c2}; y0 ~ all, y1 ~ c0, y2 ~ c0.
    adj = np.array([[1, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=bool)
    maximal = np.array([0, -1, -1])  # {y0-c0}: no edge has both ends free, so maximal
    free_y = maximal < 0
    free_c = ~np.isin(np.arange(3), maximal[maximal >= 0])
    assert not adj[np.ix_(free_y, free_c)].any()
    # the paper's Alg. 2 with this maximal matching reports "no RDS" ...
    yp, cp = rds_from_matching(adj, maximal)
    assert len(yp) == 0
    # ... although {y1, y2} has the single neighbour c0 (a Hall violator)
    assert hall_deficiency(adj) == 1
    yp, cp = max_rds(adj)
    assert set(yp) == {1, 2} and set(cp) == {0}


def test_max_rds_matches_hall_deficiency():
    rng = np.random.default_rng(1)
    for _ in range(300):
        ny, nc = rng.integers(1, 6), rng.integers(0, 6)
        adj = rng.random((ny, nc)) < rng.uniform(0.1, 0.7)
        yp, cp = max_rds(adj)
        deficiency = hall_deficiency(adj)
        assert len(yp) - len(cp) == deficiency
        if deficiency:
            # C' is exactly the neighbourhood of Y'
            assert set(cp) == set(np.nonzero(adj[yp].any(axis=0))[0])

# ----------------------------------------------------------------------------- cover


def test_clique_cover_partitions_into_cliques():
    rng = np.random.default_rng(2)
    for _ in range(50):
        s = int(rng.integers(2, 12))
        edges = np.array([(a, b) for a, b in itertools.combinations(range(s), 2)
                          if rng.random() < 0.4], dtype=np.int64).reshape(-1, 2)
        cliques, unc = clique_cover(s, edges)
        es = {tuple(e) for e in edges.tolist()}
        seen = np.concatenate(cliques) if cliques else np.empty(0, int)
        assert len(seen) == len(set(seen.tolist()))  # disjoint
        assert set(seen.tolist()) == set(edges.ravel().tolist())  # covers every CL vertex
        inside = set()
        for Y in cliques:
            for a, b in itertools.combinations(Y.tolist(), 2):
                assert (a, b) in es
                inside.add((a, b))
        assert {tuple(e) for e in unc.tolist()} == es - inside

# ----------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("seed", range(12))
def test_labelled_constraints_within_two_of_optimum(seed):
    """The usual data (all pairs among labelled points): one CL clique, exact guarantee."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(6, 10)), int(rng.integers(2, 4))
    classes = rng.integers(0, k, size=n)
    X = rng.normal(size=(n, 2)) + classes[:, None] * 1.5
    ml, cl = labelled_constraints(rng, classes, int(rng.integers(2, n)))
    opt = brute_kcenter(X, k, ml, cl)
    res = solve(X, k, ml, cl)
    check_result(X, k, ml, cl, res)
    assert res.stats["cover_exact"]
    assert res.status == "solved"
    assert res.radius >= opt * (1 - 1e-12)
    assert res.radius <= 2 * opt * (1 + 1e-8)
    assert res.lower_bound <= opt * (1 + 1e-12)
    assert len(res.centers) == k


@pytest.mark.parametrize("seed", range(20))
def test_random_pairs_against_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(5, 10)), int(rng.integers(2, 4))
    X, ml, cl = random_instance(rng, n, d=2, n_ml=int(rng.integers(0, 3)),
                                n_cl=int(rng.integers(0, 6)))
    opt = brute_kcenter(X, k, ml, cl)
    if not np.isfinite(opt):
        with pytest.raises(InfeasibleError):
            solve(X, k, ml, cl)
        return
    for search in ("exact", "bisect"):
        res = solve(X, k, ml, cl, search=search, seed=seed)
        check_result(X, k, ml, cl, res)
        assert res.status == "solved"
        assert res.lower_bound <= opt * (1 + 1e-12)
        assert res.radius >= opt * (1 - 1e-12)
        if res.stats["cover_exact"]:
            slack = 1e-8 if search == "exact" else 1e-4 + 1e-8
            assert res.radius <= 2 * opt * (1 + slack)


def test_exact_bound_certifies_ratio_two():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4))
    classes = rng.integers(0, 5, size=300)
    ml, cl = labelled_constraints(rng, classes, 30)
    res = solve(X, 5, ml, cl)
    check_result(X, 5, ml, cl, res)
    assert res.status == "solved" and res.stats["search"] == "exact"
    assert res.radius <= 2 * res.lower_bound * (1 + 1e-8)
    bis = solve(X, 5, ml, cl, search="bisect", rtol=1e-3)
    check_result(X, 5, ml, cl, bis)
    # both bounds are valid, so neither may exceed the other's feasible radius
    assert bis.lower_bound <= res.radius and res.lower_bound <= bis.radius
    assert bis.radius <= 2 * bis.lower_bound / (1 - 1e-3) * (1 + 1e-8)

# ----------------------------------------------------------------------------- errors, limits


def test_errors():
    X = np.arange(10.0).reshape(5, 2)
    with pytest.raises(InputError):
        solve(X, 0)
    with pytest.raises(InputError):
        solve(X, 2, cl=[(0, 7)])
    with pytest.raises(InfeasibleError) as ei:
        solve(X, 2, ml=[(0, 1), (1, 2)], cl=[(0, 2)])
    assert ei.value.reason == "ml_cl_conflict"
    with pytest.raises(InfeasibleError) as ei:
        solve(X, 3, cl=[(a, b) for a, b in itertools.combinations(range(4), 2)])
    assert ei.value.reason == "cl_clique" and len(ei.value.pairs) == 6
    with pytest.raises(InputError):
        solve(X, 2, search="nope")
    # before: raw TypeErrors deep in the search, or a negative MILP limit accepted
    for name, bad in (("max_runs", "5"), ("rtol", "0.1"), ("exact_max_n", "a"),
                      ("milp_time_limit", -1), ("refine", "no")):
        with pytest.raises(InputError, match=f"^{name}: {name} must"):
            solve(X, 2, **{name: bad})


def test_run_limit_and_determinism():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    res = solve(X, 6, max_runs=3)
    assert res.status == "run_limit" and res.stats["runs"] == 3
    check_result(X, 6, [], [], res)
    a = solve(X, 6, cl=[(0, 1), (2, 3)], seed=5)
    b = solve(X, 6, cl=[(0, 1), (2, 3)], seed=5)
    assert np.array_equal(a.labels, b.labels) and a.radius == b.radius


def test_kcenter_centres_for_heuristics():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3)) + 5.0
    classes = rng.integers(0, 3, size=60)
    ml, cl = labelled_constraints(rng, classes, 12)
    prob = Problem.from_instance(make_instance(X, 3, ml, cl))
    C = kcenter_centres(prob, seed=0)
    assert C.shape == (3, 3)
    # centred coordinates: the means of a partition of the centred data
    assert abs(C.mean()) < 5.0
    P = kcenter_centres(prob, seed=0, means=False)
    Xc = X - X.mean(axis=0)
    assert all(np.any(np.all(np.isclose(Xc, p), axis=1)) for p in P)


def test_no_pairwise_matrix_for_bisect(monkeypatch):
    """Bisection mode never calls pdist (the n x n candidate set is the exact mode's)."""
    import pcsos.kcenter.solver as sv

    def boom(*a, **k):
        raise AssertionError("pdist called")

    monkeypatch.setattr(sv, "pdist", boom)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 3))
    res = solve(X, 4, cl=[(0, 1), (1, 2), (0, 2)], search="bisect", rtol=1e-2)
    check_result(X, 4, [], [(0, 1), (1, 2), (0, 2)], res)


def test_not_k_colourable_without_big_clique():
    """An odd wheel (5-cycle + hub) needs 4 colours but has no K4: the clique cover leaves
    pairs uncovered and the assignment MILP proves infeasibility for k = 3."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(8, 2))
    cl = [(i, (i + 1) % 5) for i in range(5)] + [(i, 5) for i in range(5)]
    assert brute_kcenter(X, 3, (), cl) == float("inf")
    with pytest.raises(InfeasibleError) as ei:
        solve(X, 3, cl=cl)
    assert ei.value.reason == "not_k_colourable"
    res = solve(X, 4, cl=cl)  # 4 colours suffice
    check_result(X, 4, [], cl, res)
    assert not res.stats["cover_exact"]


def test_repair_of_pairs_outside_the_cover():
    """Random cannot-link graphs that are not disjoint cliques: the repair MILP runs and
    the result still satisfies every pair, with a valid lower bound."""
    repaired = 0
    for seed in range(15):
        rng = np.random.default_rng(500 + seed)
        X = rng.normal(size=(8, 2))
        cl = [(int(a), int(b)) for a, b in itertools.combinations(range(8), 2)
              if rng.random() < 0.3]
        opt = brute_kcenter(X, 3, (), cl)
        if not np.isfinite(opt):
            continue
        res = solve(X, 3, cl=cl)
        check_result(X, 3, [], cl, res)
        assert res.lower_bound <= opt * (1 + 1e-12) and res.radius >= opt * (1 - 1e-12)
        repaired += res.stats["repaired"] != "no"
    assert repaired >= 3


def test_degenerate_inputs():
    res = solve([[1.0, 2.0]], 1)
    assert res.radius == 0 and res.lower_bound == 0 and res.centers.tolist() == [0]
    X = np.zeros((5, 2))  # duplicates: radius 0, distinct centre points
    for k in (2, 5):
        res = solve(X, k)
        check_result(X, k, [], [], res)
        assert len(set(res.centers.tolist())) == k and res.radius == 0
    X = np.arange(6.0)[:, None]  # one must-link group: one cluster, r* = 3
    ml = [(i, i + 1) for i in range(5)]
    for search in ("exact", "bisect"):
        res = solve(X, 3, ml=ml, search=search)
        check_result(X, 3, ml, [], res)
        assert res.radius == 3.0 and res.lower_bound <= 3.0
        # exact: r* is a pairwise distance; bisection only knows r* >= diameter / 2
        assert res.lower_bound >= (3.0 if search == "exact" else 2.5 * (1 - 1e-8))


def test_centres_feed_ipc_kmeans():
    """The documented hand-over to the MSSC heuristics (skips if they are not there)."""
    heur = pytest.importorskip("pcsos.heuristics")
    if not hasattr(heur, "run_heuristic"):
        pytest.skip("pcsos.heuristics.run_heuristic not available")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 3)) + 5.0
    ml, cl = [(0, 1)], [(2, 3), (3, 4)]
    prob = Problem.from_instance(make_instance(X, 3, ml, cl))
    C = kcenter_centres(prob, seed=0, original=True)
    res = heur.run_heuristic("ipc-kmeans", prob, seed=0, centres=C, n_init=1)
    assert res.status == "found"
    assert pairs_satisfied(res.labels, np.array(ml), np.array(cl))


def test_the_cannot_link_repair_stays_within_the_runs_time_limit(monkeypatch):
    # the repair MILP had a fixed 60 s whatever the run's limit (a 5 s run took 62 s)
    import pcsos.kcenter.solver as ks

    seen = []
    real = ks._repair

    def spy(E, lab, scl, time_limit):
        seen.append(time_limit)
        return real(E, lab, scl, time_limit)

    monkeypatch.setattr(ks, "_repair", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    cl = [(int(a), int(b)) for a, b in rng.integers(0, 60, size=(80, 2)) if a != b]
    ks.solve(X, 6, cl=cl, time_limit=4.0, seed=0)
    assert seen and all(t <= 4.0 for t in seen), seen


def test_statuses_name_what_stopped_the_search(monkeypatch):
    import pcsos.kcenter.solver as ks

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 2))
    # a spent limit: the first (largest) threshold runs, then the search stops
    res = solve(X, 5, time_limit=0.0, search="bisect")
    assert res.status == "time_limit" and res.success
    assert res.message.startswith("stopped at the time limit")
    check_result(X, 5, [], [], res)
    # a repair that finds no assignment leaves broken pairs: not a success, and they are listed
    cl = [(int(a), int(b)) for a, b in rng.integers(0, 300, size=(200, 2)) if a != b]
    monkeypatch.setattr(ks, "_repair", lambda E, lab, scl, time_limit: "none")
    res = solve(X, 5, cl=cl, seed=0, max_runs=5)
    assert res.stats["uncovered_cl_pairs"] and res.stats["violated"]  # the repair was needed
    assert res.status == "repair_failed" and not res.success
    assert res.message.startswith("cannot-link repair found no feasible assignment")
