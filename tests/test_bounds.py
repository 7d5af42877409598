"""Tests of the SDP bounding layer (issue 3, acceptance 1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import brute_force
from conftest import (
    CVXPY_SOLVERS,
    needs_clarabel,
    random_instance,
    reference_value,
    violated_triangles,
)

from pcsos.bounds import SDPModel, WarmStart, positive_part, safe_lower_bound, solve_sdp
from pcsos.bounds.cutset import CutSet
from pcsos.bounds.mosek_backend import build_mosek_task, constraint_layout, mosek_licence
from pcsos.bounds.safe import polish_duals, polished_bound
from pcsos.clock import Deadline
from pcsos.errors import BackendUnavailableError, InfeasibleError, InputError
from pcsos.problem import Problem, make_instance

try:
    import cvxpy
except ImportError:  # the bound tests below run without it; the reference-solver ones skip
    cvxpy = None

needs_scs = pytest.mark.skipif(
    "SCS" not in CVXPY_SOLVERS, reason="needs cvxpy with SCS (pip install -e '.[scs]')")


def _problem(rng, n, k, n_ml=0, n_cl=0, d=2):
    """A feasible random problem (retries on infeasible draws)."""
    while True:
        X, ml, cl = random_instance(rng, n, d, n_ml, n_cl)
        try:
            return X, ml, cl, Problem.from_instance(make_instance(X, k, ml, cl))
        except InfeasibleError:
            continue


def _clarabel(model):
    r = solve_sdp(model, backend="clarabel", tol=1e-8)
    assert r.status == "solved", r.message
    return r


def _peng_wei_reference(X, k, ml, cl):
    """The Peng-Wei SDP of the instance, written here from its definition on the n original
    points (not from SDPModel: no super-points, no scaling) and solved by Clarabel at tight
    tolerances, an interior-point reference independent of the code under test.

    min SSE(Z) = tr(W) - <W, Z>, W = X X^T (X centred), over Z PSD, Z >= 0, Z 1 = 1,
    tr Z = k, Z_ij = 0 for a cannot-link pair and equal rows i, j for a must-link pair (the
    block-constant Z that the super-point model parametrises).
    """
    X = np.asarray(X, dtype=float)
    X = X - X.mean(axis=0)  # SSE and the relaxation (Z 1 = 1) are translation invariant
    n = len(X)
    W = X @ X.T
    Z = cvxpy.Variable((n, n), PSD=True)
    cons = [cvxpy.sum(Z, axis=1) == 1, cvxpy.trace(Z) == k, Z >= 0]
    cons += [Z[i, :] == Z[j, :] for i, j in ml]
    cons += [Z[i, j] == 0 for i, j in cl]
    prob = cvxpy.Problem(cvxpy.Minimize(float(np.trace(W)) - cvxpy.sum(cvxpy.multiply(W, Z))),
                         cons)
    return reference_value(prob)


def _sse(X, labels):
    return sum(float(((X[labels == h] - X[labels == h].mean(axis=0)) ** 2).sum())
               for h in np.unique(labels))


def _local_search_sse(X, k, ml, cl, rng, restarts=10):
    """SSE of a feasible clustering with exactly k clusters (so an upper bound on the optimum)
    for instances too large for brute force: random feasible starts, then single moves of
    must-link groups while they lower the SSE. Uses the problem's definition only."""
    X = np.asarray(X, dtype=float)
    parent = list(range(len(X)))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a

    for i, j in ml:
        parent[find(i)] = find(j)
    gid = np.unique([find(i) for i in range(len(X))], return_inverse=True)[1]
    G = gid.max() + 1
    conflict = np.zeros((G, G), dtype=bool)
    for i, j in cl:
        conflict[gid[i], gid[j]] = conflict[gid[j], gid[i]] = True
    best = math.inf
    for _ in range(restarts):
        lab = np.full(G, -1)
        for a in rng.permutation(G):  # greedy colouring: k exceeds every CL degree here
            lab[a] = next(h for h in rng.permutation(k) if not np.any(conflict[a] & (lab == h)))
        if len(np.unique(lab)) < k:
            continue
        cur, improved = _sse(X, lab[gid]), True
        while improved:
            improved = False
            for a, h in itertools.product(range(G), range(k)):
                old = lab[a]
                if h == old or np.any(conflict[a] & (lab == h)) or np.sum(lab == old) == 1:
                    continue
                lab[a] = h
                v = _sse(X, lab[gid])
                if v < cur - 1e-12 * cur:
                    cur, improved = v, True
                else:
                    lab[a] = old
        best = min(best, cur)
    return best


# --------------------------------------------------------------------------- validity
def _tiny(rng, seed, n_low=6):
    """A brute-forceable instance (n < 10, k = 2-3, pairs by ``seed``): (P, its model,
    the optimal SSE)."""
    n = int(rng.integers(n_low, 10))
    k = int(rng.integers(2, 4))
    n_ml, n_cl = [(0, 0), (2, 0), (0, 3), (2, 2)][seed % 4]
    X, ml, cl, P = _problem(rng, n, k, n_ml, n_cl)
    opt, _ = brute_force(X, k, ml, cl)
    return P, SDPModel.from_problem(P), opt


