"""``solve_sdp``: one entry point, backends chosen by name (CVXPY-like adapters)."""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from pcsos.bounds.admm import solve_admm
from pcsos.bounds.model import SDPModel
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.bounds.safe import EPS
from pcsos.bounds.settings import BACKENDS, BoundSettings
from pcsos.clock import Deadline
from pcsos.errors import InputError

__all__ = ["solve_sdp", "BACKENDS", "BoundSettings", "blas_threads"]

#: Below this many super-points one BLAS thread ran more ADMM iterations per second than
#: two on the 2-core machine, even with OpenBLAS's short spin (pcsos/__init__.py): 254
#: against 196 at s = 214, 53 against 57 at s = 500, 6.4 against 9.2 at s = 951
#: (benchmarks/bench_blas_timeout.py, docs/benchmarks.md).
BLAS_THREADS_MIN_S = 500


def blas_threads(s: int, threads: int | None = None) -> int | None:
    """BLAS threads for one relaxation of ``s`` super-points solved alone: ``threads`` when
    given, else 1 below :data:`BLAS_THREADS_MIN_S` and None (the process's setting) from
    there on."""
    if threads is not None:
        return int(threads)
    return 1 if s < BLAS_THREADS_MIN_S else None


def _threads(threads: int | None):
    if threads is None:
        return contextlib.nullcontext()
    return threadpool_limits(limits=int(threads), user_api="blas")


def solve_sdp(model: SDPModel, settings: BoundSettings | dict | None = None, *,
              time_limit: float | Deadline | None = None,
              warm_start: SDPResult | WarmStart | None = None, threads: int | None = None,
              bound_target: float | None = None,
              **changes) -> SDPResult:
    """Solve the node relaxation ``model`` and return an :class:`SDPResult` with a safe bound.

    ``settings``: a :class:`~pcsos.bounds.settings.BoundSettings` (or a dict of its fields;
    None: the defaults), with ``changes`` (its field names) on top, e.g.
    ``solve_sdp(model, tol=1e-6)``; an unknown name is an :class:`InputError`. Its
    ``backend`` picks the solver: 'admm' (default, :func:`pcsos.bounds.admm.solve_admm`),
    'mosek' (interior point, needs a licence), 'scs' or 'clarabel' (via cvxpy, references).
    The safe bound is valid at any ``tol``, but may sit more than ``tol`` below the SDP
    optimum (docs/safe_bound.md).

    Per call: ``time_limit`` (seconds, or a :class:`~pcsos.clock.Deadline`, whose stop
    signal the ADMM polls once per iteration) caps the run (status 'time_limit'; the bound
    stays valid). ``warm_start``: a previous result or a :class:`WarmStart` (ADMM only; see
    WarmStart for model changes). ``threads``: BLAS threads for this call (None leaves the
    process setting). ``bound_target``: the ADMM stops with status 'target' once its safe bound
    reaches this value, e.g. the value below which the incumbent prunes the node (the other
    backends ignore it).
    Raises :class:`~pcsos.errors.BackendUnavailableError` when a backend is missing.
    """
    st = BoundSettings.make(settings, **changes)
    if model.s < model.k:
        # tr M = k with 0 <= M <= I needs s >= k: no clustering, and no relaxation either
        raise InputError(f"the relaxation has {model.s} super-points for k = {model.k} "
                         "clusters: infeasible (check feasibility first)", source="model")
    if isinstance(warm_start, SDPResult):
        warm_start = WarmStart.from_result(warm_start)
    if model.k == 1:
        return _one_cluster(model)
    with _threads(threads):
        if st.backend == "admm":
            return solve_admm(model, st, time_limit=time_limit, warm_start=warm_start,
                              bound_target=bound_target)
        seconds = Deadline.of(time_limit).seconds()  # what an outside solver takes
        if st.backend == "mosek":
            from pcsos.bounds.mosek_backend import solve_mosek  # lazy: optional backend
            return solve_mosek(model, tol=st.tol, time_limit=seconds, verbose=st.verbose,
                               polish=st.polish)
        from pcsos.bounds.cvxpy_backend import solve_cvxpy  # lazy: optional backend
        return solve_cvxpy(model, solver=st.backend, tol=st.tol, max_iter=st.max_iter,
                           time_limit=seconds, verbose=st.verbose, polish=st.polish)


def _one_cluster(model: SDPModel) -> SDPResult:
    """k = 1: the relaxation's only feasible point is Z = 1 1^T / n, so its value is exact.

    Why unique: with M = D^1/2 Z D^1/2, tr M = 1, M >= 0 (PSD) and M v = v for the unit
    vector v = D^1/2 1 / sqrt(n), so the eigenvalues other than v's sum to 0 and vanish:
    M = v v^T. The value c0 + <C, Z> = c0 + sum(C) / n is computed with ``math.fsum``
    (correctly rounded), so a margin of a few ulps of its terms makes it a safe bound. (The
    first-order solver also converges slowly on this single-point feasible set: 3-4 s at
    s = 4.) Cannot-link pairs would force Z_ij = 0 and leave nothing feasible.
    """
    if len(model.cl):
        raise InputError("k = 1 with cannot-link pairs: the relaxation is infeasible "
                         "(check feasibility first)", source="model")
    t0 = time.perf_counter()
    n = float(np.sum(model.e))
    Z = np.full((model.s, model.s), 1.0 / n)
    total = math.fsum(model.C.ravel())
    val = math.fsum([model.c0, total / n])
    lb = max(0.0, val - 4 * EPS * (abs(model.c0) + abs(total) / n))
    return SDPResult(Z=Z, y=np.zeros(model.s + 1), y_cl=np.zeros(0), u=np.zeros(model.cuts.m),
                     N=np.zeros((model.s, model.s)), sdp_value=val, dual_value=lb,
                     lower_bound=lb, primal_residual=0.0, dual_residual=0.0, iterations=0,
                     seconds=time.perf_counter() - t0, status="solved", backend="closed_form",
                     message="k = 1: a single feasible point", S=model.C.copy(), gap=0.0)


