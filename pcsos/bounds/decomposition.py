"""A lower bound for instances too large for one SDP: bound subsets and add (``certify``).

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
import os
import time
from concurrent.futures import FIRST_COMPLETED, Executor, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from pcsos.errors import InfeasibleError, InputError, UndecidedError
from pcsos.problem import Instance, Problem, make_instance, sse

__all__ = ["spectral_floor", "partition", "decomposition_bound", "certify", "SubsetBound",
           "CertifyResult", "subset_size_for", "subset_count", "subset_settings"]

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


def subset_size_for(k: int, n: int | None = None, time_limit: float | None = None,
                    workers: int = 1) -> int:
    """The default points per subset for k clusters: ``SUBSET_PER_CLUSTER`` per cluster,
    clipped to [``SUBSET_MIN``, ``SUBSET_MAX``]; or ``SUBSET_PER_CLUSTER_LONG`` per cluster
    (clipped the same way) when n points in subsets of that size on ``workers`` workers
    give each subset at least ``SUBSET_MAX_SECONDS * (size / SUBSET_MAX)^3`` seconds of
    ``time_limit`` (None: no limit, and the smaller size)."""
    def clip(per_cluster: int) -> int:
        return int(min(SUBSET_MAX, max(SUBSET_MIN, per_cluster * int(k))))

    size, large = clip(SUBSET_PER_CLUSTER), clip(SUBSET_PER_CLUSTER_LONG)
    if n is None or time_limit is None or large <= size:
        return size
    share = workers * time_limit / subset_count(n, large, workers)
    return large if share >= SUBSET_MAX_SECONDS * (large / SUBSET_MAX) ** 3 else size


def subset_count(n: int, size: int, workers: int = 1) -> int:
    """How many subsets ``certify`` makes of n points with at most ``size`` each: enough,
    rounded up to a multiple of ``workers`` (so that no worker idles through the last share)
    when there is more than one."""
    count = math.ceil(n / size)
    return count if count <= 1 else workers * math.ceil(count / workers)


def subset_settings(cp_settings=None):
    """The cutting-plane settings for subsets: ``cp_settings`` (default: the loop's defaults)
    with loose rounds at ``SUBSET_LOOSE_TOL`` at least, unless loose rounds are off (None
    or 0)."""
    from dataclasses import replace

    from pcsos.cuts.loop import CuttingPlaneSettings

    st = cp_settings if cp_settings is not None else CuttingPlaneSettings()
    if not st.loose_tol or st.loose_tol >= SUBSET_LOOSE_TOL:
        return st
    return replace(st, loose_tol=SUBSET_LOOSE_TOL)


def spectral_floor(problem: Problem) -> float:
    """The closed-form lower bound of ``problem`` (module doc): O(s d^2) time, no SDP."""
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
    """Subsets of about ``size`` points, each must-link group in one, each a stratified
    share of every cluster of ``labels`` whose mean is moved towards the cluster's mean by
    ``sweeps`` rounds of swaps (module doc, :func:`_balance`); sorted point indices per
    subset."""
    n = instance.n
    if size < 1:
        raise InputError(f"subset size must be >= 1, got {size}", source="subset_size")
    T = max(1, math.ceil(n / size))
    if T == 1:
        return [np.arange(n)]
    problem = Problem.from_instance(instance, infer_k2=False)
    groups = problem.point_labels  # point -> must-link group
    e = np.asarray(problem.e)
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
    load = np.zeros(T)
    sub_of = np.empty(problem.s, dtype=np.int64)
    t = 0
    for g in order:  # deal in turn, skipping subsets that are already full
        for _ in range(T):
            if load[t] + e[g] <= size or load[t] == 0:
                break
            t = (t + 1) % T
        else:
            t = int(np.argmin(load))
        sub_of[g] = t
        load[t] += e[g]
        t = (t + 1) % T
    for h in np.unique(glabel):
        _balance(means, e, sub_of, np.flatnonzero(glabel == h), rng, sweeps)
    pts = sub_of[groups]
    return [np.flatnonzero(pts == t) for t in range(T) if np.any(pts == t)]


def _balance(means: np.ndarray, e: np.ndarray, sub_of: np.ndarray, members: np.ndarray,
             rng: np.random.Generator, sweeps: int) -> None:
    """Swap single points of one cluster between subsets so that each subset's share of the
    cluster has nearly the cluster's mean (in place on ``sub_of``).

    With r_t the sum over subset t's share of (x - cluster mean) and m_t its size, the
    reference clustering restricted to the subsets loses L = sum_t ||r_t||^2 / m_t of its
    SSE (the pieces' SSE about their own means); L bounds from above what the subsets' bound
    can reach, and for a random deal it is about k / (subset size) of the SSE. A swap of
    x_a in t with x_b in u sets r_t += x_b - x_a and r_u -= x_b - x_a; for each pair of
    subsets the best such swap is made when it lowers L (AVOC, arXiv 2502.08397, improves
    its partition by swaps in the same spirit). Only must-link groups of one point move, so
    subset sizes do not change.
    """
    single = members[e[members] == 1]
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
            delta = means[B][None, :, :] - means[A][:, None, :]  # x_b - x_a
            new = (((r[i] + delta) ** 2).sum(axis=2) / m[i]
                   + ((r[j] - delta) ** 2).sum(axis=2) / m[j])
            a, b = np.unravel_index(int(np.argmin(new)), new.shape)
            old = (r[i] @ r[i]) / m[i] + (r[j] @ r[j]) / m[j]
            if new[a, b] < old * (1 - 1e-12):
                r[i] += delta[a, b]
                r[j] -= delta[a, b]
                sub_of[A[a]], sub_of[B[b]] = pieces[j], pieces[i]
                moved = True
        if not moved:
            break


def _pairs(T: int, rng: np.random.Generator):
    """All pairs of 0..T-1, in a random order."""
    ii, jj = np.triu_indices(T, 1)
    order = rng.permutation(len(ii))
    return zip(ii[order].tolist(), jj[order].tolist(), strict=True)


@dataclass
class SubsetBound:
    """One subset's bound: its ``points`` (indices), size ``n``, super-points ``s``,
    ``lower_bound``, how (``method``: 'groups' exact, 'sdp' or 'spectral'), ``seconds``
    and the SDP loop's ``message`` when one ran."""

    points: np.ndarray
    n: int
    s: int
    lower_bound: float
    method: str
    seconds: float
    message: str = ""


def _sub_instance(instance: Instance, pts: np.ndarray) -> Instance:
    where = np.full(instance.n, -1, dtype=np.int64)
    where[pts] = np.arange(len(pts))

    def inside(pairs):
        m = where[pairs]
        keep = (m >= 0).all(axis=1) if len(pairs) else np.zeros(0, dtype=bool)
        return m[keep]

    # a subset of fewer than k points is a clustering problem with at most that many
    # clusters: its bound is its groups' scatter, which does not depend on k
    return make_instance(instance.X[pts], min(instance.k, len(pts)), inside(instance.ml),
                         inside(instance.cl))


def _bound_subset(sub: Instance, k2: bool, pts: np.ndarray, time_limit: float | None,
                  sdp_options: dict, cp_settings, seed: int, upper: float,
                  blas_limit: int | None = None) -> SubsetBound:
    """One subset's bound; a module-level function of picklable data, so that a process
    pool or a Dask worker can run it. ``blas_limit`` caps BLAS threads around the job (only
    where it runs alone in its process: threadpoolctl limits are process-wide)."""
    t0 = time.perf_counter()
    # k = 2 merges the colour classes of cannot-link components, valid only when the whole
    # instance has k = 2 (not when a tiny subset's k was lowered to its size). An
    # InfeasibleError here means the whole instance is infeasible too.
    problem = Problem.from_instance(sub, infer_k2=k2)
    floor = spectral_floor(problem)
    if problem.s <= sub.k:
        return SubsetBound(pts, len(pts), problem.s, floor, "groups",
                           time.perf_counter() - t0)
    if time_limit is not None and time_limit <= 0:
        return SubsetBound(pts, len(pts), problem.s, floor, "spectral",
                           time.perf_counter() - t0, "no time left for the SDP")
    from pcsos.cuts.loop import cutting_plane_loop

    limit = (nullcontext() if blas_limit is None
             else threadpool_limits(limits=int(blas_limit), user_api="blas"))
    with limit:
        loop = cutting_plane_loop(problem, upper_bound=upper, settings=cp_settings,
                                  root=True, sdp_options=dict(sdp_options), seed=seed,
                                  time_limit=time_limit)
    lb = float(loop.lower_bound)
    if not lb > floor:
        return SubsetBound(pts, len(pts), problem.s, floor, "spectral",
                           time.perf_counter() - t0, loop.message)
    return SubsetBound(pts, len(pts), problem.s, lb, "sdp", time.perf_counter() - t0,
                       loop.message)


def _worker_start(caller: int) -> None:
    # a pool worker leaves Ctrl-C to its caller, which cancels the pool and ends the workers
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return

    def watch():
        # a caller killed outright (SIGKILL, a crash) cannot end its workers: a worker is a
        # child of the forkserver, not of the caller, so it checks on the caller itself
        # rather than bound a subset for minutes for no one
        while True:
            time.sleep(1.0)
            try:
                os.kill(caller, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive (another user's process has the pid)
                pass

    threading.Thread(target=watch, name="pcsos-caller-watch", daemon=True).start()


def process_pool(workers: int):
    """A pool of ``workers`` processes for :func:`decomposition_bound`: forkserver where the
    platform has it (a fresh interpreter per worker, not a fork of a parent that may hold
    BLAS threads), else spawn. Either imports the caller's main module in the workers, so a
    script must keep its work under ``if __name__ == "__main__":``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_worker_start, initargs=(os.getpid(),))


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


def _workers(workers) -> int:
    if workers is not None and (isinstance(workers, bool) or not int(workers) >= 1):
        raise InputError(f"workers must be a positive integer, got {workers!r}",
                         source="workers")
    return int(workers) if workers else (os.cpu_count() or 1)


def decomposition_bound(instance: Instance, subsets: list[np.ndarray], *,
                        time_limit: float | None = None, workers: int | None = None,
                        executor: Executor | None = None, sdp_options: dict | None = None,
                        cp_settings=None, seed: int = 0, labels: np.ndarray | None = None,
                        progress=None, blas_limit: int | None = 1
                        ) -> tuple[float, list[SubsetBound]]:
    """Sum of the subsets' lower bounds (a valid lower bound of the whole; module doc).

    ``subsets`` must partition the points with each must-link group inside one (else
    :class:`InputError`). At most ``workers`` subsets (default: the CPU count) are bounded
    at once: on ``executor`` when given (any ``concurrent.futures.Executor``: threads,
    processes, Dask's ``client.get_executor()``; the jobs and ``sdp_options`` are pickled
    for processes), else in this thread when ``workers`` is 1, else on a
    :func:`process_pool` of ``workers`` processes (threads would share one interpreter
    lock, which costs a third of an iteration's time; docs/decomposition.md). Each subset
    starts with an equal share of the core-seconds left before ``time_limit``; ``labels``,
    a clustering of the whole, gives each subset's loop its restriction's value as the
    upper bound at which it may stop. ``cp_settings``: the subsets' cutting-plane settings,
    used as given (default: :func:`subset_settings`). ``progress(done, total,
    bound_so_far)`` after each subset. ``blas_limit``: BLAS threads per subset (None: leave
    the limit alone, as a job inside the tree must, threadpoolctl limits being
    process-wide).
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
    workers = _workers(workers)
    T = len(subsets)
    t0 = time.perf_counter()
    opts = dict(sdp_options or {})
    cp_settings = subset_settings() if cp_settings is None else cp_settings
    pool = executor
    if pool is None and workers > 1 and T > 1:
        pool = process_pool(min(workers, T))
    # in this thread, the limit is set here, around the whole run; in a worker process the
    # job sets it (a shared thread pool would race on the process-wide limit)
    here = pool is None or isinstance(pool, ThreadPoolExecutor)
    job_limit = None if here else blas_limit

    def job(t: int, share: float | None) -> tuple:
        pts = np.asarray(subsets[t], dtype=np.int64)
        upper = math.inf if labels is None else sse(instance.X[pts], np.asarray(labels)[pts])
        return (_sub_instance(instance, pts), instance.k == 2, pts, share, opts,
                cp_settings, seed + t, upper, job_limit)

    out: list[SubsetBound | None] = [None] * T
    total = 0.0
    running: dict = {}  # future -> (subset, when its share ends)
    graceful = False

    def share_of(t: int) -> float | None:
        if time_limit is None:
            return None
        # the core-seconds left, less those the running subsets hold, shared equally by the
        # subsets still to start (one that ends early leaves its time to the others)
        now = time.perf_counter()
        left = max(0.0, time_limit - (now - t0))
        held = sum(max(0.0, end - now) for _, end in running.values())
        return max(0.0, min(left, (workers * left - held) / (T - t)))

    def record(t: int, bound: SubsetBound, done: int) -> None:
        nonlocal total
        out[t] = bound
        total += bound.lower_bound
        if progress is not None:
            progress(done, T, total)

    limit = (nullcontext() if blas_limit is None or not here
             else threadpool_limits(limits=int(blas_limit), user_api="blas"))
    try:
        with limit:
            nxt = done = 0
            while nxt < T or running:
                while nxt < T and (pool is None or len(running) < workers):
                    share = share_of(nxt)
                    if pool is None:
                        done += 1
                        record(nxt, _bound_subset(*job(nxt, share)), done)
                    else:
                        end = math.inf if share is None else time.perf_counter() + share
                        running[pool.submit(_bound_subset, *job(nxt, share))] = (nxt, end)
                    nxt += 1
                if running:
                    finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for fut in finished:
                        t, _ = running.pop(fut)
                        done += 1
                        record(t, fut.result(), done)
        graceful = True
    finally:
        if pool is not None and executor is None:
            _end_pool(pool, graceful)
        elif not graceful:
            for fut in running:
                fut.cancel()
    return float(sum(b.lower_bound for b in out)), out  # type: ignore[union-attr]


@dataclass
class CertifyResult:
    """A certified gap for a clustering of a large instance (:func:`certify`).

    ``lower_bound`` (valid for the optimum), ``objective`` of ``labels``, ``gap`` =
    (objective - lower_bound) / objective, ``spectral_floor`` (the closed-form bound of the
    whole), ``subsets`` (per-subset bounds), ``heuristic`` (which made the labels, or
    'given'), ``seconds``, ``message`` and ``subset_size`` (the size asked of the subsets).
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

    def to_dict(self) -> dict:
        """JSON-ready, with the partition as lists of point indices."""
        return {"lower_bound": self.lower_bound, "objective": self.objective,
                "gap": self.gap, "spectral_floor": self.spectral_floor,
                "heuristic": self.heuristic, "seconds": self.seconds,
                "message": self.message, "subset_size": self.subset_size,
                "labels": self.labels.tolist(),
                "subsets": [{"points": b.points.tolist(), "n": b.n, "s": b.s,
                             "lower_bound": b.lower_bound, "method": b.method,
                             "seconds": b.seconds, "message": b.message}
                            for b in self.subsets]}


def certify(X, k: int, ml=(), cl=(), labels=None, *, subset_size: int | None = None,
            time_limit: float | None = None, workers: int | None = None,
            executor: Executor | None = None, dask=None, heuristic: str = "s-mdeclust",
            seed: int = 0, sdp_options: dict | None = None, cp_settings=None,
            progress=None) -> CertifyResult:
    """A clustering and a certified lower bound for an instance of any size.

    ``labels``: the clustering to certify (checked: n labels, k clusters, every pair
    obeyed); default: ``heuristic`` run within a quarter of ``time_limit``. The bound is
    the larger of :func:`spectral_floor` and :func:`decomposition_bound` over
    :func:`partition` subsets of at most ``subset_size`` points (default:
    :func:`subset_size_for` of k, n, the time left after the heuristic and ``workers``), as
    many as :func:`subset_count` says. The subsets run on
    ``executor``, or on Dask (``dask``: a Client, ``'local:N'`` or a scheduler address, as
    in :func:`pcsos.solve`; ``workers`` then defaults to the cluster's threads), else on a
    process pool of ``workers`` (default: the CPU count). ``cp_settings``: the subsets'
    cutting-plane settings, used as given (default: :func:`subset_settings`).
    ``progress(stage, done, total, bound)`` reports the stages ('heuristic', 'subsets').
    Raises :class:`InputError` for bad input and :class:`InfeasibleError` when no
    clustering exists.
    """
    t0 = time.perf_counter()
    inst = make_instance(X, k, ml, cl)
    if subset_size is not None and (isinstance(subset_size, bool) or not subset_size >= 1):
        raise InputError(f"subset size must be >= 1, got {subset_size!r}",
                         source="subset_size")
    if workers is not None:
        workers = _workers(workers)
    client = None
    if dask is not None:
        if executor is not None:
            raise InputError("give executor or dask, not both", source="dask")
        from pcsos.distributed import connect

        client, own = connect(dask)
    try:
        if client is not None:
            executor = client.get_executor()
            if workers is None:
                workers = max(1, sum(client.nthreads().values()))
        return _certify(inst, labels, subset_size, time_limit, _workers(workers), executor,
                        heuristic, seed, sdp_options, cp_settings, progress, t0)
    finally:
        if client is not None:
            from pcsos.distributed import close

            close(client, own)


def _certify(inst, labels, subset_size, time_limit, workers, executor, heuristic, seed,
             sdp_options, cp_settings, progress, t0) -> CertifyResult:
    from pcsos.problem import check_start

    def left() -> float | None:
        return None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t0))

    start = None if labels is None else check_start(inst, labels, source="labels")
    whole = Problem.from_instance(inst)  # the heuristic's problem and the spectral floor's
    if start is not None:
        lab, made_by = start, "given"
    else:
        from pcsos.heuristics import run_heuristic

        if progress is not None:
            progress("heuristic", 0, 1, None)
        budget = None if time_limit is None else 0.25 * time_limit
        h = run_heuristic(heuristic, whole, seed=seed, time_limit=budget)
        if h.status == "infeasible":
            raise InfeasibleError(f"{heuristic} proved the constraints infeasible: "
                                  f"{h.message}")
        if h.status != "found":
            raise UndecidedError(f"{heuristic} found no clustering ({h.status}: "
                                 f"{h.message}); give one with labels=")
        lab, made_by = np.asarray(h.labels), heuristic
    objective = sse(inst.X, lab)
    floor = spectral_floor(whole)
    if subset_size is None:
        subset_size = subset_size_for(inst.k, inst.n, left(), workers)
    count = subset_count(inst.n, int(subset_size), workers)
    if count > 1:
        subset_size = math.ceil(inst.n / count)
    subsets = partition(inst, lab, subset_size, seed=seed)

    def sub_progress(done, total, bound):
        if progress is not None:
            progress("subsets", done, total, bound)

    lb, parts = decomposition_bound(inst, subsets, time_limit=left(), workers=workers,
                                    executor=executor, sdp_options=sdp_options,
                                    cp_settings=cp_settings, seed=seed, labels=lab,
                                    progress=sub_progress)
    lower = max(lb, floor)
    gap = (objective - lower) / objective if objective > 0 else 0.0
    sdp = sum(b.method == "sdp" for b in parts)
    msg = (f"{len(parts)} subsets of at most ~{subset_size} points: {sdp} bounded by their "
           f"SDP, {sum(b.method == 'groups' for b in parts)} exactly (at most k groups), "
           f"{sum(b.method == 'spectral' for b in parts)} by the spectral floor only")
    if floor >= lb:
        msg += "; the spectral floor of the whole is the larger bound"
    return CertifyResult(lower, objective, max(0.0, gap), lab, floor, parts, made_by,
                         time.perf_counter() - t0, msg, subset_size)
