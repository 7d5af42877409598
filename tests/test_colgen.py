"""The set-partitioning LP bound by column generation (pcsos.bounds.colgen): its pricing and
its bound against enumeration on tiny instances, and against the Peng-Wei SDP."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import brute_force

from pcsos.bounds import SDPModel, solve_sdp
from pcsos.bounds.colgen import colgen_bound, engine, pricing
from pcsos.bounds.colgen.pricing import PricingData, price_exact, price_heuristic
from pcsos.bounds.settings import BoundSettings
from pcsos.clock import Deadline
from pcsos.errors import InfeasibleError, InputError
from pcsos.problem import Problem, make_instance


def _draw(rng, *, pairs=True, weights=False, sizes=False):
    """A random tiny instance: (X, k, ml, cl, kw) with kw for make_instance."""
    n = int(rng.integers(4, 10))
    k = int(rng.integers(2, n))
    d = int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10) + rng.uniform(-50, 50)
    ml, cl = [], []
    if pairs:
        for _ in range(int(rng.integers(0, 3))):
            i, j = rng.choice(n, 2, replace=False)
            (ml if rng.random() < 0.4 else cl).append((int(i), int(j)))
    kw = {}
    if weights:
        kw["weights"] = rng.uniform(0.2, 3.0, size=n)
    if sizes == "exact":
        kw["sizes"] = _composition(rng, n, k)
    elif sizes:
        kw["size_min"] = 1
        kw["size_max"] = int(math.ceil(n / k)) + int(rng.integers(0, 2))
    return X, k, ml, cl, kw


def _composition(rng, n: int, k: int) -> list[int]:
    """k positive sizes summing to n, of two values or more where n allows it."""
    for _ in range(50):
        cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
        sizes = np.diff(np.concatenate([[0], cuts, [n]])).tolist()
        if len(set(sizes)) > 1:
            break
    return sizes


def _problem(X, k, ml, cl, kw):
    try:
        return Problem.from_instance(make_instance(X, k, ml, cl, **kw))
    except InfeasibleError:
        return None


def _with_optimum(rng, *, weights):
    """A random tiny instance with more super-points than clusters, its optimum by
    enumeration and the optimum's super-point labels: (problem, optimum, labels), or None."""
    X, k, ml, cl, kw = _draw(rng, weights=weights)
    prob = _problem(X, k, ml, cl, kw)
    opt, lab = brute_force(X, k, ml, cl, weights=kw.get("weights"))
    if prob is None or not math.isfinite(opt) or prob.s <= k:
        return None
    return prob, opt, np.asarray(lab)[np.unique(prob.point_labels, return_index=True)[1]]


def _cases(seed: int, trials: int, *, weighted_first: bool = False):
    """(trial, problem, optimum, labels) of :func:`_with_optimum` for each of ``trials``
    draws that has one, with point weights every other trial."""
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        case = _with_optimum(rng, weights=(trial % 2 == 0) == weighted_first)
        if case is not None:
            yield (trial, *case)


@pytest.mark.parametrize("case,method", [
    ("plain", "simplex"), ("pairs", "simplex"), ("weights", "simplex"), ("sizes", "simplex"),
    ("exact", "simplex"), ("pairs", "ipm"), ("exact", "ipm")])
def test_the_colgen_bound_never_exceeds_the_optimum(case, method):
    rng = np.random.default_rng({"plain": 1, "pairs": 2, "weights": 3, "sizes": 4,
                                 "exact": 5}[case])
    checked = 0
    for trial in range(12):
        X, k, ml, cl, kw = _draw(rng, pairs=case != "plain", weights=case == "weights",
                                 sizes={"sizes": True, "exact": "exact"}.get(case, False))
        opt, _ = brute_force(X, k, ml, cl, weights=kw.get("weights"),
                             size_min=kw.get("size_min"), size_max=kw.get("size_max"),
                             sizes=kw.get("sizes"))
        prob = _problem(X, k, ml, cl, kw)
        if prob is None or not math.isfinite(opt) or prob.s < k:
            continue
        res = colgen_bound(prob, seed=trial, master_method=method)
        assert math.isfinite(res.lower_bound)
        assert res.lower_bound <= opt + 1e-12 * abs(opt), (trial, res.lower_bound, opt)
        if res.status == "solved":
            # the Lagrangian bound is the LP's value within the pricing tolerance
            assert res.lower_bound >= res.lp_value - 1e-6 * abs(res.lp_value)
        checked += 1
    assert checked >= 6


def test_the_lp_bound_is_at_least_the_peng_wei_sdp_bound():
    """Any LP solution is a feasible Peng-Wei matrix of the same value, so the LP's value is
    at least the SDP's; the safe bounds keep that within their tolerances."""
    rng = np.random.default_rng(7)
    stronger = 0
    for trial in range(10):
        X, k, ml, cl, kw = _draw(rng)
        prob = _problem(X, k, ml, cl, kw)
        if prob is None or prob.s <= k:
            continue
        res = colgen_bound(prob, seed=trial)
        sdp = solve_sdp(SDPModel.from_problem(prob), tol=1e-8)
        if res.status == "solved":
            assert res.lower_bound >= sdp.sdp_value - 1e-5 * abs(sdp.sdp_value), trial
            stronger += res.lower_bound > sdp.lower_bound + 1e-6 * abs(sdp.lower_bound)
    assert stronger >= 1  # on some draws the LP is strictly stronger


def _least_reduced_cost(X, w, groups, cl, pi, count=None):
    """min over every non-empty set of super-points obeying the cannot-link pairs (and
    holding a number of points in the range ``count``) of cost - pi(set), by enumeration
    from the original points (independent of the pricing)."""
    s = len(groups)
    best = math.inf
    for r in range(1, s + 1):
        for c in itertools.combinations(range(s), r):
            cs = set(c)
            if any(a in cs and b in cs for a, b in cl):
                continue
            pts = np.concatenate([groups[i] for i in c])
            if count is not None and not count[0] <= len(pts) <= count[1]:
                continue
            mu = np.average(X[pts], axis=0, weights=w[pts])
            cost = float(np.sum(w[pts] * np.sum((X[pts] - mu) ** 2, axis=1)))
            best = min(best, cost - float(np.sum(pi[list(c)])))
    return best


@pytest.mark.parametrize("crossing", [10, 1])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("circles_max_d", [3, 0])
def test_exact_pricing_bounds_the_least_reduced_cost_at_any_duals(seed, crossing,
                                                                   circles_max_d, monkeypatch):
    """The exact pricing's lower bound at random duals (the bound must hold at any pi, not
    only the master's) is at most the enumerated minimum, and close to it when complete;
    every column it returns has the reduced cost it claims and obeys the pairs. Both box
    bounds of the disks' search are checked: the exact one over subsets of the crossing
    circles, and (crossing 1) the one by a matching of the cannot-link pairs; and
    (circles_max_d 0) the search over the cluster's mean that prices from d = 4."""
    monkeypatch.setattr(pricing, "EXACT_CROSSING", crossing)
    monkeypatch.setattr(pricing, "CIRCLES_MAX_D", circles_max_d)
    rng = np.random.default_rng(100 + seed)
    X, k, ml, cl, kw = _draw(rng, weights=seed % 2 == 1)
    if seed >= 3:  # more cannot-link pairs, so that the matching has several to choose
        n = len(X)
        cl = cl + [tuple(int(v) for v in rng.choice(n, 2, replace=False)) for _ in range(4)]
    prob = _problem(X, k, ml, cl, kw)
    if prob is None:
        pytest.skip("an infeasible draw")
    data = PricingData.from_problem(prob)
    w = prob.point_weights
    groups = [np.flatnonzero(prob.point_labels == i) for i in range(prob.s)]
    scale = float(np.sum(data.q)) / prob.s
    for _ in range(4):
        pi = rng.uniform(-0.5, 3.0, size=prob.s) * scale
        exact = _least_reduced_cost(X, w, groups, prob.cl.tolist(), pi)
        # the bound by the points' least values alone (crossing 1) closes a box only as
        # the box shrinks: at this tolerance it needs more boxes than the check does
        res = price_exact(data, pi, tol=1e-9 * scale,
                          max_boxes=200000 if crossing > 1 else 20000)
        assert res.lower <= min(0.0, exact) + 1e-9 * scale
        if res.complete:
            assert res.lower >= min(0.0, exact) - 1e-6 * scale
        for rc, col in res.columns + price_heuristic(data, pi, data.m):
            idx = np.asarray(col)
            assert data.allowed(idx)
            assert rc == pytest.approx(data.cost(idx) - pi[idx].sum(), abs=1e-9 * scale)
            assert rc >= exact - 1e-9 * scale


