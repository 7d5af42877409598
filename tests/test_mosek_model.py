"""The MOSEK task built by :mod:`pcsos.bounds.mosek_backend`, checked without a licence.

Building a task needs no licence (only ``optimize`` does), so the model itself is checked
row by row on every machine that has the mosek package: against a dense construction written
from the module docstring, and against the former one-call-per-row builder (kept here as the
reference), which must give the very same task.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pcsos.bounds import SDPModel, solve_sdp
from pcsos.bounds.cutset import CutSet
from pcsos.bounds.mosek_backend import build_mosek_task, constraint_layout, mosek_licence
from pcsos.errors import BackendUnavailableError
from pcsos.problem import Problem, make_instance

mosek = pytest.importorskip("mosek", reason="the mosek package is not installed")


def _model(s, k=3, n_cuts=None, seed=0):
    """s super-points (no ML, so s = n), CL pairs, and cuts of every family with duplicates."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(s, 2))
    cl = [(i, i + 1) for i in range(0, s - 1, 3)] + [(s - 1, 0)]  # one pair given as (j, i)
    P = Problem.from_instance(make_instance(X, k, [], cl))
    n_cuts = 3 * s if n_cuts is None else n_cuts
    i, j, h = (rng.integers(0, s, size=n_cuts) for _ in range(3))
    ok = (i != j) & (j != h) & (i != h)
    extra = CutSet(  # repeated (i, j) entries inside one cut, given in either order
        [0, 4, 4], [0, 2, 1, 0], [1, 1, 2, 0], [1.0, 0.5, 0.25, -2.0], [0.3, -1.0], [0, 0])
    cuts = CutSet.triangles(i[ok], j[ok], h[ok]).concat(
        CutSet.cliques([[0, 1, 2, 3]], 0.1), CutSet.pairs([0, 1], [2, 0]), extra)
    return SDPModel.from_problem(P, cuts)


def _reference_rows(model):
    """Dense (A_r, key, lower, upper) for every row, straight from the module docstring."""
    s, e = model.s, model.e
    fx, lo = mosek.boundkey.fx, mosek.boundkey.lo
    rows = []
    for i in range(s):  # (Z e)_i symmetrised: e/2 on row and column i, e_i on (i, i)
        A = np.zeros((s, s))
        A[i, :] += 0.5 * e
        A[:, i] += 0.5 * e
        rows.append((A, fx, 1.0, 1.0))
    rows.append((np.diag(e), fx, float(model.k), float(model.k)))
    cl = {(min(a, b), max(a, b)) for a, b in model.cl.tolist()}
    for i in range(s):
        for j in range(i, s):
            A = np.zeros((s, s))
            A[i, j] += 0.5
            A[j, i] += 0.5
            rows.append((A, fx, 0.0, 0.0) if (i, j) in cl else (A, lo, 0.0, math.inf))
    c = model.cuts
    for t in range(c.m):
        A = np.zeros((s, s))
        for p in range(c.indptr[t], c.indptr[t + 1]):
            A[c.i[p], c.j[p]] += 0.5 * c.coef[p]
            A[c.j[p], c.i[p]] += 0.5 * c.coef[p]
        rows.append((A, lo, float(c.rhs[t]), math.inf))
    return rows


def _task_rows(task, s):
    """Dense barA row by row, read back through the block-triplet view of the task."""
    num, con, var, sk, sl, val = task.getbarablocktriplet()
    assert set(var) <= {0}
    con, sk, sl, val = (np.asarray(a) for a in (con, sk, sl, val))
    assert np.all(sk >= sl)  # MOSEK holds the lower triangle
    A = np.zeros((task.getnumcon(), s, s))
    np.add.at(A, (con, sk, sl), val)
    off = sk != sl
    np.add.at(A, (con[off], sl[off], sk[off]), val[off])
    return A


