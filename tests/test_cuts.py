"""Validity of the separated and inherited cuts (acceptance 1), and the separation wrappers.

The clustering matrices are built here from their definition (Z_ij = 1/|C| when super-points
i and j share cluster C, |C| counting original points), independently of the code under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import feasible_partitions
from conftest import planted_pairs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcsos.bounds import SDPModel
from pcsos.bounds.cutset import CLIQUE, PAIR, TRIANGLE, CutSet
from pcsos.cuts.loop import CuttingPlaneSettings, inherit_cuts, inherit_cuts_map
from pcsos.cuts.separation import (
    clique_rhs,
    cut_keys,
    parse_families,
    separate,
    separate_cliques,
    separate_pairs,
    separate_stars,
    separate_triangles,
    top_k,
)
from pcsos.problem import Problem, make_instance

TOL = 1e-12


def clustering_matrix(labels, e) -> np.ndarray:
    """Z_ij = 1/|C| (|C| = sum of the sizes e in C) when labels agree, else 0."""
    labels = np.asarray(labels)
    e = np.asarray(e, dtype=float)
    size = {h: e[labels == h].sum() for h in np.unique(labels)}
    same = labels[:, None] == labels[None, :]
    return np.where(same, np.array([size[h] for h in labels])[:, None] ** -1.0, 0.0)


def all_cuts(Z, k, n, seed=0) -> CutSet:
    """Every cut of each family that the separators report on Z (no cap, no selection)."""
    big = max(1, len(Z) ** 3)  # more than the number of candidate cuts: no cap
    return separate(Z, k=k, n=n, eps=-np.inf, families="all,star",
                    caps={"pair": big, "triangle": big, "star": big},
                    fracs={"pair": 1.0, "triangle": 1.0, "clique": 1.0, "star": 1.0},
                    seed=seed).cuts


@st.composite
def clustered(draw):
    """A random feasible clustering: s super-points of random sizes in k non-empty clusters."""
    s = draw(st.integers(1, 8))
    k = draw(st.integers(1, s))
    e = np.array(draw(st.lists(st.integers(1, 6), min_size=s, max_size=s)), dtype=float)
    rest = draw(st.lists(st.integers(0, k - 1), min_size=s - k, max_size=s - k))
    perm = draw(st.permutations(range(s)))
    labels = np.array(list(range(k)) + rest)[list(perm)]
    return s, k, e, labels


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clustered(), st.integers(0, 2**32 - 1))
def test_separated_cuts_never_cut_off_a_clustering(case, seed):
    s, k, e, labels = case
    n = int(e.sum())
    Z = clustering_matrix(labels, e)
    # 1. separating on the clustering itself finds nothing violated by more than rounding
    res = separate(Z, k=k, n=n, eps=TOL, families="all,star",
                   caps={"pair": 10**6, "triangle": 10**6}, fracs={"pair": 1.0, "triangle": 1.0},
                   seed=seed)
    assert res.cuts.m == 0, res
    # 2. cuts separated from an arbitrary symmetric matrix hold on the clustering
    rng = np.random.default_rng(seed)
    A = rng.random((s, s)) / max(1.0, e.min())
    cuts = all_cuts((A + A.T) / 2, k, n, seed)
    assert np.all(cuts.violation(Z) <= TOL)


def test_every_clique_of_k_plus_1_holds_on_every_clustering():
    rng = np.random.default_rng(3)
    for _ in range(30):
        s = int(rng.integers(2, 8))
        k = int(rng.integers(1, s))
        e = rng.integers(1, 5, s).astype(float)
        n = int(e.sum())
        Q = np.array(list(itertools.combinations(range(s), k + 1)))
        cuts = CutSet.cliques(Q, clique_rhs(n, k))
        for lab in feasible_partitions(s, k):
            assert np.all(cuts.violation(clustering_matrix(lab, e)) <= TOL)


def test_every_star_holds_on_every_clustering_and_some_are_tight():
    """Z_ii + sum_{j<h in T} Z_jh - sum_{j in T} Z_ij >= 0 for every apex i and every T of
    3 or 4 other super-points, on every clustering (super-points of random sizes); a T with
    one or two points in i's cluster and the rest apart makes it an equality."""
    rng = np.random.default_rng(5)
    tight = 0
    for _ in range(25):
        s = int(rng.integers(4, 8))
        k = int(rng.integers(1, s))
        e = rng.integers(1, 5, s).astype(float)
        apex, leaves = [], []
        for i in range(s):
            others = [j for j in range(s) if j != i]
            for t in (3, 4):
                for T in itertools.combinations(others, t):
                    apex.append(i)
                    leaves.append(T)
        cuts = [CutSet.stars([a for a, T in zip(apex, leaves) if len(T) == t],
                             [T for T in leaves if len(T) == t]) for t in (3, 4)]
        for lab in feasible_partitions(s, k):
            Z = clustering_matrix(lab, e)
            for c in cuts:
                lhs = c.apply(Z)
                assert np.all(lhs >= -TOL)
                tight += int(np.sum(np.abs(lhs) <= TOL))
    assert tight > 0