def _pair_graph_data(rng, n: int, d: int) -> PricingData | None:
    """Pricing data of n normal points in d dimensions with random cannot-link pairs (up to
    2n: paths, triangles, cycles) and k = n - 1; None where the pairs leave no clustering."""
    X = rng.normal(size=(n, d))
    cl = sorted({tuple(sorted(int(v) for v in rng.choice(n, 2, replace=False)))
                 for _ in range(int(rng.integers(1, 2 * n)))})
    prob = _problem(X, n - 1, [], cl, {})
    return None if prob is None else PricingData.from_problem(prob)


def _point_box(data: PricingData, pi: np.ndarray, y: np.ndarray):
    """The box bound at the single point ``y``, every circle counted as crossing (so the
    cannot-link pairs go to the independent-set search): (bound, members)."""
    cand = np.arange(data.s)
    work = np.full(data.s, -1, dtype=np.int64)
    lb, _, mem = pricing.box_lower(data.m, data.e, data.within - pi, data.mag, pi, cand,
                                   y, y, data.cl_ptr, data.cl_idx, 0, work)
    return lb, mem


def _least_obeying(g: np.ndarray, cl) -> float:
    """min over the sets S that obey the pairs of sum_{i in S} min(0, g_i), enumerated."""
    best = 0.0
    for r in range(1, len(g) + 1):
        for S in itertools.combinations(range(len(g)), r):
            if not any(a in S and b in S for a, b in cl):
                best = min(best, float(np.sum(np.minimum(g[list(S)], 0.0))))
    return best


def test_a_box_bound_takes_the_best_set_that_obeys_chains_of_pairs(monkeypatch):
    """At a point box the bound is the least sum of the negative terms over the sets that
    obey the cannot-link pairs, also where a point has two partners (paths, triangles,
    cycles), where a matching of the pairs alone gives less; the set it returns obeys them.
    With the search's budget spent it falls back to the matching: valid, weaker, no set."""
    from pcsos._kernels import _pricing

    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(25):
        data = _pair_graph_data(rng, int(rng.integers(3, 13)), 2)
        if data is None:
            continue
        y = rng.normal(size=2) * 0.5
        g_want = -rng.uniform(0.1, 2.0, size=data.s)
        pi = data.e * np.sum((data.m - y) ** 2, axis=1) + data.within - g_want
        g = data.e * np.sum((data.m - y) ** 2, axis=1) + data.within - pi
        want = _least_obeying(g, [tuple(p) for p in data.cl.tolist()])
        lb, mem = _point_box(data, pi, y)
        assert want - 1e-9 <= lb <= want + 1e-12
        assert mem is not None and data.allowed(mem)
        assert float(np.sum(g[mem])) == pytest.approx(want, abs=1e-9)
        checked += 1
    assert checked >= 15
    # a path a - b - c: {a, c} is best (-2), a matching counts b for the pair (a, b) (-2.5)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    data = PricingData.from_problem(Problem.from_instance(
        make_instance(X, 3, cl=[(0, 1), (1, 2)])))
    y = np.array([1.0, 0.0])
    pi = data.e * np.sum((data.m - y) ** 2, axis=1) + data.within + np.array([1.0, 1.5, 1.0])
    assert _point_box(data, pi, y)[0] == pytest.approx(-2.0, abs=1e-9)
    monkeypatch.setattr(_pricing, "MWIS_BUDGET", 0)
    lb, mem = _point_box(data, pi, y)
    assert lb == pytest.approx(-2.5, abs=1e-9) and mem is None


def test_a_box_bound_with_pairs_is_below_the_least_over_the_box():
    """Over random boxes (of every size, in one to three dimensions), the box bound with
    cannot-link pairs (the points' least values, and at the box's corners) is at most the
    least sum of g_i over the box among the sets that obey the pairs, enumerated (for each
    set its convex quadratic is least at its mean clipped to the box)."""
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(40):
        d = int(rng.integers(1, 4))
        data = _pair_graph_data(rng, int(rng.integers(3, 9)), d)
        if data is None:
            continue
        pi = data.within + data.e * rng.uniform(0.2, 3.0, size=data.s)
        centre = rng.normal(size=d) * 0.5
        half = rng.uniform(1e-4, 1.0, size=d) * 10.0 ** -rng.integers(0, 3)
        lo, hi = centre - half, centre + half
        pairs = [tuple(p) for p in data.cl.tolist()]
        want = 0.0
        for r in range(1, data.s + 1):
            for S in itertools.combinations(range(data.s), r):
                if any(a in S and b in S for a, b in pairs):
                    continue
                S = list(S)
                y = np.clip((data.e[S, None] * data.m[S]).sum(axis=0) / data.e[S].sum(),
                            lo, hi)
                val = float(np.sum(data.e[S] * np.sum((data.m[S] - y) ** 2, axis=1)
                                   + data.within[S] - pi[S]))
                want = min(want, val)
        work = np.full(data.s, -1, dtype=np.int64)
        lb, _, _ = pricing.box_lower(data.m, data.e, data.within - pi, data.mag, pi,
                                     np.arange(data.s), lo, hi, data.cl_ptr, data.cl_idx, 0,
                                     work)
        assert lb <= want + 1e-12 * (1.0 + abs(want))
        checked += 1
    assert checked >= 25


def _groups(s: int, cnt: np.ndarray, cl=()):
    """The sized pricing's knapsack groups of ``s`` items with cannot-link pairs ``cl``."""
    from pcsos.problem import cl_adjacency

    adj = cl_adjacency(s, np.asarray(cl, dtype=np.int64).reshape(-1, 2))
    ptr = np.zeros(s + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(a) for a in adj])
    idx = np.concatenate([np.zeros(0, dtype=np.int64), *adj]).astype(np.int64)
    return pricing.knapsack_groups(cnt, ptr, idx)


