"""Result and warm-start types shared by every SDP backend."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pcsos.errors import InputError
from pcsos.problem import Problem

__all__ = ["SDPResult", "WarmStart", "STATUSES"]

# "target": stopped once the safe bound reached a caller's target (solve_sdp bound_target)
STATUSES = ("solved", "target", "max_iter", "time_limit", "failed")


@dataclass(eq=False)
class SDPResult:
    """Outcome of one SDP solve (SciPy ``OptimizeResult``-like: ``status`` + ``message``).

    All quantities are in Z-space and SSE units. ``y`` (length s + 1): multipliers of
    ``Z e = 1`` then of ``<Diag(e), Z> = k``; ``y_cl``: of ``Z_ij = 0`` per CL pair (entry
    multiplier, free sign); ``u >= 0``: one per cut; ``N >= 0``: of ``Z >= 0`` (zero on CL
    entries); ``S``: the dual slack ``C - A*y - B*u - N - y_cl`` of the solver (PSD up to the
    dual residual). ``sdp_value = c0 + <C, Z>``; ``dual_value = c0 + b^T y + l^T u``;
    ``lower_bound`` = :func:`~pcsos.bounds.safe.safe_lower_bound` of these duals, valid
    whatever the status. Residuals are relative (see the backend). ``device``: where the
    iteration ran ('cpu', or the GPU's name; the safe bound is always taken on the host).
    """

    Z: np.ndarray
    y: np.ndarray
    y_cl: np.ndarray
    u: np.ndarray
    N: np.ndarray
    sdp_value: float
    dual_value: float
    lower_bound: float
    primal_residual: float
    dual_residual: float
    iterations: int
    seconds: float
    status: str
    backend: str
    message: str = ""
    S: np.ndarray | None = None
    gap: float = float("nan")
    sigma: float | None = None
    t: np.ndarray | None = field(default=None, repr=False)
    device: str = "cpu"

    @property
    def success(self) -> bool:
        """Solved to the tolerance ('target' is not: its Z is an unconverged iterate)."""
        return self.status == "solved"

    def summary(self) -> dict:
        """The scalar fields, JSON-ready."""
        return {"sdp_value": self.sdp_value, "dual_value": self.dual_value,
                "lower_bound": self.lower_bound, "primal_residual": self.primal_residual,
                "dual_residual": self.dual_residual, "gap": self.gap,
                "iterations": self.iterations, "seconds": self.seconds, "status": self.status,
                "backend": self.backend, "device": self.device, "message": self.message}


@dataclass(eq=False)
class WarmStart:
    """A starting point for the ADMM in Z-space: primal Z and the duals of a (related) model.

    Any field may be None (cold start for that block). ``u`` must have one entry per cut of
    the model it is used with; ``y_cl`` one per CL pair, or None. Build it with the
    constructors below, which map a parent's result onto a changed model:

    - :meth:`for_cuts`: cuts kept (``keep``) and ``n_new`` appended (u = 0 for the new ones);
    - :meth:`for_cut_map`: cuts re-indexed for a child, some merged (their u add up);
    - :meth:`for_merge`: a must-link child (rows and columns combined through
      ``child.parent_map``; the dual point maps exactly: y_child = P^T y, N_child = P^T N P);
    - :meth:`for_cl`: a cannot-link child (same s; the new entry's multiplier becomes free);
    - :meth:`transfer`: all three at once (child problem and/or cut map).

    Passing an :class:`SDPResult` directly to ``solve_sdp(warm_start=...)`` means
    ``WarmStart.from_result``; if its ``u`` is shorter than the model's cut list the old cuts
    are taken to be a prefix (cuts appended), if longer an :class:`InputError` is raised.
    """

    Z: np.ndarray | None = None
    y: np.ndarray | None = None
    y_cl: np.ndarray | None = None
    u: np.ndarray | None = None
    N: np.ndarray | None = None
    S: np.ndarray | None = None
    sigma: float | None = None

    @classmethod
    def from_result(cls, result: SDPResult) -> WarmStart:
        """The result's point as is."""
        return cls(result.Z, result.y, result.y_cl, result.u, result.N, result.S, result.sigma)

    @classmethod
    def for_cuts(cls, result: SDPResult | WarmStart, keep=None, n_new: int = 0) -> WarmStart:
        """After the cut list became ``old[keep] + n_new`` appended cuts (same problem)."""
        ws = result if isinstance(result, WarmStart) else cls.from_result(result)
        u = np.zeros(0) if ws.u is None else np.asarray(ws.u, dtype=np.float64)
        if keep is not None:
            keep = np.asarray(keep)
            u = u[keep if keep.dtype == bool else keep.astype(np.int64)]
        u = np.concatenate([u, np.zeros(int(n_new))])
        return cls(ws.Z, ws.y, ws.y_cl, u, ws.N, ws.S, ws.sigma)

    @classmethod
    def for_cut_map(cls, result: SDPResult | WarmStart, cut_map, n_new: int = 0) -> WarmStart:
        """After parent cut t became child cut ``cut_map[t]`` (-1: dropped) and ``n_new``
        cuts were appended: the multipliers of parent cuts that became one child cut add up,
        so that B'^* u' is exactly the parent's B^* u mapped (see ``inherit_cuts_map``)."""
        ws = result if isinstance(result, WarmStart) else cls.from_result(result)
        cut_map = np.asarray(cut_map, dtype=np.int64)
        u = np.zeros(len(cut_map)) if ws.u is None else np.asarray(ws.u, dtype=np.float64)
        on = cut_map >= 0
        m = int(cut_map.max()) + 1 if on.any() else 0
        u = np.concatenate([np.bincount(cut_map[on], weights=u[on], minlength=m),
                            np.zeros(int(n_new))])
        return cls(ws.Z, ws.y, ws.y_cl, u, ws.N, ws.S, ws.sigma)

    @classmethod
    def for_merge(cls, result: SDPResult | WarmStart, parent: Problem, child: Problem,
                  cut_map=None, n_new: int = 0) -> WarmStart:
        """Must-link child: P (s x s') maps parent super-point p to ``child.parent_map[p]``.

        Z' = E'^-1 P^T E Z E P E'^-1 (size-weighted average, keeps Z' e' = 1); the duals are
        mapped exactly: y' = P^T y (the trace multiplier unchanged), N' = P^T N P,
        S' = P^T S P, and u by ``cut_map`` (:meth:`for_cut_map`, the map of
        ``inherit_cuts_map``), so a dual feasible parent point stays dual feasible with the
        same dual value.
        """
        ws = result if isinstance(result, WarmStart) else cls.from_result(result)
        pm = np.asarray(child.parent_map, dtype=np.int64)
        s2 = child.s

        def comb(A):
            out = np.zeros((s2, A.shape[1]))
            np.add.at(out, pm, A)
            out2 = np.zeros((s2, s2))
            np.add.at(out2.T, pm, out.T)
            return out2

        Z = y = N = S = None
        if ws.Z is not None:
            ep = np.asarray(parent.e)
            Z = comb(ws.Z * ep[:, None] * ep[None, :]) / np.outer(child.e, child.e)
        if ws.y is not None:
            y = np.concatenate([np.bincount(pm, weights=ws.y[:-1], minlength=s2), ws.y[-1:]])
        if ws.N is not None:
            N = comb(_with_cl(ws.N, parent, ws.y_cl))
        if ws.S is not None:
            S = comb(ws.S)
        y_cl = None
        if N is not None and len(child.cl):
            y_cl = N[child.cl[:, 0], child.cl[:, 1]].copy()
            N[child.cl[:, 0], child.cl[:, 1]] = 0.0
            N[child.cl[:, 1], child.cl[:, 0]] = 0.0
        out = cls(Z, y, y_cl, ws.u, N, S, ws.sigma)
        return cls.for_cut_map(out, cut_map, n_new) if cut_map is not None else out

    @classmethod
    def for_cl(cls, result: SDPResult | WarmStart, child: Problem,
               parent: Problem | None = None) -> WarmStart:
        """Cannot-link child (same super-points, one more CL pair; k = 2 merges go via
        :meth:`for_merge`, which :meth:`transfer` picks automatically)."""
        ws = result if isinstance(result, WarmStart) else cls.from_result(result)
        N = None if ws.N is None else np.array(ws.N, dtype=np.float64)
        if N is not None and parent is not None:
            N = _with_cl(N, parent, ws.y_cl)
        y_cl = None
        if N is not None and len(child.cl):
            y_cl = N[child.cl[:, 0], child.cl[:, 1]].copy()
            N[child.cl[:, 0], child.cl[:, 1]] = 0.0
            N[child.cl[:, 1], child.cl[:, 0]] = 0.0
        Z = None
        if ws.Z is not None:
            Z = np.array(ws.Z, dtype=np.float64)
            Z[child.cl[:, 0], child.cl[:, 1]] = 0.0
            Z[child.cl[:, 1], child.cl[:, 0]] = 0.0
        return cls(Z, ws.y, y_cl, ws.u, N, ws.S, ws.sigma)

    @classmethod
    def transfer(cls, result: SDPResult | WarmStart, parent: Problem, child: Problem,
                 cut_map=None, n_new: int = 0) -> WarmStart:
        """One entry point for every model change: ML/CL child and/or a changed cut list
        (``cut_map`` as returned by ``inherit_cuts_map``)."""
        if child.s != parent.s or not np.array_equal(child.parent_map, np.arange(child.s)):
            return cls.for_merge(result, parent, child, cut_map, n_new)
        ws = cls.for_cl(result, child, parent)
        return cls.for_cut_map(ws, cut_map, n_new) if cut_map is not None else ws

    def check(self, s: int, m: int, q: int) -> WarmStart:
        """Validate shapes against a model (s points, m cuts, q CL pairs); pads appended cuts."""
        def shape_ok(a, shp, name):
            if a is not None and np.shape(a) != shp:
                raise InputError(f"warm start {name} has shape {np.shape(a)}, expected {shp}",
                                 source="warm_start")
        for a, name in ((self.Z, "Z"), (self.N, "N"), (self.S, "S")):
            shape_ok(a, (s, s), name)
        shape_ok(self.y, (s + 1,), "y")
        u = self.u
        if u is not None:
            u = np.asarray(u, dtype=np.float64)
            if len(u) > m:
                raise InputError(f"warm start has {len(u)} cut multipliers but the model has "
                                 f"{m} cuts; use WarmStart.for_cuts(result, keep, n_new)",
                                 source="warm_start")
            u = np.concatenate([u, np.zeros(m - len(u))])
        y_cl = self.y_cl
        if y_cl is not None and np.shape(y_cl) != (q,):
            y_cl = None  # CL list changed without a map: the free multipliers restart at 0
        return WarmStart(self.Z, self.y, y_cl, u, self.N, self.S, self.sigma)


def _with_cl(N: np.ndarray, problem: Problem, y_cl) -> np.ndarray:
    """N with the CL multipliers written into their entries."""
    N = np.array(N, dtype=np.float64)
    if y_cl is not None and len(problem.cl) == len(y_cl):
        ci, cj = problem.cl[:, 0], problem.cl[:, 1]
        N[ci, cj] = y_cl
        N[cj, ci] = y_cl
    return N