def test_star_separation_finds_a_hand_built_violation():
    """Apex 0 tied to three mutually unrelated points: the star on {1, 2, 3} is violated by
    3 * 0.18 - 0.3 = 0.24 (its triangles by only 0.06), and the separator reports it first."""
    Z = np.eye(6) * 0.3
    for j in (1, 2, 3):
        Z[0, j] = Z[j, 0] = 0.18
    fc = separate_stars(Z, eps=1e-6)
    assert fc.cuts.m >= 1
    first = fc.cuts.select([0])
    assert first.i[0] == 0 and sorted(set(first.i) | set(first.j)) == [0, 1, 2, 3]
    assert fc.violation[0] == pytest.approx(0.24)
    assert first.apply(Z)[0] == pytest.approx(-0.24)
    assert separate_stars(Z, eps=0.25).cuts.m == 0


def test_star_leaves_caps_the_leaves_separate_and_the_loop_take():
    """Apex 0 tied to four mutually unrelated points: with four leaves the star on all four
    is the most violated (4 * 0.18 - 0.3 = 0.42); with ``star_leaves=3`` no cut has more than
    three leaves (4 entries of Z's upper triangle on the apex's row and 3 among the leaves)."""
    Z = np.eye(7) * 0.3
    for j in (1, 2, 3, 4):
        Z[0, j] = Z[j, 0] = 0.18
    kw = dict(k=3, n=7, families="star", eps=1e-6)
    four = separate(Z, **kw).cuts
    assert np.max(np.diff(four.indptr)) == 11
    three = separate(Z, star_leaves=3, **kw).cuts
    assert three.m >= 1 and np.max(np.diff(three.indptr)) == 7
    assert CuttingPlaneSettings(star_leaves=3).star_leaves == 3
    for bad in (2, 3.0, True):
        with pytest.raises(ValueError, match="star_leaves"):
            CuttingPlaneSettings(star_leaves=bad)


def _problem(rng, n, k, n_ml, n_cl):
    """A random feasible instance: pairs drawn from a hidden labelling."""
    X = rng.normal(size=(n, 2))
    hidden = rng.permutation(np.r_[np.arange(k), rng.integers(0, k, n - k)])
    ml, cl = planted_pairs(rng, hidden, n_ml, n_cl)
    return Problem.from_instance(make_instance(X, k, ml, cl)), hidden


def _child_clusterings(child: Problem, ml, cl):
    """Clustering matrices, in the child's super-points, of every clustering of the original
    points that obeys ``ml`` and ``cl`` (the parent's pairs and the branching decision,
    written on the original points: not read off the child the code under test built).
    Each must keep the child's super-points whole, and their masses must be their points'."""
    pl = child.point_labels
    np.testing.assert_array_equal(child.e, np.bincount(pl, minlength=child.s))
    for lab in feasible_partitions(child.n, child.k, ml, cl):
        sp = np.full(child.s, -1, dtype=np.int64)
        sp[pl] = lab
        assert np.array_equal(sp[pl], lab), "a child super-point splits a clustering"
        yield clustering_matrix(sp, child.e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(5, 8), st.integers(2, 4), st.integers(0, 2),
       st.integers(0, 3), st.booleans())
def test_inherited_cuts_stay_valid_for_every_child_clustering(seed, n, k, n_ml, n_cl, ml_child):
    rng = np.random.default_rng(seed)
    k = min(k, n - 1)
    parent, hidden = _problem(rng, n, k, n_ml, n_cl)
    if parent.s < 2:
        return
    # cuts valid for the parent, separated from an arbitrary matrix so that there are many
    A = rng.random((parent.s, parent.s)) / 3
    cuts = all_cuts((A + A.T) / 2, parent.k, parent.n, seed)
    # a branching pair that admits a feasible child
    sl = np.zeros(parent.s, dtype=np.int64)
    sl[parent.point_labels] = hidden
    pairs = [(i, j) for i in range(parent.s) for j in range(i + 1, parent.s)
             if (sl[i] == sl[j]) == ml_child]
    if not pairs:
        return
    i, j = pairs[rng.integers(len(pairs))]
    child = parent.merge(i, j) if ml_child else parent.add_cl(i, j)
    ia = int(np.flatnonzero(parent.point_labels == i)[0])
    ib = int(np.flatnonzero(parent.point_labels == j)[0])
    ml0 = [tuple(map(int, p)) for p in parent.instance.ml]
    cl0 = [tuple(map(int, p)) for p in parent.instance.cl]
    ml_c, cl_c = (ml0 + [(ia, ib)], cl0) if ml_child else (ml0, cl0 + [(ia, ib)])
    inherited, cut_map = inherit_cuts_map(cuts, child)
    assert inherited.m <= cuts.m and len(cut_map) == cuts.m
    # every child cut comes from a parent cut, numbered in order of first appearance
    mapped = cut_map[cut_map >= 0]
    assert set(mapped.tolist()) == set(range(inherited.m))
    firsts = [int(np.argmax(cut_map == c)) for c in range(inherited.m)]
    assert firsts == sorted(firsts)
    if not ml_child and child.s == parent.s:
        assert inherited is cuts
    checked = 0
    for Zc in _child_clusterings(child, ml_c, cl_c):
        assert np.all(inherited.violation(Zc) <= TOL)
        checked += 1
    assert checked > 0  # the child is feasible by construction


