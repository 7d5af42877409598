"""Subset-row cuts of the set-partitioning LP (pcsos.bounds.colgen.subset_rows): the
knapsack and the sized pricing that carry their charges, against enumeration; their
separation; and the bound with them, against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import brute_force

from pcsos.bounds.colgen import colgen_bound
from pcsos.bounds.colgen.engine import _bound
from pcsos.bounds.colgen.pricing import (
    PricingData,
    knapsack,
    knapsack_groups,
    price_bound,
    price_sized,
)
from pcsos.bounds.colgen.subset_rows import SubsetRows
from pcsos.errors import InfeasibleError
from pcsos.problem import Problem, make_instance


def _no_pairs(s):
    return np.zeros(s + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)


def _charged(z, triples, charges) -> float:
    return float(sum(c for t, c in zip(triples, charges) if z[list(t)].sum() >= 2))


def test_the_knapsack_with_charged_triples_is_the_enumerated_least_set():
    """With triples as groups whose subsets of two or three points add a charge, the
    knapsack is the least sum plus charges over the 0/1 sets of the count range, and its set
    has that value."""
    rng = np.random.default_rng(41)
    for trial in range(300):
        s = int(rng.integers(3, 10))
        cnt = np.ones(s, dtype=np.int64) if trial % 2 else rng.integers(1, 3, s)
        v = rng.normal(size=s)
        nt = int(rng.integers(1, s // 3 + 1))
        triples = rng.permutation(s)[:3 * nt].reshape(-1, 3)
        charges = rng.uniform(0, 1.5, nt)
        groups = knapsack_groups(cnt, *_no_pairs(s), triples, charges)
        lo = int(rng.integers(0, 4))
        hi = int(rng.integers(lo, cnt.sum() + 2))
        best = math.inf
        for bits in itertools.product((False, True), repeat=s):
            z = np.array(bits)
            if lo <= cnt[z].sum() <= hi:
                best = min(best, v[z].sum() + _charged(z, triples, charges))
        val, exact, mem = knapsack(v, cnt, lo, hi, groups)
        assert exact
        if not math.isfinite(best):
            assert val == math.inf
            continue
        assert val == pytest.approx(best, abs=1e-12)
        z = np.zeros(s, dtype=bool)
        z[mem] = True
        assert lo <= cnt[z].sum() <= hi
        assert v[z].sum() + _charged(z, triples, charges) == pytest.approx(val, abs=1e-12)
        # without its table the knapsack drops the groups and charges: a lower bound
        assert knapsack(v, cnt, lo, hi, groups, 0)[0] <= best + 1e-12


def _tiny(rng, sized=True):
    n = int(rng.integers(6, 10))
    k = int(rng.integers(2, 4))
    X = rng.normal(size=(n, 2)) * rng.uniform(0.5, 5)
    kw = {"size_min": 1, "size_max": int(math.ceil(n / k)) + int(rng.integers(0, 2))} \
        if sized else {}
    return X, k, kw


def _enumerated_rc(X, pi, lo, hi, triples, rho):
    """The least reduced cost with the cuts' charges over the clusters of count in
    [lo, hi] (points are super-points here)."""
    best = math.inf
    n = len(X)
    for r in range(lo, min(hi, n) + 1):
        for c in itertools.combinations(range(n), r):
            idx = list(c)
            z = np.zeros(n, dtype=bool)
            z[idx] = True
            sse = float(((X[idx] - X[idx].mean(axis=0)) ** 2).sum())
            best = min(best, sse - pi[idx].sum() + _charged(z, triples, -rho))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_sized_pricing_with_cuts_bounds_the_least_charged_reduced_cost(seed):
    """price_sized's bound with cuts at random duals is at most the enumerated least reduced
    cost with the charges, close to it when complete, and its columns' reduced costs carry
    their charges."""
    rng = np.random.default_rng(700 + seed)
    X, k, kw = _tiny(rng)
    prob = Problem.from_instance(make_instance(X, k, (), (), **kw))
    data = PricingData.from_problem(prob)
    n = len(X)
    cuts = SubsetRows(n, rng.permutation(n)[:6].reshape(2, 3))
    scale = float(np.sum(data.q)) / n
    for _ in range(4):
        lo = int(rng.integers(1, n))
        hi = int(rng.integers(lo, n + 1))
        pi = rng.uniform(-0.5, 3.0, size=n) * scale
        rho = -rng.uniform(0, 2.0, size=2) * scale
        exact = _enumerated_rc(X - X.mean(axis=0), pi, lo, hi, cuts.triples, rho)
        res = price_sized(data, pi, lo, hi, tol=1e-9 * scale, cuts=cuts, rho=rho)
        assert res.lower <= exact + 1e-9 * scale
        if res.complete:
            assert res.lower >= exact - 1e-6 * scale
        for rc, col in res.columns:
            idx = np.asarray(col)
            want = data.cost(idx) - pi[idx].sum() + float(cuts.charge([col], rho)[0])
            assert rc == pytest.approx(want, abs=1e-9 * scale)


@pytest.mark.parametrize("sized", [True, False])
def test_any_duals_and_cut_duals_below_zero_give_a_bound_below_the_optimum(sized):
    """The Lagrangian bound sum(pi) + sum(rho) + clusters x (least reduced cost with the
    charges) is at most the optimum for any pi and any rho <= 0 (docs/safe_bound.md):
    random duals, random cuts, brute-force optimum. Without sizes in 2 dimensions the
    search over the disks leaves the charges out, still a lower bound."""
    rng = np.random.default_rng(800 + sized)
    checked = 0
    for _ in range(12):
        X, k, kw = _tiny(rng, sized)
        opt, _ = brute_force(X, k, **kw)
        prob = Problem.from_instance(make_instance(X, k, (), (), **kw))
        data = PricingData.from_problem(prob)
        n = len(X)
        cuts = SubsetRows(n, rng.permutation(n)[:6].reshape(2, 3))
        scale = opt / n + 1e-9
        pi = rng.uniform(0.0, 2.0, size=n) * scale
        rho = -rng.uniform(0, 1.0, size=2) * scale
        pr = price_bound(data, pi, k, tol=1e-9 * scale, cuts=cuts, rho=rho)
        L = _bound(pi, tuple(pr.term) + tuple(rho))
        assert L <= opt + 1e-9 * abs(opt)
        checked += 1
    assert checked == 12


def test_separation_cuts_off_a_half_integral_solution():
    """Three clusters of two of three points, each at weight 1/2, break the triple's row
    (1.5 > 1): it is separated, and a cut already holding a point keeps others out."""
    cols = [(0, 1), (1, 2), (0, 2), (3,), (4, 5)]
    lam = np.array([0.5, 0.5, 0.5, 1.0, 1.0])
    free = np.ones(6, dtype=bool)
    sr = SubsetRows(6)
    assert sr.separate(cols, lam, free, limit=5) == 1
    assert sr.triples.tolist() == [[0, 1, 2]]
    assert sr.rows(cols) == [(0,), (0,), (0,), (), ()]
    assert sr.charge(cols, np.array([-0.25])).tolist() == [0.25, 0.25, 0.25, 0.0, 0.0]
    # nothing else is broken, and a point with a cannot-link partner is never used
    assert sr.separate(cols, lam, free, limit=5) == 0
    blocked = SubsetRows(6)
    free[1] = False
    assert blocked.separate(cols, lam, free, limit=5) == 0
    # an integral solution breaks no row
    assert SubsetRows(6).separate([(0, 1, 2), (3, 4, 5)], np.ones(2), np.ones(6, bool), 5) == 0
    # the pair of weight >= 1/3 need not be the two lowest points: {0, 1} weighs 0.2 here,
    # {0, 2} and {1, 2} 0.45, and the row holds 1.1
    cols = [(0, 1), (0, 2), (1, 2), (0,), (1,), (2,)]
    lam = np.array([0.2, 0.45, 0.45, 0.35, 0.35, 0.1])
    sr = SubsetRows(3)
    assert sr.separate(cols, lam, np.ones(3, dtype=bool), limit=5) == 1


def test_the_master_takes_a_column_once_in_a_batch():
    """The heuristic's repaired columns may repeat one another: the master adds each
    once."""
    from pcsos.bounds.colgen.master import Master

    m = Master(4, 2, big=100.0)
    assert m.add([(0, 1), (0, 1), (2, 3)], [1.0, 1.0, 2.0]) == 2
    assert m.columns == [(0, 1), (2, 3)] and m.index == {(0, 1): 0, (2, 3): 1}


def test_a_child_keeps_the_cuts_whose_points_stay_apart():
    sr = SubsetRows(7, [(0, 1, 2), (3, 4, 5)])
    # merge super-points 1 and 2 (the child's 1), the rest shift down
    parent_map = np.array([0, 1, 1, 2, 3, 4, 5])
    assert sr.inherit(parent_map).tolist() == [[2, 3, 4]]
    assert sr.inherit(np.arange(7)).tolist() == [[0, 1, 2], [3, 4, 5]]
    # a triple that meets a held cut, or repeats a point, is not added
    assert sr.add([(2, 6, 6), (5, 6, 0)]) == 0


def test_the_bound_with_cuts_is_valid_and_lifts_fractional_lps():
    """On tiny instances with size bounds, the LP with subset-row cuts stays below the
    brute-force optimum, is no weaker than the LP without them, and is stronger on some."""
    rng = np.random.default_rng(900)
    lifted = checked = 0
    for trial in range(40):
        X, k, kw = _tiny(rng)
        try:
            prob = Problem.from_instance(make_instance(X, k, (), (), **kw))
        except InfeasibleError:
            continue
        opt, _ = brute_force(X, k, **kw)
        plain = colgen_bound(prob, seed=trial, sr_rounds=0)
        cut = colgen_bound(prob, seed=trial, sr_rounds=5)
        assert cut.lower_bound <= opt + 1e-9 * abs(opt), (trial, cut.lower_bound, opt)
        if plain.status == cut.status == "solved":
            assert cut.lower_bound >= plain.lower_bound - 1e-6 * abs(opt)
            lifted += cut.lower_bound > plain.lower_bound + 1e-6 * abs(opt)
            checked += 1
    assert checked >= 20
    assert lifted >= 1


def test_the_tree_with_cuts_finds_the_optimum():
    """Every node with subset-row cuts (children inherit their parent's): the tree's
    optimum is the brute-force one, and its bound never passes it."""
    import pcsos

    rng = np.random.default_rng(950)
    solved = 0
    for trial in range(8):
        X, k, kw = _tiny(rng)
        opt, _ = brute_force(X, k, **kw)
        if not math.isfinite(opt):
            continue
        res = pcsos.solve(X, k, **kw, workers=1, tol=1e-9, root_heuristic=None,
                          bound_settings={"engine": "colgen", "sr_rounds": 3})
        assert res.status == "optimal", (trial, res.status)
        assert res.objective == pytest.approx(opt, rel=1e-7, abs=1e-9)
        assert res.lower_bound <= opt + 1e-9 * abs(opt)
        solved += 1
    assert solved >= 6
