"""Exact feasibility of a constrained clustering instance (spec §2.4).

An instance is feasible exactly when the cannot-link graph on the super-points (must-link
components) is k-colourable and there are at least k super-points: a colouring with fewer
than k colours can always be spread to exactly k non-empty clusters by moving single
super-points into new clusters. Deciding it is NP-complete, so cheap tests come first and
an exact ILP decides the rest:

1. a cannot-link pair inside a must-link group (``'ml_cl_conflict'``, raised by
   :meth:`~pcsos.Problem.from_instance`, which names the chain);
2. fewer than k super-points (``'too_few_groups'``);
3. k = 2: bipartiteness (``'bipartite'`` or ``'odd_cycle'``);
4. a DSATUR colouring with at most k colours (``'dsatur'``);
5. a cannot-link clique of k + 1 super-points (``'clique'``);
6. an exact ILP on each connected component of the cannot-link graph's k-core
   (``'ilp'`` or ``'ilp_infeasible'``; ``'time_limit'`` when the limit stops it first).

Only the k-core matters: a vertex with fewer than k neighbours can always be coloured last,
so peeling such vertices changes neither the answer nor the witness' validity.

With cluster sizes (``size_min`` / ``size_max`` or the exact multiset ``sizes`` of the
instance; sizes count points, so a super-point weighs ``Problem.counts``) colourability is
no longer enough, and the k-core argument fails (a peeled vertex still has to fit in a
cluster). After steps 1-2 the checks are then:

3. a super-point with more points than any cluster may hold (``'group_too_large'``,
   naming its points);
4. the necessary colouring tests: k = 2 bipartiteness (``'odd_cycle'``), and when DSATUR
   needs more than k colours a cannot-link clique of k + 1 (``'clique'``);
5. a greedy packing that keeps cannot-link partners apart (``'sizes_greedy'``);
6. an exact ILP over all super-points: x[g, c] = 1 when super-point g goes to cluster c,
   one cluster each, cannot-link pairs apart, ``sum_g counts_g x[g, c]`` within the
   bounds, or equal to ``sizes[c]`` (clusters are interchangeable, so giving cluster c the
   c-th size loses no solution) (``'sizes_ilp'``). Infeasible: ``'sizes_packing'`` when
   the groups cannot be packed even without the cannot-link pairs (a second ILP tells),
   else ``'sizes_ilp_infeasible'`` (the pairs listed); ``'time_limit'`` as above.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix

from pcsos.clock import Deadline
from pcsos.errors import InfeasibleError, InputError
from pcsos.milp import BACKENDS, Milp, adapter
from pcsos.problem import Instance, Problem, bipartition, cl_adjacency

__all__ = ["Feasibility", "check_instance", "check_problem", "spread_labels"]

METHODS = ("auto", "ilp")
# cap on the maximal cliques enumerated in step 5; beyond it the ILP decides (it is exact)
_MAX_CLIQUES = 20000


@dataclass
class Feasibility:
    """The verdict of a feasibility check (:func:`check_instance`).

    Attributes
    ----------
    feasible : bool or None
        True, False, or None (undecided: the time limit stopped the ILP).
    reason : str
        How it was decided: ``'ml_cl_conflict'``, ``'too_few_groups'``, ``'bipartite'``,
        ``'odd_cycle'``, ``'dsatur'``, ``'clique'``, ``'ilp'``, ``'ilp_infeasible'``,
        ``'time_limit'``, and with sizes ``'group_too_large'``, ``'sizes_greedy'``,
        ``'sizes_ilp'``, ``'sizes_packing'``, ``'sizes_ilp_infeasible'``
        (:mod:`pcsos.feasibility` says what each test is).
    message : str
        The verdict in a sentence, with the explanation when infeasible.
    labels : ndarray of shape (n,) or None
        A witness over the original points: exactly k non-empty clusters obeying every
        pair (None unless feasible).
    super_labels : ndarray of shape (s,) or None
        The same over the super-points.
    pairs : list of (i, j)
        The conflicting pairs in original point indices (empty unless infeasible).
    s : int or None
        Number of super-points.
    backend : str or None
        The MILP backend that decided, when an ILP ran.
    seconds : float
        Wall time of the check.

    Examples
    --------
    >>> import pcsos
    >>> inst = pcsos.make_instance([[0.0], [1], [2], [3]], 3, cl=[(0, 1), (1, 2), (0, 2)])
    >>> verdict = pcsos.check_instance(inst)
    >>> verdict.status, verdict.reason, verdict.labels.tolist()
    ('feasible', 'dsatur', [0, 1, 2, 0])
    """

    feasible: bool | None
    reason: str
    message: str
    labels: np.ndarray | None = None
    super_labels: np.ndarray | None = None
    pairs: list[tuple[int, int]] = field(default_factory=list)
    s: int | None = None
    backend: str | None = None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """``'feasible'``, ``'infeasible'`` or ``'unknown'``."""
        return {True: "feasible", False: "infeasible", None: "unknown"}[self.feasible]

    @property
    def success(self) -> bool:
        """True when the question was decided (either way)."""
        return self.feasible is not None

    def raise_if_infeasible(self) -> Feasibility:
        """Raise :class:`~pcsos.errors.InfeasibleError` (reason, pairs, message) when
        infeasible; else return self."""
        if self.feasible is False:
            raise InfeasibleError(self.message, reason=self.reason, pairs=self.pairs)
        return self


def check_instance(instance: Instance, backend: str = "highs",
                   time_limit: float | Deadline | None = None,
                   *, infer_k2: bool = True, method: str = "auto") -> Feasibility:
    """Decide whether ``instance`` has a partition into exactly k clusters obeying all pairs.

    Cheap tests first, then an exact ILP on what they leave (the steps are in
    :mod:`pcsos.feasibility`). An infeasible instance is a verdict, not an error: a
    cannot-link pair inside a must-link group or an odd cycle at k = 2 included.

    Parameters
    ----------
    instance : Instance
        From :func:`make_instance`.
    backend : {'highs', 'gurobi'}
        The ILP's solver.
    time_limit : float or Deadline, optional
        Seconds, or a :class:`~pcsos.clock.Deadline`, for the check (None: none); past it
        the verdict is undecided.
    infer_k2 : bool, default True
        At k = 2, merge the points that the cannot-link graph forces together first.
    method : {'auto', 'ilp'}
        'ilp' skips the cheap tests (for testing them against it).

    Returns
    -------
    Feasibility
        The verdict, with a witness clustering when feasible and the conflicting pairs
        when infeasible.

    Raises
    ------
    InputError
        An unknown backend or method, or ``instance`` not an Instance.
    BackendUnavailableError
        ``backend='gurobi'`` without gurobipy or its licence, once an ILP is needed (the
        cheap tests decide many instances without one).

    Examples
    --------
    >>> import pcsos
    >>> inst = pcsos.make_instance([[0.0], [1], [2]], 2, cl=[(0, 1), (1, 2), (0, 2)])
    >>> verdict = pcsos.check_instance(inst)
    >>> verdict.feasible, verdict.reason, verdict.pairs
    (False, 'odd_cycle', [(0, 1), (0, 2), (1, 2)])
    """
    clock = Deadline.checked(time_limit).within()  # its elapsed() counts this check
    try:
        problem = Problem.from_instance(instance, infer_k2=infer_k2)
    except InfeasibleError as exc:
        return Feasibility(False, exc.reason, f"infeasible: {exc}", pairs=list(exc.pairs),
                           seconds=clock.elapsed())
    res = check_problem(problem, backend, clock, method=method)
    res.seconds = clock.elapsed()
    return res


def check_problem(problem: Problem, backend: str = "highs",
                  time_limit: float | Deadline | None = None,
                  *, method: str = "auto") -> Feasibility:
    """Decide k-colourability (with s >= k) of a super-point problem, e.g. a tree node, and
    with the instance's cluster sizes the size-constrained question (module doc).

    ``backend`` ('highs' or 'gurobi') solves the ILP; ``time_limit`` (seconds or a
    :class:`~pcsos.clock.Deadline`) bounds the whole check, and an undecided ILP gives
    ``feasible=None`` with reason 'time_limit'.
    ``method='ilp'`` skips the cheap tests 3-5 (for testing the exact path).
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown feasibility backend {backend!r}; choose one of {BACKENDS}",
                         source="backend")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {METHODS}", source="method")
    deadline = Deadline.checked(time_limit).within()  # its elapsed() counts this check
    res = _decide(problem, backend, deadline, method)
    res.s = problem.s
    res.seconds = deadline.elapsed()
    if res.super_labels is not None:
        res.super_labels = spread_labels(res.super_labels, problem.k)
        res.labels = problem.to_points(res.super_labels)
        if not problem.satisfies(res.super_labels):  # pragma: no cover - a bug guard
            raise AssertionError("feasibility witness violates a cannot-link pair")
        if not problem.instance.sizes_ok(res.labels):  # pragma: no cover - a bug guard
            raise AssertionError("feasibility witness breaks the cluster sizes")
    return res


