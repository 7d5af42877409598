"""The restricted master's own interior-point method (pcsos.bounds.colgen.ipm) and its
normal-equations kernel, against dense numpy and against HiGHS (scipy's linprog)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from pcsos._kernels._lp import normal_lower
from scipy.optimize import linprog

from pcsos._kernels import _lp
from pcsos.bounds.colgen import ipm as ipm_mod
from pcsos.bounds.colgen.ipm import solve_lp
from pcsos.bounds.colgen.master import IPM_ZERO, Master


@pytest.mark.parametrize("seed", range(5))
def test_the_kernel_adds_a_d_a_transpose_to_the_lower_triangle(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 30)), int(rng.integers(1, 200))
    A = sp.random(m, n, density=float(rng.uniform(0.05, 0.6)), random_state=seed,
                  data_rvs=lambda k: rng.choice([-1.0, 1.0, 0.5, 3.0], k), format="csc")
    A.sort_indices()
    d = rng.uniform(size=n) * (rng.uniform(size=n) < 0.8)
    M = np.full((m, m), 2.0)  # it adds to what is there
    normal_lower(A.indptr.astype(np.int64), A.indices.astype(np.int32), A.data.copy(), d, M)
    dense = A.toarray()
    ref = 2.0 + (dense * d) @ dense.T
    low = np.tril_indices(m)
    assert np.allclose(M[low], ref[low], rtol=1e-12, atol=1e-12)
    assert np.all(M[np.triu_indices(m, 1)] == 2.0)  # the upper triangle is not touched


@pytest.mark.parametrize("seed", range(4))
def test_the_kernels_factor_solve_and_multiply_as_numpy_does(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 40)), int(rng.integers(1, 150))
    A = sp.random(m, n, density=0.3, random_state=seed, format="csc")
    A.sort_indices()
    ip, ix, v = A.indptr.astype(np.int64), A.indices.astype(np.int32), A.data.copy()
    x, y = rng.normal(size=n), rng.normal(size=m)
    out_m, out_n = np.full(m, 7.0), np.full(n, 7.0)
    _lp.matvec(ip, ix, v, x, out_m)
    _lp.rmatvec(ip, ix, v, y, out_n)
    assert np.allclose(out_m, A @ x, rtol=1e-12, atol=1e-12)
    assert np.allclose(out_n, A.T @ y, rtol=1e-12, atol=1e-12)
    B = rng.normal(size=(m, m))
    P = B @ B.T + m * np.eye(m)
    M, L = np.tril(P), np.zeros((m, m))  # factor() fills the upper triangle itself
    assert _lp.factor(M, L, 0.0, 1) == 0.0
    assert np.array_equal(M, np.tril(P) + np.tril(P, -1).T)
    r = rng.normal(size=m)
    u = r.copy()
    _lp.solve(L, u)
    assert np.allclose(P @ u, r, rtol=1e-9, atol=1e-9)
    # a singular matrix takes a shift: 100 times the first one per failure
    Z = np.zeros((m, m))
    assert _lp.factor(Z, L, 1e-8, 3) == 1e-8
    assert _lp.factor(-np.eye(m), L, 1e-8, 3) == -1.0


def _random_lp(rng):
    """A feasible LP with bounded objective: rows of every kind (equal, at most, at least,
    ranged, free) through a known x0 >= 0, and a cost c = A^T y0 + z0 (z0 >= 0) with y0 of
    each row's sign, so that y0 is dual feasible."""
    m, n = int(rng.integers(3, 25)), int(rng.integers(30, 120))
    A = sp.random(m, n, density=0.3, random_state=int(rng.integers(1 << 30)),
                  data_rvs=lambda k: rng.choice([1.0, -1.0, 2.0], k), format="csc").toarray()
    A[:, :m] += np.eye(m)  # no empty row
    x0 = rng.uniform(size=n) * (rng.uniform(size=n) < 0.5)
    ax = A @ x0
    kind = rng.integers(0, 5, size=m)
    lower = np.where(np.isin(kind, (0, 2, 3)), ax - (kind == 3) * rng.uniform(size=m), -np.inf)
    upper = np.where(np.isin(kind, (0, 1, 3)), ax + (kind == 3) * rng.uniform(size=m), np.inf)
    lower[kind == 0] = upper[kind == 0] = ax[kind == 0]
    y0 = rng.normal(size=m)
    y0[kind == 1] = -np.abs(y0[kind == 1])
    y0[kind == 2] = np.abs(y0[kind == 2])
    y0[kind == 4] = 0.0
    c = A.T @ y0 + rng.uniform(size=n)
    return A, lower, upper, c