@pytest.mark.parametrize("seed", range(12))
def test_safe_bound_below_brute_force(seed):
    P, model, opt = _tiny(np.random.default_rng(seed), seed)
    full = solve_sdp(model, tol=1e-7)
    assert full.status == "solved"
    assert full.lower_bound <= opt + 1e-12 * abs(opt)
    # tight: the bound is the SDP value up to the solver's accuracy
    assert abs(full.lower_bound - full.sdp_value) <= 1e-6 * abs(full.sdp_value)
    # stopped early, the bound is weaker but still valid
    for it in (1, 3, 10):
        # tol far below reach, so that the run really stops at the cap (the accelerated
        # ADMM solves some of these tiny instances to 1e-5 within 10 iterations)
        early = solve_sdp(model, max_iter=it, tol=1e-14)
        assert early.status == "max_iter" and early.iterations == it
        assert early.lower_bound <= opt + 1e-12 * abs(opt)


@needs_clarabel
@pytest.mark.parametrize("seed", range(3))
def test_safe_bound_perturbed_duals(seed):
    rng = np.random.default_rng(100 + seed)
    X, ml, cl, P = _problem(rng, 14, 3, 2, 3)
    model = SDPModel.from_problem(P)
    ref = _clarabel(model).sdp_value
    r = solve_sdp(model, tol=1e-7)
    assert r.lower_bound <= ref + 1e-8 * abs(ref)
    assert r.lower_bound >= ref - 1e-5 * abs(ref)
    for scale in (1e-6, 1e-3, 1e-1, 1.0):
        y = r.y + scale * rng.normal(size=r.y.shape) * np.abs(r.y).max()
        N = r.N + scale * rng.normal(size=r.N.shape) * max(np.abs(r.N).max(), 1.0)
        y_cl = r.y_cl + scale * rng.normal(size=r.y_cl.shape)
        lb = safe_lower_bound(model, y, y_cl, None, N)
        assert lb <= ref + 1e-8 * abs(ref)
    # a completely arbitrary dual point, including negative u and N (projected away)
    lb = safe_lower_bound(model, rng.normal(size=P.s + 1) * 10, None, None,
                          rng.normal(size=(P.s, P.s)))
    assert lb <= ref


