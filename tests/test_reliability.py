"""The defects a new user found (issue "Reliability"), one test each.

Degenerate data and the zero optimum are in test_degenerate.py, Ctrl-C in
test_interrupts.py, the readers' BOM and long-line quoting in test_io.py.
"""

from __future__ import annotations

import io
import math
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pcsos
import pcsos.memory
import pcsos.node
from pcsos.heuristics import HeuristicResult, register_heuristic, run_heuristic
from pcsos.log import ProgressPrinter
from pcsos.problem import Problem, make_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOBS = ROOT / "data" / "blobs.txt"


def _cli(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "pcsos", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def _branching(seed=3, n=160, k=6, n_cl=40):
    """Overlapping blobs with cannot-link pairs (at n = 160 with the defaults the root
    closes in seconds; with WEAK settings trees branch)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(k, 2))
    truth = rng.integers(0, k, n)
    X = centres[truth] + rng.normal(size=(n, 2))
    cl = []
    while len(cl) < n_cl:
        i, j = rng.choice(n, 2, replace=False)
        if truth[i] != truth[j]:
            cl.append((int(i), int(j)))
    return X, k, cl


# no cuts and a loose SDP: weak bounds, so the tree branches at once and nodes are quick
# the SDP engine, which these trees were built for (auto takes the LP at k >= 4 in the plane)
WEAK = {"cp_settings": {"families": "none"}, "bound_settings": {"tol": 1e-3, "engine": "sdp"}}


# ---------------------------------------------------------------- output paths (exit 2)

@pytest.mark.parametrize("make", ["directory", "missing_dir", "input_file", "same_file"])
def test_bad_output_paths_exit_2_before_any_work(tmp_path, make):
    args = ["solve", BLOBS, "-k", 3, "-q"]
    if make == "directory":
        args += ["--labels", tmp_path]
    elif make == "missing_dir":
        args += ["--json", tmp_path / "nope" / "r.json"]
    elif make == "input_file":
        args += ["--result", BLOBS]
    else:
        args += ["--labels", tmp_path / "x", "--log", tmp_path / "x"]
    before = BLOBS.read_bytes()
    p = _cli(*args)
    assert p.returncode == 2, p.stderr
    assert "cannot write" in p.stderr and "Traceback" not in p.stderr
    assert "status:" not in p.stdout  # refused before solving
    assert BLOBS.read_bytes() == before


# ---------------------------------------------------------------- notes, threads, import

def test_solve_shows_the_readers_notes(tmp_path):
    data = tmp_path / "d.txt"
    X = np.random.default_rng(0).normal(size=(12, 2))
    data.write_text("12 2 3\n" + "\n".join(f"{a} {b}" for a, b in X) + "\n")  # k 3, -k 2
    cons = tmp_path / "c.json"
    cons.write_text('{"ml": [[0, 1]], "cl": [], "sml": [[2, 3]], "scl": []}')
    p = _cli("solve", data, "-c", cons, "-k", 2)
    assert p.returncode == 0, p.stderr
    notes = [line for line in p.stderr.splitlines() if line.startswith("note: ")]
    assert any("header" in n for n in notes), p.stderr  # the header seen, and its k
    assert any("soft" in n or "sml" in n for n in notes), p.stderr
    assert _cli("solve", data, "-c", cons, "-k", 2, "-q").stderr == ""


def test_one_blas_thread_per_worker_by_default(tmp_path):
    js = tmp_path / "r.json"
    p = _cli("solve", BLOBS, "-k", 3, "-q", "--workers", 1, "--json", js)
    assert p.returncode == 0, p.stderr
    import json

    settings = json.loads(js.read_text())["settings"]
    assert settings["SDP_SOLVER_SESSION_THREADS"] == 1
    assert settings["SDP_SOLVER_SESSION_THREADS_ROOT"] == 1


def test_importing_an_unbuilt_source_tree_says_why(tmp_path):
    """`pip install .` then Python in the repository root imports the source tree, whose
    kernels are not built: a clear error, from the API and the CLI, not a bare
    ModuleNotFoundError."""
    import shutil

    shutil.copytree(ROOT / "pcsos", tmp_path / "pcsos",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = ("import numpy as np, pcsos\n"
            "try:\n    pcsos.solve(np.arange(8.0).reshape(4, 2), 2)\n"
            "except ImportError as e:\n    print(type(e).__name__, e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert "KernelsNotBuiltError" in p.stdout and "not built" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-m", "pcsos", "solve", str(BLOBS), "-k", "3"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert p.returncode == 1 and "not built" in p.stderr and "Traceback" not in p.stderr


def test_importing_the_cli_does_not_load_the_solver():
    """Ctrl-C can be taken over before numpy and the solver load (pcsos's lazy exports)."""
    code = "import sys, pcsos.cli; print('numpy' in sys.modules, 'pcsos.api' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.stdout.split() == ["False", "False"], p.stdout + p.stderr


def test_openblas_spin_default_is_set_before_numpy_loads_and_the_users_stands():
    """OpenBLAS reads OPENBLAS_THREAD_TIMEOUT once, when it loads: the command sets the
    default before numpy is imported; a value in the environment is kept."""
    import pcsos as pkg

    code = ("import os, sys, pcsos.cli\n"
            "print('numpy' in sys.modules, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.stdout.split() == ["False", pkg._BLAS_THREAD_TIMEOUT], p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**env, "OPENBLAS_THREAD_TIMEOUT": "7"}, timeout=600)
    assert p.stdout.split() == ["False", "7"], p.stdout + p.stderr


# ---------------------------------------------------------------- heuristics

def test_run_heuristic_in_a_worker_thread_leaves_the_blas_limit(monkeypatch):
    """threadpoolctl limits are process-wide: the tree's jobs pass blas_threads=None."""
    import pcsos.heuristics.registry as reg

    calls = []
    monkeypatch.setattr(reg, "threadpool_limits", lambda **kw: calls.append(kw))
    X, k, cl = _branching(n=30, n_cl=5)
    pcsos.solve(X, k, cl=cl, workers=2, time_limit=30)
    assert calls == []


_seen: dict = {}


def _spy(problem, Z, rng, deadline, *, init_labels=None):
    _seen.setdefault("starts", []).append(init_labels)
    return HeuristicResult(status="no_solution")


def _old_style(problem, Z, rng, deadline):
    _seen["old"] = True
    return HeuristicResult(status="no_solution")


def _root_spy(problem, Z, rng, deadline, **options):
    _seen.setdefault("root", []).append((Z is None, deadline.limit, sorted(options)))
    return HeuristicResult(status="no_solution")


def _until_deadline(problem, Z, rng, deadline, **options):
    # holds its node until the solve's time is up, whatever the machine's speed
    while not deadline.expired():
        time.sleep(0.02)
    return HeuristicResult(status="no_solution")


_ticked = threading.Event()


def _until_ticked(problem, Z, rng, deadline, **options):
    # holds the root until the progress callback has seen a tick naming its stage
    while not (_ticked.is_set() or deadline.expired()):
        time.sleep(0.02)
    return HeuristicResult(status="no_solution")


for _name, _fn in (("test-spy", _spy), ("test-old-style", _old_style),
                   ("test-root-spy", _root_spy), ("test-until-deadline", _until_deadline),
                   ("test-until-ticked", _until_ticked)):
    try:
        register_heuristic(_name, _fn)
    except pcsos.InputError:  # registered by an earlier import
        pass


def test_every_heuristic_is_handed_the_best_known_clustering():
    _seen.clear()
    X, k, cl = _branching(n=40, n_cl=10)
    res = pcsos.solve(X, k, cl=cl, heuristic="test-spy", workers=1, time_limit=60, **WEAK)
    starts = _seen["starts"]
    assert len(starts) >= 2 and all(s is not None for s in starts)  # witness, then better
    assert res.labels is not None
    problem = Problem.from_instance(make_instance(X, k, cl=cl))
    r = run_heuristic("test-old-style", problem, init_labels=res.labels)
    assert _seen["old"] and "init_labels" in r.stats["note"]


def test_the_root_heuristic_runs_once_before_the_bound_within_its_share_of_the_time():
    """The root heuristic (s-mdeclust by default) runs once, without Z, within a quarter of
    the time left, and gets none of the options meant for the node heuristic."""
    _seen.clear()
    X, k, cl = _branching(n=40, n_cl=10)
    pcsos.solve(X, k, cl=cl, root_heuristic="test-root-spy", workers=1, time_limit=100,
                heuristic_options={"n_init": 3}, **WEAK)
    [(no_z, limit, opts)] = _seen["root"]
    assert no_z and 0 < limit <= 100 * pcsos.node.ROOT_HEURISTIC_SHARE
    assert opts == ["init_labels"]
    _seen.clear()
    pcsos.solve(X, k, cl=cl, root_heuristic=None, heuristic="test-root-spy", workers=1,
                time_limit=100, **WEAK)
    assert all(not no_z for no_z, _, _ in _seen["root"])  # every call had a Z: no root run
    _seen.clear()  # the same heuristic at the root and at every node: still a quarter
    pcsos.solve(X, k, cl=cl, root_heuristic="test-root-spy", heuristic="test-root-spy",
                workers=1, time_limit=100, **WEAK)
    [root_call] = [c for c in _seen["root"] if c[0]]
    assert 0 < root_call[1] <= 100 * pcsos.node.ROOT_HEURISTIC_SHARE


# ---------------------------------------------------------------- large instances

def test_a_root_sdp_that_cannot_finish_is_not_started(monkeypatch):
    """The policy for instances too large for the time left: heuristic first, progress at
    once, a decomposition bound instead of the root's SDP, and a result that says so."""
    monkeypatch.setattr(pcsos.node, "SDP_CHECK_SIZE", 1)
    monkeypatch.setattr(pcsos.node, "MIN_SDP_ITERATIONS", 1e12)
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_SUBSET", 50)
    X, k, cl = _branching(n=200, n_cl=20)
    statuses = []
    res = pcsos.solve(X, k, cl=cl, workers=1, time_limit=300, progress=statuses.append,
                      bound_settings={"engine": "sdp"})
    assert res.status == "time_limit" and res.seconds < 60
    assert res.labels is not None and 0.0 < res.lower_bound < res.objective
    assert "needs at least" in res.message and "decomposition bound: 4 subsets" in res.message
    assert statuses and statuses[0]["stage"] == "feasibility check"
    root = res.log[0]
    assert root["closed"] == "sdp_too_large" and root["ub"] < math.inf
    assert root["decomposition_subsets"] == 4 and root["decomposition_sdp"] >= 1
    # the log and the progress table say what the result says
    assert root["lb"] == pytest.approx(res.lower_bound)
    # the heuristic's clustering, not the feasibility witness
    assert res.objective <= min(r["ub"] for r in res.log)


def test_a_root_sdp_beyond_the_memory_is_not_started(monkeypatch, tmp_path, capsys):
    """An SDP that needs more memory than the machine has would be killed by the OS, result
    and all: the root bounds subsets instead, and the result and ``pcsos bound`` say why."""
    from pcsos.cli import main

    monkeypatch.setattr(pcsos.memory, "CHECK_BYTES", 0.0)
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_SUBSET", 50)
    need = 8.0 * pcsos.memory.SDP_DOUBLES * 200 ** 2
    have = {"bytes": need + 1.0}  # just enough for s = 200
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: have["bytes"])
    X, k, cl = _branching(n=200, n_cl=20)
    res = pcsos.solve(X, k, cl=cl, workers=1, seed=0, bound_settings={"engine": "sdp"},
                      max_nodes=1)
    assert "sdp_iterations" in res.log[0] and "sdp_memory" not in res.log[0]
    have["bytes"] -= 2.0
    res = pcsos.solve(X, k, cl=cl, workers=1, seed=0, bound_settings={"engine": "sdp"})
    root = res.log[0]
    assert root["closed"] == "sdp_too_large" and "sdp_iterations" not in root
    assert root["sdp_memory"] == need and root["memory_available"] < need
    assert root["decomposition_subsets"] == 4 and root["lb"] == pytest.approx(res.lower_bound)
    assert res.labels is not None and 0.0 < res.lower_bound < res.objective
    assert "GiB of memory, more than the" in res.message
    assert "decomposition bound: 4 subsets" in res.message
    data = tmp_path / "d.txt"
    data.write_text(f"{len(X)} 2\n" + "".join(f"{a} {b}\n" for a, b in X))
    assert main(["bound", str(data), "-k", str(k), "--method", "sdp"]) == 1
    assert "the SDP at s = 200 super-points needs about" in capsys.readouterr().err


def test_an_interior_point_sdp_beyond_the_memory_is_refused(monkeypatch, tmp_path, capsys):
    """An interior-point solver holds matrices of order s^2 (Clarabel took 7 GiB at s = 150,
    docs/benchmarks.md): at s = 200 with 2 GiB free, pcsos bound and the tree refuse it and
    name the built-in solver, which needs megabytes there and still runs."""
    from pcsos.cli import main

    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 2.0 ** 31)
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_SUBSET", 25)  # Clarabel's, in seconds
    X, k, cl = _branching(n=200, n_cl=20)
    data = tmp_path / "d.txt"
    data.write_text(f"{len(X)} 2\n" + "".join(f"{a} {b}\n" for a, b in X))
    assert main(["bound", str(data), "-k", str(k), "--backend", "clarabel"]) == 1
    err = capsys.readouterr().err
    assert "the SDP at s = 200 super-points needs about" in err
    assert "with --backend clarabel: use --backend admm" in err
    # MOSEK (its licence is checked first) by its Schur complement's triangle alone
    from pcsos.bounds.settings import BoundSettings

    assert pcsos.memory.sdp_memory_short(300, BoundSettings(backend="mosek", device="cpu")
                                         ) is not None
    assert pcsos.memory.sdp_memory_short(300, BoundSettings(device="cpu")) is None
    res = pcsos.solve(X, k, cl=cl, workers=1, seed=0, max_nodes=1,
                      bound_settings={"engine": "sdp", "backend": "clarabel"})
    root = res.log[0]
    assert root["closed"] == "sdp_too_large" and root["sdp_memory"] > 2.0 ** 31
    assert "with backend 'clarabel'" in res.message and 0.0 < res.lower_bound < res.objective
    assert main(["bound", str(data), "-k", str(k), "--max-iter", "50", "-q"]) == 0


def test_nodes_below_the_root_refused_for_memory_are_named(monkeypatch):
    monkeypatch.setattr(pcsos.memory, "CHECK_BYTES", 0.0)
    calls = []

    def memory():  # the root's checks pass (its node's, then the ledger's), its children's fail
        calls.append(1)
        return 1e12 if len(calls) <= 2 else 1.0

    monkeypatch.setattr(pcsos.memory, "memory_available", memory)
    X, k, cl = _branching(n=90, k=3, n_cl=30)
    res = pcsos.solve(X, k, cl=cl, workers=1, seed=0, bound_settings={"engine": "sdp"},
                      cp_settings={"families": "none"}, max_nodes=3)
    refused = [r for r in res.log if r.get("sdp_memory") is not None]
    assert res.log[0].get("sdp_memory") is None and refused
    assert all(r["closed"] == "sdp_too_large" and r["kind"] != "root" for r in refused)
    assert res.status == "unresolved" and "numerically" not in res.message
    assert f"{len(refused)} node(s) did not run their SDP" in res.message
    assert 0.0 < res.lower_bound <= res.objective


def _hold_in_thread(ledger, need, stopped=lambda: False, waits=None):
    """Enter ``ledger.hold(need)`` in a thread that stays inside until told; returns
    (entered event, leave event, thread, [the Grant])."""
    entered, leave, got = threading.Event(), threading.Event(), []

    def body():
        told = None if waits is None else (lambda: waits.append(1))
        with ledger.hold(need, stopped, told) as grant:
            got.append(grant)
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return entered, leave, t, got


def _leave(*holds):
    for h in holds:
        h[1].set()
        h[2].join(10)


def test_an_sdp_waits_while_the_others_hold_the_memory_it_needs(monkeypatch):
    """Two nodes that start at once must not each take the whole of what is free: the second
    waits for the first to end, then runs; small SDPs and unknown memory never wait."""
    need = 2.0 ** 30
    have = {"bytes": 1.5 * need}  # room for one solve, not two
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: have["bytes"])
    monkeypatch.setattr(pcsos.memory.MemoryLedger, "POLL", 0.01)
    ledger = pcsos.memory.MemoryLedger()
    first = _hold_in_thread(ledger, need)
    assert first[0].wait(10) and first[3][0].ok and not first[3][0].waited
    assert ledger.running == 1 and ledger.held == need
    waits = []
    second = _hold_in_thread(ledger, need, waits=waits)
    assert not second[0].wait(0.3) and ledger.running == 1 and waits == [1]
    small = _hold_in_thread(ledger, 0.0)  # small: no ledger
    assert small[0].wait(10) and small[3][0].ok and ledger.running == 1
    _leave(first)
    assert second[0].wait(10) and second[3][0].ok and second[3][0].waited
    assert ledger.running == 1 and waits == [1]  # told once
    have["bytes"] = None  # unknown: no wait
    third = _hold_in_thread(ledger, need)
    assert third[0].wait(10) and third[3][0].ok and ledger.running == 2
    _leave(second, small, third)
    assert ledger.running == 0 and ledger.held == 0.0
    # memory enough for both: side by side
    have["bytes"] = 2.5 * need
    a, b = _hold_in_thread(ledger, need), _hold_in_thread(ledger, need)
    assert a[0].wait(10) and b[0].wait(10) and ledger.running == 2
    _leave(a, b)


