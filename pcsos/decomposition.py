"""A lower bound for instances too large for one SDP: bound subsets and add.

:func:`pcsos.certification.certify` is the entry point that uses it on a clustering.

**The bound.** Partition the points into subsets S_1..S_T, every must-link group inside
one subset. Take any feasible clustering of the whole instance and restrict it to S_t: a
clustering of S_t into at most k clusters that obeys every pair with both ends in S_t. Its
sum of squares about its own means is at most the share of S_t in the whole objective
(about the whole clusters' means), since a set's mean minimises its sum of squares. Hence

    OPT >= sum_t OPT_t,   OPT_t = least SSE of S_t in at most k clusters under its pairs,

and any valid lower bound of each OPT_t gives a valid lower bound of OPT. For each subset:

* fewer than k + 1 super-points (must-link groups): OPT_t is the scatter of the groups about
  their own means (each group alone is a clustering; no clustering splits a group), exact;
* otherwise at most k clusters may be taken as exactly k (splitting a cluster that holds two
  groups never raises the SSE and breaks no pair), so the safe SDP bound of the subset's
  root (with cuts, :func:`pcsos.cuts.loop.cutting_plane_loop`) is valid, whatever the SDP
  solver's accuracy (spec §3.2); a subset whose loop cannot finish in its time keeps
* the spectral floor: SSE >= c0 - (sum of the k - 1 largest eigenvalues of W^T D^-1 W),
  with W the super-points' sums of the centred data, D their sizes and c0 the total
  scatter (the Peng-Wei relaxation without Z >= 0 and without cannot-links, whose
  maximum of <Z, M> over Z with eigenvalues in [0, 1], trace k and sqrt(e) as an
  eigenvector is the sum of the top eigenvalues of M; a d x d eigenproblem). It is also
  the closed-form bound of the whole instance, :func:`spectral_floor`.

**Stopped early** (``stop_event``, Ctrl-C in ``pcsos certify``): the sum above needs a valid
lower bound of each OPT_t, not the best one. A subset whose SDP was stopped keeps the
largest safe bound of its rounds (each is the dual value of a feasible point of its round's
relaxation, whose cuts every clustering obeys, so <= OPT_t at any accuracy), else its
spectral floor; a subset not started (or not back in time) keeps its spectral floor, or its
exact value when it has at most k groups. The sum is still <= OPT, and the result says which
subsets were cut short.

The bound is strong when every subset looks like the whole data: the partition deals the
groups of each cluster of a reference clustering (the incumbent) over the subsets in turn,
by distance to their cluster's centre, so that each subset gets a share of every cluster
(stratified anticlustering). Croella, Piccialli and Sudoso (2025, arXiv 2502.08397, AVOC)
bound the unconstrained problem this way; here the subsets keep the must-link groups whole
and the cannot-link pairs inside them. docs/decomposition.md has the proof and the
figures.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

from pcsos.bounds.settings import BoundSettings
from pcsos.clock import Deadline
from pcsos.cuts.loop import CALLBACK_STOP, TIME_LIMIT, CuttingPlaneSettings, cutting_plane_loop
from pcsos.errors import InputError
from pcsos.memory import MEMORY, memory_shortfall, sdp_bytes
from pcsos.options import resolve_workers
from pcsos.problem import Instance, Problem, make_instance, sse

__all__ = ["spectral_floor", "partition", "decomposition_bound", "SubsetBound",
           "subset_size_for", "subset_count", "subset_seconds", "largest_subset_size",
           "subset_settings", "restricted_value"]

#: points per subset per cluster by default, within [SUBSET_MIN, SUBSET_MAX]. A subset's own
#: optimum falls below its share of the whole clustering by more the fewer points each
#: cluster has in it: at n = 10 000, k = 20 the best of 40 k-means runs on a subset was a
#: median 4.0 % below its share with 300 points, 1.0 % with 600, 0.25 % with 1 000
#: (docs/decomposition.md, "Subset size"); larger subsets cost more SDP time each
SUBSET_PER_CLUSTER = 30
SUBSET_MIN, SUBSET_MAX = 300, 1000
#: points per cluster when each subset's time share allows: a subset of 1 000 points (n =
#: 10 000, k = 20) was 2.52 % below its share after 703 s on one core, where subsets of 556
#: and 715 points were 3.24 % and 3.31 % below theirs after 395 s and 508 s, the shares
#: that the same 60 minutes on 2 workers give them (docs/decomposition.md, "Subset size")
SUBSET_PER_CLUSTER_LONG = 50
#: seconds of one core that a subset of SUBSET_MAX points is given at least before the
#: larger size is chosen; a smaller subset needs this times (size / SUBSET_MAX)^3 (the
#: eigendecompositions' cost)
SUBSET_MAX_SECONDS = 600.0
#: the cutting-plane rounds' loosest tolerance on subsets: a subset's bound is worth having
#: within a few tenths of a percent, and rounds at 1e-2 take a third of the iterations of
#: rounds at 1e-3 (one subset of 600 points, k = 20: 3.4 % below its share after 330 s
#: against 6.2 %; docs/decomposition.md)
SUBSET_LOOSE_TOL = 1e-2
#: a cannot-link component of at most size / BLOCK_SHARE points is kept inside one subset
#: (its pairs then bind the subset's optimum; a pair between two subsets is dropped)
BLOCK_SHARE = 10


def subset_size_for(k: int, n: int | None = None, time_limit: float | None = None,
                    workers: int = 1) -> int:
    """The default points per subset for k clusters (what :func:`pcsos.certify` takes).

    Parameters
    ----------
    k : int
        Clusters.
    n : int, optional
        Points of the instance; with ``time_limit``, it may allow the larger size.
    time_limit : float, optional
        Seconds for the whole bound (None: no limit, and the smaller size).
    workers : int
        Subsets bounded at once.

    Returns
    -------
    int
        ``SUBSET_PER_CLUSTER`` points per cluster, clipped to [``SUBSET_MIN``,
        ``SUBSET_MAX``]; or ``SUBSET_PER_CLUSTER_LONG`` per cluster (clipped the same way)
        when n points in subsets of that size on ``workers`` workers give each subset at
        least ``SUBSET_MAX_SECONDS * (size / SUBSET_MAX)^3`` seconds of ``time_limit``.
    """
    def clip(per_cluster: int) -> int:
        return int(min(SUBSET_MAX, max(SUBSET_MIN, per_cluster * int(k))))

    size, large = clip(SUBSET_PER_CLUSTER), clip(SUBSET_PER_CLUSTER_LONG)
    if n is None or time_limit is None or large <= size:
        return size
    return large if _fits(n, large, time_limit, workers) else size


def subset_seconds(size: int) -> float:
    """Core-seconds a subset of ``size`` points needs: ``SUBSET_MAX_SECONDS`` scaled by
    (size / ``SUBSET_MAX``)^3, the eigendecompositions' cost."""
    return SUBSET_MAX_SECONDS * (size / SUBSET_MAX) ** 3