def spread_labels(colours: np.ndarray, k: int) -> np.ndarray:
    """Relabel a colouring to 0..m-1 and split classes until exactly k are non-empty.

    Moving one member of a class of size >= 2 into a new class never breaks a cannot-link
    pair; it needs len(colours) >= k.
    """
    _, lab = np.unique(np.asarray(colours, dtype=np.int64), return_inverse=True)
    lab = lab.astype(np.int64)
    m = int(lab.max()) + 1 if len(lab) else 0
    if m > k or len(lab) < k:
        raise ValueError(f"cannot spread {m} colours on {len(lab)} vertices to k = {k}")
    while m < k:
        counts = np.bincount(lab, minlength=m)
        c = int(np.argmax(counts))
        v = int(np.flatnonzero(lab == c)[-1])
        lab[v] = m
        m += 1
    return lab


# --------------------------------------------------------------------------- the decision
def _cl_graph(s: int, cl: np.ndarray) -> nx.Graph:
    """The cannot-link graph on the super-points 0..s-1 (the k-core and clique steps')."""
    G = nx.Graph()
    G.add_nodes_from(range(s))
    G.add_edges_from(map(tuple, cl.tolist()))
    return G


def dsatur(s: int, edges) -> np.ndarray:
    """DSATUR's colouring of the graph on 0..s-1 with ``edges``: the uncoloured vertex of
    most distinct neighbour colours next (ties: most neighbours, then the smallest index),
    each given its smallest free colour. The same colouring as networkx's
    ``saturation_largest_first``, which scans every vertex at every step (5 000 vertices
    took 13 s, 20 000 more than 5 minutes); a heap makes it O((s + m) log s) (0.1 s at
    20 000)."""
    adj: list[list[int]] = [[] for _ in range(s)]
    for a, b in np.asarray(edges, dtype=np.int64).reshape(-1, 2).tolist():
        adj[a].append(b)
        adj[b].append(a)
    colours = [-1] * s
    seen: list[set[int]] = [set() for _ in range(s)]  # the neighbours' colours
    heap = [(0, -len(adj[v]), v) for v in range(s)]
    heapq.heapify(heap)
    while heap:
        neg_sat, _, v = heapq.heappop(heap)
        if colours[v] >= 0 or -neg_sat != len(seen[v]):  # coloured, or a stale entry
            continue
        c = 0
        while c in seen[v]:
            c += 1
        colours[v] = c
        for u in adj[v]:
            if colours[u] < 0 and c not in seen[u]:
                seen[u].add(c)
                heapq.heappush(heap, (-len(seen[u]), -len(adj[u]), u))
    return np.asarray(colours, dtype=np.int64)


