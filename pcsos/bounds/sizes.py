"""The cluster-size constraints of the relaxation (docs/safe_bound.md, "Cluster sizes").

A clustering matrix in super-point space has Z_ab = 1 / w(C) for a, b in cluster C, with
w(C) the weight of C (its number of points without point weights) and n(C) its number of
points. With every n(C) in [L, U] (``size_min``/``size_max``, or the smallest and largest
of exact ``sizes``) and m the super-points' point counts:

* without point weights (w = n): ``1/U <= Z_aa <= 1/L`` for every super-point a;
* with point weights: ``L Z_aa <= (Z m)_a <= U Z_aa``, since (Z m)_a = n(C) / w(C) = n(C) Z_aa;
* with exact sizes sigma_1 <= ... <= sigma_k and no weights, for every set S of super-points
  holding t points: ``sum_{a in S} m_a Z_aa <= f(t)``, where f(t) fills the smallest clusters
  first (:func:`majorization_rhs`);
* with exact sizes of at least two values v_1 < ... < v_r and no weights, for a super-point
  a, a set T of super-points holding a and tau points, and any lambda, the *size-class cut*
  ``sum_{b in T} m_b Z_ab - lambda Z_aa <= R = max_i (min(tau, v_i) - lambda) / v_i`` over
  the values v_i >= m_a: if a's cluster C has v points, the left side is
  (|C and T| - lambda) / v <= (min(tau, v) - lambda) / v. It is what cuts off a block of 61
  points that sizes 48, 59, 71 allow neither as a cluster of 59 nor as one of 71, which the
  diagonal bounds and the majorization cuts both accept.

The first two are listed (family SIZE, never pruned); the last two are separated round by
round (:func:`separate_sizes`, family SIZE_CUT). All are linear, hold for every clustering
that meets the sizes, and so enter the relaxation as cuts: the backends and the safe bound
treat them like any other cut.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pcsos.bounds.cutset import SIZE, SIZE_CUT, CutSet

__all__ = ["size_constraints", "majorization_rhs", "class_rhs", "separate_sizes"]

# lambda of a size-class cut is rounded to a multiple of this power of two, so that
# min(tau, v) - lambda is exact in floating point and R can be computed exactly
LAMBDA_QUANTUM = 2.0 ** -20


def _down(x: Fraction) -> float:
    """The largest double <= x (a rounded right-hand side that keeps a >= cut valid)."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def _up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def size_constraints(problem) -> CutSet:
    """The listed size constraints of ``problem`` (empty without sizes): the diagonal bounds
    without point weights, the row bounds with them. Only those that the relaxation's other
    constraints do not already imply are listed (an upper diagonal bound where L > m_a, a
    lower one where U < n)."""
    inst = problem.instance
    if not inst.has_sizes:
        return CutSet.empty()
    lo, hi = inst.size_bounds()
    n, s = inst.n, problem.s
    m = problem.counts
    idx = np.arange(s)
    upper = idx[m < lo]  # m_a Z_aa <= (Z e)_a = 1 already gives Z_aa <= 1 / m_a
    lower = idx if hi < n else idx[:0]
    if inst.weights is None:
        rows = [np.array([a]) for a in upper] + [np.array([a]) for a in lower]
        coefs = [np.array([-1.0])] * len(upper) + [np.array([1.0])] * len(lower)
        rhs = [-_up(Fraction(1, lo))] * len(upper) + [_down(Fraction(1, hi))] * len(lower)
        return CutSet.rows(rows, rows, coefs, rhs, SIZE)
    mf = m.astype(np.float64)
    rows, cols, coefs = [], [], []
    for a in upper:  # (Z m)_a - L Z_aa >= 0
        c = mf.copy()
        c[a] -= lo
        rows.append(np.full(s, a))
        cols.append(idx)
        coefs.append(c)
    for a in lower:  # U Z_aa - (Z m)_a >= 0
        c = -mf
        c[a] += hi
        rows.append(np.full(s, a))
        cols.append(idx)
        coefs.append(c)
    return CutSet.rows(rows, cols, coefs, np.zeros(len(rows)), SIZE)


def majorization_rhs(sizes, t) -> Fraction:
    """f(t): the largest sum of 1 / n(C(p)) over t points p of a clustering with the exact
    cluster sizes ``sizes`` (fill the smallest clusters first; exact arithmetic)."""
    left, out = int(t), Fraction(0)
    for sz in sorted(int(x) for x in sizes):
        take = min(left, sz)
        out += Fraction(take, sz)
        left -= take
        if not left:
            break
    return out


