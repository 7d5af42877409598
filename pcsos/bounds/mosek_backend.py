"""MOSEK backend (interior point, extra ``[mosek]``; needs a licence, never the default).

The relaxation is built from the :class:`SDPModel` in MOSEK's Optimizer API: one
semidefinite variable Z (s x s) and only scalar constraints <A_i, Z> on it, in the order

    s rows of Z e = 1  |  <Diag(e), Z> = k  |  Z_ij >= 0 (or = 0 on CL pairs), i <= j,
    row-major upper triangle  |  one row per cut <B_t, Z> >= l_t.

Building a task works without a licence (tests read its data back); solving needs one and
raises :class:`~pcsos.errors.BackendUnavailableError` otherwise. After the solve the duals
are mapped back (N_ij = y_ij / 2 off the diagonal since the row for Z_ij is the symmetric
matrix (E_ij + E_ji)/2) and the safe bound of :mod:`pcsos.bounds.safe` is applied.
"""

from __future__ import annotations

import math
import time

import numpy as np

from pcsos.bounds.model import SDPModel
from pcsos.bounds.result import SDPResult
from pcsos.bounds.safe import safe_lower_bound
from pcsos.errors import BackendUnavailableError

__all__ = ["build_mosek_task", "mosek_licence", "solve_mosek", "constraint_layout"]


def _mosek():
    try:
        import mosek
    except ImportError:
        raise BackendUnavailableError(
            "the mosek backend needs the MOSEK package (pip install 'pcsos[mosek]')") from None
    return mosek


def mosek_licence() -> tuple[bool, str]:
    """(True, '') when a MOSEK licence can be checked out, else (False, the reason)."""
    try:
        mosek = _mosek()
    except BackendUnavailableError as exc:
        return False, str(exc)
    try:
        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
            env.checkinlicense(mosek.feature.pts)
        return True, ""
    except mosek.Error as exc:
        return False, ("the mosek backend needs a MOSEK licence (set MOSEKLM_LICENSE_FILE or "
                       f"put mosek.lic in ~/mosek/); MOSEK said: {exc}")


def constraint_layout(model: SDPModel) -> dict[str, slice]:
    """Row ranges of the task's constraint blocks."""
    s, m = model.s, model.cuts.m
    nn = s * (s + 1) // 2
    return {"rows": slice(0, s), "trace": slice(s, s + 1), "entries": slice(s + 1, s + 1 + nn),
            "cuts": slice(s + 1 + nn, s + 1 + nn + m)}


def _lower(i, j):
    """Lower-triangle coordinates (MOSEK stores symmetric matrices by their lower part)."""
    return np.maximum(i, j), np.minimum(i, j)