def test_inherit_merge_reindexes_and_drops_cancelled_pairs():
    rng = np.random.default_rng(0)
    parent, _ = _problem(rng, 6, 3, 0, 0)
    cuts = CutSet.pairs([0, 2], [1, 3]).concat(CutSet.triangles([4], [0], [1]))
    child = parent.merge(0, 1)
    out, cut_map = inherit_cuts_map(cuts, child)
    # Z_00 - Z_01 >= 0 becomes 0 >= 0 (dropped); (2, 3) -> (1, 2); triangle 4|0,1 -> 3|0,0
    np.testing.assert_array_equal(cut_map, [-1, 0, 1])
    assert out.counts() == {"pair": 1, "triangle": 1, "clique": 0, "star": 0}
    Z = rng.random((5, 5))
    Z = Z + Z.T
    np.testing.assert_allclose(out.apply(Z), [Z[1, 1] - Z[1, 2], Z[3, 3] + Z[0, 0] - 2 * Z[0, 3]])
    assert inherit_cuts(cuts, parent.add_cl(2, 5)) is cuts


def test_merged_duplicate_cuts_carry_the_sum_of_their_multipliers():
    """A must-link child's dual point is exactly the parent's mapped one: B'^* u' = P^T B^* u P
    even where two parent cuts became one (their multipliers add up), so the child's dual
    slack, dual value and safe bound are those of the parent's point."""
    from pcsos.bounds import SDPModel, WarmStart, dual_slack, safe_lower_bound

    rng = np.random.default_rng(4)
    parent, _ = _problem(rng, 7, 3, 0, 0)
    # triangles 2|0,3 and 2|1,3 (apex 2) coincide once 0 and 1 merge
    cuts = CutSet.triangles([2, 2, 4], [0, 1, 0], [3, 3, 5])
    child = parent.merge(0, 1)
    out, cut_map = inherit_cuts_map(cuts, child)
    assert out.m == 2 and cut_map.tolist() == [0, 0, 1]
    u = np.array([0.3, 0.5, 0.2])
    y = rng.normal(size=parent.s + 1)
    N = np.abs(rng.normal(size=(parent.s, parent.s)))
    N = N + N.T
    pm_ = SDPModel.from_problem(parent, cuts)
    from pcsos.bounds.result import SDPResult

    res = SDPResult(Z=np.eye(parent.s), y=y, y_cl=np.zeros(0), u=u, N=N, sdp_value=0.0,
                    dual_value=0.0, lower_bound=0.0, primal_residual=0.0, dual_residual=0.0,
                    iterations=0, seconds=0.0, status="solved", backend="test")
    ws = WarmStart.transfer(res, parent, child, cut_map=cut_map)
    np.testing.assert_allclose(ws.u, [0.8, 0.2])
    cm = SDPModel.from_problem(child, out)
    P = np.zeros((parent.s, child.s))
    P[np.arange(parent.s), child.parent_map] = 1.0
    S_parent = dual_slack(pm_, y, None, u, N, scaled=False)
    S_child = dual_slack(cm, ws.y, ws.y_cl, ws.u, ws.N, scaled=False)
    np.testing.assert_allclose(S_child, P.T @ S_parent @ P, atol=1e-12)
    # the child's Ky Fan set contains the parent's restricted to tied rows: never lower
    assert (safe_lower_bound(cm, ws.y, ws.y_cl, ws.u, ws.N)
            >= safe_lower_bound(pm_, y, None, u, N) - 1e-9)


# ------------------------------------------------------------------ wrappers