def _decide(problem: Problem, backend: str, deadline: Deadline, method: str) -> Feasibility:
    s, k, cl = problem.s, problem.k, problem.cl
    after = " after k = 2 inference" if problem.k == 2 and problem.infer_k2 else ""
    if s < k:
        return Feasibility(
            False, "too_few_groups",
            f"infeasible: k = {k} but there are only {s} super-points (must-link groups"
            f"{after}), so at most {s} clusters can be non-empty")
    if problem.instance.has_sizes:
        return _decide_sizes(problem, backend, deadline, method)
    if method == "auto" and k == 2:
        colour, cycle = bipartition(s, cl)
        if cycle is not None:
            pairs = [problem.original_pair(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])]
            return Feasibility(False, "odd_cycle",
                               "infeasible: k = 2 but the cannot-link pairs form an odd cycle: "
                               + _fmt_pairs(pairs), pairs=pairs)
        return Feasibility(True, "bipartite",
                           "feasible: k = 2 and the cannot-link graph on the super-points is "
                           "bipartite", super_labels=colour)
    if method == "auto":
        colours = dsatur(s, cl)
        m = int(colours.max()) + 1 if s else 0
        if m <= k:
            return Feasibility(True, "dsatur",
                               f"feasible: DSATUR coloured the cannot-link graph on {s} "
                               f"super-points with {m} <= k = {k} colours",
                               super_labels=colours)
    G = _cl_graph(s, cl)
    core, order = _k_core(G, k)
    if method == "auto":
        clique = _find_clique(G.subgraph(core), k + 1, deadline)
        if clique is not None:
            pairs = [problem.original_pair(a, b) for t, a in enumerate(clique)
                     for b in clique[t + 1:]]
            reps = sorted({p for pair in pairs for p in pair})
            return Feasibility(False, "clique",
                               f"infeasible: {k + 1} groups are pairwise cannot-linked (a "
                               f"cannot-link clique larger than k = {k}): "
                               + _fmt_pairs(pairs) + f"; points {reps}", pairs=pairs)
    colours = np.full(s, -1, dtype=np.int64)
    sub = G.subgraph(core)
    for comp in sorted(nx.connected_components(sub), key=len, reverse=True):
        comp_g = sub.subgraph(comp)
        status, col = _ilp_colour(comp_g, k, backend, deadline)
        if status == "infeasible":
            edges = sorted((min(a, b), max(a, b)) for a, b in comp_g.edges())
            pairs = [problem.original_pair(a, b) for a, b in edges]
            return Feasibility(False, "ilp_infeasible",
                               f"infeasible: the exact ILP ({backend}) proves that {len(comp)} "
                               f"super-points joined by {len(pairs)} cannot-link pairs cannot "
                               f"be split into {k} clusters: " + _fmt_pairs(pairs),
                               pairs=pairs, backend=backend)
        if status == "time_limit":
            return Feasibility(None, "time_limit",
                               f"unknown: the time limit was reached before the ILP "
                               f"({backend}) decided ({len(comp)} super-points of the "
                               f"{k}-core)", backend=backend)
        for v, c in col.items():
            colours[v] = c
    # colour the peeled vertices last-removed first: each has < k coloured neighbours
    for v in reversed(order):
        used = {colours[u] for u in G[v] if colours[u] >= 0}
        colours[v] = next(c for c in range(k) if c not in used)
    return Feasibility(True, "ilp",
                       f"feasible: the exact ILP ({backend}) coloured the {len(core)} "
                       f"super-points of the cannot-link graph's {k}-core with k = {k} "
                       "colours", super_labels=colours, backend=backend)


