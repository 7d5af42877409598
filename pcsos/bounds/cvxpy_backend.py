"""Reference backends through CVXPY: SCS (first-order) and Clarabel (interior point).

They build the same relaxation from the same :class:`SDPModel` in Z-space (Z >= 0 as s²
entrywise constraints, which is exactly what the ADMM avoids) and return an
:class:`SDPResult` whose ``lower_bound`` is the safe bound of the duals they report.
"""

from __future__ import annotations

import math
import time

import numpy as np

from pcsos.bounds.model import SDPModel
from pcsos.bounds.result import SDPResult
from pcsos.bounds.safe import polished_bound
from pcsos.errors import BackendUnavailableError

__all__ = ["solve_cvxpy", "build_cvxpy"]


def _cvxpy():
    try:
        import cvxpy as cp
    except ImportError:
        raise BackendUnavailableError(
            "the scs/clarabel backends need cvxpy (pip install 'pcsos[scs]')") from None
    return cp


def build_cvxpy(model: SDPModel):
    """(problem, variable Z, constraints dict) for ``model`` in CVXPY."""
    cp = _cvxpy()
    s, e = model.s, model.e
    Z = cp.Variable((s, s), PSD=True)
    cons = {"rows": Z @ e == np.ones(s),
            "trace": cp.sum(cp.multiply(e, cp.diag(Z))) == float(model.k),
            "nonneg": Z >= 0}
    if len(model.cl):
        cons["cl"] = Z[model.cl[:, 0], model.cl[:, 1]] == 0
    if model.cuts.m:
        Bm = model.cuts.matrix(s)  # row-major index i*s+j; Z symmetric so vec order is moot
        cons["cuts"] = Bm @ cp.vec(Z, order="C") >= model.cuts.rhs
    prob = cp.Problem(cp.Minimize(model.c0 + cp.sum(cp.multiply(model.C, Z))),
                      list(cons.values()))
    return prob, Z, cons


def solve_cvxpy(model: SDPModel, *, solver: str, tol: float, max_iter: int | None,
                time_limit: float | None, verbose: bool, polish: int) -> SDPResult:
    """Solve with SCS or Clarabel via CVXPY; duals are read back and the safe bound applied
    (``polish``: as in :func:`~pcsos.bounds.safe.polished_bound`)."""
    cp = _cvxpy()
    t0 = time.perf_counter()
    prob, Z, cons = build_cvxpy(model)
    name = {"scs": "SCS", "clarabel": "CLARABEL"}[solver]
    if name not in cp.installed_solvers():
        raise BackendUnavailableError(f"{name} is not installed (pip install {solver})")
    opts: dict = {}
    if solver == "scs":
        opts.setdefault("eps_abs", tol)
        opts.setdefault("eps_rel", tol)
        if max_iter is not None:
            opts.setdefault("max_iters", int(max_iter))
        if time_limit is not None:
            opts.setdefault("time_limit_secs", float(time_limit))
    else:
        opts.setdefault("tol_gap_abs", tol)
        opts.setdefault("tol_gap_rel", tol)
        opts.setdefault("tol_feas", tol)
        if max_iter is not None:
            opts.setdefault("max_iter", int(max_iter))
        if time_limit is not None:
            opts.setdefault("time_limit", float(time_limit))
    try:
        prob.solve(solver=name, verbose=verbose, **opts)
    except cp.error.SolverError as exc:
        return _failed(model, solver, str(exc), time.perf_counter() - t0)
    if Z.value is None:
        return _failed(model, solver, f"status {prob.status}", time.perf_counter() - t0)
    s, q = model.s, len(model.cl)
    # CVXPY's equality duals enter the Lagrangian with the opposite sign to ours
    y = -np.concatenate([np.asarray(cons["rows"].dual_value, dtype=float).ravel(),
                         [float(cons["trace"].dual_value)]])
    N = np.asarray(cons["nonneg"].dual_value, dtype=float).reshape(s, s)
    y_cl = np.zeros(q)
    if q:
        # the constraint Z_ij = 0 touches entry (i, j) only; as a symmetric multiplier it
        # spreads half on (i, j) and half on (j, i)
        y_cl = -0.5 * np.asarray(cons["cl"].dual_value, dtype=float).ravel()
    u = (np.asarray(cons["cuts"].dual_value, dtype=float).ravel() if model.cuts.m
         else np.zeros(0))
    Zv = 0.5 * (Z.value + Z.value.T)
    lb, y, y_cl, u, N = polished_bound(model, y, y_cl, u, N, evaluations=polish)
    stats = prob.solver_stats
    status = "solved" if prob.status == "optimal" else (
        "max_iter" if prob.status == "optimal_inaccurate" else "failed")
    pres = float(np.linalg.norm(model.A(Zv) - model.b)) / (1 + float(np.linalg.norm(model.b)))
    Nsym = np.maximum(0.5 * (N + N.T), 0)
    S = model.C - model.A_adj(y) - Nsym - (model.cuts.adjoint(u, s) if model.cuts.m else 0)
    ev = np.linalg.eigvalsh(S)
    dres = float(np.linalg.norm(np.minimum(ev, 0))) / (1 + float(np.linalg.norm(model.C)))
    return SDPResult(Z=Zv, y=y, y_cl=y_cl, u=u, N=N, sdp_value=model.objective(Zv),
                     dual_value=math.fsum([model.c0, *(model.b * y), *(model.l * u)]),
                     lower_bound=lb, primal_residual=pres, dual_residual=dres,
                     iterations=int(stats.num_iters or 0), seconds=time.perf_counter() - t0,
                     status=status, backend=solver, message=str(prob.status), S=S)


def _failed(model: SDPModel, solver: str, msg: str, secs: float) -> SDPResult:
    s = model.s
    return SDPResult(Z=np.zeros((s, s)), y=np.zeros(s + 1), y_cl=np.zeros(len(model.cl)),
                     u=np.zeros(model.cuts.m), N=np.zeros((s, s)), sdp_value=math.nan,
                     dual_value=math.nan, lower_bound=-math.inf, primal_residual=math.inf,
                     dual_residual=math.inf, iterations=0, seconds=secs, status="failed",
                     backend=solver, message=msg)
