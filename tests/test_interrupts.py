"""Ctrl-C at every moment of ``pcsos solve``: exit code and output each time.

The command runs in a subprocess on a generated instance that branches (k = 6, 40
cannot-link pairs; the cutting-plane rounds are capped so that the root takes a few seconds
and each child a second or two). SIGINT is sent while the data is being read (from a FIFO
that never delivers it), once the solve's header line says the search starts (the
feasibility check or the first heuristic), when the progress table shows the root's
cutting-plane loop, when it shows a child node at work, and twice (the second once the
first was taken). Each moment is polled for in the child's output, never waited for. Every
run must end within seconds with exit code 0 and a certified gap (or 130 when nothing was
found yet), and never with a traceback or an abort.
"""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import BLAS_THREAD_VARS
from subproc import BAD, Child, open_fifo_writer, thread_status

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigint")
    rng = np.random.default_rng(3)
    n, k = 160, 6
    centres = rng.normal(scale=2.0, size=(k, 2))
    truth = rng.integers(0, k, n)
    X = centres[truth] + rng.normal(size=(n, 2))
    np.savetxt(d / "data.txt", X, header=f"{n} 2", comments="")
    lines = []
    while len(lines) < 40:
        i, j = rng.choice(n, 2, replace=False)
        if truth[i] != truth[j]:
            lines.append(f"CL {i} {j}")
    (d / "cons.txt").write_text("\n".join(lines) + "\n")
    return d


class Run(Child):
    """``pcsos solve`` on the module's instance (``prog``: the interpreter's arguments before
    the command, e.g. a driver script), its output read as it comes."""

    def __init__(self, d, data: str = "data.txt", prog=("-m", "pcsos"), extra=(), env=None):
        # --bound sdp: the SDP's cutting-plane rounds are what the tests interrupt
        super().__init__([sys.executable, *prog, "solve", data, "-c", "cons.txt", "-k", "6",
                          "--bound", "sdp", "--workers", "2", "--max-rounds", "3",
                          "--max-rounds-child", "2",
                          "--time-limit", "120", "--json", "out.json", *extra], d, env)


def _check_clean(rc: int, out: str, err: str) -> None:
    assert rc in (0, 130), (rc, out, err)
    for bad in BAD:
        assert bad not in out + err, (bad, out, err)


def _check_result(out: str, err: str) -> dict:
    """The summary of a run stopped with a clustering: status, objective, certified gap."""
    assert re.search(r"^status: +(interrupted|optimal) ", out, re.M), (out, err)
    obj = float(re.search(r"^objective: +(\S+)", out, re.M).group(1))
    lb = float(re.search(r"^lower bound: +(\S+)", out, re.M).group(1))
    nodes = int(re.search(r"^nodes: +(\d+)", out, re.M).group(1))
    assert 0.0 <= lb <= obj  # a certified bound, never above the clustering returned
    return {"objective": obj, "lower_bound": lb, "nodes": nodes}


def test_sigint_while_reading(instance):
    fifo = instance / "fifo.txt"
    if not fifo.exists():
        os.mkfifo(fifo)
    run = Run(instance, data="fifo.txt")
    writer = None
    try:
        writer = open_fifo_writer(fifo, run.proc)
        sent = run.interrupt()  # the child waits for data that never comes
        rc, out, err = run.finish()
    finally:
        if writer is not None:
            os.close(writer)
    assert time.monotonic() - sent < 60  # within seconds; slack for a loaded machine
    _check_clean(rc, out, err)
    assert rc == 130 and "pcsos solve: interrupted" in err and "status:" not in out


def _kernel_shows_pipe_reads() -> bool:
    """Whether /proc's wchan names a pipe read (Linux, where the kernel shows it): probed
    on a thread of this process that blocks reading a pipe until it is written to."""
    import threading

    r, w = os.pipe()
    t = threading.Thread(target=os.read, args=(r, 1), daemon=True)
    t.start()
    try:
        end = time.monotonic() + 10.0
        while time.monotonic() < end:
            if any("pipe" in f["wchan"] for f in thread_status(os.getpid()).values()):
                return True
            time.sleep(0.02)
        return False
    finally:
        os.write(w, b"x")
        t.join(5)
        os.close(r)
        os.close(w)


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").is_dir(),
                    reason="reads the threads' wait channels from /proc (Linux)")
def test_sigint_while_reading_stdin(tmp_path):
    # a wait for data on stdin ('-') that never comes: it aborted the interpreter at exit
    # ("could not acquire lock for <stdin>"), its reader holding sys.stdin's lock
    if not _kernel_shows_pipe_reads():
        pytest.skip("the kernel does not show a pipe read in /proc/PID/task/*/wchan")
    proc = subprocess.Popen([sys.executable, "-m", "pcsos", "check", "-", "-k", "3"],
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 900.0  # a hang guard: the poll ends once the read waits
        while not any("pipe" in f["wchan"] for f in thread_status(proc.pid).values()):
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        proc.wait(300)  # stdin stays open: an EOF must not end the read first
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        if proc.stdin is not None:
            proc.stdin.close()
    assert proc.returncode == 130 and "pcsos check: interrupted" in err, (out, err)
    assert not any(bad in out + err for bad in BAD) and "Fatal Python error" not in err


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").is_dir(),
                    reason="reads thread signal masks from /proc (Linux)")