def test_wrappers_report_true_violations_and_select_the_most_violated():
    rng = np.random.default_rng(7)
    A = rng.random((30, 30))
    Z = (A + A.T) / 2
    for frac, fc in ((0.1, separate_pairs(Z, eps=1e-4, frac=0.1)),
                     (0.05, separate_triangles(Z, eps=1e-4, frac=0.05, seed=1)),
                     (1.0, separate_cliques(Z / 400, 3, 60, eps=1e-4))):
        assert fc.cuts.m > 0
        np.testing.assert_allclose(fc.cuts.violation(Z if fc.cuts.family[0] != CLIQUE
                                                     else Z / 400), fc.violation, atol=1e-12)
        assert np.all(fc.violation > 1e-4)
        assert np.all(np.diff(fc.violation) <= 0)  # most violated first
        assert fc.cuts.m == int(np.ceil(frac * fc.found))
    fam = separate(Z, k=3, n=60, families="pair,triangle", seed=0).cuts.family
    assert set(np.unique(fam)) == {PAIR, TRIANGLE}


def test_triangle_seed_reproducible_and_cap():
    rng = np.random.default_rng(2)
    A = rng.random((40, 40))
    Z = (A + A.T) / 2
    # "first": a seeded sample of the violated cuts
    a = separate_triangles(Z, cap=50, seed=3, collect="first")
    b = separate_triangles(Z, cap=50, seed=3, collect="first")
    c = separate_triangles(Z, cap=50, seed=4, collect="first")
    assert a.hit_cap and a.found == 50 and a.cuts.m == 50
    np.testing.assert_array_equal(a.cuts.i, b.cuts.i)
    assert not np.array_equal(a.cuts.i, c.cuts.i)
    # "most" (the default): the 50 most violated of the matrix, whatever the seed
    every = separate_triangles(Z, cap=10**7, seed=0)
    assert not every.hit_cap and every.found > 50
    for seed in (3, 4):
        m = separate_triangles(Z, cap=50, seed=seed)
        assert m.hit_cap and m.found == 50 and m.cuts.m == 50
        np.testing.assert_array_equal(m.violation, every.violation[:50])
        np.testing.assert_allclose(m.cuts.violation(Z), m.violation, atol=1e-12)
    with pytest.raises(ValueError, match="collect"):
        separate_triangles(Z, collect="best")


def test_top_k_and_families():
    v = np.array([0.1, 0.5, 0.5, 0.2])
    np.testing.assert_array_equal(top_k(v, 0.5), [1, 2])
    np.testing.assert_array_equal(top_k(v, 0.01), [1])  # ceil: at least one when any
    assert len(top_k(v, 0.0)) == 0
    with pytest.raises(ValueError):
        top_k(v, 1.5)
    assert parse_families("all") == ("pair", "triangle", "clique")
    assert parse_families("all,star") == ("pair", "triangle", "clique", "star")
    assert parse_families("none") == ()
    assert parse_families("clique,pair") == ("pair", "clique")
    with pytest.raises(ValueError):
        parse_families("square")
    with pytest.raises(ValueError):
        clique_rhs(3, 4)


def test_cut_keys_identify_reordered_cuts():
    a = CutSet.triangles([0], [1], [2])
    b = CutSet.triangles([0], [2], [1])  # the same inequality, entries stored differently
    c = CutSet.triangles([1], [0], [2])
    ka, kb, kc = cut_keys(a)[0], cut_keys(b)[0], cut_keys(c)[0]
    assert ka == kb and ka != kc


# ------------------------------------------------------------------ the loop


# the loop's bounds are valid whatever the SDP accuracy; capping iterations keeps tests short
FAST = {"max_iter": 2000}


def _tiny(seed, n=9, k=3, n_ml=1, n_cl=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) + rng.integers(0, 3, (n, 1)) * 1.5
    hidden = rng.permutation(np.r_[np.arange(k), rng.integers(0, k, n - k)])
    ml, cl = [], []
    while len(ml) < n_ml or len(cl) < n_cl:
        i, j = map(int, rng.choice(n, 2, replace=False))
        if hidden[i] == hidden[j] and len(ml) < n_ml:
            ml.append((i, j))
        elif hidden[i] != hidden[j] and len(cl) < n_cl:
            cl.append((i, j))
    return X, k, ml, cl


@pytest.mark.parametrize("seed", range(4))
def test_loop_bound_below_bruteforce_and_improving(seed):
    from bruteforce import brute_force

    from pcsos.cuts.loop import CP_FLAGS, cutting_plane_loop

    X, k, ml, cl = _tiny(seed)
    opt, _ = brute_force(X, k, ml, cl)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    res = cutting_plane_loop(prob, seed=seed, time_limit=10, bound_settings=FAST)
    lbs = [r.lower_bound for r in res.rounds]
    assert res.lower_bound == max(lbs)
    # every round's bound is valid for the node, not only the best one
    assert all(lb <= opt + 1e-9 * max(1.0, opt) for lb in lbs)
    # cuts help here: the plain Peng-Wei bound of round 1 leaves a gap of 3-11 % to the
    # brute-force optimum (instance property), and the rounds with cuts close at least
    # 90 % of it (they close it to ~1e-11 on all four seeds)
    assert res.n_rounds > 1 and res.cuts.m > 0
    assert opt - lbs[0] >= 1e-2 * opt
    assert res.lower_bound - lbs[0] >= 0.9 * (opt - lbs[0])
    assert res.flag in CP_FLAGS and res.message == CP_FLAGS[res.flag]
    assert res.iterations == sum(r.iterations for r in res.rounds)
    assert res.sdp is not None and res.sdp.Z.shape == (prob.s, prob.s)
    assert res.cuts.m == res.rounds[-1].cuts_in_model
    assert set(res.avg_added) == {"pair", "triangle", "clique", "star"}  # every family


