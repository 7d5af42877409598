"""The restricted master's interior-point method: Mehrotra's predictor-corrector on the normal
equations, which a compiled kernel forms from the columns' sparse pattern and LAPACK
factors densely.

The master has one row per super-point (and one per size class and cut): a few hundred rows
and thousands of columns, each a cluster covering a small share of the rows. HiGHS's
interior-point method (IPX) solves its linear systems by an iterative method built for large
sparse LPs: about 9 ms an iteration on glass's master with sizes 17..54 (215 rows, 2 956
columns), where forming A D A^T from the columns (:func:`pcsos._kernels._lp.normal_lower`,
2.3 ms) and factoring it (215 x 215) take about 5 ms in all, for as many iterations (20
against 21; docs/benchmarks.md, "Cluster sizes").

The engine takes it with cluster sizes (``OWN_IPM`` in :mod:`.engine`): without them, on
clusters of 100 points and more, the kernel's cost (the square of each column's size) makes
HiGHS's the faster.

Nothing here needs to be exact for the bound: the engine proves its bound from whatever
duals it prices (docs/safe_bound.md, "The set-partitioning LP"). A run that does not
converge returns None and the master solves that LP by HiGHS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pcsos._kernels import _lp

__all__ = ["LPSolution", "solve_lp"]

#: iterations at most before the run gives up (glass's and TSPLIB's masters take 15-30)
MAX_ITER = 80
#: the share of the distance to the boundary that a step goes
STEP = 0.99
#: x or y beyond this times the data's scale: the LP is taken as unbounded or infeasible
DIVERGED = 1e12


@dataclass
class LPSolution:
    """``x``: the columns' values; ``y``: the rows' duals (c - A^T y >= 0 at an optimum,
    the sign of HiGHS's ``row_dual``); ``objective``: c^T x; ``iterations``."""

    x: np.ndarray
    y: np.ndarray
    objective: float
    iterations: int


def _standard_form(A: sp.csc_matrix, lower: np.ndarray, upper: np.ndarray
                   ) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray]:
    """A_std x' = b, x' >= 0 for lower <= A x <= upper, x >= 0: a slack per inequality row,
    and a row s + t = upper - lower for each row bounded on both sides; returns (A_std, b,
    the rows kept). Free rows are dropped (their dual is 0)."""
    m = A.shape[0]
    lo_fin, up_fin = np.isfinite(lower), np.isfinite(upper)
    keep = np.flatnonzero(lo_fin | up_fin)
    eq = lo_fin & up_fin & (lower == upper)
    up_only = up_fin & ~lo_fin
    lo_side = lo_fin & ~eq  # a surplus column: A x - s = lower
    both = lo_fin & up_fin & ~eq
    b = np.where(lo_fin, lower, upper)
    pos = np.full(m, -1)
    pos[keep] = np.arange(len(keep))
    slack_rows = np.concatenate([np.flatnonzero(up_only), np.flatnonzero(lo_side)])
    slack_vals = np.concatenate([np.ones(int(up_only.sum())), -np.ones(int(lo_side.sum()))])
    nb = int(both.sum())
    both_rows = np.flatnonzero(both)
    mk = len(keep)
    slack = sp.csc_matrix((slack_vals, (pos[slack_rows], np.arange(len(slack_rows)))),
                          shape=(mk, len(slack_rows)))
    blocks = [[A[keep], slack]]
    rhs = [b[keep]]
    if nb:
        # row mk + t: the surplus of row both_rows[t] plus its own slack equals the range
        surplus = np.searchsorted(slack_rows[int(up_only.sum()):], both_rows) + int(up_only.sum())
        extra = sp.csc_matrix((np.ones(2 * nb),
                               (np.tile(np.arange(nb), 2),
                                np.concatenate([A.shape[1] + surplus,
                                                A.shape[1] + len(slack_rows) + np.arange(nb)]))),
                              shape=(nb, A.shape[1] + len(slack_rows) + nb))
        top = sp.hstack([blocks[0][0], blocks[0][1], sp.csc_matrix((mk, nb))])
        out = sp.vstack([top, extra]).tocsc()
        rhs.append(upper[both_rows] - lower[both_rows])
    else:
        out = sp.hstack(blocks[0]).tocsc()
    out.sort_indices()
    return out, np.concatenate(rhs), keep