def test_only_the_main_thread_takes_signals_while_reading(instance):
    """One cause of a rare hang of the test above, checked directly: a thread other than the
    main one that accepts SIGINT can take the signal and leave the main thread's wait for a
    FIFO's data blocked for good. Every other thread must block SIGINT and SIGTERM (the
    helper that reads the FIFO too)."""
    fifo = instance / "fifo_mask.txt"
    if not fifo.exists():
        os.mkfifo(fifo)
    # the suite's environment may cap BLAS at one thread (no pool, nothing to check): the
    # child gets pools of two
    run = Run(instance, data="fifo_mask.txt",
              env={v: "2" for v in BLAS_THREAD_VARS})
    writer = None
    try:
        writer = open_fifo_writer(fifo, run.proc)
        pid = run.proc.pid
        masks = {tid: int(f["SigBlk"], 16) for tid, f in thread_status(pid).items()}
        run.interrupt()
        rc, out, err = run.finish()
    finally:
        if writer is not None:
            os.close(writer)
    assert rc == 130, (rc, out, err)
    want = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    others = {tid: m for tid, m in masks.items() if tid != pid}
    if not others:
        pytest.skip("no thread besides the main one (single-threaded BLAS)")
    assert all(m & want == want for m in others.values()), {t: hex(m) for t, m in masks.items()}
    assert masks[pid] & want == 0


_CAUGHT_ELSEWHERE = """
import errno, os, pathlib, signal, sys, threading, time
from pcsos.io import read_data

def handler(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, handler)
fifo = sys.argv[1]

def in_pipe_read():
    for task in pathlib.Path("/proc/self/task").iterdir():
        try:
            if "pipe_read" in (task / "wchan").read_text():
                return True
        except OSError:
            pass
    return False

def poke():
    while True:
        try:
            os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # kept open: the read waits for data
            break
        except OSError as exc:
            assert exc.errno == errno.ENXIO, exc
            time.sleep(0.01)
    end = time.monotonic() + 600
    while not in_pipe_read():
        if time.monotonic() > end:
            os._exit(77)  # the kernel does not say where a thread waits: cannot check
        time.sleep(0.01)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=poke, daemon=True).start()
try:
    read_data(fifo)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(1)
"""


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").is_dir(),
                    reason="finds the thread blocked in a pipe read from /proc (Linux)")
def test_a_signal_the_blocked_read_never_sees_still_ends_it(tmp_path):
    """The cause of a rare hang of test_sigint_while_reading: CPython runs a Python handler
    between bytecodes, so a SIGINT that lands just before the read() of a FIFO is blocked
    sets the handler's flag but never interrupts the read. Here a thread takes the signal
    once a read is blocked (the same state, made certain). Before the fix the read stayed
    blocked (the child timed out); now the reader's wait sees the flag within a step."""
    fifo = tmp_path / "data.txt"
    os.mkfifo(fifo)
    script = tmp_path / "caught_elsewhere.py"
    script.write_text(_CAUGHT_ELSEWHERE)
    try:
        proc = subprocess.run([sys.executable, str(script), str(fifo)], capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("the read stayed blocked after the signal")
    if proc.returncode == 77:
        pytest.skip("/proc does not show where threads wait")
    assert proc.returncode == 130, (proc.returncode, proc.stdout, proc.stderr)


def test_sigint_as_the_search_starts(instance):
    run = Run(instance)
    run.wait_for(r"^pcsos solve: n = 160", "out")  # read and checked; the search starts
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # within seconds; slack for a loaded machine
    _check_clean(rc, out, err)
    # the feasibility check and the root heuristic may or may not have found a clustering
    # by then: both outcomes are right, each checked in full
    if rc == 0:
        _check_result(out, err)
    else:
        assert "interrupted" in err and "status:" not in out


def test_sigint_during_the_root(instance):
    run = Run(instance)
    run.wait_for(r"root: cutting-plane round", "out")
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # within seconds; slack for a loaded machine
    _check_clean(rc, out, err)
    assert rc == 0
    res = _check_result(out, err)
    assert res["nodes"] == 0  # the unfinished root is not counted
    assert "stop requested" in err
    assert (instance / "out.json").exists()


def test_sigint_during_a_child(instance):
    run = Run(instance)
    run.wait_for(r"node [1-9]\d*: |^\*? +[1-9]\d* +[1-9]", "out")  # a child at work
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # within seconds; slack for a loaded machine
    _check_clean(rc, out, err)
    assert rc == 0
    res = _check_result(out, err)
    assert res["nodes"] >= 1 and res["lower_bound"] > 0


# The CLI with a root heuristic "blocked" that touches $GATE and then never returns (nor
# looks at its cancellation), and a tree that waits for its running nodes as long as they
# take after a first stop: only a second Ctrl-C can end that solve, on any machine.
_BLOCKED_ROOT = """
import functools, os, pathlib, sys, time
import pcsos.api
from pcsos.heuristics.registry import register_heuristic
def blocked(*args, **kwargs):
    pathlib.Path(os.environ["GATE"]).touch()
    while True:
        time.sleep(1)
register_heuristic("blocked", blocked)
pcsos.api.branch_and_bound = functools.partial(pcsos.api.branch_and_bound, grace=1e9)
from pcsos.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigint_twice_stops_at_once(instance):
    driver, gate = instance / "blocked_root.py", instance / "gate"
    driver.write_text(_BLOCKED_ROOT)
    gate.unlink(missing_ok=True)
    run = Run(instance, prog=(str(driver),), extra=("--root-heuristic", "blocked"),
              env={"GATE": str(gate)})
    end = time.monotonic() + 900
    while not gate.exists():  # the root is inside the blocked heuristic
        assert time.monotonic() < end and run.proc.poll() is None, "".join(run.err)
        time.sleep(0.02)
    run.interrupt()
    run.wait_for(r"stop requested", "err")  # the first was taken; the root still runs
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.monotonic() - sent < 60  # the root never ends by itself: the abort ended it
    _check_clean(rc, out, err)
    assert rc == 0
    _check_result(out, err)
    assert "stopping at once" in err
