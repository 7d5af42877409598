"""IPC-k-means (paper 000, Alg. 1-2): k-means whose assignment step is the exact MILP.

Initial centres come from the node's SDP solution Z when given (Alg. 2): the best rank-k
approximation ``Z_k`` of Z, the rows of ``Z_k W`` as centroid estimates per super-point
(for a rank-k clustering matrix they are exactly the cluster means), and a weighted
k-means (k-means++ restarts, weights ``e``) on those rows. Without Z, each of ``n_init``
starts draws centres by weighted k-means++ on the super-point means. From each start the
assignment/update loop runs until |dSSE| < ``tol`` * SSE.
"""

from __future__ import annotations

import math

import numpy as np

from pcsos.errors import InputError
from pcsos.heuristics.assignment import AssignmentEngine, group_sums
from pcsos.heuristics.base import (
    Deadline,
    HeuristicResult,
    assign_update_loop,
    kmeanspp,
    start_centres,
    weighted_kmeans,
)
from pcsos.kcenter import kcenter_centres

__all__ = ["ipc_kmeans", "sdp_centres"]


def sdp_centres(problem, Z: np.ndarray, rng: np.random.Generator, *, n_init: int = 50,
                deadline: Deadline | None = None) -> np.ndarray:
    """Alg. 2: initial centres (k, d, centred coordinates) from the SDP solution Z.

    The rows of ``Z_k W`` (Z_k = V diag(lam) V^T, the top-k eigenpairs) all lie in the
    row space of ``B = V^T W`` (k x d), so the weighted k-means runs on k-dimensional
    coordinates with the same pairwise distances (``V diag(lam) L`` with ``L L^T = B B^T``)
    and the centres are mapped back through B; d never enters the clustering.
    """
    k = problem.k
    Zs = 0.5 * (Z + Z.T)
    lam, V = np.linalg.eigh(Zs)
    top = np.argsort(lam)[::-1][:k]
    lam, V = np.maximum(lam[top], 0.0), V[:, top]
    B = V.T @ problem.W                       # (k, d)
    G = B @ B.T
    g, U = np.linalg.eigh(0.5 * (G + G.T))
    L = U * np.sqrt(np.maximum(g, 0.0))       # L L^T = G
    Y = (V * lam) @ L                         # (s, k): same geometry as the rows of Z_k W
    _, labels, _ = weighted_kmeans(Y, problem.e, k, rng, n_init=n_init, deadline=deadline)
    M = (V * lam) @ B                         # the centroid estimates themselves (s, d)
    # the centre of a group of estimates is their e-weighted mean
    S = group_sums(labels, problem.e[:, None] * M, k)
    cnt = np.bincount(labels, weights=problem.e, minlength=k)
    cnt[cnt == 0] = 1.0
    return S / cnt[:, None]


def ipc_kmeans(problem, Z, rng: np.random.Generator, deadline: Deadline, *,
               init: str = "auto", n_init: int = 10, sdp_n_init: int = 50,
               max_iter: int = 100, tol: float = 1e-6, backend: str = "highs",
               centres=None, init_labels=None, kcenter_start: bool = False,
               **_ignored) -> HeuristicResult:
    """IPC-k-means on a node's super-point problem (see module doc).

    Options: ``init`` = ``'auto'`` (SDP when Z is given, else k-means++), ``'sdp'`` or
    ``'k-means++'``; ``n_init`` k-means++ starts (default 10; ignored with the SDP init,
    which makes one start); ``sdp_n_init`` k-means restarts on the centroid estimates;
    ``max_iter`` assignments per start; ``tol`` the relative |dSSE| stop;
    ``backend`` the assignment MILP backend; ``centres`` (k x d, original coordinates) or
    ``init_labels`` (original-point labels, e.g. an incumbent) as one extra start, run first;
    ``kcenter_start`` adds one start from the cluster means of the constrained k-center
    2-approximation (:func:`pcsos.kcenter.kcenter_centres`), which respects the node's pairs.
    """
    if _ignored:
        raise InputError(f"unknown ipc-kmeans option(s): {', '.join(sorted(_ignored))}")
    if init not in ("auto", "sdp", "k-means++"):
        raise InputError(f"init must be 'auto', 'sdp' or 'k-means++', got {init!r}",
                         source="init")
    if init == "sdp" and Z is None:
        raise InputError("init='sdp' needs the node's SDP solution Z", source="init")
    k = problem.k
    if problem.s < k:
        return HeuristicResult(status="infeasible", stats={"iterations": 0, "ilp_solves": 0},
                               message=f"{problem.s} super-points cannot fill k = {k} "
                                       "clusters")
    engine = AssignmentEngine.from_problem(problem, backend=backend)
    mean = problem.centre
    starts: list = []  # callables producing (k, d) centred centres, run in order
    if centres is not None:
        C0 = np.asarray(centres, dtype=np.float64)
        if C0.shape != (k, problem.d):
            raise InputError(f"centres must have shape {(k, problem.d)}, got {C0.shape}",
                             source="centres")
        starts.append(lambda: C0 - mean)
    if init_labels is not None:
        C1 = start_centres(problem, init_labels)
        starts.append(lambda: C1)
    if kcenter_start:
        rem = deadline.remaining()
        kc_limit = 10.0 if math.isinf(rem) else max(1.0, rem)
        # a spawned stream leaves rng's own draws (the k-means++ starts) unchanged
        kc_seed = int(rng.spawn(1)[0].integers(2**31))
        starts.append(lambda: kcenter_centres(problem, seed=kc_seed,
                                              time_limit=kc_limit))
    use_sdp = Z is not None and init in ("auto", "sdp")
    if use_sdp:
        starts.append(lambda: sdp_centres(problem, Z, rng, n_init=sdp_n_init,
                                          deadline=deadline))
    else:
        for _ in range(max(1, int(n_init))):
            starts.append(lambda: problem.centroids[
                kmeanspp(problem.centroids, problem.e, k, rng)])
    best, best_v = None, math.inf
    iters = solves = 0
    infeasible = False
    done = 0
    for make in starts:
        if deadline.expired() and best is not None:
            break
        r = assign_update_loop(problem, engine, make(), deadline, tol=tol, max_iter=max_iter,
                               warm=best)
        done += 1
        iters += r.iterations
        solves += r.solves
        if r.status == "infeasible":
            infeasible = True
            break
        if r.labels is not None and r.sse < best_v:
            best, best_v = r.labels, r.sse
        if deadline.expired():
            break
    stats = {"iterations": iters, "ilp_solves": solves if engine.method != "matching" else 0,
             "assignments": solves, "starts": done, "init": "sdp" if use_sdp else "k-means++",
             "assignment_method": engine.method}
    if infeasible:
        return HeuristicResult(status="infeasible", stats=stats,
                               message="the assignment MILP is infeasible: no clustering "
                                       "satisfies the cannot-link pairs"
                                       + (" and the cluster sizes"
                                          if problem.instance.has_sizes else "")
                                       + " with k clusters")
    if best is None:
        return HeuristicResult(status="no_solution", stats=stats,
                               message="time limit reached before any assignment")
    return HeuristicResult(status="found", super_labels=best, stats=stats)