def test_loop_settings_and_stops():
    from bruteforce import brute_force

    from pcsos.cuts.loop import (
        NO_CUT,
        PRUNED,
        ROUND_LIMIT,
        CuttingPlaneSettings,
        cutting_plane_loop,
    )

    X, k, ml, cl = _tiny(11, n=10, n_ml=0, n_cl=0)
    opt, _ = brute_force(X, k, ml, cl)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    kw = {"bound_settings": FAST}
    none = cutting_plane_loop(prob, settings=CuttingPlaneSettings(families="none"), **kw)
    assert none.flag == NO_CUT and none.n_rounds == 1 and none.cuts.m == 0
    one = cutting_plane_loop(prob, settings=CuttingPlaneSettings(max_rounds_root=1), **kw)
    assert one.n_rounds == 1 and one.flag in (ROUND_LIMIT, NO_CUT)
    child = cutting_plane_loop(prob, root=False,
                               settings=CuttingPlaneSettings(max_rounds_root=1,
                                                             max_rounds_child=2), **kw)
    assert child.n_rounds <= 2
    pruned = cutting_plane_loop(prob, upper_bound=opt * (1 + 1e-9),
                                settings=CuttingPlaneSettings(prune_tol=0.5), **kw)
    assert pruned.flag == PRUNED and pruned.n_rounds == 1
    seen = []
    cutting_plane_loop(prob, callback=lambda st: seen.append(st.round) or True, **kw)
    assert seen == [1]
    with pytest.raises(ValueError):
        CuttingPlaneSettings(fraction={"pair": 2.0})


def test_heuristic_rounds_are_the_powers_of_two():
    from pcsos.cuts.loop import heuristic_round

    assert [r for r in range(1, 70) if heuristic_round(r)] == [1, 2, 4, 8, 16, 32, 64]
    assert not heuristic_round(0)


def test_the_incumbent_hook_sees_those_rounds_and_the_loop_prunes_against_it():
    from bruteforce import brute_force

    from pcsos.cuts.loop import PRUNED, cutting_plane_loop

    X, k, ml, cl = _tiny(2)
    opt, _ = brute_force(X, k, ml, cl)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    seen = []

    def hook(res):
        seen.append(res.Z.shape)
        return opt  # what a heuristic on the round's Z could find

    # without an incumbent the loop runs until its cuts stall; with the optimum handed in
    # by the hook after round 1 it stops as soon as the bound is within prune_tol of it
    blind = cutting_plane_loop(prob, seed=0, time_limit=10, bound_settings=FAST)
    told = cutting_plane_loop(prob, seed=0, time_limit=10, bound_settings=FAST,
                              settings=CuttingPlaneSettings(prune_tol=1e-3), incumbent=hook)
    assert blind.flag != PRUNED
    assert told.flag == PRUNED and told.lower_bound >= opt * (1 - 1e-3)
    assert told.lower_bound <= opt + 1e-9 * opt
    # called after rounds 1, 2, 4, ... only, and not after one whose bound already prunes
    # against what the hook told it before, with a solution of the node's size
    known, best, expected = math.inf, -math.inf, 0
    for r in told.rounds:
        best = max(best, r.lower_bound)
        if r.round & (r.round - 1) == 0 and not best >= known * (1 - 1e-3):
            expected, known = expected + 1, opt
    assert told.rounds[-1].round > 1 and len(seen) == expected
    assert seen and all(shape == (prob.s, prob.s) for shape in seen)


def test_loop_on_children_with_inherited_cuts():
    from bruteforce import brute_force

    from pcsos.bounds import WarmStart
    from pcsos.cuts.loop import cutting_plane_loop

    X, k, ml, cl = _tiny(5, n=10, n_ml=0, n_cl=1)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    root = cutting_plane_loop(prob, seed=0, time_limit=10, bound_settings=FAST)
    Z = root.sdp.Z
    i, j = np.unravel_index(np.argmax(np.triu(Z, 1)), Z.shape)
    # the child's pairs from the branching decision on the original points, not from the
    # child problem that the merge under test built
    ia = int(np.flatnonzero(prob.point_labels == i)[0])
    ib = int(np.flatnonzero(prob.point_labels == j)[0])
    for child, ml_c, cl_c in ((prob.merge(i, j), [*ml, (ia, ib)], cl),
                              (prob.add_cl(i, j), ml, [*cl, (ia, ib)])):
        cuts, cut_map = inherit_cuts_map(root.cuts, child)
        ws = WarmStart.transfer(root.sdp, prob, child, cut_map=cut_map)
        res = cutting_plane_loop(child, cuts=cuts, warm_start=ws, root=False, seed=1,
                                 time_limit=10, bound_settings=FAST)
        opt, _ = brute_force(X, k, ml_c, cl_c)
        assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)


