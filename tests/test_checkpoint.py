"""Checkpoint / resume: a stopped solve goes on to the same optimum; a kill -9 between
checkpoints loses nothing but the time since the last one; other data is refused."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pcsos
from pcsos.checkpoint import fingerprint, read_checkpoint
from pcsos.errors import InputError
from pcsos.problem import make_instance
from pcsos.tree import NodeOutcome, branch_and_bound

ROOT = pathlib.Path(__file__).resolve().parents[1]
# uniform data, no cuts and a tight tolerance: a tree of a few dozen cheap nodes
BRANCHY = dict(tol=1e-6, workers=1, root_heuristic=None, cp_settings={"families": "none"},
               sdp_options={"tol": 1e-3})


def _uniform(n=30, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, 2))


def test_stop_and_resume_reach_the_uninterrupted_optimum(tmp_path):
    X = _uniform()
    whole = pcsos.solve(X, 3, **BRANCHY)
    assert whole.status == "optimal" and whole.nodes > 6
    ck = tmp_path / "run.ckpt"
    first = pcsos.solve(X, 3, max_nodes=4, checkpoint=ck, **BRANCHY)
    assert first.status == "node_limit" and first.nodes == 4 and ck.exists()
    state, meta = read_checkpoint(ck, make_instance(X, 3))
    assert state.processed == 4 and state.open and meta["root_size"] == 30
    assert state.lower_bound == pytest.approx(first.lower_bound)
    again = pcsos.solve(X, 3, resume=ck, checkpoint=ck, **BRANCHY)
    assert again.status == "optimal"
    assert again.objective == pytest.approx(whole.objective, rel=1e-6)
    assert again.lower_bound <= whole.objective * (1 + 1e-9)
    assert again.nodes > 4 and again.log[0]["node"] == 4  # rows go on where the run stopped
    assert again.seconds >= first.seconds
    assert again.root_gap == pytest.approx(first.root_gap)
    # the finished run's checkpoint has nothing open: resuming it ends at once
    done = pcsos.solve(X, 3, resume=ck, **BRANCHY)
    assert done.status == "optimal" and done.nodes == again.nodes and not done.log


def test_a_checkpoint_of_other_data_is_refused(tmp_path):
    X = _uniform()
    ck = tmp_path / "run.ckpt"
    pcsos.solve(X, 3, max_nodes=2, checkpoint=ck, **BRANCHY)
    for other in (dict(X=X + 1e-9, k=3, cl=()), dict(X=X, k=4, cl=()),
                  dict(X=X, k=3, cl=[(0, 1)])):
        with pytest.raises(InputError, match="written for other data"):
            pcsos.solve(other["X"], other["k"], cl=other["cl"], resume=ck, **BRANCHY)
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(InputError, match="not a readable pcsos checkpoint"):
        pcsos.solve(X, 3, resume=bad)
    with pytest.raises(InputError, match="no such checkpoint"):
        pcsos.solve(X, 3, resume=tmp_path / "missing.ckpt")


def test_fingerprint_sees_every_input():
    X = _uniform()
    base = fingerprint(make_instance(X, 3, [(0, 1)], [(2, 3)]))
    assert base == fingerprint(make_instance(X.copy(), 3, [(1, 0)], [(2, 3)]))  # same pairs
    assert base != fingerprint(make_instance(X, 3, [(0, 1)], [(2, 4)]))
    assert base != fingerprint(make_instance(X, 3, [(0, 2)], [(2, 3)]))
    assert base != fingerprint(make_instance(X[:, ::-1], 3, [(0, 1)], [(2, 3)]))


def _toy(data, ctx):
    """Minimise sum(x) over x in {0,1}^4 with x0 + x1 >= 1: a tree of a few nodes."""
    fixed = data
    lb = sum(fixed) + (1 if len(fixed) < 2 and sum(fixed) == 0 else 0)
    if len(fixed) == 4:
        ok = fixed[0] + fixed[1] >= 1
        return NodeOutcome(lb if ok else float("inf"), lb if ok else float("inf"),
                           tuple(fixed) if ok else None)
    return NodeOutcome(lb, children=[(fixed + (0,), lb), (fixed + (1,), lb)])


def test_the_tree_resumes_from_any_state():
    full = branch_and_bound(_toy, (), tol=0.0)
    states = []
    part = branch_and_bound(_toy, (), tol=0.0, max_nodes=3, checkpoint=states.append)
    assert part.status == "node_limit" and states[-1].processed == 3
    rest = branch_and_bound(_toy, None, tol=0.0, resume=states[-1])
    assert (rest.objective, rest.status) == (full.objective, "optimal") == (1, "optimal")
    assert rest.nodes == full.nodes  # no node lost or processed twice


def test_kill_9_between_checkpoints_then_resume(tmp_path):
    X = _uniform(n=40, seed=1)
    data = tmp_path / "u.txt"
    data.write_text("40 2\n" + "".join(f"{a!r} {b!r}\n" for a, b in X.tolist()))
    ck = tmp_path / "run.ckpt"
    args = [sys.executable, "-m", "pcsos", "solve", str(data), "-k", "4", "--cuts", "none",
            "--sdp-tol", "1e-3", "--tol", "1e-6", "--workers", "1", "--root-heuristic",
            "none", "-q", "--checkpoint", str(ck), "--checkpoint-every", "0.2"]
    p = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.time()
    while not ck.exists() and time.time() - t0 < 60 and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    if p.poll() is not None:
        pytest.skip("the solve ended before it could be killed (a fast machine)")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    state, _ = read_checkpoint(ck, make_instance(X, 4))
    assert state.open  # stopped mid-tree
    res = subprocess.run(args + ["--resume", str(ck), "--json", str(tmp_path / "r.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = pcsos.Result.from_json(tmp_path / "r.json")
    ref = pcsos.solve(X, 4, **BRANCHY)
    assert out.status == "optimal"
    assert out.objective == pytest.approx(ref.objective, rel=1e-6)
    assert out.nodes >= state.processed


def _flat(data, ctx):
    """A full binary tree of depth 4 that nothing prunes: every leaf is worth 1, every
    inner node's bound is 0, so all 31 nodes are processed, in any order."""
    if len(data) == 4:
        return NodeOutcome(1.0, 1.0, data)
    return NodeOutcome(0.0, children=[(data + (0,), 0.0), (data + (1,), 0.0)])