def test_an_sdp_waiting_for_memory_ends_at_a_stop_or_when_it_cannot_fit_alone(monkeypatch):
    need = 2.0 ** 30
    have = {"bytes": 1.5 * need}
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: have["bytes"])
    monkeypatch.setattr(pcsos.memory.MemoryLedger, "POLL", 0.01)
    ledger, stop = pcsos.memory.MemoryLedger(), threading.Event()
    first = _hold_in_thread(ledger, need)
    assert first[0].wait(10) and first[3][0].ok
    second = _hold_in_thread(ledger, need, stop.is_set)
    assert not second[0].wait(0.2)
    stop.set()
    assert second[0].wait(10) and second[3][0] == pcsos.memory.Grant(False, waited=True)
    assert ledger.running == 1
    third = _hold_in_thread(ledger, need)
    assert not third[0].wait(0.2)
    have["bytes"] = 0.5 * need  # another program took memory meanwhile: alone, it cannot run
    _leave(first)
    assert third[0].wait(10)
    assert third[3][0] == pcsos.memory.Grant(False, short=(need, 0.5 * need), waited=True)
    _leave(second, third)
    assert ledger.running == 0 and ledger.held == 0.0
    have["bytes"] = 0.5 * need  # and one that never waited
    assert _hold_in_thread(ledger, need)[0].wait(10) and ledger.running == 0


