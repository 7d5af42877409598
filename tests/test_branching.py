"""Pseudo-cost branching (pcsos.branching), its records through the tree's history, and the
option that selects it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pcsos
from pcsos.branching import RELIABLE, PseudoCosts, choose_pair, relation, unit_gain
from pcsos.errors import InputError
from pcsos.options import SolverOptions
from pcsos.tree import Context, NodeOutcome, branch_and_bound


def test_unit_gain_divides_by_the_change_and_caps_at_the_incumbent():
    assert unit_gain("ml", 0.5, 10.0, 11.0, 20.0) == pytest.approx(2.0)
    # an infeasible child (bound inf) gains what pruning needs: up to the incumbent
    assert unit_gain("cl", 0.25, 10.0, math.inf, 12.0) == pytest.approx(8.0)
    assert unit_gain("cl", 0.5, 10.0, 9.0, 20.0) == 0.0  # a lower bound than the parent's
    assert unit_gain("root", 0.5, 10.0, 11.0, 20.0) is None
    assert unit_gain("ml", 0.0, 10.0, 11.0, 20.0) is None
    assert unit_gain("ml", math.nan, 10.0, 11.0, 20.0) is None
    assert unit_gain("ml", 0.5, -math.inf, 11.0, 20.0) is None


def test_relation_is_the_normalised_entry():
    Z = np.array([[0.5, 0.1], [0.1, 0.2]])
    assert relation(Z, 0, 1) == pytest.approx(0.1 / math.sqrt(0.1))
    assert relation(np.array([[1.0, 2.0], [2.0, 1.0]]), 0, 1) == 1.0  # clipped


def _costs(n, records):
    c = PseudoCosts.empty(n)
    for r in records:
        c.record(r)
    return c


def test_records_are_per_point_and_side_and_the_table_is_replaced():
    c = PseudoCosts.empty(4)
    before = c.table
    c.record(("ml", (0, 2), 3.0))
    c.record(("ml", (0, 1), 1.0))
    c.record(("cl", (3, 1), 5.0))
    assert before.sum() == 0  # a reader holding the old table never sees a half-write
    assert c.records("ml") == 2 and c.records("cl") == 1
    assert c.table[0, 0].tolist() == [4.0, 2.0] and c.table[1, 3].tolist() == [5.0, 1.0]


def test_choose_pair_waits_for_reliable_records_then_takes_the_best_product():
    # 4 super-points = 4 points; pair (0, 1) has relation 0.5, pair (2, 3) too
    Z = np.array([[0.5, 0.25, 0, 0], [0.25, 0.5, 0, 0],
                  [0, 0, 0.5, 0.25], [0, 0, 0.25, 0.5]])
    first = np.arange(4)
    cands = [(0, 1), (2, 3)]
    few = [("ml", (0, 1), 1.0), ("cl", (0, 1), 1.0)] * (RELIABLE - 1)
    assert choose_pair(Z, cands, first, _costs(4, few)) is None
    assert choose_pair(Z, cands, first, None) is None
    # points 2 and 3 gain ten times more on both sides: their pair wins
    many = few + [("ml", (2, 3), 10.0), ("cl", (2, 3), 10.0)]
    assert choose_pair(Z, cands, first, _costs(4, many)) == (2, 3)
    # the node's own record counts: the last record makes the costs reliable
    almost = few + [("ml", (2, 3), 10.0)]
    assert choose_pair(Z, cands, first, _costs(4, almost)) is None
    assert choose_pair(Z, cands, first, _costs(4, almost), own=("cl", (2, 3), 10.0)) == (2, 3)


def test_a_point_without_records_takes_the_mean_of_its_side():
    block = np.array([[0.5, 0.25], [0.25, 0.5]])
    Z = np.kron(np.eye(3), block)  # pairs (0, 1), (2, 3), (4, 5), each of relation 0.5
    recs = [("ml", (0, 1), 1.0), ("cl", (0, 1), 1.0)] * RELIABLE + [
        ("ml", (4, 5), 9.0), ("cl", (4, 5), 9.0)]
    c = _costs(6, recs)
    # points 2, 3 have no record: each side's mean (13 / 5), above (0, 1)'s own 1
    assert choose_pair(Z, [(0, 1), (2, 3)], np.arange(6), c) == (2, 3)
    assert choose_pair(Z, [(0, 1), (2, 3), (4, 5)], np.arange(6), c) == (4, 5)


class _History:
    def __init__(self):
        self.seen = []

    def record(self, learned):
        self.seen.append(learned)


def _counting_node(data, ctx: Context) -> NodeOutcome:
    depth = data
    if depth == 3:  # a leaf: its bound is its value
        return NodeOutcome(10.0, 10.0, "x", learned=("node", ctx.node_id))
    return NodeOutcome(float(depth), children=[(depth + 1, float(depth))] * 2,
                       learned=("node", ctx.node_id))


def test_the_manager_records_what_nodes_learned_and_hands_the_history_on():
    h = _History()
    res = branch_and_bound(_counting_node, 0, tol=0.0, history=h, workers=1)
    assert res.status == "optimal"
    assert sorted(n for _, n in h.seen) == sorted(e.node_id for e in res.log)
    # workers=1: each job sees every earlier node's record
    seen_by = []

    def node(data, ctx):
        seen_by.append(len(ctx.history.seen))
        return _counting_node(data, ctx)

    h2 = _History()
    branch_and_bound(node, 0, tol=0.0, history=h2, workers=1)
    assert seen_by == list(range(len(seen_by)))


WEAK = {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3}}


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_pseudocost_branching_reaches_the_same_optimum_and_chooses_pairs(seed):
    # uniform points without cuts: trees of 30-40 nodes, so that the records become reliable
    X = np.random.default_rng(seed).uniform(size=(18, 2))
    a = pcsos.solve(X, 3, workers=1, seed=0, branching="paper", **WEAK)
    b = pcsos.solve(X, 3, workers=1, seed=0, **WEAK)  # the default: pseudocost
    assert a.status == b.status == "optimal"
    assert b.objective == pytest.approx(a.objective, rel=2e-4)
    assert b.lower_bound <= a.objective * (1 + 1e-9)
    assert not any(r.get("pseudocost") for r in a.log)
    # the rule took over in the tree (else this test would not test it)
    assert any(r.get("pseudocost") for r in b.log)


def test_branching_option_is_checked_at_the_edge():
    with pytest.raises(InputError, match="branching must be one of paper, pseudocost"):
        SolverOptions(branching="strong").checked()
    assert SolverOptions().branching == "pseudocost"
    est = pcsos.PCSOSClustering(n_clusters=2, branching="paper")
    assert est.solver_options().branching == "paper"
