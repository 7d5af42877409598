"""Constrained k-center with must-link and cannot-link constraints (paper 004, Alg. 1-3).

What is computed (the paper's Alg. 3 plus what it leaves out, spec §8):

1. Must-link components (and, for k = 2, the colour classes implied by cannot-link) become
   big points with the distance d^(X, Y) = max_{p in X, q in Y} d(p, q).
2. Cannot-link pairs between big points are partitioned into disjoint cliques by a greedy
   clique cover; every big point in no clique is a singleton set.
3. For a threshold eta, centres are grown by the reverse-dominating-set loop: a clique Y
   whose auxiliary graph G(Y, C; eta) has no perfect matching has a Hall violator
   (Y', C' = N(Y')), found from a *maximum* matching (Hopcroft-Karp), and
   C <- (C \\ C') U Y'. A singleton with no centre within eta is added (the RDS ({y}, {})),
   farthest first. Each swap adds at least one centre; the run fails once |C| > k.
   Invariant (paper Lemma 7): the centres lie in pairwise different clusters of any
   feasible clustering of radius r with eta >= 2 r, so a run at eta >= 2 r* never fails.
4. Radius search. Exact (n <= ``exact_max_n``): binary ("median") search over the sorted
   set Psi of pairwise point distances, testing eta = 2 r (1 + 1e-9) for r in Psi. The
   optimum r* is in Psi, so a failure at r proves r* > r and the lower bound is the next
   element of Psi; the best radius is then <= 2 (1 + 1e-9) * lower_bound. Otherwise a
   bisection on eta to relative width ``rtol``; a failure at eta proves r* > eta / 2.
   In both, max_X diam(X) / 2 <= r* (an ML group lies in one ball of radius r*).
5. Final assignment (omitted by the paper): every cannot-link clique is matched into the
   centres by a bottleneck matching (smallest common threshold t <= eta, then a min-sum
   assignment within t), other big points go to the centre minimising their max distance,
   empty clusters are dropped and clusters are padded to min(k, s) by opening, at the
   big point farthest from its centre, a new cluster (which cannot break a constraint);
   unconstrained big points then move to it when closer. Cannot-link pairs left outside
   the clique cover that end up violated are repaired by a min-max assignment MILP
   (HiGHS) of the cannot-linked big points to the centres; for those pairs the factor-2
   radius guarantee does not hold, but the lower bound does (it only uses the cliques).
6. Of all successful runs the one of smallest radius is kept; optionally
   (``refine=True``) each of its clusters' centre is then replaced by the member of smallest
   eccentricity when that shrinks the cluster's radius; the labels do not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.spatial.distance import pdist

from pcsos.clock import Deadline
from pcsos.errors import InfeasibleError, InputError, check_seed, is_integer, is_real
from pcsos.kcenter.cover import clique_cover
from pcsos.kcenter.geometry import BigPoints
from pcsos.kcenter.rds import max_rds
from pcsos.milp import Milp, adapter
from pcsos.problem import Problem, make_instance

__all__ = ["KCenterResult", "solve", "solve_problem"]

# a candidate r is tested at eta = 2 r (1 + _MARGIN): floating-point rounding of
# d(p, q) <= d(p, c) + d(c, q) must not turn a guaranteed success into a failure, because a
# failure is what certifies the lower bound
_MARGIN = 1e-9
_CACHE_BYTES = 256 * 2**20


@dataclass
class KCenterResult:
    """Result of :func:`solve` (SciPy OptimizeResult-like).

    labels : (n,) cluster of every point, 0..n_clusters-1 (n_clusters <= k).
    centers : (n_clusters,) index of the data point that is the centre of each cluster.
    radius : max over points of the Euclidean distance to the centre of their cluster.
    lower_bound : certified lower bound on the optimal constrained k-center radius r*.
    status : 'solved' (the search finished: radius <= 2 (1 + tol) lower_bound unless
        ``repaired``), 'time_limit' / 'run_limit' (stopped by ``time_limit`` / ``max_runs``:
        feasible, a weaker certificate), or 'repair_failed' (the cannot-link repair found no
        feasible assignment in its time limit: ``labels`` then violate the pairs listed in
        ``stats["violated"]``).
    message : one line saying what is certified.
    stats : counters and timings (see :func:`solve`).
    """

    labels: np.ndarray
    centers: np.ndarray
    radius: float
    lower_bound: float
    status: str
    message: str
    stats: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """True when the labels satisfy every constraint (any status but 'repair_failed')."""
        return self.status != "repair_failed"

    @property
    def ratio(self) -> float:
        """radius / lower_bound (inf when the bound is 0): a certified approximation factor."""
        return self.radius / self.lower_bound if self.lower_bound > 0 else float("inf")

    def to_dict(self) -> dict:
        """A JSON-ready dict of the result."""
        return {"labels": self.labels.tolist(), "centers": self.centers.tolist(),
                "radius": self.radius, "lower_bound": self.lower_bound,
                "ratio": self.ratio if np.isfinite(self.ratio) else None,
                "status": self.status, "message": self.message, "stats": self.stats}


def _greedy_perfect(adj: np.ndarray) -> bool:
    """True when a greedy matching saturates every row (then no Hall violator exists)."""
    ny, nc = adj.shape
    if ny > nc:
        return False
    free = np.ones(nc, dtype=bool)
    for y in range(ny):
        row = adj[y] & free
        j = int(np.argmax(row))
        if not row[j]:
            return False
        free[j] = False
    return True


class _Engine:
    """The reverse-dominating-set loop (paper Alg. 1) at a given threshold."""

    def __init__(self, bp: BigPoints, k: int, cliques: list[np.ndarray]):
        self.bp = bp
        self.k = k
        self.cliques = cliques
        s = bp.s
        self.in_clique = np.zeros(s, dtype=bool)
        for Y in cliques:
            self.in_clique[Y] = True
        self.singles = np.nonzero(~self.in_clique)[0]
        if cliques:
            self.allm = np.concatenate(cliques)
            self.rc = np.repeat(np.arange(len(cliques)), [len(Y) for Y in cliques])
        else:
            self.allm = np.empty(0, dtype=np.int64)
            self.rc = np.empty(0, dtype=np.int64)
        self._cache: dict[int, np.ndarray] = {}
        self.swaps = 0
        self.columns = 0

    def col(self, g: int) -> np.ndarray:
        """Big-point distances of every group to group g (cached across thresholds)."""
        c = self._cache.get(g)
        if c is None:
            if (len(self._cache) + 1) * self.bp.s * 8 > _CACHE_BYTES:
                self._cache.clear()
            c = self.bp.column(g)
            self._cache[g] = c
            self.columns += 1
        return c

    def _stack(self, C: list[int]) -> np.ndarray:
        if not C:
            return np.empty((self.bp.s, 0))
        return np.column_stack([self.col(g) for g in C])

    def _deficient(self, cols: np.ndarray, eta: float) -> np.ndarray:
        """Cliques without a perfect matching into the centres: one Hopcroft-Karp call on the
        disjoint union of all auxiliary graphs (each clique gets its own copy of C)."""
        m = cols.shape[1]
        if m == 0:
            return np.arange(len(self.cliques))
        r, j = np.nonzero(cols[self.allm] <= eta)
        g = csr_matrix((np.ones(len(r), dtype=np.int8), (r, self.rc[r] * m + j)),
                       shape=(len(self.allm), len(self.cliques) * m))
        match = maximum_bipartite_matching(g, perm_type="column")
        return np.unique(self.rc[match < 0])

    def run(self, eta: float) -> tuple[list[int], np.ndarray] | None:
        """Centres (big-point ids) and their distance columns, or None when |C| > k."""
        C: list[int] = []
        cols = self._stack(C)
        while self.cliques:
            bad = self._deficient(cols, eta)
            if len(bad) == 0:
                break
            for t in bad:
                Y = self.cliques[t]
                adj = cols[Y] <= eta
                # an earlier swap of this pass may have fixed it; a greedy perfect matching
                # proves that cheaply (no Hall violator), else Hopcroft-Karp decides
                if _greedy_perfect(adj):
                    continue
                yp, cp = max_rds(adj)
                if len(yp) == 0:
                    continue
                keep = np.ones(len(C), dtype=bool)
                keep[cp] = False
                C = [c for c, kk in zip(C, keep) if kk] + [int(y) for y in Y[yp]]
                self.swaps += 1
                if len(C) > self.k:
                    return None
                cols = np.column_stack([cols[:, keep]] + [self.col(int(y))[:, None]
                                                          for y in Y[yp]])
        # singletons: adding centres only adds edges, so the cliques stay matchable
        sg = self.singles
        if len(sg):
            mind = cols[sg].min(axis=1) if C else np.full(len(sg), np.inf)
            added = []
            while True:
                j = int(np.argmax(mind))
                if mind[j] <= eta:
                    break
                g = int(sg[j])
                C.append(g)
                if len(C) > self.k:
                    return None
                c = self.col(g)
                added.append(c)
                np.minimum(mind, c[sg], out=mind)
            if added:
                cols = np.column_stack([cols] + added)
        return C, cols


def _bottleneck_assign(eng: _Engine, E: np.ndarray, eta: float, lab: np.ndarray) -> None:
    """Match every clique into the centres with the smallest common max distance t, then
    a min-sum assignment within t per clique (writes ``lab`` for clique members)."""
    if not eng.cliques:
        return
    m = E.shape[1]
    W = E[eng.allm]
    vals = np.unique(W[W <= eta])

    def perfect(t: float) -> bool:
        r, j = np.nonzero(W <= t)
        g = csr_matrix((np.ones(len(r), dtype=np.int8), (r, eng.rc[r] * m + j)),
                       shape=(len(eng.allm), len(eng.cliques) * m))
        return bool(np.all(maximum_bipartite_matching(g, perm_type="column") >= 0))

    lo, hi = -1, len(vals) - 1
    if hi < 0 or not perfect(vals[hi]):  # cannot happen after a successful run
        vals = np.unique(W)
        lo, hi = -1, len(vals) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if perfect(vals[mid]):
            hi = mid
        else:
            lo = mid
    t = vals[hi]
    for Y in eng.cliques:
        sub = E[Y]
        r, c = linear_sum_assignment(np.where(sub <= t, sub, np.inf))
        lab[Y[r]] = c


def _repair(E: np.ndarray, lab: np.ndarray, scl: np.ndarray, time_limit: float) -> str:
    """Min-max MILP assignment of the cannot-linked big points to the current centres
    (objective t + 1e-4 * mean assigned distance, so t is within 1e-4 max E of optimal).

    Returns "optimal", "feasible" (time limit with a solution), "infeasible" (proved) or
    "none" (time limit without a solution). Writes ``lab`` on success.
    """
    V = np.unique(scl.ravel())
    m, q = len(V), E.shape[1]
    pos = np.full(len(lab), -1, dtype=np.int64)
    pos[V] = np.arange(m)
    nx = m * q
    rows, cols, vals, lb, ub = [], [], [], [], []
    r0 = 0
    # each cannot-linked big point in exactly one cluster
    rows.append(np.repeat(np.arange(m), q))
    cols.append(np.arange(nx))
    vals.append(np.ones(nx))
    lb.append(np.ones(m))
    ub.append(np.ones(m))
    r0 += m
    # x_ah + x_bh <= 1 for every pair and cluster
    a, b = pos[scl[:, 0]], pos[scl[:, 1]]
    pr = r0 + np.arange(len(scl) * q)
    h = np.tile(np.arange(q), len(scl))
    rows += [pr, pr]
    cols += [np.repeat(a, q) * q + h, np.repeat(b, q) * q + h]
    vals += [np.ones(len(pr)), np.ones(len(pr))]
    lb.append(np.full(len(pr), -np.inf))
    ub.append(np.ones(len(pr)))
    r0 += len(pr)
    # sum_h E_ih x_ih - t <= 0
    rows += [np.repeat(r0 + np.arange(m), q), r0 + np.arange(m)]
    cols += [np.arange(nx), np.full(m, nx)]
    vals += [E[V].ravel(), -np.ones(m)]
    lb.append(np.full(m, -np.inf))
    ub.append(np.zeros(m))
    r0 += m
    A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(r0, nx + 1)).tocsc()
    # min t, ties broken towards near centres: the tie-break term is at most
    # 1e-4 * max(E), so t is optimal to within that
    c = np.empty(nx + 1)
    c[:nx] = 1e-4 * E[V].ravel() / max(m, 1)
    c[nx] = 1.0
    integrality = np.ones(nx + 1)
    integrality[nx] = 0
    ubv = np.ones(nx + 1)
    ubv[nx] = np.inf
    A.sum_duplicates()
    A.sort_indices()
    problem = Milp(c, A, np.concatenate(lb), np.concatenate(ub), np.zeros(nx + 1), ubv,
                   integrality.astype(bool), name="k-center assignment MILP")
    res = adapter("highs").solve(problem, time_limit=float(time_limit))
    if res.x is None:
        return "infeasible" if res.status == "infeasible" else "none"
    lab[V] = np.argmax(res.x[:nx].reshape(m, q), axis=1)
    return res.status


class _Assigner:
    """Final assignment (spec §8) for one centre set: labels, centres and radius."""

    def __init__(self, eng: _Engine, k: int, scl: np.ndarray, uncovered: np.ndarray,
                 original_pair, milp_time_limit: float, clock: Deadline | None = None):
        self.eng = eng
        self.clock = clock
        self.bp = eng.bp
        self.k = k
        self.scl = scl
        self.uncovered = uncovered
        self.original_pair = original_pair
        self.milp_time_limit = milp_time_limit
        self.free = np.ones(self.bp.s, dtype=bool)  # in no cannot-link pair at all
        self.free[scl.ravel()] = False

    def _pad(self, lab: np.ndarray, E: np.ndarray, Pd: np.ndarray, centres: list[int]):
        """Drop empty clusters, then open clusters until there are min(k, s) of them."""
        bp = self.bp
        used = np.unique(lab)
        remap = np.full(E.shape[1], -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        lab = remap[lab]
        E, Pd = E[:, used], Pd[:, used]
        centres = [centres[u] for u in used]
        target = min(self.k, bp.s)
        while len(centres) < target:
            counts = np.bincount(lab, minlength=len(centres))
            own = E[np.arange(bp.s), lab]
            # a new centre must be a big point that is no centre yet and whose cluster keeps
            # a member; when none exists (possible only when centres sit in clusters other
            # than their own), stop with fewer than k clusters, which k-center allows
            ok = counts[lab] >= 2
            ok[np.asarray(centres, dtype=np.int64)] = False
            if not ok.any():
                break
            i = int(np.argmax(np.where(ok, own, -1.0)))
            pd_i = bp.to_points(bp.rep[[i]])
            e_i = bp.group_max(pd_i)[:, 0]
            h = len(centres)
            centres.append(i)
            E = np.column_stack([E, e_i])
            Pd = np.column_stack([Pd, pd_i])
            own = E[np.arange(bp.s), lab]
            lab[i] = h
            move = self.free & (e_i < own)
            move[i] = False
            left = np.bincount(lab[~move], minlength=h + 1)
            move &= left[lab] > 0  # never empty a cluster
            lab[move] = h
        return lab, E, Pd, centres

    def __call__(self, C: list[int], eta: float):
        """Labels of the big points, centre point per cluster, point distances, repaired."""
        bp, eng = self.bp, self.eng
        reps = bp.rep[np.asarray(C, dtype=np.int64)]
        Pd = bp.to_points(reps)
        E = bp.group_max(Pd)
        lab = np.full(bp.s, -1, dtype=np.int64)
        _bottleneck_assign(eng, E, eta, lab)
        other = ~eng.in_clique
        if other.any():
            lab[other] = np.argmin(E[other], axis=1)
        centres = list(C)
        lab, E, Pd, centres = self._pad(lab, E, Pd, centres)
        repaired, violated = "no", np.empty((0, 2), dtype=np.int64)
        if len(self.uncovered):
            bad = lab[self.uncovered[:, 0]] == lab[self.uncovered[:, 1]]
            if bad.any():
                # within the run's own limit too: a fixed 60 s ran a 5 s kcenter 62 s
                limit = self.milp_time_limit
                if self.clock is not None:  # remaining(): inf without a limit
                    limit = min(limit, self.clock.remaining())
                repaired = _repair(E, lab, self.scl, limit)
                if repaired == "infeasible" and len(centres) == min(self.k, bp.s):
                    pairs = [self.original_pair(int(a), int(b)) for a, b in self.scl[:20]]
                    raise InfeasibleError(
                        f"the cannot-link graph cannot be coloured with k = {self.k} "
                        f"colours (proved by the assignment MILP)", reason="not_k_colourable",
                        pairs=pairs)
                if repaired in ("optimal", "feasible"):
                    lab, E, Pd, centres = self._pad(lab, E, Pd, centres)
                viol = lab[self.scl[:, 0]] == lab[self.scl[:, 1]]
                violated = self.scl[viol]
        return lab, centres, Pd, repaired, violated


def _labels_and_radius(bp: BigPoints, lab: np.ndarray, centres: list[int], Pd: np.ndarray,
                       refine: bool) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Point labels, centre point per cluster, radius (optionally refined centres) and the
    radius before refinement."""
    plab = lab[bp.labels]
    cpts = bp.rep[np.asarray(centres, dtype=np.int64)].copy()
    dist = Pd[np.arange(bp.n), plab]
    rad_h = np.zeros(len(centres))
    np.maximum.at(rad_h, plab, dist)
    raw = float(rad_h.max()) if len(rad_h) else 0.0
    if refine:
        order = np.argsort(plab, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(plab, minlength=len(centres)))[:-1])
        for h, mem in enumerate(groups):
            if len(mem) < 2:
                continue
            ecc = bp.max_dist(bp.X[mem], mem)
            j = int(np.argmin(ecc))
            if ecc[j] < rad_h[h]:
                rad_h[h] = ecc[j]
                cpts[h] = mem[j]
    return plab, cpts, float(rad_h.max()) if len(rad_h) else 0.0, raw


