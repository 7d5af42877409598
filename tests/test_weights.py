"""Point weights end to end (issue 33): the solver against weighted brute force, weights as
repeated points, unit weights as no weights, the clique cuts' right-hand side, bad input
(API, estimator, CLI), the checkpoint fingerprint, certify and impact."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from bruteforce import assert_certified_optimum, brute_force, feasible_partitions
from conftest import random_instance

import pcsos
import pcsos.api as api
from pcsos.checkpoint import fingerprint
from pcsos.cli import main
from pcsos.cuts.separation import clique_rhs
from pcsos.errors import InputError
from pcsos.heuristics import HeuristicResult, register_heuristic
from pcsos.io import read_weights
from pcsos.problem import Problem, make_instance, sse

OPTIONS = {
    "default": {},
    # no cuts and a loose SDP: the tree branches and leaves and Z's clusterings give the
    # upper bounds, so the weighted threshold of clustering_from_Z is exercised
    "weak": {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3}},
    "no_heuristic": {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3},
                     "heuristic": "test-nothing-w", "root_heuristic": None},
}
CASES = ([("default", s) for s in range(40)] + [("weak", s) for s in range(15)]
         + [("no_heuristic", s) for s in range(15)])


def _nothing(problem, Z, rng, deadline, **options):
    return HeuristicResult(status="no_solution")


try:
    register_heuristic("test-nothing-w", _nothing)
except Exception:  # already registered by an earlier import of this module
    pass


def _weights(rng: np.random.Generator, n: int) -> np.ndarray:
    # log-uniform over four decades: weights far from 1 are where counts and masses differ
    return np.exp(rng.uniform(math.log(0.01), math.log(100.0), size=n))


def _instance(seed: int):
    rng = np.random.default_rng(3300 + seed)
    n = int(rng.integers(4, 9))
    k = min(int(rng.integers(2, 4)), n)
    X, ml, cl = random_instance(rng, n, d=int(rng.integers(1, 3)),
                                n_ml=int(rng.integers(0, 3)), n_cl=int(rng.integers(0, 5)))
    return X, k, ml, cl, _weights(rng, n)


# ------------------------------------------------------------------ (a) brute force
@pytest.mark.parametrize("mode,seed", CASES)
def test_weighted_solve_matches_brute_force(mode, seed):
    X, k, ml, cl, w = _instance(seed)
    opt, _ = brute_force(X, k, ml, cl, weights=w)
    res = api.solve(X, k, ml, cl, sample_weight=w, workers=1, seed=0, **OPTIONS[mode])
    if math.isinf(opt):
        assert res.status == "infeasible", res
        return
    assert_certified_optimum(res, X, k, ml, cl, opt, tol=1e-4, abs_tol=None, weights=w)
    assert res.objective == pytest.approx(opt, rel=1e-6)


def test_weighted_cases_branch_and_some_are_infeasible():
    """Guard against a test set that never exercises the tree or the infeasible path."""
    inf = sum(math.isinf(brute_force(*_instance(s)[:4], weights=_instance(s)[4])[0])
              for s in range(40))
    assert inf >= 3
    nodes = [api.solve(*_instance(s)[:4], sample_weight=_instance(s)[4], workers=1, seed=0,
                       **OPTIONS["weak"]).nodes for s in range(15)]
    assert sum(n > 1 for n in nodes) >= 1, nodes


def test_problem_objective_identity_with_weights():
    """SSE = c0 - <W W^T, Z> with Z_ij = 1 / (weight of the cluster), for every clustering."""
    rng = np.random.default_rng(7)
    X, w = rng.normal(size=(6, 2)), _weights(rng, 6)
    inst = make_instance(X, 3, [(0, 1)], [], weights=w)
    p = Problem.from_instance(inst)
    assert np.allclose(p.W.sum(axis=0), 0.0, atol=1e-12)  # centred at the weighted mean
    for lab in feasible_partitions(6, 3, [(0, 1)]):
        sl = np.empty(p.s, dtype=np.int64)
        sl[p.point_labels] = lab
        mass = np.bincount(sl, weights=p.e)
        Z = (sl[:, None] == sl[None, :]) / mass[sl][:, None]
        assert np.allclose(Z @ p.e, 1.0) and math.isclose(float(np.diag(Z) @ p.e), 3.0)
        value = p.c0 - float(np.sum(p.C * Z))
        assert value == pytest.approx(sse(X, lab, w), rel=1e-10, abs=1e-12)
        assert p.super_objective(sl) == pytest.approx(inst.objective(lab), rel=1e-10)


# ------------------------------------------------------------------ (b) repeated points
@pytest.mark.parametrize("seed", range(8))
def test_integer_weights_are_repeated_points(seed):
    rng = np.random.default_rng(4400 + seed)
    n = int(rng.integers(4, 7))
    k = min(int(rng.integers(2, 4)), n)
    X, ml, cl = random_instance(rng, n, n_ml=int(rng.integers(0, 2)),
                                n_cl=int(rng.integers(0, 3)))
    w = rng.integers(1, 4, size=n)
    # copy c of point i is row first[i] + c; the copies of a point are must-linked
    first = np.concatenate([[0], np.cumsum(w)[:-1]])
    Xr = np.repeat(X, w, axis=0)
    mlr = [(int(first[i]), int(first[j])) for i, j in ml]
    mlr += [(int(first[i]), int(first[i] + c)) for i in range(n) for c in range(1, w[i])]
    clr = [(int(first[i]), int(first[j])) for i, j in cl]
    weighted = api.solve(X, k, ml, cl, sample_weight=w, workers=1, seed=0)
    repeated = api.solve(Xr, k, mlr, clr, workers=1, seed=0)
    assert weighted.status == repeated.status
    if weighted.status == "infeasible":
        return
    assert weighted.status == "optimal"
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-9, abs=1e-12)
    assert weighted.objective == pytest.approx(brute_force(X, k, ml, cl, weights=w)[0],
                                               rel=1e-9, abs=1e-12)
    # the copies of a point share a label, which is a clustering of the weighted points
    assert sse(X, repeated.labels[first], w) == pytest.approx(weighted.objective, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_uniform_integer_weights_with_sizes_are_repeated_points(seed):
    """Sizes count points: with every weight equal to c, a cluster of p weighted points is a
    cluster of c p copies, so size bounds [L, U] (exact sizes S) on the weighted points are
    [c L, c U] (c S) on the copies, and the optima agree. (With unequal weights a size in
    points of the weighted data is no size of the copies: docs/solver.md.)"""
    rng = np.random.default_rng(4500 + seed)
    n, k, c = 7, 3, int(rng.integers(2, 4))
    X, ml, cl = random_instance(rng, n, n_ml=1, n_cl=1)
    kw = [dict(size_min=2, size_max=3), dict(sizes=(3, 2, 2)), dict(size_max=4)][seed % 3]
    kwr = {key: (tuple(c * v for v in val) if key == "sizes" else c * val)
           for key, val in kw.items()}
    w = np.full(n, c)
    first = np.arange(n) * c
    Xr = np.repeat(X, w, axis=0)
    mlr = [(int(first[i]), int(first[j])) for i, j in ml]
    mlr += [(int(first[i]), int(first[i] + j)) for i in range(n) for j in range(1, c)]
    clr = [(int(first[i]), int(first[j])) for i, j in cl]
    weighted = api.solve(X, k, ml, cl, sample_weight=w, workers=1, seed=0, **kw)
    repeated = api.solve(Xr, k, mlr, clr, workers=1, seed=0, **kwr)
    opt = brute_force(X, k, ml, cl, weights=w, **kw)[0]
    assert weighted.status == repeated.status
    if weighted.status == "infeasible":
        assert math.isinf(opt)
        return
    assert weighted.status == "optimal"
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-9, abs=1e-12)
    assert weighted.objective == pytest.approx(opt, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------ (d) unit weights
@pytest.mark.parametrize("seed", range(4))
def test_unit_weights_are_bit_identical_to_none(seed):
    X, k, ml, cl, _ = _instance(100 + seed)
    a = api.solve(X, k, ml, cl, workers=1, seed=0, **OPTIONS["weak"])
    b = api.solve(X, k, ml, cl, sample_weight=np.ones(len(X)), workers=1, seed=0,
                  **OPTIONS["weak"])
    assert a.status == b.status and a.nodes == b.nodes
    assert a.objective == b.objective and a.lower_bound == b.lower_bound
    assert (a.labels is None and b.labels is None) or np.array_equal(a.labels, b.labels)
    assert make_instance(X, k, weights=[1] * len(X)).weights is None


def test_unit_weights_problem_and_clique_rhs_unchanged():
    X = np.random.default_rng(0).normal(size=(9, 2))
    p = Problem.from_instance(make_instance(X, 3, [(0, 1)], [(2, 3)]))
    Xc = X - X.mean(axis=0)
    assert p.c0 == float(np.einsum("ij,ij->", Xc, Xc))
    assert p.instance.total_weight == 9.0
    assert clique_rhs(9, 3, p.instance.max_cluster_weight) == clique_rhs(9, 3) == 1.0 / 7


# ------------------------------------------------------------------ clique cuts
def test_clique_rhs_is_valid_for_every_weighted_clustering():
    """sum_{a<b in Q} Z_ab >= 1 / max_cluster_weight for every k + 1 points Q and clustering;
    the unweighted 1 / (n - k + 1) is not (heavy points make every Z_ab small)."""
    rng = np.random.default_rng(11)
    n, k = 6, 3
    w = _weights(rng, n) * 10.0
    inst = make_instance(rng.normal(size=(n, 2)), k, weights=w)
    rhs = clique_rhs(n, k, inst.max_cluster_weight)
    worst = math.inf
    for lab in feasible_partitions(n, k):
        mass = np.bincount(lab, weights=w)
        Z = (lab[:, None] == lab[None, :]) / mass[lab][:, None]
        for Q in itertools.combinations(range(n), k + 1):
            worst = min(worst, sum(Z[a, b] for a, b in itertools.combinations(Q, 2)))
    assert rhs <= worst <= rhs * (1 + 1e-12)  # valid, and tight: the bound is attained
    assert clique_rhs(n, k) > worst


# ------------------------------------------------------------------ (c) bad input
@pytest.mark.parametrize("bad,match", [
    ([1, 1, 0, 1, 1, 1], r"weight 0\.0 of point 2 is zero"),
    ([1, -2, 1, 1, 1, 1], r"weight -2\.0 of point 1 is negative"),
    ([1, 1, 1, np.nan, 1, 1], r"weight nan of point 3 is not finite"),
    ([1, 1, 1, 1, np.inf, 1], r"weight inf of point 4 is not finite"),
    ([1, 1, 1], r"3 weights for 6 points"),
    (["a"] * 6, r"weights are not numbers"),
    # both ended in an untyped error inside the root heuristic ("Probabilities do not sum
    # to 1") or in the SDP's overflow
    ([1, 1, 1e-320, 1, 1, 1], r"weight 1e-320 of point 2 is below 2\.2e-308 \(subnormal\)"),
    ([1e308] * 6, r"the weights sum past the largest double"),
    ([1e150] * 6, r"too large: .* weights summing to 6e\+150"),
])
def test_bad_weights_are_input_errors(bad, match):
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(InputError, match=match):
        pcsos.solve(X, 2, sample_weight=bad)
    with pytest.raises(InputError, match=match):
        pcsos.PCSOSClustering(2).fit(X, sample_weight=bad)


def test_read_weights(tmp_path):
    f = tmp_path / "w.txt"
    f.write_text("1.5\n\n2\n 3e-1 \n")
    assert read_weights(f, 3).tolist() == [1.5, 2.0, 0.3]
    for text, match in [("1\n2\n", r"w\.txt: 2 weights .* for the 3 points"),
                        ("1\nx\n2\n", r"w\.txt:2: not a number: 'x'"),
                        ("1\n0\n2\n", r"w\.txt:2: weight '0' is not positive"),
                        ("1\n2\n-1\n", r"w\.txt:3: weight '-1' is not positive"),
                        ("inf\n2\n1\n", r"w\.txt:1: weight 'inf' is not finite"),
                        ("1\nnan\n1\n", r"w\.txt:2: weight 'nan' is not finite"),
                        ("1\n1e-320\n1\n", r"w\.txt:2: weight '1e-320' is below 2\.2e-308")]:
        f.write_text(text)
        with pytest.raises(InputError, match=match):
            read_weights(f, 3)


def _cli_files(tmp_path, weights: str):
    d = tmp_path / "d.txt"
    d.write_text("6 2 2\n0 0\n0 1\n1 0\n5 5\n5 6\n6 5\n")
    w = tmp_path / "w.txt"
    w.write_text(weights)
    return str(d), str(w)


@pytest.mark.parametrize("weights,match", [
    ("1\n1\n1\n1\n1\n", "w.txt: 5 weights (one a line, the last on line 5) for the 6 points"),
    ("1\n1\n1\n1\n1\n1\n1\n", "w.txt: 7 weights"),
    ("1\n1\n0\n1\n1\n1\n", "w.txt:3: weight '0' is not positive"),
    ("1\n1\n1\n-4\n1\n1\n", "w.txt:4: weight '-4' is not positive"),
    ("1\n1\n1\n1\nnan\n1\n", "w.txt:5: weight 'nan' is not finite"),
    ("1\n1\n1\n1\n1\nheavy\n", "w.txt:6: not a number: 'heavy'"),
])
@pytest.mark.parametrize("command", ["check", "solve", "bound", "heuristic"])
def test_cli_bad_weights_file_exits_2(capsys, tmp_path, command, weights, match):
    d, w = _cli_files(tmp_path, weights)
    argv = [command, d, "--weights", w] if command != "heuristic" else \
        [command, "ipc-kmeans", d, "--weights", w]
    assert main(argv) == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("args,match", [
    (["--sizes", "3,x"], "--sizes: not a whole number: 'x'"),
    (["--sizes", "3,4"], "--sizes: sizes sum to 7, not to the n = 6 points"),
    (["--sizes", "2,2,2"], "--sizes: sizes has 3 entries"),
    (["--size-min", "4"], "--size-min: k * size_min = 2 * 4 = 8 > n = 6"),
    (["--size-max", "2"], "--size-max: k * size_max = 2 * 2 = 4 < n = 6"),
    (["--size-min", "3", "--size-max", "2"], "--size-min: size_min = 3 > size_max = 2"),
    (["--sizes", "3,3", "--size-max", "4"], "--sizes: give sizes, or size_min / size_max"),
])
def test_cli_bad_sizes_exit_2(capsys, tmp_path, args, match):
    d, _ = _cli_files(tmp_path, "")
    assert main(["check", d, *args]) == 2
    assert match in capsys.readouterr().err


def test_cli_check_reports_weights_and_sizes(capsys, tmp_path):
    import json

    d, w = _cli_files(tmp_path, "1\n2\n3\n1\n2\n3\n")
    js = tmp_path / "r.json"
    assert main(["check", d, "--weights", w, "--sizes", "3,3", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "weights from" in out and "total 12" in out and "cluster sizes [3, 3]" in out
    rep = json.loads(js.read_text())
    assert rep["weights"] == w and rep["total_weight"] == 12.0 and rep["sizes"] == [3, 3]
    assert rep["size_min"] is None and rep["size_max"] is None
    assert main(["check", d, "--json", str(js)]) == 0
    assert "weights/sizes: none" in capsys.readouterr().out
    assert json.loads(js.read_text())["weights"] is None


def test_cli_solve_with_weights_matches_the_api(capsys, tmp_path):
    import json

    d, w = _cli_files(tmp_path, "1\n2\n30\n1\n2\n3\n")
    js = tmp_path / "r.json"
    assert main(["solve", d, "--weights", w, "--quiet", "--json", str(js), "--workers",
                 "1"]) == 0
    rep = json.loads(js.read_text())
    X = np.array([[0, 0], [0, 1], [1, 0], [5, 5], [5, 6], [6, 5]], dtype=float)
    wv = np.array([1, 2, 30, 1, 2, 3], dtype=float)
    assert rep["objective"] == pytest.approx(brute_force(X, 2, weights=wv)[0], rel=1e-9)
    assert rep["total_weight"] == 39.0


# ------------------------------------------------------------------ estimator
def test_estimator_sample_weight_and_size_params():
    X, k, ml, cl, w = next(inst for s in range(20) if not math.isinf(
        brute_force(*(inst := _instance(s))[:4], weights=inst[4])[0]))
    opt, _ = brute_force(X, k, ml, cl, weights=w)
    est = pcsos.PCSOSClustering(k, workers=1, random_state=0).fit(X, ml=ml, cl=cl,
                                                                   sample_weight=list(w))
    assert est.inertia_ == pytest.approx(opt, rel=1e-6)
    for h in range(k):
        inside = est.labels_ == h
        assert np.allclose(est.cluster_centers_[h], np.average(X[inside], axis=0,
                                                               weights=w[inside]))
    sized = pcsos.PCSOSClustering(2, sizes=[3, 3], size_max=None)
    assert sized.get_params()["sizes"] == [3, 3]
    sized.set_params(sizes=None, size_min=2, size_max=4)
    assert sized.get_params()["size_min"] == 2 and sized.get_params()["size_max"] == 4
    try:
        from sklearn.base import clone
    except ImportError:
        return
    assert clone(sized).get_params() == sized.get_params()


# ------------------------------------------------------------------ checkpoint, certify
def test_fingerprint_pins_weights_and_sizes():
    X = np.random.default_rng(0).normal(size=(6, 2))
    base = fingerprint(make_instance(X, 2))
    assert fingerprint(make_instance(X, 2, weights=np.ones(6))) == base
    w = np.arange(1.0, 7.0)
    fw = fingerprint(make_instance(X, 2, weights=w))
    assert fw != base and fw == fingerprint(make_instance(X, 2, weights=w.copy()))
    assert fingerprint(make_instance(X, 2, weights=w * 2)) != fw
    assert fingerprint(make_instance(X, 2, sizes=[3, 3])) != base
    assert fingerprint(make_instance(X, 2, sizes=[4, 2])) != fingerprint(
        make_instance(X, 2, sizes=[3, 3]))
    assert fingerprint(make_instance(X, 2, size_min=2)) != fingerprint(
        make_instance(X, 2, size_max=4))


def test_certify_with_weights():
    rng = np.random.default_rng(5)
    X, ml, cl = random_instance(rng, 8, n_ml=1, n_cl=2)
    w = _weights(rng, 8)
    opt, lab = brute_force(X, 2, ml, cl, weights=w)
    from pcsos import certify

    res = certify(X, 2, ml, cl, labels=lab, subset_size=4, workers=1, sample_weight=w)
    assert res.objective == pytest.approx(opt, rel=1e-12)
    assert res.lower_bound <= opt * (1 + 1e-9)
    assert sum(len(b.points) for b in res.subsets) == 8


def test_impact_refuses_weights_and_sizes():
    X = np.arange(12.0).reshape(6, 2)
    for kw in ({"sample_weight": np.ones(6) * 2}, {"sizes": [3, 3]}, {"size_min": 2}):
        with pytest.raises(InputError, match="impact does not support"):
            pcsos.impact(X, 2, [(0, 1)], [], **kw)