def build_mosek_task(model: SDPModel, env):
    """A MOSEK task holding the relaxation (see the module docstring for the layout)."""
    mosek = _mosek()
    s, e = model.s, model.e
    task = env.Task()
    task.appendbarvars([s])
    lay = constraint_layout(model)
    ncon = lay["cuts"].stop
    task.appendcons(ncon)
    # objective: <C, Z> + c0
    ii, jj = np.tril_indices(s)
    cidx = task.appendsparsesymmat(s, ii.tolist(), jj.tolist(), model.C[ii, jj].tolist())
    task.putbarcj(0, [cidx], [1.0])
    task.putcfix(float(model.c0))
    task.putobjsense(mosek.objsense.minimize)
    fx, lo = mosek.boundkey.fx, mosek.boundkey.lo
    # Z e = 1: the symmetric matrix with e_i on (i, i) and e_j / 2 on (i, j), (j, i)
    for i in range(s):
        j = np.arange(s)
        a, b = _lower(np.full(s, i), j)
        val = np.where(j == i, e[i], 0.5 * e)
        idx = task.appendsparsesymmat(s, a.tolist(), b.tolist(), val.tolist())
        task.putbaraij(i, 0, [idx], [1.0])
        task.putconbound(i, fx, 1.0, 1.0)
    idx = task.appendsparsesymmat(s, list(range(s)), list(range(s)), e.tolist())
    task.putbaraij(s, 0, [idx], [1.0])
    task.putconbound(s, fx, float(model.k), float(model.k))
    # entrywise Z_ij >= 0, = 0 on CL pairs (row-major upper triangle i <= j)
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
        a, b = _lower(ci, cj)
        val = np.where(ci == cj, cf, 0.5 * cf)
        # merge repeated entries (MOSEK rejects duplicates)
        key = a * s + b
        uk, inv = np.unique(key, return_inverse=True)
        val = np.bincount(inv, weights=val)
        idx = task.appendsparsesymmat(s, (uk // s).tolist(), (uk % s).tolist(), val.tolist())
        task.putbaraij(r0 + t, 0, [idx], [1.0])
        task.putconbound(r0 + t, lo, float(cuts.rhs[t]), math.inf)
    return task


def solve_mosek(model: SDPModel, *, tol: float = 1e-8, time_limit: float | None = None,
                verbose: bool = False, **options) -> SDPResult:
    """Solve by MOSEK's interior point; raises BackendUnavailableError without a licence."""
    mosek = _mosek()
    ok, why = mosek_licence()
    if not ok:
        raise BackendUnavailableError(why)
    t0 = time.perf_counter()
    s, q = model.s, len(model.cl)
    with mosek.Env() as env, build_mosek_task(model, env) as task:
        try:
            if verbose:
                task.set_Stream(mosek.streamtype.log, lambda msg: print(msg, end=""))
            task.putdouparam(mosek.dparam.intpnt_co_tol_rel_gap, tol)
            task.putdouparam(mosek.dparam.intpnt_co_tol_pfeas, tol)
            task.putdouparam(mosek.dparam.intpnt_co_tol_dfeas, tol)
            if time_limit is not None:
                task.putdouparam(mosek.dparam.optimizer_max_time, float(time_limit))
            for name, value in options.items():
                task.putparam(name, str(value))
            task.optimize()
            sol = mosek.soltype.itr
            solsta = task.getsolsta(sol)
            lay = constraint_layout(model)
            yall = np.array(task.gety(sol))
            barx = np.array(task.getbarxj(sol, 0))
            iters = task.getintinf(mosek.iinfitem.intpnt_iter)
        except mosek.Error as exc:
            raise BackendUnavailableError(f"MOSEK failed: {exc}") from None
    # barx is the lower triangle in column-major order, i.e. the upper one row by row
    Z = np.zeros((s, s))
    iu, ju = np.triu_indices(s)
    Z[ju, iu] = barx
    Z[iu, ju] = barx
    y = np.concatenate([yall[lay["rows"]], yall[lay["trace"]]])
    ye = yall[lay["entries"]]
    half = np.where(iu == ju, ye, 0.5 * ye)
    N = np.zeros((s, s))
    N[iu, ju] = half
    N[ju, iu] = half
    y_cl = np.zeros(q)
    if q:
        y_cl = N[model.cl[:, 0], model.cl[:, 1]].copy()
        N[model.cl[:, 0], model.cl[:, 1]] = 0.0
        N[model.cl[:, 1], model.cl[:, 0]] = 0.0
    u = yall[lay["cuts"]]
    lb = safe_lower_bound(model, y, y_cl, u, N)
    status = "solved" if solsta == mosek.solsta.optimal else "failed"
    pres = float(np.linalg.norm(model.A(Z) - model.b)) / (1 + float(np.linalg.norm(model.b)))
    return SDPResult(Z=Z, y=y, y_cl=y_cl, u=u, N=N, sdp_value=model.objective(Z),
                     dual_value=math.fsum([model.c0, *(model.b * y), *(model.l * u)]),
                     lower_bound=lb, primal_residual=pres, dual_residual=float("nan"),
                     iterations=int(iters), seconds=time.perf_counter() - t0, status=status,
                     backend="mosek", message=str(solsta))
