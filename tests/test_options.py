"""SolverOptions (one options object for solve, the CLI and the estimator) and the
estimator's scikit-learn conformance."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import numpy as np
import pytest

import pcsos
from pcsos.cuts.loop import CuttingPlaneSettings
from pcsos.errors import InputError
from pcsos.estimator import PCSOSClustering
from pcsos.options import SolverOptions


def _blobs(n=24, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=0.4, size=(n, 2)) + 4.0 * (np.arange(n) % k)[:, None]


def test_unknown_option_names_the_known_ones():
    with pytest.raises(InputError, match="unknown option.*'tolerance'.*the options are tol"):
        pcsos.solve(_blobs(), 3, tolerance=1e-3)


@pytest.mark.parametrize("change, needle", [
    ({"tol": 1.5}, "tol must be a number in"),
    ({"tol": True}, "tol must be a number in"),
    ({"abs_tol": -1}, "abs_tol must be a finite number >= 0"),
    ({"abs_tol": float("inf")}, "abs_tol must be a finite number >= 0"),
    ({"max_nodes": 0}, "max_nodes must be a positive integer"),
    ({"workers": 2.5}, "workers must be a positive integer"),
    ({"workers": 2.0}, "workers must be a positive integer"),
    ({"bound_settings": {"max_iter": True}}, "max_iter must be a positive integer"),
    ({"bound_settings": {"max_iter": 5.0}}, "max_iter must be a positive integer"),
    ({"threads": "2"}, "threads must be a positive integer"),
    ({"time_limit": 0}, "time_limit must be > 0"),
    ({"heuristic_time_limit": -1}, "heuristic_time_limit must be > 0"),
    ({"order": "random"}, "order must be one of best, depth, breadth"),
    ({"heuristic": "nope"}, "nope"),
    ({"root_heuristic": "nope"}, "nope"),
    ({"feasibility_backend": "cplex"}, "feasibility_backend must be"),
    ({"bound_settings": {"backend": "sedumi"}}, "backend must be one of admm"),
    ({"bound_settings": {"tolerance": 1e-3}}, "unknown bound setting.*'tolerance'.*are engine"),
    ({"seed": -1}, "seed must be a non-negative integer"),
    ({"bound_settings": [1]}, "bound settings must be a BoundSettings, a dict or None"),
    ({"cp_settings": {"tail_off": 2}}, "invalid cutting-plane settings"),
    ({"cp_settings": 3}, "cp_settings must be a CuttingPlaneSettings"),
])
def test_each_bad_option_is_an_input_error_naming_it(change, needle):
    with pytest.raises(InputError, match=needle) as err:
        SolverOptions.make(**change).checked()
    # a bound setting is named inside its option: 'bound_settings.backend'
    assert err.value.source.split(".")[0] == next(iter(change))


def test_numpy_integers_are_integers_in_every_option_and_setting():
    # one test (pcsos.errors.is_integer) behind every "must be an integer": an index or a
    # count read from a numpy array passes where the same Python int does
    opts = SolverOptions.make(workers=np.int64(2), max_nodes=np.int32(7), seed=np.uint8(3),
                              bound_settings={"max_iter": np.int64(50),
                                              "child_exact_every": np.int16(2)}).checked()
    assert (opts.workers, opts.max_nodes, opts.seed) == (2, 7, 3)
    assert (opts.bound_settings.max_iter, opts.bound_settings.child_exact_every) == (50, 2)


def test_checked_makes_the_loop_stop_where_the_tree_prunes():
    for cp in (None, {"tail_off": 0.1, "prune_tol": 0.5},
               CuttingPlaneSettings(prune_tol=0.5)):
        out = SolverOptions(tol=1e-3, abs_tol=1e-7, cp_settings=cp).checked()
        assert isinstance(out.cp_settings, CuttingPlaneSettings)
        assert (out.cp_settings.prune_tol, out.cp_settings.prune_abs_tol) == (1e-3, 1e-7)
    given = {"tail_off": 0.1}
    SolverOptions(cp_settings=given).checked()
    assert given == {"tail_off": 0.1}  # the caller's dict is not changed


def test_the_tree_has_its_own_cut_defaults_and_a_bound_alone_the_loops():
    from pcsos.cli import build_parser
    from pcsos.cli.common import cut_settings

    tree = SolverOptions().checked().cp_settings
    assert "star" in tree.families and tree.tail_off_root == 0.1 and tree.star_leaves == 3
    loop = CuttingPlaneSettings()
    assert "star" not in loop.families and loop.tail_off_root is None
    assert loop.star_leaves == 4
    # a dict overrides the tree's defaults field by field; an object replaces them
    mine = SolverOptions(cp_settings={"families": "all"}).checked().cp_settings
    assert "star" not in mine.families and mine.tail_off_root == 0.1
    assert SolverOptions(cp_settings=loop).checked().cp_settings.tail_off_root is None
    # pcsos bound has no tree: its --cuts all runs the loop's settings
    args = build_parser().parse_args(["bound", "data.txt", "--cuts", "all"])
    assert cut_settings(args, args.cuts, 1e-4).tail_off_root is None
    assert cut_settings(args, args.cuts, 1e-4).star_leaves == 4
    args = build_parser().parse_args(["solve", "data.txt"])
    assert cut_settings(args, args.cuts, 1e-4).star_leaves == 3


def test_an_options_object_and_keywords_give_the_same_solve():
    X = _blobs()
    opts = SolverOptions(tol=1e-3, workers=1, root_heuristic=None)
    a = pcsos.solve(X, 3, options=opts)
    b = pcsos.solve(X, 3, tol=1e-3, workers=1, root_heuristic=None)
    c = pcsos.solve(X, 3, options=dataclasses.replace(opts, tol=0.5), tol=1e-3)
    assert a.objective == b.objective == c.objective
    assert np.array_equal(a.labels, b.labels)
    # the keyword won over the object's tol = 0.5
    assert "tolerance 0.001" in c.message and c.gap <= 1e-3
    assert SolverOptions.make(opts, tol=0.25).tol == 0.25 and opts.tol == 1e-3


# ------------------------------------------------------------------ estimator
def test_the_estimator_takes_every_solver_option():
    params = inspect.signature(PCSOSClustering.__init__).parameters
    names = set(params) - {"self"}
    assert names == ({"n_clusters", "size_min", "size_max", "sizes", "random_state", "verbose"}
                     | (set(SolverOptions.names()) - {"seed"}))
    defaults = SolverOptions()
    for name in set(SolverOptions.names()) - {"seed"}:
        want = getattr(defaults, name)
        assert params[name].default == (None if want == {} else want), name
    est = PCSOSClustering(4, time_limit=30, heuristic_options={"n_init": 3}, random_state=5)
    opts = est.solver_options()
    assert opts.time_limit == 30 and opts.heuristic_options == {"n_init": 3}
    assert opts.seed == 5


@pytest.mark.parametrize("rs", [None, 3, np.int64(3), np.random.default_rng(0),
                                np.random.RandomState(0)])
def test_random_state_forms(rs):
    est = PCSOSClustering(3, workers=1, random_state=rs).fit(_blobs())
    assert est.status_ == "optimal"


@pytest.mark.parametrize("rs", [-1, 1.5, "0", True])
def test_bad_random_state(rs):
    with pytest.raises(InputError, match="random_state must be"):
        PCSOSClustering(3, random_state=rs).fit(_blobs())


def test_the_estimator_works_without_scikit_learn():
    code = """