def test_cuts_separated_at_an_sdp_solution_are_violated_there():
    from pcsos.bounds import SDPModel, solve_sdp

    found = 0
    for seed in range(3):
        X, k, ml, cl = _tiny(seed, n=10)
        prob = Problem.from_instance(make_instance(X, k, ml, cl))
        Z = solve_sdp(SDPModel.from_problem(prob), **FAST).Z
        res = separate(Z, k=prob.k, n=prob.n, eps=1e-4, fracs={"pair": 1.0, "triangle": 1.0},
                       seed=seed)
        viol = res.cuts.violation((Z + Z.T) / 2)
        assert np.all(viol > 1e-4)
        assert res.cuts.m == sum(res.found.values())
        found += res.cuts.m
    assert found > 0  # the plain relaxation is not a clustering matrix on these instances


def test_round_tolerance_rule():
    from pcsos.cuts.loop import _round_tol

    assert _round_tol(1e-3, 1e-5, 0.1, math.inf) == 1e-3  # no incumbent: the cap
    assert _round_tol(1e-3, 1e-5, None, 0.002) == 1e-3  # no gap factor: the cap
    assert _round_tol(1e-3, 1e-5, 0.1, 0.002) == pytest.approx(2e-4)
    assert _round_tol(1e-3, 1e-5, 0.1, 1e-5) == 1e-5  # never below the SDP tolerance
    assert _round_tol(1e-3, 1e-5, 0.1, -1.0) == 1e-5  # bound above the incumbent
    with pytest.raises(ValueError, match="loose_gap_factor"):
        CuttingPlaneSettings(loose_gap_factor=-1.0)
    with pytest.raises(ValueError, match="collect"):
        CuttingPlaneSettings(collect="best")


def test_the_gap_a_round_is_sized_by_ends_at_the_pruning_target():
    from pcsos.cuts.loop import _prune_gap

    st = CuttingPlaneSettings(prune_tol=1e-4, prune_abs_tol=0.0)
    # incumbent 10 000, bound 9 997: 3 below it, 2 below the target 9 999 (10 000 - 1e-4 x)
    assert _prune_gap(st, 10_000.0, 9_997.0) == pytest.approx(2e-4)
    assert _prune_gap(st, 10_000.0, 9_999.5) < 0  # prunable: the rounds go tight
    assert _prune_gap(st, math.inf, 0.0) == math.inf  # no incumbent
    assert _prune_gap(st, 0.0, 0.0) == math.inf  # no relative gap: the cap decides
    # the absolute tolerance counts when it is the larger
    assert _prune_gap(CuttingPlaneSettings(prune_abs_tol=5.0), 10_000.0, 9_990.0) == (
        pytest.approx(5e-4))


def test_loop_tightens_rounds_with_the_gap_and_ends_tight(monkeypatch):
    """Every round's tolerance is at most loose_tol and gap_factor x the gap before it (to the
    pruning target), the
    loosest tolerance allowed never increases, and a loop that ends on its own (no
    incumbent prune, no limit) ends with a round solved at the SDP tolerance."""
    import pcsos.bounds as bounds
    import pcsos.cuts.loop as loop_module
    from pcsos.cuts.loop import BOUND_WORSE, NO_CUT, TOLERANCE, cutting_plane_loop

    X, k, ml, cl = _tiny(3, n=10, n_ml=0, n_cl=1)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    tols, bounds_seen = [], []
    real = bounds.solve_sdp

    def spy(model, settings, **kw):
        tols.append(kw["tol"])
        res = real(model, settings, **kw)
        bounds_seen.append(res.lower_bound)
        return res

    monkeypatch.setattr(loop_module, "solve_sdp", spy)
    tight, loose = 1e-6, 1e-2
    ub = 1.05 * real(SDPModel.from_problem(prob), tol=1e-8).sdp_value  # a 5 % gap
    cps = CuttingPlaneSettings(loose_tol=loose, loose_gap_factor=0.1, cp_tol=1e-9,
                               max_rounds_root=30)
    res = cutting_plane_loop(prob, upper_bound=ub, settings=cps, seed=0,
                             bound_settings={"tol": tight, "max_iter": 5000})
    assert len(tols) == res.n_rounds
    best = -math.inf
    for t, lb in zip(tols, bounds_seen):
        gap = (ub * (1 - cps.prune_tol) - best) / ub  # to the pruning target
        assert tight <= t <= loose
        assert t == tight or t <= 0.1 * gap + 1e-15
        best = max(best, lb)
    assert tols[0] == pytest.approx(loose) and min(tols) < loose  # it did tighten
    if res.flag in (NO_CUT, TOLERANCE, BOUND_WORSE):
        assert tols[-1] == tight


