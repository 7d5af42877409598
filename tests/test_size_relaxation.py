"""The cluster-size constraints of the SDP relaxation (issue 33; docs/safe_bound.md,
"Cluster sizes"): valid for every clustering that meets the sizes (by enumeration), kept by
the loop and by the children, and the sized relaxation solved by the ADMM against an
interior-point reference written from its definition on the original points."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import brute_force, feasible_partitions
from conftest import needs_clarabel, reference_value

from pcsos.bounds import SDPModel, solve_sdp
from pcsos.bounds.cutset import SIZE, CutSet
from pcsos.bounds.sizes import majorization_rhs, separate_sizes, size_constraints
from pcsos.cuts.loop import CuttingPlaneSettings, cutting_plane_loop, inherit_cuts_map
from pcsos.problem import Problem, make_instance

try:
    import cvxpy
except ImportError:  # the reference test skips (needs_clarabel)
    cvxpy = None

SIZE_KW = [dict(sizes=(4, 2, 2)), dict(sizes=(3, 3, 2)), dict(size_min=2, size_max=3),
           dict(size_min=2), dict(size_max=3)]


def _super_matrix(problem: Problem, labels) -> np.ndarray:
    """The clustering matrix of ``labels`` (original points) in super-point space."""
    sl = np.empty(problem.s, dtype=np.int64)
    sl[problem.point_labels] = labels
    mass = np.bincount(sl, weights=problem.e)
    return np.where(sl[:, None] == sl[None, :], 1.0 / mass[sl][:, None], 0.0)


def _sizes_ok(labels, kw) -> bool:
    cnt = np.bincount(labels)
    if "sizes" in kw:
        return sorted(cnt.tolist()) == sorted(kw["sizes"])
    return cnt.min() >= kw.get("size_min", 1) and cnt.max() <= kw.get("size_max", len(labels))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kw", SIZE_KW)
def test_size_constraints_hold_for_every_feasible_clustering(kw, weighted):
    """Each listed constraint, at every clustering of 8 points meeting the sizes (with a
    must-link pair, so super-points of 2 points are covered), and the separated
    majorization cuts at every such clustering for every prefix the separator may pick."""
    rng = np.random.default_rng(3)
    n, k, ml = 8, 3, [(0, 1)]
    X = rng.normal(size=(n, 2))
    w = rng.integers(1, 5, size=n).astype(float) if weighted else None
    inst = make_instance(X, k, ml=ml, weights=w, **kw)
    P = Problem.from_instance(inst)
    cuts = size_constraints(P)
    assert cuts.m > 0 and np.all(cuts.family == SIZE)
    seen = 0
    for lab in feasible_partitions(n, k, ml):
        if not _sizes_ok(lab, kw):
            continue
        seen += 1
        Z = _super_matrix(P, lab)
        assert np.all(cuts.violation(Z) <= 1e-12), (lab, cuts.violation(Z).max())
        if "sizes" in kw and not weighted:
            # every set of super-points (the prefixes of every ordering, which the separator
            # builds; the first 200 orderings all began with super-point 0)
            diag = np.diag(Z)
            for r in range(1, P.s + 1):
                for S in itertools.combinations(range(P.s), r):
                    S = np.array(S)
                    lhs = float(np.sum(P.counts[S] * diag[S]))
                    t = int(P.counts[S].sum())
                    assert lhs <= float(majorization_rhs(kw["sizes"], t)) + 1e-12, (lab, S)
    assert seen > 0


def test_majorization_rhs_is_the_exact_maximum():
    """f(t) is the largest sum of 1/n(C(p)) over t points, over every clustering with the
    sizes and every set of t points (exhaustive for 7 points, sizes 4, 2, 1)."""
    sizes, n = (4, 2, 1), 7
    best = {t: 0.0 for t in range(n + 1)}
    for lab in feasible_partitions(n, 3):
        cnt = np.bincount(lab)
        if sorted(cnt.tolist()) != sorted(sizes):
            continue
        inv = 1.0 / cnt[lab]
        for t in range(n + 1):
            best[t] = max(best[t], float(np.sort(inv)[::-1][:t].sum()))
    for t in range(n + 1):
        assert float(majorization_rhs(sizes, t)) == pytest.approx(best[t], abs=1e-12)


def test_separated_majorization_cut_is_violated_and_valid():
    """At the relaxation's Z of an instance whose natural clusters miss the exact sizes, the
    separator returns a cut that Z violates and that no clustering meeting them violates."""
    rng = np.random.default_rng(11)
    # two pairs far out and six points between: the relaxation gives the pairs diagonals
    # near 1/2 that sizes 5, 3, 2 allow one by one but not together
    X = np.r_[rng.normal(0, 0.2, (2, 2)), rng.normal(10, 0.2, (2, 2)), rng.normal(5, 0.5, (6, 2))]
    kw = dict(sizes=(5, 3, 2))
    P = Problem.from_instance(make_instance(X, 3, **kw))
    found = 0
    r = solve_sdp(SDPModel.from_problem(P), tol=1e-7)
    cut = separate_sizes(r.Z, P, eps=1e-6)
    if cut.m:
        found += 1
        assert cut.violation(r.Z)[0] > 1e-6
        for lab in feasible_partitions(10, 3):
            if _sizes_ok(lab, kw):
                assert cut.violation(_super_matrix(P, lab))[0] <= 1e-12
    # the other way round: a Z that is a clustering meeting the sizes gives no cut
    lab = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2, 2])
    assert separate_sizes(_super_matrix(P, lab), P, eps=1e-12).m == 0
    # equal sizes or point weights: nothing to separate beyond the listed constraints
    P2 = Problem.from_instance(make_instance(X, 2, sizes=(5, 5)))
    assert separate_sizes(np.eye(10), P2).m == 0
    assert found == 1


def test_no_sizes_no_constraints():
    X = np.random.default_rng(0).normal(size=(6, 2))
    P = Problem.from_instance(make_instance(X, 2))
    assert size_constraints(P).m == 0
    assert SDPModel.from_problem(P).cuts.m == 0


def test_rhs_is_rounded_outward():
    """1/3 is not a double: Z_aa >= 1/U gets the double below 1/3, -Z_aa >= -1/L the one
    below -1/3, so that a clustering matrix computed exactly never violates them."""
    X = np.random.default_rng(0).normal(size=(9, 2))
    P = Problem.from_instance(make_instance(X, 3, size_min=3, size_max=3))
    c = size_constraints(P)
    from fractions import Fraction
    lower = c.rhs[c.coef[c.indptr[:-1]] > 0]
    upper = c.rhs[c.coef[c.indptr[:-1]] < 0]
    assert np.all([Fraction(x) < Fraction(1, 3) for x in lower])
    assert np.all([Fraction(-x) > Fraction(1, 3) for x in upper])


def test_merge_child_keeps_exact_row_constraints():
    """With weights, the row constraints of two merged super-points become the row
    constraint of the merged one (the same as listing it afresh), kept once."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 2))
    w = rng.integers(1, 4, size=8).astype(float)
    P = Problem.from_instance(make_instance(X, 3, weights=w, size_min=2, size_max=4))
    child = P.merge(0, 1)
    got, cut_map = inherit_cuts_map(size_constraints(P), child)
    fresh = size_constraints(child)
    from pcsos.cuts.separation import cut_keys
    assert set(cut_keys(fresh)) <= set(cut_keys(got))
    # 2 s cuts, the two pairs of merged rows one each; the merged super-point has 2 = L
    # points, so a fresh list leaves its (now implied) upper row out
    assert got.m == 2 * P.s - 2 and fresh.m == got.m - 1
    assert np.all(cut_map >= 0)


