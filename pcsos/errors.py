"""Typed errors. The CLI maps them to exit codes; nothing here prints or exits."""

from __future__ import annotations

import numbers
from collections.abc import Sequence


def is_integer(v) -> bool:
    """Whether ``v`` is an integer, Python's or numpy's, and not a bool: the test behind every
    option's and setting's "must be an integer" :class:`InputError`. (The data's integers,
    k, sizes and pair indices, may come from a float array: pcsos.problem checks their
    values.)"""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_real(v) -> bool:
    """Whether ``v`` is a real number, Python's or numpy's (float32 too), and not a bool:
    the test behind every setting's "must be a number" :class:`InputError`."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def check_seed(seed, source: str = "seed") -> None:
    """Raise :class:`InputError` unless ``seed`` is one ``numpy.random.default_rng`` takes:
    None, an integer >= 0, a sequence of them, a ``SeedSequence``, ``BitGenerator`` or
    ``Generator`` (a negative one failed deep inside a heuristic, as an internal error)."""
    import numpy as np

    if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.BitGenerator,
                                         np.random.Generator)):
        return
    many = isinstance(seed, (list, tuple, np.ndarray))
    values = list(np.ravel(np.asarray(seed, dtype=object))) if many else [seed]
    if not (values if many else True) or not all(is_integer(v) and v >= 0 for v in values):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", source=source)


def check_hooks(**hooks) -> None:
    """Raise :class:`InputError` naming the argument unless each hook is None or of its
    kind, told by its name: ``*_event`` has ``is_set()`` (a threading.Event), ``executor``
    is a ``concurrent.futures.Executor``, anything else is callable (before: a raw
    TypeError or AttributeError once the work had started, the root node's solve lost)."""
    from concurrent.futures import Executor

    for name, value in hooks.items():
        if value is None:
            continue
        if name.endswith("_event"):
            ok, kind = callable(getattr(value, "is_set", None)), "an event (threading.Event)"
        elif name == "executor":
            ok, kind = isinstance(value, Executor), "a concurrent.futures.Executor"
        else:
            ok, kind = callable(value), "callable"
        if not ok:
            raise InputError(f"{name} must be {kind} or None, got {type(value).__name__}",
                             source=name)


class PcsosError(Exception):
    """Base class of every error pcsos raises on purpose.

    Attributes
    ----------
    exit_code : int
        The exit status of the ``pcsos`` command when this error ends it.

    Examples
    --------
    >>> import pcsos
    >>> try:
    ...     pcsos.solve([[0.0], [1.0]], k=3)
    ... except pcsos.PcsosError as exc:
    ...     print(type(exc).__name__, exc.exit_code)
    InputError 2
    """

    exit_code = 1


class InputError(PcsosError, ValueError):
    """The user's input is malformed or out of range (CLI exit code 2).

    Also a ``ValueError``. The message starts with ``source:line:`` when they are known.

    Parameters
    ----------
    message : str
        What is wrong, naming the offending value.
    source : str, optional
        The file or argument it came from.
    line : int, optional
        The 1-based line in that file.

    Examples
    --------
    >>> import pcsos
    >>> try:
    ...     pcsos.make_instance([[0.0], [1.0]], 1, cl=[(0, 5)])
    ... except pcsos.InputError as exc:
    ...     print(exc.source)
    cl
    """

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            shown = "<stdin>" if source == "-" else source  # the file '-' is standard input
            where = f"{shown}:{line}: " if line is not None else f"{shown}: "
        super().__init__(where + message)


class InfeasibleError(PcsosError):
    """The constraints cannot all be satisfied with exactly k non-empty clusters (exit code 3).

    Parameters
    ----------
    message : str
        The explanation (a must-link chain, an odd cycle, ...).
    reason : str
        A short machine-readable code (the ``reason`` of a :class:`~pcsos.Feasibility`).
    pairs : sequence of (i, j)
        The conflicting pairs, in original point indices.

    Examples
    --------
    >>> import numpy as np, pcsos
    >>> inst = pcsos.make_instance(np.eye(3), 2, cl=[(0, 1), (1, 2), (0, 2)])
    >>> try:
    ...     pcsos.check_instance(inst).raise_if_infeasible()
    ... except pcsos.InfeasibleError as exc:
    ...     print(exc.reason, exc.pairs)
    odd_cycle [(0, 1), (0, 2), (1, 2)]
    """

    exit_code = 3

    def __init__(self, message: str, *, reason: str = "infeasible",
                 pairs: Sequence[tuple[int, int]] = ()):
        self.reason = reason
        self.pairs = [tuple(map(int, p)) for p in pairs]
        # a Feasibility's or a Result's message starts with the word, and the CLI writes
        # it before every InfeasibleError: "infeasible: infeasible: ..." otherwise
        super().__init__(str(message).removeprefix("infeasible: "))


class UndecidedError(PcsosError):
    """A decision could not be reached within its time limit (exit code 1).

    Raised where an answer is needed and none came: e.g. :func:`pcsos.certify` or
    :func:`pcsos.impact` when no clustering was found in time.

    Examples
    --------
    >>> from pcsos import UndecidedError
    >>> UndecidedError("no clustering within 1 s").exit_code
    1
    """

    exit_code = 1


class BackendUnavailableError(PcsosError, RuntimeError):
    """An optional backend is not installed or not licensed (exit code 2).

    MOSEK, Gurobi, SCS, a GPU library, matplotlib or Dask; the message says which, and
    how to install it. Raised where the backend is needed, never replaced by another one
    silently. Also a ``RuntimeError``.

    Examples
    --------
    >>> import pcsos
    >>> def bound_with_mosek(X, k):
    ...     try:
    ...         return pcsos.solve(X, k, bound_settings={"backend": "mosek"})
    ...     except pcsos.BackendUnavailableError as exc:
    ...         print(exc)  # e.g. no MOSEK licence: what to install, or pick another backend
    >>> issubclass(pcsos.BackendUnavailableError, RuntimeError)
    True
    """

    exit_code = 2


class KernelsNotBuiltError(PcsosError, ImportError):
    """The compiled kernels are missing: Python imported an unbuilt source tree (exit 1)."""

    exit_code = 1
