"""Ctrl-C keeps what was found in ``certify``, ``heuristic``, ``impact`` (issue 29) and
``bound``.

Each subprocess run is long by construction (subsets whose SDPs take seconds each and
outnumber the workers, generations that cannot end, hundreds of pairs to re-solve) and the
signal is sent once the child's own progress line says that the state under test exists;
nothing waits a guessed time. "Before anything was found" reads the data from a FIFO: the
child blocks in reading it, which the test sees when a non-blocking writer can open it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from subproc import Child, open_fifo_writer

import pcsos
from pcsos.certification import certify
from pcsos.cli import Interrupts, main
from pcsos.clock import Deadline
from pcsos.decomposition import _sub_instance, spectral_floor
from pcsos.errors import UndecidedError
from pcsos.heuristics import run_heuristic
from pcsos.pair_impact import impact
from pcsos.problem import Problem, make_instance, pairs_satisfied, sse

posix = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and FIFOs")
def _pcsos(*args) -> list[str]:
    return [sys.executable, "-m", "pcsos", *map(str, args)]


def _write_data(path, X):
    np.savetxt(path, X, header=f"{len(X)} {X.shape[1]}", comments="")


def _write_pairs(path, ml, cl):
    path.write_text("".join(f"ML {i} {j}\n" for i, j in ml)
                    + "".join(f"CL {i} {j}\n" for i, j in cl))


def _separated(n: int, k: int, gap: float, seed: int = 0):
    """k discs of radius 1, ``gap`` apart, with pairs that the discs obey; and their SSE,
    which is the optimum: a clustering into k clusters that puts no two discs together is
    the discs themselves, and one that does costs at least dmin^2 / 2 (two points a, b of
    one cluster cost |a - b|^2 / 2 at least), checked to exceed the discs' SSE."""
    rng = np.random.default_rng(seed)
    truth = np.arange(n) % k
    ang, rad = rng.uniform(0, 2 * np.pi, n), np.sqrt(rng.uniform(0, 1, n))
    X = np.column_stack([rad * np.cos(ang) + gap * truth, rad * np.sin(ang)])
    opt = sse(X, truth)
    dmin = min(cdist(X[truth == a], X[truth == b]).min()
               for a in range(k) for b in range(a + 1, k))
    assert dmin ** 2 / 2 > opt  # the proof's condition: the discs are the optimum
    ml = [(h, h + k) for h in range(k)]
    cl = [(h, h + 1) for h in range(k - 1)]
    return X, truth, ml, cl, opt


# ------------------------------------------------------------------ subprocess: certify
@posix
def test_certify_keeps_its_clustering_and_a_valid_bound(tmp_path):
    psutil = pytest.importorskip("psutil", reason="psutil not installed")
    # 6 subsets of 400 points on 2 workers: when the first is bounded, four have not
    # finished, each an SDP on 400 points (seconds)
    X, truth, ml, cl, opt = _separated(2400, 4, 80.0)
    _write_data(tmp_path / "data.txt", X)
    _write_pairs(tmp_path / "cons.txt", ml, cl)
    run = Child(_pcsos("certify", "data.txt", "-c", "cons.txt", "-k", 4, "--subset-size", 400,
                       "--workers", 2, "--heuristic", "ipc-kmeans", "--time-limit", 3600,
                       "--json", "out.json"), tmp_path)
    run.wait_for(r"1 of 6 subsets bounded")
    workers = psutil.Process(run.proc.pid).children(recursive=True)
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # slack for a loaded machine
    assert rc == 0, err
    assert "stop requested" in err and re.search(r"^status +interrupted: ", out, re.M), out
    res = json.loads((tmp_path / "out.json").read_text())
    labels = np.asarray(res["labels"])
    assert len(np.unique(labels)) == 4 and pairs_satisfied(labels, np.array(ml), np.array(cl))
    assert res["objective"] == pytest.approx(sse(X, labels), rel=1e-9)
    assert res["interrupted"] is True and len(res["cut_short"]) >= 1
    assert res["status"] == "interrupted"
    assert res["cut_short"] == [t for t, s in enumerate(res["subsets"]) if s["cut_short"]]
    assert sum(not s["cut_short"] for s in res["subsets"]) >= 1
    assert 0 < res["lower_bound"] <= opt * (1 + 1e-9)  # a bounded subset counts
    # the workers are ended with the command, not left bounding subsets for no one
    _, alive = psutil.wait_procs(workers, timeout=60)
    assert alive == []


