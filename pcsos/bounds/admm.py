"""The default SDP engine: a symmetric Gauss-Seidel ADMM on the dual (spec §3.1).

Works on the scaled matrix M = D^1/2 Z D^1/2 (D = Diag(e), f = e^1/2), where the relaxation
reads (with Ĉ = D^-1/2 C D^-1/2 / scale, cut rows normalised to unit Frobenius norm)

    min <Ĉ, M>  s.t.  M f = f,  tr M = k,  B̂(M) - t = l̂,  t >= 0,  M ∈ P,  M PSD,

with P = {M >= 0, M_ij = 0 on CL pairs}: the eigenvalues of M lie in [0, 1], so the
problem is well scaled whatever the super-point sizes. Its dual is

    max b^T y + l̂^T u  s.t.  A*y + B̂*u + S + N = Ĉ,  v = u,  S PSD,  N ∈ P*,  v >= 0,

(P* = {N >= 0 off the CL entries, free on them}). One iteration of the convergent
sGS-ADMM of Chen-Sun-Toh / Sun-Toh-Yang (the ADMM+ family of SDPNAL+'s phase I) updates
the blocks in the order (N, v) -> (y, u) -> S -> (y, u) and then the multiplier (M, t)
with step 1.618 sigma. Every block step is closed form:

- (N, v): entrywise projection (CL entries free) and a clip at zero;
- (y, u): one linear system [A A*, A B̂*; B̂ A*, B̂ B̂* + I], whose A A* part has the closed
  form inverse below (Sherman-Morrison on |f|²/2 I + f f^T/2 bordered by the trace row)
  and which, with cuts, is factored once per cut set: by Woodbury in the space of the
  matrix entries the cuts touch when they are few and fewer than the cuts (dense
  Cholesky), else a sparse LU of K up to ``DIRECT_MAX_CUTS`` cuts, else by Woodbury with
  a sparse LU of the entry-space Gram matrix up to ``ENTRY_SPARSE_MAX`` entries, else CG
  on the u Schur complement;
- S: the PSD projection, i.e. one symmetric eigendecomposition, of which only the
  positive part of the (low-rank, about k) complement is needed (:mod:`pcsos.bounds.eig`).

sigma is adapted every few iterations to balance the primal and dual residuals. The whole
iteration, a fixed-point map of (M, S, y, u, t), is accelerated by safeguarded type-II
Anderson extrapolation (:class:`_Anderson`); the residuals, the stopping test and the
returned point are always those of a true sGS-ADMM step, so the safe bound is unaffected.

The iteration forms no s x s matrix it can avoid: A*y enters by two BLAS rank-one updates
and B*u on the entries the cuts touch (:meth:`_Scaled.add_adj`), the (y, u) right-hand
sides take A and B of S and N by linearity, and the s x s arrays it does need come back from
a pool (:class:`_Pool`) rather than from fresh allocations.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from pcsos.bounds import eig as eigmod
from pcsos.bounds.arrays import NUMPY, ArrayBackend, get_backend
from pcsos.bounds.model import SDPModel, sse_magnitude
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.bounds.safe import polished_bound
from pcsos.bounds.settings import BoundSettings
from pcsos.clock import Deadline

__all__ = ["solve_admm"]

TAU = 1.618
SIGMA_RATIO = 2.0  # rebalance sigma when pinf/dinf leaves [1/r, r] (mean over 10 its)
SIGMA_STEP = 1.6
SIGMA_EVERY = 10
# block order: "NS" = (N, v) first, then the sGS group (y,u) -> S -> (y,u); "SN" = S first,
# then (y,u) -> (N,v) -> (y,u). NS took fewer iterations on 4 of 5 shared instances.
ORDER = "NS"
DIRECT_MAX_CUTS = 2000  # up to this many cuts: sparse LU of K in the cut space
ENTRY_DENSE_MAX = 2500  # up to this many touched entries (and fewer than cuts): Woodbury
# above both, the sparse LU of the entry-space Gram matrix G = I + B_E^T B_E, up to this many
# touched entries, else CG. The entry graph of triangle cuts fills in far less than the cut
# graph: computers ml_0_cl_250_0 (s = 318) with 9 548 cuts on 8 973 entries, G factored in
# 0.07 s to 264 000 nonzeros, one solve 0.4 ms against 77 CG steps of 0.15-0.3 ms; 75 000
# cuts on 31 000 entries: 5.7 s, 4.9 million nonzeros, 22 ms a solve (machine loaded)
ENTRY_SPARSE_MAX = 40000
# an inexact (y, u) step only slows the ADMM (the residuals and the safe bound are those of
# the step actually taken): 1e-7 took the same iterations as 1e-10 with a third fewer CG
# steps (computers ml_0_cl_250_0, 9 548 cuts: 671 vs 674 iterations to 1e-5, 26.0 vs 35.6 s;
# 1e-5 needed 37 % more iterations at tol 1e-4, 1e-3 did not converge)
CG_RTOL = 1e-7
CG_MAXITER = 1000
# Anderson acceleration (measured on 3 shared instances, SDP section of docs/benchmarks.md:
# memory 10 and a safeguard factor 2 took 1.9-4.7x fewer iterations than the plain
# sGS-ADMM; factor 1 rejected one step in 8 on k = 2 instances)
ANDERSON_MEM = 10
# the acceleration is memory-bound (two columns of 2 s^2 doubles per step): above this s its
# memory is halved (at s = 425, memory 10 cost 7 ms of a 17-23 ms iteration, memory 5 about
# 4 ms; memory 5 and 10 took about the same iterations on 5 instances, s = 100..210)
ANDERSON_LARGE_S = 300
AA_SAFEGUARD = 2.0  # reject an extrapolation whose fixed-point residual grew by more
AA_REG = 1e-10
AA_MAX_COEF = 1e4
# the accuracy asked of the projection (Frobenius norm of its error, read by the iterative
# eig methods only): this fraction of the smaller of the last residuals in absolute terms,
# the dual one as ||R|| and the primal one as the error sigma * dP it makes in M. Synthetic
# s = 1 000, k = 3, 40 iterations (benchmarks/bench_projection.py): 5e-4 and 1e-4 ended
# on the residuals of eig='full' to 4 digits, 2e-3 10 % above them (a third fewer steps)
EIG_TOL = 5e-4


class _Scaled:
    """The model in M-space: scaled objective, normalised cuts, the (y, u) linear solver.

    Built on the host (numpy, scipy.sparse, the factorisations); the arrays the iteration
    reads are copied once to the backend's device (``Cx``, ``fx``, ``bx``, ``lx``, the cut
    operators), and the operators take and return device arrays."""

    def __init__(self, model: SDPModel, be: ArrayBackend | None = None):
        self.be = be = be if be is not None else NUMPY
        s = model.s
        self.s, self.k = s, model.k
        self.f = np.sqrt(model.e)
        self.d = 1.0 / self.f
        self.n = float(np.sum(model.e))
        Cm = model.C * self.d[:, None] * self.d[None, :]
        self.scale = max(float(np.linalg.norm(Cm)), 1e-300)
        # exactly symmetric (the two scalings round differently): the iteration keeps no
        # symmetrisation step of its own
        self.C = (Cm + Cm.T) / (2.0 * self.scale)
        self.c0 = model.c0 / self.scale
        self.b = np.concatenate([self.f, [float(model.k)]])
        q = len(model.cl)
        self.cl = model.cl
        # mask of entries projected onto >= 0 (False on CL entries, whose multiplier is free)
        self.nonneg = np.ones((s, s), dtype=bool)
        if q:
            self.nonneg[model.cl[:, 0], model.cl[:, 1]] = False
            self.nonneg[model.cl[:, 1], model.cl[:, 0]] = False
        # the same entries as flat indices: the projections clip everything, then restore
        # these few (a masked np.where costs several passes over s^2 entries)
        self.cl_flat = np.concatenate([model.cl[:, 0] * s + model.cl[:, 1],
                                       model.cl[:, 1] * s + model.cl[:, 0]]) if q else None
        cuts = model.cuts
        self.m = cuts.m
        if self.m:
            rows = np.repeat(np.arange(self.m), np.diff(cuts.indptr))
            ci, cj = cuts.i, cuts.j
            c = cuts.coef * self.d[ci] * self.d[cj]
            off = ci != cj
            # symmetric B_t: coef/2 on both off-diagonal positions
            r = np.concatenate([rows[~off], rows[off], rows[off]])
            col = np.concatenate([ci[~off] * s + cj[~off], ci[off] * s + cj[off],
                                  cj[off] * s + ci[off]])
            val = np.concatenate([c[~off], 0.5 * c[off], 0.5 * c[off]])
            B = sp.csr_matrix((val, (r, col)), shape=(self.m, s * s))
            B.sum_duplicates()
            nrm = np.sqrt(np.asarray(B.multiply(B).sum(axis=1)).ravel())
            nrm[nrm == 0] = 1.0
            self.cut_norm = nrm
            self.B = sp.diags(1.0 / nrm) @ B
            self.B = self.B.tocsr()
            # B*u lives on the entries the cuts touch: added there, not as an s x s matrix
            # (B^T itself, in CSR, would carry an index array of s^2 + 1 entries)
            self.touched = np.unique(self.B.indices)
            self.BT_touched = self.B[:, self.touched].T.tocsr()
            self.l = cuts.rhs / nrm
            self._factor_cuts()
            self.Bx = be.sparse(self.B)
            if be.in_place:
                self.BTx = be.sparse(self.BT_touched)
                self.touched_x = be.index(self.touched)
            else:  # no scatter in the standard: B* as a dense s^2 x m operator (tests)
                self.BTx = be.sparse(self.B.T)
        else:
            self.cut_norm = np.ones(0)
            self.l = np.zeros(0)
            self.ksolver = "none"
        # what the iteration reads, on the device (the same arrays on numpy)
        self.Cx, self.fx, self.bx, self.lx = (be.asarray(a) for a in (self.C, self.f, self.b,
                                                                        self.l))
        self.cl_flat_x = be.index(self.cl_flat) if self.cl_flat is not None else None
        self.free_x = None if be.in_place or not q else be.mask(~self.nonneg)
        self.eye_x = None if be.in_place else be.asarray(np.eye(s))

    @property
    def direct(self) -> bool:
        """Whether the (y, u) system is factored (every solver but CG)."""
        return self.ksolver != "cg"

    # ------------------------------------------------------- operators (device arrays)
    def A(self, M):
        be = self.be
        if be.is_numpy:
            return np.concatenate([M @ self.f, [np.trace(M)]])
        return be.concat([M @ self.fx, be.xp.reshape(be.trace(M), (1,))])

    def A_adj(self, y: np.ndarray) -> np.ndarray:
        T = np.outer(y[:-1], 0.5 * self.f)
        out = T + T.T
        out.flat[:: self.s + 1] += y[-1]
        return out

    def Bop(self, M):
        if not self.m:
            return self.be.zeros(0)
        return self.be.spmv(self.Bx, self.be.xp.reshape(M, (-1,)))

    def B_adj(self, u: np.ndarray) -> np.ndarray:
        out = np.zeros((self.s, self.s))
        if self.m:
            out.ravel()[self.touched] = self.BT_touched @ u
        return out

    def add_adj(self, X, y, u, alpha: float):
        """X + alpha (A*y + B*u), in place where the backend can (X C-contiguous): two
        rank-one updates, the diagonal, and the entries the cuts touch; no s x s temporary
        on numpy and torch. Returns the result."""
        be = self.be
        X = be.add_sym_outer(X, alpha, y[:-1], self.fx)
        X = be.add_diag(X, alpha * y[-1], self.eye_x)
        if self.m:
            if be.in_place:
                X = be.scatter_add(X, self.touched_x, alpha * be.spmv(self.BTx, u))
            else:  # B* as a dense operator (no scatter in the standard)
                X = X + be.xp.reshape(alpha * be.spmv(self.BTx, u), (self.s, self.s))
        return X

    def _AAinv(self, r, f=None):
        """Solve A A* y = r in closed form (A A* = [[n/2 I + f f^T/2, f], [f^T, s]]); r and
        ``f`` (default: the host f) on one device."""
        f = self.f if f is None else f
        n, s = self.n, self.s
        rr, r0 = r[:-1], r[-1]
        ftr = f @ rr
        y0 = (r0 - ftr / n) / (s - 1)
        phi = ftr / n - y0
        yr = (rr - f * y0 - f * (0.5 * phi)) / (0.5 * n)
        if isinstance(r, np.ndarray):
            return np.concatenate([yr, [y0]])
        return self.be.concat([yr, self.be.xp.reshape(y0, (1,))])

    def _factor_cuts(self):
        """Prepare the (y, u) solve: H = B̂ A* (m x (s+1), sparse) and the solver of
        K = B̂B̂* + I picked by the sizes (``ksolver``: 'entry_dense', 'cut_lu', 'entry_lu' or
        'cg', see below) with, for the direct ones, the Schur complement on y."""
        s = self.s
        # H[t, i] = <B_t, A*(e_i)> = (B_t f)_i for the row sums, H[t, s] = tr B_t
        G = sp.csr_matrix((np.tile(self.f, s), (np.arange(s * s), np.repeat(np.arange(s), s))),
                          shape=(s * s, s))
        tr = sp.csr_matrix(self.B[:, np.arange(s) * (s + 1)].sum(axis=1))
        self.Hs = sp.hstack([self.B @ G, tr]).tocsr()
        self.HsT = self.Hs.T.tocsr()
        self._u_prev = np.zeros(self.m)
        # B̂B̂* = B_E B_E^T with B_E the columns of B on the upper-triangle entries that some
        # cut touches, off-diagonal ones times sqrt 2 (B is symmetric: columns (i, j) and
        # (j, i) are equal), which halves the work of every product with it
        iu, ju = np.triu_indices(s)
        ucols = iu * s + ju
        BU = (self.B[:, ucols] @ sp.diags(np.where(iu == ju, 1.0, math.sqrt(2.0)))).tocsc()
        used = np.flatnonzero(np.diff(BU.indptr))
        self.BE = BU[:, used].tocsr()
        self.BET = self.BE.T.tocsr()
        n_e = self.BE.shape[1]
        # entry space: K^-1 = I - B_E G^-1 B_E^T with G = I + B_E^T B_E (Woodbury): a dense
        # Cholesky of G when the cuts of a round concentrate on few entries (1 349 entries
        # for the 5 000 most violated triangles at s = 100), a sparse LU of G for large cut
        # sets, a sparse LU of K itself for a few cuts on many entries, else CG
        if n_e <= ENTRY_DENSE_MAX and n_e < self.m:
            self.ksolver = "entry_dense"
        elif self.m <= DIRECT_MAX_CUTS:
            self.ksolver = "cut_lu"
        elif n_e <= ENTRY_SPARSE_MAX:
            self.ksolver = "entry_lu"
        else:
            self.ksolver = "cg"
        self.KinvH = None
        if not self.direct:
            return
        # (y, u) system [AA*, H^T; H, K]: factor K = B̂B̂* + I (SPD) once and the dense
        # (s+1) x (s+1) Schur complement AA* - H^T K^-1 H once per cut set.
        if self.ksolver == "entry_dense":
            G = (self.BET @ self.BE).toarray()
            G[np.arange(n_e), np.arange(n_e)] += 1.0
            self.E_cho = _cho(G)
        elif self.ksolver == "entry_lu":
            G = (self.BET @ self.BE).tocsc() + sp.identity(n_e, format="csc")
            # G is SPD (eigenvalues >= 1): diagonal pivots are stable, no row exchanges
            self.E_lu = spla.splu(G, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                  options={"SymmetricMode": True})
        else:
            K = (self.BE @ self.BET).tocsc() + sp.identity(self.m, format="csc")
            self.Klu = spla.splu(K, permc_spec="MMD_AT_PLUS_A")
        f = self.f
        AA = np.zeros((s + 1, s + 1))
        AA[:s, :s] = 0.5 * np.outer(f, f)
        AA[np.arange(s), np.arange(s)] += 0.5 * self.n
        AA[:s, s] = AA[s, :s] = f
        AA[s, s] = s
        if self.ksolver == "entry_lu":
            # H^T K^-1 H = H^T H - X^T G^-1 X with X = B_E^T H (|E| x (s+1), dense: about
            # 100 MB at the limit, while factoring); K^-1 H itself (cuts x (s+1), dense) is
            # not kept: u takes a second solve instead
            X = np.asfortranarray((self.BET @ self.Hs).toarray())
            HtKH = (self.HsT @ self.Hs).toarray() - X.T @ self.E_lu.solve(X)
        else:
            H = np.asfortranarray(self.Hs.toarray())
            self.KinvH = self._Ksolve(H)
            HtKH = H.T @ self.KinvH
        self.core_cho = _cho(AA - HtKH)  # Schur complement on y, SPD

    def _Ksolve(self, r: np.ndarray) -> np.ndarray:
        """K^-1 r for K = B̂B̂* + I (a vector or a block of columns)."""
        if self.ksolver == "entry_dense":
            return r - self.BE @ _cho_solve(self.E_cho, self.BET @ r)
        if self.ksolver == "entry_lu":
            return r - self.BE @ self.E_lu.solve(np.asarray(self.BET @ r))
        return self.Klu.solve(r)

    def _schur_u(self, u: np.ndarray) -> np.ndarray:
        """(K - H (AA*)^-1 H^T) u without forming anything (the CG operator)."""
        w = self.BE @ (self.BET @ u) + u
        return w - self.Hs @ self._AAinv(self.HsT @ u)

    def solve_yu(self, r1, r2):
        """Solve [AA*, H^T; H, K] [y; u] = [r1; r2] (device vectors)."""
        be = self.be
        if not self.m:
            return self._AAinv(r1, self.fx), be.zeros(0)
        if not be.is_numpy:
            # the cut system is factored on the host (scipy's sparse LU and Cholesky): its
            # right-hand sides, s + 1 + m numbers, cross there and back
            y, u = self._solve_yu_host(be.to_numpy(r1), be.to_numpy(r2))
            return be.asarray(y), be.asarray(u)
        return self._solve_yu_host(r1, r2)

    def _solve_yu_host(self, r1: np.ndarray, r2: np.ndarray):
        if self.direct:
            # Schur complement on y: (AA* - H^T K^-1 H) y = r1 - H^T K^-1 r2
            Kr2 = self._Ksolve(r2)
            y = _cho_solve(self.core_cho, r1 - self.HsT @ Kr2)
            if self.KinvH is not None:
                u = Kr2 - self.KinvH @ y
            else:
                u = self._Ksolve(r2 - self.Hs @ y)
            return y, u
        # eliminate y in closed form and solve the SPD u system by CG, warm-started from
        # the previous solution (consecutive right-hand sides are close)
        rhs = r2 - self.Hs @ self._AAinv(r1)
        # an inexact solve (CG stopped at maxiter) only slows the ADMM; the bound stays safe
        u = _cg(self._schur_u, rhs, self._u_prev, CG_RTOL, CG_MAXITER)
        self._u_prev = u
        y = self._AAinv(r1 - self.HsT @ u)
        return y, u


class _Pool:
    """Spare float arrays of one shape, handed out again instead of allocating. From s of
    about 2 000 on, every new s x s array is a fresh mapping whose page faults cost more
    than the arithmetic done in it (2-core VM, s = 2 000: 9-23 ms for an addition into a new
    array, with and without huge pages, against 2 ms into a reused one). numpy only: torch's
    caching allocator already reuses device memory, and the other namespaces write nothing
    in place (``take`` gives None: the operation allocates)."""

    def __init__(self, shape: tuple[int, ...], active: bool = True):
        self.shape = shape
        self.active = active
        self.spare: list[np.ndarray] = []

    def take(self) -> np.ndarray | None:
        if not self.active:
            return None
        return self.spare.pop() if self.spare else np.empty(self.shape)

    def give(self, *arrays, keep=()) -> None:
        """Return arrays nothing uses any more (None, ``keep``, views and repeats skipped)."""
        if not self.active:
            return
        seen = {id(a) for a in keep} | {id(a) for a in self.spare}
        for a in arrays:
            if (a is None or id(a) in seen or a.shape != self.shape or not a.flags.owndata
                    or a.dtype != np.float64):
                continue
            seen.add(id(a))
            self.spare.append(a)


def _cg(op, b: np.ndarray, x0: np.ndarray, rtol: float, maxiter: int) -> np.ndarray:
    """Conjugate gradients for the SPD operator ``op`` from ``x0``, stopped when
    ||b - op(x)|| <= rtol ||b|| (scipy's test) or after ``maxiter`` steps; a plain loop,
    without the per-step overhead of ``scipy.sparse.linalg.cg``."""
    x = x0.copy()
    r = b - op(x)
    rr = float(r @ r)
    tol2 = (rtol * float(np.linalg.norm(b))) ** 2
    p = r.copy()
    for _ in range(maxiter):
        if rr <= tol2:
            break
        Ap = op(p)
        pAp = float(p @ Ap)
        if not pAp > 0.0:
            break
        alpha = rr / pAp
        x += alpha * p
        r -= alpha * Ap
        rr_new = float(r @ r)
        p *= rr_new / rr
        p += r
        rr = rr_new
    return x


def _cho(A):
    return sla.cho_factor(0.5 * (A + A.T), check_finite=False)


def _cho_solve(c, b):
    return sla.cho_solve(c, b, check_finite=False)


def _to_Z_space(sc: _Scaled, model: SDPModel, M, y, u, N, S):
    """Unscale a scaled (M-space) point, brought to the host, to Z-space duals in SSE
    units."""
    M, y, u, N, S = (sc.be.to_numpy(a) for a in (M, y, u, N, S))
    f, d, scale = sc.f, sc.d, sc.scale
    Z = M * d[:, None] * d[None, :]
    yz = np.concatenate([scale * y[:-1] * f, [scale * y[-1]]])
    # A_M row i is f_i times the Z-space row i, so y_Z,i = f_i y_M,i; the 1/2 symmetrisation
    # is the same in both spaces
    uz = scale * np.maximum(u, 0.0) / sc.cut_norm if sc.m else np.zeros(0)
    Nz = scale * N * f[:, None] * f[None, :]
    q = len(model.cl)
    if q:
        ci, cj = model.cl[:, 0], model.cl[:, 1]
        y_cl = Nz[ci, cj].copy()
        Nz[ci, cj] = 0.0
        Nz[cj, ci] = 0.0
    else:
        y_cl = np.zeros(0)
    Sz = scale * S * f[:, None] * f[None, :]
    return Z, yz, y_cl, uz, Nz, Sz


def _from_warm(sc: _Scaled, model: SDPModel, ws: WarmStart):
    f, d, scale = sc.f, sc.d, sc.scale
    M = y = u = N = S = None
    if ws.Z is not None:
        M = np.asarray(ws.Z, dtype=np.float64) * f[:, None] * f[None, :]
    if ws.y is not None:
        yz = np.asarray(ws.y, dtype=np.float64)
        y = np.concatenate([yz[:-1] / f, yz[-1:]]) / scale
    if ws.u is not None and sc.m:
        u = np.maximum(np.asarray(ws.u, dtype=np.float64), 0) * sc.cut_norm / scale
    if ws.N is not None:
        Nz = np.array(ws.N, dtype=np.float64)
        if ws.y_cl is not None and len(model.cl):
            Nz[model.cl[:, 0], model.cl[:, 1]] = ws.y_cl
            Nz[model.cl[:, 1], model.cl[:, 0]] = ws.y_cl
        N = Nz * d[:, None] * d[None, :] / scale
    if ws.S is not None:
        S = np.asarray(ws.S, dtype=np.float64) * d[:, None] * d[None, :] / scale
    return M, y, u, N, S


class _Anderson:
    """Type-II Anderson acceleration of a fixed-point map z -> F(z) (Walker-Ni), safeguarded.

    ``propose(z, g)`` records the pair (z, g = F(z)) and returns the next input: the
    extrapolation g - dG gamma with gamma = argmin ||f - dF gamma|| (f = g - z, Tikhonov
    regularised; the last ``mem`` differences, kept in ring buffers with their Gram matrix
    updated one row at a time). The caller evaluates F there; :meth:`check` then rejects the
    extrapolation when its fixed-point residual grew by more than ``AA_SAFEGUARD`` against
    the last plain step, clears the memory and hands back that plain iterate instead.
    """

    def __init__(self, mem: int, n: int, be: ArrayBackend):
        self.mem = mem
        self.be = be
        self.dG = be.empty((mem, n))
        self.dF = be.empty((mem, n))
        self.gram = np.zeros((mem, mem))  # on the host: mem x mem
        # the last pair (g, f), copied on numpy, whose caller reuses its arrays (elsewhere
        # nothing writes into them: they are kept as they are)
        self.owned = (np.empty(n), np.empty(n)) if be.is_numpy else ()
        self.rejected = 0
        self.reset()

    def reset(self) -> None:
        self.count = self.pos = 0
        self.g_prev = self.f_prev = None
        self.base = None  # (plain iterate, its residual norm) while an extrapolation runs

    def check(self, fnorm: float) -> np.ndarray | None:
        """After evaluating F at an extrapolated point: None to go on, else the fallback."""
        if self.base is None:
            return None
        g, nf = self.base
        self.base = None
        if not fnorm <= AA_SAFEGUARD * nf:
            self.rejected += 1
            self.reset()
            return g
        return None

    def _remember(self, g, f) -> None:
        if not self.owned:
            self.g_prev, self.f_prev = g, f
            return
        self.g_prev, self.f_prev = self.owned
        np.copyto(self.g_prev, g)
        np.copyto(self.f_prev, f)

    def propose(self, z, g, f=None, out=None):
        """The next input after the pair (z, g = F(z)): g itself or a new array (in ``out``
        when given); ``f``: g - z if already formed. The fallback that :meth:`check` may
        return later is one of the arrays in ``owned`` (numpy) or a kept g."""
        be = self.be
        f = g - z if f is None else f
        if self.g_prev is None:
            self._remember(g, f)
            return g
        j = self.pos
        if be.is_numpy:
            np.subtract(g, self.g_prev, out=self.dG[j])
            np.subtract(f, self.f_prev, out=self.dF[j])
        else:
            self.dG[j, :] = g - self.g_prev
            self.dF[j, :] = f - self.f_prev
        self.pos = (j + 1) % self.mem
        self.count = k = min(self.count + 1, self.mem)
        self._remember(g, f)
        # the new Gram row and the right-hand side: two products with the memory (stacking
        # the two vectors first would copy 2 s^2 doubles); k numbers each to the host
        row = be.to_numpy(self.dF[:k, :] @ self.dF[j, :])
        rhs = be.to_numpy(self.dF[:k, :] @ f)
        self.gram[j, :k] = row
        self.gram[:k, j] = row
        gram = self.gram[:k, :k]
        reg = AA_REG * float(np.trace(gram)) + 1e-300
        try:
            gamma = np.linalg.solve(gram + reg * np.eye(k), rhs)
        except np.linalg.LinAlgError:
            self.reset()
            return g
        if not np.all(np.isfinite(gamma)) or float(np.abs(gamma).max()) > AA_MAX_COEF:
            self.reset()
            return g
        self.base = (self.g_prev, be.norm(f))
        step = be.matmul(be.asarray(gamma), self.dG[:k, :], out=out)
        return be.sub(g, step, out=step)


def solve_admm(model: SDPModel, settings: BoundSettings | None = None, *,
               time_limit: float | Deadline | None = None, warm_start: WarmStart | None = None,
               bound_target: float | None = None,
               gap_tol: float | None = None, check_every: int = 10,
               sigma0: float | None = None, progress=None) -> SDPResult:
    """Solve the relaxation by sGS-ADMM (module docstring) and return an :class:`SDPResult`.

    ``settings`` (:class:`~pcsos.bounds.settings.BoundSettings`, None: the defaults) gives
    ``tol``, ``max_iter``, ``eig``, ``polish``, ``device``, ``anderson``, ``sigma_ratio``
    and ``verbose``; the other keywords belong to this call.

    Stops with status 'solved' when the relative primal residual, the relative dual
    residual and the relative primal-dual gap are all below ``tol`` and the safe bound is at
    most ``gap_tol`` (default ``tol``) below the primal objective relative to
    max(1, |objective|); else with 'max_iter' (``max_iter``, default 20 000) or
    'time_limit' (``time_limit``, seconds or a :class:`~pcsos.clock.Deadline` whose stop
    signal is polled once per iteration, has run out). ``anderson``: memory of the
    safeguarded Anderson acceleration of the iteration (default ``ANDERSON_MEM``, half of it
    when s > ``ANDERSON_LARGE_S``; 0 = plain sGS-ADMM). ``sigma_ratio``: sigma is rebalanced
    when the mean ratio of the primal to the dual residual leaves [1/r, r] (default
    ``SIGMA_RATIO``; the earlier version used 3). ``bound_target``: stop with status
    'target' as soon as the safe bound reaches this value (a node that the incumbent prunes
    needs no more accuracy); the safe bound is then evaluated, at most every
    ``check_every`` iterations, once the dual objective has passed the target.
    ``polish``: eigen-solves of :func:`~pcsos.bounds.safe.polish_duals` before each safe
    bound (0: none); the result's duals are the polished ones, so its ``lower_bound`` is
    still ``safe_lower_bound`` of them. ``device``: where the iteration runs, 'cpu',
    'cuda' or 'auto' (:func:`pcsos.bounds.arrays.get_backend`; an array namespace module
    such as ``array_api_strict`` is accepted too); off the CPU, ``eig`` is one of 'auto',
    'full', 'partial' and 'krylov', run there (:func:`pcsos.bounds.eig.projector`). The
    safe bound is formed on the host from the iterate brought back, its eigenvalues (and
    polishing's) computed on the device; on a GPU, each calling thread's solves run on a
    CUDA stream of its own (:meth:`~pcsos.bounds.arrays.ArrayBackend.stream`). ``progress``: a
    callable given, after every iteration, a dict of its number and residuals ('it', 'pinf',
    'dinf', 'gap', 'sigma', 'rank'); what it raises ends the solve.
    """
    clock = Deadline.of(time_limit).within()  # its elapsed() counts this solve
    st = settings if settings is not None else BoundSettings()
    be = get_backend(st.device)
    # on a GPU, the whole solve (its arrays, kernels and host reads) on this thread's stream
    with be.stream():
        return _iterate(model, st, be, clock, warm_start, bound_target, gap_tol, check_every,
                        sigma0, progress)


def _iterate(model: SDPModel, st: BoundSettings, be: ArrayBackend, clock: Deadline,
             warm_start, bound_target, gap_tol, check_every, sigma0, progress) -> SDPResult:
    # solve_admm's iteration, with the settings resolved and the backend chosen
    tol, eig, polish, verbose, anderson = st.tol, st.eig, st.polish, st.verbose, st.anderson
    max_iter = 20000 if st.max_iter is None else int(st.max_iter)
    gap_tol = tol if gap_tol is None else gap_tol
    if anderson is None:
        mem = ANDERSON_MEM if model.s <= ANDERSON_LARGE_S else max(1, ANDERSON_MEM // 2)
    else:
        mem = int(anderson)
    log_ratio = math.log(SIGMA_RATIO if st.sigma_ratio is None else float(st.sigma_ratio))
    sc = _Scaled(model, be)
    s, m = sc.s, sc.m
    ws = warm_start.check(s, m, len(model.cl)) if warm_start is not None else WarmStart()
    M, y, u, N, S = (None if a is None else be.asarray(a) for a in _from_warm(sc, model, ws))
    M = be.zeros((s, s)) if M is None else M
    y = be.zeros(s + 1) if y is None else y
    u = be.zeros(m) if u is None else u
    N = be.zeros((s, s)) if N is None else N
    S = be.zeros((s, s)) if S is None else S
    C, b, l = sc.Cx, sc.bx, sc.lx
    t = be.clip0(sc.Bop(M) - l, upper=False) if m else be.zeros(0)
    v = be.copy(u)
    sigma = float(ws.sigma) if ws.sigma else (sigma0 if sigma0 else 1.0)
    normb = 1.0 + float(np.linalg.norm(sc.b))
    norml = 1.0 + float(np.linalg.norm(sc.l))
    normC = 1.0 + float(np.linalg.norm(sc.C))
    rank = s
    # one per solve: a stateful method keeps its block
    project = eigmod.projector(eig, be)

    def last_vecs():
        # the range of M, i.e. about the near-null space of the dual slack: where the safe
        # bound's iterative eigenvalue certificate (large s only) starts
        return None if project.last is None else be.to_numpy(project.last[1])

    # (iteration, Z, y, y_cl, u, N, S, bound) of the last iterate whose safe bound was taken
    certified = None

    def bound_here(evaluations: int = polish) -> float:
        # the safe bound of the current iterate, from its polished duals
        nonlocal certified
        Z, yz, y_cl, uz, Nz, Sz = _to_Z_space(sc, model, M, y, u, N, S)
        lb, yz, y_cl, uz, Nz = polished_bound(model, yz, y_cl, uz, Nz, start=last_vecs(),
                                              evaluations=evaluations, backend=be)
        certified = (it, Z, yz, y_cl, uz, Nz, Sz, lb)
        return lb

    normM = math.inf
    status, message = "max_iter", f"iteration limit {max_iter} reached"
    pinf = dinf = relgap = math.inf
    lb = -math.inf
    it = 0
    prim_acc = dual_acc = 0.0
    next_check = 0
    next_target = 0
    # the target in the scaled objective, for the cheap test on the dual objective
    target_sc = None if bound_target is None else float(bound_target) / sc.scale
    cl_flat, free = sc.cl_flat_x, sc.free_x
    pack, unpack, nz = _packing(be, s, m)
    aa = _Anderson(mem, nz, be) if mem > 0 else None
    mats, vecs_z = _Pool((s, s), be.is_numpy), _Pool((nz,), be.is_numpy)
    # the evaluated point (output of the last ADMM step), returned whatever the extrapolation
    out = (M, y, u, N, S, t)
    # A(C) and B(C): the (y, u) right-hand sides take A and B of S and N only (matrix-vector
    # products), not of an s x s difference
    AC = sc.A(C)
    BC = sc.Bop(C)

    def clip(X, upper):
        # min or max of X and 0, in place where the backend can, except on the cannot-link
        # entries (free multipliers)
        return be.clip0(X, upper, cl_flat, free)

    # M (and t) only change at the multiplier step: A(M), B(M) and K = C - M / sigma are
    # computed once per iteration (pre_b, pre_l, K)
    def yu_step(S, N):
        # right-hand sides pre + A(C - S - N) (and B), by linearity
        r1 = pre_b + AC - sc.A(S) - sc.A(N)
        if m:
            r2 = pre_l + BC - sc.Bop(S) - sc.Bop(N) + v
        else:
            r2 = be.zeros(0)
        return sc.solve_yu(r1, r2)

    def n_block(y, u, S):
        # N = Π_P*(C - A*y - B*u - S - M / sigma)
        N = be.sub(K, S, out=mats.take())
        N = clip(sc.add_adj(N, y, u, -1.0), upper=False)
        v = be.clip0(u - t / sigma, upper=False) if m else u
        return N, v

    def s_block(y, u, N):
        # S = Π_PSD(W) = W + Π_PSD(-W) for W = C - A*y - B*u - N - M / sigma, the second
        # part low rank (about k); -W is built directly
        Wn = be.sub(N, K, out=mats.take())
        Wn = sc.add_adj(Wn, y, u, 1.0)
        eig_tol = EIG_TOL * min(dinf * normC, pinf * normM / sigma)
        vals, vecs = project(Wn, rank, eig_tol if math.isfinite(eig_tol) else None)
        P = be.matmul(vecs * vals, vecs.T, out=mats.take())
        return be.sub(P, Wn, out=Wn), P, vals.shape[0]

    z_in = pack(M, S, y, u, t, sigma, vecs_z.take()) if aa is not None else None
    for it in range(1, max_iter + 1):
        inputs = (M, S, N)
        K = be.scale(M, -1.0 / sigma, out=mats.take())
        K = be.add(K, C, out=_inplace(be, K))
        pre_b = (b - sc.A(M)) / sigma
        pre_l = (l - sc.Bop(M) + t) / sigma if m else None
        if ORDER == "NS":
            N, v = n_block(y, u, S)
            y, u = yu_step(S, N)
            S, P, rank = s_block(y, u, N)
        else:
            S, P, rank = s_block(y, u, N)
            y, u = yu_step(S, N)
            N, v = n_block(y, u, S)
        mats.give(K)
        K = None
        # (y, u) full step
        y, u = yu_step(S, N)
        R = be.add(S, N, out=mats.take())
        R = be.sub(R, C, out=_inplace(be, R))
        R = sc.add_adj(R, y, u, 1.0)
        M_new = be.scale(R, TAU * sigma, out=mats.take())
        M_new = be.add(M_new, inputs[0], out=_inplace(be, M_new))
        if it % SIGMA_EVERY == 0:
            # nothing above symmetrises: rounding would let M drift from its transpose by
            # about one ulp an iteration (S and N are formed anew from it)
            M = be.add(M_new, M_new.T, out=mats.take())
            M = be.scale(M, 0.5, out=_inplace(be, M))
            mats.give(M_new)
        else:
            M = M_new
        if m:
            t = t + (TAU * sigma) * (v - u)
        # the last evaluated point and this step's inputs are dead from here on
        mats.give(*inputs, out[0], out[3], out[4], keep=(M, N, S))
        out = (M, y, u, N, S, t)

        # ---- residuals
        AM = sc.A(M)
        pres = be.norm(AM - b) / normb
        if m:
            pres = max(pres, be.norm(sc.Bop(M) - t - l) / norml)
        # distance of M to P and to the PSD cone (the latter from the last projection:
        # sigma * P is the PSD part of M's estimate M_half = sigma (S - W))
        normM = 1.0 + be.norm(M)
        negM = clip(be.copy(M, out=mats.take()), upper=True)
        kinf1 = be.norm(negM) / normM
        P = be.scale(P, -sigma, out=_inplace(be, P))
        P = be.add(P, M, out=_inplace(be, P))
        kinf2 = be.norm(P) / normM
        mats.give(P, negM)
        P = negM = None
        kinf = max(kinf1, kinf2)
        pinf = max(pres, kinf)
        vu = be.vdot(v - u, v - u) if m else 0.0
        dinf = math.sqrt(be.vdot(R, R) + vu) / normC
        mats.give(R)
        R = None
        pobj = sc.c0 + be.vdot(C, M)
        dobj = sc.c0 + float(b @ y) + (float(l @ u) if m else 0.0)
        relgap = abs(pobj - dobj) / (1.0 + abs(pobj) + abs(dobj))
        if verbose and (it % 50 == 0 or it == 1):
            print(f"it {it:5d}  pobj {pobj * sc.scale:.8e}  dobj {dobj * sc.scale:.8e}  "
                  f"pinf {pinf:.2e}  dinf {dinf:.2e}  gap {relgap:.2e}  sigma {sigma:.2e}  "
                  f"rank {rank}" + (f"  aa_rej {aa.rejected}" if aa is not None else ""),
                  file=sys.stderr)  # stdout may carry a --json - document
        if progress is not None:
            progress({"it": it, "pinf": pinf, "dinf": dinf, "gap": relgap, "sigma": sigma,
                      "rank": rank})
        lb_now = None  # the safe bound of this iterate, when one of the tests computed it
        if max(pinf, dinf, relgap) < tol and it >= next_check:
            # the safe bound costs an eigendecomposition: checked as soon as the KKT test
            # passes, then at most every check_every iterations while its gap is too wide
            lb = lb_now = bound_here()
            val = model.objective(certified[1])
            # one-sided: a (polished) bound above the primal objective of an iterate that
            # is feasible only to tol is as close as that objective can tell
            if val - lb <= gap_tol * sse_magnitude(val, model.c0):
                status, message = "solved", "relative KKT residuals and safe-bound gap below tol"
                break
            next_check = it + check_every
        if target_sc is not None and dobj >= target_sc and it >= next_target:
            # the dual objective says the bound may prune: the safe bound decides
            if lb_now is None:
                lb = lb_now = bound_here()
            if lb >= bound_target:
                status, message = "target", f"safe bound reached the target {bound_target:.10g}"
                break
            next_target = it + check_every
        if clock.expired():
            status, message = "time_limit", ("stopped on request" if clock.stopped()
                                             else "time limit reached")
            break
        # ---- sigma adaptation (balance residuals, ADMM convention: dual residual of the
        # dual problem = our primal infeasibility)
        prim_acc += math.log(max(pinf, 1e-300))
        dual_acc += math.log(max(dinf, 1e-300))
        sigma_old = sigma
        if it % SIGMA_EVERY == 0:
            ratio = (prim_acc - dual_acc) / SIGMA_EVERY  # mean log(pinf / dinf)
            prim_acc = dual_acc = 0.0
            if ratio > log_ratio:
                sigma /= SIGMA_STEP
            elif ratio < -log_ratio:
                sigma *= SIGMA_STEP
            sigma = min(max(sigma, 1e-6), 1e6)
        # ---- Anderson acceleration of the map (M, S, y, u, t) -> next (M, S, y, u, t); the
        # residuals and the bound above are always those of a true ADMM step
        if aa is not None:
            z_old = z_in
            if sigma != sigma_old:
                # a new sigma is a new map: the memory no longer applies
                aa.reset()
                z_in = pack(M, S, y, u, t, sigma, vecs_z.take())
                vecs_z.give(z_old, keep=aa.owned)
                continue
            g = pack(M, S, y, u, t, sigma, vecs_z.take())
            fz = be.sub(g, z_in, out=vecs_z.take())
            fallback = aa.check(be.norm(fz))
            step = None
            if fallback is not None:
                z_in = fallback
            else:
                step = vecs_z.take()
                z_in = aa.propose(z_old, g, fz, out=step)
            vecs_z.give(z_old, g, fz, step, keep=(z_in, *aa.owned))
            if z_in is not g:
                M, S, y, u, t = unpack(z_in, sigma, mats)

    M, y, u, N, S, t = out
    # the spare arrays and the acceleration's history (2 x memory vectors of about s^2
    # doubles) are not needed by the last safe bound, which makes s x s arrays of its own
    mats.spare.clear()
    vecs_z.spare.clear()
    aa = z_in = None
    if certified is None or certified[0] != it:
        # out of time (or asked to stop): the bound as it is, without the eigen-solves of
        # polishing (at s = 2 000 they took longer than the grace a stopping search gives)
        bound_here(0 if status == "time_limit" else polish)
    _, Z, yz, y_cl, uz, Nz, Sz, lb = certified
    val = model.objective(Z)
    dual_value = math.fsum([model.c0, *(model.b * yz), *(model.l * uz)])
    t = be.to_numpy(t)
    return SDPResult(Z=Z, y=yz, y_cl=y_cl, u=uz, N=Nz, sdp_value=val, dual_value=dual_value,
                     lower_bound=lb, primal_residual=pinf, dual_residual=dinf, iterations=it,
                     seconds=clock.elapsed(), status=status, backend="admm",
                     message=message, S=Sz, gap=relgap, sigma=sigma,
                     t=t * sc.cut_norm if m else np.zeros(0), device=be.label)


def _inplace(be: ArrayBackend, X):
    """``X`` as the ``out`` of an operation whose result replaces it, where the backend
    writes in place (numpy, torch); None elsewhere."""
    return X if be.in_place else None


def _packing(be: ArrayBackend, s: int, m: int):
    """(pack, unpack, length) of the iterate (M, S, y, u, t) as one vector in the ADMM's
    natural metric ||M||^2 / sigma + sigma ||dual||^2.

    On numpy the upper triangles of the symmetric M and S, off-diagonal entries weighted by
    sqrt 2 (half the memory traffic of the acceleration, by a gather and a scatter); on the
    other backends the whole matrices, which have the same inner products and need neither.
    """
    xp = be.xp
    if not be.is_numpy:
        ss = s * s

        def pack(M, S, y, u, t, sigma, out=None):
            r = math.sqrt(sigma)
            return be.concat([xp.reshape(M, (-1,)) / r, xp.reshape(S, (-1,)) * r, y * r,
                              u * r, t / r])

        def unpack(z, sigma, mats=None):
            r = math.sqrt(sigma)
            M = xp.reshape(z[:ss] * r, (s, s))
            S = xp.reshape(z[ss:2 * ss] / r, (s, s))
            return (M, S, z[2 * ss:2 * ss + s + 1] / r, z[2 * ss + s + 1:2 * ss + s + 1 + m] / r,
                    z[2 * ss + s + 1 + m:] * r)

        return pack, unpack, 2 * ss + s + 1 + 2 * m

    iu, ju = np.triu_indices(s)
    tri = iu * s + ju
    tri_t = ju * s + iu  # the same entries, mirrored
    tri_w = np.where(iu == ju, 1.0, math.sqrt(2.0))
    del iu, ju
    nt = len(tri)
    tri_buf = np.empty(nt)
    weights = {}

    def tri_weights(sigma):
        # (weight of M, weight of S) on the packed triangles at the current sigma
        if weights.get("sigma") != sigma:
            r = math.sqrt(sigma)
            weights.update(sigma=sigma, M=tri_w / r, S=tri_w * r)
        return weights["M"], weights["S"]

    def pack(M, S, y, u, t, sigma, out=None):
        r = math.sqrt(sigma)
        wM, wS = tri_weights(sigma)
        z = out if out is not None else np.empty(2 * nt + s + 1 + 2 * m)
        for X, w, part in ((M, wM, z[:nt]), (S, wS, z[nt:2 * nt])):
            np.take(X.ravel(), tri, out=part)
            part *= w
        np.multiply(y, r, out=z[2 * nt:2 * nt + s + 1])
        np.multiply(u, r, out=z[2 * nt + s + 1:2 * nt + s + 1 + m])
        np.divide(t, r, out=z[2 * nt + s + 1 + m:])
        return z

    def unsym(v, w, mats):
        X = mats.take()
        np.divide(v, w, out=tri_buf)
        X.ravel()[tri] = tri_buf
        X.ravel()[tri_t] = tri_buf
        return X

    def unpack(z, sigma, mats):
        r = math.sqrt(sigma)
        wM, wS = tri_weights(sigma)
        M = unsym(z[:nt], wM, mats)
        S = unsym(z[nt:2 * nt], wS, mats)
        y = z[2 * nt:2 * nt + s + 1] / r
        u = z[2 * nt + s + 1:2 * nt + s + 1 + m] / r
        t = z[2 * nt + s + 1 + m:] * r
        return M, S, y, u, t

    return pack, unpack, 2 * nt + s + 1 + 2 * m