def _fmt_pairs(pairs, limit: int = 12) -> str:
    shown = ", ".join(f"({i}, {j})" for i, j in pairs[:limit])
    return shown + (f", ... ({len(pairs)} pairs in all)" if len(pairs) > limit else "")


def _k_core(G: nx.Graph, k: int) -> tuple[list[int], list[int]]:
    """Vertices of the k-core and the peeling order of the others (each had degree < k)."""
    deg = dict(G.degree())
    removed: set[int] = set()
    stack = [v for v, dv in deg.items() if dv < k]
    order: list[int] = []
    while stack:
        v = stack.pop()
        if v in removed:
            continue
        removed.add(v)
        order.append(v)
        for u in G[v]:
            if u not in removed:
                deg[u] -= 1
                if deg[u] == k - 1:
                    stack.append(u)
    core = [v for v in G if v not in removed]
    return core, order


def _find_clique(G: nx.Graph, size: int, deadline: Deadline) -> list[int] | None:
    """A clique of ``size`` vertices, or None (also when the search cap or deadline is hit)."""
    if G.number_of_nodes() < size:
        return None
    for t, q in enumerate(nx.find_cliques(G)):
        if len(q) >= size:
            return sorted(q)[:size]
        if t >= _MAX_CLIQUES or deadline.expired():
            return None
    return None


def _greedy_clique(G: nx.Graph) -> list[int]:
    """A maximal clique grown greedily from a highest-degree vertex (for symmetry breaking)."""
    if G.number_of_nodes() == 0:
        return []
    v0 = max(G, key=G.degree)
    q = [v0]
    cand = set(G[v0])
    while cand:
        v = max(cand, key=lambda u: len(cand & set(G[u])))
        q.append(v)
        cand &= set(G[v])
    return q


