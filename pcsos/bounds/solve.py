"""``solve_sdp``: one entry point, backends chosen by name (CVXPY-like adapters)."""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from pcsos.bounds.model import SDPModel
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.bounds.safe import safe_lower_bound
from pcsos.errors import InputError

__all__ = ["solve_sdp", "BACKENDS"]

BACKENDS = ("admm", "mosek", "scs", "clarabel")


def _threads(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=int(threads), user_api="blas")


def solve_sdp(model: SDPModel, *, backend: str = "admm", tol: float = 1e-5,
              max_iter: int | None = None, time_limit: float | None = None,
              warm_start: SDPResult | WarmStart | None = None, threads: int | None = None,
              eig: str = "auto", verbose: bool = False, should_stop=None,
              bound_target: float | None = None, **options) -> SDPResult:
    """Solve the node relaxation ``model`` and return an :class:`SDPResult` with a safe bound.

    ``backend``: 'admm' (default, :func:`pcsos.bounds.admm.solve_admm`), 'mosek' (interior
    point, needs a licence), 'scs' or 'clarabel' (via cvxpy, references). ``tol``: relative KKT
    tolerance (the safe bound is valid at any accuracy, but may sit more than ``tol`` below the
    SDP optimum: docs/safe_bound.md); ``max_iter`` / ``time_limit`` (seconds) cap the run
    (status 'max_iter' / 'time_limit'; the bound stays valid). ``warm_start``: a previous result
    or a :class:`WarmStart` (ADMM only; see WarmStart for model changes). ``threads``: BLAS
    threads for this call (None leaves the process setting). ``eig``: eigensolver name
    (:mod:`pcsos.bounds.eig`). ``should_stop``: a callable polled once per ADMM iteration; True
    ends the solve with status 'time_limit' (a cancel hook for the tree; the other backends
    ignore it). ``bound_target``: the ADMM stops with status 'target' once its safe bound
    reaches this value, e.g. the value below which the incumbent prunes the node (the other
    backends ignore it). Extra ``options`` go to the backend.
    Raises :class:`~pcsos.errors.BackendUnavailableError` when a backend is missing.
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown SDP backend {backend!r}; choose one of {BACKENDS}",
                         source="backend")
    if not (tol > 0):
        raise InputError(f"tol must be positive, got {tol}", source="tol")
    if isinstance(warm_start, SDPResult):
        warm_start = WarmStart.from_result(warm_start)
    with _threads(threads):
        if model.s == 1:
            return _single(model)
        if backend == "admm":
            from pcsos.bounds.admm import solve_admm
            return solve_admm(model, tol=tol, max_iter=max_iter, time_limit=time_limit,
                              warm_start=warm_start, eig=eig, verbose=verbose,
                              should_stop=should_stop, bound_target=bound_target,
                              **options)
        if backend == "mosek":
            from pcsos.bounds.mosek_backend import solve_mosek
            return solve_mosek(model, tol=tol, time_limit=time_limit, verbose=verbose,
                               **options)
        from pcsos.bounds.cvxpy_backend import solve_cvxpy
        return solve_cvxpy(model, solver=backend, tol=tol, max_iter=max_iter,
                           time_limit=time_limit, verbose=verbose, **options)


def _single(model: SDPModel) -> SDPResult:
    """s = 1 (so k = 1): the only feasible point is Z = 1/e; the bound is exact."""
    t0 = time.perf_counter()
    Z = np.array([[1.0 / model.e[0]]])
    y = np.zeros(2)
    lb = safe_lower_bound(model, y, None, np.zeros(model.cuts.m), None)
    val = model.objective(Z)
    return SDPResult(Z=Z, y=y, y_cl=np.zeros(0), u=np.zeros(model.cuts.m), N=np.zeros((1, 1)),
                     sdp_value=val, dual_value=model.c0, lower_bound=min(lb, val),
                     primal_residual=0.0, dual_residual=0.0, iterations=0,
                     seconds=time.perf_counter() - t0, status="solved", backend="closed_form",
                     message="single super-point", S=model.C.copy(), gap=0.0)


del math
