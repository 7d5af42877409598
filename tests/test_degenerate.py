"""Random tiny instances against brute force, with the degenerate families a user meets.

Families: generic data; exact duplicate rows; fewer distinct locations than k (optimum 0
without cannot-link pairs); every point equal; k = n; k = 1. Pairs are random, so some
instances are infeasible. For every case, ``pcsos.solve`` and every built-in heuristic must
not crash; the solver's status must match brute force (optimal within the tolerances or
infeasible) and its certified bounds must never exceed the optimum.

The normal suite draws 200 cases (derandomised, so a failure reproduces); the slow suite
draws 1 000 more (``pytest -m slow``), not derandomised, and prints the
``@reproduce_failure`` blob of a failure, since the printed arrays round their floats.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bruteforce import assert_certified_optimum, brute_force
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcsos
import pcsos.api
from pcsos.bounds import SDPModel, solve_sdp
from pcsos.heuristics import available_heuristics, run_heuristic
from pcsos.problem import Problem, make_instance

FAMILIES = ("generic", "duplicates", "few_locations", "all_equal", "k_equals_n", "k_one")
TOL = 1e-4
BUILTIN = ("ipc-kmeans", "s-mdeclust", "blpkm-cc", "cop-kmeans", "repair")


@st.composite
def instances(draw):
    family = draw(st.sampled_from(FAMILIES))
    n = draw(st.integers(2, 8))
    d = draw(st.integers(1, 3))
    k = draw(st.integers(1, min(4, n)))
    if family == "k_equals_n":
        k = n
    elif family == "k_one":
        k = 1
    coords = st.integers(-3, 3)
    if family == "all_equal":
        row = draw(st.lists(coords, min_size=d, max_size=d))
        X = np.tile(np.asarray(row, float) * 1.7, (n, 1))
    elif family == "few_locations":
        m = draw(st.integers(1, max(1, k - 1)))
        locs = np.asarray(draw(st.lists(st.lists(coords, min_size=d, max_size=d),
                                        min_size=m, max_size=m)), float) * 0.9
        idx = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
        X = locs[idx]
    else:
        X = np.asarray(draw(st.lists(st.lists(coords, min_size=d, max_size=d),
                                     min_size=n, max_size=n)), float) * 1.3
        if family == "duplicates":
            src = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
            dup = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            X = np.where(np.asarray(dup)[:, None], X[src], X)
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(
        lambda p: p[0] != p[1])
    ml = draw(st.lists(pair, max_size=3))
    cl = draw(st.lists(pair, max_size=5))
    return family, X, k, ml, cl


def _check_solve(case) -> None:
    family, X, k, ml, cl = case
    opt, _ = brute_force(X, k, ml, cl)
    res = pcsos.solve(X, k, ml, cl, workers=1, seed=0, time_limit=60)
    if math.isinf(opt):
        assert res.status == "infeasible", (family, res)
        assert res.labels is None and res.message
        return
    assert res.labels is not None, (family, res)
    assert_certified_optimum(res, X, k, ml, cl, opt, tol=TOL, abs_tol=None)
    assert res.nodes == len(res.log)


def _check_heuristics(case) -> None:
    """Every heuristic without Z, ipc-kmeans with the root's SDP solution, and every one
    that assigns exactly (or repairs) handed the optimum as ``init_labels``, which it must
    then return (the optimum's centres assign to a clustering at least as good)."""
    family, X, k, ml, cl = case
    opt, best = brute_force(X, k, ml, cl)
    try:
        problem = Problem.from_instance(make_instance(X, k, ml, cl))
    except pcsos.InfeasibleError:
        assert math.isinf(opt)
        return
    slack = 1e-9 * max(1.0, abs(opt))
    feasible = not math.isinf(opt)
    Z = (solve_sdp(SDPModel.from_problem(problem), tol=1e-6).Z
         if feasible and problem.s > k else None)
    runs = [(name, None, None) for name in BUILTIN] + [("ipc-kmeans", Z, None)]
    if best is not None:
        runs += [(name, None, best) for name in BUILTIN if name != "cop-kmeans"]
    for name, Zr, init in runs:
        h = run_heuristic(name, problem, Z=Zr, seed=0, time_limit=20, init_labels=init)
        what = (name, family, Zr is not None, init is not None, h.message)
        if h.status == "found":
            assert not math.isinf(opt), what
            assert h.objective >= opt - slack, what
            assert len(np.unique(h.labels)) == k, what
            if init is not None:
                assert h.objective <= opt + slack, what
        elif h.status == "infeasible":
            assert math.isinf(opt), what
        else:
            assert init is None, what  # a start at the optimum is always found


def test_every_builtin_heuristic_is_checked():
    assert set(BUILTIN) <= set(available_heuristics())


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(instances())
def test_solve_on_tiny_and_degenerate_instances(case):
    _check_solve(case)


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(instances())
def test_heuristics_on_tiny_and_degenerate_instances(case):
    _check_heuristics(case)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, database=None, print_blob=True,
          suppress_health_check=list(HealthCheck))
@given(instances())
def test_solve_on_tiny_and_degenerate_instances_slow(case):
    _check_solve(case)
    _check_heuristics(case)


@pytest.mark.parametrize("n", [6, 8, 10, 11])
def test_zero_optimum_closes_at_the_root(n):
    """Identical points: the optimum is 0, and the tree must not enumerate partitions."""
    res = pcsos.solve(np.full((n, 2), 3.7), 2, workers=1, time_limit=60)
    assert res.status == "optimal" and res.nodes == 1
    assert res.objective == pytest.approx(0.0, abs=1e-20)


def test_fewer_locations_than_k():
    """The minimal crash of the report: 7 equal points, k = 3."""
    res = pcsos.solve(np.full((7, 2), 3.7), 3, workers=1)
    assert res.status == "optimal" and len(np.unique(res.labels)) == 3
