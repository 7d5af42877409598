"""Heuristics by name: the built-in ones, ``register_heuristic`` and the entry-point group.

Third-party packages add heuristics by declaring an entry point in the group
``pcsos.heuristics``, e.g. in their ``pyproject.toml``::

    [project.entry-points."pcsos.heuristics"]
    my-heuristic = "mypkg.module:my_heuristic"

The object is loaded on first use and must follow the contract of
:mod:`pcsos.heuristics.base` (a callable, or a class whose no-argument instances are
callables). A name registered in-process or built in takes precedence over an entry point.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import math
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from pcsos.errors import InputError, check_seed, is_integer, is_real
from pcsos.heuristics.base import STATUSES, Deadline, HeuristicResult
from pcsos.problem import canonical_labels, pairs_satisfied

__all__ = ["ENTRY_POINT_GROUP", "register_heuristic", "get_heuristic",
           "available_heuristics", "run_heuristic", "check_labels", "check_options"]

#: the entry-point group scanned for third-party heuristics
ENTRY_POINT_GROUP = "pcsos.heuristics"

_BUILTIN = {
    "ipc-kmeans": "pcsos.heuristics.ipc_kmeans:ipc_kmeans",
    "s-mdeclust": "pcsos.heuristics.smdeclust:smdeclust",
    "blpkm-cc": "pcsos.heuristics.blpkm:blpkm_cc",
    "cop-kmeans": "pcsos.heuristics.cop_kmeans:cop_kmeans",
    "repair": "pcsos.heuristics.repair:repair",
}
_REGISTERED: dict[str, object] = {}


def _entry_points() -> dict:
    eps = importlib.metadata.entry_points()
    if hasattr(eps, "select"):
        found = eps.select(group=ENTRY_POINT_GROUP)
    else:  # pragma: no cover - Python < 3.10 dict interface
        found = eps.get(ENTRY_POINT_GROUP, [])
    return {ep.name: ep for ep in found}


def register_heuristic(name: str, obj, *, replace: bool = False) -> None:
    """Register a heuristic under a name, for this process.

    Parameters
    ----------
    name : str
        The name that ``SolverOptions(heuristic=...)`` and ``pcsos heuristic`` will take.
    obj : callable or class
        ``obj(problem, Z, rng, deadline, **options) -> HeuristicResult``, or a class whose
        no-argument instances are such callables (the contract is in
        :mod:`pcsos.heuristics.base`).
    replace : bool, default False
        Replace a registered or built-in heuristic of that name.

    Raises
    ------
    InputError
        The name is empty or taken (and ``replace`` is false), or ``obj`` is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> from pcsos.heuristics import HeuristicResult, register_heuristic, run_heuristic
    >>> def halves(problem, Z, rng, deadline):
    ...     labels = (np.arange(problem.n) * problem.k) // problem.n
    ...     return HeuristicResult(labels=labels, status="found")
    >>> register_heuristic("halves", halves, replace=True)
    >>> import pcsos
    >>> prob = pcsos.Problem.from_instance(pcsos.make_instance([[0.0], [1], [9], [10]], 2))
    >>> res = run_heuristic("halves", prob)
    >>> res.status, res.labels.tolist(), res.objective
    ('found', [0, 0, 1, 1], 1.0)
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"a heuristic name must be a non-empty string, got {name!r}")
    if not callable(obj):
        raise InputError(f"heuristic {name!r} must be callable, got {type(obj).__name__}")
    if not replace and (name in _REGISTERED or name in _BUILTIN):
        raise InputError(f"heuristic {name!r} is already registered (pass replace=True)")
    _REGISTERED[name] = obj


def available_heuristics() -> list[str]:
    """Sorted names of the built-in, registered and entry-point heuristics.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from pcsos.heuristics import available_heuristics
    >>> {"ipc-kmeans", "s-mdeclust", "blpkm-cc", "cop-kmeans"} <= set(available_heuristics())
    True
    """
    return sorted(set(_BUILTIN) | set(_REGISTERED) | set(_entry_points()))


