"""Checkpoint / resume: a stopped solve goes on to the same optimum; a kill -9 between
checkpoints loses nothing but the time since the last one; other data is refused."""

from __future__ import annotations

import math
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import threading
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
               bound_settings={"tol": 1e-3})


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


def test_a_colgen_tree_stops_and_resumes_with_its_columns(tmp_path):
    """The LP engine's open nodes keep the columns they inherit through a checkpoint (a
    ColumnStart, checked against the node on reading), and the resumed run ends at the
    uninterrupted optimum."""
    from pcsos.bounds.colgen import ColumnStart

    X = _uniform(14, seed=3)
    opts = dict(tol=1e-9, workers=1, root_heuristic=None, bound_settings={"engine": "colgen"})
    whole = pcsos.solve(X, 4, **opts)
    assert whole.status == "optimal"
    if whole.nodes < 3:
        pytest.skip("the LP closed this draw at the root")
    ck = tmp_path / "cg.ckpt"
    first = pcsos.solve(X, 4, max_nodes=1, checkpoint=ck, **opts)
    state, _ = read_checkpoint(ck, make_instance(X, 4))
    starts = [row[4].warm_start for row in state.open]
    assert starts and all(isinstance(ws, ColumnStart) and len(ws) for ws in starts)
    again = pcsos.solve(X, 4, resume=ck, **opts)
    assert first.status == "node_limit" and again.status == "optimal"
    assert again.objective == pytest.approx(whole.objective, rel=1e-9)
    # subset-row cuts travel with the columns (triples of the node's super-points); a
    # triple outside them is refused
    import dataclasses

    from pcsos.checkpoint import write_checkpoint

    inst = make_instance(X, 4)
    row = state.open[0]
    s = row[4].problem.s
    for cuts, ok in ((np.array([[0, 1, 2]], dtype=np.int64), True),
                     (np.array([[0, 1, s]], dtype=np.int64), False),
                     (np.array([0, 1, 2], dtype=np.int64), False)):
        ws = dataclasses.replace(row[4].warm_start, cuts=cuts)
        st = dataclasses.replace(state, open=[(*row[:4], dataclasses.replace(row[4],
                                                                              warm_start=ws))])
        path = tmp_path / "cuts.ckpt"
        write_checkpoint(path, st, inst, **read_checkpoint(ck, inst)[1])
        if ok:
            back = read_checkpoint(path, inst)[0].open[0][4].warm_start.cuts
            assert back.tolist() == cuts.tolist()
        else:
            with pytest.raises(InputError, match="not a readable pcsos checkpoint"):
                read_checkpoint(path, inst)


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
    with pytest.raises(InputError, match="not a pcsos checkpoint"):
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