def test_the_knapsack_without_its_table_is_the_fractional_one_of_an_lp_solver():
    """Where the groups are too many for the table (dp_limit 0), the knapsack's value is the
    fractional knapsack's (scipy's LP) unless it is exact, and then no lower; its set, if
    any, meets the count range."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(21)
    fractional = 0
    for _ in range(120):
        s = int(rng.integers(1, 9))
        vals = rng.normal(size=s)
        cnt = rng.integers(1, 4, size=s)
        lo = int(rng.integers(1, cnt.sum() + 1))
        hi = int(rng.integers(lo, cnt.sum() + 1))
        val, exact, col = pricing.knapsack(vals, cnt, lo, hi, _groups(s, cnt), dp_limit=0)
        ref = linprog(vals, A_ub=np.vstack([cnt, -cnt]), b_ub=[hi, -lo], bounds=[(0, 1)] * s)
        if np.all(cnt == 1):
            assert exact  # unit items: the sorted prefix is integral
        if exact:  # unit items, or a range that binds nothing but non-emptiness
            assert val >= ref.fun - 1e-9
        else:
            fractional += 1
            assert val == pytest.approx(ref.fun, abs=1e-9)
        if col is not None:
            assert lo <= cnt[col].sum() <= hi
    assert fractional >= 30


def test_the_knapsack_is_the_enumerated_least_set_that_obeys_the_range_and_pairs():
    """knapsack's value is the least sum over the 0/1 sets of a count range that obey the
    cannot-link pairs (enumerated), with items of one point and of several, and its set
    meets the range and the pairs with that value; without the table, it is no larger."""
    rng = np.random.default_rng(22)
    for trial in range(400):
        s = int(rng.integers(1, 9))
        vals = rng.normal(size=s)
        cnt = np.ones(s, dtype=np.int64) if trial % 3 == 0 else rng.integers(1, 4, size=s)
        cl = ([tuple(int(x) for x in rng.choice(s, 2, replace=False))
               for _ in range(int(rng.integers(0, 5)))] if s > 1 and trial % 2 else [])
        lo = int(rng.integers(1, cnt.sum() + 2))
        hi = int(rng.integers(lo, cnt.sum() + 2))

        def obeys(c, cl=cl):
            return not any(a in c and b in c for a, b in cl)

        best = min((vals[list(c)].sum() for r in range(1, s + 1)
                    for c in itertools.combinations(range(s), r)
                    if lo <= cnt[list(c)].sum() <= hi and obeys(c)), default=math.inf)
        groups = _groups(s, cnt, cl)
        val, exact, col = pricing.knapsack(vals, cnt, lo, hi, groups)
        assert exact
        assert pricing.knapsack(vals, cnt, lo, hi, groups, dp_limit=0)[0] <= best + 1e-12
        if not math.isfinite(best):
            assert val == math.inf and col is None
            continue
        assert val == pytest.approx(best, abs=1e-12)
        assert lo <= cnt[col].sum() <= hi and obeys(set(col.tolist()))
        assert vals[col].sum() == pytest.approx(val, abs=1e-12)


def test_the_selection_from_a_guessed_pivot_sums_the_t_smallest_whatever_the_guess():
    """sum_smallest (the sized search's selection, its first pivot a neighbouring box's
    threshold) sums the t smallest and returns the t-th, leaving them in front of a
    permutation of the values, for guesses below, above, between and at the values, with
    ties, and with none."""
    from pcsos._kernels._pricing import sum_smallest

    rng = np.random.default_rng(23)
    for trial in range(2000):
        n = int(rng.integers(2, 40))
        v = (rng.integers(-5, 6, size=n).astype(np.float64) if trial % 2
             else rng.normal(size=n))
        t = int(rng.integers(1, n))
        ordered = np.sort(v)
        for hint in (math.nan, -math.inf, -1e9, 1e9, math.inf, float(rng.choice(v)),
                     float(rng.normal()), float(ordered[t - 1]), float(ordered[t])):
            w = v.copy()
            total, kth = sum_smallest(w, t, hint)
            assert total == pytest.approx(ordered[:t].sum(), abs=1e-12)
            assert kth == ordered[t - 1]
            # the table's window reads on past the t smallest: w stays a permutation of
            # v with them in front
            assert np.array_equal(np.sort(w), ordered)
            assert np.array_equal(np.sort(w[:t]), ordered[:t])
    with pytest.raises(ValueError):
        sum_smallest(np.zeros(3), 3)


def _pricing_draw(rng, seed: int, sizes):
    """A drawn node for the pricing tests (odd seeds weigh the points): its problem, its
    pricing data, its points' weights, each super-point's points, and a scale of its duals;
    skips an infeasible draw."""
    X, k, ml, cl, kw = _draw(rng, weights=seed % 2 == 1, sizes=sizes)
    prob = _problem(X, k, ml, cl, kw)
    if prob is None:
        pytest.skip("an infeasible draw")
    data = PricingData.from_problem(prob)
    groups = [np.flatnonzero(prob.point_labels == i) for i in range(prob.s)]
    scale = float(np.sum(data.q)) / prob.s + 1e-12
    return X, k, prob, data, prob.point_weights, groups, scale


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_sized_pricing_bounds_the_least_reduced_cost_of_its_class(seed, threads):
    """price_sized's bound at random duals is at most the enumerated least reduced cost over
    the sets of a count range that obey the cannot-link pairs, close to it when complete,
    and every column it returns has the reduced cost it claims and obeys the pairs and
    sizes. Odd seeds weigh the points; must-link pairs make super-points of several
    points. In three threads (slabs of the box sharing their best) the same holds."""
    rng = np.random.default_rng(300 + seed)
    X, k, prob, data, w, groups, scale = _pricing_draw(rng, seed, "exact")
    assert data.sized and sum(n for _, _, n in data.classes) == k
    n = len(X)
    for _ in range(4):
        lo = int(rng.integers(1, n + 1))
        hi = int(rng.integers(lo, n + 1))
        pi = rng.uniform(-0.5, 3.0, size=prob.s) * scale
        exact = _least_reduced_cost(X, w, groups, prob.cl, pi, (lo, hi))
        res = pricing.price_sized(data, pi, lo, hi, tol=1e-9 * scale, threads=threads)
        if not math.isfinite(exact):  # no set of super-points has such a count
            continue
        assert res.lower <= exact + 1e-9 * scale
        if res.complete:
            assert res.lower >= exact - 1e-6 * scale
        for rc, col in res.columns:
            idx = np.asarray(col)
            assert data.allowed(idx)
            assert rc == pytest.approx(data.cost(idx) - pi[idx].sum(), abs=1e-9 * scale)


@pytest.mark.parametrize("sizes", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_a_pricing_told_what_is_enough_proves_that_much_or_finds_the_minimum(seed, sizes):
    """price_bound with ``enough`` (what a node's bound needs to reach its target), against
    the least reduced cost m enumerated (min(0, m) without sizes, the search over the
    disks; with a size range, the search over the mean): where k m is above enough, its
    term is at least enough and at most k m, with no column, and it says it sufficed (not
    complete); where k m is below, it is complete where the pricing without it is, with the
    same term to the tolerance and columns of the reduced cost they claim."""
    rng = np.random.default_rng(700 + seed)
    X, k, prob, data, w, groups, scale = _pricing_draw(rng, seed, sizes)
    assert data.sized == sizes and len(data.classes) <= 1
    count = data.classes[0][:2] if sizes else None
    tol = 1e-9 * scale
    for _ in range(4):
        pi = rng.uniform(-0.5, 3.0, size=prob.s) * scale
        exact = _least_reduced_cost(X, w, groups, prob.cl, pi, count)
        m = exact if sizes else min(0.0, exact)
        full = pricing.price_bound(data, pi, k, tol=tol)
        for delta in (0.3 * scale, 1e-3 * scale):
            enough = k * (m - delta)
            res = pricing.price_bound(data, pi, k, tol=tol, enough=enough)
            assert res.sufficed and not res.complete and res.columns == []
            assert enough <= sum(res.term) <= k * (m + 1e-9 * scale)
        res = pricing.price_bound(data, pi, k, tol=tol, enough=k * (m + 0.3 * scale))
        assert not res.sufficed and res.complete == full.complete
        assert sum(res.term) <= k * (m + 1e-9 * scale)
        if res.complete:
            assert sum(res.term) == pytest.approx(sum(full.term), abs=3 * k * tol)
        for rc, col in res.columns:
            idx = np.asarray(col)
            assert rc == pytest.approx(data.cost(idx) - pi[idx].sum(), abs=1e-9 * scale)


@pytest.mark.parametrize("seed", range(6))
def test_a_sized_pricing_told_where_to_stop_ends_at_a_cluster_below_it(seed):
    """price_bound with ``stop_below`` (one size class), against the least reduced cost m
    enumerated: asked to stop above m, it either ends complete or says it stopped, with a
    column of reduced cost below the value asked, and its term still at most k m; asked to
    stop below m, it is the pricing without it (complete alike, the same term)."""
    rng = np.random.default_rng(900 + seed)
    X, k, prob, data, w, groups, scale = _pricing_draw(rng, seed, True)
    assert data.sized and len(data.classes) == 1
    tol = 1e-9 * scale
    stops = 0
    for _ in range(6):
        pi = rng.uniform(-0.5, 3.0, size=prob.s) * scale
        m = _least_reduced_cost(X, w, groups, prob.cl, pi, data.classes[0][:2])
        full = pricing.price_bound(data, pi, k, tol=tol)
        for stop in (m + 0.5 * scale, m + 1e-3 * scale):
            res = pricing.price_bound(data, pi, k, tol=tol, stop_below=stop)
            assert sum(res.term) <= k * (m + 1e-9 * scale)
            assert res.stopped != res.complete
            if res.stopped:
                stops += 1
                assert min(rc for rc, _ in res.columns) < stop
            for rc, col in res.columns:
                idx = np.asarray(col)
                assert data.allowed(idx)
                assert rc == pytest.approx(data.cost(idx) - pi[idx].sum(), abs=1e-9 * scale)
        res = pricing.price_bound(data, pi, k, tol=tol, stop_below=m - 1e-3 * scale)
        assert not res.stopped and res.complete == full.complete
        if res.complete:
            assert sum(res.term) == pytest.approx(sum(full.term), abs=3 * k * tol)
    assert stops > 0


@pytest.mark.parametrize("seed", range(4))
def test_with_exact_sizes_the_bound_is_the_lp_with_a_row_per_size_value(seed):
    """With exact sizes the master has one row per size value: its bound matches the LP
    over every column of an allowed size (enumerated, solved by scipy), stays below the
    enumerated optimum, and is above the LP with the size range alone on some draws."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(400 + seed)
    stronger = 0
    for trial in range(4):
        X, k, ml, cl, kw = _draw(rng, pairs=False, weights=seed % 2 == 1, sizes="exact")
        prob = _problem(X, k, ml, cl, kw)
        sizes = kw["sizes"]
        values = sorted(set(sizes))
        cols, costs, cls = [], [], []
        w = prob.point_weights
        for r in range(1, len(X) + 1):
            for c in itertools.combinations(range(len(X)), r):
                if r in values:
                    mu = np.average(X[list(c)], axis=0, weights=w[list(c)])
                    cols.append(c)
                    costs.append(float(np.sum(w[list(c)] * np.sum((X[list(c)] - mu) ** 2,
                                                                   axis=1))))
                    cls.append(values.index(r))
        A = np.zeros((len(X) + len(values), len(cols)))
        for j, (c, h) in enumerate(zip(cols, cls)):
            A[list(c), j] = 1
            A[len(X) + h, j] = 1
        rhs = np.concatenate([np.ones(len(X)), [sizes.count(v) for v in values]])
        lp = linprog(costs, A_eq=A, b_eq=rhs, bounds=(0, None)).fun
        opt, _ = brute_force(X, k, weights=kw.get("weights"), sizes=sizes)
        res = colgen_bound(prob, seed=trial)
        assert res.lower_bound <= lp + 1e-9 * abs(lp) <= opt + 2e-9 * abs(opt)
        assert res.status == "solved"
        assert res.lower_bound >= lp - 1e-6 * abs(lp)
        ranged = colgen_bound(Problem.from_instance(make_instance(
            X, k, weights=kw.get("weights"), size_min=min(sizes), size_max=max(sizes))))
        stronger += res.lower_bound > ranged.lower_bound + 1e-6 * abs(lp)
    assert stronger >= 1


def test_a_box_that_no_duals_fit_is_freed():
    """A box whose floor puts a column's duals above its cost leaves the master unbounded:
    it is freed, and the master solves."""
    from pcsos.bounds.colgen.master import Master

    m = Master(2, 1, big=10.0)
    m.add([(0, 1)], [1.0])
    m.set_box(np.array([100.0, 100.0]), 0.1)
    alpha, sigma, lam, value = m.solve()
    assert not m.boxed and value == pytest.approx(1.0) and lam[0] == pytest.approx(1.0)


def test_a_big_raised_past_highs_infinite_cost_still_counts():
    """set_big past what HiGHS reads as a cost (1e20 is infinite) takes every cost to a new
    unit: the artificial columns cost what they were given, not the old big or inf."""
    from pcsos.bounds.colgen.master import Master

    m = Master(2, 1, big=2.0 ** 49)  # costs as they are
    m.add([(0,)], [5.0])  # point 1 has no column: the artificials stay in the solution
    m.set_box(np.array([1.0, 1.0]), 0.5)
    m.set_box(None)
    _, _, lam, value = m.solve()
    assert lam[0] == pytest.approx(1.0) and value == pytest.approx(5.0 + 2.0 ** 49)
    for big in (1e21, 1e30, 2.0 ** 49):  # and back: the unit follows big
        m.set_big(big)
        pi, _, lam, value = m.solve()
        assert lam[0] == pytest.approx(1.0) and value == pytest.approx(5.0 + big, rel=1e-12)
        assert pi[1] == pytest.approx(big)  # the uncovered point's dual: the artificial's
    m.set_big(1e-3)  # now three artificials cost less than the column
    _, _, lam, value = m.solve()
    assert lam[0] == 0.0 and value == pytest.approx(3e-3, rel=1e-12)


def test_k_from_two_to_n_minus_one():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(7, 2))
    for k in range(2, 7):
        opt, _ = brute_force(X, k)
        res = colgen_bound(Problem.from_instance(make_instance(X, k)))
        assert res.status == "solved"
        assert opt * (1 - 1e-6) - 1e-9 <= res.lower_bound <= opt + 1e-12


