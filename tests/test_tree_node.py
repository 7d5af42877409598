"""The clustering node (pcsos.node) on hand-made problems."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bruteforce import brute_force, labelling_sse

from pcsos.node import NodeData, clustering_from_Z, process_node
from pcsos.options import SolverOptions
from pcsos.problem import Problem, make_instance
from pcsos.tree import Context


def _problem(X, k, ml=(), cl=()):
    return Problem.from_instance(make_instance(X, k, ml, cl))


def _ctx(options=None, incumbent=math.inf, node_id=0):
    return Context(incumbent, None, options or SolverOptions(seed=0).checked(), node_id=node_id,
                   is_root=node_id == 0)


def _clustering_matrix(labels, e):
    labels = np.asarray(labels)
    sizes = np.bincount(labels, weights=e)
    same = labels[:, None] == labels[None, :]
    return np.where(same, 1.0 / sizes[labels][:, None], 0.0)


def test_clustering_from_Z_reads_a_clustering_matrix():
    X = np.arange(12, dtype=float)[:, None]
    p = _problem(X, 3, ml=[(0, 1)], cl=[(2, 3)])
    labels = np.array([0, 0, 1, 0, 1, 1, 2, 2, 2, 2, 1])  # s = 11 super-points
    Z = _clustering_matrix(labels, p.e)
    got = clustering_from_Z(Z + 1e-7, p)
    assert got is not None
    np.testing.assert_array_equal(got[:, None] == got[None, :],
                                  labels[:, None] == labels[None, :])
    assert clustering_from_Z(_clustering_matrix(np.r_[labels[:-1], 3], p.e), p) is None  # k=4
    bad = labels.copy()
    a, b = p.cl[0]
    bad[b] = bad[a]  # puts the cannot-link pair's super-points together
    assert clustering_from_Z(_clustering_matrix(bad, p.e), p) is None


def test_leaf_with_s_equal_k_is_evaluated_directly():
    X = np.array([[0.0], [0.1], [5.0], [5.2], [9.0]])
    p = _problem(X, 3, ml=[(0, 1), (2, 3)])
    assert p.s == 3
    out = process_node(NodeData(p, known_feasible=True), _ctx(node_id=5))
    opt, _ = brute_force(X, 3, [(0, 1), (2, 3)])  # the leaf's one clustering is optimal
    assert out.bound == out.objective == pytest.approx(labelling_sse(X, out.solution))
    assert out.objective == pytest.approx(opt)
    assert not out.children


def test_infeasible_node_has_infinite_bound():
    X = np.arange(6, dtype=float)[:, None]
    p = _problem(X, 3, cl=[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])  # K4, k = 3
    out = process_node(NodeData(p, kind="cl"), _ctx(node_id=3))
    assert out.bound == math.inf and out.solution is None and out.row["flag"] == 2


def test_root_branches_with_valid_children():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(14, 2))
    p = _problem(X, 3)
    opts = SolverOptions(seed=0, cp_settings={"families": "none"},
                         bound_settings={"tol": 1e-3}).checked()
    out = process_node(NodeData(p), _ctx(opts))
    assert out.solution is not None
    assert out.objective == pytest.approx(labelling_sse(X, out.solution))
    assert out.bound <= out.objective
    assert len(out.children) == 2
    (ml, b1), (cl, b2) = out.children
    assert b1 == b2 == out.bound
    assert ml.kind == "ml" and ml.problem.s == p.s - 1
    assert cl.kind == "cl" and len(cl.problem.cl) == len(p.cl) + 1
    a, b = ml.pair
    lab = out.solution
    # exactly one child is proven feasible by the node's clustering, the one it satisfies
    assert ml.known_feasible == (lab[a] == lab[b]) and cl.known_feasible == (lab[a] != lab[b])
    assert (ml.hint is not None) == ml.known_feasible


def test_the_root_loop_prunes_against_a_heuristic_run_on_a_rounds_Z(monkeypatch):
    import pcsos.node as node_mod
    from pcsos.cuts.loop import PRUNED

    rng = np.random.default_rng(1)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.repeat(centers, 5, axis=0) + rng.normal(scale=0.3, size=(15, 2))
    p = _problem(X, 3, ml=[(0, 1)], cl=[(0, 5)])
    calls = []
    real = node_mod._heuristic

    def spy(options, problem, Z, ctx, best_labels, name=None):
        calls.append(Z is not None)
        return real(options, problem, Z, ctx, best_labels, name=name)

    monkeypatch.setattr(node_mod, "_heuristic", spy)
    # no root heuristic: before the loop the node knows only the feasibility check's
    # clustering, so only a heuristic inside the loop can let the loop itself prune
    opts = SolverOptions(seed=0, root_heuristic=None).checked()
    out = process_node(NodeData(p), _ctx(opts))
    assert out.row["cp_flag"] == PRUNED and not out.children
    assert calls and all(calls)  # every call had a round's Z
    assert out.objective == pytest.approx(labelling_sse(X, out.solution))
    assert out.bound <= out.objective and out.bound >= out.objective * (1 - 1e-4)
    # valid: at most the SSE of the planted clustering, which obeys both pairs
    planted = np.repeat(np.arange(3), 5)
    assert out.bound <= labelling_sse(X, planted) * (1 + 1e-12)


def test_ranked_pairs_follow_the_branching_score_and_skip_cannot_links():
    from pcsos._kernels import branching_score
    from pcsos.node import _fallback_pair, _ranked_pairs

    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    p = _problem(X, 3, cl=[(0, 1), (2, 5)])
    A = rng.uniform(size=(p.s, 4))
    Z = A @ A.T / 4
    Zs = 0.5 * (Z + Z.T)
    sq = np.diag(Zs @ Zs)
    score = np.minimum(Zs, sq[:, None] + sq[None, :] - 2 * Zs @ Zs)
    cl = {tuple(c) for c in p.cl.tolist()}
    want = sorted(((score[i, j], i, j) for i in range(p.s) for j in range(i + 1, p.s)
                   if (i, j) not in cl), key=lambda t: -t[0])
    got = _ranked_pairs(Z, p, 6)
    assert got == [(i, j) for _, i, j in want[:6]]
    assert _fallback_pair(Z, p) == got[0]
    q = _problem(X, 3)  # no cannot-link pairs: the first pair is the compiled kernel's
    assert _ranked_pairs(Z, q, 3)[0] == branching_score(Z)[:2]

