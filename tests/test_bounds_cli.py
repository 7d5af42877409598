"""``pcsos bound`` end to end on a tiny written instance (and a shared one when present)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bruteforce import brute_force

from pcsos.cli import main


def _write(tmp_path, X, k, ml=(), cl=()):
    data = tmp_path / "data.txt"
    with open(data, "w") as fh:
        fh.write(f"{len(X)} {X.shape[1]} {k}\n")
        for row in X:
            fh.write(" ".join(f"{v:.17g}" for v in row) + "\n")
    cons = tmp_path / "cons.txt"
    with open(cons, "w") as fh:
        for i, j in ml:
            fh.write(f"ML {i} {j}\n")
        for i, j in cl:
            fh.write(f"CL {i} {j}\n")
    return data, cons


def test_cli_bound_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 2)) + rng.integers(0, 3, size=(9, 1)) * 3.0
    ml, cl = [(0, 1)], [(2, 3), (4, 5)]
    data, cons = _write(tmp_path, X, 3, ml, cl)
    out = tmp_path / "b.json"
    rc = main(["bound", str(data), "-c", str(cons), "-k", "3", "--threads", "1",
               "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "safe bound" in text and "super-points:    s = 8" in text
    rep = json.loads(out.read_text())
    for key in ("size", "sdp_value", "lower_bound", "primal_residual", "dual_residual",
                "iterations", "seconds", "status", "backend", "device"):
        assert key in rep
    assert rep["size"] == 8 and rep["backend"] == "admm" and rep["status"] == "solved"
    assert rep["device"] == "cpu" and "device:          cpu" in text
    opt, _ = brute_force(X, 3, ml, cl)
    assert rep["lower_bound"] <= opt
    assert abs(rep["sdp_value"] - rep["lower_bound"]) <= 1e-5 * abs(rep["sdp_value"])


def test_cli_bound_errors(tmp_path, capsys):
    X = np.arange(12.0).reshape(6, 2)
    data, cons = _write(tmp_path, X, 2, ml=[(0, 1)], cl=[(0, 1)])
    assert main(["bound", str(data), "-c", str(cons), "-k", "2"]) == 3  # infeasible
    # infeasible only for the feasibility check, not for the SDP's preprocessing: a
    # cannot-link clique larger than k, and more clusters than must-link groups (these
    # printed a bound, exit 0, and an error about the model, exit 2)
    clique = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    for k, ml, cl, words in ((3, [], clique, "cannot-link clique larger than k = 3"),
                             (3, [(0, 1), (1, 2), (2, 3), (3, 4)], [], "only 2 super-points")):
        data, cons = _write(tmp_path, X, k, ml=ml, cl=cl)
        capsys.readouterr()
        assert main(["bound", str(data), "-c", str(cons), "-k", str(k)]) == 3
        assert words in capsys.readouterr().err
    data, cons = _write(tmp_path, X, 2)
    pytest.importorskip("mosek")
    from pcsos.bounds.mosek_backend import mosek_licence
    if not mosek_licence()[0]:
        assert main(["bound", str(data), "-k", "2", "--backend", "mosek"]) == 2
        assert "licence" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_bound_shared_iris(shared_instances, tmp_path):
    """'solved' means the safe bound is at most tol below the SDP objective; the bound may sit
    above that objective (the iterate is feasible only to tol), never above an SSE."""
    base = shared_instances / "iris"
    data, cons = str(base / "data.txt"), str(base / "constraints" / "ml_50_cl_50_0.txt")
    out = tmp_path / "b.json"
    assert main(["bound", data, "-c", cons, "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["size"] == 100 and rep["status"] == "solved"
    val, lb = rep["sdp_value"], rep["lower_bound"]
    assert val - lb <= rep["tol"] * max(1.0, abs(val))
    solved = tmp_path / "s.json"
    assert main(["solve", data, "-c", cons, "-q", "--workers", "1", "--json", str(solved)]) == 0
    assert lb <= json.loads(solved.read_text())["objective"] * (1 + 1e-12)


@pytest.mark.parametrize("given, expected", [(None, 1), ("3", 3)])
def test_cli_bound_threads_default_to_one_on_small_relaxations(tmp_path, monkeypatch, given,
                                                                expected):
    """Below BLAS_THREADS_MIN_S super-points more BLAS threads ran fewer ADMM iterations per
    second, so the default takes one; a --threads the user gave stands."""
    import pcsos.cli.bound as cli_bound
    from pcsos.bounds.solve import BLAS_THREADS_MIN_S, blas_threads

    seen = []
    real = cli_bound.solve_sdp
    monkeypatch.setattr(cli_bound, "solve_sdp",
                        lambda *a, threads=None, **kw: seen.append(threads) or real(*a, **kw))
    X = np.random.default_rng(1).normal(size=(8, 2))
    data, _ = _write(tmp_path, X, 2)
    assert main(["bound", str(data), "-k", "2", *(["--threads", given] if given else [])]) == 0
    assert seen == [expected]
    assert blas_threads(BLAS_THREADS_MIN_S) is None and blas_threads(BLAS_THREADS_MIN_S, 2) == 2


@pytest.mark.parametrize("args, words", [
    (["--threads", "0"], "argument --threads: must be >= 1, got 0"),
    (["--cuts", "all", "--upper-bound", "nan"], "argument --upper-bound: must be >= 0, got nan"),
    (["--cuts", "all", "--upper-bound", "-5"], "argument --upper-bound: must be >= 0, got -5"),
])
def test_cli_bound_refuses_values_it_took_silently(tmp_path, capsys, args, words):
    # --threads 0 ran on the default pool, --upper-bound nan was ignored, -5 stopped the
    # loop after one iteration
    data, _ = _write(tmp_path, np.arange(12.0).reshape(6, 2), 2)
    with pytest.raises(SystemExit) as exc:
        main(["bound", str(data), "-k", "2", *args])
    assert exc.value.code == 2 and words in capsys.readouterr().err


def test_cli_solve_names_tol_not_the_loops_prune_tol(tmp_path, capsys):
    data, _ = _write(tmp_path, np.arange(12.0).reshape(6, 2), 2)
    with pytest.raises(SystemExit) as info:  # argparse names the flag as given
        main(["solve", str(data), "-k", "2", "-q", "--tol", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --tol: must be >= 0, got -1" in err and "prune" not in err


def test_cli_bound_says_when_the_sdp_cannot_run_in_the_time_limit(tmp_path, capsys,
                                                                  monkeypatch):
    # s = 5 000 with --time-limit 5 ran 29 s in its first iteration and safe bound; the
    # estimate (three eigendecompositions) is replaced here, so no timing is tested
    import pcsos.cli.bound as cli_bound

    monkeypatch.setattr(cli_bound, "sdp_seconds", lambda s, iterations=None: 1e4)
    data, _ = _write(tmp_path, np.arange(12.0).reshape(6, 2), 2)
    assert main(["bound", str(data), "-k", "2", "--time-limit", "5"]) == 1
    assert "the SDP at s = 6 super-points needs at least 10000 s" in capsys.readouterr().err
    assert main(["bound", str(data), "-k", "2"]) == 0  # no limit: it runs
