"""Acceptance 1: pcsos.solve against brute-force enumeration on 280 random tiny instances.

n <= 10, k = 2..4, random ML/CL pairs (some instances infeasible). Three option sets, so
that the tree itself is exercised and not only a tight root bound:

* ``default``: the solver's defaults (cuts, IPC-k-means);
* ``weak``: no cuts and a loose SDP tolerance, so that nodes branch (up to ~20 nodes);
* ``no_heuristic``: no cuts, no root heuristic and a node heuristic that never finds
  anything, so that upper bounds
  come only from the feasibility witness, from clustering matrices extracted from Z, from
  leaves (s = k) and from the parents' clusterings passed down;
* ``paper``: ``weak`` with the pairs chosen by the paper's score, not by pseudo-costs (the
  default, pcsos.branching).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bruteforce import assert_certified_optimum, brute_force
from conftest import random_instance

import pcsos.api as api
from pcsos.heuristics import HeuristicResult, register_heuristic

TOL = 1e-4


def _nothing(problem, Z, rng, deadline, **options):
    return HeuristicResult(status="no_solution")


try:
    register_heuristic("test-nothing", _nothing)
except Exception:  # already registered by an earlier import of this module
    pass

OPTIONS = {
    "default": {},
    "no_star": {"cp_settings": {"families": "all", "tail_off_root": None}},
    "weak": {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3}},
    "no_heuristic": {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3},
                     "heuristic": "test-nothing", "root_heuristic": None},
    "paper": {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3},
              "branching": "paper"},
}
CASES = [(mode, s) for mode in OPTIONS for s in range(70)]


def _instance(seed: int):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(4, 11))
    k = min(int(rng.integers(2, 5)), n)
    X, ml, cl = random_instance(rng, n, d=int(rng.integers(1, 4)),
                                n_ml=int(rng.integers(0, 4)), n_cl=int(rng.integers(0, 7)))
    return X, k, ml, cl


@pytest.mark.parametrize("mode,seed", CASES)
def test_solve_matches_brute_force(mode, seed):
    X, k, ml, cl = _instance(seed)
    opt, _ = brute_force(X, k, ml, cl)
    res = api.solve(X, k, ml, cl, workers=1, seed=0, **OPTIONS[mode])
    if math.isinf(opt):
        assert res.status == "infeasible", res
        assert res.labels is None and res.message
        return
    # within the tolerance of the optimum, and the certified bound never above it
    assert_certified_optimum(res, X, k, ml, cl, opt, tol=TOL, abs_tol=None)
    assert res.gap <= TOL
    assert res.nodes == len(res.log) >= 1


def test_some_cases_branch_and_some_are_infeasible():
    """Guard against a test set that never exercises the tree or the infeasible path."""
    n_inf = sum(math.isinf(brute_force(*_instance(s)[:2], *_instance(s)[2:])[0])
                for s in range(40))
    assert n_inf >= 5
    nodes = [api.solve(*_instance(s)[:2], *_instance(s)[2:], workers=1, seed=0,
                       **OPTIONS["weak"]).nodes for s in range(12)]
    assert sum(n > 1 for n in nodes) >= 2, nodes


def test_no_heuristic_cases_find_incumbents_in_the_tree():
    """Guard: in ``no_heuristic`` mode the nodes' own searches (Z's clusterings, leaves)
    improve the incumbent, so those paths give the answers that mode checks (43 of 50
    feasible cases when written)."""
    found = 0
    for s in range(20):
        X, k, ml, cl = _instance(s)
        res = api.solve(X, k, ml, cl, workers=1, seed=0, **OPTIONS["no_heuristic"])
        found += any(row.get("improved") for row in res.log)
    assert found >= 5, found


def test_some_weak_cases_choose_by_pseudocosts():
    """Guard: the weak mode's trees get reliable records somewhere (else it would only
    repeat ``paper``)."""
    chose = [any(r.get("pseudocost") for r in api.solve(
        *_instance(s)[:2], *_instance(s)[2:], workers=1, seed=0,
        **OPTIONS["weak"]).log) for s in range(70)]
    assert sum(chose) >= 1
