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
from pcsos.bounds.safe import polished_bound
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


def _constraint_matrices(model: SDPModel):
    """Every constraint row's symmetric matrix as lower-triangle triplets, rows in task order.

    Returns ``(nz, subi, subj, val)``: matrix r (row r of the task) owns the next ``nz[r]``
    triplets. The triplets are exactly those the row-by-row construction passed to
    ``appendsparsesymmat`` (same order inside each matrix), so the task is the same.
    """
    s, e = model.s, model.e
    # Z e = 1, row i: e_i on (i, i) and e_j / 2 on (i, j), (j, i), for j = 0..s-1
    ri, rj = np.repeat(np.arange(s), s), np.tile(np.arange(s), s)
    a_rows, b_rows = _lower(ri, rj)
    v_rows = np.where(ri == rj, e[ri], 0.5 * e[rj])
    # <Diag(e), Z> = k
    d = np.arange(s)
    # Z_ij for i <= j (row-major upper triangle): 1 on the diagonal, 1/2 on (i, j), (j, i)
    iu, ju = np.triu_indices(s)
    v_ent = np.where(iu == ju, 1.0, 0.5)
    # cuts: sum_t coef * Z_ij; repeated (i, j) inside one cut are merged (MOSEK rejects
    # duplicate triplets), summing in order of appearance like a per-cut bincount
    cuts = model.cuts
    rows = np.repeat(np.arange(cuts.m, dtype=np.int64), np.diff(cuts.indptr))
    ca, cb = _lower(cuts.i, cuts.j)
    cval = np.where(cuts.i == cuts.j, cuts.coef, 0.5 * cuts.coef)
    key = (rows * s + ca) * s + cb  # sorted by cut, then by (row, column) inside each cut
    uk, inv = np.unique(key, return_inverse=True)
    v_cut = np.bincount(inv.ravel(), weights=cval, minlength=len(uk))
    nz_cut = np.bincount(uk // (s * s), minlength=cuts.m)
    nz = np.concatenate([np.full(s, s), [s], np.ones(len(iu), dtype=np.int64), nz_cut])
    subi = np.concatenate([a_rows, d, ju, (uk // s) % s])
    subj = np.concatenate([b_rows, d, iu, uk % s])
    val = np.concatenate([v_rows, e, v_ent, v_cut])
    return nz, subi, subj, val


def build_mosek_task(model: SDPModel, env):
    """A MOSEK task holding the relaxation (see the module docstring for the layout)."""
    mosek = _mosek()
    s = model.s
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
    # One symmetric matrix per row, all appended and attached by two list calls: one Python
    # call per row (s(s+1)/2 of them for Z >= 0) dominated the build time for large s.
    nz, subi, subj, val = _constraint_matrices(model)
    idx = task.appendsparsesymmatlist(np.full(ncon, s, dtype=np.int32), nz.astype(np.int64),
                                      subi.astype(np.int32), subj.astype(np.int32),
                                      val.astype(np.float64))
    ptr = np.arange(ncon + 1, dtype=np.int64)
    task.putbaraijlist(np.arange(ncon, dtype=np.int32), np.zeros(ncon, dtype=np.int32),
                       ptr[:-1], ptr[1:], np.asarray(idx, dtype=np.int64), np.ones(ncon))
    # bounds: Z e = 1 and the trace are fixed; Z_ij >= 0 (fixed at 0 on CL pairs); cuts >= l
    fx, lo = mosek.boundkey.fx, mosek.boundkey.lo
    iu, ju = np.triu_indices(s)
    on_cl = np.zeros((s, s), dtype=bool)
    if len(model.cl):
        on_cl[model.cl[:, 0], model.cl[:, 1]] = True
    on_cl = on_cl[iu, ju]
    keys = [fx] * (s + 1) + [fx if c else lo for c in on_cl.tolist()] + [lo] * model.cuts.m
    blc = np.concatenate([np.ones(s), [float(model.k)], np.zeros(len(iu)), model.cuts.rhs])
    buc = np.concatenate([np.ones(s), [float(model.k)], np.where(on_cl, 0.0, math.inf),
                          np.full(model.cuts.m, math.inf)])
    task.putconboundslice(0, ncon, keys, blc, buc)
    return task


def solve_mosek(model: SDPModel, *, tol: float, time_limit: float | None, verbose: bool,
                polish: int) -> SDPResult:
    """Solve by MOSEK's interior point; raises BackendUnavailableError without a licence.
    ``polish``: as in :func:`~pcsos.bounds.safe.polished_bound`."""
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
    lb, y, y_cl, u, N = polished_bound(model, y, y_cl, u, N, evaluations=polish)
    status = "solved" if solsta == mosek.solsta.optimal else "failed"
    pres = float(np.linalg.norm(model.A(Z) - model.b)) / (1 + float(np.linalg.norm(model.b)))
    return SDPResult(Z=Z, y=y, y_cl=y_cl, u=u, N=N, sdp_value=model.objective(Z),
                     dual_value=math.fsum([model.c0, *(model.b * y), *(model.l * u)]),
                     lower_bound=lb, primal_residual=pres, dual_residual=float("nan"),
                     iterations=int(iters), seconds=time.perf_counter() - t0, status=status,
                     backend="mosek", message=str(solsta))