def test_a_node_that_waited_for_memory_checks_the_time_again(monkeypatch):
    """A wait may leave less time than the SDP needs: the node then says so, as one that
    started with that little time does, rather than start the solve."""
    from contextlib import contextmanager

    monkeypatch.setattr(pcsos.node, "sdp_seconds", lambda s, iterations=None: 1000.0)

    @contextmanager
    def hold(need, stopped, waiting=None):  # a node's waited until 1 s was left
        ctx = stopped.__self__  # a node's ctx; the decomposition's subsets pass their clock
        if not hasattr(ctx, "deadline"):
            yield pcsos.memory.Grant(True)
            return
        ctx.deadline.at = time.monotonic() + 1.0
        yield pcsos.memory.Grant(True, waited=True)

    monkeypatch.setattr(pcsos.memory.MEMORY, "hold", hold)
    X, k, cl = _branching(n=90, k=3, n_cl=30)
    res = pcsos.solve(X, k, cl=cl, workers=1, seed=0, time_limit=1e5,
                      bound_settings={"engine": "sdp"})
    root = res.log[0]
    assert root["closed"] == "sdp_too_large" and root["sdp_estimate"] == 1000.0
    assert "sdp_iterations" not in root and res.status == "time_limit"


def test_two_workers_never_run_sdps_that_do_not_fit_together(monkeypatch):
    """A tree with two workers where one node's SDP fits in memory but two do not: the
    bounds run one at a time, and the tree proves the same optimum."""
    X, k, cl = _branching(n=90, k=3, n_cl=30)
    kw = dict(cl=cl, workers=2, seed=0, bound_settings={"engine": "sdp"}, max_nodes=40,
              cp_settings={"families": "none"})
    free = pcsos.solve(X, k, **kw)
    monkeypatch.setattr(pcsos.memory, "CHECK_BYTES", 0.0)
    # room for one node's SDP, which takes what it was granted once it runs
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 1.5 * 8.0
                        * pcsos.memory.SDP_DOUBLES * 90 ** 2 - pcsos.memory.MEMORY.held)
    monkeypatch.setattr(pcsos.memory.MemoryLedger, "POLL", 0.01)
    inside, most, lock = [0], [0], threading.Lock()
    bound = pcsos.node._NodeRun.bound

    def spy(self):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.05)  # gives a second worker time to come in, were it let
            return bound(self)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(pcsos.node._NodeRun, "bound", spy)
    res = pcsos.solve(X, k, **kw)
    assert len(res.log) > 2 and most[0] == 1
    assert not any(r.get("sdp_memory") for r in res.log)
    assert res.status == free.status
    assert res.objective == pytest.approx(free.objective, rel=1e-9)


