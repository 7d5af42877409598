"""The problem model: validation, dedup, ML shrinking, k = 2 inference, children."""

import numpy as np
import pytest
from bruteforce import feasible_partitions
from conftest import random_instance

from pcsos.errors import InfeasibleError, InputError
from pcsos.problem import Problem, make_instance, sse


def _prob(n=8, k=3, ml=(), cl=(), seed=0, **kw):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return Problem.from_instance(make_instance(X, k, ml, cl), **kw)


def test_dedup_and_orientation_counts():
    inst = make_instance(np.zeros((5, 1)), 2, [(1, 0), (0, 1), (2, 3), (0, 1)], [(4, 2), (2, 4)])
    assert inst.ml.tolist() == [[0, 1], [2, 3]] and inst.ml_duplicates == 2
    assert inst.cl.tolist() == [[2, 4]] and inst.cl_duplicates == 1


@pytest.mark.parametrize("kw, words", [
    (dict(X=[[0.0], [np.nan]], k=1), "non-finite"),
    (dict(X=[[0.0], [1.0]], k=0), "k must satisfy"),
    (dict(X=[[0.0], [1.0]], k=3), "k must satisfy"),
    (dict(X=[[0.0], [1.0]], k=1, ml=[(0, 2)]), "out of range"),
    (dict(X=[[0.0], [1.0]], k=1, cl=[(1, 1)]), "self pair"),
    # each of these was a TypeError or ValueError of numpy, or was taken silently ('2' as
    # k 2, a complex part or a mask dropped, strings and dates read as numbers)
    (dict(X=[[0.0], [1.0]], k=None), "k must be an integer, got None"),
    (dict(X=[[0.0], [1.0]], k="2"), "k must be an integer, got '2'"),
    (dict(X=[[0.0], [1.0]], k=[2]), "k must be an integer"),
    (dict(X=np.array([[0.0], [1.0]]) + 1j, k=1), r"not a numeric matrix \(dtype complex128\)"),
    (dict(X=np.array([["0"], ["1"]]), k=1), "not a numeric matrix"),
    (dict(X=np.array([[0], [1]], dtype="datetime64[s]"), k=1), "not a numeric matrix"),
    (dict(X=np.ma.masked_array([[0.0], [1.0]], mask=[[True], [False]]), k=1), "masked"),
    (dict(X=[[0.0, 1.0], [2.0]], k=1), "not a numeric matrix"),
    (dict(X=[[0.0], [1.0], [2.0]], k=1, ml=[("0", "1")]), "indices must be integers"),
    (dict(X=[[0.0], [1.0], [2.0]], k=1, ml=[(0j, 1)]), "indices must be integers"),
    (dict(X=[[0.0], [1.0], [2.0]], k=1, weights=np.ones((3, 1))), "a 1-D array"),
    (dict(X=[[0.0], [1.0], [2.0]], k=1, weights=np.ones(3) + 1j), "weights are not numbers"),
])
def test_validation(kw, words):
    with pytest.raises(InputError, match=words):
        make_instance(**kw)


def test_ml_shrinking_sizes_and_sums():
    X = np.arange(12.0).reshape(6, 2)
    p = Problem.from_instance(make_instance(X, 2, [(0, 1), (1, 2), (4, 5)], [(0, 3)]),
                              infer_k2=False)
    assert p.s == 3
    np.testing.assert_array_equal(p.point_labels, [0, 0, 0, 1, 2, 2])
    np.testing.assert_array_equal(p.e, [3, 1, 2])
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(p.W, [Xc[:3].sum(0), Xc[3], Xc[4:].sum(0)])
    assert p.c0 == pytest.approx(float((Xc ** 2).sum()))
    assert p.cl.tolist() == [[0, 1]]


def test_cl_inside_ml_group_names_chain():
    with pytest.raises(InfeasibleError) as ei:
        _prob(ml=[(0, 1), (1, 2)], cl=[(2, 0)])
    assert ei.value.reason == "ml_cl_conflict" and (0, 2) in ei.value.pairs
    assert "0 - 1 - 2" in str(ei.value)


def test_k2_inference_merges_colour_classes():
    # CL path 0-1-2-3 and pair 4-5 at k = 2: classes {0,2}, {1,3}, {4}, {5}, {6}, {7}
    p = _prob(n=8, k=2, cl=[(0, 1), (1, 2), (2, 3), (4, 5)])
    assert p.s == 6
    pl = p.point_labels
    assert pl[0] == pl[2] and pl[1] == pl[3] and pl[0] != pl[1]
    assert len({pl[4], pl[5], pl[6], pl[7], pl[0], pl[1]}) == 6
    p_no = _prob(n=8, k=2, cl=[(0, 1), (1, 2), (2, 3), (4, 5)], infer_k2=False)
    assert p_no.s == 8
    # the inference is exact: every feasible partition keeps the merged classes together
    for lab in feasible_partitions(8, 2, (), [(0, 1), (1, 2), (2, 3), (4, 5)]):
        assert lab[0] == lab[2] and lab[1] == lab[3]


