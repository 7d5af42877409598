"""Pluggable eigendecompositions for the PSD projection of the ADMM.

The only operation the solver needs per iteration is the *positive part* of a symmetric
matrix, ``Π_PSD(W) = V diag(λ+) V^T``, which at a clustering-like solution is low rank
(about k). A method is a function ``(W, rank_hint) -> (vals, vecs)`` returning the strictly
positive eigenvalues of W and their eigenvectors (numpy arrays: registered methods run on
the CPU); register new ones with :func:`register_eig` and select them by name through
``solve_sdp(..., eig=NAME)``. A *stateful* method (``register_eig(name, factory,
stateful=True)``) is a factory of callables ``(W, rank_hint, tol) -> (vals, vecs)``: the
ADMM makes one per solve through :func:`projector`, so that it can keep the last
eigenvectors as the next start, and passes ``tol``, the absolute accuracy (Frobenius norm of
the error of the positive part) that its current residuals need, or None for full accuracy.

Built in:

- ``'full'``: ``scipy.linalg.eigh`` with the divide-and-conquer driver ``'evd'``
  (:data:`DENSE_DRIVER`; on the ADMM's own matrices it beats MRRR at every size measured,
  see there).
- ``'partial'``: the top ``r`` eigenpairs only (``subset_by_index``, driver ``'evr'``), with
  ``r`` = rank hint + a margin; when all ``r`` computed values are positive the window may
  have cut the positive part, so it doubles ``r`` and retries (exact, never truncated).
- ``'krylov'``: warm-started block LOBPCG (Knyazev) on the top of the spectrum, started from
  the previous call's block (it keeps state: one instance per solve, see :func:`projector`),
  stopped at the accuracy the caller asks for, with the same dense fallbacks as ``'auto'``
  (:class:`KrylovProjector`).
- ``'auto'``: ``'partial'`` while the window (hint + 8) is at most s / ``WINDOW_ROOM``,
  else ``'full'``; from
  ``s >= KRYLOV_MIN_S`` on, ``'krylov'`` (which makes the same dense choice when it has no
  usable block), and from ``KRYLOV_NARROW_MIN_S`` on while its block is at most
  ``s / KRYLOV_NARROW`` columns wide.
- ``'full32'``, ``'partial32'``, ``'auto32'``: the same on W rounded to single precision,
  the results returned in double. The projection is then exact to about 1e-7 relative,
  which limits the KKT accuracy the ADMM can reach; the safe bound is computed in double
  whatever the method, so it stays valid. Not the default: on a subset of 556 points (k =
  20, one thread) an iteration took 66 ms against 83 ms and the first 300 iterations
  followed the same residuals, but the solve to 1e-3 took 1 451 iterations against 929
  (docs/decomposition.md).
- On a GPU the whole ADMM iteration runs there (``solve_sdp(device='cuda')``,
  :mod:`pcsos.bounds.arrays`), and 'full', 'partial', 'krylov' and 'auto' with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla

from pcsos.bounds.arrays import NUMPY, ArrayBackend
from pcsos.errors import InputError

__all__ = ["positive_part", "register_eig", "eig_methods", "projector", "KrylovProjector"]

EigFn = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
_REGISTRY: dict[str, Callable] = {}
_STATEFUL: set[str] = set()
# 'auto' picks a method by the rank hint; the suffix says the precision
_AUTO = {"auto": "", "auto32": "32"}
# 'auto' hands the projection to 'krylov' from this size on; below it, it does exactly what
# it did before 'krylov' existed (the test suite and the shared instances have s <= 500).
# Measured with one BLAS thread (benchmarks/bench_projection.py, steady iterations): at
# s = 1 000 the projection took 7 / 39 ms (k = 3 / 20) against 76 / 85 ms for the top-(k+8)
# eigh; at s = 600 3 / 28 ms against 17 / 22 ms, a loss at k = 20, so the threshold stays
KRYLOV_MIN_S = 1000
# below it, 'auto' takes 'krylov' from KRYLOV_NARROW_MIN_S on once the block (rank hint +
# KRYLOV_MARGIN columns) is at most s / KRYLOV_NARROW wide. Steady-state ms per projection,
# one thread, 'partial' against 'krylov' (bench_projection.json, "mid_s"): s = 600: 31 / 5
# (k = 3), 29 / 12 (k = 10), 27 / 42 (k = 20, a block of 28 > 600 / 24: kept dense);
# s = 800: 56 / 5, 67 / 18, 61 / 29, the same residuals after 40 iterations. The shared
# instances (s <= 500) are below both thresholds
KRYLOV_NARROW_MIN_S = 600
KRYLOV_NARROW = 24
KRYLOV_MARGIN = 8  # block columns beyond the rank hint: they speed up convergence
KRYLOV_MAXITER = 40  # block steps before giving up for the dense top-r eigh
# a block of more than s / KRYLOV_ROOM columns is left to the dense top-r eigh. s = 4 000,
# k = 20, one thread: the top-r eigh takes 5.2-6.4 s for r = 40-500, block steps while the
# rank falls took 4.8 s at 254 columns, 7.5 s at 307 and 66 s at 942 (a fast-moving wide
# block needs many steps of cost ~ s^2 p each)
KRYLOV_ROOM = 16
# with no tolerance from the caller: relative to ||W||_F (about what a dense eigh gives)
KRYLOV_TIGHT = 1e-11
# LAPACK driver of every dense eigendecomposition of the projection on numpy. The ADMM's
# iterates (W of real solves at iteration 40-120: glass s = 214, ECG5000 s = 426 and 500,
# the overlap generator s = 284-951) have clustered spectra, which divide and conquer
# deflates: 'evd' took 0.40-0.64x the time of MRRR ('evr', the earlier choice, measured on
# random matrices) at one and two threads (benchmarks/bench_eig_drivers.py). Windows of the
# top r eigenpairs need 'evr' (subset_by_index)
DENSE_DRIVER = "evd"
# a window of the top r eigenpairs ('partial') is taken while r is at most s / WINDOW_ROOM,
# else a full decomposition by DENSE_DRIVER. On the same matrices shifted to r positive
# eigenvalues, the window's time met the full 'evd' between r = s/10 and s/7 (13 of 214,
# 45 of 426, 60 of 500, 25 of 284, 55-69 of 578, 114-130 of 951; one and two threads).
# With MRRR for both the window paid up to s/4
WINDOW_ROOM = 8


def register_eig(name: str, fn: Callable, *, stateful: bool = False) -> None:
    """Register an eigensolver of the ADMM's PSD projection under ``name``.

    Parameters
    ----------
    name : str
        The name that ``BoundSettings(eig=...)`` and ``--eig`` will take.
    fn : callable
        ``fn(W, rank_hint) -> (values, vectors)``: the positive eigenvalues of the
        symmetric matrix W and their eigenvectors as columns; ``rank_hint`` is the rank of
        the last projection. With ``stateful``, ``fn()`` makes such a callable taking
        ``(W, rank_hint, tol)``, kept for one solve. ``fn`` must not modify W: the ADMM
        builds the next dual slack in the same array.
    stateful : bool, default False
        See ``fn``.

    Examples
    --------
    >>> import numpy as np
    >>> from pcsos.bounds.eig import eig_methods, positive_part, register_eig
    >>> def dense(W, rank_hint):
    ...     vals, vecs = np.linalg.eigh(W)
    ...     return vals[vals > 0], vecs[:, vals > 0]
    >>> register_eig("numpy-eigh", dense)
    >>> "numpy-eigh" in eig_methods()
    True
    >>> vals, vecs = positive_part(np.diag([2.0, -1.0]), method="numpy-eigh")
    >>> vals.tolist(), vecs.tolist()
    ([2.0], [[1.0], [0.0]])
    """
    _REGISTRY[name] = fn
    if stateful:
        _STATEFUL.add(name)
    else:
        _STATEFUL.discard(name)


def eig_methods() -> list[str]:
    """Names that ``BoundSettings(eig=...)`` and ``pcsos bound --eig`` accept.

    Returns
    -------
    list of str
        The registered eigensolvers, then ``'auto'`` (by size and rank) and ``'auto32'``
        (the same on W rounded to single precision).

    Examples
    --------
    >>> from pcsos.bounds.eig import eig_methods
    >>> {"full", "partial", "krylov", "auto"} <= set(eig_methods())
    True
    """
    return sorted(_REGISTRY) + list(_AUTO)


def _positive(be: ArrayBackend | None, vals, vecs):
    """The positive eigenvalues of an ascending decomposition and their vectors: the last
    ones (copied on numpy, so that the whole s x s decomposition is not kept alive)."""
    be = be if be is not None else NUMPY
    first = vals.shape[0] - _count_positive(be, vals)
    if be.is_numpy:
        return vals[first:].copy(), vecs[:, first:].copy()
    return vals[first:], vecs[:, first:]


def _full(W, rank_hint: int, be: ArrayBackend | None = None):
    return _positive(be, *_eigh(be if be is not None else NUMPY, W))


def _top(W: np.ndarray, r: int, be: ArrayBackend | None = None):
    """The top r eigenpairs, doubling r until the window reaches a non-positive value (off
    numpy, where no windowed eigensolver is standard: the top r of a full one)."""
    s = W.shape[0]
    if be is not None and not be.is_numpy:
        vals, vecs = be.eigh(W)
        npos = _count_positive(be, vals)
        while r < min(s, npos + 1):  # the window must reach a non-positive value
            r = min(s, 2 * r)
        return vals[s - r:], vecs[:, s - r:]
    while True:
        vals, vecs = sla.eigh(W, driver="evr", check_finite=False,
                              subset_by_index=[s - r, s - 1])
        if vals[0] <= 0 or r == s:
            return vals, vecs
        r = min(s, 2 * r)


def _partial(W, rank_hint: int, be: ArrayBackend | None = None):
    s = W.shape[0]
    return _positive(be, *_top(W, min(s, max(8, int(rank_hint) + 8)), be))


def _single(fn: EigFn) -> EigFn:
    def run(W: np.ndarray, rank_hint: int) -> tuple[np.ndarray, np.ndarray]:
        vals, vecs = fn(W.astype(np.float32), rank_hint)
        return vals.astype(np.float64), vecs.astype(np.float64)
    return run


def _block_fits(s: int, p: int) -> bool:
    """Whether a block of p columns is narrow enough to iterate (``KRYLOV_ROOM``)."""
    return p * KRYLOV_ROOM <= s


def _dense_wide(s: int, hint: int) -> bool:
    """Whether the positive part may be too wide for a window (the 'auto' rule)."""
    return WINDOW_ROOM * (hint + 8) > s


class KrylovProjector:
    """The positive part by warm-started block LOBPCG, keeping its block between calls.

    Each call works on a block of ``p = rank hint + KRYLOV_MARGIN`` columns, started from
    the previous call's leading Ritz vectors (consecutive ADMM iterates differ little),
    and runs LOBPCG steps (Rayleigh-Ritz on [X, R, P], the new directions orthonormalised by
    Householder QR and multiplied by W once) until every Ritz pair with value above
    ``tau = tol / sqrt(p)`` has a residual norm at most ``tau``. Then the window test: the
    smallest Ritz value of the block must be at most ``tau`` (the block reaches below the
    positive part, up to the accuracy asked); else the block grows by half and the steps go
    on. The pairs with value above ``tau`` are returned; those in (0, tau] are dropped (each
    is worth at most tau + its residual). When the hint exceeds s / ``WINDOW_ROOM`` - 8
    (early iterations, wide positive part) it uses a full eigh; with no block yet, or a
    block of more than ``s / KRYLOV_ROOM`` columns, or when the steps do not converge in
    ``KRYLOV_MAXITER``, the top-r eigh of ``'partial'``; each dense result seeds the next
    block. ``stats`` counts what each call did ('dense', 'partial', 'krylov', 'steps',
    'grown').

    ``backend`` (:class:`~pcsos.bounds.arrays.ArrayBackend`, default numpy): where W and the
    block live. The s x p work (products with W, QR, residuals) stays there; the small
    Rayleigh-Ritz problems (at most 3p x 3p) and the p residual norms cross to the host.
    """

    def __init__(self, seed: int = 0, backend: ArrayBackend | None = None):
        self.be = backend if backend is not None else NUMPY
        self.X = None
        self.rng = np.random.default_rng(seed)
        self.stats = {"dense": 0, "partial": 0, "krylov": 0, "steps": 0, "grown": 0}

    def __call__(self, W, rank_hint: int, tol: float | None = None):
        s = W.shape[0]
        hint = int(rank_hint)
        if _dense_wide(s, hint):
            vals, vecs = _eigh(self.be, W)
            self.stats["dense"] += 1
            return self._keep(vals, vecs, s)
        if self.X is not None and _block_fits(s, hint + KRYLOV_MARGIN):
            out = self._iterate(W, hint, tol)
            if out is not None:
                return out
        vals, vecs = _top(W, min(s, max(8, hint + KRYLOV_MARGIN)), self.be)
        self.stats["partial"] += 1
        return self._keep(vals, vecs, s)

    def _keep(self, vals, vecs, s):
        """Seed the next block with the top of this (ascending) decomposition."""
        be = self.be
        npos = _count_positive(be, vals)
        p = min(vals.shape[0], npos + KRYLOV_MARGIN)
        if _dense_wide(s, npos):
            self.X = None
        elif be.is_numpy:
            self.X = np.ascontiguousarray(vecs[:, -p:][:, ::-1])
        else:
            self.X = be.xp.flip(vecs[:, vecs.shape[1] - p:], axis=1)
        return _positive(be, vals, vecs)

    def _randn(self, s: int, p: int):
        return self.be.asarray(self.rng.standard_normal((s, p)))

    def _iterate(self, W, hint, tol):
        be = self.be
        s = W.shape[0]
        norm = be.norm(W)
        if norm == 0.0:
            return be.zeros(0), be.zeros((s, 0))
        tight = KRYLOV_TIGHT * norm
        tol = tight if tol is None or not tol > tight else min(float(tol), 1e-2 * norm)
        # the block follows the hint both ways: a block kept from a wide early iterate would
        # make every Rayleigh-Ritz step pay for columns the positive part no longer needs
        p = hint + KRYLOV_MARGIN
        X = self.X[:, :min(p, self.X.shape[1])]
        if p > X.shape[1]:
            X = be.concat([X, self._randn(s, p - X.shape[1])], axis=1)
        X = _qr(be, X)
        AX = W @ X
        theta, X, AX = _rayleigh_ritz(X, AX, p, be)
        P = None
        tau = tol / math.sqrt(p)
        for _ in range(KRYLOV_MAXITER):
            th = be.to_numpy(theta)
            R = AX - X * theta
            rho = _col_norms(be, R)
            active = (th > tau) & (rho > tau)
            if not active.any():
                if th[-1] <= tau:
                    self.X = X
                    self.stats["krylov"] += 1
                    keep = int(np.count_nonzero(th > tau))  # descending: a prefix
                    return theta[:keep], X[:, :keep]
                # the window may cut the positive part: grow the block
                grow = max(KRYLOV_MARGIN, p // 2)
                if not _block_fits(s, p + grow):
                    return None
                p += grow
                tau = tol / math.sqrt(p)
                self.stats["grown"] += 1
                Z = self._randn(s, grow)
                P = None
            else:
                Z = _directions(be, R, P, active)
            self.stats["steps"] += 1
            step = _lobpcg_step(W, X, AX, Z, p, be)
            if step is None:
                return None
            theta, X, AX, P = step
        return None


def _eigh(be: ArrayBackend, W):
    """All eigenpairs of the symmetric W, ascending (scipy's :data:`DENSE_DRIVER` on numpy)."""
    if be.is_numpy:
        return sla.eigh(W, driver=DENSE_DRIVER, check_finite=False)
    return be.eigh(W)


def _count_positive(be: ArrayBackend, vals) -> int:
    if be.is_numpy:
        return int(np.count_nonzero(vals > 0))
    return int(be.xp.count_nonzero(vals > 0))


def _qr(be: ArrayBackend, X):
    """An orthonormal basis of the columns of X (Householder QR)."""
    if be.is_numpy:
        return sla.qr(X, mode="economic", check_finite=False)[0]
    return be.xp.linalg.qr(X, mode="reduced")[0]


def _cols(be: ArrayBackend, A, idx: np.ndarray):
    """The columns ``idx`` (host integers) of A."""
    if be.is_numpy:
        return A[:, idx]
    return be.xp.take(A, be.index(idx), axis=1)


def _col_norms(be: ArrayBackend, R) -> np.ndarray:
    """The column norms of R, on the host."""
    if be.is_numpy:
        return np.linalg.norm(R, axis=0)
    return be.to_numpy(be.xp.linalg.vector_norm(R, axis=0))


def top_pairs(W, X0, tol: float, maxiter: int = KRYLOV_MAXITER,
              be: ArrayBackend | None = None) -> tuple[np.ndarray, Any, np.ndarray]:
    """Approximate top ``p = X0.shape[1]`` eigenpairs of the symmetric W by block LOBPCG from
    X0: Ritz values (descending, on the host), orthonormal Ritz vectors (on W's device) and
    their residual norms (on the host), after every residual is at most ``tol`` or
    ``maxiter`` steps (no accuracy is promised: callers that need one check the residuals,
    or certify the result otherwise). ``be``: where W and X0 live (default numpy)."""
    be = be if be is not None else NUMPY
    p = X0.shape[1]
    X = _qr(be, X0)
    theta, X, AX = _rayleigh_ritz(X, W @ X, p, be)
    P = None
    for it in range(maxiter + 1):
        R = AX - X * theta
        rho = _col_norms(be, R)
        active = rho > tol
        if it == maxiter or not active.any():
            break
        step = _lobpcg_step(W, X, AX, _directions(be, R, P, active), p, be)
        if step is None:
            break
        theta, X, AX, P = step
    return be.to_numpy(theta), X, rho


def _directions(be: ArrayBackend, R, P, active: np.ndarray):
    """The search directions of a LOBPCG step: the residuals of the ``active`` Ritz pairs
    (a host mask) and, after the first step, their previous directions P."""
    idx = np.flatnonzero(active)
    if P is None:
        return _cols(be, R, idx)
    return be.concat([_cols(be, R, idx), _cols(be, P, idx)], axis=1)


def _lobpcg_step(W, X, AX, Z, p: int, be: ArrayBackend):
    """One step of block LOBPCG: Rayleigh-Ritz of W on span[X, Z], keeping the top p.
    Returns (theta, X, W X, P), P the part of the new X that Z brought (the next step's
    directions), or None when Z adds nothing to span(X)."""
    Q2 = _orth_against(X, Z, be)
    if Q2.shape[1] == 0:
        return None
    AQ2 = W @ Q2
    m = X.shape[1]
    theta, Y = _ritz(be.concat([X, Q2], axis=1), be.concat([AX, AQ2], axis=1), p, be)
    Y1, Y2 = Y[:m, :], Y[m:, :]
    return theta, X @ Y1 + Q2 @ Y2, AX @ Y1 + AQ2 @ Y2, Q2 @ Y2


def _orth_against(X, Z, be: ArrayBackend | None = None):
    """An orthonormal basis of the part of span(Z) orthogonal to span(X) (X orthonormal).

    Columns of Z that are (numerically) in span(X) or in the span of the others are dropped
    (pivoted QR on numpy; elsewhere, where no pivoted QR is standard, the eigenvectors of
    Z^T Z whose singular values fall below the same relative threshold), since a QR factor's
    arbitrary completion would not be orthogonal to X; the projection is repeated after the
    QR, as twice is enough (Kahan-Parlett)."""
    be = be if be is not None else NUMPY
    for _ in range(2):
        Z = Z - X @ (X.T @ Z)
    if be.is_numpy:
        Q, R, _ = sla.qr(Z, mode="economic", pivoting=True, check_finite=False)
        d = np.abs(np.diag(R))
        if len(d) == 0 or not d[0] > 0:
            return Z[:, :0]
        Q = Q[:, d > 1e-10 * d[0]]
    else:
        lam, U = np.linalg.eigh(be.to_numpy(Z.T @ Z))  # ascending; singular values^2
        sv = np.sqrt(np.maximum(lam, 0.0))
        if len(sv) == 0 or not sv[-1] > 0:
            return Z[:, :0]
        keep = sv > 1e-10 * sv[-1]
        Q = Z @ be.asarray(U[:, keep] / sv[keep])
    Q = Q - X @ (X.T @ Q)
    return _qr(be, Q)


def _ritz(Q, AQ, p: int, be: ArrayBackend | None = None):
    """The top p Ritz values (descending) and coefficient vectors of span(Q), Q orthonormal
    (the small eigenproblem on the host; the vectors on Q's device)."""
    be = be if be is not None else NUMPY
    H = be.to_numpy(Q.T @ AQ)
    H = 0.5 * (H + H.T)
    m = H.shape[0]
    vals, Y = sla.eigh(H, check_finite=False, subset_by_index=[m - p, m - 1])
    vals, Y = vals[::-1], Y[:, ::-1]
    if be.is_numpy:
        return vals, Y
    return be.asarray(vals), be.asarray(Y)


def _rayleigh_ritz(X, AX, p, be: ArrayBackend | None = None):
    theta, Y = _ritz(X, AX, p, be)
    return theta, X @ Y, AX @ Y


register_eig("full", _full)
register_eig("partial", _partial)
register_eig("full32", _single(_full))
register_eig("partial32", _single(_partial))
register_eig("krylov", KrylovProjector, stateful=True)


def resolve(method: str) -> str:
    """Check a method name (raises :class:`InputError` for an unknown one)."""
    if method not in _AUTO and method not in _REGISTRY:
        raise InputError(f"unknown eig method {method!r}; choose one of {eig_methods()}",
                         source="eig")
    return method


def _choose(method: str, s: int, hint: int) -> str:
    if method in _AUTO:
        if not _AUTO[method] and (s >= KRYLOV_MIN_S or (
                s >= KRYLOV_NARROW_MIN_S and KRYLOV_NARROW * (hint + KRYLOV_MARGIN) <= s)):
            return "krylov"
        return ("full" if _dense_wide(s, hint) else "partial") + _AUTO[method]
    return method


def projector(method: str = "auto", backend: ArrayBackend | None = None):
    """A callable ``(W, rank_hint=None, tol=None) -> (vals, vecs)`` for one solve: the
    positive part by ``method``, stateful methods kept between calls (their state lives in
    the callable; ``last`` holds the last result). ``backend``: where W lives (default
    numpy); off numpy the methods are 'full', 'partial', 'krylov' and 'auto', run there."""
    method = resolve(method)
    be = backend if backend is not None else NUMPY
    if not be.is_numpy and _choose(method, KRYLOV_MIN_S, 0) not in _DEVICE_METHODS:
        raise InputError(f"eig={method!r} runs on the CPU only; on {be.label} choose one of "
                         f"{', '.join(_DEVICE_METHODS)} or 'auto'", source="eig")
    made: dict[str, Callable] = {}

    def run(W, rank_hint: int | None = None, tol: float | None = None):
        s = W.shape[0]
        hint = s if rank_hint is None else int(rank_hint)
        name = _choose(method, s, hint)
        if not be.is_numpy:
            out = _on_device(be, name, made, W, hint, tol)
        elif name in _STATEFUL:
            if name not in made:
                made[name] = _REGISTRY[name]()
            out = made[name](W, hint, tol)
        else:
            out = _REGISTRY[name](W, hint)
        run.last = out
        return out

    run.last = None
    run.instances = made
    return run


_DEVICE_METHODS = ("full", "partial", "krylov")


def _on_device(be: ArrayBackend, name: str, made: dict, W, hint: int, tol):
    """The positive part by method ``name`` on a non-numpy backend."""
    if name == "krylov":
        if name not in made:
            made[name] = KrylovProjector(backend=be)
        return made[name](W, hint, tol)
    return (_full if name == "full" else _partial)(W, hint, be)


def positive_part(W: np.ndarray, method: str = "auto", rank_hint: int | None = None,
                  tol: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positive eigenvalues and eigenvectors of the symmetric matrix W.

    Parameters
    ----------
    W : ndarray of shape (s, s)
        Symmetric.
    method : str, default 'auto'
        A name of :func:`eig_methods`; a stateful method starts without state.
    rank_hint : int, optional
        The expected number of positive eigenvalues.
    tol : float, optional
        The accuracy asked of an iterative method.

    Returns
    -------
    values : ndarray of shape (r,)
    vectors : ndarray of shape (s, r)
    """
    return projector(method)(W, rank_hint, tol)