def test_loop_never_prunes_the_size_constraints_and_children_inherit_them():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(14, 2))
    P = Problem.from_instance(make_instance(X, 3, ml=[(0, 1)], cl=[(2, 3)], size_min=4,
                                           size_max=5))
    n_size = size_constraints(P).m
    st = CuttingPlaneSettings(inherit_min_u=0.5)
    br = cutting_plane_loop(P, settings=st, seed=0)
    assert int(br.cuts.is_size.sum()) == n_size
    from pcsos.cuts.loop import inherited_selection
    sel = inherited_selection(br, st)
    assert int(br.cuts.select(sel).is_size.sum()) == n_size
    child = P.merge(4, 5)
    inherited, _ = inherit_cuts_map(br.cuts.select(sel), child)
    assert inherited.is_size.any()
    assert SDPModel.from_problem(child, inherited).cuts.m == inherited.m  # none added twice


def _sized_reference(X, k, ml, cl, w, lo, hi) -> float:
    """The sized relaxation written from its definition on the n original points (not from
    SDPModel or pcsos.bounds.sizes), solved by Clarabel: Z PSD, Z >= 0, Z w = 1,
    sum_i w_i Z_ii = k, Z_ij = 0 on cannot-links, equal rows on must-links, and
    lo Z_ii <= sum_j Z_ij <= hi Z_ii (each point counts 1, Z_ij = 1 / w(C))."""
    X = np.asarray(X, dtype=float)
    n = len(X)
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    Xc = X - (w @ X) / w.sum()
    G = (w[:, None] * Xc) @ (w[:, None] * Xc).T
    Z = cvxpy.Variable((n, n), PSD=True)
    cons = [Z @ w == 1, cvxpy.sum(cvxpy.multiply(w, cvxpy.diag(Z))) == k, Z >= 0]
    cons += [Z[i, :] == Z[j, :] for i, j in ml]
    cons += [Z[i, j] == 0 for i, j in cl]
    if lo is not None:
        rs = cvxpy.sum(Z, axis=1)
        # equal bounds as one equality: two opposite inequalities leave no interior
        cons += ([rs == lo * cvxpy.diag(Z)] if lo == hi
                 else [rs >= lo * cvxpy.diag(Z), rs <= hi * cvxpy.diag(Z)])
    c0 = float(w @ np.einsum("ij,ij->i", Xc, Xc))
    prob = cvxpy.Problem(cvxpy.Minimize(c0 - cvxpy.sum(cvxpy.multiply(G, Z))), cons)
    return reference_value(prob)