def _ilp_colour(G: nx.Graph, k: int, backend: str, deadline: Deadline):
    """Exact k-colouring of a connected graph: ('feasible', {v: c}) / ('infeasible', None) /
    ('time_limit', None).

    x[v, c] = 1 when v gets colour c. Symmetry breaking: colours are numbered by first use
    in a fixed vertex order that starts with a clique, so the t-th vertex uses a colour
    <= t and the clique's vertices are fixed to colours 0, 1, ...
    """
    if deadline.expired():
        return "time_limit", None
    clique = _greedy_clique(G)
    rest = [v for v in nx.bfs_tree(G, clique[0]) if v not in set(clique)]
    order = clique + rest
    pos = {v: t for t, v in enumerate(order)}
    m = len(order)
    lb = np.zeros((m, k))
    ub = np.zeros((m, k))
    for t in range(m):
        ub[t, : min(t, k - 1) + 1] = 1.0
    for t in range(min(len(clique), k)):
        lb[t, t] = 1.0
    edges = np.array([(pos[a], pos[b]) for a, b in G.edges()], dtype=np.int64).reshape(-1, 2)
    # gurobi can be missing: said here, where an ILP is needed, not when a cheap test
    # decides first
    solver = adapter(backend).require("feasibility")
    # the outside solver gets seconds; a few ms at least once the check above passed
    res = solver.solve(_colouring_milp(m, k, lb, ub, edges),
                       time_limit=max(deadline.remaining(), 1e-3))
    if res.status == "error":  # pragma: no cover - the solver's own failure
        raise RuntimeError(res.message)
    if res.x is None:
        return res.status, None
    x = np.round(res.x)
    col = np.argmax(x.reshape(m, k), axis=1)
    if len(edges) and np.any(col[edges[:, 0]] == col[edges[:, 1]]):  # pragma: no cover
        raise AssertionError("ILP colouring violates a cannot-link pair")
    return "feasible", {v: int(col[pos[v]]) for v in order}


def _colouring_milp(m: int, k: int, lb: np.ndarray, ub: np.ndarray, edges: np.ndarray) -> Milp:
    """The colouring ILP: column ``v * k + c`` is x[v, c]; m rows 'each vertex exactly one
    colour', then k rows per edge, 'x[u, c] + x[v, c] <= 1'."""
    nv = m * k
    E = len(edges)
    rows = [np.repeat(np.arange(m), k)]
    cols = [np.arange(nv)]
    if E:
        r = m + np.arange(E * k)
        rows += [r, r]
        cols += [(edges[:, 0][:, None] * k + np.arange(k)).ravel(),
                 (edges[:, 1][:, None] * k + np.arange(k)).ravel()]
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    A = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(m + E * k, nv)).tocsc()
    return Milp(c=np.zeros(nv), A=A,
                row_lo=np.concatenate([np.ones(m), np.full(E * k, -np.inf)]),
                row_hi=np.ones(m + E * k), col_lo=lb.ravel(), col_hi=ub.ravel(),
                integrality=np.ones(nv, dtype=bool), name="colouring ILP")


