"""S-MDEClust (paper 001): memetic differential evolution with an exact-assignment local search.

A population of ``P`` feasible solutions, each refined by the local search (the
assignment/update loop of :mod:`pcsos.heuristics.base`, started from k random data points).
Every generation, for every member s: three other members s1, s2, s3 are drawn; the
centres of s1 and s2 are aligned to those of s3 by the Hungarian method on squared
distances; the child centres are ``psi1 + F (psi2 - psi3)``, ``F ~ U[F_min, F_max]``; they
are assigned (exactly, or greedily by Alg. 2); optionally mutated (Alg. 3); refined by the
local search; and the child replaces s when strictly better. The search stops after
``N_max`` consecutive offspring that do not improve the best solution, when the
population's total pairwise objective spread falls below ``tol * |f_best|``, after
``max_generations`` generations or at the deadline.

Differences from the paper, on purpose:

* the collapse test is relative (``tol * |f_best|``, default tol = 1e-4) where the paper
  uses the absolute 1e-4, which depends on the scale of the data;
* the default ``N_max`` is the paper's 500 (its code uses 5000);
* the work is done on super-points (must-link groups), which is what Alg. 2's groups are;
  a random "data point" for the initial centres and the mutation is an original point,
  drawn uniformly, whose super-point mean (initial centres) or coordinates (mutation) are
  used;
* the greedy assignment visits the must-link groups in a random order;
* the local search's exact assignment starts from the child's greedy assignment when that
  breaks no pair, and is capped at ``assign_time_limit`` seconds (see :func:`smdeclust`).

As the authors' code (and not stated in the paper), the mutation variants mutate a child
with probability 1 / g in generation g = 1, 2, ...
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from pcsos.errors import InputError
from pcsos.heuristics.assignment import AssignmentEngine, centres_of, squared_costs
from pcsos.heuristics.base import (
    Deadline,
    HeuristicResult,
    assign_update_loop,
    start_centres,
)

__all__ = ["smdeclust", "greedy_assign", "VARIANTS"]

#: variant name -> (mutation, assignment after crossover)
VARIANTS = {
    "S-MDE": (False, "exact"),
    "SM-MDE": (True, "exact"),
    "SG-MDE": (False, "greedy"),
    "SMG-MDE": (True, "greedy"),
}


def greedy_assign(costs: np.ndarray, cl_adj: list[np.ndarray], order: np.ndarray,
                  forbidden: int | None = None) -> np.ndarray:
    """Alg. 2 (greedy assignment step) on super-points.

    Each super-point, in ``order``, goes to its cheapest cluster among those holding none
    of its CL partners yet (all clusters when there is none: the result may violate CL
    pairs). ``forbidden`` is a cluster no super-point may take (the mutation's removed
    centre). Super-points without CL partners simply take their cheapest cluster.
    """
    s, k = costs.shape
    c = costs.copy()
    if forbidden is not None:
        c[:, forbidden] = np.inf
    labels = np.argmin(c, axis=1)
    constrained = np.array([len(a) > 0 for a in cl_adj]) if s else np.zeros(0, bool)
    if not constrained.any():
        return labels
    labels[constrained] = -1
    for i in order:
        if not constrained[i]:
            continue
        taken = labels[cl_adj[i]]
        ci = c[i].copy()
        ci[taken[taken >= 0]] = np.inf
        if np.all(np.isinf(ci)):  # no CL-free cluster: relax feasibility (paper, line 6)
            ci = c[i]
        labels[i] = int(np.argmin(ci))
    return labels


def _cl_adjacency(s: int, cl: np.ndarray) -> list[np.ndarray]:
    adj: list[list[int]] = [[] for _ in range(s)]
    for a, b in cl:
        adj[a].append(int(b))
        adj[b].append(int(a))
    return [np.asarray(x, dtype=np.int64) for x in adj]


def smdeclust(problem, Z, rng: np.random.Generator, deadline: Deadline, *,
              variant: str = "SG-MDE", P: int = 20, N_max: int = 500,
              max_generations: int | None = None, F_min: float = 0.5, F_max: float = 0.8,
              alpha: float = 0.5, tol: float = 1e-4, tol_ls: float = 1e-6,
              max_iter_ls: int = 100, backend: str = "highs", init_labels=None,
              assign_time_limit: float | None = 10.0, **_ignored) -> HeuristicResult:
    """S-MDEClust on a node's super-point problem (see module doc; Z is not used).

    Options (paper names): ``variant`` one of S-MDE, SM-MDE, SG-MDE (default), SMG-MDE;
    ``P`` population size (>= 4); ``N_max`` consecutive non-improving offspring before
    stopping; ``max_generations``; ``F_min``/``F_max`` the crossover factor range;
    ``alpha`` the mutation's distance bias; ``tol`` the relative population collapse
    threshold; ``tol_ls``/``max_iter_ls`` the local search's stop; ``backend`` the
    assignment MILP backend; ``init_labels`` a clustering of the original points whose
    local search is the first member of the initial population; ``assign_time_limit`` the
    seconds at most of one exact assignment (None: no cap), after which the local search
    goes on from the best assignment found (the greedy one when the solver has none
    better). On the 2-D sets of the paper with 10 000 pairs among 1 000 points and k = 20,
    one exact assignment (a min-cost 20-colouring of a graph with 8 000 edges) can take
    minutes; elsewhere an assignment takes milliseconds and the cap never binds.
    """
    if _ignored:
        raise InputError(f"unknown s-mdeclust option(s): {', '.join(sorted(_ignored))}")
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}",
                         source="variant")
    if int(P) < 4:
        raise InputError(f"P must be at least 4 (crossover needs 3 others), got {P}",
                         source="P")
    if not 0 <= F_min <= F_max:
        raise InputError(f"need 0 <= F_min <= F_max, got {F_min}, {F_max}", source="F")
    if not 0 <= alpha <= 1:
        raise InputError(f"alpha must lie in [0, 1], got {alpha}", source="alpha")
    P = int(P)
    mutation, assign_kind = VARIANTS[variant]
    k, s = problem.k, problem.s
    engine = AssignmentEngine.from_problem(problem, backend=backend,
                                           call_time_limit=assign_time_limit)
    stats = {"iterations": 0, "ilp_solves": 0, "local_searches": 0, "generations": 0,
             "offspring": 0, "improvements": 0, "mutations": 0, "variant": variant,
             "assignment_method": engine.method, "stop": ""}
    milp = engine.method != "matching"

    def local_search(centres, warm=None):
        r = assign_update_loop(problem, engine, centres, deadline, tol=tol_ls,
                               max_iter=max_iter_ls, warm=warm)
        stats["local_searches"] += 1
        stats["iterations"] += r.iterations
        stats["ilp_solves"] += r.solves if milp else 0
        return r

    def result(best_labels, stop):
        stats["stop"] = stop
        # how the exact assignments were answered (assignment engine, module doc)
        stats["assignments_decomposed"] = engine.decomposed_calls
        stats["assignments_repaired"] = engine.repaired_calls
        if best_labels is None:
            return HeuristicResult(status="no_solution", stats=stats,
                                   message=f"no feasible member before stop ({stop})")
        return HeuristicResult(status="found", super_labels=best_labels, stats=stats)

    point_w = problem.e / problem.e.sum()
    cl_adj = _cl_adjacency(s, problem.cl)
    by_degree = np.argsort([-len(a) for a in cl_adj], kind="stable")
    # --- initial population: local search from k random data points each
    pop_labels: list[np.ndarray] = []
    pop_f: list[float] = []
    if s < k:
        return HeuristicResult(status="infeasible", stats=stats,
                               message=f"{s} super-points cannot fill k = {k} clusters")
    first = None if init_labels is None else start_centres(problem, init_labels)
    while len(pop_labels) < P:
        if deadline.expired():
            break
        if first is not None:
            r, first = local_search(first), None
        else:
            idx = rng.choice(s, size=k, replace=False, p=point_w)
            C0 = problem.centroids[idx]
            # the greedy assignment, when it breaks no pair, is the exact one's first
            # incumbent; most cannot-link partners first (Welsh-Powell), which breaks fewer
            # pairs, and no draw, which would shift the seeded stream
            warm = greedy_assign(squared_costs(problem.centroids, problem.e, C0), cl_adj,
                                 by_degree)
            r = local_search(C0, warm=warm)
        if r.status == "infeasible":
            return HeuristicResult(status="infeasible", stats=stats,
                                   message="the assignment MILP is infeasible: no "
                                           "clustering satisfies the cannot-link pairs")
        if r.labels is not None:
            pop_labels.append(r.labels)
            pop_f.append(r.sse)
            deadline.note(stage="population", members=len(pop_labels), of=P,
                          best=min(pop_f))
    if len(pop_labels) < P:
        best = pop_labels[int(np.argmin(pop_f))] if pop_labels else None
        return result(best, "time_limit (initial population incomplete)")

    pop_c = [centres_of(lab, problem.W, problem.e, k) for lab in pop_labels]
    f = np.asarray(pop_f)
    best_i = int(np.argmin(f))
    best_labels, best_f = pop_labels[best_i], float(f[best_i])
    engine_m = None  # the (k-1)-cluster engine for the exact mutation, built on first use
    Xc = problem.instance.X - problem.instance.X.mean(axis=0)
    pl = problem.point_labels
    n_it = 0
    gen = 0
    stop = ""
    while True:
        if max_generations is not None and gen >= max_generations:
            stop = "max_generations"
            break
        gen += 1
        stats["generations"] = gen
        deadline.note(stage="generation", generation=gen, best=best_f,
                      since_improvement=n_it)
        for si in range(P):
            if deadline.expired():
                stop = "time_limit"
                break
            others = [j for j in range(P) if j != si]
            s1, s2, s3 = rng.choice(others, size=3, replace=False)
            psi3 = pop_c[s3]
            psi1 = _align(pop_c[s1], psi3)
            psi2 = _align(pop_c[s2], psi3)
            F = rng.uniform(F_min, F_max)
            psi = psi1 + F * (psi2 - psi3)
            costs = squared_costs(problem.centroids, problem.e, psi)
            phi = _assign(assign_kind, engine, costs, cl_adj, rng, deadline)
            stats["ilp_solves"] += int(assign_kind == "exact" and milp)
            # as the authors' code: mutation with probability 1 / generation, so always in
            # the first generation and ever more rarely as the population converges
            if mutation and rng.random() < 1.0 / gen:
                if engine_m is None and k > 1:
                    engine_m = AssignmentEngine.from_problem(problem, k=k - 1,
                                                             backend=backend,
                                                             call_time_limit=assign_time_limit)
                psi, phi = _mutate(psi, costs, assign_kind, engine, engine_m, cl_adj, Xc,
                                   pl, alpha, problem, rng, deadline, stats, milp)
                stats["mutations"] += 1
            start = centres_of(phi, problem.W, problem.e, k, fallback=psi)
            r = local_search(start, warm=phi)
            stats["offspring"] += 1
            if r.labels is None:
                n_it += 1
            else:
                if r.sse < f[si]:
                    pop_labels[si], f[si] = r.labels, r.sse
                    pop_c[si] = centres_of(r.labels, problem.W, problem.e, k)
                if r.sse < best_f:
                    best_labels, best_f = r.labels, r.sse
                    stats["improvements"] += 1
                    n_it = 0
                else:
                    n_it += 1
            if n_it >= N_max:
                stop = "N_max"
                break
        if stop:
            break
        # total pairwise spread sum_{a<b} |f_a - f_b|, from the sorted values in O(P log P)
        fs = np.sort(f)
        spread = float(np.sum((2 * np.arange(P) - P + 1) * fs))
        if spread <= tol * abs(best_f):
            stop = "collapsed"
            break
    stats["best_objective_super"] = best_f
    return result(best_labels, stop)


def _align(psi: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Rows of ``psi`` permuted to match ``ref`` (Hungarian method on squared distances)."""
    D = ((ref[:, None, :] - psi[None, :, :]) ** 2).sum(axis=2)
    _, cols = linear_sum_assignment(D)
    return psi[cols]


