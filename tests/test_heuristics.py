"""Heuristics: validity on random instances, brute-force optimality rates, the contract."""

import math
import re

import numpy as np
import pytest
from bruteforce import assert_labels_obey, brute_force, labelling_sse
from conftest import planted_pairs, random_instance

import pcsos
from pcsos.errors import InfeasibleError, InputError
from pcsos.heuristics import (
    HeuristicResult,
    available_heuristics,
    get_heuristic,
    register_heuristic,
    run_heuristic,
)
from pcsos.heuristics import registry as reg
from pcsos.problem import Problem, make_instance

BUILTIN = ["ipc-kmeans", "s-mdeclust", "blpkm-cc", "cop-kmeans", "repair"]
EXACT_ASSIGNMENT = ["ipc-kmeans", "s-mdeclust", "blpkm-cc"]  # never fail when feasible
FAST = {"s-mdeclust": {"N_max": 30, "P": 8}}  # keeps the property loops short


def assert_valid(res, X, k, ml, cl):
    """The solution checks of acceptance 1, written independently of pcsos."""
    lab = res.labels
    assert lab.shape == (len(X),)
    assert_labels_obey(lab, k, ml, cl)
    assert res.objective == pytest.approx(labelling_sse(X, lab), rel=1e-9, abs=1e-9)


def planted_instance(rng, n, k, n_ml, n_cl, d=2):
    """A feasible instance by construction: pairs drawn from a planted k-partition."""
    truth = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    rng.shuffle(truth)
    X = rng.normal(size=(n, d)) + truth[:, None] * 1.5
    ml, cl = planted_pairs(rng, truth, n_ml, n_cl)
    return X, ml, cl


def test_registry_lists_builtins():
    names = available_heuristics()
    for name in BUILTIN:
        assert name in names
        assert callable(get_heuristic(name))
    with pytest.raises(InputError, match="unknown heuristic"):
        get_heuristic("no-such-heuristic")


