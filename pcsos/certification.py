"""``certify``: a clustering and a certified gap for an instance of any size.

The entry point beside :func:`pcsos.solve` for data too large for one SDP: a heuristic's
clustering (or the user's), then the decomposition bound of :mod:`pcsos.decomposition`
over subsets dealt from it, on a process pool, an executor or Dask.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np

from pcsos.bounds.settings import BoundSettings
from pcsos.clock import Deadline
from pcsos.cuts.loop import CuttingPlaneSettings
from pcsos.decomposition import (
    SUBSET_MAX,
    SubsetBound,
    decomposition_bound,
    largest_subset_size,
    partition,
    spectral_floor,
    subset_count,
    subset_size_for,
)
from pcsos.distributed import close, connect
from pcsos.errors import (
    InfeasibleError,
    InputError,
    UndecidedError,
    check_hooks,
    check_seed,
    is_integer,
)
from pcsos.heuristics import run_heuristic
from pcsos.memory import memory_shortfall, sdp_memory_short
from pcsos.options import resolve_workers
from pcsos.problem import Problem, check_start, make_instance

__all__ = ["certify", "CertifyResult"]

#: with the default subset size and a time limit, a first pass whose gap stays above
#: WIDER_GAP is followed by a second on the largest subsets the time left affords
#: (largest_subset_size, at least twice the first's size), which the first pass leaves
#: WIDER_SHARE of the time for when such subsets could fit: n = 2 000, k = 5, subsets of 300
#: points 0.27 %, of 700 points 0.070 % (docs/decomposition.md)
WIDER_SHARE = 0.5
WIDER_GAP = 1e-4


@dataclass
class CertifyResult:
    """A certified gap for a clustering of a large instance (:func:`pcsos.certify`).

    Attributes
    ----------
    lower_bound : float
        A lower bound valid for the optimum.
    objective : float
        The SSE of ``labels``.
    gap : float
        ``(objective - lower_bound) / objective``.
    labels : ndarray of shape (n,)
        The clustering certified.
    spectral_floor : float
        The closed-form bound of the whole.
    subsets : list of SubsetBound
        Per-subset bounds (:class:`pcsos.decomposition.SubsetBound`).
    heuristic : str
        Which heuristic made the labels, or 'given'.
    seconds : float
        Wall time.
    message : str
        How it ended, in a sentence.
    subset_size : int
        The subsets' largest size, as used (of the better pass when there were two).
    interrupted : bool
        A stop request ended the run early; :attr:`cut_short` lists the subsets it left
        with a weaker, still valid, bound.
    """

    lower_bound: float
    objective: float
    gap: float
    labels: np.ndarray
    spectral_floor: float
    subsets: list[SubsetBound] = field(repr=False)
    heuristic: str
    seconds: float
    message: str
    subset_size: int = 0
    interrupted: bool = False

    @property
    def status(self) -> str:
        """'interrupted' (a stop request ended the run early) or 'done' (every subset bounded
        as far as its share of the time allowed)."""
        return "interrupted" if self.interrupted else "done"

    @property
    def success(self) -> bool:
        """True when the run was not interrupted (the bound is valid either way)."""
        return not self.interrupted

    @property
    def cut_short(self) -> list[int]:
        """Indices of the subsets whose bounding a stop request ended early or skipped."""
        return [t for t, b in enumerate(self.subsets) if b.cut_short]

    def to_dict(self) -> dict:
        """JSON-ready, with the partition as lists of point indices."""
        return {"lower_bound": self.lower_bound, "objective": self.objective,
                "gap": self.gap, "spectral_floor": self.spectral_floor,
                "heuristic": self.heuristic, "seconds": self.seconds,
                "status": self.status, "message": self.message,
                "subset_size": self.subset_size,
                "interrupted": self.interrupted, "cut_short": self.cut_short,
                "labels": self.labels.tolist(),
                "subsets": [{"points": b.points.tolist(), "n": b.n, "s": b.s,
                             "lower_bound": b.lower_bound, "method": b.method,
                             "seconds": b.seconds, "message": b.message,
                             "cut_short": b.cut_short}
                            for b in self.subsets]}


def certify(X, k: int, ml=(), cl=(), labels=None, *, subset_size: int | None = None,
            time_limit: float | Deadline | None = None, workers: int | None = None,
            executor: Executor | None = None, dask=None, heuristic: str = "s-mdeclust",
            seed: int = 0, bound_settings=None, cp_settings=None,
            progress=None, stop_event=None, sample_weight=None) -> CertifyResult:
    """A clustering and a certified lower bound for an instance of any size.

    The bound is the larger of the spectral floor and the decomposition bound: the data is
    partitioned into subsets small enough for one SDP each, each subset is bounded
    exactly, and the bounds add up (docs/decomposition.md has the proof).

    Parameters
    ----------
    X : array_like of shape (n, d)
        The points.
    k : int
        Number of clusters.
    ml, cl : iterable of (i, j) pairs
        Must-link and cannot-link pairs.
    labels : array_like of shape (n,), optional
        The clustering to certify (checked: n labels, k clusters, every pair obeyed).
        Default: ``heuristic`` run within a quarter of ``time_limit``.
    subset_size : int, optional
        The subsets' largest size. Default: from k, n, the time left after the heuristic
        and ``workers`` (:func:`pcsos.decomposition.subset_size_for`). With that default
        and a time limit, a gap above ``WIDER_GAP`` gets a second pass on the largest
        subsets the time left affords (at least twice the first's size; the first pass
        then leaves ``WIDER_SHARE`` of the time for it when such subsets could fit), and
        the better pass is kept.
    time_limit : float or Deadline, optional
        Seconds for the whole run (>= 0; an :class:`~pcsos.InputError` otherwise), or a
        :class:`~pcsos.clock.Deadline` the caller started.
    workers : int, optional
        Subsets bounded at once (default: the CPU count, or the Dask cluster's threads).
    executor : concurrent.futures.Executor, optional
        Runs the subsets (default: a process pool of ``workers``).
    dask : distributed.Client or str, optional
        Run the subsets on Dask: a Client, ``'local:N'`` or a scheduler address, as in
        :func:`pcsos.solve`.
    heuristic : str, default 's-mdeclust'
        The registered heuristic that makes the clustering when ``labels`` is None.
    seed : int, default 0
        Its seed.
    bound_settings : BoundSettings or dict, optional
        The subsets' :class:`~pcsos.bounds.settings.BoundSettings` (None: the defaults).
    cp_settings : CuttingPlaneSettings or dict, optional
        Their cutting-plane settings, used as given (default:
        :func:`pcsos.decomposition.subset_settings`).
    progress : callable, optional
        ``progress(stage, done, total, bound)`` for the stages 'heuristic' (it starts),
        'clustering' (the clustering exists, ``total`` subsets are to be bounded,
        ``bound`` is its objective), 'wider' (a second pass of ``total`` larger subsets
        starts) and 'subsets' (``done`` of the pass's subsets bounded, their sum).
    stop_event : threading.Event, optional
        Once set, stops the heuristic with its best clustering and the bounding; the
        result, ``interrupted``, keeps the clustering and a valid bound.
    sample_weight : array_like of shape (n,), optional
        Positive point weights, as in :func:`pcsos.solve` (each subset keeps its points'
        weights).

    Returns
    -------
    CertifyResult
        The clustering, its objective, the certified lower bound and gap, and the
        subsets' bounds.

    Raises
    ------
    InputError
        Bad input, or a ``subset_size`` whose SDPs (one per worker at a time, run here on
        the CPU) need more memory than the machine can still give.
    InfeasibleError
        No clustering obeys the pairs.
    UndecidedError
        None was found (the heuristic failed, or was stopped first).

    Examples
    --------
    >>> import numpy as np, pcsos
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, size=(40, 2)) for c in (0, 4, 8)])
    >>> cert = pcsos.certify(X, 3, subset_size=40, workers=1)
    >>> cert.lower_bound <= cert.objective, len(cert.subsets) >= 3
    (True, True)
    >>> cert.gap < 0.05
    True
    """
    # the one clock of the whole run (a caller's Deadline: its instant)
    deadline = Deadline.checked(time_limit).within(stop=stop_event)
    inst = make_instance(X, k, ml, cl, weights=sample_weight)
    check_seed(seed)
    check_hooks(progress=progress, stop_event=stop_event, executor=executor)
    bound_settings = BoundSettings.make(bound_settings, source="bound_settings")
    cp_settings = CuttingPlaneSettings.make(cp_settings)  # None: subset_settings()
    if subset_size is not None and not (is_integer(subset_size) and subset_size >= 1):
        raise InputError(f"subset size must be a whole number >= 1, got {subset_size!r}",
                         source="subset_size")
    if workers is not None:
        workers = resolve_workers(workers)
    if subset_size is not None and executor is None and dask is None:
        # the subsets' SDPs run here, one per worker at a time: past the memory (on the
        # CPU: sdp_memory_short), the OS would kill the run, clustering and all
        pool = resolve_workers(workers)
        count, size = _layout(inst.n, int(subset_size), pool)
        size, copies = min(size, inst.n), min(pool, count)
        short = sdp_memory_short(size, bound_settings, copies)
        if short is not None:
            raise InputError(
                f"subsets of {size} points need about {memory_shortfall(*short)}, for "
                f"{copies} SDP solve(s) side by side: choose a smaller subset size",
                source="subset_size")
    client = None
    if dask is not None:
        if executor is not None:
            raise InputError("give executor or dask, not both", source="dask")
        client, own = connect(dask)
    try:
        if client is not None:
            executor = client.get_executor()
            if workers is None:
                workers = max(1, sum(client.nthreads().values()))
        return _certify(inst, labels, subset_size, deadline, resolve_workers(workers), executor,
                        heuristic, seed, bound_settings, cp_settings, progress, stop_event)
    finally:
        if client is not None:
            close(client, own)


def _layout(n: int, size: int, workers: int) -> tuple[int, int]:
    """``(count, size)``: how many subsets a pass makes of n points with at most ``size``
    each on ``workers`` workers (:func:`subset_count`), and the size they then have."""
    count = subset_count(n, size, workers)
    return count, (math.ceil(n / count) if count > 1 else size)


def _certify(inst, labels, subset_size, deadline: Deadline, workers, executor, heuristic,
             seed, bound_settings, cp_settings, progress, stop_event=None) -> CertifyResult:
    left = deadline.seconds  # the sizes are chosen by the seconds left

    start = None if labels is None else check_start(inst, labels, source="labels")
    whole = Problem.from_instance(inst)  # the heuristic's problem and the spectral floor's
    if start is not None:
        lab, made_by = start, "given"
    else:
        if progress is not None:
            progress("heuristic", 0, 1, None)
        h = run_heuristic(heuristic, whole, seed=seed, time_limit=deadline.within(share=0.25))
        if h.status == "infeasible":
            raise InfeasibleError(f"{heuristic} proved the constraints infeasible: "
                                  f"{h.message}")
        if h.status != "found":
            why = "stopped before it found" if h.stats.get("interrupted") else "found"
            raise UndecidedError(f"{heuristic} {why} no clustering ({h.status}: "
                                 f"{h.message}); give one (labels=, or --labels FILE)")
        lab, made_by = np.asarray(h.labels), heuristic
    objective = inst.objective(lab)
    floor = spectral_floor(whole)
    auto = subset_size is None
    if auto:
        subset_size = subset_size_for(inst.k, inst.n, left(), workers)
    first_size = int(subset_size)

    def wider_size(seconds):  # a second pass's size, when the time allows one
        if not auto or seconds is None:
            return None
        return largest_subset_size(inst.n, seconds, workers, lo=2 * first_size,
                                   hi=min(SUBSET_MAX, inst.n // 2))

    # the first pass leaves time for a second on larger subsets when one could fit
    t = left()
    first_share = 1.0 if t is None or wider_size(WIDER_SHARE * t) is None else \
        1.0 - WIDER_SHARE

    def bound_pass(size, share, stage):
        _, size = _layout(inst.n, int(size), workers)
        subsets = partition(inst, lab, size, seed=seed)
        if progress is not None:
            progress(stage, 0, len(subsets), objective)

        def sub_progress(done, total, bound):
            if progress is not None:
                progress("subsets", done, total, bound)

        lb, parts = decomposition_bound(inst, subsets, time_limit=deadline.within(share=share),
                                        workers=workers, executor=executor,
                                        bound_settings=bound_settings, cp_settings=cp_settings,
                                        seed=seed, labels=lab, progress=sub_progress,
                                        stop_event=stop_event)
        return lb, parts, size

    lb, parts, subset_size = bound_pass(subset_size, first_share, "clustering")
    passes, dropped = 1, []  # dropped: the parts of a second pass weaker than the first
    wider = wider_size(left())
    if wider is not None and not deadline.stopped() and \
            (objective - max(lb, floor)) > WIDER_GAP * objective:
        lb2, parts2, size2 = bound_pass(wider, 1.0, "wider")
        passes = 2
        if lb2 > lb:
            lb, parts, subset_size = lb2, parts2, size2
        else:
            dropped = parts2
    lower = max(lb, floor)
    gap = (objective - lower) / objective if objective > 0 else 0.0
    sdp = sum(b.method == "sdp" for b in parts)
    msg = ("the better of two passes: " if passes == 2 else "") + (
        f"{len(parts)} subsets of at most ~{subset_size} points: {sdp} bounded by their "
        f"SDP, {sum(b.method == 'groups' for b in parts)} exactly (at most k groups), "
        f"{sum(b.method == 'spectral' for b in parts)} by the spectral floor only")
    cut = sum(b.cut_short for b in parts)
    if cut:
        msg += (f"; stopped: {cut} cut short (the safe bound of their SDP's last iterate, "
                "or their spectral floor)")
    cut2 = sum(b.cut_short for b in dropped)
    if cut2:
        msg += f"; the second pass, weaker, had {cut2} subsets cut short by the stop"
    if floor >= lb:
        msg += "; the spectral floor of the whole is the larger bound"
    return CertifyResult(lower, objective, max(0.0, gap), lab, floor, parts, made_by,
                         deadline.elapsed(), msg, subset_size, deadline.stopped())