def _assign(kind, engine, costs, cl_adj, rng, deadline, forbidden=None):
    """Labels for a child: exact (the MILP; greedy when it fails) or greedy (Alg. 2)."""
    if kind == "exact":
        a = engine.solve(costs=costs, time_limit=deadline.remaining())
        if a.labels is not None:
            return a.labels
    return greedy_assign(costs, cl_adj, rng.permutation(len(costs)), forbidden)


def _mutate(psi, costs, kind, engine, engine_m, cl_adj, Xc, pl, alpha, problem, rng,
            deadline, stats, milp):
    """Alg. 3: drop a random centre, reassign to the others, re-seed it by roulette wheel.

    As the paper's text ("each dataset point is re-assigned to its closest center among the
    K - 1 remaining ones"), every super-point is re-assigned, not only the removed centre's
    members: with cannot-link pairs a member of another cluster may have to move to make
    room. Returns the mutated centres and their assignment (same kind as after crossover).
    """
    k = len(psi)
    cbar = int(rng.integers(k))
    keep = np.array([h for h in range(k) if h != cbar])
    a = 0.0
    lab = None
    if kind == "exact":
        if engine_m is not None:
            r = engine_m.solve(costs=costs[:, keep], time_limit=deadline.remaining())
            stats["ilp_solves"] += int(milp)
            if r.labels is not None:
                lab = keep[r.labels]
                a = alpha
        # a failed exact assignment leaves no distances: uniform choice (alpha = 0)
    else:
        lab = greedy_assign(costs, cl_adj, rng.permutation(len(costs)), forbidden=cbar)
        a = alpha
    n = len(Xc)
    p = np.full(n, 1.0 / n)
    if lab is not None and a > 0:
        d = np.linalg.norm(Xc - psi[lab[pl]], axis=1)  # unsquared, as in the paper
        tot = d.sum()
        if tot > 0:
            p = (1 - a) / n + a * d / tot
    ibar = int(rng.choice(n, p=p / p.sum()))
    psi = psi.copy()
    psi[cbar] = Xc[ibar]
    costs = squared_costs(problem.centroids, problem.e, psi)
    phi = _assign(kind, engine, costs, cl_adj, rng, deadline)
    stats["ilp_solves"] += int(kind == "exact" and milp)
    return psi, phi