def test_property_valid_solutions_and_cop_failures():
    """Acceptance 1: every returned solution is valid; the exact-assignment heuristics always
    find one on feasible instances, also where COP-k-means fails."""
    rng = np.random.default_rng(11)
    cop_failed_feasible = 0
    checked = 0
    for t in range(45):
        n = int(rng.integers(12, 40))
        k = int(rng.integers(2, 5))
        X, ml, cl = planted_instance(rng, n, k, int(rng.integers(0, n // 3)),
                                     int(rng.integers(n // 2, 3 * n)))
        p = Problem.from_instance(make_instance(X, k, ml, cl))
        cop = run_heuristic("cop-kmeans", p, seed=t, n_init=1)  # one run, as in the papers
        if cop.status == "found":
            assert_valid(cop, X, k, ml, cl)
        else:
            assert cop.status == "no_solution" and cop.labels is None
            assert math.isinf(cop.objective)
            cop_failed_feasible += 1
        for name in EXACT_ASSIGNMENT + ["repair"]:
            res = run_heuristic(name, p, seed=t, **FAST.get(name, {}))
            if name == "repair" and res.status == "no_solution":
                continue  # Alg. 6 has no guarantee
            assert res.status == "found", (name, res.message)
            assert_valid(res, X, k, ml, cl)
            checked += 1
    print(f"COP-k-means failed on {cop_failed_feasible}/45 feasible instances")
    assert cop_failed_feasible >= 3
    assert checked >= 45 * 3


def test_infeasible_instances_are_never_found():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 2))
    # K4 of cannot-links with k = 3 passes preprocessing but has no 3-colouring
    cl = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    p = Problem.from_instance(make_instance(X, 3, [], cl))
    for name in BUILTIN:
        res = run_heuristic(name, p, seed=0)
        assert res.status in ("infeasible", "no_solution"), name
        assert res.labels is None and math.isinf(res.objective)
    for name in EXACT_ASSIGNMENT:
        assert run_heuristic(name, p, seed=0).status == "infeasible"


def tiny_cases(count, seed):
    """Random feasible tiny instances (n <= 10) with their brute-force optimum."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n = int(rng.integers(5, 11))
        k = int(rng.integers(2, 5))
        X, ml, cl = random_instance(rng, n, 2, int(rng.integers(0, 4)),
                                    int(rng.integers(0, 8)))
        opt, lab = brute_force(X, k, ml, cl)
        if lab is None:
            continue
        try:
            p = Problem.from_instance(make_instance(X, k, ml, cl))
        except InfeasibleError:  # pragma: no cover - brute force said feasible
            raise
        out.append((X, k, ml, cl, p, opt))
    return out


@pytest.mark.parametrize("name,count", [("ipc-kmeans", 150), ("s-mdeclust", 60)])
def test_tiny_instances_reach_bruteforce_optimum(name, count):
    """Acceptance 2: the optimum (tests/bruteforce.py) on >= 95 % of random tiny cases."""
    hits = 0
    for t, (X, k, ml, cl, p, opt) in enumerate(tiny_cases(count, seed=2024)):
        res = run_heuristic(name, p, seed=t)
        assert res.status == "found"
        assert_valid(res, X, k, ml, cl)
        assert res.objective >= opt - 1e-9 * max(1.0, opt)  # never below the optimum
        hits += res.objective <= opt + 1e-9 * max(1.0, opt)
    rate = hits / count
    print(f"{name}: brute-force optimum on {hits}/{count} = {rate:.1%}")
    assert rate >= 0.95


def clustering_matrix(super_labels, e):
    """The SDP's feasible point for a clustering: Z_ij = 1/|C| (sizes in original points)."""
    s = len(super_labels)
    Z = np.zeros((s, s))
    for h in np.unique(super_labels):
        idx = np.flatnonzero(super_labels == h)
        Z[np.ix_(idx, idx)] = 1.0 / e[idx].sum()
    return Z


def test_sdp_init_recovers_the_clustering_of_a_tight_z():
    """Alg. 2: from the optimum's clustering matrix (plus noise) IPC-k-means returns it."""
    rng = np.random.default_rng(8)
    for t in range(15):
        n, k = int(rng.integers(6, 11)), int(rng.integers(2, 4))
        X, ml, cl = random_instance(rng, n, 2, 1, 2)
        opt, lab = brute_force(X, k, ml, cl)
        if lab is None:
            continue
        p = Problem.from_instance(make_instance(X, k, ml, cl))
        sl = np.empty(p.s, dtype=np.int64)
        sl[p.point_labels] = lab
        Z = clustering_matrix(sl, p.e)
        N = rng.normal(scale=1e-3, size=Z.shape)
        res = run_heuristic("ipc-kmeans", p, Z=Z + N + N.T, seed=t)
        assert res.stats["init"] == "sdp" and res.stats["starts"] == 1
        assert res.objective == pytest.approx(opt, rel=1e-9, abs=1e-9)


def test_smdeclust_variants_and_options():
    rng = np.random.default_rng(4)
    X, ml, cl = planted_instance(rng, 30, 3, 5, 25)
    p = Problem.from_instance(make_instance(X, 3, ml, cl))
    for variant in ("S-MDE", "SM-MDE", "SG-MDE", "SMG-MDE"):
        res = run_heuristic("s-mdeclust", p, seed=1, variant=variant, P=6, N_max=20)
        assert res.status == "found", variant
        assert_valid(res, X, 3, ml, cl)
        assert res.stats["variant"] == variant
        assert res.stats["stop"] in ("N_max", "collapsed")
    with pytest.raises(InputError):
        run_heuristic("s-mdeclust", p, variant="XX")
    with pytest.raises(InputError):
        run_heuristic("s-mdeclust", p, P=3)
    with pytest.raises(InputError, match="unknown"):
        run_heuristic("ipc-kmeans", p, n_inti=3)


def test_smdeclust_population_is_twenty_up_to_k_six_and_three_k_beyond():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))

    def population(p, **options) -> int:
        seen = []
        res = run_heuristic("s-mdeclust", p, seed=1, max_generations=1,
                            progress=lambda info: seen.append(info.get("of")), **options)
        assert res.status == "found"
        return max(v for v in seen if v is not None)

    for k, want in ((3, 20), (6, 20), (8, 24)):
        assert population(Problem.from_instance(make_instance(X, k))) == want, k
    assert population(Problem.from_instance(make_instance(X, 8)), P=5) == 5


@pytest.mark.parametrize("variant", ["SM-MDE", "SMG-MDE"])
def test_smdeclust_mutation_probability_one_over_generation(variant):
    """As the authors' code: every child of generation 1 is mutated, then with probability
    1 / g (over 5 generations of 6 children: 6 * H_5 = 13.7 expected, 30 children)."""
    rng = np.random.default_rng(4)
    X, ml, cl = planted_instance(rng, 30, 3, 5, 25)
    p = Problem.from_instance(make_instance(X, 3, ml, cl))
    one = run_heuristic("s-mdeclust", p, seed=1, variant=variant, P=6, N_max=10 ** 6,
                        tol=0.0, max_generations=1)
    assert one.stats["offspring"] == 6 and one.stats["mutations"] == 6
    five = run_heuristic("s-mdeclust", p, seed=1, variant=variant, P=6, N_max=10 ** 6,
                         tol=-1.0, max_generations=5)
    assert five.stats["offspring"] == 30 and five.stats["stop"] == "max_generations"
    assert 6 < five.stats["mutations"] < 24
    no = run_heuristic("s-mdeclust", p, seed=1, variant="SG-MDE", P=6, max_generations=3)
    assert no.stats["mutations"] == 0


def test_blpkm_unsquared_variant_and_repair_start():
    rng = np.random.default_rng(6)
    X, ml, cl = planted_instance(rng, 40, 3, 10, 20)
    p = Problem.from_instance(make_instance(X, 3, ml, cl))
    res = run_heuristic("blpkm-cc", p, seed=0, distance="euclidean", n_init=3)
    assert res.status == "found" and res.stats["distance"] == "euclidean"
    assert_valid(res, X, 3, ml, cl)
    # repair from a labelling that violates pairs (all CL pairs joined, ML pairs split)
    bad = np.zeros(40, dtype=np.int64)
    bad[::3] = 1
    bad[1::3] = 2
    res = run_heuristic("repair", p, seed=0, labels=bad)
    assert res.status == "found"
    assert_valid(res, X, 3, ml, cl)
    assert res.stats["cl_moves"] + res.stats["ml_moves"] > 0


def test_seed_reproducible_and_time_limit_honoured():
    rng = np.random.default_rng(9)
    X, ml, cl = planted_instance(rng, 60, 4, 10, 40)
    p = Problem.from_instance(make_instance(X, 4, ml, cl))
    a = run_heuristic("s-mdeclust", p, seed=3, P=6, N_max=15)
    b = run_heuristic("s-mdeclust", p, seed=3, P=6, N_max=15)
    assert np.array_equal(a.labels, b.labels) and a.objective == b.objective
    Xb, mlb, clb = planted_instance(rng, 400, 5, 50, 250)
    pb = Problem.from_instance(make_instance(Xb, 5, mlb, clb))
    res = run_heuristic("s-mdeclust", pb, seed=0, time_limit=1.0)
    assert res.stats["seconds"] < 1.0 + 1.5  # one assignment may overrun slightly
    assert res.status in ("found", "no_solution")
    res = run_heuristic("ipc-kmeans", pb, seed=0, time_limit=0.0)
    assert res.status == "no_solution"
    with pytest.raises(InputError):
        run_heuristic("ipc-kmeans", pb, time_limit=-1)


def test_node_problem_constraints_are_respected():
    """On a child node (merge + extra CL) the labels honour the node's decisions too."""
    rng = np.random.default_rng(12)
    X, ml, cl = planted_instance(rng, 20, 3, 2, 4)
    root = Problem.from_instance(make_instance(X, 3, ml, cl))
    child = root.merge(0, 1).add_cl(2, 3)
    for name in EXACT_ASSIGNMENT:
        res = run_heuristic(name, child, seed=0, **FAST.get(name, {}))
        assert res.status == "found"
        sl = res.super_labels
        assert len(sl) == child.s and child.satisfies(sl)
        assert np.array_equal(child.to_points(sl), res.labels)
        assert_valid(res, X, 3, ml, cl)


def test_register_and_reject_invalid_plugin_output():
    calls = []

    def splitter(problem, Z, rng, deadline, **options):
        calls.append(options)
        lab = np.arange(problem.n) % problem.k  # ignores every pair
        return HeuristicResult(status="found", labels=lab)

    register_heuristic("test-splitter", splitter, replace=True)
    try:
        with pytest.raises(InputError, match="already registered"):
            register_heuristic("test-splitter", splitter)
        X = np.arange(12.0)[:, None]
        p = Problem.from_instance(make_instance(X, 3, [(0, 3)], [(1, 4)]))
        res = run_heuristic("test-splitter", p, seed=0, flag=1)
        assert calls == [{"flag": 1}]
        assert res.status == "no_solution" and "rejected" in res.stats
        assert res.labels is None and "must-link" in res.message
    finally:
        reg._REGISTERED.pop("test-splitter", None)


PLUGIN = '''
import numpy as np
from pcsos.heuristics import HeuristicResult, run_heuristic


class FirstFit:
    """A toy third-party heuristic: IPC-k-means with one start, labelled by this plugin."""

    def __call__(self, problem, Z, rng, deadline, **options):
        res = run_heuristic("ipc-kmeans", problem, seed=rng, n_init=1)
        res.stats["plugin"] = "toy"
        return HeuristicResult(status=res.status, super_labels=res.super_labels,
                               stats=res.stats)
'''


def test_entry_point_plugin_is_discovered(tmp_path, monkeypatch):
    """A third-party package (a dist-info on sys.path) registers through the entry point."""
    (tmp_path / "toy_pcsos_plugin.py").write_text(PLUGIN)
    dist = tmp_path / "toy_pcsos_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-pcsos-plugin\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text("[pcsos.heuristics]\n"
                                           "toy-first-fit = toy_pcsos_plugin:FirstFit\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "toy-first-fit" in available_heuristics()
    X = np.array([[0.0], [0.1], [5.0], [5.2], [9.0]])
    p = Problem.from_instance(make_instance(X, 2, [], [(0, 1)]))
    res = run_heuristic("toy-first-fit", p, seed=0)
    assert res.status == "found" and res.stats["plugin"] == "toy"
    assert res.labels[0] != res.labels[1]


def test_ipc_kmeans_kcenter_start_is_valid_and_never_worse_than_alone():
    """The k-center start is one extra start: the result obeys every pair, and adding it to
    the same k-means++ starts can only keep or lower the SSE."""
    import numpy as np

    from pcsos.heuristics import run_heuristic
    from pcsos.problem import Problem, make_instance, pairs_satisfied

    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(0, 1, (15, 2)), rng.normal(4, 1, (15, 2)), rng.normal((0, 5), 1, (15, 2))]
    ml, cl = [(0, 1), (20, 21)], [(0, 20), (1, 40), (30, 44)]
    prob = Problem.from_instance(make_instance(X, 3, ml, cl))
    plain = run_heuristic("ipc-kmeans", prob, seed=0, n_init=3)
    both = run_heuristic("ipc-kmeans", prob, seed=0, n_init=3, kcenter_start=True)
    assert both.status == "found"
    assert pairs_satisfied(both.labels, prob.instance.ml, prob.instance.cl)
    assert len(set(both.labels.tolist())) == 3
    assert both.objective <= plain.objective + 1e-9 * plain.objective