def _slow_flat(data, ctx):
    time.sleep(0.1)
    return _flat(data, ctx)


def test_nodes_that_never_ran_stay_open_after_a_stop():
    # one executor thread for three workers: two of the submitted jobs are still queued
    # when the time limit cancels them; they must come back as open nodes
    from concurrent.futures import ThreadPoolExecutor

    assert branch_and_bound(_flat, (), tol=0.0).nodes == 31
    states = []
    with ThreadPoolExecutor(max_workers=1) as ex:
        part = branch_and_bound(_slow_flat, (), tol=0.0, workers=3, executor=ex,
                                time_limit=0.45, checkpoint=states.append)
    assert part.status == "time_limit" and 0 < part.nodes < 31
    rest = branch_and_bound(_flat, None, tol=0.0, resume=states[-1])
    assert (rest.status, rest.objective) == ("optimal", 1.0)
    assert rest.nodes == 31  # no node lost, none processed twice


def test_a_root_refused_for_lack_of_time_is_solved_on_resume(tmp_path, monkeypatch):
    import pcsos.node

    X = _uniform()
    ck = tmp_path / "run.ckpt"
    monkeypatch.setattr(pcsos.node, "SDP_CHECK_SIZE", 1)
    monkeypatch.setattr(pcsos.node, "MIN_SDP_ITERATIONS", 1e12)
    first = pcsos.solve(X, 3, time_limit=60, checkpoint=ck, **BRANCHY)
    assert first.log[0]["closed"] == "sdp_too_large"
    state, _ = read_checkpoint(ck, make_instance(X, 3))
    assert [u[0] for u in state.unresolved] == [0]  # the root, data kept
    monkeypatch.undo()
    again = pcsos.solve(X, 3, resume=ck, **BRANCHY)
    whole = pcsos.solve(X, 3, **BRANCHY)
    assert again.status == "optimal"
    assert again.objective == pytest.approx(whole.objective, rel=1e-6)