def _fits(n: int, size: int, seconds: float, workers: int) -> bool:
    return workers * seconds / subset_count(n, size, workers) >= subset_seconds(size)


def largest_subset_size(n: int, seconds: float, workers: int = 1, lo: int = SUBSET_MIN,
                        hi: int = SUBSET_MAX, step: int = 50) -> int | None:
    """The largest size in [lo, hi], ``hi`` less a multiple of ``step`` or ``lo``, at which n points
    in :func:`subset_count` subsets on ``workers`` workers give each subset the
    :func:`subset_seconds` its size needs within ``seconds``; None when not even ``lo``
    fits (or lo > hi)."""
    if not math.isfinite(seconds) or lo > hi:
        return None
    for size in [*range(hi, lo, -step), lo]:
        if _fits(n, size, seconds, workers):
            return size
    return None


def subset_count(n: int, size: int, workers: int = 1) -> int:
    """How many subsets ``certify`` makes of n points with at most ``size`` each: enough,
    rounded up to a multiple of ``workers`` (so that no worker idles through the last share)
    when there is more than one."""
    count = math.ceil(n / size)
    return count if count <= 1 else workers * math.ceil(count / workers)


def subset_settings(cp_settings=None):
    """The cutting-plane settings for subsets.

    Parameters
    ----------
    cp_settings : CuttingPlaneSettings, optional
        The settings to start from (default: the loop's defaults).

    Returns
    -------
    CuttingPlaneSettings
        ``cp_settings`` with loose rounds at ``SUBSET_LOOSE_TOL`` at least, unless loose
        rounds are off (None or 0), and no tail-off at the root: a subset's bound is never
        branched on, so stopping its rounds early only loses bound.
    """
    st = cp_settings if cp_settings is not None else CuttingPlaneSettings()
    if st.tail_off_root:
        st = replace(st, tail_off_root=None)
    if not st.loose_tol or st.loose_tol >= SUBSET_LOOSE_TOL:
        return st
    return replace(st, loose_tol=SUBSET_LOOSE_TOL)