@pytest.mark.parametrize("options, words", [
    ({"n_init": "abc"}, "n_init='abc': expected an integer >= 1"),
    ({"n_init": -5}, "n_init=-5: expected an integer >= 1"),
    ({"n_init": 1.5}, "n_init=1.5: expected an integer >= 1"),
    ({"tol": float("nan")}, "tol=nan: expected a number (not nan)"),
    ({"kcenter_start": 1}, "expected true or false"),
    ({"init": 3}, "expected a string"),
    ({"bogus": 1}, "unknown ipc-kmeans option 'bogus'"),
    ({"seed": 3}, "'seed' is not an option of ipc-kmeans but an argument of the call"),
])
def test_heuristic_options_are_checked_before_any_run(options, words):
    # before: an internal error deep in the run ('abc'), nothing run (-5), Python's
    # TypeError at the call (seed), or an unknown name found at the first node that ran it
    from pcsos.heuristics import check_options

    with pytest.raises(InputError, match=re.escape(words)):
        check_options("ipc-kmeans", options)
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(InputError, match=re.escape(words)):
        pcsos.solve(X, 2, heuristic_options=options)
    check_options("s-mdeclust", {"tol": -1.0, "P": None, "assign_time_limit": None})


def test_check_options_takes_what_signatures_allow():
    # Optional[...] None, inf for a limit, numpy scalars, and the tree's init_labels
    from typing import Optional

    from pcsos.heuristics import check_options

    def plug(problem, Z, rng, deadline, *, limit: Optional[float] = 5.0, **kw):  # noqa: UP045
        return HeuristicResult(status="no_solution")

    register_heuristic("test-check-options", plug)
    check_options("test-check-options", {"limit": None})
    check_options("repair", {"max_seconds": math.inf})
    check_options("ipc-kmeans", {"tol": np.float32(1e-4), "n_init": np.int64(3),
                                 "init_labels": [0, 1]})
