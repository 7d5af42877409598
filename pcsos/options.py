"""The solver's options, one object shared by :func:`pcsos.solve`, ``pcsos solve`` and the
estimator (:class:`pcsos.estimator.PCSOSClustering`).

:class:`SolverOptions` holds what decides the search and its result (tolerances, limits,
heuristics, backends, cutting-plane settings, seed). What only connects a call to its
caller (a warm start, an executor, callbacks, stop events, printing) stays a keyword of
:func:`pcsos.api.solve_instance`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcsos.bounds.arrays import get_backend
from pcsos.bounds.safe import EPS
from pcsos.bounds.settings import BoundSettings
from pcsos.branching import RULES
from pcsos.cuts.loop import TREE_CUT_DEFAULTS, CuttingPlaneSettings
from pcsos.errors import InputError, check_seed, is_integer, is_real
from pcsos.heuristics import check_options, get_heuristic
from pcsos.tree import ORDERS

__all__ = ["SolverOptions", "ABS_TOL", "ORDERS", "resolve_workers"]

#: the default absolute gap tolerance, as a share of the data's total scatter (the SSE of
#: one cluster): a node closes when UB - LB <= ABS_TOL * scatter, which certifies a zero or
#: tiny optimum whose relative gap is useless. 64 eps: about the precision to which double
#: arithmetic resolves an SSE of these data (the SDP works on their globally centred Gram
#: matrix), and no coarser, since one far outlier can make the optimum any small share of
#: the scatter (1e-10 of it certified, with a bound of 0, a clustering 2.2 times the optimum
#: of 29 points and one at 1e6). Relative to the data, so that the default answer does not
#: change with their units (an absolute 1e-10 declared any clustering of data at 1e-7
#: 'optimal' without a bound)
ABS_TOL = 64 * EPS
#: with it, a floor of rounding: this many eps^2 of the data's second moment sum w ||x||^2
ROUNDING_FLOOR = 16.0


@dataclass
class SolverOptions:
    """Every option of the exact solver, with its default.

    One object serves :func:`pcsos.solve`, ``pcsos solve`` and :class:`PCSOSClustering`.
    Nothing is checked on construction; :meth:`checked` validates (``solve`` calls it).

    Parameters
    ----------
    tol : float, default 1e-4
        Relative gap tolerance, (UB - LB) / UB, in [0, 1).
    abs_tol : float, optional
        Absolute gap tolerance UB - LB, in units of the SSE (0: off). Default (None):
        ``ABS_TOL`` (64 eps, 1.4e-14) times the data's total scatter, the SSE of a single
        cluster, plus a floor of rounding, so that it does not depend on the data's units
        (:meth:`for_instance`).
    max_nodes : int, optional
        Node limit, over every run of a resumed solve (None: none).
    time_limit : float, optional
        Wall-clock limit of this run in seconds (None: none).
    workers : int, optional
        Nodes processed at once (None: the CPU count).
    threads, root_threads : int, optional
        BLAS threads per job, and for the root, which runs alone (None: 1, and
        ``threads``). The root's LP engine runs its exact pricing over the cluster's mean
        in max(root_threads, workers) threads (at most the CPU count; ``workers`` None: the
        CPU count).
    heuristic : str, default 'ipc-kmeans'
        The upper-bound heuristic of every node, by registered name
        (:func:`pcsos.heuristics.available_heuristics`).
    heuristic_options : dict
        Keyword options of that heuristic.
    heuristic_time_limit : float, optional
        Its seconds per call (None: the node's time left; the root heuristic gets a
        quarter of the root's).
    root_heuristic : str or None, default 's-mdeclust'
        Run once before the root's bound (None: none).
    bound_settings : BoundSettings, dict or None
        The bound layer's :class:`~pcsos.bounds.settings.BoundSettings` (the engine, the
        SDP backend, its tolerance, device, ...), a dict of its fields, or None (the
        defaults).
    cp_settings : CuttingPlaneSettings, dict or None
        The :class:`~pcsos.cuts.loop.CuttingPlaneSettings`, or a dict of its fields, or
        None: the loop's defaults but for ``TREE_CUT_DEFAULTS`` (the star cuts and the
        root's tail-off), which a dict overrides and an object replaces. Its prune
        tolerances are always ``tol`` and ``abs_tol``.
    feasibility_backend : {'highs', 'gurobi'}, default 'highs'
        The MILP solver of the feasibility check.
    seed : int, optional
        Seed of every random choice (None: 0).
    order : {'best', 'depth', 'breadth'}, default 'best'
        Node selection; 'best' breaks ties deeper first.
    branching : {'pseudocost', 'paper'}, default 'pseudocost'
        The pair a node branches on: pseudo-costs learned in the tree, or the paper's
        score (:mod:`pcsos.branching`).

    Examples
    --------
    >>> import pcsos
    >>> opts = pcsos.SolverOptions(time_limit=600, workers=2)
    >>> pcsos.SolverOptions.make(opts, tol=1e-6).tol
    1e-06
    >>> opts.checked().bound_settings.engine
    'auto'
    >>> pcsos.SolverOptions(tol=2).checked()
    Traceback (most recent call last):
    ...
    pcsos.errors.InputError: tol: tol must be a number in [0, 1), got 2
    """

    tol: float = 1e-4
    abs_tol: float | None = None
    max_nodes: int | None = None
    time_limit: float | None = None
    workers: int | None = None
    threads: int | None = None
    root_threads: int | None = None
    heuristic: str = "ipc-kmeans"
    heuristic_options: dict = field(default_factory=dict)
    heuristic_time_limit: float | None = None
    root_heuristic: str | None = "s-mdeclust"
    bound_settings: Any = None
    cp_settings: Any = None
    feasibility_backend: str = "highs"
    seed: int | None = None
    order: str = "best"
    branching: str = "pseudocost"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def make(cls, options: SolverOptions | None = None, **changes) -> SolverOptions:
        """``options`` (or the defaults) with ``changes``; an unknown name is an
        :class:`~pcsos.errors.InputError`."""
        unknown = sorted(set(changes) - set(cls.names()))
        if unknown:
            raise InputError(f"unknown option(s) {', '.join(map(repr, unknown))}; the "
                             f"options are {', '.join(cls.names())}", source="options")
        if options is not None and not isinstance(options, SolverOptions):
            raise InputError(f"options must be a SolverOptions, got {type(options).__name__}",
                             source="options")
        return dataclasses.replace(options if options is not None else cls(), **changes)

    def checked(self) -> SolverOptions:
        """A validated copy: ``bound_settings`` made a
        :class:`~pcsos.bounds.settings.BoundSettings`, ``cp_settings`` a
        :class:`~pcsos.cuts.loop.CuttingPlaneSettings` that stops where the tree prunes.
        Raises :class:`~pcsos.errors.InputError` naming the option."""
        _positive_int = _check_positive_int
        if not (is_real(self.tol) and 0 <= self.tol < 1):
            raise InputError(f"tol must be a number in [0, 1), got {self.tol!r}", source="tol")
        # not inf: it would certify any clustering optimal, whatever its gap
        if self.abs_tol is not None and not (is_real(self.abs_tol)
                                             and 0 <= self.abs_tol < math.inf):
            raise InputError(f"abs_tol must be a finite number >= 0, got {self.abs_tol!r}",
                             source="abs_tol")
        for name in ("max_nodes", "workers", "threads", "root_threads"):
            _positive_int(name, getattr(self, name))
        for name in ("time_limit", "heuristic_time_limit"):
            v = getattr(self, name)
            if v is not None and not (is_real(v) and v > 0):
                raise InputError(f"{name} must be > 0 seconds, got {v!r}", source=name)
        if self.order not in ORDERS:
            raise InputError(f"order must be one of {', '.join(ORDERS)}, got {self.order!r}",
                             source="order")
        if self.branching not in RULES:
            raise InputError(f"branching must be one of {', '.join(RULES)}, got "
                             f"{self.branching!r}", source="branching")
        for name in ("heuristic", "root_heuristic"):
            if getattr(self, name) is None and name == "root_heuristic":
                continue
            try:
                get_heuristic(getattr(self, name))
            except InputError as exc:  # it names the available ones; say which option
                raise InputError(str(exc).removeprefix("heuristic: "), source=name) from None
        if self.feasibility_backend not in ("highs", "gurobi"):
            raise InputError(f"feasibility_backend must be 'highs' or 'gurobi', got "
                             f"{self.feasibility_backend!r}", source="feasibility_backend")
        bound = BoundSettings.make(self.bound_settings, source="bound_settings")
        if bound.device == "cuda":
            get_backend("cuda")  # at the edge: BackendUnavailableError without torch or GPU
        check_seed(self.seed)
        v = self.heuristic_options
        if v is not None and not isinstance(v, dict):
            raise InputError(f"heuristic_options must be a dict, got {type(v).__name__}",
                             source="heuristic_options")
        check_options(self.heuristic, v)  # at the edge, not at the first node that runs it
        return dataclasses.replace(
            self, heuristic_options=dict(self.heuristic_options or {}), bound_settings=bound,
            cp_settings=self._cut_settings())

    def _cut_settings(self):
        cp = self.cp_settings
        # a dict goes over the tree's defaults; the loop must stop where the tree prunes
        return dataclasses.replace(CuttingPlaneSettings.make(cp, **TREE_CUT_DEFAULTS),
                                   prune_tol=self.tol, prune_abs_tol=self.abs_gap)

    @property
    def abs_gap(self) -> float:
        """``abs_tol`` as the node and the tree apply it: 0 where the default (None) was not
        resolved by :meth:`for_instance` (options checked for a node run on its own)."""
        return 0.0 if self.abs_tol is None else float(self.abs_tol)

    def for_instance(self, instance) -> SolverOptions:
        """These (checked) options for ``instance``: the default ``abs_tol`` (None) becomes
        ``ABS_TOL`` times its total scatter (``Instance.scatter``), plus
        ``ROUNDING_FLOOR`` eps^2 times its second moment (a floor of rounding, for identical
        points), and the cutting-plane loop prunes with it."""
        if self.abs_tol is not None:
            return self
        # plus a floor of rounding: the SSEs of identical points are rounding (1e-30 at 3.7),
        # as is their scatter, 0 or not, and the relative gap of such an optimum is 1; their
        # rounding stays below eps^2 sum w ||x||^2 (about 50 times, measured)
        X, w = instance.X, instance.weights
        sq = np.einsum("ij,ij->i", X, X)
        second = float(sq.sum() if w is None else w @ sq)
        value = ABS_TOL * instance.scatter + ROUNDING_FLOOR * EPS ** 2 * second
        return dataclasses.replace(self, abs_tol=value, cp_settings=dataclasses.replace(
            self.cp_settings, prune_abs_tol=value))


def _check_positive_int(name: str, v) -> None:
    if v is None:
        return
    if not (is_integer(v) and v >= 1):
        raise InputError(f"{name} must be a positive integer, got {v!r}", source=name)


def resolve_workers(workers) -> int:
    """``workers`` checked (a positive integer; :class:`InputError` otherwise), or the CPU
    count for None: the one place this default is taken."""
    _check_positive_int("workers", workers)
    return int(workers) if workers is not None else (os.cpu_count() or 1)
