"""Typed errors. The CLI maps them to exit codes; nothing here prints or exits."""

from __future__ import annotations

from collections.abc import Sequence


class PcsosError(Exception):
    """Base class of every error pcsos raises on purpose."""

    exit_code = 1


class InputError(PcsosError, ValueError):
    """The user's input is malformed or out of range (CLI exit code 2).

    ``source`` names the file (or argument) and ``line`` the 1-based line, when known.
    """

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)


class InfeasibleError(PcsosError):
    """The constraints cannot all be satisfied with exactly k non-empty clusters (exit code 3).

    ``pairs`` lists the conflicting (i, j) pairs in original point indices, ``reason`` is a
    short machine-readable code (see :mod:`pcsos.feasibility`).
    """

    exit_code = 3

    def __init__(self, message: str, *, reason: str = "infeasible",
                 pairs: Sequence[tuple[int, int]] = ()):
        self.reason = reason
        self.pairs = [tuple(map(int, p)) for p in pairs]
        super().__init__(message)


class UndecidedError(PcsosError):
    """A decision (e.g. feasibility) could not be reached within its time limit (exit code 1)."""

    exit_code = 1


class BackendUnavailableError(PcsosError, RuntimeError):
    """An optional backend (MOSEK, Gurobi, SCS, a GPU library) is not installed or not licensed."""

    exit_code = 2


class KernelsNotBuiltError(PcsosError, ImportError):
    """The compiled kernels are missing: Python imported an unbuilt source tree (exit 1)."""

    exit_code = 1