def spectral_floor(problem: Problem) -> float:
    """The closed-form lower bound of ``problem`` (module doc): O(s d^2) time, no SDP.

    Parameters
    ----------
    problem : Problem
        The instance's super-point problem (:meth:`pcsos.Problem.from_instance`).

    Returns
    -------
    float
        c0 minus the k - 1 largest eigenvalues of W^T D^-1 W, less a rounding margin and
        at least 0: at most the SSE of every clustering of ``problem`` (the exact scatter
        of the groups when s <= k).
    """
    k = problem.k
    e = np.asarray(problem.e, dtype=np.float64)
    W = np.asarray(problem.W, dtype=np.float64)
    # rounding: sums of n terms (the centring, the group sums, c0) carry relative errors of
    # about n eps each, and the result is a difference of such sums; a margin of
    # 64 (n + d) eps of the terms' size is taken off (a bound is lowered, never raised)
    slack = 64 * (problem.n + problem.d) * np.finfo(float).eps * abs(problem.c0)
    if problem.s <= k:
        within = problem.c0 - float(np.einsum("ij,ij->", W, W / e[:, None]))
        return max(0.0, within - slack)  # each group alone: exact up to rounding
    M = (W / np.sqrt(e)[:, None]).T @ (W / np.sqrt(e)[:, None])  # W^T D^-1 W, d x d
    ev = np.sort(np.linalg.eigvalsh(M))[::-1]
    top = float(np.clip(ev[: k - 1], 0.0, None).sum())
    return max(0.0, problem.c0 - top - slack)


