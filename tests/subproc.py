"""Helpers for the tests that drive a pcsos command in a subprocess and act on what it
prints: read its output as it comes, poll for a line, a log row or a FIFO reader, never
sleep a guessed time. Hang guards are long (minutes): a poll ends as soon as its state
appears, so only a loaded machine ever waits that long."""

from __future__ import annotations

import errno
import os
import pathlib
import re
import signal
import subprocess
import threading
import time

import pytest

#: what no run may print: a traceback, a C++ abort, a swallowed exception, an internal error
BAD = ("Traceback", "terminate called", "Exception ignored", "internal error")


class Child:
    """A command in a subprocess whose stdout and stderr are read line by line as they come
    (``out`` and ``err``, lists of lines)."""

    def __init__(self, args: list[str], cwd, env: dict | None = None):
        self.proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=None if env is None else {**os.environ, **env})
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=self._read, args=(s, buf), daemon=True)
                        for s, buf in ((self.proc.stdout, self.out),
                                       (self.proc.stderr, self.err))]
        for r in self.readers:
            r.start()

    @staticmethod
    def _read(stream, buf):
        for line in stream:
            buf.append(line)

    def wait_for(self, pattern: str, where: str = "err", timeout: float = 900.0) -> None:
        """Poll the child's output (``where``: 'out' or 'err') until a line matches
        ``pattern``; fail (killing the child) if it ends or the guard runs out first."""
        rx = re.compile(pattern)
        buf = self.err if where == "err" else self.out
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(rx.search(line) for line in list(buf)):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.proc.kill()
        pytest.fail(f"never saw {pattern!r}; stdout:\n{''.join(self.out)}\nstderr:\n"
                    f"{''.join(self.err)}")

    def interrupt(self) -> float:
        """Send SIGINT; the ``time.monotonic()`` it was sent at."""
        self.proc.send_signal(signal.SIGINT)
        return time.monotonic()

    def finish(self, timeout: float = 300.0) -> tuple[int, str, str]:
        """Wait for the child; its exit code, stdout and stderr, none holding a line of
        :data:`BAD`."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            where = _threads(self.proc.pid)
            self.proc.kill()
            pytest.fail(f"the child did not end in {timeout} s; its threads: {where}; stdout:\n"
                        f"{''.join(self.out)}\nstderr:\n{''.join(self.err)}")
        finally:
            self.proc.kill()
        for r in self.readers:
            r.join(5)
        out, err = "".join(self.out), "".join(self.err)
        for bad in BAD:
            assert bad not in out + err, (bad, out, err)
        return self.proc.returncode, out, err


def thread_status(pid: int) -> dict[int, dict[str, str]]:
    """Each thread of ``pid`` (Linux): the fields of its /proc status ('Name', 'SigBlk',
    'SigPnd', 'ShdPnd', ...) and 'wchan', where the kernel has it wait; a thread that ends
    meanwhile is left out."""
    threads = {}
    for task in sorted(pathlib.Path(f"/proc/{pid}/task").glob("*")):
        try:
            fields = dict(re.findall(r"^(\w+):\s*(\S*)", (task / "status").read_text(), re.M))
            fields["wchan"] = (task / "wchan").read_text()
        except OSError:
            continue
        threads[int(task.name)] = fields
    return threads


def _threads(pid: int) -> str:
    """:func:`thread_status` in one line, for the message of a hang."""
    return "; ".join(f"{tid} {f.get('Name')} wchan={f['wchan']} SigBlk={f.get('SigBlk')} "
                     f"SigPnd={f.get('SigPnd')} ShdPnd={f.get('ShdPnd')}"
                     for tid, f in thread_status(pid).items()) or "(not readable)"


def open_fifo_writer(fifo, proc, timeout: float = 900.0) -> int:
    """A write end of ``fifo``, opened once ``proc`` has opened it to read (so the child is
    then waiting for data); raises if the child ends or the guard runs out first."""
    end = time.monotonic() + timeout
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or proc.poll() is not None or time.monotonic() > end:
                raise
            time.sleep(0.02)


def wait_for_rows(path: pathlib.Path, proc, rows: int, timeout: float = 900.0) -> None:
    """Poll the gap log ``path`` until it holds ``rows`` node rows; fail if the solve ends
    first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"the solve ended early: {proc.communicate()}")
        if path.exists() and path.read_text().count("\n|") >= rows + 1:  # + the title line
            return
        time.sleep(0.1)
    pytest.fail("the solve wrote no node rows in time")