def solve_problem(problem: Problem, *, seed=None, time_limit: float | Deadline | None = None,
                  max_runs: int = 200, search: str = "auto", exact_max_n: int = 2000,
                  rtol: float = 1e-4, refine: bool = True,
                  milp_time_limit: float = 60.0) -> KCenterResult:
    """Constrained k-center on a super-point :class:`~pcsos.problem.Problem` (its ML groups,
    including branching merges, and its super-point cannot-link pairs). See :func:`solve`."""
    clock = Deadline.checked(time_limit).within()  # its elapsed() counts this solve
    if search not in ("auto", "exact", "bisect"):
        raise InputError(f"search must be 'auto', 'exact' or 'bisect', got {search!r}",
                         source="search")
    if not (is_real(rtol) and 0 < rtol < 1):
        raise InputError(f"rtol must lie in (0, 1), got {rtol!r}", source="rtol")
    for name, value in (("max_runs", max_runs), ("exact_max_n", exact_max_n)):
        if not (is_integer(value) and value >= 1):
            raise InputError(f"{name} must be a whole number >= 1, got {value!r}",
                             source=name)
    if not (is_real(milp_time_limit) and milp_time_limit > 0):
        raise InputError(f"milp_time_limit must be a number of seconds > 0, got "
                         f"{milp_time_limit!r}", source="milp_time_limit")
    if not isinstance(refine, (bool, np.bool_)):
        raise InputError(f"refine must be True or False, got {refine!r}", source="refine")
    inst = problem.instance
    k = problem.k
    bp = BigPoints(inst.X, problem.point_labels)
    scl = np.asarray(problem.cl, dtype=np.int64).reshape(-1, 2)
    cliques, uncovered = clique_cover(bp.s, scl)
    if cliques and len(cliques[0]) > k:
        Y = cliques[0][: k + 1]
        pairs = [problem.original_pair(int(a), int(b))
                 for t, a in enumerate(Y) for b in Y[t + 1:]]
        raise InfeasibleError(f"{k + 1} points are pairwise cannot-linked but k = {k}",
                              reason="cl_clique", pairs=pairs)
    if seed is not None:
        # the loop may visit the cliques in any order; the seed shuffles equal sizes
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(cliques))
        cliques = [cliques[t] for t in sorted(perm, key=lambda t: -len(cliques[t]))]
    eng = _Engine(bp, k, cliques)
    assign = _Assigner(eng, k, scl, uncovered, problem.original_pair, milp_time_limit, clock)
    maxdiam = float(bp.diam.max()) if bp.s else 0.0
    mode = search if search != "auto" else ("exact" if bp.n <= exact_max_n else "bisect")

    best = None  # (radius, eta, plab, cpts, repaired, violated)
    runs = succ = 0
    limit = None  # what stopped the search, if anything did

    def attempt(eta: float) -> bool:
        nonlocal best, runs, succ
        runs += 1
        out = eng.run(eta)
        if out is None:
            return False
        succ += 1
        lab, centres, Pd, repaired, violated = assign(out[0], eta)
        # rank by the algorithm's own radius; only the kept solution is refined (the
        # refinement costs sum_h |cluster_h|^2 d distance evaluations)
        plab, cpts, rad, _ = _labels_and_radius(bp, lab, centres, Pd, False)
        key = (len(violated), rad)
        if best is None or key < (len(best[5]), best[0]):
            best = (rad, eta, lab, centres, repaired, violated, Pd)
        return True

    def limit_reached() -> str | None:
        return ("run_limit" if runs >= max_runs else
                "time_limit" if clock.expired() else None)

    if mode == "exact":
        psi = np.unique(np.concatenate([[0.0], pdist(bp.X)]))
        psi = psi[2 * psi * (1 + _MARGIN) >= maxdiam]  # smaller r fail for certain
        lo, hi = -1, len(psi) - 1
        if not attempt(2 * psi[hi] * (1 + _MARGIN)):
            raise AssertionError("the k-center loop failed at the largest threshold")
        eta_fail = None
        while hi - lo > 1:
            limit = limit_reached()
            if limit is not None:
                break
            mid = (lo + hi) // 2
            if attempt(2 * psi[mid] * (1 + _MARGIN)):
                hi = mid
            else:
                lo, eta_fail = mid, 2 * psi[mid] * (1 + _MARGIN)
        # r* is a pairwise distance and r* > psi[lo]; r* >= maxdiam / 2 >= psi[0]-ish
        lower = float(max(psi[lo + 1], maxdiam / 2))
        eta_ok = 2 * psi[hi] * (1 + _MARGIN)
    else:
        x0 = bp.X[0] if bp.n else np.zeros(bp.X.shape[1])
        far = float(np.sqrt(((bp.X - x0) ** 2).sum(axis=1)).max()) if bp.n else 0.0
        hi_eta = 2 * far * (1 + _MARGIN)  # every big-point distance is below it: success
        lo_eta = maxdiam  # any eta < maxdiam fails for certain
        if not attempt(hi_eta):
            raise AssertionError("the k-center loop failed at the largest threshold")
        eta_fail = None
        while hi_eta - lo_eta > rtol * hi_eta:
            limit = limit_reached()
            if limit is not None:
                break
            mid = 0.5 * (lo_eta + hi_eta)
            if attempt(mid):
                hi_eta = mid
            else:
                lo_eta = eta_fail = mid
        # a failure at eta proves eta < 2 r*, up to the rounding of the distances
        lower = float(lo_eta / (2 * (1 + _MARGIN)))
        eta_ok = hi_eta
    _, eta_best, lab, centres, repaired, violated, Pd = best
    plab, cpts, rad, raw = _labels_and_radius(bp, lab, centres, Pd, refine)
    if len(violated):
        status = "repair_failed"
        pairs = [problem.original_pair(int(a), int(b)) for a, b in violated[:5]]
        message = (f"cannot-link repair found no feasible assignment in "
                   f"{milp_time_limit:g} s; violated pairs include {pairs}")
    else:
        status = limit or "solved"
        guarantee = ("radius <= 2 r* holds for the clique-covered pairs only (repair used)"
                     if repaired != "no" else "radius/lower_bound certifies the ratio")
        how = {"run_limit": "stopped at the run limit", "time_limit": "stopped at the time "
               "limit"}.get(status, "search finished")
        message = (f"{how}: "
                   f"radius {rad:.6g}, certified r* >= {lower:.6g}; {guarantee}")
    stats = {
        "search": mode, "runs": runs, "successful_runs": succ, "swaps": eng.swaps,
        "distance_columns": eng.columns, "eta_success": float(eta_ok),
        "eta_fail": None if eta_fail is None else float(eta_fail),
        "eta_of_best": float(eta_best), "max_ml_diameter": maxdiam,
        "n_big_points": int(bp.s), "n_cliques": sum(len(Y) > 1 for Y in cliques),
        "max_clique": int(max((len(Y) for Y in cliques), default=0)),
        "uncovered_cl_pairs": int(len(uncovered)), "cover_exact": bool(len(uncovered) == 0),
        "repaired": repaired, "violated": [problem.original_pair(int(a), int(b))
                                           for a, b in violated],
        "radius_unrefined": raw, "n_clusters": int(len(cpts)), "seconds": clock.elapsed(),
    }
    return KCenterResult(plab, cpts, rad, lower, status, message, stats)


