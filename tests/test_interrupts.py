"""Ctrl-C at every moment of ``pcsos solve``: exit code and output each time.

The command runs in a subprocess on a generated instance that branches (k = 6, 40
cannot-link pairs; the cutting-plane rounds are capped so that the root takes a few seconds
and each child a second or two). SIGINT is sent at a fixed 0.5 s (imports, reading, the
feasibility check or the first heuristic), when the progress table shows the root's
cutting-plane loop, when it shows a child node at work, and twice in a row. Every run must
end within seconds with exit code 0 and a certified gap (or 130 when nothing was found
yet), and never with a traceback or an abort.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

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


class Run:
    """``pcsos solve`` in a subprocess whose stdout is read line by line as it comes."""

    def __init__(self, d):
        cmd = [sys.executable, "-m", "pcsos", "solve", "data.txt", "-c", "cons.txt", "-k", "6",
               "--workers", "2", "--max-rounds", "3", "--max-rounds-child", "2",
               "--time-limit", "120", "--json", "out.json"]
        self.proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.t0 = time.time()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 90.0) -> None:
        rx = re.compile(pattern)
        end = time.time() + timeout
        while time.time() < end:
            if any(rx.search(line) for line in list(self.lines)):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.proc.kill()
        pytest.fail(f"never saw {pattern!r}; output:\n{''.join(self.lines)}")

    def interrupt(self, times: int = 1) -> float:
        for t in range(times):
            if t:
                time.sleep(0.2)
            self.proc.send_signal(signal.SIGINT)
        return time.time()

    def finish(self, timeout: float = 30.0) -> tuple[int, str, str]:
        err = self.proc.stderr.read() if self.proc.wait(timeout) is not None else ""
        self.reader.join(5)
        return self.proc.returncode, "".join(self.lines), err


def _check_clean(rc: int, out: str, err: str) -> None:
    assert rc in (0, 130), (rc, out, err)
    for bad in ("Traceback", "terminate called", "Exception ignored", "internal error"):
        assert bad not in out + err, (bad, out, err)


def _check_result(out: str, err: str) -> dict:
    """The summary of a run stopped with a clustering: status, objective, certified gap."""
    assert re.search(r"^status: +(interrupted|optimal) ", out, re.M), (out, err)
    obj = float(re.search(r"^objective: +(\S+)", out, re.M).group(1))
    lb = float(re.search(r"^lower bound: +(\S+)", out, re.M).group(1))
    nodes = int(re.search(r"^nodes: +(\d+)", out, re.M).group(1))
    assert 0.0 <= lb <= obj  # a certified bound, never above the clustering returned
    return {"objective": obj, "lower_bound": lb, "nodes": nodes}


def test_sigint_at_half_a_second(instance):
    run = Run(instance)
    time.sleep(0.5)
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.time() - sent < 10
    _check_clean(rc, out, err)
    if rc == 0:  # a clustering existed (the feasibility witness or a heuristic's)
        _check_result(out, err)
    else:
        assert "interrupted" in err and "status:" not in out


def test_sigint_during_the_root(instance):
    run = Run(instance)
    run.wait_for(r"root: cutting-plane round")
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.time() - sent < 10
    _check_clean(rc, out, err)
    assert rc == 0
    res = _check_result(out, err)
    assert res["nodes"] == 0  # the unfinished root is not counted
    assert "stop requested" in err
    assert (instance / "out.json").exists()


def test_sigint_during_a_child(instance):
    run = Run(instance)
    run.wait_for(r"node [1-9]\d*: |^\*? +[1-9]\d* +[1-9]")  # a child at work
    sent = run.interrupt()
    rc, out, err = run.finish()
    assert time.time() - sent < 10
    _check_clean(rc, out, err)
    assert rc == 0
    res = _check_result(out, err)
    assert res["nodes"] >= 1 and res["lower_bound"] > 0


def test_sigint_twice_stops_at_once(instance):
    run = Run(instance)
    run.wait_for(r"root: cutting-plane round")
    sent = run.interrupt(times=2)
    rc, out, err = run.finish()
    assert time.time() - sent < 5
    _check_clean(rc, out, err)
    assert rc == 0
    _check_result(out, err)
    assert "stopping at once" in err