# --------------------------------------------------------------- subprocess: heuristic
@posix
def test_heuristic_keeps_its_best_clustering(tmp_path):
    rng = np.random.default_rng(2)
    n, k = 300, 5
    truth = np.arange(n) % k
    X = rng.normal(size=(n, 2)) + 3.0 * truth[:, None]
    ml = [(0, k), (1, k + 1)]
    cl = [(0, 1), (2, 3), (k, 2)]
    _write_data(tmp_path / "data.txt", X)
    _write_pairs(tmp_path / "cons.txt", ml, cl)
    # N_max never reached and a negative collapse threshold: the generations cannot end
    run = Child(_pcsos("heuristic", "s-mdeclust", "data.txt", "-c", "cons.txt", "-k", k,
                       "--seed", 0, "-o", "N_max=1000000000", "-o", "tol=-1",
                       "--json", "rep.json", "--result", "res.txt"), tmp_path)
    run.wait_for(r"generation \d+, best")  # the initial population is complete
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # slack for a loaded machine
    assert rc == 0, err
    assert re.search(r"^status +interrupted ", out, re.M), out
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["status"] == "interrupted" and rep["interrupted"] is True
    assert rep["stats"]["stop"] == "interrupted"
    labels = np.asarray(rep["labels"])
    assert len(np.unique(labels)) == k and pairs_satisfied(labels, np.array(ml), np.array(cl))
    assert rep["objective"] == pytest.approx(sse(X, labels), rel=1e-9)
    M = np.loadtxt(tmp_path / "res.txt", dtype=int)
    assert np.array_equal(M.argmax(axis=1), labels)


# ------------------------------------------------------------------ subprocess: impact
@posix
def test_impact_keeps_the_pairs_scored(tmp_path):
    rng = np.random.default_rng(1)
    n, k = 400, 4
    truth = np.arange(n) % k
    X = rng.normal(size=(n, 2)) + 4.0 * truth[:, None]
    pairs = set()
    while len(pairs) < 300:  # 300 re-solves of 400 points: far more than one pair's time
        pairs.add(tuple(sorted(map(int, rng.choice(n, 2, replace=False)))))
    ml = [p for p in sorted(pairs) if truth[p[0]] == truth[p[1]]]
    cl = [p for p in sorted(pairs) if truth[p[0]] != truth[p[1]]]
    _write_data(tmp_path / "data.txt", X)
    _write_pairs(tmp_path / "cons.txt", ml, cl)
    (tmp_path / "labels.txt").write_text("".join(f"{v}\n" for v in truth))
    run = Child(_pcsos("impact", "data.txt", "-c", "cons.txt", "-k", k, "--labels",
                       "labels.txt", "--json", "imp.json"), tmp_path)
    run.wait_for(r"pcsos impact: 1 of 300 pairs scored")
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # slack for a loaded machine
    assert rc == 0, err
    res = json.loads((tmp_path / "imp.json").read_text())
    assert res["interrupted"] is True and res["total"] == 300
    assert res["status"] == "interrupted"
    assert 1 <= len(res["pairs"]) < 300
    assert any(note.startswith("interrupted:") for note in res["notes"])
    given = {("ML", *p) for p in ml} | {("CL", *p) for p in cl}
    assert all((q["type"], q["i"], q["j"]) in given and q["score"] >= 0 for q in res["pairs"])
    assert "note: interrupted" in out