def partition(instance: Instance, labels: np.ndarray, size: int,
              seed: int = 0, sweeps: int = 3) -> list[np.ndarray]:
    """Subsets of about ``size`` points for :func:`~pcsos.decomposition.decomposition_bound`.

    Each must-link group lies in one subset, and each subset is a stratified share of
    every cluster of ``labels`` whose mean is moved towards the cluster's mean by
    ``sweeps`` rounds of swaps (module doc). A cannot-link component of at most
    ``size / BLOCK_SHARE`` points goes whole into one subset: a pair between two subsets
    is dropped, and the subsets' optima, hence the bound, fall with every dropped pair.

    Parameters
    ----------
    instance : Instance
        The whole instance.
    labels : array-like of shape (n,)
        A clustering of it that keeps every must-link group whole (the incumbent).
    size : int
        Points per subset at most (exceeded only by a must-link group or pair block
        larger than it).
    seed : int
        Seed of the tie-breaking and the swaps.
    sweeps : int
        Rounds of swaps that move each subset's cluster means towards the whole's.

    Returns
    -------
    list of ndarray
        The sorted point indices of each subset; together they hold every point once.

    Raises
    ------
    InputError
        ``size`` below 1.
    """
    n = instance.n
    if size < 1:
        raise InputError(f"subset size must be >= 1, got {size}", source="subset_size")
    T = max(1, math.ceil(n / size))
    if T == 1:
        return [np.arange(n)]
    problem = Problem.from_instance(instance, infer_k2=False)
    groups = problem.point_labels  # point -> must-link group
    e = np.asarray(problem.e)  # masses: the means are weighted ones
    cnt = problem.counts  # points: what the subset size counts
    glabel = np.empty(problem.s, dtype=np.int64)
    glabel[groups] = np.asarray(labels)  # a feasible clustering keeps groups whole
    means = problem.W / e[:, None]
    rng = np.random.default_rng(seed)
    order = []
    for h in np.unique(glabel):
        members = np.flatnonzero(glabel == h)
        c = (means[members] * e[members, None]).sum(axis=0) / e[members].sum()
        dist = ((means[members] - c) ** 2).sum(axis=1)
        # ties (equal distances) broken at random so that no subset gets all of a tie run
        members = members[np.lexsort((rng.random(len(members)), dist))]
        order.extend(members.tolist())
    block, bcnt = _pair_blocks(problem, cnt, max(1, size // BLOCK_SHARE))
    placed = np.full(len(bcnt), -1, dtype=np.int64)  # block -> its subset, once dealt
    load = np.zeros(T)
    sub_of = np.empty(problem.s, dtype=np.int64)
    t = 0
    for g in order:  # deal in turn, skipping subsets that are already full
        b = block[g]
        if placed[b] >= 0:  # the rest of a block dealt earlier: its load is counted
            sub_of[g] = placed[b]
            continue
        for _ in range(T):
            if load[t] + bcnt[b] <= size or load[t] == 0:
                break
            t = (t + 1) % T
        else:
            t = int(np.argmin(load))
        sub_of[g] = placed[b] = t
        load[t] += bcnt[b]
        t = (t + 1) % T
    # only a point in no pair moves (a block of one point): a swap must not split a block
    free = bcnt[block] == 1
    for h in np.unique(glabel):
        _balance(means, e, sub_of, np.flatnonzero(glabel == h), rng, sweeps,
                 cnt if instance.weights is not None else None, free)
    pts = sub_of[groups]
    return [np.flatnonzero(pts == t) for t in range(T) if np.any(pts == t)]


def _balance(means: np.ndarray, e: np.ndarray, sub_of: np.ndarray, members: np.ndarray,
             rng: np.random.Generator, sweeps: int, cnt: np.ndarray | None = None,
             free: np.ndarray | None = None) -> None:
    """Swap single points of one cluster between subsets so that each subset's share of the
    cluster has nearly the cluster's mean (in place on ``sub_of``).

    With r_t the sum over subset t's share of (x - cluster mean) and m_t its size, the
    reference clustering restricted to the subsets loses L = sum_t ||r_t||^2 / m_t of its
    SSE (the pieces' SSE about their own means); L bounds from above what the subsets' bound
    can reach, and for a random deal it is about k / (subset size) of the SSE. A swap of
    x_a in t with x_b in u sets r_t += x_b - x_a and r_u -= x_b - x_a; for each pair of
    subsets the best such swap is made when it lowers L (AVOC, arXiv 2502.08397, improves
    its partition by swaps in the same spirit). Only must-link groups of one point move, so
    subset sizes do not change. ``cnt``: the groups' numbers of points when the masses ``e``
    are point weights (None: e counts points); a swap then also moves mass, x_a and x_b
    entering r_t with their weights. ``free``: the groups that may move (default: every
    group of one point).
    """
    single = members[(e if cnt is None else cnt)[members] == 1]
    if free is not None:
        single = single[free[single]]
    if len(single) < 2 or sweeps <= 0:
        return
    mu = (means[members] * e[members, None]).sum(axis=0) / e[members].sum()
    pieces = np.unique(sub_of[members])
    if len(pieces) < 2:
        return
    r = np.zeros((len(pieces), means.shape[1]))
    m = np.zeros(len(pieces))
    idx = np.searchsorted(pieces, sub_of[members])  # pieces is sorted (np.unique)
    np.add.at(r, idx, (means[members] - mu) * e[members, None])
    np.add.at(m, idx, e[members])
    for _ in range(sweeps):
        moved = False
        for i, j in _pairs(len(pieces), rng):
            A = single[sub_of[single] == pieces[i]]
            B = single[sub_of[single] == pieces[j]]
            if not len(A) or not len(B):
                continue
            # a sample of candidates keeps a pair's work O(256^2) for subsets of any size
            if len(A) > 256:
                A = rng.choice(A, 256, replace=False)
            if len(B) > 256:
                B = rng.choice(B, 256, replace=False)
            if cnt is None:
                delta = means[B][None, :, :] - means[A][:, None, :]  # x_b - x_a
                dm = 0
            else:
                eB, eA = e[B], e[A]
                delta = (((means[B] - mu) * eB[:, None])[None, :, :]
                         - ((means[A] - mu) * eA[:, None])[:, None, :])
                dm = eB[None, :] - eA[:, None]
            new = (((r[i] + delta) ** 2).sum(axis=2) / (m[i] + dm)
                   + ((r[j] - delta) ** 2).sum(axis=2) / (m[j] - dm))
            a, b = np.unravel_index(int(np.argmin(new)), new.shape)
            old = (r[i] @ r[i]) / m[i] + (r[j] @ r[j]) / m[j]
            if new[a, b] < old * (1 - 1e-12):
                r[i] += delta[a, b]
                r[j] -= delta[a, b]
                if cnt is not None:
                    m[i] += dm[a, b]
                    m[j] -= dm[a, b]
                sub_of[A[a]], sub_of[B[b]] = pieces[j], pieces[i]
                moved = True
        if not moved:
            break


def _pair_blocks(problem: Problem, cnt: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The must-link groups joined by cannot-link pairs into blocks that a partition keeps
    whole: (block of each group, points per block). A connected component of the
    cannot-link graph over the groups is one block when it has at most ``limit`` points;
    a larger one is left as its groups (its pairs between subsets are then dropped)."""
    s = problem.s
    cl = np.asarray(problem.cl, dtype=np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(len(cl)), (cl[:, 0], cl[:, 1])), shape=(s, s))
    _, comp = connected_components(graph, directed=False)
    size = np.bincount(comp, weights=cnt).astype(np.int64)
    # a component over the limit: each of its groups a block of its own
    block = np.where(size[comp] <= limit, comp, comp.max(initial=-1) + 1 + np.arange(s))
    _, block = np.unique(block, return_inverse=True)
    return block, np.bincount(block, weights=cnt).astype(np.int64)


def _pairs(T: int, rng: np.random.Generator):
    """All pairs of 0..T-1, in a random order."""
    ii, jj = np.triu_indices(T, 1)
    order = rng.permutation(len(ii))
    return zip(ii[order].tolist(), jj[order].tolist(), strict=True)


@dataclass
class SubsetBound:
    """One subset's bound, as :func:`~pcsos.decomposition.decomposition_bound` returns it.

    Attributes
    ----------
    points : ndarray
        The subset's point indices.
    n, s : int
        Its points and super-points (must-link groups).
    lower_bound : float
        A valid lower bound of the subset's own optimum.
    method : str
        How: 'groups' (exact: at most k groups), 'sdp' or 'spectral'.
    seconds : float
        Wall time of its bounding.
    message : str
        The SDP loop's message, when one ran.
    cut_short : bool
        A stop request ended its bounding early or before it began (the bound is still
        valid: its SDP's last safe bound or its spectral floor).
    """

    points: np.ndarray
    n: int
    s: int
    lower_bound: float
    method: str
    seconds: float
    message: str = ""
    cut_short: bool = False


def restricted_value(instance: Instance, pts: np.ndarray, labels) -> float:
    """The SSE of the clustering ``labels`` restricted to the points ``pts`` (about the
    pieces' own means): the subset's optimum is at most this, so its bound is too."""
    w = None if instance.weights is None else instance.weights[pts]
    return sse(instance.X[pts], np.asarray(labels)[pts], w)


def _sub_instance(instance: Instance, pts: np.ndarray) -> Instance:
    where = np.full(instance.n, -1, dtype=np.int64)
    where[pts] = np.arange(len(pts))

    def inside(pairs):
        m = where[pairs]
        keep = (m >= 0).all(axis=1) if len(pairs) else np.zeros(0, dtype=bool)
        return m[keep]

    # a subset of fewer than k points is a clustering problem with at most that many
    # clusters: its bound is its groups' scatter, which does not depend on k. The size
    # constraints are left out: they bind the whole clusters, not their shares of a subset,
    # and dropping a constraint only lowers the subset's optimum, so the sum stays a bound
    w = None if instance.weights is None else instance.weights[pts]
    return make_instance(instance.X[pts], min(instance.k, len(pts)), inside(instance.ml),
                         inside(instance.cl), weights=w)


#: the stop event of a worker process of :func:`process_pool` (set by its caller)
_WORKER_STOP = None
#: seconds that a stopped decomposition_bound waits for its running subsets to return the
#: safe bounds of their last iterates (one ADMM iteration or one separation: about a second
#: on 1 000 points); a subset still running then is ended and keeps its spectral floor
STOP_GRACE = 10.0


def _bound_subset(sub: Instance, k2: bool, pts: np.ndarray, time_limit: Deadline | None,
                  bound_settings, cp_settings, seed: int, upper: float,
                  blas_limit: int | None = None, stop=None) -> SubsetBound:
    """One subset's bound; a module-level function of picklable data, so that a process
    pool or a Dask worker can run it (a Deadline crosses as the seconds it has left).
    ``blas_limit`` caps BLAS threads around the job (only where it runs alone in its
    process: threadpoolctl limits are process-wide). ``stop`` (an event; in a
    ``process_pool`` worker, the pool's own by default) ends the SDP at its next iteration,
    with the safe bound of that iterate."""
    stop = _WORKER_STOP if stop is None else stop
    clock = Deadline.of(time_limit).within(stop=stop)  # its elapsed() counts this subset
    # k = 2 merges the colour classes of cannot-link components, valid only when the whole
    # instance has k = 2 (not when a tiny subset's k was lowered to its size). An
    # InfeasibleError here means the whole instance is infeasible too.
    problem = Problem.from_instance(sub, infer_k2=k2)
    floor = spectral_floor(problem)
    if problem.s <= sub.k:
        return SubsetBound(pts, len(pts), problem.s, floor, "groups", clock.elapsed())
    if clock.stopped():
        return SubsetBound(pts, len(pts), problem.s, floor, "spectral", clock.elapsed(),
                           "stopped before its SDP", True)
    if clock.expired():
        return SubsetBound(pts, len(pts), problem.s, floor, "spectral", clock.elapsed(),
                           "no time left for the SDP")
    callback = None
    if stop is not None:
        def callback(stats):  # between rounds: the separation is not run once stopped
            return stop.is_set()

    limit = (nullcontext() if blas_limit is None
             else threadpool_limits(limits=int(blas_limit), user_api="blas"))
    # an SDP past the memory would have the OS kill the process, the whole bound with it;
    # subsets bounded in threads share the memory as the tree's nodes do
    with MEMORY.hold(sdp_bytes(problem.s, bound_settings), clock.expired) as grant, limit:
        if not grant.ok:
            why = (f"its SDP needs about {memory_shortfall(*grant.short)}" if grant.short
                   else "stopped while waiting for memory")
            return SubsetBound(pts, len(pts), problem.s, floor, "spectral", clock.elapsed(),
                               why, grant.short is None and clock.stopped())
        loop = cutting_plane_loop(problem, upper_bound=upper, settings=cp_settings,
                                  root=True, bound_settings=bound_settings, seed=seed,
                                  time_limit=clock, callback=callback)
    # a loop that ended on its own before the request keeps its own flag
    cut = clock.stopped() and loop.flag in (CALLBACK_STOP, TIME_LIMIT)
    message = loop.message + ("; stopped on request" if cut else "")
    lb = float(loop.lower_bound)
    if not lb > floor:
        return SubsetBound(pts, len(pts), problem.s, floor, "spectral", clock.elapsed(),
                           message, cut)
    return SubsetBound(pts, len(pts), problem.s, lb, "sdp", clock.elapsed(), message, cut)


def _floor_only(sub: Instance, k2: bool, pts: np.ndarray, why: str) -> SubsetBound:
    """A subset not (fully) bounded: its spectral floor, or its exact value when it has at
    most k groups."""
    clock = Deadline()  # for the seconds it reports
    problem = Problem.from_instance(sub, infer_k2=k2)
    floor = spectral_floor(problem)
    if problem.s <= sub.k:
        return SubsetBound(pts, len(pts), problem.s, floor, "groups", clock.elapsed())
    return SubsetBound(pts, len(pts), problem.s, floor, "spectral", clock.elapsed(), why,
                       True)


def _worker_start(caller: int, stop=None) -> None:
    # a pool worker leaves Ctrl-C to its caller, which cancels the pool and ends the workers
    # or, with a stop event, sets it and collects the bounds of their last iterates
    global _WORKER_STOP
    _WORKER_STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return

    def watch():
        # a caller killed outright (SIGKILL, a crash) cannot end its workers: a worker is a
        # child of the forkserver, not of the caller, so it checks on the caller itself
        # rather than bound a subset for minutes for no one (no library does this here:
        # prctl's PR_SET_PDEATHSIG is Linux-only, outside the stdlib, and names the parent)
        while True:
            time.sleep(1.0)
            try:
                os.kill(caller, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive (another user's process has the pid)
                pass

    threading.Thread(target=watch, name="pcsos-caller-watch", daemon=True).start()


def _pool_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def process_pool(workers: int, stop=None):
    """A pool of ``workers`` processes for :func:`decomposition_bound`: forkserver where the
    platform has it (a fresh interpreter per worker, not a fork of a parent that may hold
    BLAS threads), else spawn. Either imports the caller's main module in the workers, so a
    script must keep its work under ``if __name__ == "__main__":``. ``stop``: an event of
    ``_pool_context()`` (``.Event()``) that, once set, ends the workers' SDPs early."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                               initializer=_worker_start, initargs=(os.getpid(), stop))


def _end_pool(pool, graceful: bool) -> None:
    if graceful:
        pool.shutdown(wait=True)
        return
    # an interrupt or an error: running subsets are not waited for (minutes each). The
    # workers are taken before shutdown, which forgets them (Python >= 3.14 has
    # terminate_workers for this)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()


def decomposition_bound(instance: Instance, subsets: list[np.ndarray], *,
                        time_limit: float | Deadline | None = None,
                        workers: int | None = None,
                        executor: Executor | None = None, bound_settings=None,
                        cp_settings=None, seed: int = 0, labels: np.ndarray | None = None,
                        progress=None, blas_limit: int | None = 1, stop_event=None
                        ) -> tuple[float, list[SubsetBound]]:
    """Sum of the subsets' lower bounds: a valid lower bound of the whole (module doc).

    Parameters
    ----------
    instance : Instance
        The whole instance.
    subsets : list of array-like
        Point indices that partition the points, each must-link group inside one (e.g.
        :func:`~pcsos.decomposition.partition`).
    time_limit : float or Deadline, optional
        For the whole bound. Each subset starts with an equal share of the core-seconds
        left (one that ends early leaves its time to the others).
    workers : int, optional
        Subsets bounded at once (default: the CPU count).
    executor : concurrent.futures.Executor, optional
        Where to bound them (threads, processes, Dask's ``client.get_executor()``; for
        processes the jobs and ``bound_settings`` are pickled). Default: this thread when
        ``workers`` is 1, else a pool of ``workers`` processes (threads would share one
        interpreter lock, which costs a third of an iteration's time;
        docs/decomposition.md).
    bound_settings : BoundSettings or dict, optional
        The subsets' SDP settings.
    cp_settings : CuttingPlaneSettings, optional
        The subsets' cutting-plane settings, used as given (default:
        :func:`~pcsos.decomposition.subset_settings`).
    seed : int
        Subset t's loop takes ``seed + t``.
    labels : array-like of shape (n,), optional
        A clustering of the whole: each subset's loop may stop once its bound reaches the
        value of the clustering restricted to it.
    progress : callable, optional
        ``progress(done, total, bound_so_far)`` after each subset.
    blas_limit : int, optional
        BLAS threads per subset (None: leave the limit alone, as a job inside the tree
        must, threadpoolctl limits being process-wide).
    stop_event : threading.Event, optional
        Once set, no more subsets start and the running ones end early (in this thread,
        on a thread pool and on the own process pool: their SDP's safe bound at the next
        iteration, waited for up to ``STOP_GRACE`` seconds; on another executor they are
        cancelled).

    Returns
    -------
    lower_bound : float
        The sum of the subsets' bounds, at most the optimum of ``instance``.
    bounds : list of SubsetBound
        One per subset, in the order of ``subsets``; a subset not fully bounded keeps a
        valid bound (its spectral floor at least) and is marked ``cut_short``.

    Raises
    ------
    InputError
        Subsets that do not cover every point exactly once, or that split a must-link pair.
    """
    n = instance.n
    seen = np.zeros(n, dtype=np.int64)
    for pts in subsets:
        pts = np.asarray(pts, dtype=np.int64).ravel()
        if len(pts) and (pts.min() < 0 or pts.max() >= n):
            raise InputError(f"a subset holds an index outside 0..{n - 1}", source="subsets")
        np.add.at(seen, pts, 1)  # a point repeated inside one subset counts twice
    if not np.all(seen == 1):
        raise InputError("the subsets must cover every point exactly once", source="subsets")
    owner = np.empty(n, dtype=np.int64)
    for t, pts in enumerate(subsets):
        owner[np.asarray(pts, dtype=np.int64)] = t
    if len(instance.ml) and np.any(owner[instance.ml[:, 0]] != owner[instance.ml[:, 1]]):
        raise InputError("a must-link pair is split between two subsets", source="subsets")
    workers = resolve_workers(workers)
    T = len(subsets)
    deadline = Deadline.of(time_limit)
    opts = BoundSettings.make(bound_settings)
    cp_settings = subset_settings() if cp_settings is None else cp_settings
    pool = executor
    worker_stop = None  # the own pool's stop event, which its worker processes share
    if pool is None and workers > 1 and T > 1:
        worker_stop = None if stop_event is None else _pool_context().Event()
        pool = process_pool(min(workers, T), worker_stop)
    # in this thread, the limit is set here, around the whole run; in a worker process the
    # job sets it (a shared thread pool would race on the process-wide limit)
    here = pool is None or isinstance(pool, ThreadPoolExecutor)
    job_limit = None if here else blas_limit
    # who can hear a stop request: jobs of this process share the event itself, the own
    # pool's workers their own event; another executor's jobs cannot be told
    job_stop = stop_event if here else None
    hears = stop_event is not None and (here or worker_stop is not None)

    def job(t: int, share: float | None) -> tuple:
        pts = np.asarray(subsets[t], dtype=np.int64)
        upper = math.inf if labels is None else restricted_value(instance, pts, labels)
        # the subset's own Deadline: its share, which ends no later than the whole's
        return (_sub_instance(instance, pts), instance.k == 2, pts,
                None if share is None else Deadline(share), opts,
                cp_settings, seed + t, upper, job_limit, job_stop)

    def stopped() -> bool:
        return deadline.stopped() or (stop_event is not None and stop_event.is_set())

    out: list[SubsetBound | None] = [None] * T
    total = 0.0
    running: dict = {}  # future -> (subset, when its share ends)
    graceful = False

    def share_of(t: int) -> float | None:
        if deadline.limit is None:
            return None
        # the core-seconds left, less those the running subsets hold, shared equally by the
        # subsets still to start (one that ends early leaves its time to the others)
        left = deadline.remaining()
        held = sum(end.remaining() for _, end in running.values())
        return max(0.0, min(left, (workers * left - held) / (T - t)))

    def record(t: int, bound: SubsetBound, done: int) -> None:
        nonlocal total
        out[t] = bound
        total += bound.lower_bound
        if progress is not None:
            progress(done, T, total)

    limit = (nullcontext() if blas_limit is None or not here
             else threadpool_limits(limits=int(blas_limit), user_api="blas"))
    # a stop request is looked for this often while the subsets run
    poll = None if stop_event is None else 0.1
    try:
        with limit:
            nxt = done = 0
            while (nxt < T or running) and not stopped():
                while nxt < T and not stopped() and (pool is None or len(running) < workers):
                    share = share_of(nxt)
                    if pool is None:
                        done += 1
                        record(nxt, _bound_subset(*job(nxt, share)), done)
                    else:
                        args = job(nxt, share)
                        running[pool.submit(_bound_subset, *args)] = (nxt, Deadline.of(args[3]))
                    nxt += 1
                if running:
                    finished, _ = wait(list(running), timeout=poll,
                                       return_when=FIRST_COMPLETED)
                    for fut in finished:
                        t, _ = running.pop(fut)
                        done += 1
                        record(t, fut.result(), done)
            if running and hears:
                # stopped: the running subsets end at their SDP's next iteration with its
                # safe bound, which is worth the short wait
                if worker_stop is not None:
                    worker_stop.set()
                finished, _ = wait(list(running), timeout=STOP_GRACE)
                for fut in finished:
                    t, _ = running.pop(fut)
                    done += 1
                    record(t, fut.result(), done)
        graceful = not running
    finally:
        if pool is not None and executor is None:
            _end_pool(pool, graceful)
        elif not graceful:
            for fut in running:
                fut.cancel()
    for t in range(T):
        if out[t] is None:  # not started, or still running when stopped: its floor holds
            pts = np.asarray(subsets[t], dtype=np.int64)
            out[t] = _floor_only(_sub_instance(instance, pts), instance.k == 2, pts,
                                 "stopped before its SDP finished: its spectral floor")
    return float(sum(b.lower_bound for b in out)), out  # type: ignore[union-attr]