def test_known_bound_sets_the_first_rounds_tolerance(monkeypatch):
    """A child's loop starts from its parent's bound: with the gap it leaves, the first
    round is solved to loose_gap_factor x that gap, not to loose_tol."""
    from bruteforce import brute_force

    import pcsos.bounds as bounds
    import pcsos.cuts.loop as loop_module
    from pcsos.cuts.loop import cutting_plane_loop

    X, k, ml, cl = _tiny(3, n=10, n_ml=0, n_cl=1)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    real = bounds.solve_sdp
    val = real(SDPModel.from_problem(prob), tol=1e-8).sdp_value
    tols = []

    def spy(model, settings, **kw):
        tols.append(kw["tol"])
        return real(model, settings, **kw)

    monkeypatch.setattr(loop_module, "solve_sdp", spy)
    cps = CuttingPlaneSettings(loose_tol=1e-2, max_rounds_root=2, loose_gap_factor=0.1)
    ub = 1.05 * val
    cutting_plane_loop(prob, upper_bound=ub, settings=cps, seed=0,
                       bound_settings={"tol": 1e-6, "max_iter": 5000})
    assert tols[0] == pytest.approx(1e-2)
    tols.clear()
    known = 0.995 * val  # a valid bound below the node's SDP value, gap about 5.2 %
    res = cutting_plane_loop(prob, upper_bound=ub, settings=cps, seed=0, known_bound=known,
                             bound_settings={"tol": 1e-6, "max_iter": 5000})
    assert tols[0] == pytest.approx(cps.loose_gap_factor * (ub * (1 - cps.prune_tol) - known)
                                    / ub)
    assert tols[0] < cps.loose_tol
    # the known bound only steers tolerances: the result is the best of the loop's own
    # rounds, above the known bound and valid
    assert res.lower_bound == max(r.lower_bound for r in res.rounds) > known
    opt, _ = brute_force(X, k, ml, cl)
    assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)


def _spy_on_separate(monkeypatch, key: str) -> list:
    """The list to which every call of the loop's ``separate`` appends its keyword ``key``."""
    import pcsos.cuts.loop as loop

    seen = []
    real = loop.separate

    def spy(Z, **kw):
        seen.append(kw[key])
        return real(Z, **kw)

    monkeypatch.setattr(loop, "separate", spy)
    return seen


@pytest.mark.parametrize("collect", ["most", "first"])
def test_loop_separates_with_its_collect_setting(monkeypatch, collect):
    import pcsos.cuts.loop as loop

    X, k, ml, cl = _tiny(3, n=10, n_ml=0, n_cl=1)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    seen = _spy_on_separate(monkeypatch, "collect")
    loop.cutting_plane_loop(prob, settings=CuttingPlaneSettings(collect=collect,
                                                                max_rounds_root=3), seed=0)
    assert seen and set(seen) == {collect}