# ------------------------------------------------------------------- subprocess: bound
@posix
def test_bound_keeps_a_valid_bound(tmp_path):
    # 800 points in 4 discs, a tolerance no iterate reaches: the solve runs until stopped
    X, truth, ml, cl, opt = _separated(800, 4, 40.0)
    _write_data(tmp_path / "data.txt", X)
    _write_pairs(tmp_path / "cons.txt", ml, cl)
    run = Child(_pcsos("bound", "data.txt", "-c", "cons.txt", "-k", 4,
                       "--tol", 1e-15, "--verbose", "--json", "out.json"), tmp_path)
    run.wait_for(r"^it +50 ")  # an iterate exists, with a dual to bound from
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # slack for a loaded machine
    assert rc == 0, err
    assert "stop requested; finishing with the safe bound so far" in err
    res = json.loads((tmp_path / "out.json").read_text())
    assert res["status"] == "interrupted" and "stopped on request" in res["message"]
    assert re.search(r"status interrupted", out), out
    assert 0 < res["lower_bound"] <= opt * (1 + 1e-9)


# ------------------------------------------------- subprocess: before anything was found
@posix
@pytest.mark.parametrize("command", [["certify", "--heuristic", "ipc-kmeans"],
                                     ["heuristic", "s-mdeclust"], ["impact"], ["bound"]])
def test_sigint_before_anything_was_found_exits_130(tmp_path, command):
    fifo = tmp_path / "data.txt"
    os.mkfifo(fifo)
    args = ["heuristic", "s-mdeclust", "data.txt"] if command[0] == "heuristic" else \
        [command[0], "data.txt", *command[1:]]
    run = Child(_pcsos(*args, "-k", 3, "--json", "out.json"), tmp_path)
    writer = None
    try:
        writer = open_fifo_writer(fifo, run.proc)
        run.interrupt()  # the child waits for the data, which never comes
        rc, out, err = run.finish()
    finally:
        if writer is not None:
            os.close(writer)
    assert rc == 130, (out, err)
    assert f"pcsos {command[0]}: interrupted" in err
    assert not (tmp_path / "out.json").exists()


# ------------------------------------------------------ subprocess: the second Ctrl-C
_ARMED = """
import sys, time
from pcsos.cli import Interrupts
intr = Interrupts().install().arm("test", abort=sys.argv[1] == "abort")
print("armed", flush=True)
while not intr.stop.is_set():
    time.sleep(0.01)
print("stopping", flush=True)
while not intr.abort.is_set():  # a stop that takes long: only another signal ends it
    time.sleep(0.01)
print("aborting", flush=True)
time.sleep(600)
"""


@posix
@pytest.mark.parametrize("stages", ["stop", "abort"])
def test_the_last_ctrl_c_quits_at_once(tmp_path, stages):
    run = Child([sys.executable, "-c", _ARMED, stages], tmp_path)
    run.wait_for("armed", "out")
    run.interrupt()
    run.wait_for("stopping", "out")
    if stages == "abort":  # solve's three stages: stop, abort, quit
        run.interrupt()
        run.wait_for("aborting", "out")
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # slack for a loaded machine
    assert rc == 130 and "pcsos test: aborted" in err
    assert ("Ctrl-C again to stop at once" in err) == (stages == "abort")


# ------------------------------------------------------------------------ in process
def _sixty():
    rng = np.random.default_rng(3)
    truth = np.arange(60) % 3
    X = rng.normal(scale=0.6, size=(60, 2)) + 3.0 * truth[:, None]
    return X, [(0, 3), (1, 4), (2, 5)], [(0, 1), (1, 2), (6, 7)]


@pytest.fixture(scope="module")
def sixty():
    X, ml, cl = _sixty()
    return X, ml, cl, pcsos.solve(X, 3, ml, cl, workers=1).objective