def test_a_time_limit_still_gives_a_valid_bound():
    rng = np.random.default_rng(5)
    # one blob in 5 clusters: its LP takes many iterations, so 3 polls stop it early
    prob = Problem.from_instance(make_instance(rng.normal(size=(60, 2)), 5))
    calls = []

    def stop():  # stops after a few polls: the run ends early, its bound stays valid
        calls.append(1)
        return len(calls) > 3

    res = colgen_bound(prob, time_limit=Deadline(stop=stop))
    full = colgen_bound(prob)
    assert full.status == "solved" and full.iterations > res.iterations
    assert res.status == "time_limit"
    assert res.lower_bound <= full.lp_value * (1 + 1e-12)
    assert math.isfinite(res.lower_bound)


def test_an_exact_pricing_cut_short_by_its_budget_gets_twice_the_budget_next(monkeypatch):
    """The budget grows after every search it cuts short, not only after those that found
    no column: a search cut short proves a weaker bound, and the dual box centres on it."""
    rng = np.random.default_rng(8)
    X = np.vstack([rng.normal(c, 0.6, size=(20, 2)) for c in ((0, 0), (3, 0), (0, 3), (3, 3))])
    prob = Problem.from_instance(make_instance(X, 4))
    calls = []
    price_bound = engine.price_bound

    def record(data, pi, k, **kw):
        pr = price_bound(data, pi, k, **kw)
        calls.append((kw["max_boxes"], pr.boxes, pr.complete))
        return pr

    monkeypatch.setattr(engine, "price_bound", record)
    monkeypatch.setattr(engine, "FIRST_BOXES", 2)
    res = colgen_bound(prob)
    assert res.status == "solved"
    cut = [j for j, (budget, boxes, complete) in enumerate(calls[:-1])
           if not complete and boxes >= budget]
    assert cut
    for j in cut:
        assert calls[j + 1][0] == min(2 * calls[j][0], engine.MAX_BOXES)
    assert all(b1 >= b0 for (b0, _, _), (b1, _, _) in zip(calls, calls[1:]))


def test_the_cannot_link_repair_keeps_the_most_negative_ends():
    """The compiled repair against the rule written out: members in order of g_i(y), each
    kept unless a kept partner came first."""
    from pcsos._kernels._pricing import repair

    rng = np.random.default_rng(7)
    for _ in range(50):
        X = rng.normal(size=(30, 2))
        cl = sorted({tuple(sorted(map(int, rng.choice(30, 2, replace=False))))
                     for _ in range(25)})
        data = PricingData.from_problem(Problem.from_instance(make_instance(X, 3, cl=cl)))
        pi, y = rng.uniform(0, 3, size=data.s), rng.normal(size=2)
        col = np.sort(rng.choice(data.s, size=15, replace=False)).astype(np.int64)
        work = np.full(data.s, -1, dtype=np.int64)
        got = repair(data.m, data.e, data.within - pi, col, y, data.cl_ptr, data.cl_idx, work)
        g = data.e[col] * ((data.m[col] - y) ** 2).sum(axis=1) + data.within[col] - pi[col]
        pairs = set(map(tuple, data.cl.tolist()))
        kept: list[int] = []
        for i in col[np.argsort(g, kind="stable")]:
            if not any(tuple(sorted((int(i), j))) in pairs for j in kept):
                kept.append(int(i))
        assert got.tolist() == sorted(kept)
        assert np.all(work == -1)


def test_each_better_bound_is_reported_as_it_is_proven():
    """A caller that stops waiting (a tree's time limit) keeps the last bound reported: it
    must be the run's bound, and the reports must rise."""
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal(c, 0.5, size=(12, 2)) for c in ((0, 0), (3, 0), (0, 3), (3, 3))])
    seen = []
    res = colgen_bound(Problem.from_instance(make_instance(X, 4)),
                       progress=lambda it, bound: seen.append(bound))
    assert res.status == "solved" and len(seen) >= 1
    assert all(a < b for a, b in zip(seen, seen[1:]))
    assert seen[-1] == res.lower_bound


def test_the_tree_with_the_colgen_engine_finds_the_optimum():
    """The whole search with every node bounded by the LP (branching on the pairs its
    solution splits) agrees with enumeration, and its certificate holds: on random draws
    (the LP closes most roots), and on five points whose LP over every column (enumerated,
    solved by scipy) is 25 % below the optimum, where the search must branch."""
    from scipy.optimize import linprog

    import pcsos

    X = np.array([[1.8, 8.6], [4.8, 1.8], [6.7, 2.7], [5.3, 2.8], [5.2, 6.3]])
    cols = [c for r in (1, 2) for c in itertools.combinations(range(5), r)]
    A = np.zeros((6, len(cols)))
    for j, c in enumerate(cols):
        A[list(c), j] = A[5, j] = 1
    costs = [float(np.sum((X[list(c)] - X[list(c)].mean(axis=0)) ** 2)) for c in cols]
    lp = linprog(costs, A_eq=A, b_eq=np.r_[np.ones(5), 3], bounds=(0, None)).fun
    opt, _ = brute_force(X, 3, size_max=2)
    assert lp < 0.9 * opt
    res = pcsos.solve(X, 3, size_max=2, workers=1, seed=0, root_heuristic=None,
                      bound_settings={"engine": "colgen"})
    assert res.status == "optimal" and res.nodes > 1
    assert res.objective == pytest.approx(opt, rel=1e-9)
    assert lp * (1 - 1e-6) <= res.root_lower_bound <= res.lower_bound <= opt * (1 + 1e-12)

    rng = np.random.default_rng(21)
    solved = 0
    for trial in range(30):
        X, k, ml, cl, kw = _draw(rng, weights=trial % 3 == 0, sizes=trial % 3 == 1)
        opt, _ = brute_force(X, k, ml, cl, weights=kw.get("weights"),
                             size_max=kw.get("size_max"))
        if not math.isfinite(opt):
            continue
        res = pcsos.solve(X, k, ml, cl, sample_weight=kw.get("weights"), workers=1, seed=0,
                          size_max=kw.get("size_max"), bound_settings={"engine": "colgen"},
                          root_heuristic=None)
        assert res.status == "optimal", trial
        assert res.objective == pytest.approx(opt, rel=1e-9, abs=1e-12), trial
        assert res.lower_bound <= opt + 1e-12 * abs(opt), trial
        assert all(row.get("engine") == "colgen" for row in res.log if "sdp_bound" in row)
        solved += 1
    assert solved >= 15


