"""One clock for every limit: a :class:`Deadline` on ``time.monotonic``.

A time limit becomes a Deadline once, where the user gives it (the API, the CLI, the tree),
and that object travels down: the tree's context, the node, the cutting-plane loop, the SDP
solve, the heuristics, the feasibility check and the decomposition bound all read the same
instant. A step that may take only part of the time left gets :meth:`Deadline.within`, a
shorter Deadline that still ends at the parent's instant and on the parent's stop signal;
no layer turns the limit back into seconds to hand it on. Seconds leave a Deadline only
for an outside solver that takes them (HiGHS, MOSEK, Gurobi).

``time.monotonic`` never jumps with the wall clock. Its instants mean nothing in another
process, so a Deadline pickles as the seconds it has left and is an instant again on
arrival (a Dask worker's job ends when the manager's would, less the transfer).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

from pcsos.errors import InputError

__all__ = ["Deadline"]


class Deadline:
    """An instant on ``time.monotonic`` by which work must stop, and a stop signal.

    Parameters
    ----------
    seconds : float or None
        Seconds from now (``None``: no limit). Must be ``>= 0``.
    progress : callable, optional
        Handed a dict (``elapsed`` and the caller's keys) by :meth:`note`.
    stop : callable or event, optional
        ``stop()`` (or ``stop.is_set()``) true ends the time at once, e.g. on Ctrl-C or when
        the tree stops, so that work ends as it does at its limit.

    Raises
    ------
    ValueError
        When ``seconds`` is negative or not a number.

    Examples
    --------
    >>> from pcsos.clock import Deadline
    >>> d = Deadline(60.0)
    >>> d.expired(), 59.0 < d.remaining() <= 60.0
    (False, True)
    >>> Deadline().remaining()
    inf
    >>> d.within(share=0.5).remaining() <= 30.0
    True
    """

    def __init__(self, seconds: float | None = None, progress: Callable | None = None,
                 stop: Any = None):
        if seconds is not None and not float(seconds) >= 0:  # False for NaN
            raise ValueError(f"a time limit must be >= 0 seconds, got {seconds}")
        self.start = time.monotonic()
        self.at = math.inf if seconds is None else self.start + float(seconds)
        # the seconds as given: at - start rounds at the clock's magnitude (hours of uptime
        # put 7e-12 on an hour)
        self._span = None if seconds is None else float(seconds)
        self.progress = progress
        self.stop = stop

    @classmethod
    def of(cls, limit: float | Deadline | None) -> Deadline:
        """``limit`` itself when it is a Deadline, else a new one of ``limit`` seconds."""
        return limit if isinstance(limit, Deadline) else cls(limit)

    @classmethod
    def checked(cls, limit: float | Deadline | None, source: str = "time_limit") -> Deadline:
        """:meth:`of`, for a limit from the user: anything but None, a Deadline or a number
        of seconds >= 0 is an :class:`~pcsos.InputError` naming ``source``."""
        if limit is None or isinstance(limit, Deadline):
            return cls.of(limit)
        if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not limit >= 0:
            raise InputError(f"time_limit must be a number of seconds >= 0, got {limit!r}",
                             source=source)
        return cls(float(limit))

    @property
    def limit(self) -> float | None:
        """The seconds from when it was made to its instant (None without a limit)."""
        return self._span

    def stopped(self) -> bool:
        """True once the stop signal is set."""
        return _is_set(self.stop)

    def expired(self) -> bool:
        """True once the instant has passed or the stop signal is set."""
        return time.monotonic() >= self.at or self.stopped()

    def remaining(self) -> float:
        """Seconds left: ``inf`` without a limit, never negative, 0 once stopped."""
        if self.stopped():
            return 0.0
        return max(0.0, self.at - time.monotonic())

    def seconds(self) -> float | None:
        """:meth:`remaining`, or None without a limit: for outside solvers' time options."""
        left = self.remaining()
        return None if math.isinf(left) else left

    def elapsed(self) -> float:
        """Seconds since this Deadline was made (for reports, not for limits)."""
        return time.monotonic() - self.start

    def within(self, seconds: float | None = None, *, share: float | None = None,
               stop: Any = None, progress: Callable | None = None) -> Deadline:
        """A Deadline for a step: ``seconds`` from now and/or ``share`` of the time left,
        never past this one's instant; it stops on this one's signal and on ``stop``, and
        reports to ``progress`` (default: this one's). Its :meth:`elapsed` counts from now."""
        out = Deadline.__new__(Deadline)
        out.start = now = time.monotonic()
        at = self.at
        if seconds is not None:
            at = min(at, now + max(0.0, float(seconds)))
        if share is not None and math.isfinite(at):
            at = min(at, now + max(0.0, float(share)) * max(0.0, self.at - now))
        out.at = at
        out._span = None if math.isinf(at) else at - now
        out.progress = self.progress if progress is None else progress
        if stop is None or self.stop is None:
            out.stop = self.stop if stop is None else stop
        else:
            first, second = self.stop, stop
            out.stop = lambda: _is_set(first) or _is_set(second)
        return out

    def note(self, **info: Any) -> None:
        """Report progress (a no-op without a ``progress`` callable)."""
        if self.progress is not None:
            self.progress({"elapsed": self.elapsed(), **info})

    def __getstate__(self):
        now = time.monotonic()
        state = {k: v for k, v in self.__dict__.items() if k not in ("start", "at")}
        state["_left"] = self.at - now
        state["_ran"] = now - self.start
        return state

    def __setstate__(self, state):
        now = time.monotonic()
        left, ran = state.pop("_left"), state.pop("_ran")
        self.__dict__.update(state)
        self.at, self.start = now + left, now - ran

    def __repr__(self) -> str:
        left = self.remaining()
        shown = "no limit" if math.isinf(left) else f"{left:.3g} s left"
        return f"Deadline({shown}{', stopped' if self.stopped() else ''})"


def _is_set(signal: Any) -> bool:
    """A stop signal's state: None is never set; an event by ``is_set()``, else ``signal()``."""
    if signal is None:
        return False
    return bool(signal.is_set() if hasattr(signal, "is_set") else signal())