def _check_stopped(res, X, ml, cl, opt):
    assert res.interrupted and res.cut_short
    assert res.status == "interrupted" and not res.success
    assert res.lower_bound <= opt * (1 + 1e-9)
    assert pairs_satisfied(res.labels, np.array(ml), np.array(cl))
    inst = make_instance(X, 3, ml, cl)
    for t in res.cut_short:  # at least the subset's spectral floor, never below it
        b = res.subsets[t]
        floor = spectral_floor(Problem.from_instance(_sub_instance(inst, b.points)))
        assert b.lower_bound >= floor - 1e-9


def test_certify_stopped_between_subsets(sixty):
    X, ml, cl, opt = sixty
    stop = threading.Event()

    def progress(stage, done, total, bound):
        if stage == "subsets" and done == 1:
            stop.set()

    res = certify(X, 3, ml, cl, subset_size=20, workers=1, progress=progress,
                  stop_event=stop)
    _check_stopped(res, X, ml, cl, opt)
    assert res.cut_short == [1, 2] and not res.subsets[0].cut_short
    assert all(res.subsets[t].method == "spectral" for t in (1, 2))
    assert res.to_dict()["cut_short"] == [1, 2] and res.to_dict()["interrupted"]


@pytest.mark.parametrize("pool", ["here", "threads"])
def test_certify_stopped_inside_an_sdp(sixty, pool, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import pcsos.bounds.solve
    from pcsos.bounds.admm import solve_admm

    X, ml, cl, opt = sixty
    stop = threading.Event()
    calls = [0]

    def admm(*args, time_limit, **kwargs):
        def polled():  # the ADMM polls its Deadline every iteration: the 3rd sets the stop
            calls[0] += 1
            if calls[0] == 3:
                stop.set()
            return False  # the Deadline's own signal is the stop event
        return solve_admm(*args, time_limit=Deadline.of(time_limit).within(stop=polled),
                          **kwargs)

    monkeypatch.setattr(pcsos.bounds.solve, "solve_admm", admm)
    executor = ThreadPoolExecutor(1) if pool == "threads" else None
    try:
        res = certify(X, 3, ml, cl, subset_size=20, workers=1, executor=executor,
                      stop_event=stop)
    finally:
        if executor is not None:
            executor.shutdown()
    _check_stopped(res, X, ml, cl, opt)
    assert res.subsets[0].cut_short and "stopped on request" in res.subsets[0].message
    assert res.cut_short == [0, 1, 2]


def test_certify_stopped_before_a_clustering(sixty):
    X, ml, cl, opt = sixty
    stop = threading.Event()
    stop.set()
    with pytest.raises(UndecidedError, match="stopped before it found"):
        certify(X, 3, ml, cl, subset_size=20, workers=1, stop_event=stop)
    # a given clustering exists: every subset keeps its floor
    res = certify(X, 3, ml, cl, labels=np.arange(60) % 3, subset_size=20, workers=1,
                  stop_event=stop)
    _check_stopped(res, X, ml, cl, opt)
    assert res.cut_short == [0, 1, 2]


def test_a_stopped_heuristic_keeps_its_best():
    X, ml, cl = _sixty()
    problem = Problem.from_instance(make_instance(X, 3, ml, cl))
    stop = threading.Event()
    stop.set()
    res = run_heuristic("s-mdeclust", problem, seed=0, stop_event=stop)
    assert res.status == "no_solution" and res.stats["interrupted"]
    seen = []

    def progress(info):  # stop once the initial population is complete
        seen.append(info["stage"])
        if info["stage"] == "generation":
            stop.set()

    stop.clear()
    res = run_heuristic("s-mdeclust", problem, seed=0, progress=progress, stop_event=stop,
                        N_max=10**9, tol=-1)
    assert res.status == "found" and res.stats["interrupted"]
    assert res.stats["stop"] == "interrupted" and res.stats["generations"] == 1
    assert "interrupted" not in run_heuristic("ipc-kmeans", problem, seed=0).stats


def test_impact_stopped_after_two_pairs():
    X, ml, cl = _sixty()
    stop = threading.Event()

    def progress(done, total):
        if done == 2:
            stop.set()

    res = impact(X, 3, ml, cl, labels=np.arange(60) % 3, progress=progress, stop_event=stop)
    assert res.interrupted and len(res.pairs) == 2 and res.total == 6
    assert res.to_dict()["interrupted"] and "interrupted: 2 of 6 pairs scored" in res.notes


def test_cli_stopped_before_anything_exits_130(tmp_path, capsys):
    X, ml, cl = _sixty()
    _write_data(tmp_path / "d.txt", X)
    _write_pairs(tmp_path / "c.txt", ml, cl)
    for argv in (["heuristic", "s-mdeclust"], ["certify"], ["bound"], ["bound", "--cuts", "all"],
                 ["bound", "--method", "colgen"]):
        intr = Interrupts()  # a signal that came once the command was armed
        intr.stop.set()
        js = tmp_path / f"{argv[0]}.json"
        assert main([argv[0], *argv[1:], str(tmp_path / "d.txt"), "-c", str(tmp_path / "c.txt"),
                     "-k", "3", "--json", str(js)], interrupts=intr) == 130
        assert f"pcsos {argv[0]}: interrupted" in capsys.readouterr().err
        assert not js.exists()


def _bound_json(tmp_path, intr, *options) -> dict:
    """``pcsos bound`` on 200 points in four discs, with ``intr`` as its signals; its JSON."""
    X, truth, ml, cl, opt = _separated(200, 4, 40.0)
    _write_data(tmp_path / "d.txt", X)
    _write_pairs(tmp_path / "c.txt", ml, cl)
    js = tmp_path / "b.json"
    assert main(["bound", str(tmp_path / "d.txt"), "-c", str(tmp_path / "c.txt"), "-k", "4",
                 *options, "--json", str(js), "-q"], interrupts=intr) == 0
    rep = json.loads(js.read_text())
    assert 0 < rep["lower_bound"] <= opt * (1 + 1e-9)
    return rep


def _stop_after(monkeypatch, module, name: str) -> Interrupts:
    """Signals whose stop is set as ``module.name`` (patched) returns."""
    intr = Interrupts()
    real = getattr(module, name)

    def then_stop(*args, **kw):
        out = real(*args, **kw)
        intr.stop.set()
        return out

    monkeypatch.setattr(module, name, then_stop)
    return intr


def test_bound_stopped_between_cutting_plane_rounds(tmp_path, monkeypatch):
    # the stop lands while the first round separates: the loop ends as at its time limit,
    # with the first round's bound, and says it was stopped
    import pcsos.cuts.loop as loop

    intr = _stop_after(monkeypatch, loop, "_next_round_cuts")
    rep = _bound_json(tmp_path, intr, "--cuts", "all")
    assert rep["status"] == "interrupted" and rep["cp_message"] == "stopped on request"
    assert rep["message"] == "stopped on request: the best safe bound so far"


def test_bound_stopped_in_colgen_heuristic_exits_130(tmp_path, monkeypatch, capsys):
    # a stop before the column generation began leaves nothing to report (it reported a
    # Lagrangian of -5e6 from the first duals before)
    import pcsos.cli.bound as cli_bound

    intr = _stop_after(monkeypatch, cli_bound, "run_heuristic")
    X, _, ml, cl, _ = _separated(200, 4, 40.0)
    _write_data(tmp_path / "d.txt", X)
    _write_pairs(tmp_path / "c.txt", ml, cl)
    assert main(["bound", str(tmp_path / "d.txt"), "-c", str(tmp_path / "c.txt"), "-k", "4",
                 "--method", "colgen"], interrupts=intr) == 130
    assert "pcsos bound: interrupted" in capsys.readouterr().err