def get_heuristic(name: str) -> Callable:
    """The heuristic callable registered under ``name``.

    Parameters
    ----------
    name : str
        A name of :func:`available_heuristics`.

    Returns
    -------
    callable
        ``heuristic(problem, Z, rng, deadline, **options) -> HeuristicResult`` (a class is
        instantiated first).

    Raises
    ------
    InputError
        No heuristic has that name (the message lists the available ones), or its entry
        point cannot be loaded.

    Examples
    --------
    >>> from pcsos.heuristics import get_heuristic
    >>> callable(get_heuristic("cop-kmeans"))
    True
    """
    obj = _REGISTERED.get(name)
    if obj is None and name in _BUILTIN:
        obj = _load(_BUILTIN[name], name)
    if obj is None:
        ep = _entry_points().get(name)
        if ep is None:
            raise InputError(f"unknown heuristic {name!r}; available: "
                             f"{', '.join(available_heuristics())}", source="heuristic")
        try:
            obj = ep.load()
        except Exception as exc:
            raise InputError(f"heuristic {name!r} (entry point {ep.value}) cannot be "
                             f"loaded: {type(exc).__name__}: {exc}",
                             source="heuristic") from None
        if not callable(obj):
            raise InputError(f"entry point {ep.value} for heuristic {name!r} is not "
                             "callable", source="heuristic")
    if inspect.isclass(obj):
        obj = obj()
    return obj


def _takes_init_labels(heur) -> bool:
    """True when the heuristic callable accepts ``init_labels`` (by name or **kwargs)."""
    try:
        params = inspect.signature(heur).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: do not guess
        return False
    return any(p.name == "init_labels" or p.kind is p.VAR_KEYWORD for p in params)


#: the call's own arguments: an option of one of these names collided with them
_RESERVED = ("problem", "Z", "rng", "deadline", "name", "seed", "time_limit", "blas_threads",
             "progress", "stop_event")


def _check_options(name: str, heur, options: dict, source: str) -> None:
    """Each option a keyword the heuristic takes, of its default's kind: an integer where
    the default is one (>= 1 where the default is a count >= 1), a real number (not nan),
    a bool, a string; None where the annotation allows it. A
    heuristic that collects unknown options in ``**_name`` (the built-in ones) refuses
    them; a plugin's ``**kwargs`` takes what it likes. Before this, ``n_init='abc'`` was an
    internal error deep in a run, ``n_init=-5`` ran nothing and ``seed=3`` collided with the
    call's own seed."""
    try:
        params = inspect.signature(heur).parameters
    except (TypeError, ValueError):  # a builtin without a signature: do not guess
        return
    rest = next((p for p in params.values() if p.kind is p.VAR_KEYWORD), None)
    for key, value in options.items():
        if key == "init_labels":  # the tree's warm start: run_heuristic drops it, with a note
            continue
        if key in _RESERVED:
            raise InputError(f"{key!r} is not an option of {name} but an argument of the call "
                             "itself (the commands' --seed and --time-limit)", source=source)
        p = params.get(key)
        if p is None:
            if rest is None or rest.name.startswith("_"):
                known = sorted(q.name for q in params.values() if q.kind is q.KEYWORD_ONLY)
                raise InputError(f"unknown {name} option {key!r} (its options: "
                                 f"{', '.join(known)})", source=source)
            continue
        default = p.default
        # None where the signature allows it: 'float | None', Optional[float], a default None
        if value is None and (default is None or "None" in str(p.annotation)
                              or "Optional" in str(p.annotation)):
            continue
        if default is p.empty or default is None:
            continue
        kind = _option_kind(default)
        if kind is not None and not _option_fits(value, default):
            raise InputError(f"{name} option {key}={value!r}: expected {kind}",
                             source=source)


def _option_kind(default) -> str | None:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer >= 1" if default >= 1 else "an integer >= 0" if default >= 0 \
            else "an integer"
    if isinstance(default, float):
        return "a number (not nan)"
    if isinstance(default, str):
        return "a string"
    return None