def solve_lp(A, row_lower, row_upper, cost, *, tol: float = 1e-7,
             max_iter: int | None = None) -> LPSolution | None:
    """min cost^T x subject to row_lower <= A x <= row_upper, x >= 0, by Mehrotra's
    predictor-corrector method from its usual starting point; stops once each row's primal
    residual (relative to 1 + |its right-hand side|), each column's dual residual (relative to
    1 + |its cost|) and the relative gap are below ``tol``. None where it does not get there
    within ``max_iter`` iterations (None: MAX_ITER), or diverges (an unbounded or infeasible
    LP)."""
    max_iter = MAX_ITER if max_iter is None else int(max_iter)
    A = sp.csc_matrix(A, dtype=np.float64)
    lower = np.asarray(row_lower, dtype=np.float64)
    upper = np.asarray(row_upper, dtype=np.float64)
    n0 = A.shape[1]
    S, b, keep = _standard_form(A, lower, upper)
    m, n = S.shape
    c = np.concatenate([np.asarray(cost, dtype=np.float64), np.zeros(n - n0)])
    indptr = S.indptr.astype(np.int64)
    indices = S.indices.astype(np.int32)
    values = np.ascontiguousarray(S.data, dtype=np.float64)
    M, L = np.empty((m, m)), np.empty((m, m))
    col, row = np.empty(n), np.empty(m)

    def A_(v):  # A v (the linear algebra runs in the kernels, without the GIL)
        _lp.matvec(indptr, indices, values, v, row)
        return row.copy()

    def AT(v):  # A^T v
        _lp.rmatvec(indptr, indices, values, v, col)
        return col.copy()

    def factor(d):
        M[:] = 0.0
        _lp.normal_lower(indptr, indices, values, d, M)
        # the artificial columns make the rows independent, but their d falls towards 0:
        # a shift of the diagonal, raised until LAPACK accepts it, and one refinement step
        # against the unshifted M in solve()
        return _lp.factor(M, L, 1e-13 * float(M.diagonal().max()) + 1e-300, 12) >= 0

    def solve(r):
        u = np.array(r, dtype=np.float64)
        _lp.solve(L, u)
        e = r - M @ u
        _lp.solve(L, e)
        return u + e

    def direction(d, x, z, rp, rd, rxz):
        # A dx = rp, A^T dy + dz = rd, Z dx + X dz = rxz
        dy = solve(rp + A_(d * rd - rxz / z))
        dz = rd - AT(dy)
        return (rxz - x * dz) / z, dy, dz

    def step(v, dv):
        neg = dv < 0
        return min(1.0, float(np.min(-v[neg] / dv[neg]))) if neg.any() else 1.0

    if not factor(np.ones(n)):
        return None
    x = AT(solve(b))
    y = solve(A_(c))
    z = c - AT(y)
    x += max(-1.5 * float(x.min()), 0.0)
    z += max(-1.5 * float(z.min()), 0.0)
    xz = float(x @ z)
    x += 0.5 * xz / max(float(z.sum()), 1e-300)
    z += 0.5 * xz / max(float(x.sum()), 1e-300)
    # residuals relative to each row's right-hand side and each column's cost: a norm over
    # all columns is dominated by the artificial ones' large cost
    bw, cw = 1.0 / (1.0 + np.abs(b)), 1.0 / (1.0 + np.abs(c))
    scale = DIVERGED * (1.0 + max(float(np.abs(b).max()), float(np.abs(c).max())))
    for it in range(max_iter + 1):
        rp = b - A_(x)
        rd = c - AT(y) - z
        pobj, dobj = float(c @ x), float(b @ y)
        if not (math.isfinite(pobj) and math.isfinite(dobj)) or max(
                float(np.abs(x).max()), float(np.abs(y).max())) > scale:
            return None
        if (float(np.abs(rp * bw).max()) < tol and float(np.abs(rd * cw).max()) < tol
                and abs(pobj - dobj) < tol * (1.0 + abs(pobj))):
            y_out = np.zeros(len(lower))
            y_out[keep] = y[:len(keep)]
            return LPSolution(x[:n0].copy(), y_out, float(np.asarray(cost) @ x[:n0]), it)
        if it == max_iter:
            break
        d = x / z
        if not factor(d):
            return None
        mu = float(x @ z) / n
        # the predictor (affine scaling), then the corrector towards sigma mu
        dxa, _, dza = direction(d, x, z, rp, rd, -x * z)
        ap, ad = step(x, dxa), step(z, dza)
        sigma = (float((x + ap * dxa) @ (z + ad * dza)) / n / mu) ** 3
        dx, dy, dz = direction(d, x, z, rp, rd, -x * z - dxa * dza + sigma * mu)
        ap, ad = STEP * step(x, dx), STEP * step(z, dz)
        x += ap * dx
        y += ad * dy
        z += ad * dz
    return None