@needs_clarabel
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lo,hi", [(4, 6), (5, 5), (2, 5)])
def test_sized_admm_matches_an_interior_point_reference(lo, hi, weighted):
    rng = np.random.default_rng(40 + lo + 10 * hi + weighted)
    n, k = 15, 3
    X = np.r_[rng.normal(0, 1, (9, 2)), rng.normal(3, 1, (6, 2))]
    ml, cl = [(0, 1), (5, 6)], [(2, 3)]
    w = rng.integers(1, 4, size=n).astype(float) if weighted else None
    P = Problem.from_instance(make_instance(X, k, ml=ml, cl=cl, weights=w, size_min=lo,
                                           size_max=hi))
    ref = _sized_reference(X, k, ml, cl, w, lo, hi)
    plain = _sized_reference(X, k, ml, cl, w, None, None)
    r = solve_sdp(SDPModel.from_problem(P), tol=1e-8)
    assert r.status == "solved", r.message
    assert abs(r.sdp_value - ref) <= 1e-5 * abs(ref)
    assert r.lower_bound <= ref + 1e-8 * abs(ref)
    assert abs(r.lower_bound - ref) <= 1e-5 * abs(ref)
    assert ref >= plain - 1e-7 * abs(plain)


def test_sized_bound_is_valid_and_raises_the_unsized_one():
    """Over random tiny cases the sized root bound (with cuts) never exceeds the brute-force
    optimum with the sizes, and is strictly above the bound without them in some."""
    rng = np.random.default_rng(21)
    raised = 0
    for case in range(24):
        n, k = 8, 3
        X = rng.normal(size=(n, 2))
        w = rng.integers(1, 4, size=n).astype(float) if case % 2 else None
        kw = SIZE_KW[case % len(SIZE_KW)]
        ml, cl = [(0, 1)], [(2, 3)]
        opt, _ = brute_force(X, k, ml, cl, weights=w, **kw)
        if not math.isfinite(opt):
            continue
        P = Problem.from_instance(make_instance(X, k, ml=ml, cl=cl, weights=w, **kw))
        P0 = Problem.from_instance(make_instance(X, k, ml=ml, cl=cl, weights=w))
        lb = cutting_plane_loop(P, seed=0).lower_bound
        lb0 = cutting_plane_loop(P0, seed=0).lower_bound
        assert lb <= opt + 1e-9 * max(1.0, opt), (case, lb, opt)
        raised += lb > lb0 * (1 + 1e-6) + 1e-9
    assert raised >= 5