def test_a_stalled_loop_separates_at_the_fine_threshold_before_it_stops(monkeypatch):
    from bruteforce import brute_force

    import pcsos.cuts.loop as loop

    X, k, ml, cl = _tiny(0)
    opt, _ = brute_force(X, k, ml, cl)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    seen = _spy_on_separate(monkeypatch, "eps")

    def run(upper_bound=math.inf, **settings):
        seen.clear()
        return loop.cutting_plane_loop(
            prob, settings=CuttingPlaneSettings(eps_violation=10.0, **settings),
            upper_bound=upper_bound, seed=0, time_limit=20, bound_settings=FAST)

    # no cut is violated by 10: the coarse loop stops after its (tightened) first round
    coarse = run(eps_violation_fine=None)
    assert coarse.flag == loop.NO_CUT and coarse.cuts.m == 0 and set(seen) == {10.0}
    fine = run(eps_violation_fine=1e-4, fine_gap=math.inf)
    # the loose rounds' stalls are re-solved tighter first; once tight, the loop goes on
    # at the fine threshold and never goes back
    assert seen[0] == 10.0 and seen[-1] == 1e-4 and seen == sorted(seen, reverse=True)
    assert fine.cuts.m > 0 and fine.rounds[-1].eps_violation == 1e-4
    assert all(r.lower_bound <= opt + 1e-9 * opt for r in fine.rounds)
    # the cuts close this instance's gap (3-11 %, test above) at least 90 %
    assert opt - fine.lower_bound <= 0.1 * (opt - coarse.lower_bound)
    # the fallback waits for a node within fine_gap of its pruning target: here over 1 %
    # away with the optimum as incumbent, and infinitely far without one
    for ub, gap, falls_back in [(math.inf, 1.0, False), (opt, 1e-3, False), (opt, 1.0, True)]:
        run(ub, eps_violation_fine=1e-4, fine_gap=gap)
        assert (1e-4 in seen) == falls_back, (ub, gap)
    # the fallback never runs a round past the limit, even when the last round stalls
    real_rule = loop._stop_rule
    monkeypatch.setattr(loop, "_stop_rule", lambda *a: (
        loop.TOLERANCE if real_rule(*a) == loop.ROUND_LIMIT else real_rule(*a)))
    capped = run(eps_violation_fine=1e-4, fine_gap=math.inf, max_rounds_root=3)
    assert capped.n_rounds <= 3
    for bad in ({"eps_violation_fine": float("nan")}, {"fine_gap": -1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            CuttingPlaneSettings(**bad)


def test_tail_off_stops_a_child_loop_that_closes_little_of_its_gap():
    """``tail_off``: a child stops after a round that closed less than that share of its gap
    (flag TAILING_OFF), whatever share it closed with the rule off; the root never does."""
    from bruteforce import brute_force

    from pcsos.cuts.loop import TAIL_OFF_ROOT_ROUNDS, TAILING_OFF, cutting_plane_loop

    X, k, ml, cl = _tiny(2, n=12, n_ml=0, n_cl=2)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    opt, _ = brute_force(X, k, ml, cl)
    ub = opt * 1.05  # an incumbent with a gap left to close
    # known_bound: the parent's bound, here 0 (an SSE is never negative)
    off = cutting_plane_loop(prob, upper_bound=ub, root=False, seed=0, time_limit=20,
                             bound_settings=FAST, known_bound=0.0,
                             settings=CuttingPlaneSettings(tail_off=None, prune_tol=1e-9))
    assert len(off.rounds) >= 2, "the instance must need cutting-plane rounds"
    lbs = [r.lower_bound for r in off.rounds]
    share = (lbs[0] - 0.0) / ub  # what the first round closed of the gap from bound 0
    on = cutting_plane_loop(prob, upper_bound=ub, root=False, seed=0, time_limit=20,
                            bound_settings=FAST, known_bound=0.0,
                            settings=CuttingPlaneSettings(tail_off=1.0, prune_tol=1e-9))
    assert on.flag == TAILING_OFF and len(on.rounds) == 1 and share < 1.0
    assert on.lower_bound == pytest.approx(lbs[0]) and on.lower_bound <= opt + 1e-9
    root = cutting_plane_loop(prob, upper_bound=ub, root=True, seed=0, time_limit=20,
                              bound_settings=FAST, known_bound=0.0,
                              settings=CuttingPlaneSettings(tail_off=1.0, prune_tol=1e-9))
    assert root.flag != TAILING_OFF and len(root.rounds) >= 2
    # tail_off_root: the root stops only after TAIL_OFF_ROOT_ROUNDS such rounds in a row
    # (every round closes less than all of its gap, so every round qualifies here; a loose
    # round whose bound fell is re-solved tighter first, which may add a round)
    root_on = cutting_plane_loop(prob, upper_bound=ub, root=True, seed=0, time_limit=20,
                                 bound_settings=FAST, known_bound=0.0,
                                 settings=CuttingPlaneSettings(tail_off_root=1.0,
                                                               prune_tol=1e-9))
    assert root_on.flag == TAILING_OFF
    assert TAIL_OFF_ROOT_ROUNDS <= len(root_on.rounds) <= TAIL_OFF_ROOT_ROUNDS + 1
    m = min(len(root.rounds), TAIL_OFF_ROOT_ROUNDS)
    assert [r.lower_bound for r in root_on.rounds][:m] == pytest.approx(
        [r.lower_bound for r in root.rounds][:m])


def test_children_inherit_the_cuts_that_carry_a_multiplier():
    from pcsos.cuts.loop import cutting_plane_loop, inherited_selection

    X, k, ml, cl = _tiny(5, n=12, n_ml=0, n_cl=2)
    prob = Problem.from_instance(make_instance(X, k, ml, cl))
    br = cutting_plane_loop(prob, seed=0, time_limit=20, bound_settings=FAST)
    u = br.sdp.u
    assert br.cuts.m > 0
    sel = inherited_selection(br, CuttingPlaneSettings(inherit_min_u=1e-3))
    np.testing.assert_array_equal(sel, np.flatnonzero(u > 1e-3 * u.max()))
    assert len(inherited_selection(br, CuttingPlaneSettings(inherit_min_u=0.0))) == br.cuts.m
    with pytest.raises(ValueError):
        CuttingPlaneSettings(inherit_min_u=2.0)