def _build_by_loop(model, env):
    """The former builder (one appendsparsesymmat / putbaraij / putconbound per row)."""
    s, e = model.s, model.e
    task = env.Task()
    task.appendbarvars([s])
    lay = constraint_layout(model)
    task.appendcons(lay["cuts"].stop)
    ii, jj = np.tril_indices(s)
    cidx = task.appendsparsesymmat(s, ii.tolist(), jj.tolist(), model.C[ii, jj].tolist())
    task.putbarcj(0, [cidx], [1.0])
    task.putcfix(float(model.c0))
    task.putobjsense(mosek.objsense.minimize)
    fx, lo = mosek.boundkey.fx, mosek.boundkey.lo
    for i in range(s):
        j = np.arange(s)
        a, b = np.maximum(i, j), np.minimum(i, j)
        val = np.where(j == i, e[i], 0.5 * e)
        idx = task.appendsparsesymmat(s, a.tolist(), b.tolist(), val.tolist())
        task.putbaraij(i, 0, [idx], [1.0])
        task.putconbound(i, fx, 1.0, 1.0)
    idx = task.appendsparsesymmat(s, list(range(s)), list(range(s)), e.tolist())
    task.putbaraij(s, 0, [idx], [1.0])
    task.putconbound(s, fx, float(model.k), float(model.k))
    clset = {(int(a), int(b)) for a, b in model.cl}
    iu, ju = np.triu_indices(s)
    r0 = lay["entries"].start
    for t, (i, j) in enumerate(zip(iu.tolist(), ju.tolist())):
        idx = task.appendsparsesymmat(s, [j], [i], [1.0 if i == j else 0.5])
        task.putbaraij(r0 + t, 0, [idx], [1.0])
        if (i, j) in clset:
            task.putconbound(r0 + t, fx, 0.0, 0.0)
        else:
            task.putconbound(r0 + t, lo, 0.0, math.inf)
    cuts = model.cuts
    r0 = lay["cuts"].start
    for t in range(cuts.m):
        sl = slice(cuts.indptr[t], cuts.indptr[t + 1])
        ci, cj, cf = cuts.i[sl], cuts.j[sl], cuts.coef[sl]
        a, b = np.maximum(ci, cj), np.minimum(ci, cj)
        val = np.where(ci == cj, cf, 0.5 * cf)
        key = a * s + b
        uk, inv = np.unique(key, return_inverse=True)
        val = np.bincount(inv, weights=val)
        idx = task.appendsparsesymmat(s, (uk // s).tolist(), (uk % s).tolist(), val.tolist())
        task.putbaraij(r0 + t, 0, [idx], [1.0])
        task.putconbound(r0 + t, lo, float(cuts.rhs[t]), math.inf)
    return task


@pytest.mark.parametrize("s, with_cuts", [(2, False), (5, True), (9, True), (16, True)])
def test_every_row_matches_the_docstring(s, with_cuts):
    """Rows, coefficients and bounds against the dense reference; no licence involved."""
    if with_cuts:
        model = _model(s, seed=s)
    else:  # no CL pair and no cut: the entry and cut blocks' edge cases
        X = np.arange(float(s))[:, None]
        model = SDPModel.from_problem(Problem.from_instance(make_instance(X, 1, [], [])))
        assert model.cuts.m == 0 and len(model.cl) == 0
    ref = _reference_rows(model)
    with mosek.Env() as env, build_mosek_task(model, env) as task:
        assert task.getnumcon() == len(ref) == constraint_layout(model)["cuts"].stop
        assert task.getnumbarvar() == 1 and task.getdimbarvarj(0) == s
        A = _task_rows(task, s)
        for r, (Aref, key, blo, bup) in enumerate(ref):
            np.testing.assert_allclose(A[r], Aref, rtol=1e-15, atol=0, err_msg=f"row {r}")
            got = task.getconbound(r)
            # MOSEK ignores (and reports as 1e30) the upper bound of a 'lo' row
            assert got[:2] == (key, blo) and (key == mosek.boundkey.lo or got[2] == bup), r
        # objective <C, Z> + c0
        _, _, cmat, cw = task.getbarcidx(0)
        C = np.zeros((s, s))
        for ix, w in zip(cmat, cw):
            si, sj, v = task.getsparsesymmat(ix)
            C[si, sj] += w * np.asarray(v)
            C[sj, si] = C[si, sj]
        np.testing.assert_allclose(C, model.C, rtol=1e-15, atol=0)
        assert task.getcfix() == model.c0
        assert task.getobjsense() == mosek.objsense.minimize


def test_same_task_as_the_row_by_row_builder():
    """The batched build stores the same matrices, in the same order, as the old loop."""
    model = _model(23)
    assert len(model.cl) and model.cuts.m
    with mosek.Env() as env, build_mosek_task(model, env) as new, \
            _build_by_loop(model, env) as old:
        assert new.getnumcon() == old.getnumcon()
        assert new.getnumbaranz() == old.getnumbaranz() == new.getnumcon()
        assert new.getnumsymmat() == old.getnumsymmat()
        for r in range(new.getnumbaranz()):
            a, b = old.getbaraidx(r), new.getbaraidx(r)
            assert a[:3] == b[:3] and list(a[3]) == list(b[3]) and list(a[4]) == list(b[4])
        for ix in range(new.getnumsymmat()):
            for x, y in zip(old.getsparsesymmat(ix), new.getsparsesymmat(ix)):
                assert list(x) == list(y), ix
        for r in range(new.getnumcon()):
            assert new.getconbound(r) == old.getconbound(r), r


def test_building_needs_no_licence_but_optimize_does():
    """The task builds on any machine; without a licence optimize is what MOSEK refuses."""
    ok, why = mosek_licence()
    model = _model(6)
    with mosek.Env() as env, build_mosek_task(model, env) as task:
        assert task.getnumcon() == constraint_layout(model)["cuts"].stop
        if ok:
            pytest.skip("a MOSEK licence is present: the refusal cannot be observed")
        with pytest.raises(mosek.Error):
            task.optimize()
    with pytest.raises(BackendUnavailableError, match="licence"):
        solve_sdp(model, backend="mosek")
    assert "licence" in why


def test_solve_with_cl_and_cuts_matches_clarabel():
    """The actual solve: skips with MOSEK's reason when no licence can be checked out."""
    ok, why = mosek_licence()
    if not ok:
        pytest.skip(f"no MOSEK licence: {why}")
    pytest.importorskip("cvxpy")
    model = _model(8, k=3, n_cuts=6, seed=5)
    r = solve_sdp(model, backend="mosek", tol=1e-9)
    ref = solve_sdp(model, backend="clarabel", tol=1e-8)
    assert r.status == "solved" and ref.status == "solved"
    assert r.sdp_value == pytest.approx(ref.sdp_value, rel=1e-6)
    assert r.lower_bound <= ref.sdp_value + 1e-8 * abs(ref.sdp_value)