def test_safe_bound_zero_duals_is_eigenvalue_bound():
    rng = np.random.default_rng(7)
    X, ml, cl, P = _problem(rng, 12, 3, 3, 0)
    model = SDPModel.from_problem(P)
    d = 1 / np.sqrt(P.e)
    lam = np.linalg.eigvalsh(-P.C * d[:, None] * d[None, :])
    expected = P.c0 + lam[:3].sum()
    lb = safe_lower_bound(model, np.zeros(P.s + 1))
    assert lb <= expected
    assert lb == pytest.approx(expected, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_polished_bound_is_valid_and_never_lower(seed):
    """Polishing an early ADMM iterate or a perturbed dual point (cannot-link entries
    included) never lowers the bound and never passes the brute-force optimum."""
    rng = np.random.default_rng(900 + seed)
    P, model, opt = _tiny(rng, seed, n_low=7)
    early = solve_sdp(model, max_iter=5, tol=1e-14, polish=0)
    points = [(early.y, early.y_cl, early.u, early.N)]
    for scale in (1e-3, 1e-1):
        points.append((early.y + scale * rng.normal(size=early.y.shape) * np.abs(early.y).max(),
                       early.y_cl + scale * rng.normal(size=early.y_cl.shape), early.u,
                       early.N + scale * rng.normal(size=early.N.shape)))
    for y, y_cl, u, N in points:
        before = safe_lower_bound(model, y, y_cl, u, N)
        lb, *duals = polished_bound(model, y, y_cl, u, N, evaluations=30)
        assert before <= lb <= opt + 1e-12 * abs(opt)
        # the duals returned are the ones that give the bound
        assert safe_lower_bound(model, *duals) == lb
        py, py_cl, pu, pN = duals
        assert np.all(pu >= 0) and np.all(pN >= 0) and len(py_cl) == len(P.cl)
        if len(P.cl):
            assert np.all(pN[P.cl[:, 0], P.cl[:, 1]] == 0)


@needs_clarabel
def test_polishing_closes_most_of_an_early_iterates_loss():
    """On a model with cuts, 40 evaluations of dual ascent recover most of what an ADMM
    iterate stopped after 40 iterations loses against an interior-point reference, and
    never pass it."""
    rng = np.random.default_rng(300)
    X, ml, cl, P = _problem(rng, 20, 3, 2, 2, d=2)
    model = SDPModel.from_problem(P)
    r0 = solve_sdp(model, tol=1e-8)
    mc = model.with_cuts(violated_triangles(r0.Z, 40).concat(CutSet.pairs([0, 1], [2, 3])))
    ref = _clarabel(mc).sdp_value
    early = solve_sdp(mc, max_iter=40, tol=1e-14, polish=0)
    assert early.lower_bound == safe_lower_bound(mc, early.y, early.y_cl, early.u, early.N)
    lb, *_ = polished_bound(mc, early.y, early.y_cl, early.u, early.N, evaluations=40)
    assert lb <= ref + 1e-8 * abs(ref)
    loss, left = ref - early.lower_bound, ref - lb
    assert loss > 0 and left < 0.5 * loss, (loss, left)
    # the solver's own result carries polished duals: its bound is theirs
    r = solve_sdp(mc, max_iter=40, tol=1e-14)
    assert r.lower_bound == safe_lower_bound(mc, r.y, r.y_cl, r.u, r.N)
    assert r.lower_bound >= early.lower_bound


def test_polish_is_off_with_fewer_than_two_evaluations():
    rng = np.random.default_rng(5)
    X, ml, cl, P = _problem(rng, 9, 3, 0, 2)
    model = SDPModel.from_problem(P)
    r = solve_sdp(model, max_iter=5, tol=1e-14, polish=0)
    y, y_cl, u, N, taken = polish_duals(model, r.y, r.y_cl, r.u, r.N, evaluations=1)
    assert taken == 0 and np.array_equal(y, r.y) and np.array_equal(y_cl, r.y_cl)
    assert safe_lower_bound(model, y, y_cl, u, N) == r.lower_bound


# --------------------------------------------------------------------------- accuracy
@needs_clarabel
@pytest.mark.parametrize("seed,n_ml,n_cl", [(0, 0, 0), (1, 3, 3), (2, 0, 6)])
def test_admm_matches_clarabel(seed, n_ml, n_cl):
    # the reference is the SDP written from its definition on the original points, so an
    # error in building SDPModel (shared by every backend) shows here
    rng = np.random.default_rng(200 + seed)
    X, ml, cl, P = _problem(rng, 24, 3, n_ml, n_cl, d=3)
    model = SDPModel.from_problem(P)
    ref = _peng_wei_reference(X, 3, ml, cl)
    r = solve_sdp(model, tol=1e-8)
    assert r.status == "solved"
    assert abs(r.sdp_value - ref) <= 1e-6 * abs(ref)
    assert r.lower_bound <= ref + 1e-8 * abs(ref)
    assert abs(r.lower_bound - ref) <= 1e-6 * abs(ref)


@needs_clarabel
def test_plain_and_accelerated_admm_match_clarabel():
    """Both iterations (Anderson-accelerated default, plain sGS-ADMM) reach the interior-point
    value; the accelerated one in fewer iterations."""
    rng = np.random.default_rng(250)
    X, ml, cl, P = _problem(rng, 30, 3, 2, 3, d=3)
    model = SDPModel.from_problem(P)
    ref = _peng_wei_reference(X, 3, ml, cl)
    fast = solve_sdp(model, tol=1e-8)
    plain = solve_sdp(model, tol=1e-8, anderson=0, sigma_ratio=3.0)
    for r in (fast, plain):
        assert r.status == "solved"
        assert abs(r.sdp_value - ref) <= 1e-6 * abs(ref)
        assert r.lower_bound <= ref + 1e-8 * abs(ref)
    assert fast.iterations < plain.iterations


@needs_clarabel
def test_cuts_match_clarabel():
    rng = np.random.default_rng(300)
    X, ml, cl, P = _problem(rng, 20, 3, 2, 2, d=2)
    model = SDPModel.from_problem(P)
    r0 = solve_sdp(model, tol=1e-8)
    # the model without cuts, against the SDP written from its definition
    ref0 = _peng_wei_reference(X, 3, ml, cl)
    assert abs(r0.sdp_value - ref0) <= 1e-6 * abs(ref0)
    cuts = violated_triangles(r0.Z, 40).concat(CutSet.pairs([0, 1], [2, 3]))
    assert cuts.m > 2
    mc = model.with_cuts(cuts)
    ref = _clarabel(mc)
    r = solve_sdp(mc, tol=1e-8)
    assert r.status == "solved"
    assert abs(r.sdp_value - ref.sdp_value) <= 1e-6 * abs(ref.sdp_value)
    assert np.all(r.u >= 0) and len(r.u) == cuts.m
    assert r.lower_bound <= ref.sdp_value + 1e-8 * abs(ref.sdp_value)
    assert ref.sdp_value >= r0.sdp_value - 1e-7 * abs(r0.sdp_value)
    # the cuts were violated, so they are active: some multipliers are positive
    assert r.u.max() > 0
    # valid for the instance: at most the SSE of a feasible clustering (n = 20 is beyond
    # brute force); the cuts make this relaxation tight, so the check is sharp here
    ub = _local_search_sse(X, 3, ml, cl, np.random.default_rng(0))
    assert math.isfinite(ub)
    assert r.lower_bound <= ub + 1e-9 * abs(ub)
    assert ref.sdp_value <= ub + 1e-8 * abs(ub)


@needs_clarabel
@needs_scs
def test_scs_and_admm_agree_with_an_interior_point_reference():
    """SCS (first order, via cvxpy) and the ADMM against Clarabel on an independently
    written model of the same SDP, each within its own accuracy; both bounds are valid."""
    rng = np.random.default_rng(400)
    X, ml, cl, P = _problem(rng, 12, 2, 1, 1)
    ref = _peng_wei_reference(X, 2, ml, cl)
    opt, _ = brute_force(X, 2, ml, cl)
    assert ref <= opt + 1e-9 * abs(opt)  # the reference is a relaxation of the instance
    model = SDPModel.from_problem(P)
    # the project's Clarabel backend builds the same SDP (from SDPModel, on super-points)
    c = _clarabel(model)
    assert abs(c.sdp_value - ref) <= 1e-7 * abs(ref)
    a = solve_sdp(model, tol=1e-8)
    b = solve_sdp(model, backend="scs", tol=1e-7)
    assert a.backend == "admm" and b.backend == "scs"
    assert a.status == b.status == "solved"
    # safe bounds: never above the optimum beyond the reference's own accuracy (~1e-9)
    for r in (a, b, c):
        assert r.lower_bound <= ref + 1e-8 * abs(ref)
    # accuracy: relative KKT 1e-8 for the ADMM, eps 1e-7 for SCS (objective errors ~ 1e-9
    # here; the margins allow for 100x that and stay well below the relaxation gap, 12 %)
    assert abs(a.sdp_value - ref) <= 1e-6 * abs(ref)
    assert a.lower_bound >= ref - 1e-6 * abs(ref)
    assert abs(b.sdp_value - ref) <= 1e-5 * abs(ref)
    assert b.lower_bound >= ref - 1e-5 * abs(ref)


# --------------------------------------------------------------------------- warm starts
@pytest.fixture(scope="module")
def medium():
    rng = np.random.default_rng(500)
    X, ml, cl, P = _problem(rng, 45, 3, 4, 4, d=3)
    model = SDPModel.from_problem(P)
    return P, model, solve_sdp(model, tol=1e-5)


def test_warm_start_after_cuts(medium):
    P, model, r0 = medium
    # re-solving the same model from its own solution stops at once
    assert solve_sdp(model, warm_start=r0).iterations <= 2
    cuts = violated_triangles(r0.Z, 60)
    mc = model.with_cuts(cuts)
    cold = solve_sdp(mc)
    warm = solve_sdp(mc, warm_start=WarmStart.for_cuts(r0, keep=[], n_new=cuts.m))
    warm2 = solve_sdp(mc, warm_start=r0)  # shorter u: cuts appended
    assert cold.status == warm.status == warm2.status == "solved"
    assert warm2.iterations == warm.iterations
    assert warm.sdp_value == pytest.approx(cold.sdp_value, rel=1e-4)
    # the loop's pruning step: dropping the inactive cuts leaves the optimum in place
    keep = np.flatnonzero(cold.u > 1e-8)
    assert 0 < len(keep) < cuts.m
    mk = model.with_cuts(cuts.select(keep))
    w3 = solve_sdp(mk, warm_start=WarmStart.for_cuts(cold, keep=keep))
    c3 = solve_sdp(mk)
    assert w3.iterations <= 0.1 * c3.iterations
    assert w3.sdp_value == pytest.approx(c3.sdp_value, rel=1e-4)
    # a next round adding a few cuts: fewer iterations than from scratch
    more = violated_triangles(cold.Z, 10)
    m2 = model.with_cuts(cuts.concat(more))
    w4 = solve_sdp(m2, warm_start=WarmStart.for_cuts(cold, n_new=more.m))
    c4 = solve_sdp(m2)
    assert w4.iterations < c4.iterations
    with pytest.raises(InputError):
        solve_sdp(model, warm_start=warm)  # more multipliers than cuts, no map given


def test_warm_start_ml_and_cl_children(medium):
    P, model, r0 = medium
    Z = r0.Z
    s = P.s
    iu = np.triu_indices(s, 1)
    corr = Z[iu] / np.sqrt(np.outer(np.diag(Z), np.diag(Z))[iu])
    # children that keep the relaxation's optimum (a pair the SDP already joins, a pair it
    # already separates): the transferred point is optimal again, so few iterations remain
    t_ml, t_cl = int(np.argmax(corr)), int(np.argmin(corr))
    ml_child = P.merge(int(iu[0][t_ml]), int(iu[1][t_ml]))
    cl_child = P.add_cl(int(iu[0][t_cl]), int(iu[1][t_cl]))
    for child in (ml_child, cl_child):
        cm = SDPModel.from_problem(child)
        cold = solve_sdp(cm)
        warm = solve_sdp(cm, warm_start=WarmStart.transfer(r0, P, child))
        assert warm.status == cold.status == "solved"
        assert warm.iterations <= 0.5 * cold.iterations
        assert warm.sdp_value == pytest.approx(cold.sdp_value, rel=1e-4)
        assert warm.lower_bound <= cold.sdp_value + 1e-5 * abs(cold.sdp_value)
    # a fractional pair (what the tree branches on): the warm start is valid and converges
    t = int(np.argmin(np.abs(corr - 0.5)))
    for child in (P.merge(int(iu[0][t]), int(iu[1][t])), P.add_cl(int(iu[0][t]), int(iu[1][t]))):
        cm = SDPModel.from_problem(child)
        warm = solve_sdp(cm, warm_start=WarmStart.transfer(r0, P, child))
        cold = solve_sdp(cm)
        assert warm.status == "solved"
        assert warm.sdp_value == pytest.approx(cold.sdp_value, rel=1e-4)


def test_merge_transfer_keeps_dual_value(medium):
    P, model, r0 = medium
    child = P.merge(0, 1)
    ws = WarmStart.for_merge(r0, P, child)
    cm = SDPModel.from_problem(child)
    # the mapped dual point has the same dual objective and is a valid dual for the child
    bty = math.fsum(cm.b * ws.y)
    assert bty == pytest.approx(math.fsum(model.b * r0.y), rel=1e-12)
    lb = safe_lower_bound(cm, ws.y, ws.y_cl, None, ws.N)
    assert lb <= solve_sdp(cm, tol=1e-7).sdp_value + 1e-9


# --------------------------------------------------------------------------- limits, misc
def test_time_limit_and_statuses():
    rng = np.random.default_rng(600)
    X, ml, cl, P = _problem(rng, 40, 4)
    model = SDPModel.from_problem(P)
    r = solve_sdp(model, time_limit=0.0)
    assert r.status == "time_limit" and r.iterations == 1
    assert math.isfinite(r.lower_bound)
    with pytest.raises(InputError):
        solve_sdp(model, backend="nope")
    with pytest.raises(InputError):
        solve_sdp(model, eig="nope")
    with pytest.raises(InputError):
        solve_sdp(model, tol=0)


def test_single_super_point_and_threads():
    X = np.array([[0.0], [1.0], [3.0]])
    P = Problem.from_instance(make_instance(X, 1, [(0, 1), (1, 2)]))
    r = solve_sdp(SDPModel.from_problem(P), threads=1)
    opt, _ = brute_force(X, 1)
    assert r.lower_bound <= opt and r.sdp_value == pytest.approx(opt)


@pytest.mark.parametrize("method", ["full", "partial", "auto", "full32", "partial32", "auto32"])
def test_eig_methods_agree(method):
    """Every method gives the positive part; the single-precision ones to float32's accuracy
    (relative to ||W||), in double precision arrays."""
    rng = np.random.default_rng(700)
    G = rng.normal(size=(60, 5))
    W = G @ G.T - 0.3 * np.eye(60) + 1e-3 * (lambda A: A + A.T)(rng.normal(size=(60, 60)))
    vals, vecs = positive_part(W, method, rank_hint=2)  # the hint is too small on purpose
    lam, V = np.linalg.eigh(W)
    P_ref = (V[:, lam > 0] * lam[lam > 0]) @ V[:, lam > 0].T
    atol = 1e-5 * np.abs(lam).max() if method.endswith("32") else 1e-10
    assert vals.dtype == vecs.dtype == np.float64
    assert len(vals) == (lam > 0).sum()
    assert np.allclose((vecs * vals) @ vecs.T, P_ref, atol=atol)
    if method.endswith("32"):  # it did round: not the double-precision result
        assert not np.allclose((vecs * vals) @ vecs.T, P_ref, atol=1e-10)


def test_single_precision_eig_keeps_the_bound_valid():
    """With the projection in single precision the ADMM still converges, and its safe bound
    (computed in double) stays below the brute-force optimum and near the double-precision
    run's bound."""
    rng = np.random.default_rng(730)
    X, ml, cl, P = _problem(rng, 10, 3, n_ml=1, n_cl=2)
    model = SDPModel.from_problem(P)
    opt, _ = brute_force(X, 3, ml, cl)
    r32 = solve_sdp(model, eig="auto32", tol=1e-5)
    r64 = solve_sdp(model, eig="auto", tol=1e-5)
    assert r32.status == "solved"
    assert r32.lower_bound <= opt + 1e-9 * max(1.0, opt)
    assert r32.lower_bound == pytest.approx(r64.lower_bound, rel=1e-4)


# --------------------------------------------------------------------------- MOSEK
def test_mosek_task_matches_model():
    mosek = pytest.importorskip("mosek")
    rng = np.random.default_rng(800)
    X, ml, cl, P = _problem(rng, 9, 3, 1, 2)
    cuts = CutSet.triangles([0, 1], [1, 2], [2, 3]).concat(CutSet.cliques([[0, 1, 2, 3]], 0.1))
    model = SDPModel.from_problem(P, cuts)
    s = P.s
    Zr = rng.normal(size=(s, s))
    Zr = Zr + Zr.T
    with mosek.Env() as env, build_mosek_task(model, env) as task:
        lay = constraint_layout(model)
        assert task.getnumcon() == lay["cuts"].stop
        assert task.getnumbarvar() == 1 and task.getdimbarvarj(0) == s

        def dense(idx):
            sub_i, sub_j, val = task.getsparsesymmat(idx)
            A = np.zeros((s, s))
            A[sub_i, sub_j] = val
            A[sub_j, sub_i] = val
            return A

        rows = {}
        for t in range(task.getnumbaranz()):
            i, j, _, sub, w = task.getbaraidx(t)
            assert j == 0
            rows[i] = sum(wt * dense(ix) for ix, wt in zip(sub, w))
        values = np.array([float(np.vdot(rows[r], Zr)) for r in range(task.getnumcon())])
        bounds = [task.getconbound(r) for r in range(task.getnumcon())]
        keys = [b[0] for b in bounds]
        lows = np.array([b[1] for b in bounds])
        assert np.allclose(values[lay["rows"]], model.A(Zr)[:s])
        assert np.allclose(values[lay["trace"]], model.A(Zr)[s])
        iu, ju = np.triu_indices(s)
        assert np.allclose(values[lay["entries"]], Zr[iu, ju])
        assert np.allclose(values[lay["cuts"]], cuts.apply(Zr))
        fx, lo = mosek.boundkey.fx, mosek.boundkey.lo
        assert all(keys[r] == fx and lows[r] == 1.0 for r in range(s))
        assert keys[s] == fx and lows[s] == P.k
        clset = {tuple(p) for p in P.cl.tolist()}
        assert clset
        for t, (i, j) in enumerate(zip(iu.tolist(), ju.tolist())):
            r = lay["entries"].start + t
            assert keys[r] == (fx if (i, j) in clset else lo) and lows[r] == 0.0
        assert np.allclose(lows[lay["cuts"]], cuts.rhs)
        assert task.getnumbarcnz() == 1
        _, _, cmat, cw = task.getbarcidx(0)
        Cm = sum(w * dense(ix) for ix, w in zip(cmat, cw))
        assert np.allclose(Cm, model.C)
        assert task.getcfix() == pytest.approx(model.c0)


def test_mosek_backend_licence():
    pytest.importorskip("mosek")
    rng = np.random.default_rng(900)
    X, ml, cl, P = _problem(rng, 8, 2, 1, 1)
    model = SDPModel.from_problem(P)
    ok, why = mosek_licence()
    if not ok:
        with pytest.raises(BackendUnavailableError, match="licence"):
            solve_sdp(model, backend="mosek")
        pytest.skip(f"no MOSEK licence: {why}")
    r = solve_sdp(model, backend="mosek", tol=1e-9)
    if "CLARABEL" not in CVXPY_SOLVERS:
        pytest.skip("needs cvxpy with Clarabel for the interior-point reference")
    ref = _clarabel(model)
    assert r.sdp_value == pytest.approx(ref.sdp_value, rel=1e-6)
    assert r.lower_bound <= ref.sdp_value + 1e-8 * abs(ref.sdp_value)


def test_cuts_iterative_linear_solver_matches_direct(monkeypatch):
    """Above DIRECT_MAX_CUTS the (y, u) system is solved by CG: same answer as the LU path."""
    import pcsos.bounds.admm as admm

    rng = np.random.default_rng(301)
    X, ml, cl, P = _problem(rng, 20, 3, 2, 2, d=2)
    model = SDPModel.from_problem(P)
    r0 = solve_sdp(model, tol=1e-8)
    mc = model.with_cuts(violated_triangles(r0.Z, 40))
    direct = solve_sdp(mc, tol=1e-8)
    monkeypatch.setattr(admm, "DIRECT_MAX_CUTS", 0)
    monkeypatch.setattr(admm, "ENTRY_DENSE_MAX", 0)
    monkeypatch.setattr(admm, "ENTRY_SPARSE_MAX", 0)
    assert admm._Scaled(mc).ksolver == "cg"
    cg = solve_sdp(mc, tol=1e-8)
    assert cg.status == direct.status == "solved"
    assert cg.sdp_value == pytest.approx(direct.sdp_value, rel=1e-6)
    assert cg.lower_bound <= direct.sdp_value + 1e-6 * abs(direct.sdp_value)


@pytest.mark.parametrize("entry_solver, limits, n_cuts", [
    ("entry_dense", {}, 400),
    ("entry_lu", {"ENTRY_DENSE_MAX": 0, "DIRECT_MAX_CUTS": 0}, 400),
    ("entry_lu", {"ENTRY_DENSE_MAX": 0, "DIRECT_MAX_CUTS": 0}, 12),  # more entries than cuts
])
def test_cuts_entry_space_solver_matches_sparse_lu(monkeypatch, entry_solver, limits, n_cuts):
    """The Woodbury (entry-space) factorisations of the (y, u) system, dense Cholesky or
    sparse LU of I + B_E^T B_E, give the cut-space LU's solution of the linear system (and
    solve it, checked by operators), and the same SDP."""
    import pcsos.bounds.admm as admm

    rng = np.random.default_rng(302)
    X, ml, cl, P = _problem(rng, 16, 3, 1, 2, d=2)
    model = SDPModel.from_problem(P)
    r0 = solve_sdp(model, tol=1e-8)
    # 400: many cuts on few entries (more cuts than touched entries); 12: the other way
    cuts = violated_triangles(r0.Z, n_cuts)
    mc = model.with_cuts(cuts)
    with monkeypatch.context() as mp:
        for name, value in limits.items():
            mp.setattr(admm, name, value)
        sc_e = admm._Scaled(mc)
    assert sc_e.ksolver == entry_solver
    assert (sc_e.BE.shape[1] < cuts.m) == (n_cuts == 400)
    monkeypatch.setattr(admm, "ENTRY_DENSE_MAX", 0)
    sc_lu = admm._Scaled(mc)
    assert sc_lu.ksolver == "cut_lu"
    r1, r2 = rng.normal(size=P.s + 1), rng.normal(size=cuts.m)
    ye, ue = sc_e.solve_yu(r1, r2)
    yl, ul = sc_lu.solve_yu(r1, r2)
    np.testing.assert_allclose(ye, yl, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ue, ul, rtol=1e-8, atol=1e-10)
    H = sc_e.Hs.toarray()
    np.testing.assert_allclose(sc_e.A(sc_e.A_adj(ye)) + H.T @ ue, r1,
                               atol=1e-8 * np.abs(r1).max())
    np.testing.assert_allclose(H @ ye + sc_e.BE @ (sc_e.BET @ ue) + ue, r2,
                               atol=1e-8 * np.abs(r2).max())
    # the folded upper-triangle B_E has the Gram matrix of the full s^2-column B
    np.testing.assert_allclose((sc_lu.BE @ sc_lu.BET).toarray(), (sc_lu.B @ sc_lu.B.T).toarray(),
                               atol=1e-12)
    # and both solve the system: [AA*, H^T; H, K] [y; u] = [r1; r2], checked by operators
    H = sc_lu.Hs.toarray()
    Ku = sc_lu.BE @ (sc_lu.BET @ ue) + ue
    AAy = sc_lu.A(sc_lu.A_adj(ye))
    np.testing.assert_allclose(AAy + H.T @ ue, r1, atol=1e-8 * np.abs(r1).max())
    np.testing.assert_allclose(H @ ye + Ku, r2, atol=1e-8 * np.abs(r2).max())
    lu = solve_sdp(mc, tol=1e-8)
    monkeypatch.undo()
    for name, value in limits.items():
        monkeypatch.setattr(admm, name, value)
    ent = solve_sdp(mc, tol=1e-8)
    assert ent.status == lu.status == "solved"
    assert ent.sdp_value == pytest.approx(lu.sdp_value, rel=1e-6)


def test_in_place_adjoint_matches_the_operators(medium):
    """The iteration's X += alpha (A*y + B*u) (BLAS rank-one updates, the diagonal, the
    entries the cuts touch) is what the dense operators give, with cannot-links and cuts."""
    import pcsos.bounds.admm as admm

    P, model, r0 = medium
    sc = admm._Scaled(model.with_cuts(violated_triangles(r0.Z, 60)))
    assert sc.m > 0 and sc.cl_flat is not None
    rng = np.random.default_rng(303)
    y, u = rng.normal(size=P.s + 1), rng.normal(size=sc.m)
    X0 = rng.normal(size=(P.s, P.s))
    X = X0.copy()
    sc.add_adj(X, y, u, -0.7)
    np.testing.assert_allclose(X, X0 - 0.7 * (sc.A_adj(y) + sc.B_adj(u)), rtol=0, atol=1e-12)
    # the cannot-link entries as flat indices, both triangles
    assert not sc.nonneg.ravel()[sc.cl_flat].any() and (~sc.nonneg).sum() == len(sc.cl_flat)


def test_rank_one_update_in_place():
    """_ger adds alpha x y^T (x != y, so a transposed update would show) into C- and
    Fortran-ordered arrays alike."""
    import pcsos.bounds.arrays as arrays

    rng = np.random.default_rng(304)
    x, y = rng.normal(size=7), rng.normal(size=7)
    for order in ("C", "F"):
        X0 = np.asarray(rng.normal(size=(7, 7)), order=order)
        X = X0.copy(order=order)
        arrays._ger(-1.5, x, y, X)
        np.testing.assert_allclose(X, X0 - 1.5 * np.outer(x, y), rtol=0, atol=1e-13)


@pytest.mark.parametrize("order", ["NS", "SN"])
def test_reused_buffers_hold_nothing_still_needed(medium, monkeypatch, order):
    """The iteration hands its s x s and packed arrays back to a pool: poisoning every
    array handed back (and every new one) with NaN changes nothing, bit for bit, through
    Anderson fallbacks, sigma changes and every exit (solved, iteration limit, target)."""
    import pcsos.bounds.admm as admm

    P, model, r0 = medium
    mc = model.with_cuts(violated_triangles(r0.Z, 60))
    monkeypatch.setattr(admm, "ORDER", order)
    # a strict safeguard makes the acceleration fall back to its stored plain iterate
    monkeypatch.setattr(admm, "AA_SAFEGUARD", 0.9)
    runs = [dict(tol=1e-6), dict(max_iter=37, tol=1e-12),
            dict(tol=1e-12, bound_target=r0.lower_bound - 1.0)]
    clean = [solve_sdp(mc, **kw) for kw in runs]
    give, take = admm._Pool.give, admm._Pool.take

    def poisoned_give(self, *arrays, keep=()):
        n = len(self.spare)
        give(self, *arrays, keep=keep)
        for a in self.spare[n:]:
            a.fill(np.nan)

    def poisoned_take(self):
        a = take(self)
        a.fill(np.nan)
        return a

    monkeypatch.setattr(admm._Pool, "give", poisoned_give)
    monkeypatch.setattr(admm._Pool, "take", poisoned_take)
    for kw, ref in zip(runs, clean):
        r = solve_sdp(mc, **kw)
        assert r.status == ref.status and r.iterations == ref.iterations
        for name in ("Z", "y", "u", "N", "S"):
            np.testing.assert_array_equal(getattr(r, name), getattr(ref, name), err_msg=name)
        assert r.lower_bound == ref.lower_bound
    assert {r.status for r in clean} == {"solved", "max_iter", "target"}
    # unpolished, the duals returned are those of one iterate: S + N = C - A*y - B*u up to
    # the dual residual
    monkeypatch.undo()
    r = solve_sdp(mc, tol=1e-7, polish=0)
    assert r.status == "solved"
    N = np.array(r.N)
    N[mc.cl[:, 0], mc.cl[:, 1]] += r.y_cl
    N[mc.cl[:, 1], mc.cl[:, 0]] += r.y_cl
    R = mc.C - mc.A_adj(r.y) - mc.cuts.adjoint(r.u, P.s) - N - r.S
    assert np.linalg.norm(R) <= 1e-5 * np.linalg.norm(mc.C)


def test_a_deadline_stop_ends_the_solve_with_a_valid_bound():
    """The cancel hook stops the ADMM at the next iteration; the bound stays valid."""
    rng = np.random.default_rng(7)
    X, ml, cl, prob = _problem(rng, 9, 3, n_cl=3)
    model = SDPModel.from_problem(prob)
    calls = []
    res = solve_sdp(model, tol=1e-12,
                    time_limit=Deadline(stop=lambda: calls.append(1) or len(calls) >= 3))
    assert res.status == "time_limit" and res.iterations == 3
    opt, _ = brute_force(X, 3, ml, cl)
    assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)


