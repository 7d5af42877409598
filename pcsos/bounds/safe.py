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

from pcsos.bounds.model import SDPModel

__all__ = ["safe_lower_bound", "dual_slack"]

EPS = float(np.finfo(np.float64).eps)


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


def safe_lower_bound(model: SDPModel, y, y_cl=None, u=None, N=None) -> float:
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
    lam = sla.eigh(S, eigvals_only=True, driver="evr", check_finite=False,
                   subset_by_index=[0, k - 1])
    if not np.all(np.isfinite(lam)):
        return -math.inf
    b = model.b
    l = model.l
    terms = [model.c0, *(b * y), *(l * u), *lam]
    value = math.fsum(terms)
    margin = 2.0 * (k * (s * EPS * float(np.linalg.norm(S))
                         + (t_max + 8) * EPS * float(np.linalg.norm(T)))
                    + EPS * math.fsum(abs(x) for x in terms))
    return max(value - margin, 0.0)


def _abs_adjoint(model: SDPModel, u: np.ndarray) -> np.ndarray:
    """sum_t |u_t| |B_t| entrywise (for the rounding bound)."""
    cuts = model.cuts
    w = np.repeat(np.abs(u), np.diff(cuts.indptr)) * np.abs(cuts.coef)
    out = np.zeros((model.s, model.s))
    np.add.at(out, (cuts.i, cuts.j), 0.5 * w)
    np.add.at(out, (cuts.j, cuts.i), 0.5 * w)
    return out