# A driver for the subprocess tests: the CLI with a heuristic "gated" that is ipc-kmeans for
# its first GATE_AFTER calls and then blocks forever, after touching the file $GATE. A solve
# with it is mid-tree by construction while the test looks at its checkpoints: no timing.
_DRIVER = """
import os, pathlib, sys, time
from pcsos.heuristics.registry import get_heuristic, register_heuristic
base = get_heuristic("ipc-kmeans")
calls = []
def gated(*args, **kwargs):
    calls.append(1)
    if len(calls) > int(os.environ["GATE_AFTER"]):
        pathlib.Path(os.environ["GATE"]).touch()
        while True:
            time.sleep(1)
    return base(*args, **kwargs)
register_heuristic("gated", gated)
from pcsos.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _poll(predicate, what: str, proc=None, limit: float = 900.0):
    """Wait until ``predicate()`` is true; fail (not skip) if it never is."""
    t0 = time.monotonic()
    while not predicate():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended (exit {proc.returncode}) before {what}: "
                        f"{proc.stderr.read().decode(errors='replace')[-2000:]}")
        if time.monotonic() - t0 > limit:
            pytest.fail(f"no {what} after {limit:.0f} s")
        time.sleep(0.05)


def test_kill_9_between_checkpoints_then_resume(tmp_path):
    X = _uniform(n=40, seed=1)
    data = tmp_path / "u.txt"
    data.write_text("40 2\n" + "".join(f"{a!r} {b!r}\n" for a, b in X.tolist()))
    ck = tmp_path / "run.ckpt"
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    gate = tmp_path / "gate"
    # the SDP engine (auto would take the LP at k = 4 in the plane): a tree of many nodes
    common = [str(data), "-k", "4", "--bound", "sdp", "--cuts", "none", "--sdp-tol", "1e-3",
              "--tol", "1e-6",
              "--workers", "1", "--root-heuristic", "none", "-q", "--checkpoint", str(ck),
              "--checkpoint-every", "0.2"]
    env = {**os.environ, "GATE": str(gate), "GATE_AFTER": "3"}
    p = subprocess.Popen([sys.executable, str(driver), "solve", *common, "--heuristic",
                          "gated"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    inst = make_instance(X, 4)
    try:
        _poll(gate.exists, "blocked heuristic", p)

        def mid_tree():
            if not ck.exists():
                return False
            state, _ = read_checkpoint(ck, inst)
            return state.processed >= 2 and bool(state.open)

        _poll(mid_tree, "checkpoint taken mid-tree", p)
    finally:
        p.kill()
        p.wait(timeout=300)
        p.stderr.close()
    assert p.returncode == -signal.SIGKILL
    state, _ = read_checkpoint(ck, inst)
    assert state.open and state.processed >= 2  # stopped mid-tree
    res = subprocess.run([sys.executable, "-m", "pcsos", "solve", *common, "--resume", str(ck),
                          "--json", str(tmp_path / "r.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
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


def test_nodes_that_never_ran_stay_open_after_a_stop():
    # one executor thread for three workers: the fourth job stops the search and holds the
    # thread until the tree cancels it, so the jobs submitted behind it are still queued
    # when they are cancelled; they must come back as open nodes (no clock: a stop event)
    from concurrent.futures import ThreadPoolExecutor

    assert branch_and_bound(_flat, (), tol=0.0).nodes == 31
    stop, calls = threading.Event(), []

    def stopping(data, ctx):
        calls.append(data)
        if len(calls) == 4:
            stop.set()
            for _ in range(3000):  # hang guard (30 s): the tree cancels the job at once
                if ctx.cancelled():
                    break
                time.sleep(0.01)
        return _flat(data, ctx)

    states = []
    with ThreadPoolExecutor(max_workers=1) as ex:
        part = branch_and_bound(stopping, (), tol=0.0, workers=3, executor=ex,
                                stop_event=stop, checkpoint=states.append)
    assert part.status == "interrupted" and 3 <= part.nodes < 31
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


# --------------------------------------------------------------------------- the format
def _same(a, b) -> bool:
    """Exact structural equality of two decoded states (arrays: dtype, shape and bits)."""
    from pcsos.checkpoint import _TYPES

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    for cls, fields in _TYPES.values():
        if type(a) is cls:
            return _same(fields(a), fields(b))
    return a == b


def _stopped_state(tmp_path, ml=(), cl=()):
    """A real mid-tree state with cuts, warm starts, hints and an incumbent."""
    X = _uniform(n=24, seed=3)
    ck = tmp_path / "mid.ckpt"
    res = pcsos.solve(X, 3, ml=ml, cl=cl, max_nodes=3, checkpoint=ck, tol=1e-6, workers=1,
                      root_heuristic=None, bound_settings={"tol": 1e-3, "polish": 0},
                      cp_settings={"families": "pair,triangle"})
    # loose, unpolished bounds and the pair and triangle cuts alone keep the tree open past
    # its node limit (polished, this instance closes within 3 nodes, and the tree's
    # three-leaf star cuts close it at the root)
    assert res.status == "node_limit", res.status
    inst = make_instance(X, 3, ml, cl)
    return inst, ck


def test_a_checkpoint_round_trips_exactly(tmp_path):
    from pcsos.checkpoint import write_checkpoint

    inst, ck = _stopped_state(tmp_path, ml=[(0, 1), (2, 3)], cl=[(4, 5)])
    state, meta = read_checkpoint(ck, inst)
    nodes = [row[4] for row in state.open]
    assert nodes and any(nd.cuts is not None and len(nd.cuts) for nd in nodes)
    assert any(nd.warm_start is not None and nd.warm_start.Z is not None for nd in nodes)
    assert any(nd.problem.parent_map is not None for nd in nodes)
    assert state.solution is not None and math.isfinite(state.incumbent)
    again = tmp_path / "again.ckpt"
    write_checkpoint(again, state, inst, root_gap=meta["root_gap"],
                     root_size=meta["root_size"], extra=(1, -math.inf, "x"))
    state2, meta2 = read_checkpoint(again, inst)
    assert _same(state, state2)
    assert meta2["extra"] == (1, -math.inf, "x") and meta2["root_size"] == meta["root_size"]
    for nd in (row[4] for row in state2.open):  # the problems are the user's instance's
        assert nd.problem.instance is inst
        assert nd.problem.C.shape == (nd.problem.s, nd.problem.s)


def test_pseudocosts_travel_through_a_checkpoint(tmp_path):
    """With branching='pseudocost' the checkpoint holds the records (a resumed run chooses
    as the uninterrupted one would) and each child's pair points; malformed ones are
    refused."""
    import dataclasses

    from pcsos.branching import PseudoCosts
    from pcsos.checkpoint import write_checkpoint

    X = _uniform(n=18, seed=3)
    opts = BRANCHY  # the default branching: pseudocost
    whole = pcsos.solve(X, 3, **opts)
    ck = tmp_path / "pc.ckpt"
    first = pcsos.solve(X, 3, max_nodes=12, checkpoint=ck, **opts)
    assert first.status == "node_limit"
    inst = make_instance(X, 3)
    state, meta = read_checkpoint(ck, inst)
    assert isinstance(state.history, PseudoCosts)
    assert state.history.records("ml") + state.history.records("cl") >= 6
    assert all(0 <= p < 18 for row in state.open for p in row[4].points)
    again = tmp_path / "again.ckpt"
    write_checkpoint(again, state, inst, **meta)
    assert _same(state, read_checkpoint(again, inst)[0])
    resumed = pcsos.solve(X, 3, resume=ck, **opts)
    assert resumed.status == "optimal"
    assert resumed.objective == pytest.approx(whole.objective, rel=1e-6)
    assert resumed.nodes == whole.nodes  # the same tree: the records came back
    bad_history = dataclasses.replace(state, history=PseudoCosts.empty(17))
    row = state.open[0]
    bad_node = dataclasses.replace(state, open=[
        (*row[:4], dataclasses.replace(row[4], points=(0, 18)))] + state.open[1:])
    for bad in (bad_history, bad_node):
        write_checkpoint(again, bad, inst, **meta)
        with pytest.raises(InputError, match="not a readable pcsos checkpoint"):
            read_checkpoint(again, inst)


class _Evil:
    """Pickles as a call of os.system: loading it writes ``target`` (the attack)."""

    def __init__(self, target: pathlib.Path):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"echo pwned > {self.target}",))


def _resume_cli(ck: pathlib.Path, tmp_path: pathlib.Path):
    return subprocess.run([sys.executable, "-m", "pcsos", "solve", str(ROOT / "data/blobs.txt"),
                           "-c", str(ROOT / "data/blobs_constraints.txt"), "-k", "3",
                           "-q", "--resume", str(ck)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


def test_an_old_pickle_checkpoint_is_refused_unread(tmp_path):
    target = tmp_path / "side_effect"
    ck = tmp_path / "evil.ckpt"
    ck.write_bytes(pickle.dumps({"format": "pcsos-checkpoint", "version": 1,
                                 "tree": _Evil(target)}, protocol=pickle.HIGHEST_PROTOCOL))
    res = _resume_cli(ck, tmp_path)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "old pickle format" in lines[0] and "Traceback" not in res.stderr
    assert not target.exists()


def test_an_object_array_inside_a_new_checkpoint_is_refused(tmp_path):
    target = tmp_path / "side_effect"
    # a valid checkpoint of the shipped example, then one member swapped for a pickled
    # object array (np.savez pickles object arrays; np.load must refuse to unpickle it)
    ck = tmp_path / "run.ckpt"
    first = subprocess.run([sys.executable, "-m", "pcsos", "solve",
                            str(ROOT / "data/blobs.txt"), "-c",
                            str(ROOT / "data/blobs_constraints.txt"), "-k", "3", "-q",
                            "--max-nodes", "1", "--checkpoint", str(ck)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    with np.load(ck, allow_pickle=False) as npz:
        members = {key: npz[key] for key in npz.files}
    assert "a0" in members
    members["a0"] = np.array([_Evil(target), 1], dtype=object)
    bad = tmp_path / "bad.ckpt"
    with open(bad, "wb") as fh:
        np.savez(fh, **members)
    res = _resume_cli(bad, tmp_path)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a readable pcsos checkpoint" in lines[0], res.stderr
    assert not target.exists()
    assert set(os.listdir(tmp_path)) == {"run.ckpt", "bad.ckpt"}  # nothing else written


# --------------------------------------------------------------------------- edited content
def _node(h):
    return h["tree"]["fields"]["open"][0]["tuple"][4]["fields"]


def _problem_array(h, arrays, name):
    return arrays[f"a{_node(h)['problem']['fields'][name]['array']}"]


def _set_array(arrays, h, name, fill):
    key = f"a{_node(h)['problem']['fields'][name]['array']}"
    a = arrays[key].copy()
    a[...] = fill
    arrays[key] = a


# each edit leaves a well-formed file whose content is not a state of this data: every one
# was read before, and ended in a wrong certified result or an internal error
_EDITS = {
    "the incumbent value": (lambda h, a: h["tree"]["fields"].__setitem__("incumbent", -5.0),
                            "that is not its clustering's"),
    "the incumbent clustering": (
        lambda h, a: h["tree"]["fields"].__setitem__(
            "solution", _node(h)["problem"]["fields"]["point_labels"]),
        "not a clustering of the data"),
    "an incumbent value without a clustering": (
        lambda h, a: h["tree"]["fields"].__setitem__("solution", None),
        "without its clustering"),
    "nan in W": (lambda h, a: _set_array(a, h, "W", np.nan), "not those of the data"),
    "another e": (lambda h, a: _set_array(a, h, "e", 2.0), "not those of the data"),
    "c0": (lambda h, a: _node(h)["problem"]["fields"].__setitem__("c0", 1.0),
           "not those of the data"),
    "every point in one super-point": (lambda h, a: _set_array(a, h, "point_labels", 0),
                                       "empty super-point"),
    "a cannot-link pair dropped": (
        lambda h, a: _node(h)["problem"]["fields"].__setitem__(
            "cl", {"array": _node(h)["problem"]["fields"]["cl"]["array"]})
        or _set_array(a, h, "cl", 0), "drops a cannot-link pair"),
    "a string for the parent's bound": (
        lambda h, a: _node(h).__setitem__("parent_bound", "abc"), "non-numeric parent bound"),
    "a string for the feasibility flag": (
        lambda h, a: _node(h).__setitem__("known_feasible", "abc"), "feasibility flag"),
    "nan for a node's bound": (
        lambda h, a: h["tree"]["fields"]["open"][0]["tuple"].__setitem__(3, {"float": "nan"}),
        "non-numeric node bound"),
    "a negative count": (lambda h, a: h["tree"]["fields"].__setitem__("processed", -3),
                         "counts that are not integers >= 0"),
}


@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_a_checkpoint_whose_content_is_not_this_datas_state_is_refused(valid_checkpoint,
                                                                       tmp_path, edit):
    import json

    inst, _, members = valid_checkpoint
    header = json.loads(members["header"].tobytes())
    arrays = {key: v for key, v in members.items() if key != "header"}
    change, message = _EDITS[edit]
    assert read_checkpoint(_write_members(tmp_path / "ok.ckpt", header, arrays), inst)
    change(header, arrays)
    with pytest.raises(InputError, match="not a readable pcsos checkpoint") as exc:
        read_checkpoint(_write_members(tmp_path / "m.ckpt", header, arrays), inst)
    assert message in str(exc.value)


def _write_members(path, header, arrays):
    import json

    with open(path, "wb") as fh:
        np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 **arrays)
    return path


def test_a_damaged_compressed_member_is_an_input_error(valid_checkpoint, tmp_path):
    inst, _, members = valid_checkpoint
    good = tmp_path / "c.ckpt"
    with open(good, "wb") as fh:
        np.savez_compressed(fh, **members)
    assert read_checkpoint(good, inst)
    blob = bytearray(good.read_bytes())
    for at in range(200, 260):  # inside the first member's deflated bytes
        blob[at] ^= 0xFF
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(bytes(blob))
    with pytest.raises(InputError, match="not a readable pcsos checkpoint"):
        read_checkpoint(bad, inst)


# --------------------------------------------------------------------------- fuzzing
# Mutated checkpoints must end in a typed InputError or a valid state, never anything else
# (acceptance 3 of the safe-files issue: byte flips, truncation, and a header or arrays
# that are well-formed JSON / npz but say something else than a pcsos checkpoint).
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["array", "tuple", "float", "dict", "type", "fields", "x"]), inner,
        max_size=2),
    max_leaves=12)
_ARRAYS = st.sampled_from([np.zeros(0), np.arange(5), np.full((2, 3), np.nan),
                           np.array([True]), np.arange(10**3, dtype=np.uint8),
                           np.array([-1, 10**9]), np.zeros((0, 2), dtype=np.int64)])


@pytest.fixture(scope="module")
def valid_checkpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ckpt")
    inst, ck = _stopped_state(tmp, ml=[(0, 1)], cl=[(4, 5)])
    with np.load(ck, allow_pickle=False) as npz:
        members = {key: npz[key] for key in npz.files}
    return inst, ck.read_bytes(), members


def _read_or_input_error(path, inst) -> None:
    try:
        read_checkpoint(path, inst)
    except InputError as exc:
        assert "\n" not in str(exc)


@st.composite
def _byte_mutants(draw, blob: bytes):
    kind = draw(st.sampled_from(["flip", "truncate", "insert", "crlf", "bom"]))
    data = bytearray(blob)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
    elif kind == "truncate":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif kind == "insert":
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(min_size=1, max_size=64))
    elif kind == "crlf":
        data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
    else:
        data = bytearray(b"\xef\xbb\xbf") + data
    return bytes(data)


def _fuzz_bytes(valid_checkpoint, data):
    import tempfile

    inst, blob, _ = valid_checkpoint
    mutant = data.draw(_byte_mutants(blob))
    with tempfile.TemporaryDirectory(prefix="pcsos-fuzz-") as tmp:
        path = pathlib.Path(tmp) / "m.ckpt"
        path.write_bytes(mutant)
        _read_or_input_error(path, inst)
        assert os.listdir(tmp) == ["m.ckpt"]


def _fuzz_structure(valid_checkpoint, data):
    import json
    import tempfile

    inst, _, members = valid_checkpoint
    header = json.loads(members["header"].tobytes())
    # replace one sub-value of the header, anywhere, by random JSON
    node, path = header, []
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict)
                                        else list(range(len(node)))))
        path.append(key)
        node = node[key]
    value = data.draw(_JSON)
    if path:
        parent = header
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    else:
        header = value
    new = dict(members)
    new["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    if data.draw(st.booleans()):
        arrays = sorted(k for k in members if k != "header")
        new[data.draw(st.sampled_from(arrays))] = data.draw(_ARRAYS)
    with tempfile.TemporaryDirectory(prefix="pcsos-fuzz-") as tmp:
        path = pathlib.Path(tmp) / "m.ckpt"
        with open(path, "wb") as fh:
            np.savez(fh, **new)
        _read_or_input_error(path, inst)


_FUZZ = dict(deadline=None, derandomize=True,
             suppress_health_check=[HealthCheck.function_scoped_fixture,
                                    HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=60, **_FUZZ)
@given(data=st.data())
def test_fuzzed_checkpoint_bytes(valid_checkpoint, data):
    _fuzz_bytes(valid_checkpoint, data)


@settings(max_examples=60, **_FUZZ)
@given(data=st.data())
def test_fuzzed_checkpoint_structure(valid_checkpoint, data):
    _fuzz_structure(valid_checkpoint, data)


@pytest.mark.slow
@settings(max_examples=2500, **_FUZZ)
@given(data=st.data())
def test_fuzzed_checkpoint_bytes_slow(valid_checkpoint, data):
    _fuzz_bytes(valid_checkpoint, data)


@pytest.mark.slow
@settings(max_examples=2500, **_FUZZ)
@given(data=st.data())
def test_fuzzed_checkpoint_structure_slow(valid_checkpoint, data):
    _fuzz_structure(valid_checkpoint, data)


def test_no_output_may_overwrite_the_checkpoint_resumed_from(tmp_path):
    from pcsos.cli import main

    ck = tmp_path / "ck.npz"
    common = [str(ROOT / "data/blobs.txt"), "-c", str(ROOT / "data/blobs_constraints.txt"),
              "-k", "3", "-q", "--workers", "1"]
    assert main(["solve", *common, "--max-nodes", "1", "--checkpoint", str(ck)]) == 0
    before = ck.read_bytes()
    assert main(["solve", *common, "--resume", str(ck), "--json", str(ck)]) == 2
    assert ck.read_bytes() == before  # refused before any work: the checkpoint is whole
    # the checkpoint itself may go on in the file it resumed from
    assert main(["solve", *common, "--resume", str(ck), "--checkpoint", str(ck)]) == 0