def test_k2_odd_cycle_raises():
    with pytest.raises(InfeasibleError) as ei:
        _prob(n=5, k=2, cl=[(0, 1), (1, 2), (0, 2)])
    assert ei.value.reason == "odd_cycle" and len(ei.value.pairs) == 3


def test_merge_leaves_parent_unchanged_and_maps():
    p = _prob(n=7, k=3, ml=[(0, 1)], cl=[(2, 3), (4, 5)])
    e0, W0, cl0, pl0, s0 = p.e.copy(), p.W.copy(), p.cl.copy(), p.point_labels.copy(), p.s
    c = p.merge(3, 1)
    np.testing.assert_array_equal(p.e, e0)
    np.testing.assert_array_equal(p.W, W0)
    np.testing.assert_array_equal(p.cl, cl0)
    np.testing.assert_array_equal(p.point_labels, pl0)
    assert p.s == s0 and c.s == s0 - 1
    pm = c.parent_map
    assert pm.shape == (s0,) and pm[1] == pm[3]
    assert len(set(pm.tolist())) == c.s
    # the map carries sizes, sums and point labels
    np.testing.assert_allclose(np.bincount(pm, weights=p.e), c.e)
    np.testing.assert_allclose(c.W[pm[1]], p.W[1] + p.W[3])
    np.testing.assert_array_equal(c.point_labels, pm[p.point_labels])
    assert c.c0 == p.c0


def test_add_cl_leaves_parent_unchanged():
    p = _prob(n=6, k=3, cl=[(0, 1)])
    c = p.add_cl(2, 4)
    assert len(p.cl) == 1 and len(c.cl) == 2
    np.testing.assert_array_equal(c.parent_map, np.arange(p.s))
    assert [2, 4] in c.cl.tolist()
    np.testing.assert_array_equal(c.C, p.C)


def test_merge_of_cl_pair_is_infeasible():
    p = _prob(n=6, k=3, cl=[(0, 1)])
    with pytest.raises(InfeasibleError):
        p.merge(0, 1)


def test_k2_inference_in_children_and_parent_map():
    p = _prob(n=6, k=2, cl=[(0, 1)])
    c = p.add_cl(1, 2)  # path 0-1-2: {0, 2} merge in the child
    assert c.s == p.s - 1
    assert c.parent_map[0] == c.parent_map[2] and c.parent_map[0] != c.parent_map[1]
    assert p.s == 6


@pytest.mark.parametrize("seed", range(5))
def test_super_objective_equals_sse(seed):
    rng = np.random.default_rng(seed)
    X, ml, cl = random_instance(rng, 9, d=3, n_ml=3, n_cl=0)
    p = Problem.from_instance(make_instance(X, 3, ml, cl))
    for _ in range(10):
        sl = rng.integers(0, 3, size=p.s)
        assert p.super_objective(sl) == pytest.approx(sse(X, p.to_points(sl)), abs=1e-9)


@pytest.mark.parametrize("d", [1, 3, 40])
def test_group_sums_agrees_in_every_regime(monkeypatch, d):
    import pcsos.problem as problem_mod

    rng = np.random.default_rng(d)
    labels = rng.integers(0, 7, size=50)
    labels[:7] = np.arange(7)
    M = rng.normal(size=(50, d))
    want = np.zeros((9, d))  # labels 7 and 8 have no member: zero rows
    for i, h in enumerate(labels):
        want[h] += M[i]
    dense = problem_mod.group_sums(labels, M, 9)
    monkeypatch.setattr(problem_mod, "ONE_HOT_MAX", 0)  # the large-instance paths
    large = problem_mod.group_sums(labels, M, 9)
    np.testing.assert_allclose(dense, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(large, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(problem_mod.group_sums(labels, M[:, 0], 9), want[:, 0])


def test_input_a_review_found_refused_or_untyped():
    # pandas' mix of float and bool columns is an object array (get_dummies); Decimals are
    # numbers; an integer of 400 digits is out of range, not 'not an integer', and shown cut
    from decimal import Decimal

    X = np.array([[1.0, True], [2.0, False], [3.0, True]], dtype=object)
    assert make_instance(X, 2).X.tolist() == [[1.0, 1.0], [2.0, 0.0], [3.0, 1.0]]
    assert make_instance([[Decimal("1.5")], [Decimal(2)]], 1).X.tolist() == [[1.5], [2.0]]
    with pytest.raises(InputError, match=r"index out of range 0\.\.2") as exc:
        make_instance([[0.0], [1.0], [2.0]], 2, ml=[(0, 10 ** 400)])
    assert "(401 digits)" in str(exc.value)
    with pytest.raises(InputError, match="not a numeric matrix"):
        make_instance([[10 ** 400], [1], [2]], 2)