def test_memory_available_reads_this_machine():
    have = pcsos.memory.memory_available()
    if not os.path.exists("/proc/meminfo"):
        assert have is None
    else:
        assert have is not None and 0.0 <= have <= os.sysconf("SC_PAGE_SIZE") * os.sysconf(
            "SC_PHYS_PAGES")


def _files(root: pathlib.Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize("version", [1, 2])
def test_memory_available_takes_the_least_cgroup_limit(tmp_path, version):
    """MemAvailable, capped by this process's cgroup and those above it (a batch job in a
    container), each less what it holds but its reclaimable page cache."""
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    _files(proc, {"meminfo": "MemTotal: 9000 kB\nMemAvailable: 4000 kB\n"})
    if version == 2:
        _files(proc, {"self/cgroup": "0::/job/42\n"})
        _files(cg, {"job/42/memory.max": "max\n", "job/42/memory.current": "5\n",
                    "job/memory.max": "3000000\n", "job/memory.current": "1000000\n",
                    "job/memory.stat": "anon 1\ninactive_file 400000\nfile 3\n"})
    else:
        _files(proc, {"self/cgroup": "9:cpu:/\n4:memory:/job/42\n"})
        _files(cg, {"memory/job/42/memory.limit_in_bytes": "3000000\n",
                    "memory/job/42/memory.usage_in_bytes": "1000000\n",
                    "memory/job/42/memory.stat": "total_inactive_file 400000\n",
                    "memory/memory.limit_in_bytes": "9223372036854771712\n",
                    "memory/memory.usage_in_bytes": "8000000\n"})
    assert pcsos.memory.memory_available(str(proc), str(cg)) == 3000000 - (1000000 - 400000)
    # a looser limit leaves MemAvailable; no /proc at all: unknown
    _files(proc, {"meminfo": "MemAvailable: 1000 kB\n"})
    assert pcsos.memory.memory_available(str(proc), str(cg)) == 1000 * 1024
    assert pcsos.memory.memory_available(str(tmp_path / "none"), str(cg)) is None


def test_progress_reports_while_the_root_runs():
    """Progress from the start and while the root works: a root heuristic that waits for a
    tick naming its stage ends at once on a machine of any speed when ticks come, and only
    at its share of the limit (a quarter of 240 s) when they do not."""
    X, k, cl = _branching()
    seen = []
    _ticked.clear()

    def progress(status):
        seen.append(status)
        if any(rep.get("stage") for rep in status.get("running", {}).values()):
            _ticked.set()

    res = pcsos.solve(X, k, cl=cl, workers=2, time_limit=240, progress=progress,
                      root_heuristic="test-until-ticked", max_nodes=1)
    assert _ticked.is_set() and res.nodes >= 1  # ticks came while the root worked
    assert seen[0].get("stage") == "feasibility check"  # the first report: before any work


# ---------------------------------------------------------------- the gap log

def test_nodes_stopped_by_the_limit_are_neither_counted_nor_logged():
    X, k, cl = _branching(n=60, n_cl=15)
    stop = threading.Event()

    def on_row(row):
        if row["node"] >= 4:
            stop.set()

    res = pcsos.solve(X, k, cl=cl, workers=2, callback=on_row, stop_event=stop,
                      time_limit=120, **WEAK)
    assert res.status == "interrupted"
    assert res.nodes == len(res.log) >= 3
    for row in res.log:  # every logged node finished: its own bound, not its parent's
        assert row["flag"] != pcsos.node.FLAG_PARTIAL
        assert row["node"] == 0 or row["lb"] >= row["lb_parent"]


def test_time_limit_message_names_the_users_limit():
    X, k, cl = _branching()
    # no heuristic finds a clustering (the root's cannot prune on the feasibility check's
    # alone) and the node's holds it to the limit: a stop by time on any machine (with the
    # default heuristics this root closes in about 3 s)
    res = pcsos.solve(X, k, cl=cl, workers=2, time_limit=3, heuristic="test-until-deadline",
                      root_heuristic="test-until-deadline")
    assert res.status == "time_limit"
    assert "time limit of 3 s" in res.message


def test_ub_column_is_the_nodes_own_search():
    X, k, cl = _branching(n=60, n_cl=15)
    res = pcsos.solve(X, k, cl=cl, workers=1, max_nodes=15, **WEAK)
    assert any("heuristic_ub" in row for row in res.log)
    for row in res.log:
        if "heuristic_ub" in row:
            assert row["ub"] <= row["heuristic_ub"]
        elif row.get("closed") == "pruned":
            assert row["ub"] == math.inf  # inherited clusterings are not this node's


def test_the_progress_table_ends_on_the_summary_counts():
    out = io.StringIO()
    printer = ProgressPrinter(out, interval=3600)
    base = dict(open=0, depth=0, global_lb=1.0, gub=2.0, gap=0.5, elapsed=0.0)
    for node in range(5):
        printer({**base, "node": node, "improved": False})
    printer.finish()
    last = out.getvalue().strip().splitlines()[-1].split()
    assert last[0] == "5"  # the fifth node, throttled, is printed by finish()