def test_auto_solves_exact_sizes_in_the_plane_with_the_lp():
    """Exact sizes of several values in d <= 2 take the LP under 'auto' (a row per size
    value), and the search agrees with enumeration, with must-link pairs and weights
    (cannot-link pairs, many per point on these tiny draws, would take the SDP)."""
    import pcsos

    rng = np.random.default_rng(23)
    solved = 0
    for trial in range(8):
        X, k, ml, _, kw = _draw(rng, weights=trial % 2 == 1, sizes="exact")
        X, cl = X[:, :2], []
        opt, _ = brute_force(X, k, ml, cl, weights=kw.get("weights"), sizes=kw["sizes"])
        if not math.isfinite(opt) or len(set(kw["sizes"])) < 2:
            continue
        res = pcsos.solve(X, k, ml, cl, sample_weight=kw.get("weights"), sizes=kw["sizes"],
                          workers=1, seed=0)
        assert res.status == "optimal", trial
        assert res.objective == pytest.approx(opt, rel=1e-9, abs=1e-12), trial
        assert res.lower_bound <= opt + 1e-12 * abs(opt), trial
        engines = {row["engine"] for row in res.log if "engine" in row}
        assert engines <= {"colgen"}, trial  # none where the root closes without a bound
        solved += engines == {"colgen"}
    assert solved >= 3