def _option_fits(value, default) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return is_integer(value) and value >= min(default, 1) if default >= 0 else \
            is_integer(value)
    if isinstance(default, float):
        # no sign: a negative tolerance turns its stopping test off (s-mdeclust's tests);
        # inf is a limit's 'none' (repair's max_seconds)
        return is_real(value) and not math.isnan(value)
    return isinstance(value, str)


def check_options(name: str, options: dict | None, source: str = "heuristic_options"
                  ) -> None:
    """Raise :class:`~pcsos.InputError` unless ``options`` suit the heuristic ``name``.

    Parameters
    ----------
    name : str
        A name of :func:`available_heuristics`.
    options : dict or None
        Keyword options for it (``SolverOptions.heuristic_options``, ``pcsos heuristic
        -o``).
    source : str
        What the error names.

    Returns
    -------
    None
        Each option is a keyword the heuristic takes, of its default's kind (an integer
        >= 1 for a count, a number that is not nan, a bool, a string).

    Raises
    ------
    InputError
        An unknown heuristic or option, an argument of the call itself (``seed``,
        ``time_limit``, ...) or a value of another kind.
    """
    _check_options(name, get_heuristic(name), dict(options or {}), source)


def _load(spec: str, name: str):
    mod, attr = spec.split(":")
    module = __import__(mod, fromlist=[attr])
    return getattr(module, attr)


def check_labels(problem, labels: np.ndarray) -> str | None:
    """Why an original-point labelling is not a valid solution of ``problem``, or None.

    Parameters
    ----------
    problem : Problem
        A node's super-point problem (its ``instance`` holds the original points).
    labels : array-like of shape (n,)
        One label per original point.

    Returns
    -------
    str or None
        None when the labelling is valid, else the first reason it is not. Checked: one
        label per point in 0..k-1, exactly k non-empty clusters, every original ML/CL
        pair, the instance's cluster sizes, constant labels on every super-point (the
        node's must-link merges) and the node's CL pairs.
    """
    inst = problem.instance
    labels = np.asarray(labels)
    if labels.shape != (inst.n,):
        return f"expected {inst.n} labels, got shape {labels.shape}"
    if labels.size and (labels.min() < 0 or labels.max() >= problem.k):
        return f"labels outside 0..{problem.k - 1}"
    used = len(np.unique(labels))
    if used != problem.k:
        return f"{used} non-empty clusters instead of k = {problem.k}"
    if not pairs_satisfied(labels, inst.ml, inst.cl):
        return "an original must-link or cannot-link pair is violated"
    if not inst.sizes_ok(labels):
        got = sorted(np.bincount(labels).tolist(), reverse=True)
        return f"cluster sizes {got} break the size constraints"
    pl = problem.point_labels
    first = np.full(problem.s, -1, dtype=np.int64)
    first[pl] = labels  # any member's label; then compare every member with it
    if np.any(first[pl] != labels):
        return "a super-point (node must-link merge) is split"
    if not problem.satisfies(first):
        return "a node cannot-link pair is violated"
    return None