import sys
sys.modules["sklearn"] = None  # as if it were not installed
import numpy as np
from pcsos.estimator import PCSOSClustering
X = np.random.default_rng(0).normal(size=(12, 2)) + 5.0 * (np.arange(12) % 2)[:, None]
est = PCSOSClustering(2, workers=1, tol=1e-3)
assert "tol=0.001" in repr(est) and est.get_params()["tol"] == 1e-3
assert est.set_params(tol=1e-4) is est and est.tol == 1e-4
try:
    est.set_params(bogus=1)
except ValueError:
    pass
else:
    raise AssertionError("set_params accepted an unknown name")
labels = est.fit_predict(X, ml=[(0, 2)])
assert (est.predict(X) == labels).all() and est.n_features_in_ == 2
for bad in (X[0], X[:, :1]):
    try:
        est.predict(bad)
    except ValueError as exc:
        print("refused:", exc)
    else:
        raise AssertionError("predict accepted a wrong shape")
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    assert "reshape your data" in p.stdout and "X has 1 features" in p.stdout


def _sklearn_checks():
    try:
        from sklearn.utils.estimator_checks import parametrize_with_checks
    except ImportError:
        return pytest.mark.parametrize("estimator, check", [pytest.param(
            None, None, marks=pytest.mark.skip(reason="scikit-learn not installed"))])
    # the checks fit noise of up to 100 points, whose bound closes slowly: a node limit, a
    # loose SDP tolerance and one cutting-plane round keep each fit short (a stopped fit
    # still sets every attribute; one worker keeps it deterministic)
    # a zero weight is an InputError (weights are positive), where this check takes it
    # as a point left out
    failing = {"check_sample_weight_equivalence_on_dense_data": "zero weights are rejected"}
    return parametrize_with_checks([PCSOSClustering(
        n_clusters=3, workers=1, max_nodes=3, bound_settings={"tol": 1e-3},
        cp_settings={"max_rounds_root": 1, "max_rounds_child": 1})],
        expected_failed_checks=lambda est: failing)


