"""Warm start: a user's clustering as the first incumbent (``init_labels``, ``--init-labels``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from bruteforce import brute_force

import pcsos
from pcsos.errors import InputError
from pcsos.problem import canonical_labels, make_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _instance():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10, 2)) + 2.5 * (np.arange(10) % 3)[:, None]
    ml, cl = [(0, 3), (1, 4)], [(0, 1), (2, 5), (3, 7)]
    return X, 3, ml, cl


def test_an_optimal_start_lets_the_root_prune_at_once():
    X, k, ml, cl = _instance()
    opt, best = brute_force(X, k, ml, cl)
    # the start given as 1..k: any k distinct values are one clustering
    res = pcsos.solve(X, k, ml, cl, init_labels=best + 1, root_heuristic=None, workers=1)
    root = res.log[0]
    assert res.status == "optimal" and res.nodes == 1
    assert res.objective == pytest.approx(opt, rel=1e-12)
    assert np.array_equal(res.labels, canonical_labels(best))
    # the start is the incumbent before the root's bound: the loop prunes against it, and
    # the root's own search (its heuristic inside the loop) improves on nothing
    assert root["closed"] == "pruned" and root["improved"] is False
    assert root["gub"] == pytest.approx(opt, rel=1e-12)
    # without the start the incumbent that good is the root's heuristic's
    plain = pcsos.solve(X, k, ml, cl, root_heuristic=None, workers=1)
    assert plain.log[0]["improved"] is True
    assert plain.log[0]["heuristic_ub"] == pytest.approx(opt, rel=1e-9)
    assert plain.objective == pytest.approx(opt, rel=1e-9)


def test_a_feasible_but_poor_start_is_improved():
    X, k, ml, cl = _instance()
    opt, _ = brute_force(X, k, ml, cl)
    # feasible, and far from the clusters of the data: {0, 3}, {1, 4, 5, 7}, the rest
    start = np.full(len(X), 2)
    start[[0, 3]] = 0
    start[[1, 4, 5, 7]] = 1
    res = pcsos.solve(X, k, ml, cl, init_labels=start, workers=1)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(opt, rel=1e-9)
    assert res.lower_bound <= opt * (1 + 1e-9)


@pytest.mark.parametrize("labels, needle", [
    ([0] * 9, "expected 10 labels"),
    ([0, 1] * 5, "form 2 clusters, k = 3"),
    ([0.5] + [0] * 9, "label of point 0 is not an integer"),
    (["a"] * 10, "labels must be integers"),
])
def test_a_malformed_start_is_an_input_error(labels, needle):
    X, k, ml, cl = _instance()
    with pytest.raises(InputError, match=needle):
        pcsos.solve(X, k, ml, cl, init_labels=labels)


def test_an_infeasible_start_names_the_pairs_it_breaks():
    X, k, ml, cl = _instance()
    _, best = brute_force(X, k, ml, cl)
    bad = best.copy()
    bad[3] = (bad[0] + 1) % k       # breaks must-link (0, 3) ...
    bad[7] = bad[3]                 # ... and cannot-link (3, 7)
    with pytest.raises(InputError) as err:
        pcsos.solve(X, k, ml, cl, init_labels=bad)
    msg = str(err.value)
    assert msg.startswith("init_labels: ")
    assert "must-link (0, 3)" in msg and "cannot-link (3, 7)" in msg


def test_the_estimator_takes_a_start():
    X, k, ml, cl = _instance()
    opt, best = brute_force(X, k, ml, cl)
    est = pcsos.PCSOSClustering(k, workers=1).fit(X, ml=ml, cl=cl, init_labels=best)
    assert est.inertia_ == pytest.approx(opt, rel=1e-12) and est.n_nodes_ == 1


def _cli(tmp_path, labels):
    X, k, ml, cl = _instance()
    data = tmp_path / "d.txt"
    data.write_text(f"{len(X)} 2\n" + "".join(f"{a!r} {b!r}\n" for a, b in X.tolist()))
    cons = tmp_path / "c.txt"
    cons.write_text("".join(f"ML {i} {j}\n" for i, j in ml)
                    + "".join(f"CL {i} {j}\n" for i, j in cl))
    lab = tmp_path / "start.txt"
    lab.write_text("".join(f"{v}\n" for v in labels))
    log = tmp_path / "g.log"
    p = subprocess.run([sys.executable, "-m", "pcsos", "solve", str(data), "-c", str(cons),
                        "-k", str(k), "--init-labels", str(lab), "--log", str(log), "-q",
                        "--workers", "1"], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    return p, lab, log


def test_cli_init_labels(tmp_path):
    X, k, ml, cl = _instance()
    opt, best = brute_force(X, k, ml, cl)
    p, lab, log = _cli(tmp_path, best)
    assert p.returncode == 0, p.stderr
    text = log.read_text()
    assert f"\nINIT_LABELS: {lab}\n" in text
    bad = best.copy()
    bad[3] = (bad[0] + 1) % k
    p, lab, _ = _cli(tmp_path, bad)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert str(lab) in p.stderr and "must-link (0, 3)" in p.stderr


def test_check_start_does_not_change_the_instance():
    X, k, ml, cl = _instance()
    inst = make_instance(X, k, ml, cl)
    _, best = brute_force(X, k, ml, cl)
    given = (best + 5).copy()
    out = pcsos.problem.check_start(inst, given)
    assert np.array_equal(given, best + 5)  # the caller's array is untouched
    assert sorted(set(out.tolist())) == list(range(k))