def test_a_stopped_solve_does_not_polish(monkeypatch):
    """Out of time, the last bound is taken as it is: polishing's eigen-solves (seconds at
    s = 2 000) outlasted the grace a stopping search gives its jobs, and the root's bound
    was lost (a solve stopped at its time limit reported 0)."""
    import pcsos.bounds.admm as admm

    evals = []
    real = admm.polished_bound

    def spy(*args, evaluations, **kw):
        evals.append(evaluations)
        return real(*args, evaluations=evaluations, **kw)

    monkeypatch.setattr(admm, "polished_bound", spy)
    rng = np.random.default_rng(7)
    X, ml, cl, prob = _problem(rng, 9, 3, n_cl=3)
    model = SDPModel.from_problem(prob)
    calls = []
    res = solve_sdp(model, tol=1e-12,
                    time_limit=Deadline(stop=lambda: calls.append(1) or len(calls) >= 3))
    assert res.status == "time_limit" and evals == [0]
    res = solve_sdp(model, tol=1e-6)
    assert res.status == "solved" and evals[-1] > 0  # a solved one still polishes


def test_bound_target_stops_once_the_safe_bound_reaches_it(medium):
    P, model, r0 = medium
    # a target a little below the optimum: reached before full accuracy, and honoured
    target = r0.lower_bound - 1e-3 * abs(r0.lower_bound)
    early = solve_sdp(model, tol=1e-8, bound_target=target)
    assert early.status == "target" and early.lower_bound >= target
    full = solve_sdp(model, tol=1e-8)
    assert full.status == "solved" and early.iterations < full.iterations
    # a target above the SDP optimum is never reached: the solve ends as usual
    above = solve_sdp(model, tol=1e-5, bound_target=r0.sdp_value + 1.0)
    assert above.status == "solved" and above.lower_bound < r0.sdp_value + 1.0


def test_loop_stops_the_solve_at_the_pruning_bound(medium):
    from pcsos.cuts.loop import PRUNED, CuttingPlaneSettings, cutting_plane_loop

    P, model, r0 = medium
    ub = r0.sdp_value * (1 + 5e-5)  # prunes within 1e-4 with no cut
    br = cutting_plane_loop(P, upper_bound=ub, settings=CuttingPlaneSettings(loose_tol=None),
                            bound_settings={"tol": 1e-8})
    assert br.flag == PRUNED and br.n_rounds == 1 and br.sdp.status == "target"
    assert (ub - br.lower_bound) / ub <= 1e-4