@_sklearn_checks()
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_the_cli_defaults_are_the_solvers():
    """Every default of ``pcsos solve`` is SolverOptions()'s, and the SDP tolerance's
    default is the one SDP_TOL everywhere (the CLI builds its defaults from them)."""
    import inspect
    import os

    from pcsos.bounds import SDP_TOL, BoundSettings, solve_sdp
    from pcsos.bounds.admm import solve_admm
    from pcsos.bounds.cvxpy_backend import solve_cvxpy
    from pcsos.bounds.mosek_backend import solve_mosek
    from pcsos.cli import build_parser
    from pcsos.cli.solve import solver_options

    args = build_parser().parse_args(["solve", "data.txt"])
    cli, lib = solver_options(args).checked(), SolverOptions().checked()
    for name in SolverOptions.names():
        if name not in ("workers", "bound_settings", "seed"):
            assert getattr(cli, name) == getattr(lib, name), name
    assert lib.workers is None and cli.workers == (os.cpu_count() or 1)  # None: the CPUs
    assert (lib.seed or 0) == cli.seed == 0  # None: seed 0
    assert lib.bound_settings == cli.bound_settings == BoundSettings()
    assert BoundSettings().tol == SDP_TOL
    # the bound settings' defaults are written once, in BoundSettings: no solver restates one
    for fn in (solve_sdp, solve_admm, solve_cvxpy, solve_mosek):
        for name in set(BoundSettings.names()) & set(inspect.signature(fn).parameters):
            assert inspect.signature(fn).parameters[name].default is inspect.Parameter.empty, (
                fn.__name__, name)
    assert build_parser().parse_args(["bound", "data.txt"]).tol == SDP_TOL


@pytest.mark.parametrize("command", ["solve", "bound", "certify"])
def test_an_unknown_bound_setting_is_one_clear_error_in_the_api_and_the_cli(
        tmp_path, capsys, command):
    """The same misspelt setting is one InputError through the API and exit code 2 with
    the same words through every command that bounds; a known one is accepted."""
    from pcsos.cli import main

    X = np.array([[0, 0], [0, 1], [1, 0], [5, 5], [5, 6], [6, 5]], dtype=float)
    with pytest.raises(InputError, match="unknown bound setting.*'tolerance'") as err:
        pcsos.solve(X, 2, bound_settings={"tolerance": 1e-3})
    words = str(err.value).split(": ", 1)[-1]
    data = tmp_path / "d.txt"
    data.write_text("6 2\n" + "\n".join(f"{a:g} {b:g}" for a, b in X) + "\n")
    code = main([command, str(data), "-k", "2", "--bound-option", "tolerance=1e-3"])
    err_text = capsys.readouterr().err
    assert code == 2 and words in err_text and "--bound-option" in err_text
    code = main([command, str(data), "-k", "2", "--bound-option", "polish=0",
                 "--bound-option", "max_iter=50000"])
    assert code == 0


@pytest.mark.parametrize("command", ["solve", "bound", "heuristic", "kcenter", "certify",
                                     "impact"])
def test_a_negative_seed_is_a_usage_error_in_every_command(tmp_path, capsys, command):
    # numpy refuses a negative seed; it failed as an internal error (exit 1) in five of them
    from pcsos.cli import main

    data = tmp_path / "d.txt"
    data.write_text("6 2\n0 0\n0 1\n1 0\n5 5\n5 6\n6 5\n")
    args = [command] + (["ipc-kmeans"] if command == "heuristic" else [])
    with pytest.raises(SystemExit) as exc:
        main([*args, str(data), "-k", "2", "--seed", "-1"])
    assert exc.value.code == 2
    assert "argument --seed: must be >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("call", ["certify", "impact", "run_heuristic", "kcenter"])
def test_a_negative_seed_is_an_input_error_at_every_entry(call):
    from pcsos.heuristics import run_heuristic
    from pcsos.kcenter import solve as kcenter_solve
    from pcsos.problem import Problem, make_instance

    X = [[0.0], [1.0], [5.0], [6.0]]
    run = {"certify": lambda: pcsos.certify(X, 2, seed=-1),
           "impact": lambda: pcsos.impact(X, 2, cl=[(0, 3)], seed=-1),
           "run_heuristic": lambda: run_heuristic(
               "ipc-kmeans", Problem.from_instance(make_instance(X, 2)), seed=-1),
           "kcenter": lambda: kcenter_solve(X, 2, seed=-1)}[call]
    with pytest.raises(InputError, match="seed must be a non-negative integer, got -1"):
        run()


def test_check_seed_takes_what_default_rng_takes():
    from pcsos.errors import check_seed

    for seed in (None, 0, np.int64(4), [1, 2], np.random.PCG64(1),
                 np.random.SeedSequence(3), np.random.default_rng(5)):
        check_seed(seed)
        np.random.default_rng(seed)  # numpy agrees
    for seed in (-1, [1, -2], [], "a", 1.5):
        with pytest.raises(InputError, match="seed must be a non-negative integer"):
            check_seed(seed)


def test_numpy_numbers_are_numbers_in_the_settings():
    # np.float32 was refused for tol and time_limit (the test was isinstance(int, float))
    opts = SolverOptions(tol=np.float32(1e-3), abs_tol=np.float32(0.0),
                         time_limit=np.float32(5), bound_settings={"tol": np.float32(1e-5),
                                                                   "box": np.float64(0.1)})
    assert opts.checked().tol == pytest.approx(1e-3)
    with pytest.raises(InputError, match="tol must be a number"):
        SolverOptions(tol=np.bool_(True)).checked()
