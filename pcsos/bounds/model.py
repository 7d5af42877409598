"""The node relaxation (spec §3) as data: one representation shared by every backend.

    min  c0 + <C, Z>          (C = -W W^T, so the objective is the SSE of a clustering Z)
    s.t. Z e = 1              (s rows, symmetric row-sum operator)
         <Diag(e), Z> = k
         Z_ij = 0             for every cannot-link pair (i, j)
         Z >= 0, Z PSD
         <B_t, Z> >= l_t      (cuts, a :class:`~pcsos.bounds.cutset.CutSet`, which also
                               holds the cluster-size constraints: pcsos.bounds.sizes)

Operators are written in Z-space here. The ADMM works internally on the scaled matrix
M = D^1/2 Z D^1/2 (D = Diag(e)), see :mod:`pcsos.bounds.admm`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pcsos.bounds.cutset import CutSet
from pcsos.bounds.sizes import size_constraints
from pcsos.problem import Problem

__all__ = ["SDPModel", "SDP_TOL", "scatter_unit", "sse_magnitude"]

#: the default relative KKT tolerance of every SDP backend, the loop and the CLI (the one
#: place it is written; the bound is valid at any tolerance, docs/safe_bound.md)
SDP_TOL = 1e-5

def scatter_unit(c0: float) -> float:
    """The least SSE that counts as a magnitude: 1 in the data's units, or c0, the data's
    total scatter, where that is smaller (positive even at c0 = 0). A floor of 1 alone
    was 10^7 times the SSEs of data at 1e-4; on data whose scatter is at least 1 it is 1,
    as it was."""
    return max(min(1.0, abs(c0)), 1e-300)


def sse_magnitude(value: float, c0: float) -> float:
    """What a tolerance on an SSE ``value`` is relative to: |value|, but at least
    :func:`scatter_unit` (an optimum of 0: points at k locations or fewer). With a floor of
    1 alone, on data at 1e-4 (SSEs near 1e-7) an SDP's safe bound counted as within tol of
    its objective at any distance, the loop saw every round's gain as below cp_tol, and the
    polishing stepped by 10x the bound itself."""
    return max(abs(value), scatter_unit(c0))


@dataclass(frozen=True, eq=False)
class SDPModel:
    """The SDP relaxation of one node: a problem plus a cut set.

    Attributes
    ----------
    problem : Problem
    s, k : int, number of super-points and clusters.
    e : (s,) sizes of the super-points.
    C : (s, s) objective matrix of ``min <C, Z>`` (``-problem.C``).
    c0 : float, constant so that ``SSE = c0 + <C, Z>``.
    cl : (q, 2) cannot-link pairs (i < j) forcing ``Z_ij = 0``.
    cuts : CutSet, cuts ``<B_t, Z> >= l_t``.
    """

    problem: Problem
    s: int
    k: int
    e: np.ndarray
    C: np.ndarray
    c0: float
    cl: np.ndarray
    cuts: CutSet = field(default_factory=CutSet.empty)

    @classmethod
    def from_problem(cls, problem: Problem, cuts: CutSet | None = None) -> SDPModel:
        """The relaxation of ``problem`` with ``cuts`` (none by default).

        With cluster sizes, the size constraints are appended when ``cuts`` holds none (a
        root; a child inherits its parent's), so a warm start for ``cuts`` still fits.
        """
        C = -problem.C
        C.setflags(write=False)
        cuts = cuts if cuts is not None else CutSet.empty()
        if problem.instance.has_sizes and not cuts.is_size.any():
            cuts = cuts.concat(size_constraints(problem))
        return cls(problem, problem.s, problem.k, problem.e, C, float(problem.c0),
                   problem.cl, cuts)

    def with_cuts(self, cuts: CutSet) -> SDPModel:
        """The same relaxation with another cut set (the matrices are shared, not copied)."""
        return replace(self, cuts=cuts)

    # ------------------------------------------------------------------ operators (Z-space)
    @property
    def b(self) -> np.ndarray:
        """Right-hand side of the equalities: s ones then k."""
        return np.concatenate([np.ones(self.s), [float(self.k)]])

    @property
    def l(self) -> np.ndarray:  # noqa: E743
        """Right-hand sides of the cuts."""
        return self.cuts.rhs

    def A(self, Z: np.ndarray) -> np.ndarray:
        """The equality operator: (symmetrised) row sums ``Z e`` then ``<Diag(e), Z>``."""
        r = 0.5 * (Z @ self.e + Z.T @ self.e)
        return np.concatenate([r, [float(np.dot(np.diag(Z), self.e))]])

    def A_adj(self, y: np.ndarray) -> np.ndarray:
        """The adjoint: ``(y e^T + e y^T)/2 + y_s Diag(e)`` for ``y`` of length s + 1."""
        yr, y0 = y[:-1], y[-1]
        out = 0.5 * (np.outer(yr, self.e) + np.outer(self.e, yr))
        out[np.diag_indices(self.s)] += y0 * self.e
        return out

    def objective(self, Z: np.ndarray) -> float:
        """``c0 + <C, Z>``: the SSE when Z is a clustering matrix."""
        return float(self.c0 + np.vdot(self.C, Z))

    def __repr__(self) -> str:
        return (f"SDPModel(s={self.s}, k={self.k}, cl={len(self.cl)}, cuts={self.cuts.m})")