def class_rhs(values, tau: int, lam: float, m_a: int = 1) -> Fraction:
    """R of a size-class cut: max over the cluster sizes v >= m_a in ``values`` of
    (min(tau, v) - lam) / v, exactly (``lam`` a double)."""
    lam = Fraction(lam)
    return max(Fraction(min(int(tau), int(v))) / int(v) - lam / int(v)
               for v in set(values) if int(v) >= m_a)


def separate_sizes(Z: np.ndarray, problem, *, eps: float = 1e-4, cap: int | None = None
                   ) -> CutSet:
    """Violated separated size cuts at ``Z``: the most violated majorization cut and, for
    at most ``cap`` super-points (default s), the most violated size-class cut of each, most
    violated first. Empty without exact sizes of two or more values, or with point weights
    (then the listed constraints are all there is)."""
    inst = problem.instance
    if inst.sizes is None or inst.weights is not None or len(set(inst.sizes)) == 1:
        return CutSet.empty()
    Z = np.asarray(Z, dtype=np.float64)
    out = _majorization_cut(Z, problem, eps)
    cls_cuts = _class_cuts(Z, problem, eps, problem.s if cap is None else cap)
    return out.concat(cls_cuts)


def _majorization_cut(Z, problem, eps) -> CutSet:
    sizes = problem.instance.sizes
    m = problem.counts
    dz = np.diag(Z)
    order = np.argsort(-dz, kind="stable")
    lhs = np.cumsum(m[order] * dz[order])
    t = np.cumsum(m[order])
    sz = np.sort(np.asarray(sizes, dtype=np.float64))
    f = np.interp(t, np.concatenate([[0.0], np.cumsum(sz)]), np.arange(len(sz) + 1.0))
    viol = lhs - f
    p = int(np.argmax(viol))
    if not viol[p] > eps:
        return CutSet.empty()
    S = order[: p + 1]
    rhs = -_up(majorization_rhs(sizes, int(t[p])))
    return CutSet.rows([S], [S], [-m[S].astype(np.float64)], [rhs], SIZE_CUT)


def _class_cuts(Z, problem, eps, cap) -> CutSet:
    """Per super-point a: T the prefixes of a then the others by Z_ab decreasing; lambda at
    the kinks of R (where two classes' lines cross); the best (T, lambda) by violation."""
    m = problem.counts
    values = np.array(sorted(set(int(v) for v in problem.instance.sizes)), dtype=np.float64)
    best = []
    for a in range(problem.s):
        vals = values[values >= m[a]]
        if len(vals) < 2:
            continue
        row = Z[a].copy()
        za = row[a]
        row[a] = -np.inf
        others = np.argsort(-row, kind="stable")
        others = others[row[others] > 1e-9 * max(za, 1e-300)]
        T = np.concatenate([[a], others])
        lhs = np.cumsum(m[T] * Z[a, T])
        tau = np.cumsum(m[T]).astype(np.float64)
        mins = np.minimum(tau[:, None], vals[None, :])  # (P, r)
        i, j = np.triu_indices(len(vals), 1)
        # lines g_i(lam) = (mins_i - lam) / v_i cross where
        # lam = (v_j mins_i - v_i mins_j) / (v_j - v_i)
        lam = (vals[j] * mins[:, i] - vals[i] * mins[:, j]) / (vals[j] - vals[i])  # (P, pairs)
        g = (mins[:, None, :] - lam[:, :, None]) / vals[None, None, :]
        viol = lhs[:, None] - lam * za - g.max(axis=2)
        p, q = np.unravel_index(int(np.argmax(viol)), viol.shape)
        if viol[p, q] > eps:
            best.append((float(viol[p, q]), a, T[: p + 1], int(tau[p]), float(lam[p, q])))
    best.sort(key=lambda x: -x[0])
    rows, cols, coefs, rhs = [], [], [], []
    for _, a, T, tau, lam in best[:cap]:
        lam = round(lam / LAMBDA_QUANTUM) * LAMBDA_QUANTUM
        c = -m[T].astype(np.float64)
        c[0] += lam  # T[0] is a: its entry is the diagonal one
        rows.append(np.full(len(T), a))
        cols.append(T)
        coefs.append(c)
        rhs.append(-_up(class_rhs(values.astype(int), tau, lam, int(m[a]))))
    return CutSet.rows(rows, cols, coefs, rhs, SIZE_CUT)
