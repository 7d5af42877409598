"""The memory an SDP solve needs, the memory the machine can still give, and the ledger
that shares it among the solves of one process.

The tree refuses a node's SDP that would not fit (the OS would kill the process, result
and all), and its worker threads wait for one another where two would not fit side by
side (:class:`MemoryLedger`); ``pcsos bound``, ``pcsos certify`` and the decomposition's
subsets check the same figures (:func:`sdp_memory_short`, docs/solver.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcsos.bounds.settings import BoundSettings

__all__ = ["CHECK_BYTES", "MEMORY", "Grant", "MemoryLedger", "memory_available",
           "memory_shortfall", "sdp_bytes", "sdp_memory_short"]


#: doubles per s^2 that one SDP solve on the CPU holds at its peak: the ADMM's s x s
#: arrays, its acceleration's history and the safe bound's eigensolver. Measured as
#: `pcsos bound --method sdp`'s maximum resident size less that of a process that only
#: read the data (benchmarks/bench_sdp_memory.py, docs/benchmarks.md): 50 at most; 56
#: leaves a margin
SDP_DOUBLES = 56
#: the same for SCS through CVXPY (its problem's copies and factorisation): 330-375 measured
#: at s = 200-800 (bench_sdp_memory.py --backend scs); 450 leaves a margin
SCS_DOUBLES = 450
#: an interior-point solve holds dense matrices of order m = s(s + 1)/2 + s + 1, Z's entries
#: and the rows: doubles per m^2 at its peak. Clarabel, through CVXPY, measured 6.9-9.3 at
#: s = 40-150 (7 GiB at s = 150; --backend clarabel); MOSEK is not measured here (no
#: licence): its Schur complement's triangle, m^2 / 2, is a floor
INTERIOR_POINT_DOUBLES = {"clarabel": 10.0, "mosek": 0.5}
#: below this need (the ADMM's at s = 600, 161 MB) a solve is not checked: it costs seconds
#: and megabytes
CHECK_BYTES = SDP_DOUBLES * 8.0 * 600 ** 2


def sdp_bytes(s: int, settings: BoundSettings | None = None) -> float:
    """Bytes of this machine's memory one SDP solve at size s holds at its peak with
    ``settings`` (None: the ADMM on the CPU), an estimate from measurement (above; a floor
    for MOSEK); 0 below CHECK_BYTES, too little to check, and where it runs on a GPU."""
    if settings is not None and not settings.on_cpu():
        return 0.0
    backend = "admm" if settings is None else settings.backend
    if backend in INTERIOR_POINT_DOUBLES:
        m = s * (s + 1) / 2 + s + 1
        need = INTERIOR_POINT_DOUBLES[backend] * 8.0 * m * m
    else:
        need = (SCS_DOUBLES if backend == "scs" else SDP_DOUBLES) * 8.0 * float(s) ** 2
    return need if need >= CHECK_BYTES else 0.0


def sdp_memory_short(s: int, settings: BoundSettings | None = None, copies: int = 1,
                     freed: float = 0.0) -> tuple[float, float] | None:
    """``(bytes needed, bytes available)`` when ``copies`` SDP solves at size s with
    ``settings`` side by side would need more memory than the machine can still give
    (:func:`sdp_bytes`, :func:`memory_available`) and ``freed`` bytes more, else None (also
    where the need is 0 and where the memory available is unknown)."""
    need = copies * sdp_bytes(s, settings)
    if need <= 0.0:
        return None
    have = memory_available()
    return (need, have) if have is not None and need > have + freed else None


@dataclass(frozen=True)
class Grant:
    """What :meth:`MemoryLedger.hold` gives a solve: ``ok`` when it may run; else ``short``,
    (bytes needed, bytes available) where it no longer fits even alone, or None after a
    stop. ``waited``: it waited for other solves to end."""

    ok: bool
    short: tuple[float, float] | None = None
    waited: bool = False


class MemoryLedger:
    """The memory granted to the SDP solves that run in this process (the tree's workers).

    :func:`memory_available` counts what a running solve has allocated, not what it will:
    two nodes that start at once would each see the whole of what is free, and the OS kill
    the process, result and all. A solve (:func:`sdp_bytes` > 0) therefore waits until its
    bytes fit beside the whole grants of the solves running (what those hold already is
    then counted twice: a margin, and a wait only where memory is short). With none
    running, it runs if it fits in what is free then, and is refused otherwise."""

    #: seconds between two looks at the memory and the stop while a solve waits
    POLL = 0.25

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = 0.0
        self._running = 0

    @property
    def running(self) -> int:
        """Solves granted their memory and not yet ended."""
        return self._running

    @property
    def held(self) -> float:
        """Bytes granted to the solves running."""
        return self._held

    @contextmanager
    def hold(self, need: float, stopped: Callable[[], bool],
             waiting: Callable[[], None] | None = None) -> Iterator[Grant]:
        """Yield a :class:`Grant` for a solve that needs ``need`` bytes: at once for 0 or
        where the memory is unknown, else once it fits (above), refused where it does not
        fit alone, or ended by ``stopped()``; the grant ends with the block. ``waiting`` is
        called once when the solve has to wait. Neither runs under the ledger's lock."""
        if need <= 0.0:
            yield Grant(True)
            return
        grant = self._acquire(need, stopped, waiting)
        if not grant.ok:
            yield grant
            return
        try:
            yield grant
        finally:
            with self._cond:
                self._held -= need
                self._running -= 1
                self._cond.notify_all()

    def _acquire(self, need: float, stopped: Callable[[], bool],
                 waiting: Callable[[], None] | None) -> Grant:
        waited = False
        while True:
            with self._cond:
                if waited:  # a release notifies; the poll sees the stop and the memory
                    self._cond.wait(self.POLL)
                have = memory_available()
                if not self._running and have is not None and need > have:
                    return Grant(False, short=(need, have), waited=waited)
                if not self._running or have is None or need <= have - self._held:
                    self._held += need
                    self._running += 1
                    return Grant(True, waited=waited)
            if not waited and waiting is not None:
                waiting()
            waited = True
            if stopped():
                return Grant(False, waited=True)


#: the ledger of this process's SDP solves
MEMORY = MemoryLedger()


def memory_shortfall(need: float, have: float) -> str:
    """How every refusal for memory says it: '<need> GiB of memory, more than the <have>
    GiB available'."""
    return f"{need / 2 ** 30:.3g} GiB of memory, more than the {have / 2 ** 30:.3g} GiB available"


def memory_available(proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> float | None:
    """Bytes the machine can still give: Linux's MemAvailable, capped by the memory limits of
    this process's cgroup and those above it (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``: a container's, a batch job's) less what they hold but their
    reclaimable page cache; None where unknown (no ``proc``/meminfo)."""
    have = None
    try:
        with open(os.path.join(proc, "meminfo"), encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    have = float(line.split()[1]) * 1024.0
                    break
        with open(os.path.join(proc, "self", "cgroup"), encoding="ascii") as f:
            groups = f.read().splitlines()
    except (OSError, ValueError, IndexError):
        return have
    for line in groups:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[1] == "":  # v2
            base, files = cgroup, ("memory.max", "memory.current", "inactive_file")
        elif "memory" in parts[1].split(","):  # v1
            base = os.path.join(cgroup, "memory")
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        segments = [p for p in parts[2].split("/") if p]
        for depth in range(len(segments), -1, -1):  # the limits above apply too
            left = _cgroup_left(os.path.join(base, *segments[:depth]), *files)
            if left is not None:
                have = left if have is None else min(have, left)
    return have


def _cgroup_left(folder: str, limit_file: str, usage_file: str, cache_key: str
                 ) -> float | None:
    """Bytes left under the cgroup ``folder``'s memory limit; None without one (or files)."""
    try:
        with open(os.path.join(folder, limit_file), encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max" or float(limit) >= 2.0 ** 60:  # v1 writes "no limit" as ~2^63
            return None
        with open(os.path.join(folder, usage_file), encoding="ascii") as f:
            used = float(f.read().strip())
    except (OSError, ValueError):
        return None
    cache = 0.0  # the page cache the kernel reclaims before it kills
    try:
        with open(os.path.join(folder, "memory.stat"), encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == cache_key:
                    cache = float(value)
                    break
    except (OSError, ValueError):
        pass
    return max(0.0, float(limit) - max(0.0, used - cache))
