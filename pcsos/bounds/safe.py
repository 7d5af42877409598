"""The provable lower bound of spec §3.2 from *any* dual point (derivation: docs/safe_bound.md).

For a symmetric S~ = C - A*y - B*u - N with u >= 0 and N >= 0 off the cannot-link entries,
every Z feasible for the relaxation satisfies <C, Z> >= b^T y + l^T u + <S~, Z>, and with
M = D^1/2 Z D^1/2 (0 <= M <= I by Perron-Frobenius, tr M = k) and S' = D^-1/2 S~ D^-1/2,
<S~, Z> = <S', M> >= sum of the k smallest eigenvalues of S' (Ky Fan). Hence

    LB = c0 + b^T y + l^T u + sum_{i<=k} λ_i(S')  -  margin.

The margin covers floating point (see :func:`safe_lower_bound`), so LB is a bound on the
exact relaxation value for the exact input data C, e, c0.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from pcsos.bounds import eig as eigmod
from pcsos.bounds.arrays import NUMPY
from pcsos.bounds.model import SDPModel, sse_magnitude

__all__ = ["safe_lower_bound", "dual_slack", "ky_fan_certificate", "polish_duals", "polished_bound"]

EPS = float(np.finfo(np.float64).eps)
TINY = float(np.finfo(np.float64).tiny)
# from this s on the bound avoids the dense eigensolver (ky_fan_certificate): below it the
# dense path is cheap and gives bit-identical bounds to earlier versions
ITERATIVE_MIN_S = 2000
CERT_MARGIN = 8  # block columns beyond k (or beyond the start block)
CERT_ROOM = 4  # the block must be at most s / CERT_ROOM columns (else the dense path)
CERT_RTOL = 1e-9  # LOBPCG residual target, relative to ||S'||_F ...
CERT_STEPS = 10  # ... in chunks of this many steps (the loss is about k ||R||^2 / gap) ...
# ... until the loss fits the budget or this many steps: synthetic s = 1 000, k = 20 after 40
# ADMM iterations (benchmarks/bench_projection.py's set), the loss was 17 after 10 steps,
# 1.4e-5 after 20 (exact sum -166.889466, certified -166.889480, 0.26 s against 0.15 s)
CERT_MAX_STEPS = 60
# the block doubles (within s / CERT_ROOM) when its Ritz values spread over less than this
# fraction of ||S'||_F / sqrt(s) above theta_k: the near-null space of S' is a cluster wider
# than the block. The k = 20 set above solved to 1e-5 has 103 eigenvalues within 1 of 0
# (||S'||_2 = 581): the block of 27 + 8 stays inside them (spread 0.004 after 60 steps), the
# doubled blocks (70, then 140 columns) prove the sum to 4e-6 after 40 steps in all
CERT_GAP = 1e-2
# the steps stop once their block-column products (sum of steps x block width) would pass
# this many times s: a step costs about 4 s^2 p flops, so the whole search costs at most
# about 4 CERT_WORK s^3, a few dense eigendecompositions' worth, before the dense path
CERT_WORK = 1.0
CERT_TRIES = 3  # Cholesky factorisations before giving up for the dense eigensolver
CERT_LOSS = 1e-7  # largest loss k tau accepted, relative to the sum of |terms| of the bound
# polish_duals: evaluations of the bound's function (k smallest eigenpairs each) per call.
# ECG5000 ml_0_cl_150_3, root after 4 rounds solved to 1e-5 (s = 500, 7 143 cuts): the safe
# bound 11 408.065 rose by 0.117 after 5 evaluations, 0.133 after 10, 0.152 after 40 (the
# ADMM's primal value 11 408.153), where a child of that tree closes about 0.12
POLISH_EVALS = 8
# the first step, relative to max(1, |bound|) (SSE units: a step moves y by step x residual)
POLISH_STEP = 1e-6


def _project(model: SDPModel, y, y_cl, u, N):
    """Projected, symmetrised duals: u >= 0, N >= 0 off CL entries, CL entries N_ij + y_cl."""
    s, m, q = model.s, model.cuts.m, len(model.cl)
    y = np.asarray(y, dtype=np.float64).reshape(s + 1)
    u = np.zeros(m) if u is None else np.maximum(np.asarray(u, dtype=np.float64).reshape(m), 0)
    if N is None:
        Nf = np.zeros((s, s))
    else:
        N = np.asarray(N, dtype=np.float64).reshape(s, s)
        Nf = 0.5 * (N + N.T)
    if q:
        ci, cj = model.cl[:, 0], model.cl[:, 1]
        raw = Nf[ci, cj].copy()  # the CL multipliers are free: keep their value, any sign
        Nf = np.maximum(Nf, 0.0)
        if y_cl is not None:
            raw = raw + np.asarray(y_cl, dtype=np.float64).reshape(q)
        Nf[ci, cj] = raw
        Nf[cj, ci] = raw
    else:
        Nf = np.maximum(Nf, 0.0)
    return y, u, Nf


def dual_slack(model: SDPModel, y, y_cl=None, u=None, N=None,
               *, scaled: bool = True) -> np.ndarray:
    """S~ = C - A*y - B*u - N after projecting the duals; ``scaled`` returns D^-1/2 S~ D^-1/2."""
    y, u, Nf = _project(model, y, y_cl, u, N)
    S = model.C - model.A_adj(y) - Nf
    if model.cuts.m:
        S -= model.cuts.adjoint(u, model.s)
    if scaled:
        d = 1.0 / np.sqrt(model.e)
        S = S * d[:, None] * d[None, :]
    return S


def _smallest(S: np.ndarray, k: int, backend=None, vectors: bool = False):
    """The k smallest eigenvalues (with ``vectors``, and their eigenvectors) of the
    symmetric S, on the host: scipy's MRRR, or with a device ``backend`` a dense float64
    eigendecomposition there. Both are backward stable, which is all the margin of
    :func:`safe_lower_bound` assumes of them."""
    if backend is None or backend.is_numpy:
        return sla.eigh(S, eigvals_only=not vectors, driver="evr", check_finite=False,
                        subset_by_index=[0, k - 1])
    try:
        Sd = backend.asarray(S)
        if vectors:
            lam, V = backend.eigh(Sd)
            return backend.to_numpy(lam[:k]), backend.to_numpy(V[:, :k])
        return backend.to_numpy(backend.xp.linalg.eigvalsh(Sd)[:k])
    except Exception as exc:  # the device library's own error: the callers catch numpy's
        raise np.linalg.LinAlgError(f"{backend.label}: {exc}") from exc


def safe_lower_bound(model: SDPModel, y, y_cl=None, u=None, N=None, *,
                     start: np.ndarray | None = None, backend=None) -> float:
    """A lower bound on the relaxation (and so on the optimal SSE) valid for any duals.

    ``y`` (length s + 1) are the multipliers of ``Z e = 1`` and ``<Diag(e), Z> = k``; ``y_cl``
    (one per CL pair, or None) of ``Z_ij = 0`` per entry; ``u`` (one per cut, or None) of the
    cuts, projected onto u >= 0; ``N`` (s x s, or None) of ``Z >= 0``, symmetrised and projected
    onto N >= 0 except on CL entries (free there). Returns ``c0 + b^T y + l^T u + sum of the k
    smallest eigenvalues of S'`` minus the floating-point margin::

        margin = 2 * (k * (s * eps * ||S'||_F + (t + 8) * eps * ||T'||_F)
                      + eps * (|c0| + sum |b_i y_i| + sum |l_t u_t| + sum |λ_i|))

    where T' is S' with every term taken in absolute value and t the largest number of cut
    terms that fall on one matrix entry. The first term is the error of a backward-stable
    eigensolver (Weyl: each eigenvalue moves by at most the backward error, at most
    p(s) eps ||S'||_2 <= s eps ||S'||_F); the second bounds the rounding in forming S' (each
    entry is a sum of at most t + 4 terms, scaled by two rounded square roots); the third the
    rounding of the products before the exactly rounded ``math.fsum``. The factor 2 absorbs
    second-order terms. See docs/safe_bound.md.

    From ``s >= ITERATIVE_MIN_S`` on, the sum of the k smallest eigenvalues is not taken
    from a dense eigensolver but bounded from below by :func:`ky_fan_certificate` (block
    LOBPCG from ``start``, s x r approximate eigenvectors of the k..r smallest eigenvalues,
    e.g. the ADMM's last positive-part vectors, then one Cholesky factorisation whose success
    proves the bound with Rump's a-priori rounding bound); the margin then carries
    ``2 k (t + 8) eps ||T'||_F`` for forming S' and ``4 eps`` times the certificate's terms
    instead of the eigensolver term. Where the certificate fails the dense path is used.
    ``backend`` (an :class:`~pcsos.bounds.arrays.ArrayBackend`): where the dense path's
    eigenvalues, or the certificate's steps and factorisation, are computed (default: the
    host); S' and the sums of the margin are formed on the host.

    The result is never below 0: every feasible Z has ``<W W^T, Z> <= c0`` (with M as above,
    ``<W W^T, Z> = <D^-1/2 W W^T D^-1/2, M> <= tr(D^-1/2 W W^T D^-1/2) = sum ||w_i||^2 / e_i
    <= c0`` by 0 <= M <= I and Jensen), so the relaxation's value is at least 0. Without this
    floor a zero optimum (fewer distinct points than k) would keep a relative gap of inf.
    """
    s, k = model.s, model.k
    y, u, Nf = _project(model, y, y_cl, u, N)
    d = 1.0 / np.sqrt(model.e)
    dd = d[:, None] * d[None, :]
    Ay = model.A_adj(y)
    S = model.C - Ay - Nf
    T = np.abs(model.C) + np.abs(Ay) + np.abs(Nf)
    t_max = 0
    if model.cuts.m:
        Bu = model.cuts.adjoint(u, s)
        S -= Bu
        T += _abs_adjoint(model, u)
        key = np.minimum(model.cuts.i, model.cuts.j) * s + np.maximum(model.cuts.i, model.cuts.j)
        t_max = int(np.bincount(key).max())
    S *= dd
    T *= dd
    b = model.b
    l = model.l
    form = (t_max + 8) * EPS * float(np.linalg.norm(T))
    if s >= ITERATIVE_MIN_S and CERT_ROOM * (k + CERT_MARGIN) <= s:
        budget = CERT_LOSS * math.fsum([abs(model.c0), *np.abs(b * y), *np.abs(l * u)])
        cert = ky_fan_certificate(S, k, start, budget, backend=backend)
        if cert is not None:
            if not math.isfinite(cert):
                return -math.inf
            terms = [model.c0, *(b * y), *(l * u), cert]
            value = math.fsum(terms)
            margin = 2.0 * (k * form + EPS * math.fsum(abs(x) for x in terms))
            return max(value - margin, 0.0)
    lam = _smallest(S, k, backend)
    if not np.all(np.isfinite(lam)):
        return -math.inf
    terms = [model.c0, *(b * y), *(l * u), *lam]
    value = math.fsum(terms)
    margin = 2.0 * (k * (s * EPS * float(np.linalg.norm(S)) + form)
                    + EPS * math.fsum(abs(x) for x in terms))
    return max(value - margin, 0.0)


def _unfold(model: SDPModel, y, u, Nf):
    """(y, y_cl, u, N) in SDPResult's convention from projected duals: the CL multipliers
    (N's CL entries, free in sign) move to y_cl and N is zero there."""
    cl = model.cl
    if not len(cl):
        return y, np.zeros(0), u, Nf
    y_cl = Nf[cl[:, 0], cl[:, 1]].copy()
    N = Nf.copy()
    N[cl[:, 0], cl[:, 1]] = 0.0
    N[cl[:, 1], cl[:, 0]] = 0.0
    return y, y_cl, u, N


def polish_duals(model: SDPModel, y, y_cl=None, u=None, N=None, *,
                 evaluations: int = POLISH_EVALS, backend=None):
    """Duals at which the bound's function is at least its value at the given ones.

    Projected supergradient ascent, with a step that grows on success and halves on
    failure, on phi(y, u, N) = c0 + b^T y + l^T u + sum_{i<=k} λ_i(S'), the function
    :func:`safe_lower_bound` evaluates before its margin: a supergradient is
    (b - A(G), l - B(G), -G) with G = D^-1/2 V V^T D^-1/2, V the eigenvectors of the k
    smallest eigenvalues of S'. Only steps that raise phi are taken. Any dual point gives a
    valid bound, so the result's is valid for the same reason as the input's
    (docs/safe_bound.md, "Polishing").

    ``evaluations`` eigen-solves at most (below 2: no polishing), on the device of
    ``backend`` (default: the host; see :func:`safe_lower_bound`). Skipped from
    ``ITERATIVE_MIN_S`` super-points on, where the bound avoids dense eigensolvers. Returns
    ``(y, y_cl, u, N, steps)``: the duals projected (u >= 0, N >= 0 and zero on the CL
    entries, the CL multipliers in ``y_cl``) and the number of steps taken.
    """
    s, k, m = model.s, model.k, model.cuts.m
    y, u, Nf = _project(model, y, y_cl, u, N)
    taken = 0
    if evaluations < 2 or s >= ITERATIVE_MIN_S or k >= s:
        return (*_unfold(model, y, u, Nf), taken)
    free = np.zeros((s, s), dtype=bool)
    if len(model.cl):
        free[model.cl[:, 0], model.cl[:, 1]] = True
        free[model.cl[:, 1], model.cl[:, 0]] = True
    d = 1.0 / np.sqrt(model.e)
    dd = d[:, None] * d[None, :]
    b, l = model.b, model.l

    def value(y, u, Nf):
        S = dual_slack(model, y, None, u, Nf)  # projecting projected duals changes nothing
        lam, V = _smallest(S, k, backend, vectors=True)
        val = model.c0 + float(b @ y) + (float(l @ u) if m else 0.0) + float(lam.sum())
        return val, V

    try:
        val, V = value(y, u, Nf)
    except (ValueError, sla.LinAlgError):
        return (*_unfold(model, y, u, Nf), taken)
    step = POLISH_STEP * sse_magnitude(val, model.c0) if math.isfinite(val) else 0.0
    for _ in range(evaluations - 1 if step > 0 else 0):
        G = (V @ V.T) * dd
        y2 = y + step * (b - model.A(G))
        u2 = np.maximum(u + step * (l - model.cuts.apply(G)), 0.0) if m else u
        N2 = Nf - step * G
        N2 = np.where(free, N2, np.maximum(N2, 0.0))
        try:
            v2, V2 = value(y2, u2, N2)
        except (ValueError, sla.LinAlgError):
            break
        if math.isfinite(v2) and v2 > val:
            y, u, Nf, val, V = y2, u2, N2, v2, V2
            taken += 1
            step *= 1.5
        else:
            step *= 0.5
    return (*_unfold(model, y, u, Nf), taken)


def polished_bound(model: SDPModel, y, y_cl=None, u=None, N=None, *,
                   start: np.ndarray | None = None, evaluations: int = POLISH_EVALS,
                   backend=None):
    """``(bound, y, y_cl, u, N)``: the better of :func:`safe_lower_bound` at the given duals
    and at the duals of :func:`polish_duals`, with the duals that give it (eigenvalues on
    the device of ``backend``, default the host)."""
    *polished, taken = polish_duals(model, y, y_cl, u, N, evaluations=evaluations,
                                    backend=backend)
    lb = safe_lower_bound(model, *polished, start=start, backend=backend)
    if taken:
        lb0 = safe_lower_bound(model, y, y_cl, u, N, start=start, backend=backend)
        if not lb >= lb0:  # the margin can exceed a tiny gain; a NaN never wins
            return (lb0, *_unfold(model, *_project(model, y, y_cl, u, N)))
    return (lb, *polished)


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u), u = eps / 2 (rounding to nearest)."""
    nu = n * 0.5 * EPS
    return nu / (1.0 - nu)


def ky_fan_certificate(S: np.ndarray, k: int, start: np.ndarray | None = None,
                       budget: float = math.inf, *, info: dict | None = None,
                       backend=None) -> float | None:
    """A proven lower bound on the sum of the k smallest eigenvalues of the symmetric
    matrix given by the upper triangle of S (docs/safe_bound.md, "Without a dense
    eigensolver"), or None when the certificate does not go through within ``budget`` (its
    loss against the Ritz values): then use a dense eigensolver.

    An approximate invariant subspace of the lowest eigenvalues comes from a few block
    LOBPCG steps on -S started from ``start`` (s x r, e.g. the ADMM's last positive-part
    vectors, which span the near-null space of its dual slack), widened by random columns to
    ``max(k, r) + CERT_MARGIN``: Ritz pairs (theta_i, v_i), theta ascending. With the shift
    c = theta_k and the deflation Q = sum_i g_i v_i v_i^T, g_i = max(c - theta_i, 0) + tau, if
    the floating-point Cholesky factorisation of H = fl(S - c I + Q) runs to completion,
    then S >= (c - err) I - Q exactly, and so sum_{i<=k} lambda_i(S) >= k (c - err) - (1 + eta)
    (sum of the k largest g_i) = sum_{i<=k} theta_i - k tau - k err - ...; ``err`` collects
    Rump's bound for the factorisation and the rounding in forming Q and H, eta bounds the
    departure of the v_i from orthonormality. tau must dominate the coupling ||R||^2 / gap of
    the subspace to the rest of the spectrum: estimated, then multiplied by 100 on failure.
    The LOBPCG steps run in chunks of ``CERT_STEPS`` until the estimated loss k tau fits
    ``budget`` (or ``CERT_MAX_STEPS``, or ``CERT_WORK``), the block doubled after a chunk
    whose Ritz values all lie in one cluster (``CERT_GAP``); the proof holds whatever the
    steps gave.
    ``info`` (a dict) receives what was done. ``backend`` (an
    :class:`~pcsos.bounds.arrays.ArrayBackend`, default the host): where the s x s and
    s x p work runs (the steps, Q, H and its Cholesky factorisation); the norms, traces and
    Ritz values that the proof adds up are summed on the host.
    """
    be = backend if backend is not None else NUMPY
    s = S.shape[0]
    normS = float(np.linalg.norm(S))
    if not math.isfinite(normS):
        return -math.inf
    if normS == 0.0:
        return 0.0
    r = 0 if start is None else np.asarray(start).shape[1]
    p = max(k, r) + CERT_MARGIN
    if CERT_ROOM * p > s:
        return None
    rng = np.random.default_rng(0)
    X0 = rng.standard_normal((s, p))
    if r:
        X0[:, :r] = start
    X0 = be.asarray(X0)
    Su = be.asarray(np.triu(S) + np.triu(S, 1).T)  # the matrix that the Cholesky reads
    trS = float(np.trace(S))
    steps = work = 0
    while True:
        # LOBPCG in chunks of CERT_STEPS, until the estimated loss fits the budget (a
        # restart drops the search directions, a small price for the test in between)
        th, V, rho = eigmod.top_pairs(-Su, X0, CERT_RTOL * normS, CERT_STEPS, be)
        steps += CERT_STEPS
        work += CERT_STEPS * p
        theta = -th  # ascending, V in the same order
        rho2 = _col_squares(be, Su @ V - V * be.asarray(theta))
        c = float(theta[k - 1])
        spread = float(theta[-1]) - c
        fp = 4.0 * _gamma(s + 1) * (abs(trS) + s * abs(c) + math.fsum(np.abs(c - theta))) \
            + 64.0 * s * EPS * normS
        tau = _coupling_shift(rho2, np.maximum(theta - c, 0.0), 0.5 * spread, fp)
        if (k * tau <= budget or steps >= CERT_MAX_STEPS
                or not np.any(rho > CERT_RTOL * normS)):
            break
        X0 = V
        if spread < CERT_GAP * normS / math.sqrt(s) and CERT_ROOM * 2 * p <= s:
            # every Ritz value lies in one cluster about theta_k: no residual makes the
            # coupling small against that spread; a wider block may reach past the cluster
            X0 = be.concat([V, be.asarray(rng.standard_normal((s, p)))], axis=1)
            p *= 2
        if work + CERT_STEPS * p > CERT_WORK * s:
            break
    # on the host the caller's S is H's base (the factorisation reads its upper triangle),
    # which spares an s x s copy while the tries run
    base = S if be.is_numpy else Su
    del Su
    # the Gram matrix of the Ritz vectors: eigenvalues of Q are at most (1 + eta) those of G
    vn = _col_squares(be, V)
    Gm = be.to_numpy(V.T @ V)
    Gm.flat[:: p + 1] -= 1.0
    eta = float(np.linalg.norm(Gm)) + _gamma(s) * math.fsum(vn)
    gs = _gamma(s + 1)
    tries = []
    for _ in range(CERT_TRIES):
        if not k * tau <= budget:
            break
        g = np.maximum(c - theta, 0.0) + tau
        Q = (V * be.asarray(g)) @ V.T
        normQ = be.norm(Q)
        H = base + Q
        del Q
        diag, ok = _shifted_cholesky(be, H, c)
        del H
        trH = math.fsum(diag)
        tries.append(tau)
        if not ok:
            tau *= 100.0
            continue
        # Rump (2006): success of the floating-point Cholesky of H proves H + alpha I > 0,
        # alpha = gamma_{s+1} / (1 - gamma_{s+1}) tr H plus an underflow term (dominated here)
        alpha = gs / (1.0 - gs) * trH + 16.0 * s * s * TINY
        traceQ = math.fsum(g * vn)
        e_Q = _gamma(p + 1) * traceQ  # ||fl(Q) - Q||_F, Q = V diag(g) V^T exactly
        e_H = _gamma(2) * (normS + normQ + math.sqrt(s) * abs(c))  # forming fl(S + Q - c I)
        err = 2.0 * (alpha + e_Q + e_H)
        topk = min(traceQ, (1.0 + eta) * math.fsum(np.sort(g)[-k:]))
        topk *= 1.0 + 2.0 * _gamma(s + 2)  # the rounding of the column norms and sums
        value = k * (c - err) - topk
        value -= 4.0 * EPS * (k * abs(c) + k * err + topk)
        if info is not None:
            info.update(ok=True, p=p, tau=tau, tries=tries, c=c, err=err, eta=eta, steps=steps,
                        ritz=math.fsum(theta[:k]), res=math.sqrt(rho2.sum()), spread=spread)
        return value
    if info is not None:
        info.update(ok=False, p=p, tries=tries, c=c, res=math.sqrt(rho2.sum()), spread=spread,
                    steps=steps)
    return None


def _col_squares(be, X) -> np.ndarray:
    """The squared column norms of X, on the host."""
    if be.is_numpy:
        return np.einsum("ij,ij->j", X, X)
    return be.to_numpy(be.xp.sum(X * X, axis=0))


def _shifted_cholesky(be, H, c: float) -> tuple[np.ndarray, bool]:
    """``(diag, ok)`` for H - c I, H consumed (overwritten where the backend writes in
    place): its diagonal (on the host) and whether the floating-point Cholesky
    factorisation of the symmetric matrix given by its upper triangle runs to completion
    with a positive diagonal (Rump's theorem assumes one).

    Off numpy that matrix is formed explicitly: no namespace promises which triangle its
    factorisation reads (an entry plus an exact zero, so no rounding). The proof assumes
    of the device's factorisation what it assumes of LAPACK's (docs/safe_bound.md, "On a
    GPU"). Errors other than "not positive definite" (out of memory, ...) propagate."""
    H = be.add_diag(H, -c, eye=None if be.in_place else be.xp.eye(H.shape[0],
                                                                   dtype=H.dtype))
    failed: tuple = (np.linalg.LinAlgError,)
    if be.is_numpy:
        diag = np.diag(H).copy()
    elif be.is_torch:
        # in place, one s x s temporary: the device holds S' and H already
        lower = be.native.tril(H.T, -1)
        H.triu_()
        H.add_(lower)
        del lower
        diag = be.to_numpy(be.xp.linalg.diagonal(H))
        failed += (be.native.linalg.LinAlgError,)
    else:
        xp = be.xp
        H = xp.triu(H) + xp.triu(H, k=1).T
        diag = be.to_numpy(xp.linalg.diagonal(H))
    if not np.all(diag > 0):
        return diag, False
    try:
        if be.is_numpy:
            R = sla.cholesky(H, lower=False, overwrite_a=True, check_finite=False)
            return diag, bool(np.isfinite(R).all())
        R = be.xp.linalg.cholesky(H)
        return diag, bool(be.xp.all(be.xp.isfinite(R)))
    except failed:
        return diag, False


def _coupling_shift(rho2: np.ndarray, d: np.ndarray, m: float, floor: float) -> float:
    """The least tau >= floor with sum_i rho2_i / (d_i + tau) <= m (inf when m <= 0).

    H restricted to the Ritz vectors is about diag(d + tau), to their complement at least
    about m, and the coupling has column norms sqrt(rho2): by the Schur complement, H is
    positive definite once ||B diag(d + tau)^-1/2||^2 <= sum rho2 / (d + tau) < m. Only an
    estimate (m is not known): the Cholesky factorisation decides."""
    if not m > 0:
        return math.inf

    def f(tau):
        return float(np.sum(rho2 / (d + tau)))

    if f(floor) <= m:
        return floor
    lo, hi = floor, max(floor, float(np.sum(rho2)) / m)
    for _ in range(60):
        mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
        lo, hi = (lo, mid) if f(mid) <= m else (mid, hi)
    return hi


def _abs_adjoint(model: SDPModel, u: np.ndarray) -> np.ndarray:
    """sum_t |u_t| |B_t| entrywise (for the rounding bound)."""
    cuts = model.cuts
    w = np.repeat(np.abs(u), np.diff(cuts.indptr)) * np.abs(cuts.coef)
    out = np.zeros((model.s, model.s))
    np.add.at(out, (cuts.i, cuts.j), 0.5 * w)
    np.add.at(out, (cuts.j, cuts.i), 0.5 * w)
    return out