def test_the_cli_bounds_and_solves_with_the_lp(tmp_path, capsys):
    """``pcsos bound --method colgen`` prints a safe bound at most the optimum, and
    ``pcsos solve --bound colgen`` certifies the optimum and says which engine bounded."""
    import json

    from pcsos.cli import main

    rng = np.random.default_rng(9)
    X = np.vstack([rng.normal(c, 0.4, size=(4, 2)) for c in ((0, 0), (4, 0), (0, 4))])
    opt, _ = brute_force(X, 3, cl=[(0, 1)])
    data, cons = tmp_path / "d.txt", tmp_path / "c.txt"
    data.write_text("12 2\n" + "\n".join(f"{float(a)!r} {float(b)!r}" for a, b in X) + "\n")
    cons.write_text("CL 0 1\n")
    out = tmp_path / "b.json"
    assert main(["bound", str(data), "-k", "3", "-c", str(cons), "--method", "colgen",
                 "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["method"] == "colgen" and rep["lower_bound"] <= opt + 1e-12 * opt
    assert rep["profile"]["exact_pricings"] == len(rep["history"]) >= 1
    # the master's columns, those of its last solve, and those its solution weighs (a
    # clustering into 3: 3 at least)
    assert rep["master_columns"] == rep["profile"]["master_columns"] >= rep["columns"]
    assert rep["columns"] >= rep["solution_columns"] >= 3
    # the pricing schedule is a bound option, checked where the user gives it
    assert main(["bound", str(data), "-k", "3", "--method", "colgen",
                 "--bound-option", "exact_every=0"]) == 2
    assert "exact_every must be a positive integer" in capsys.readouterr().err
    log = tmp_path / "gap.log"
    assert main(["solve", str(data), "-k", "3", "-c", str(cons), "--bound", "colgen",
                 "--workers", "1", "--log", str(log)]) == 0
    assert "BOUND_ENGINE: colgen" in log.read_text()
    with pytest.raises(SystemExit) as exc:  # argparse names the choices
        main(["solve", str(data), "-k", "3", "--bound", "lp"])
    assert exc.value.code == 2 and "choose from 'auto', 'sdp', 'colgen'" in capsys.readouterr().err


def test_the_column_mip_finds_the_best_clustering_of_its_columns():
    """Over every allowed cluster as a column, the MIP's clustering is the optimum."""
    from pcsos.bounds.colgen import ColGenResult, column_mip

    rng = np.random.default_rng(31)
    for _ in range(5):
        X, k, ml, cl, kw = _draw(rng)
        prob = _problem(X, k, ml, cl, kw)
        if prob is None:
            continue
        opt, _ = brute_force(X, k, ml, cl)
        data = PricingData.from_problem(prob)
        cols = [c for r in range(1, prob.s + 1) for c in itertools.combinations(range(prob.s), r)
                if data.allowed(np.asarray(c))]
        res = ColGenResult(0.0, 0.0, "solved", cols, np.zeros(len(cols)), np.zeros((1, 1)),
                           None, None, 0, 0.0, "", costs=[data.cost(np.asarray(c))
                                                         for c in cols])
        lab = column_mip(res, prob)
        assert lab is not None and prob.satisfies(lab)
        assert prob.instance.objective(prob.to_points(lab)) == pytest.approx(opt, rel=1e-9)


def test_children_inherit_the_columns_their_pair_allows():
    """A must-link child keeps the parent's columns that hold both ends or neither, merged;
    a cannot-link child keeps them all (its master drops those holding both ends)."""
    from pcsos.bounds.colgen import inherit_columns

    rng = np.random.default_rng(41)
    X = np.vstack([rng.normal(c, 0.4, size=(6, 2)) for c in ((0, 0), (3, 0), (0, 3))])
    prob = Problem.from_instance(make_instance(X, 3))
    res = colgen_bound(prob)
    a, b = 0, 7
    child = prob.merge(a, b)
    kept = inherit_columns(res, child.parent_map, child.s, limit=10**6).columns()
    expect = {tuple(sorted(set(child.parent_map[list(c)].tolist()))) for c in res.columns
              if (a in c) == (b in c)}
    assert set(kept) == expect
    cl_child = prob.add_cl(a, b)
    assert set(inherit_columns(res, cl_child.parent_map, cl_child.s,
                               limit=10**6).columns()) == set(res.columns)
    # fewer: the LP solution's columns are always kept
    few = inherit_columns(res, cl_child.parent_map, cl_child.s, limit=0).columns()
    assert set(few) == {c for c, w in zip(res.columns, res.lam) if w > 1e-9}


def test_auto_takes_the_lp_for_many_clusters_in_few_dimensions():
    """'auto' (the default) bounds with the LP from AUTO_COLGEN_MIN_K clusters in at most
    AUTO_COLGEN_MAX_D dimensions and from AUTO_COLGEN_MIN_K_3D in 3, else with the SDP, and
    the log says which."""
    import pcsos
    from pcsos.bounds.settings import AUTO_COLGEN_MAX_D, AUTO_COLGEN_MIN_K, BoundSettings

    bs = BoundSettings()
    assert bs.engine == "auto"
    assert bs.engine_for(AUTO_COLGEN_MIN_K, AUTO_COLGEN_MAX_D) == "colgen"
    assert bs.engine_for(AUTO_COLGEN_MIN_K - 1, AUTO_COLGEN_MAX_D) == "sdp"
    assert bs.engine_for(AUTO_COLGEN_MIN_K, AUTO_COLGEN_MAX_D + 1) == "sdp"
    # in 3 dimensions from more clusters on, and never beyond
    from pcsos.bounds.settings import AUTO_COLGEN_MIN_K_3D

    assert AUTO_COLGEN_MIN_K_3D > AUTO_COLGEN_MIN_K and AUTO_COLGEN_MAX_D + 1 == 3
    assert bs.engine_for(AUTO_COLGEN_MIN_K_3D, 3) == "colgen"
    assert bs.engine_for(AUTO_COLGEN_MIN_K_3D - 1, 3) == "sdp"
    assert bs.engine_for(AUTO_COLGEN_MIN_K_3D, 3, cl_share=1.0) == "colgen"
    assert bs.engine_for(AUTO_COLGEN_MIN_K_3D, 3, cl_share=2.0) == "sdp"
    assert bs.engine_for(AUTO_COLGEN_MIN_K_3D, 4) == "sdp"
    assert bs.engine_for(2, 3, (5, 3)) == "sdp"
    assert BoundSettings.make(engine="sdp").engine_for(50, 1) == "sdp"
    # exact sizes of several values take the LP at any k in few dimensions
    assert bs.engine_for(2, AUTO_COLGEN_MAX_D, (5, 3)) == "colgen"
    assert bs.engine_for(2, AUTO_COLGEN_MAX_D, (4, 4)) == "sdp"
    assert bs.engine_for(2, AUTO_COLGEN_MAX_D + 1, (5, 3)) == "sdp"
    # many cannot-link pairs per point take the SDP (the LP's pricing cannot hold them)
    from pcsos.bounds.settings import AUTO_COLGEN_MAX_CL

    assert bs.engine_for(20, 2, cl_share=AUTO_COLGEN_MAX_CL) == "colgen"
    assert bs.engine_for(20, 2, cl_share=2 * AUTO_COLGEN_MAX_CL) == "sdp"
    assert bs.engine_for(3, 2, (5, 3), cl_share=0.01) == "sdp"  # exact sizes, with a pair
    # bounded cluster sizes take the LP at any k up to SIZED_COLGEN_MAX_D dimensions,
    # without cannot-link pairs; size bounds that bind nothing change nothing
    from pcsos.bounds.settings import SIZED_COLGEN_MAX_D

    assert bs.engine_for(2, SIZED_COLGEN_MAX_D, bounded=True) == "colgen"
    assert bs.engine_for(2, SIZED_COLGEN_MAX_D + 1, bounded=True) == "sdp"
    assert bs.engine_for(2, 4, bounded=True, cl_share=0.01) == "sdp"
    Y = np.random.default_rng(0).normal(size=(12, 5))
    for kw, expected in (({"size_min": 2}, "colgen"), ({"size_max": 6}, "colgen"),
                         ({"size_min": 1, "size_max": 10}, "sdp"), ({}, "sdp")):
        assert bs.engine_of(pcsos.make_instance(Y, 3, **kw)) == expected, kw
    rng = np.random.default_rng(3)
    k = AUTO_COLGEN_MIN_K
    X = np.vstack([rng.normal((3 * h, h % 2), 0.3, size=(5, AUTO_COLGEN_MAX_D))
                   for h in range(k)])
    for d, expected in ((AUTO_COLGEN_MAX_D, "colgen"), (AUTO_COLGEN_MAX_D + 1, "sdp")):
        Y = np.hstack([X] + [rng.normal(0, 0.3, size=(len(X), 1))] * (d - X.shape[1]))
        res = pcsos.solve(Y, k, workers=1, seed=0)
        assert res.status == "optimal"
        engines = {row["engine"] for row in res.log if "engine" in row}
        assert engines == {expected}, d


def test_constraint_aggregation_gives_the_same_lp_and_a_valid_bound():
    """With rows aggregated from a clustering, the LP solved is the same one (its value and
    bound match the run without aggregation) and the bound stays below the optimum; the
    groups split where the pricing's columns cut them."""
    from pcsos.bounds.colgen.aggregation import Aggregation

    agg = Aggregation(np.array([1.0, 2.0, 1.0, 1.0]), [5, 5, 7, 7])
    assert agg.rows([(0, 1), (0,), (0, 1, 2, 3)]) == [(0,), None, (0, 1)]
    assert np.allclose(agg.disaggregate(np.array([3.0, 2.0])), [1.0, 2.0, 1.0, 1.0])
    assert agg.split((0, 2)) and agg.n == 4 and not agg.split((0, 1, 2, 3))
    checked = split = 0
    for trial, prob, opt, labels in _cases(61, 12, weighted_first=True):
        # a clustering that obeys the node but is not the optimum's, at times
        if trial % 3 == 0:
            labels = np.arange(prob.s) % prob.k
            if not prob.satisfies(labels):
                continue
        res = colgen_bound(prob, labels=labels, aggregate=True, seed=trial)
        plain = colgen_bound(prob, seed=trial)
        assert res.lower_bound <= opt + 1e-12 * abs(opt), trial
        if res.status == plain.status == "solved":
            assert res.lp_value == pytest.approx(plain.lp_value, rel=1e-7), trial
            assert res.lower_bound >= res.lp_value - 1e-6 * abs(res.lp_value)
        checked += 1
        split += res.splits > 0
    assert checked >= 6 and split >= 1


def test_a_child_bounds_its_parents_duals_first_and_no_lower():
    """At the parent's duals summed over merged super-points, a child's first bound is at
    least the parent's (its clusters are some of the parent's), for both children."""
    from pcsos.bounds.colgen import inherit_columns

    rng = np.random.default_rng(43)
    X = np.vstack([rng.normal(c, 0.8, size=(6, 2)) for c in ((0, 0), (2, 0), (0, 2))])
    prob = Problem.from_instance(make_instance(X, 3))
    res = colgen_bound(prob)
    assert res.status == "solved"
    for child in (prob.merge(0, 9), prob.add_cl(0, 1)):
        start = inherit_columns(res, child.parent_map, child.s)
        assert start.duals is not None and start.duals.shape == (child.s,)
        sub = colgen_bound(child, columns=start.columns(), duals=start.duals,
                           upper_bound=res.lp_value)
        first = sub.history[0][3]
        # each exact pricing stops within its tolerance (PRICING_TOL of the scale) of the
        # least reduced cost, so two bounds at the same duals may differ by that much
        tol = 2 * engine.PRICING_TOL * max(res.lp_value, float(np.sum(
            PricingData.from_problem(prob).q)))
        assert first >= res.lower_bound - tol
        assert sub.lower_bound >= first


def test_a_master_below_the_target_stops_the_generation_to_branch():
    """branch_below: once the master is below it (so the LP is too) the engine stops with
    status 'branch' and a valid bound; below the LP's value it runs to the end."""
    rng = np.random.default_rng(47)
    X = rng.uniform(size=(12, 2))
    prob = Problem.from_instance(make_instance(X, 3))
    opt, _ = brute_force(X, 3)
    full = colgen_bound(prob)
    stop = colgen_bound(prob, branch_below=2 * opt)
    assert stop.status == "branch" and stop.lp_value < 2 * opt
    assert stop.lower_bound <= opt + 1e-12 * opt
    low = colgen_bound(prob, branch_below=0.5 * full.lower_bound)
    assert low.status == "solved"


def test_the_box_holds_the_masters_duals_and_frees_them_again():
    """Master.set_box keeps every row's dual within delta of the centre; set_box(None) gives
    back the restricted LP (its value and duals as before the box)."""
    from pcsos.bounds.colgen.master import Master

    rng = np.random.default_rng(53)
    X = rng.uniform(size=(9, 2))
    data = PricingData.from_problem(Problem.from_instance(make_instance(X, 3)))
    cols = [tuple(c) for c in itertools.chain.from_iterable(
        itertools.combinations(range(9), r) for r in (1, 2, 3))]
    master = Master(9, 3, big=10.0 * float(np.sum(data.q)))
    master.add(cols, [data.cost(np.asarray(c)) for c in cols])
    pi0, sigma0, _, value0 = master.solve()
    centre = np.full(9, float(np.mean(pi0))) + rng.normal(scale=0.01, size=9)
    delta = 0.2 * float(np.std(pi0)) + 1e-3
    master.set_box(centre, delta)
    pi, _, _, value = master.solve()
    assert np.all(np.abs(pi - centre) <= delta * (1 + 1e-9) + 1e-9)
    # the box relaxes the master (more columns), so its value can only fall
    assert value <= value0 + 1e-9 * abs(value0)
    master.set_box(None)
    _, _, _, value1 = master.solve()
    assert value1 == pytest.approx(value0, rel=1e-9)
    assert master.box_weight() == 0.0


def test_at_most_k_clusters_is_the_same_lp_with_a_dual_at_most_zero():
    """Over every allowed cluster as a column, the master whose class row holds at most k
    clusters has the value of the one that holds exactly k (a cluster splits into two of no
    more SSE), and its class row's dual is at most zero."""
    from pcsos.bounds.colgen.master import Master

    rng = np.random.default_rng(41)
    checked = 0
    for _ in range(12):
        X, k, ml, cl, kw = _draw(rng)
        prob = _problem(X, k, ml, cl, kw)
        if prob is None or prob.s > 8:
            continue
        data = PricingData.from_problem(prob)
        cols = [c for r in range(1, prob.s + 1) for c in itertools.combinations(range(prob.s), r)
                if data.allowed(np.asarray(c))]
        costs = [data.cost(np.asarray(c)) for c in cols]
        out = {}
        for at_most in (False, True):
            m = Master(prob.s, prob.k, 10 * sum(costs) + 1, at_most=at_most)
            m.add(cols, costs)
            _, sigma, _, out[at_most] = m.solve()
            if at_most:
                assert sigma[0] <= 1e-9 * abs(out[at_most])
        assert out[True] == pytest.approx(out[False], rel=1e-9, abs=1e-12)
        checked += 1
    assert checked >= 4


def test_the_interior_point_master_solves_the_same_lp_and_zeroes_tiny_weights():
    """Under 'ipm' (no crossover: every variable of an interior solution is above zero) the
    master's value is the simplex's, its duals price every held column at no less than
    minus the tolerance, and the weights below IPM_ZERO read as zero."""
    from pcsos.bounds.colgen.master import IPM_ZERO, METHODS, Master

    rng = np.random.default_rng(3)
    s, k = 40, 4
    cols = sorted({tuple(sorted(rng.choice(s, int(rng.integers(3, 15)), replace=False)
                                .tolist())) for _ in range(150)})
    costs = list(rng.random(len(cols)) * 5 + 1)
    out = {}
    for method in METHODS:
        m = Master(s, k, 1e4, method)
        m.add(cols + [(i,) for i in range(s)], costs + [1.0] * s)
        pi, sigma, lam, value = m.solve()
        rc = [v - pi[list(c)].sum() - sigma[0] for c, v in zip(m.columns, m.costs)]
        assert min(rc) >= -1e-5 * value
        assert np.all((lam == 0) | (lam >= IPM_ZERO))
        assert m.artificial_weight() == 0.0
        out[method] = value
    assert out["ipm"] == pytest.approx(out["simplex"], rel=1e-6)
    with pytest.raises(ValueError, match="method"):
        Master(s, k, 1e4, "barrier")


@pytest.mark.parametrize("share", [0.0, 0.05, 1.0])
def test_the_box_solves_the_same_lp_from_an_incumbent(share):
    """From a clustering (the box starts at its duals) the engine solves the same LP as
    without the box, whatever the box's size, its bound stays below the optimum, and its
    last solution is the restricted LP's (a clustering where that is integral)."""
    assert BoundSettings().box == engine.BOX_SHARE
    with pytest.raises(InputError, match="box"):
        BoundSettings(box=-0.1).checked()
    checked = 0
    for trial, prob, opt, labels in _cases(59, 10):
        res = colgen_bound(prob, labels=labels, upper_bound=opt, seed=trial, box=share)
        assert res.lower_bound <= opt + 1e-12 * abs(opt), trial
        assert res.status == "solved", (trial, res.message)
        plain = colgen_bound(prob, seed=trial, box=0.0)
        if plain.status == "solved":
            assert res.lp_value == pytest.approx(plain.lp_value, rel=1e-7), trial
        assert res.lower_bound >= res.lp_value - 1e-6 * abs(res.lp_value), trial
        assert res.lp_value <= opt * (1 + 1e-9) + 1e-9, trial  # a clustering is feasible
        if res.labels is not None:
            assert prob.super_objective(res.labels) == pytest.approx(res.lp_value, rel=1e-7)
        checked += 1
    assert checked >= 5


def test_a_run_stopped_while_the_box_binds_returns_the_restricted_lps_solution():
    """Stopped early with a tight box, the engine frees the box and returns the restricted
    LP's solution (k clusters' weight, every point covered once) and a valid bound."""
    from pcsos.bounds.colgen import master as master_mod

    rng = np.random.default_rng(67)
    X = np.vstack([rng.normal(c, 1.0, size=(5, 2)) for c in ((0, 0), (3, 0), (0, 3))])
    prob = Problem.from_instance(make_instance(X, 3))
    opt, lab = brute_force(X, 3)
    freed = []
    original = master_mod.Master.set_box

    def spy(self, centre, delta=0.0):
        freed.append(centre is None and self.box_weight() > 1e-9)
        return original(self, centre, delta)

    labels = np.arange(prob.s) % 3  # a poor clustering: the box starts far from the LP's duals
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(master_mod.Master, "set_box", spy)
        res = colgen_bound(prob, labels=labels, box=0.01, max_iter=4)
    assert any(freed)
    assert res.lower_bound <= opt + 1e-12 * opt
    cover = np.zeros(prob.s)
    for c, w in zip(res.columns, res.lam):
        cover[list(c)] += w
    assert res.lam.sum() == pytest.approx(3, abs=1e-7)
    assert np.allclose(cover, 1, atol=1e-7)


def test_a_root_the_time_limit_cuts_short_says_its_bound_is_the_lps():
    """A root under the LP that a time limit stops keeps the LP's last safe bound, and the
    message names that bound (not the SDP's). (600 points, k = 20: a root LP of minutes.)"""
    import pcsos

    rng = np.random.default_rng(0)
    centres = rng.uniform(0, 10, size=(20, 2))
    X = centres[rng.integers(20, size=600)] + rng.normal(size=(600, 2))
    res = pcsos.solve(X, 20, time_limit=4, workers=1, seed=0)
    assert res.status == "time_limit" and "before the root node finished" in res.message
    assert res.lower_bound <= res.objective
    assert "SDP" not in res.message
    # how far the LP got in 4 s depends on the machine; the message must say which
    if res.lower_bound > 0:
        assert "set-partitioning LP" in res.message
    else:
        assert "no lower bound but 0" in res.message


def test_mean_exact_every_spaces_the_search_over_the_mean_only(monkeypatch):
    """``mean_exact_every`` replaces ``exact_every`` where the exact pricing searches over
    the cluster's mean (size bounds, or d > CIRCLES_MAX_D), not over the disks of the plane
    without sizes; the bound is the same LP's either way."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 2))
    plane = Problem.from_instance(make_instance(X, 3))
    sized = Problem.from_instance(make_instance(X, 3, size_min=6, size_max=14))
    wide = Problem.from_instance(make_instance(rng.normal(size=(24, 5)), 3))
    assert not PricingData.from_problem(plane).searches_mean
    assert PricingData.from_problem(sized).searches_mean
    assert PricingData.from_problem(wide).searches_mean
    calls = _counted(monkeypatch)
    for prob, spaced in ((plane, False), (sized, True), (wide, True)):
        bounds = []
        for every in (None, 3):
            calls.clear()
            res = colgen_bound(prob, exact_every=1, mean_exact_every=every)
            assert res.status == "solved"
            bounds.append(res.lower_bound)
            late = _bare_iterations(calls)
            if every is None or not spaced:
                assert not late
            else:
                assert late and all(i % 3 for i in late)
        assert bounds[1] == pytest.approx(bounds[0], rel=1e-6)
    for bad in (0, 2.5, False):
        with pytest.raises(InputError, match="child_exact_every"):
            BoundSettings(child_exact_every=bad).checked()
        with pytest.raises(ValueError, match="mean_exact_every"):
            colgen_bound(sized, mean_exact_every=bad)


def test_the_tree_spaces_the_exact_pricing_below_the_root_only(monkeypatch):
    """The node passes ``child_exact_every`` as ``mean_exact_every`` to its children's LPs
    and nothing to the root's, the root's pricing gets the workers' threads and the
    children's one, and the tree still finds the brute-force optimum."""
    import os

    import pcsos
    from pcsos import node

    seen = []  # (root, mean_exact_every, threads) per LP, in the order they start
    real = node.colgen_bound

    def spy(problem, **kw):
        seen.append((kw.get("branch_below") is None, kw.get("mean_exact_every"),
                     kw.get("threads")))
        return real(problem, **kw)

    monkeypatch.setattr(node, "colgen_bound", spy)
    X = np.random.default_rng(5).normal(size=(12, 2))  # a tree of several nodes
    res = pcsos.solve(X, 3, size_min=3, size_max=5, workers=2, seed=0,
                      bound_settings={"engine": "colgen", "child_exact_every": 4})
    opt, _ = brute_force(X, 3, size_min=3, size_max=5)
    assert res.status == "optimal" and res.objective == pytest.approx(opt, rel=1e-9)
    assert res.lower_bound <= opt * (1 + 1e-9)
    # the root is processed first, alone
    # the root runs alone: its pricing takes the workers' cores (at most the CPU count)
    assert len(seen) > 1 and seen[0] == (True, None, min(2, os.cpu_count() or 1))
    assert all(every == 4 and threads == 1 for _, every, threads in seen[1:])


def test_slabs_share_the_budget_and_the_best_and_their_bound_stays_valid():
    """Cut short by a budget that the threads' slabs share, or by a deadline already past,
    the sized search still proves a bound below the enumerated minimum (capped by the
    budget); it returns at most SIZED_COLUMNS columns; the kernel refuses a shared array
    too short to hold (best, boxes, stop)."""
    from pcsos._kernels._pricing import sized_search

    rng = np.random.default_rng(11)
    X = rng.normal(size=(14, 3))
    prob = Problem.from_instance(make_instance(X, 3, size_min=3, size_max=7))
    data = PricingData.from_problem(prob)
    groups = [np.array([i]) for i in range(prob.s)]
    scale = float(np.sum(data.q)) / prob.s
    pi = rng.uniform(0.5, 3.0, size=prob.s) * scale
    exact = _least_reduced_cost(X, np.ones(len(X)), groups, prob.cl, pi, (3, 7))
    full = pricing.price_sized(data, pi, 3, 7, tol=1e-9 * scale, threads=2)
    cut = pricing.price_sized(data, pi, 3, 7, tol=1e-9 * scale, threads=2, max_boxes=40)
    assert full.complete and full.lower == pytest.approx(exact, abs=1e-6 * scale)
    assert cut.capped and not cut.complete and cut.lower <= exact + 1e-9 * scale
    assert cut.boxes < full.boxes
    m = np.ascontiguousarray(data.m)
    with pytest.raises(ValueError, match="best, boxes, stop"):
        sized_search(m, data.e, data.counts, data.within - pi, m.min(axis=0), m.max(axis=0),
                     3, 7, data.groups, math.inf, 1e-9, 100, None, np.zeros(2))
    # a deadline already past: each slab bounds its box once, and the bound stays valid
    late = pricing.price_sized(data, pi, 3, 7, tol=1e-9 * scale, threads=2,
                               deadline=Deadline(0.0))
    assert late.lower <= exact + 1e-9 * scale
    assert late.boxes <= 2 * pricing.SLABS_PER_THREAD * 3
    assert len(full.columns) <= pricing.SIZED_COLUMNS


def _bare_iterations(calls: list[str]) -> list[int]:
    """The iterations (heuristic pricings 'H', one each) after which no exact pricing 'E'
    ran, past the first masters that artificial columns hold."""
    it, bare = 0, []
    for j, c in enumerate(calls):
        if c == "H":
            it += 1
            if j + 1 == len(calls) or calls[j + 1] != "E":
                bare.append(it)
    first = calls.index("E", calls.index("H"))
    return [i for i in bare if i > calls[:first].count("H")]


def _counted(monkeypatch) -> list[str]:
    """Record each exact ('E') and heuristic ('H') pricing of the engine."""
    calls: list[str] = []
    price_bound, price_heuristic = engine.price_bound, engine.price_heuristic
    monkeypatch.setattr(engine, "price_bound",
                        lambda *a, **kw: calls.append("E") or price_bound(*a, **kw))
    monkeypatch.setattr(engine, "price_heuristic",
                        lambda *a, **kw: calls.append("H") or price_heuristic(*a, **kw))
    return calls


def test_exact_every_sets_how_often_the_exact_pricing_runs_and_the_profile_counts_it(
        monkeypatch):
    """``exact_every`` spaces the exact pricing out (it still runs whenever the heuristic
    finds nothing, so both runs solve the LP), and the profile counts the solves, the
    pricings and HiGHS's iterations of the run that made them."""
    rng = np.random.default_rng(5)
    prob = Problem.from_instance(make_instance(rng.normal(size=(30, 2)), 3))
    calls = _counted(monkeypatch)
    runs = {}
    for every in (1, 3):
        calls.clear()
        res = runs[every] = colgen_bound(prob, exact_every=every)
        p = res.profile
        assert res.status == "solved"
        assert p["master_solves"] >= res.iterations and p["master_pivots"] > 0
        assert p["exact_pricings"] == len(res.history) == calls.count("E")
        assert 0 < p["master_seconds"] + p["exact_seconds"] + p["heuristic_seconds"] \
            <= res.seconds
        late = _bare_iterations(calls)
        if every == 1:
            assert not late
        else:
            assert late and all(i % every for i in late)
    assert runs[3].lower_bound == pytest.approx(runs[1].lower_bound, rel=1e-6)
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(InputError, match="exact_every"):
            BoundSettings(exact_every=bad).checked()
    with pytest.raises(InputError, match="master_method"):
        BoundSettings(master_method="barrier").checked()


def test_the_history_names_a_master_value_only_where_it_is_the_restricted_lps():
    """A master that the dual box (or an artificial column) holds is not the restricted LP:
    its value may lie below the LP's. The history's value is then inf, and every finite one
    is at least the LP's (which a solved run's bound is, within the pricing's tolerance)."""
    rng = np.random.default_rng(0)
    prob = Problem.from_instance(make_instance(rng.normal(size=(60, 2)), 5))
    res = colgen_bound(prob)
    assert res.status == "solved"
    values = [v for _, _, v, _ in res.history]
    assert any(not math.isfinite(v) for v in values)  # the box held some of its masters
    finite = [v for v in values if math.isfinite(v)]
    assert finite and finite[-1] == pytest.approx(res.lp_value, rel=1e-6)
    assert min(finite) >= res.lower_bound * (1 - 1e-6)


def test_retiring_columns_never_takes_the_protected_ones_nor_those_in_use():
    from pcsos.bounds.colgen.master import Master

    s = 12
    m = Master(s, 3, big=1e4)
    cols = [(i,) for i in range(s)] + [(i, i + 1) for i in range(s - 1)]
    m.add(cols, [float(len(c)) for c in cols])
    protect = frozenset(cols[:3])
    pi = np.zeros(s)
    # a solution (an interior one, say) that weighs more columns than may stay
    lam = np.zeros(len(cols))
    lam[5:20] = 0.1
    engine._retire(m, pi, lam, keep=10, protect=protect)
    held = set(m.columns)
    assert protect <= held
    assert {cols[j] for j in range(5, 20)} <= held
    # only the columns out of the solution and unprotected left: 23 - 3 - 15 = 5 of them
    assert len(m.columns) == 18 and len(m.index) == 18
    # with room, the largest reduced costs leave first: the two-point columns cost more
    m2 = Master(s, 3, big=1e4)
    m2.add(cols, [float(len(c)) for c in cols])
    engine._retire(m2, pi, np.zeros(len(cols)), keep=s)
    assert set(m2.columns) == set(cols[:s])


def _sized_draw_from_nothing(seed: int) -> Problem:
    """A sized draw of 32-37 points (the ninth of a stream), which the engine bounds from
    no clustering at all (no labels, no columns)."""
    rng = np.random.default_rng(seed)
    prob = None
    for _ in range(9):
        n, k, d = int(rng.integers(15, 45)), int(rng.integers(2, 6)), int(rng.integers(1, 4))
        X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10) + rng.uniform(-50, 50)
        cl = []
        for _ in range(int(rng.integers(0, 6))):
            i, j = rng.choice(n, 2, replace=False)
            cl.append((int(i), int(j)))
        lo = max(1, n // k - int(rng.integers(0, 3)))
        hi = -(-n // k) + int(rng.integers(0, 3))
        try:
            prob = Problem.from_instance(make_instance(X, k, [], cl, size_min=lo, size_max=hi))
        except InfeasibleError:
            prob = None
    assert prob is not None
    return prob


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_smoothed_duals_that_misprice_are_priced_again_before_a_stall(seed, monkeypatch):
    """From no clustering, while artificial columns hold the master, a pricing at smoothed
    duals that finds nothing is repeated at the master's own duals: the LP solves, to the
    bound of the engine without smoothing (these draws used to end 'stalled' at bounds
    below -45 000)."""
    prob = _sized_draw_from_nothing(seed)
    res = colgen_bound(prob, time_limit=120)
    monkeypatch.setattr(engine, "SMOOTHING", 0.0)
    plain = colgen_bound(prob, time_limit=120)
    assert plain.status == "solved"
    assert res.status == "solved"
    assert res.lower_bound == pytest.approx(plain.lower_bound, rel=1e-6)


def test_the_heuristic_pricing_tries_no_centre_past_its_deadline():
    # it had none: at s = 5 000 with 5 000 cannot-link pairs a call took 4 s, and
    # `pcsos bound --method colgen --time-limit 3` ran 30 s
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    prob = Problem.from_instance(make_instance(X, 4, cl=[(0, 1), (2, 3)]))
    data = PricingData.from_problem(prob)
    pi = np.full(prob.s, 2.0 * float(np.sum(data.q)) / prob.s)
    assert price_heuristic(data, pi, data.m)  # columns, given the time
    gone = Deadline(0.0)
    assert gone.expired()
    assert price_heuristic(data, pi, data.m, deadline=gone) == []