@pytest.mark.parametrize("seed", range(12))
def test_the_interior_point_method_solves_an_lp_as_highs_does(seed):
    """The same optimum as HiGHS; duals that price every column at no less than minus the
    tolerance, of the sign of their row's bounds, and whose dual objective meets the
    primal's."""
    rng = np.random.default_rng(seed)
    A, lower, upper, c = _random_lp(rng)
    sol = solve_lp(sp.csc_matrix(A), lower, upper, c, tol=1e-9)
    assert sol is not None
    fin = np.isfinite(lower) | np.isfinite(upper)
    rows = np.flatnonzero(fin)
    A_ub = np.vstack([A[np.isfinite(upper)], -A[np.isfinite(lower)]])
    b_ub = np.concatenate([upper[np.isfinite(upper)], -lower[np.isfinite(lower)]])
    ref = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    assert ref.status == 0
    scale = 1.0 + abs(ref.fun)
    assert sol.objective == pytest.approx(ref.fun, rel=1e-6, abs=1e-6)
    x, y = sol.x, sol.y
    assert np.all(x >= 0)
    ax = A @ x
    assert np.all(ax[rows] >= lower[rows] - 1e-6 * scale)
    assert np.all(ax[rows] <= upper[rows] + 1e-6 * scale)
    assert np.all(c - A.T @ y >= -1e-6 * scale)
    tol = 1e-6 * scale
    assert np.all(y[~np.isfinite(lower)] <= tol) and np.all(y[~np.isfinite(upper)] >= -tol)
    assert np.all(y[~fin] == 0.0)
    dual = sum(yi * (lower[i] if yi > 0 else upper[i]) for i, yi in enumerate(y)
               if abs(yi) > 1e-12)
    assert dual == pytest.approx(ref.fun, rel=1e-5, abs=1e-5)


def test_an_unbounded_or_infeasible_lp_returns_none():
    A = sp.csc_matrix(np.array([[1.0, -1.0]]))
    # x0 - x1 = 1 with cost -x0 - x1: unbounded below
    assert solve_lp(A, [1.0], [1.0], [-1.0, -1.0]) is None
    # x0 - x1 = 1 and x0 - x1 = 2 at once: infeasible
    A2 = sp.csc_matrix(np.array([[1.0, -1.0], [1.0, -1.0]]))
    assert solve_lp(A2, [1.0, 2.0], [1.0, 2.0], [1.0, 1.0]) is None


def _master_lp(at_most: bool, boxed: bool, seed: int):
    rng = np.random.default_rng(seed)
    s, k = 30, 4
    cols = sorted({tuple(sorted(rng.choice(s, int(rng.integers(3, 12)), replace=False)
                                .tolist())) for _ in range(120)})
    costs = list(rng.random(len(cols)) * 5 + 1) + [1.0] * s
    cols += [(i,) for i in range(s)]
    m = Master(s, k, 1e3, "ipm", at_most=at_most, own=True)
    m.add(cols, costs)
    if boxed:
        m.set_box(np.full(s, 0.3) + rng.normal(scale=0.05, size=s), 0.1)
    return m


@pytest.mark.parametrize("at_most", [False, True])
@pytest.mark.parametrize("boxed", [False, True])
def test_the_master_solves_by_its_own_method_the_lp_that_highs_solves(at_most, boxed,
                                                                    monkeypatch):
    """The own method ran (its solution held, not HiGHS's), its value is HiGHS's interior
    point's, its duals price every held column (and the box's and artificial columns) at no
    less than minus the tolerance, and weights below IPM_ZERO read as zero."""
    out = {}
    for own in (True, False):
        with monkeypatch.context() as mp:
            if not own:
                mp.setattr("pcsos.bounds.colgen.master.solve_lp", lambda *a, **kw: None)
            m = _master_lp(at_most, boxed, 7)
            pi, sigma, lam, value = m.solve()
            assert (m._x is not None) == own
            rc = [v - pi[list(c)].sum() - sigma[0] for c, v in zip(m.columns, m.costs)]
            assert min(rc) >= -1e-5 * value
            assert np.all((lam == 0) | (lam >= IPM_ZERO))
            if at_most:
                assert sigma[0] <= 1e-6 * value
            if boxed:
                centre = m._box_costs[:m.s] - 0.1
                assert np.all(np.abs(pi - centre) <= 0.1 + 1e-6)
            out[own] = (value, m.artificial_weight(), m.box_weight())
    assert out[True][0] == pytest.approx(out[False][0], rel=1e-6)
    assert out[True][1] == pytest.approx(out[False][1], abs=1e-5)
    assert out[True][2] == pytest.approx(out[False][2], abs=1e-4)


def test_a_master_with_cut_rows_is_solved_by_highs():
    """Cut rows enter existing columns, which the own method's copy of the LP does not
    follow: HiGHS solves such a master."""
    m = _master_lp(False, False, 3)
    m.add_cuts([[0, 1, 2]])
    m.solve()
    assert m._x is None and len(m.cut_duals) == 1


def test_the_own_method_stops_at_its_iteration_limit(monkeypatch):
    monkeypatch.setattr(ipm_mod, "MAX_ITER", 2)
    m = _master_lp(False, True, 5)
    m.solve()  # HiGHS takes over
    assert m._x is None