def test_cutset_rows_builds_what_it_is_given():
    c = CutSet.rows([np.array([2, 0])], [np.array([1, 0])], [np.array([3.0, -1.0])], [0.5])
    Z = np.arange(9.0).reshape(3, 3)
    Z = Z + Z.T
    assert c.apply(Z)[0] == pytest.approx(3 * Z[1, 2] - Z[0, 0])
    assert c.counts()["size"] == 1


def test_size_class_cuts_hold_for_every_clustering_with_the_sizes():
    """class_rhs against enumeration: for every clustering of 9 points with sizes 5, 3, 1
    (and a must-link pair, so a super-point of 2 points), every super-point a, random sets T
    holding a and random lambda (rounded as the separator rounds them)."""
    from pcsos.bounds.sizes import LAMBDA_QUANTUM, class_rhs
    rng = np.random.default_rng(17)
    sizes = (5, 3, 1)
    X = rng.normal(size=(9, 2))
    P = Problem.from_instance(make_instance(X, 3, ml=[(0, 1)], sizes=sizes))
    m = P.counts
    checks = 0
    for lab in feasible_partitions(9, 3, [(0, 1)]):
        if sorted(np.bincount(lab).tolist()) != sorted(sizes):
            continue
        Z = _super_matrix(P, lab)
        for _ in range(20):
            a = int(rng.integers(P.s))
            T = np.unique(np.r_[a, rng.choice(P.s, size=int(rng.integers(0, P.s)), replace=False)])
            lam = round(float(rng.uniform(-10, 10)) / LAMBDA_QUANTUM) * LAMBDA_QUANTUM
            lhs = float(m[T] @ Z[a, T]) - lam * Z[a, a]
            assert lhs <= float(class_rhs(sizes, int(m[T].sum()), lam, int(m[a]))) + 1e-12
            checks += 1
    assert checks > 1000


def test_size_class_cut_cuts_off_a_block_no_size_allows():
    """Three blocks of 48, 61 and 69 points (a clustering matrix) against sizes 48, 59, 71:
    diagonal bounds and majorization accept it, the separated class cuts do not, and the
    cuts hold at every clustering meeting the sizes that differs from it (the blocks moved
    to 48, 59, 71)."""
    X = np.random.default_rng(0).normal(size=(178, 2))
    P = Problem.from_instance(make_instance(X, 3, sizes=(48, 59, 71)))
    Z = _super_matrix(P, np.repeat([0, 1, 2], [48, 61, 69]))
    assert np.all(size_constraints(P).violation(Z) <= 1e-12)
    cuts = separate_sizes(Z, P, eps=1e-6)
    assert cuts.m > 0 and np.all(cuts.violation(Z) > 1e-6)
    ok = _super_matrix(P, np.repeat([0, 1, 2], [48, 59, 71]))
    assert np.all(cuts.violation(ok) <= 1e-12)