def run_heuristic(name: str, problem, *, Z: np.ndarray | None = None, seed=None,
                  time_limit: float | None = None, blas_threads: int | None = 1,
                  init_labels: np.ndarray | None = None, progress=None,
                  stop_event=None, **options) -> HeuristicResult:
    """Run the heuristic ``name`` on a node's super-point ``problem``.

    The returned labelling is re-checked (:func:`~pcsos.heuristics.check_labels`) and its
    SSE recomputed from the original data; a labelling that fails the check yields
    ``status='no_solution'`` with the reason in ``message`` and ``stats['rejected']``.

    Parameters
    ----------
    name : str
        A name of :func:`available_heuristics`.
    problem : Problem
        The node's super-point problem (:meth:`pcsos.Problem.from_instance` at the root).
    Z : ndarray of shape (s, s), optional
        The node's SDP solution, when there is one.
    seed : int or numpy.random.Generator, optional
        Anything :func:`numpy.random.default_rng` accepts.
    time_limit : float or Deadline, optional
        Seconds, or the caller's :class:`~pcsos.clock.Deadline` (None: no limit).
    blas_threads : int or None, default 1
        Cap on the BLAS threads while it runs (None: leave them; the only correct choice
        in a worker thread, since threadpoolctl limits are process-wide).
    init_labels : array_like of shape (n,), optional
        A clustering of the original points (e.g. the incumbent) to start from: passed
        as ``init_labels=`` to every heuristic that takes that keyword (all built-in ones
        do) and dropped, with a note in ``stats``, for one that does not.
    progress : callable, optional
        ``progress(info)`` receives what the heuristic reports through its deadline's
        ``note`` (s-mdeclust: each member of the initial population and each generation,
        with the best objective so far).
    stop_event : threading.Event, optional
        Once set, ends the run as its time limit does: the heuristic returns its best
        clustering so far, and ``stats['interrupted']`` is True.
    **options
        Keyword options of the heuristic.

    Returns
    -------
    HeuristicResult

    Raises
    ------
    InputError
        An unknown name, a malformed Z or a negative time limit.

    Examples
    --------
    >>> import pcsos
    >>> from pcsos.heuristics import run_heuristic
    >>> inst = pcsos.make_instance([[0.0], [1], [9], [10]], 2, cl=[(0, 1)])
    >>> res = run_heuristic("cop-kmeans", pcsos.Problem.from_instance(inst), seed=0)
    >>> res.status, res.labels.tolist(), round(res.objective, 2)
    ('found', [0, 1, 1, 1], 48.67)
    """
    heur = get_heuristic(name)
    check_seed(seed)
    _check_options(name, heur, options, "options")
    if blas_threads is not None and not (is_integer(blas_threads) and blas_threads >= 1):
        raise InputError(f"blas_threads must be an integer >= 1 or None, got {blas_threads!r}",
                         source="blas_threads")
    if Z is not None:
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape != (problem.s, problem.s) or not np.all(np.isfinite(Z)):
            raise InputError(f"Z must be a finite {problem.s} x {problem.s} matrix "
                             f"(super-point space), got shape {Z.shape}", source="Z")
    dropped = None
    if init_labels is not None:
        if _takes_init_labels(heur):
            options["init_labels"] = init_labels
        else:
            dropped = "init_labels not accepted by this heuristic"
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    # The heuristics' matrix products are small (s x d by d x k): extra BLAS threads only
    # contend for the cores (measured 10x slower on a loaded 2-core machine), so one.
    deadline = Deadline.checked(time_limit).within(stop=stop_event, progress=progress)
    if blas_threads is None:
        res = heur(problem, Z, rng, deadline, **options)
    else:
        with threadpool_limits(limits=blas_threads, user_api="blas"):
            res = heur(problem, Z, rng, deadline, **options)
    seconds = deadline.elapsed()
    if not isinstance(res, HeuristicResult):
        raise TypeError(f"heuristic {name!r} returned {type(res).__name__}, "
                        "expected HeuristicResult")
    res.name = name
    res.stats = dict(res.stats)
    res.stats["seconds"] = seconds
    if dropped:
        res.stats["note"] = dropped
    if deadline.stopped():
        res.stats["interrupted"] = True
    if res.status not in STATUSES:
        raise TypeError(f"heuristic {name!r} returned unknown status {res.status!r}")
    if res.status != "found":
        res.labels = res.super_labels = None
        res.objective = float("inf")
        return res
    if res.labels is None and res.super_labels is not None:
        res.labels = problem.to_points(res.super_labels)
    why = None if res.labels is not None else "no labels returned"
    if why is None:
        # canonical 0..k-1 labels make results comparable (more than k labels: left as
        # they are, for check_labels to name)
        labels = np.asarray(res.labels)
        if len(np.unique(labels)) <= problem.k:
            labels = canonical_labels(labels)
        why = check_labels(problem, labels)
    if why is not None:
        res.stats["rejected"] = why
        res.message = f"labelling rejected: {why}"
        res.status = "no_solution"
        res.labels = res.super_labels = None
        res.objective = float("inf")
        return res
    res.labels = labels
    sl = np.empty(problem.s, dtype=np.int64)
    sl[problem.point_labels] = labels
    res.super_labels = sl
    res.objective = problem.instance.objective(labels)
    return res