def solve(X, k: int, ml=(), cl=(), *, seed=None, time_limit: float | None = None,
          max_runs: int = 200, search: str = "auto", exact_max_n: int = 2000,
          rtol: float = 1e-4, refine: bool = True,
          milp_time_limit: float = 60.0) -> KCenterResult:
    """Constrained k-center (paper 004): a 2-approximation with a certified lower bound.

    Parameters
    ----------
    X : (n, d) data; k : number of centres (at most k clusters, padded to min(k, s)).
    ml, cl : must-link / cannot-link pairs (0-based indices).
    seed : shuffles the order of equal-size cannot-link cliques (the result is
        deterministic for a given seed, and for ``seed=None``).
    time_limit, max_runs : stop the radius search after this many seconds / threshold runs
        (status 'time_limit' / 'run_limit'; the best radius and the bound proved so far are
        returned).
    search : "exact" (binary search over all pairwise distances; lower bound = the smallest
        distance above the last failure), "bisect" (continuous, to relative width ``rtol``;
        lower bound = eta_fail / 2) or "auto" (exact when n <= ``exact_max_n``).
    refine : move each centre to the cluster member of least eccentricity when smaller.
    milp_time_limit : seconds for the MILP that repairs cannot-link pairs outside the
        clique cover (never past ``time_limit``).

    Returns
    -------
    KCenterResult with labels, centers (point indices), radius, lower_bound, status,
    message and stats (runs, swaps, thresholds, clique cover, repair, seconds).

    Raises
    ------
    InputError for malformed input; InfeasibleError when a cannot-link pair joins one
    must-link group (reason "ml_cl_conflict"), a cannot-link clique has more than k points
    ("cl_clique"), (k = 2) the cannot-link graph has an odd cycle ("odd_cycle"), or the
    repair MILP proves it is not k-colourable ("not_k_colourable").
    """
    check_seed(seed)
    inst = make_instance(X, k, ml, cl)
    return solve_problem(Problem.from_instance(inst), seed=seed, time_limit=time_limit,
                         max_runs=max_runs, search=search, exact_max_n=exact_max_n,
                         rtol=rtol, refine=refine, milp_time_limit=milp_time_limit)