# --------------------------------------------------------------------------- cluster sizes
def _decide_sizes(problem: Problem, backend: str, deadline: Deadline,
                  method: str) -> Feasibility:
    """Steps 3-6 of the module doc: the decision with cluster sizes (s >= k holds)."""
    inst = problem.instance
    s, k, cl = problem.s, problem.k, problem.cl
    counts = problem.counts
    lo, hi = inst.size_bounds()
    what = _fmt_sizes(inst)
    inferred = (" (a must-link group after k = 2 inference, which puts each colour class of "
                "a cannot-link component in one cluster)"
                if k == 2 and problem.infer_k2 and len(inst.cl) else "")
    g = int(np.argmax(counts))
    if counts[g] > hi:
        pts = np.flatnonzero(problem.point_labels == g)
        ml = inst.ml
        inside = ml[np.isin(ml[:, 0], pts) & np.isin(ml[:, 1], pts)] if len(ml) else ml
        head = (f"the largest exact size is {hi} but a must-link group has {counts[g]} points"
                if inst.sizes is not None else
                f"a must-link group of {counts[g]} points is larger than size_max = {hi}")
        return Feasibility(False, "group_too_large",
                           f"infeasible: {head}{inferred}: points {_fmt_points(pts)}",
                           pairs=[(int(i), int(j)) for i, j in inside])
    if method == "auto":
        verdict = _colouring_conflict(problem, deadline)
        if verdict is not None:
            return verdict
        lab = _greedy_pack(problem, lo, hi)
        if lab is not None:
            return Feasibility(True, "sizes_greedy",
                               f"feasible: a greedy packing of the {s} super-points into "
                               f"k = {k} clusters meets the {what} and every cannot-link pair",
                               super_labels=lab)
    status, lab = _sizes_ilp(problem, lo, hi, cl, backend, deadline)
    if status == "feasible":
        return Feasibility(True, "sizes_ilp",
                           f"feasible: the exact ILP ({backend}) split the {s} super-points "
                           f"into k = {k} clusters with {what}", super_labels=lab,
                           backend=backend)
    if status == "time_limit":
        return Feasibility(None, "time_limit",
                           f"unknown: the time limit was reached before the ILP ({backend}) "
                           f"decided the {what} ({s} super-points)", backend=backend)
    groups = _fmt_counts(counts)
    packing = "infeasible" if not len(cl) else \
        _sizes_ilp(problem, lo, hi, cl[:0], backend, deadline)[0]
    if packing == "infeasible":
        return Feasibility(False, "sizes_packing",
                           f"infeasible: the exact ILP ({backend}) proves that {groups}"
                           f"{inferred} cannot be split into k = {k} clusters with {what}, "
                           "whatever the cannot-link pairs", backend=backend)
    pairs = [problem.original_pair(a, b) for a, b in cl.tolist()]
    return Feasibility(False, "sizes_ilp_infeasible",
                       f"infeasible: the exact ILP ({backend}) proves that the {len(pairs)} "
                       f"cannot-link pairs and the {what} conflict ({groups}{inferred} fit "
                       f"the sizes, but not with every pair apart): " + _fmt_pairs(pairs),
                       pairs=pairs, backend=backend)


def _fmt_sizes(inst: Instance) -> str:
    if inst.sizes is not None:
        return "exact sizes " + ", ".join(map(str, inst.sizes))
    if inst.size_max is None:
        return f"cluster sizes of at least size_min = {inst.size_min} points"
    if inst.size_min is None:
        return f"cluster sizes of at most size_max = {inst.size_max} points"
    return (f"cluster sizes between size_min = {inst.size_min} and size_max = "
            f"{inst.size_max} points")


def _fmt_points(pts, limit: int = 20) -> str:
    shown = ", ".join(map(str, pts[:limit]))
    return f"[{shown}" + (f", ... ({len(pts)} in all)]" if len(pts) > limit else "]")


def _fmt_counts(counts: np.ndarray) -> str:
    big = sorted((int(c) for c in counts if c > 1), reverse=True)
    single = int(np.sum(counts == 1))
    parts = []
    if big:
        shown = ", ".join(map(str, big[:12])) + (", ..." if len(big) > 12 else "")
        parts.append(f"{len(big)} must-link group(s) of {shown} points")
    if single:
        parts.append(f"{single} single point(s)")
    return " and ".join(parts)


def _colouring_conflict(problem: Problem, deadline: Deadline) -> Feasibility | None:
    """An odd cycle (k = 2) or a (k+1)-clique of cannot-link pairs, when one is found."""
    s, k, cl = problem.s, problem.k, problem.cl
    if not len(cl):
        return None
    if k == 2:
        _, cycle = bipartition(s, cl)
        if cycle is None:
            return None
        pairs = [problem.original_pair(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])]
        return Feasibility(False, "odd_cycle",
                           "infeasible: k = 2 but the cannot-link pairs form an odd cycle: "
                           + _fmt_pairs(pairs), pairs=pairs)
    if int(dsatur(s, cl).max()) + 1 <= k:
        return None
    G = _cl_graph(s, cl)
    core, _ = _k_core(G, k)
    clique = _find_clique(G.subgraph(core), k + 1, deadline)
    if clique is None:
        return None
    pairs = [problem.original_pair(a, b) for t, a in enumerate(clique) for b in clique[t + 1:]]
    reps = sorted({p for pair in pairs for p in pair})
    return Feasibility(False, "clique",
                       f"infeasible: {k + 1} groups are pairwise cannot-linked (a cannot-link "
                       f"clique larger than k = {k}): " + _fmt_pairs(pairs) + f"; points {reps}",
                       pairs=pairs)


