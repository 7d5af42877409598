"""`pcsos solve` end to end through a subprocess: outputs, exit codes, Ctrl-C, time limit."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from subproc import wait_for_rows

from pcsos.api import Result
from pcsos.problem import pairs_satisfied, sse

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOBS = ROOT / "data" / "blobs.txt"
BLOBS_C = ROOT / "data" / "blobs_constraints.txt"


def _run(*args, timeout=600, **kw):
    return subprocess.run([sys.executable, "-m", "pcsos", "solve", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


def _write_data(path: pathlib.Path, X: np.ndarray) -> pathlib.Path:
    with open(path, "w") as fh:
        fh.write(f"{X.shape[0]} {X.shape[1]}\n")
        for row in X:
            fh.write(" ".join(f"{v:.6f}" for v in row) + "\n")
    return path


def _uniform(tmp_path, n=40, seed=0) -> pathlib.Path:
    # uniform data has no cluster structure: weak bounds, a deep tree
    return _write_data(tmp_path / "uniform.txt", np.random.default_rng(seed).uniform(size=(n, 2)))


def _clustered(tmp_path, n=12, seed=0) -> pathlib.Path:
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=0.3, size=(n, 2)) + 4.0 * (np.arange(n) % 2)[:, None]
    return _write_data(tmp_path / "clustered.txt", X)


def _read_matrix(path) -> np.ndarray:
    return np.loadtxt(path, dtype=np.int64, ndmin=2)


@pytest.mark.skipif(not BLOBS.exists(), reason="shipped example data/blobs.txt missing")
def test_blobs_example_writes_every_output(tmp_path):
    log, jl, res, js = (tmp_path / f for f in ("g.log", "n.jsonl", "r.txt", "r.json"))
    p = _run(BLOBS, "-c", BLOBS_C, "-k", 3, "--log", log, "--jsonl", jl, "--result", res,
             "--json", js)
    assert p.returncode == 0, p.stderr
    out = json.loads(js.read_text())
    for key in ("status", "objective", "lower_bound", "gap", "root_lower_bound", "root_gap",
                "nodes", "seconds", "labels"):
        assert key in out
    assert out["status"] == "optimal" and out["gap"] <= 1e-4
    X = np.loadtxt(BLOBS, skiprows=1)
    labels = np.array(out["labels"])
    assert out["objective"] == pytest.approx(sse(X, labels), rel=1e-9)
    cons = [line.split() for line in BLOBS_C.read_text().splitlines() if line.strip()]
    ml = np.array([(int(a), int(b)) for t, a, b in cons if t == "ML"])
    cl = np.array([(int(a), int(b)) for t, a, b in cons if t == "CL"])
    assert pairs_satisfied(labels, ml, cl)
    M = _read_matrix(res)
    assert M.shape == (75, 3) and (M.sum(axis=1) == 1).all()
    assert (M.argmax(axis=1) == labels).all()
    back = Result.from_json(js)  # the --json file is the Python result's own format
    assert back.status == "optimal" and np.array_equal(back.labels, labels)
    assert back.objective == out["objective"] and back.nodes == out["nodes"]
    text = log.read_text()
    assert "DATA_PATH, n, d, k:" in text and "BRANCH_AND_BOUND_TOL: 0.0001" in text
    assert ("|    N| NODE_PAR|    NODE|      LB_PAR|          LB|  FLAG|  TIME (s)| CP_ITER| "
            "CP_FLAG|   CP_INEQ|     PAIR  TRIANGLE    CLIQUE|          UB|         GUB|     "
            "I      J|     NODE_GAP|          GAP|  OPEN|") in text
    for key in ("WALL_TIME:", "N_NODES:", "AVG_INEQ:", "AVG_CP_ITER:", "ROOT_GAP:", "GAP:",
                "BEST:"):
        assert key in text
    rows = [json.loads(line) for line in jl.read_text().splitlines()]
    assert len(rows) == out["nodes"] and rows[0]["node"] == 0 and rows[0]["node_parent"] == -1
    assert "Incumbent" in p.stdout and "status:" in p.stdout


def test_quiet_prints_nothing(tmp_path):
    data = _clustered(tmp_path, n=12)
    p = _run(data, "-k", 2, "-q")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""


def test_infeasible_exits_3_and_names_pairs(tmp_path):
    data = _clustered(tmp_path, n=8)
    cons = tmp_path / "c.txt"
    cons.write_text("ML 0 1\nML 1 2\nCL 0 2\n")
    js = tmp_path / "r.json"
    p = _run(data, "-c", cons, "-k", 2, "--json", js)
    assert p.returncode == 3
    assert "infeasible" in p.stderr and "(0, 2)" in p.stderr
    out = json.loads(js.read_text())
    assert out["status"] == "infeasible" and out["labels"] is None


@pytest.mark.parametrize("argv,needle", [
    (["--workers", "0"], "--workers"),
    (["--heuristic", "no-such"], "no-such"),
    (["--cuts", "squares"], "squares"),
])
def test_bad_options_exit_2(tmp_path, argv, needle):
    data = _clustered(tmp_path, n=8)
    p = _run(data, "-k", 2, *argv)
    assert p.returncode == 2 and needle in p.stderr, p.stderr


def test_ctrl_c_returns_fast_with_best_clustering(tmp_path):
    """Acceptance 4: SIGINT -> exit 0 within a few seconds, status interrupted, files."""
    data = _uniform(tmp_path, n=40)
    log, res, js = tmp_path / "g.log", tmp_path / "r.txt", tmp_path / "r.json"
    # tol 1e-12 with a loose SDP keeps the tree busy for a long time
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcsos", "solve", str(data), "-k", "4", "--tol", "1e-12",
         "--cuts", "none", "--sdp-tol", "1e-3", "--log", str(log), "--result", str(res),
         "--json", str(js)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ROOT)
    try:
        wait_for_rows(log, proc, rows=3)
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        elapsed = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    # a hang guard, not a speed requirement: a stop takes about a second when idle
    assert elapsed < 60.0, f"took {elapsed:.1f} s to stop"
    rep = json.loads(js.read_text())
    assert rep["status"] == "interrupted"
    assert rep["labels"] is not None and 0 <= rep["gap"] < 1
    assert rep["lower_bound"] <= rep["objective"]
    assert _read_matrix(res).shape == (40, 4)
    assert "STATUS: interrupted" in log.read_text()
    assert "interrupted" in out


def test_time_limit_returns_best_clustering(tmp_path):
    data = _uniform(tmp_path, n=60)  # 40 points nearly close within 3 s on a fast machine
    js, res = tmp_path / "r.json", tmp_path / "r.txt"
    t0 = time.time()
    p = _run(data, "-k", 4, "--tol", "1e-12", "--cuts", "none", "--sdp-tol", "1e-3",
             "--time-limit", 3, "--json", js, "--result", res)
    elapsed = time.time() - t0
    assert p.returncode == 0, p.stderr
    rep = json.loads(js.read_text())
    assert rep["status"] == "time_limit" and rep["labels"] is not None
    assert rep["lower_bound"] <= rep["objective"] and rep["gap"] >= 0
    # hang guards (interpreter start-up included in elapsed), not speed requirements
    assert rep["seconds"] < 3 + 60 and elapsed < 3 + 120
    assert _read_matrix(res).shape == (60, 4)


def test_node_limit(tmp_path):
    data = _uniform(tmp_path, n=30)
    js = tmp_path / "r.json"
    p = _run(data, "-k", 3, "--tol", "1e-12", "--cuts", "none", "--sdp-tol", "1e-3",
             "--max-nodes", 3, "--workers", 1, "--json", js, "-q")
    assert p.returncode == 0, p.stderr
    rep = json.loads(js.read_text())
    assert rep["status"] == "node_limit" and rep["nodes"] == 3


@pytest.mark.skipif(not pathlib.Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("option", ["--log", "--jsonl", "--labels", "--result", "--json"])
def test_a_full_disk_is_an_input_error_naming_the_output(option):
    # --log and --jsonl were internal errors (an OSError at close), --labels and --result too
    p = _run(BLOBS, "-k", 3, "-q", "--workers", 1, option, "/dev/full")
    assert p.returncode == 2, p.stderr
    said = "pcsos solve: error: /dev/full: cannot write: No space left on device"
    assert p.stderr.strip() == said


def test_one_output_at_most_goes_to_stdout_and_then_the_report_does_not():
    p = _run(BLOBS, "-k", 3, "-q", "--labels", "-", "--json", "-")
    assert p.returncode == 2 and "--labels and --json both name '-' (stdout)" in p.stderr
    # the progress table and the summary went to stdout between the labels
    p = _run(BLOBS, "-k", 3, "--workers", 1, "--labels", "-")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 75 and all(line.isdigit() for line in lines), p.stdout[:200]
    assert "Nodes" in p.stderr


def test_an_input_named_dash_is_read_from_stdin():
    # the same solve from the file and from stdin, data or constraints
    p = _run(BLOBS, "-c", BLOBS_C, "-k", 3, "-q", "--workers", 1, "--labels", "-")
    assert p.returncode == 0, p.stderr
    q = _run("-", "-c", BLOBS_C, "-k", 3, "-q", "--workers", 1, "--labels", "-",
             input=BLOBS.read_text())
    r = _run(BLOBS, "-c", "-", "-k", 3, "-q", "--workers", 1, "--labels", "-",
             input=BLOBS_C.read_text())
    assert q.returncode == 0 and r.returncode == 0, (q.stderr, r.stderr)
    assert p.stdout == q.stdout == r.stdout and len(p.stdout.split()) == 75
    # errors name it as standard input, with the line
    p = _run("-", "-k", 3, input="4 2\n0 0\n0 x\n")
    assert p.returncode == 2
    assert p.stderr.strip() == "pcsos solve: error: <stdin>:3: non-numeric value 'x' in column 2"
    # one input at most reads it, and no checkpoint
    p = _run("-", "-c", "-", "-k", 3, input="")
    assert p.returncode == 2 and "DATA and --constraints both name '-' (stdin)" in p.stderr
    p = _run(BLOBS, "-k", 3, "--resume", "-", input="")
    assert p.returncode == 2 and "--resume: a checkpoint is an archive" in p.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal (Linux)")
def test_stdin_from_a_terminal_says_it_waits():
    import os
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pcsos", "solve", "-", "-k", "2",
                             "--labels", "-", "--workers", "1"], cwd=ROOT, stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    try:
        # the first line it prints, before it waits (a hang guard, not a speed limit)
        assert select.select([proc.stderr], [], [], 300)[0], "nothing printed"
        said = proc.stderr.readline()
        assert said == "pcsos solve: reading DATA from the terminal (end it with Ctrl-D)\n"
        os.write(master, b"4 2\n0 0\n0 1\n5 5\n5 6\n\x04")  # the data, then Ctrl-D
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        os.close(master)
    assert proc.returncode == 0, err
    assert out.split() == ["0", "0", "1", "1"]


def test_a_checkpoint_cannot_go_to_stdout():
    p = _run(BLOBS, "-k", 3, "-q", "--checkpoint", "-")
    assert p.returncode == 2 and "give it a file, not '-'" in p.stderr
    assert not (ROOT / "-").exists()