def _capacities(problem: Problem, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster lower and upper point counts (cluster c gets the c-th exact size)."""
    k, sizes = problem.k, problem.instance.sizes
    if sizes is not None:
        v = np.asarray(sizes, dtype=np.int64)
        return v, v
    return np.full(k, lo, dtype=np.int64), np.full(k, hi, dtype=np.int64)


def _greedy_pack(problem: Problem, lo: int, hi: int) -> np.ndarray | None:
    """Largest groups first, each into an allowed cluster (no cannot-link partner, room
    left): with exact sizes the fullest one that fits (best fit, to fill clusters exactly),
    with bounds the emptiest (worst fit, to reach size_min everywhere). None when it fails."""
    counts = problem.counts
    need, cap = _capacities(problem, lo, hi)
    exact = problem.instance.sizes is not None
    adj = cl_adjacency(problem.s, problem.cl)
    room = cap.copy()
    lab = np.full(problem.s, -1, dtype=np.int64)
    for g in np.argsort(-counts, kind="stable"):
        ok = room >= counts[g]
        taken = lab[adj[g]]
        ok[taken[taken >= 0]] = False
        if not ok.any():
            return None
        c = int(np.argmin(np.where(ok, room, np.iinfo(np.int64).max)) if exact
                else np.argmax(np.where(ok, room, -1)))
        lab[g] = c
        room[c] -= counts[g]
    return lab if np.all(cap - room >= need) else None


def _sizes_ilp(problem: Problem, lo: int, hi: int, cl: np.ndarray, backend: str,
               deadline: Deadline) -> tuple[str, np.ndarray | None]:
    """Step 6: ('feasible', super labels), ('infeasible', None) or ('time_limit', None)."""
    if deadline.expired():
        return "time_limit", None
    # gurobi can be missing: said here, where an ILP is needed, not when a cheap test
    # decides first
    solver = adapter(backend).require("feasibility")
    s, k, counts = problem.s, problem.k, problem.counts
    need, cap = _capacities(problem, lo, hi)
    order = np.argsort(-counts, kind="stable")
    ub = np.ones((s, k))
    if problem.instance.sizes is None:
        # identical clusters: number them by first use in the order, so the t-th group
        # takes a cluster <= t (any solution relabels to this form)
        pos = np.empty(s, dtype=np.int64)
        pos[order] = np.arange(s)
        ub[np.arange(k)[None, :] > pos[:, None]] = 0.0
    res = solver.solve(_sizes_milp(counts, k, cl, need, cap, ub),
                       time_limit=max(deadline.remaining(), 1e-3))
    if res.status == "error":  # pragma: no cover - the solver's own failure
        raise RuntimeError(res.message)
    if res.x is None:
        return ("infeasible" if res.status == "infeasible" else "time_limit"), None
    lab = np.argmax(np.round(res.x).reshape(s, k), axis=1)
    return "feasible", lab


def _sizes_milp(counts: np.ndarray, k: int, cl: np.ndarray, need: np.ndarray,
                cap: np.ndarray, ub: np.ndarray) -> Milp:
    """Column ``g * k + c`` is x[g, c]: s rows 'one cluster each', k rows
    'need[c] <= sum_g counts_g x[g, c] <= cap[c]', then k rows per cannot-link pair."""
    s = len(counts)
    nv, E = s * k, len(cl)
    col = np.arange(nv)
    g_of, c_of = np.divmod(col, k)
    rows = [g_of, s + c_of]
    cols = [col, col]
    vals = [np.ones(nv), counts[g_of].astype(np.float64)]
    if E:
        r = s + k + np.arange(E * k)
        for side in (0, 1):
            rows.append(r)
            cols.append((cl[:, side][:, None] * k + np.arange(k)).ravel())
            vals.append(np.ones(E * k))
    A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(s + k + E * k, nv)).tocsc()
    return Milp(c=np.zeros(nv), A=A,
                row_lo=np.concatenate([np.ones(s), need, np.full(E * k, -np.inf)]),
                row_hi=np.concatenate([np.ones(s), cap, np.ones(E * k)]),
                col_lo=np.zeros(nv), col_hi=ub.ravel(),
                integrality=np.ones(nv, dtype=bool), name="cluster-size ILP")
