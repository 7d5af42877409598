"""The solver's front door: :func:`~pcsos.solve` and its :class:`~pcsos.Result`.

``pcsos.solve(X, k, ml, cl)`` runs the branch-and-cut (:mod:`pcsos.tree` over
``pcsos.node``) and returns a SciPy ``OptimizeResult``-like :class:`Result`. Infeasible
constraints are a normal outcome of ``solve`` (``status='infeasible'``, the explanation in
``message``, the conflicting pairs in ``infeasible_pairs``); malformed input raises
:class:`~pcsos.errors.InputError`. :class:`pcsos.estimator.PCSOSClustering` wraps it as a
scikit-learn estimator; its ``fit`` raises :class:`~pcsos.errors.InfeasibleError` instead,
since it has no labels to set.

Threads: nodes run on a pool of ``workers`` threads. The numeric work releases the GIL,
and the BLAS threads of the process are capped at ``threads`` (default 1) while the pool
runs (threadpoolctl limits are process-wide); the root node runs alone with
``root_threads``. One BLAS thread per worker is the default because multi-threaded BLAS on
these matrices (s <= ~800) gains little on an idle machine and collapses when the cores are
shared: wine ml_50_cl_50_0 took 449 s with 2 threads and 1 worker on a busy 2-core machine,
24.8 s with 1. Where more threads are asked for, import pcsos before numpy and scipy: it
then shortens OpenBLAS's idle-worker spin (``OPENBLAS_THREAD_TIMEOUT``, see pcsos/__init__.py),
without which two threads ran 0.11-0.7x the ADMM iterations per second of one.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields

import numpy as np
from threadpoolctl import threadpool_limits

from pcsos.branching import PseudoCosts
from pcsos.checkpoint import read_checkpoint, write_checkpoint
from pcsos.clock import Deadline
from pcsos.distributed import DaskExecutor, DaskSignals, close, connect
from pcsos.errors import InfeasibleError, InputError, check_hooks, is_integer
from pcsos.feasibility import check_problem
from pcsos.io import (
    INT_MAX,
    _json_line,
    _load_json,
    _quote,
    _read_text,
    json_number,
    jsonable,
    write_json,
)
from pcsos.log import ProgressPrinter
from pcsos.memory import memory_shortfall
from pcsos.node import NodeData, process_node
from pcsos.options import ABS_TOL, SolverOptions, resolve_workers
from pcsos.problem import Instance, Problem, canonical_labels, check_start, make_instance
from pcsos.tree import NodeEvent, branch_and_bound, relative_gap

__all__ = ["solve", "solve_instance", "Result", "ProgressPrinter", "SolverOptions", "ABS_TOL"]


@dataclass(repr=False)
class Result:
    """Outcome of :func:`solve`, like SciPy's ``OptimizeResult``: ``status`` and ``message``.

    Fields are also reachable as ``result["gap"]``; :meth:`to_dict`, :meth:`to_json` and
    :meth:`from_json` turn it into plain data and back.

    Attributes
    ----------
    labels : ndarray of shape (n,), int, or None
        The best clustering found (None if none).
    objective : float
        Its SSE, computed from the original data (inf if none).
    lower_bound : float
        Certified lower bound on the optimal SSE (inf when infeasible).
    gap : float
        Certified relative gap ``(objective - lower_bound) / objective``.
    status : str
        ``'optimal'``, ``'node_limit'``, ``'time_limit'``, ``'interrupted'``,
        ``'infeasible'`` or ``'unresolved'`` (nodes that failed numerically keep the gap
        open).
    message : str
        A sentence saying why it stopped (for ``'infeasible'``: the explanation).
    nodes : int
        Nodes processed.
    seconds : float
        Wall time, summed over every run of a resumed solve.
    root_lower_bound, root_gap : float
        The root's bound and gap.
    root_size : int
        The root's number of super-points (the SDP's size s).
    log : list of dict
        Per-node rows: the columns of the pc-sos-sdp log table and more
        (:ref:`the gap log <gap-log>`).
    infeasible_pairs : list of tuple
        Conflicting pairs (original indices) when infeasible.
    n, k : int
        Number of points and clusters.

    Examples
    --------
    >>> import numpy as np, pcsos
    >>> X = np.array([[0.0, 0], [0, 2], [10, 0], [10, 2]])
    >>> res = pcsos.solve(X, k=2, cl=[(0, 1)])
    >>> res.status, res.labels.tolist(), round(res.objective, 4)
    ('optimal', [0, 1, 0, 0], 69.3333)
    >>> res.gap <= 1e-4 and res.lower_bound <= res.objective
    True
    >>> res["nodes"] == res.nodes
    True
    """

    labels: np.ndarray | None
    objective: float
    lower_bound: float
    gap: float
    status: str
    message: str
    nodes: int = 0
    seconds: float = 0.0
    root_lower_bound: float = -math.inf
    root_gap: float = math.inf
    root_size: int = 0
    log: list[dict] = field(default_factory=list, repr=False)
    infeasible_pairs: list = field(default_factory=list, repr=False)
    n: int = 0
    k: int = 0

    @property
    def success(self) -> bool:
        """True when the clustering is certified optimal within the tolerance."""
        return self.status == "optimal"

    @property
    def abs_gap(self) -> float:
        """objective - lower_bound (inf when either is missing)."""
        if math.isinf(self.objective) or math.isinf(self.lower_bound):
            return math.inf
        return self.objective - self.lower_bound

    # what repr and the notebook show: the certificate first, then the effort
    _SHOWN = ("status", "message", "objective", "lower_bound", "gap", "labels", "nodes",
              "seconds", "root_gap", "n", "k")

    def _shown(self) -> list[tuple[str, str]]:
        def text(key: str, v) -> str:
            if key == "labels":  # long clusterings elided
                return np.array2string(np.asarray(v), threshold=12, edgeitems=5, separator=" ")
            return f"{v:.6g}" if isinstance(v, float) else str(v)
        return [(key, text(key, getattr(self, key))) for key in self._SHOWN
                if getattr(self, key) is not None]

    def __repr__(self) -> str:
        # SciPy's OptimizeResult layout: one right-aligned field per line
        rows = self._shown()
        width = max(len(key) for key, _ in rows)
        return "\n".join(f"{key:>{width}}: {value}" for key, value in rows)

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{key}</th>"
                       f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
                       for key, value in self._shown())
        return f"<table><caption>pcsos.Result</caption>{body}</table>"

    def __getitem__(self, key: str):  # OptimizeResult-style access
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)]

    def to_dict(self, log: bool = False) -> dict:
        """The fields as a dict (the per-node log only when ``log``)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "log"}
        out["success"] = self.success
        if log:
            out["log"] = self.log
        return out

    def to_json(self, path=None, *, log: bool = False, **extra) -> str:
        """The result as strict JSON text (non-finite numbers as null; ``extra`` keys added,
        e.g. the input paths); also written to ``path`` when given ('-': stdout).

        :meth:`from_json` reads it back, and reads the ``--json`` file of ``pcsos solve``.
        """
        out = {**self.to_dict(log=log), **extra}
        if path is not None:
            write_json(path, out)
        return json.dumps(jsonable(out), allow_nan=False)

    def plot_progress(self, path=None, *, title: str | None = None):
        """Bound, incumbent and gap against time and nodes (:func:`pcsos.plot.plot_progress`);
        returns the matplotlib Figure, also written to ``path`` when given."""
        from pcsos.plot import plot_progress  # lazy: matplotlib, an optional extra

        return plot_progress(self.log, path, title=title)

    @classmethod
    def from_json(cls, source) -> Result:
        """A :class:`Result` from :meth:`to_json`'s text, a file of it or its dict.

        Keys that are not fields (``success``, ``settings``, ...) are ignored; a null number
        becomes what it stood for (no clustering: objective inf; no bound: lower bound -inf,
        or inf when infeasible). Raises :class:`InputError` naming the file (or ``result``),
        the key and its line when a field has the wrong type.
        """
        name, text = "result", None
        if isinstance(source, dict):
            d = dict(source)
        else:
            text = os.fspath(source) if isinstance(source, os.PathLike) else source
            if isinstance(text, str) and not text.lstrip().startswith("{"):
                name, text = text, _read_text(text)
            if not isinstance(text, (str, bytes, bytearray)):
                raise InputError(f"not a result: expected JSON text, a path or a dict, got "
                                 f"{type(source).__name__}", source=name)
            d = _load_json(text, name)
        if not isinstance(d, dict):
            raise InputError("not a result: the JSON top level must be an object", source=name,
                             line=1)

        def bad(key: str, what: str):
            line = _json_line(text, key) if isinstance(text, str) else None
            shown = _quote(repr(d[key]), quote=False)
            return InputError(f"{key!r} must be {what}, got {shown}", source=name, line=line)

        names = {f.name for f in fields(cls)}
        missing = {"labels", "objective", "lower_bound", "gap", "status", "message"} - set(d)
        if missing:
            raise InputError(f"not a result: no {', '.join(sorted(missing))}", source=name)
        d = {key: v for key, v in d.items() if key in names}
        for key in ("status", "message"):
            if not isinstance(d[key], str):
                raise bad(key, "a string")
        infeasible = d["status"] == "infeasible"
        for key, none in (("objective", math.inf), ("gap", math.inf), ("root_gap", math.inf),
                          ("lower_bound", math.inf if infeasible else -math.inf),
                          ("root_lower_bound", -math.inf), ("seconds", 0.0)):
            if key not in d:
                continue
            v = d[key]
            if v is not None and json_number(v) is None:
                raise bad(key, "a number or null")  # an int of 400 digits too
            d[key] = none if v is None else json_number(v)
        for key in ("nodes", "root_size", "n", "k"):
            if key in d and not (is_integer(d[key]) and 0 <= d[key] <= INT_MAX):
                raise bad(key, "a non-negative integer")
        if d["labels"] is not None:
            lab = d["labels"]
            if not (isinstance(lab, (list, tuple, np.ndarray))
                    and all(is_integer(v) and 0 <= v <= INT_MAX for v in lab)):
                raise bad("labels", "null or a list of non-negative integers")
            d["labels"] = np.asarray(lab, dtype=np.int64).reshape(-1)
        if "infeasible_pairs" in d:
            pairs = d["infeasible_pairs"]
            if not (isinstance(pairs, (list, tuple))
                    and all(isinstance(p, (list, tuple)) and len(p) == 2
                            and all(is_integer(v) for v in p) for p in pairs)):
                raise bad("infeasible_pairs", "a list of [i, j] pairs")
            d["infeasible_pairs"] = [tuple(p) for p in pairs]
        if "log" in d and not (isinstance(d["log"], list)
                               and all(isinstance(r, dict) for r in d["log"])):
            raise bad("log", "a list of objects")
        return cls(**d)


def solve(X, k: int, ml=(), cl=(), options: SolverOptions | None = None, *,
          sample_weight=None, size_min: int | None = None, size_max: int | None = None,
          sizes=None, **kwargs) -> Result:
    """Solve constrained MSSC to certified optimality by branch-and-cut.

    Parameters
    ----------
    X : array_like of shape (n, d)
        The points; finite numbers.
    k : int
        Number of clusters, 1 <= k <= n.
    ml, cl : iterable of (i, j) pairs
        Must-link and cannot-link pairs of 0-based point indices.
    options : SolverOptions, optional
        Every setting of the search (default: the defaults); keywords in ``kwargs`` named
        as its fields (``tol``, ``time_limit``, ``workers``, ``bound_settings``, ...)
        override it.
    sample_weight : array_like of shape (n,), optional
        Positive point weights: the objective becomes sum_i w_i ||x_i - mu_c||^2, with
        mu_c the weighted mean.
    size_min, size_max : int, optional
        Bounds on every cluster's number of points.
    sizes : sequence of k int, optional
        The exact cluster sizes, in any order (sizes count points, not weights).
    **kwargs
        Fields of :class:`SolverOptions`, or the keywords of
        :func:`~pcsos.api.solve_instance`
        (``init_labels``, ``executor``, ``dask``, ``callback``, ``progress``,
        ``stop_event``, ``abort_event``, ``verbose``, ``checkpoint``,
        ``checkpoint_every``, ``resume``).

    Returns
    -------
    Result
        The best clustering, its certified lower bound and gap, and the log. Infeasible
        pairs are an outcome, not an error: ``status='infeasible'``, the explanation in
        ``message`` and the conflicting pairs in ``infeasible_pairs``.

    Raises
    ------
    InputError
        Malformed input: a non-finite value, an index out of range, a self pair, k out
        of range, bad weights or sizes, an unknown option, a warm start that breaks a
        pair, a checkpoint of other data. The message names the offending value.
    BackendUnavailableError
        An optional backend that the options ask for (``device='cuda'``, a MOSEK or SCS
        SDP backend, Gurobi) is missing or unlicensed, where it is needed.

    See Also
    --------
    make_instance : the validation, on its own.
    PCSOSClustering : the same as a scikit-learn estimator.
    certify : a certified gap for data too large for the tree.

    Examples
    --------
    >>> import numpy as np, pcsos
    >>> X = np.array([[0.0, 0], [0, 2], [10, 0], [10, 2]])
    >>> pcsos.solve(X, k=2).labels.tolist()
    [0, 0, 1, 1]
    >>> res = pcsos.solve(X, k=2, cl=[(0, 1)], time_limit=60)
    >>> res.status, round(res.objective, 4)
    ('optimal', 69.3333)
    >>> pcsos.solve(X, k=2, ml=[(0, 1)], cl=[(0, 1)]).status
    'infeasible'
    """
    inst = make_instance(X, k, ml, cl, weights=sample_weight, size_min=size_min,
                         size_max=size_max, sizes=sizes)
    return solve_instance(inst, options, **kwargs)


def solve_instance(
    instance: Instance,
    options: SolverOptions | None = None,
    *,
    init_labels=None,
    executor: Executor | None = None,
    callback: Callable[[dict], None] | None = None,
    progress: Callable[[dict], None] | None = None,
    stop_event: threading.Event | None = None,
    abort_event: threading.Event | None = None,
    verbose: bool = False,
    checkpoint=None,
    checkpoint_every: float | None = 60.0,
    resume=None,
    dask=None,
    **changes,
) -> Result:
    """:func:`pcsos.solve` on a validated :class:`~pcsos.Instance`.

    Parameters
    ----------
    instance : Instance
        From :func:`~pcsos.make_instance`.
    options : SolverOptions, optional
        The search's settings (default: the defaults); ``changes`` (keywords named as its
        fields) override them. ``threads`` and ``root_threads`` are BLAS threads per job
        and for the root (the module :mod:`pcsos.api` says why one is the default).
    init_labels : array_like of shape (n,), optional
        A clustering to start from: n integer labels, exactly k distinct values, every
        pair obeyed. It is the first incumbent and the heuristics' start at the root, and
        proves feasibility in place of the feasibility check.
    executor : concurrent.futures.Executor, optional
        Replaces the default thread pool (any ``Executor``, e.g. a process pool).
    callback : callable, optional
        ``callback(row)`` receives every node's log row (a dict) in the calling thread.
    progress : callable, optional
        ``progress(status)`` receives a snapshot about once a second, from the first
        second on: ``nodes``, ``open``, ``bound``, ``incumbent``, ``gap``, ``elapsed`` and
        what the running jobs do, ``running``; before the tree starts only ``stage``.
    stop_event : threading.Event, optional
        Once set, stops the search like Ctrl-C: the running jobs get a second to hand in
        their work.
    abort_event : threading.Event, optional
        Once set, also abandons the running jobs at once.
    verbose : bool, default False
        Print the progress table on stderr.
    checkpoint : str or path, optional
        A file to which the open nodes, incumbent and bounds are written atomically every
        ``checkpoint_every`` seconds and when the solve ends (:mod:`pcsos.checkpoint`).
    checkpoint_every : float or None, default 60
        Seconds between checkpoints (None: only at the end).
    resume : str or path, optional
        A checkpoint of the same data and pairs to go on from: nodes and seconds are summed
        over the runs, ``max_nodes`` counts every run and ``time_limit`` this one.
    dask : distributed.Client or str, optional
        Run the nodes on a Dask cluster (:mod:`pcsos.distributed`): a Client,
        ``'local:N'`` (a LocalCluster of N worker processes, closed at the end) or a
        scheduler address; ``workers`` then defaults to the cluster's threads.
    **changes
        Fields of :class:`~pcsos.SolverOptions`.

    Returns
    -------
    Result

    Raises
    ------
    InputError
        An unknown or invalid option, a start that breaks a pair (naming the pairs), a
        checkpoint of other data, both ``executor`` and ``dask``.
    BackendUnavailableError
        As for :func:`pcsos.solve`.

    Examples
    --------
    >>> import pcsos
    >>> inst = pcsos.make_instance([[0.0], [1], [9], [10]], 2, cl=[(0, 1)])
    >>> from pcsos.api import solve_instance
    >>> res = solve_instance(inst, init_labels=[0, 1, 1, 1], max_nodes=10)
    >>> res.status, res.labels.tolist()
    ('optimal', [0, 1, 1, 1])
    """
    opts = SolverOptions.make(options, **changes).checked()
    check_hooks(callback=callback, progress=progress, stop_event=stop_event,
                abort_event=abort_event, executor=executor)
    start = None if init_labels is None else check_start(instance, init_labels)
    state = None
    if resume is not None:
        state = read_checkpoint(resume, instance)
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not (
            isinstance(checkpoint_every, (int, float)) and checkpoint_every > 0)):
        raise InputError(f"checkpoint_every must be > 0 seconds or None, got "
                         f"{checkpoint_every!r}", source="checkpoint_every")
    per_job = opts.threads if opts.threads is not None else 1
    remote = client = None
    own = False
    if dask is not None:
        if executor is not None:
            raise InputError("give executor or dask, not both", source="dask")
        client, own = connect(dask)
        executor, remote = DaskExecutor(client, instance), DaskSignals()
        if opts.workers is None:
            opts = dataclasses.replace(opts, workers=max(1, sum(client.nthreads().values())))
    try:
        with threadpool_limits(limits=int(per_job), user_api="blas"):
            return _solve(instance, opts, init_labels=start, executor=executor,
                          callback=callback, progress=progress, stop_event=stop_event,
                          abort_event=abort_event, verbose=verbose, checkpoint=checkpoint,
                          checkpoint_every=checkpoint_every, resumed=state, remote=remote)
    finally:
        if client is not None:
            close(client, own)


def _solve(instance, opts: SolverOptions, *, init_labels, executor, callback, progress,
           stop_event, abort_event, verbose, checkpoint=None, checkpoint_every=None,
           resumed=None, remote=None) -> Result:
    # the one clock of the solve: the feasibility check and the tree read it
    deadline = Deadline(opts.time_limit)
    opts = opts.for_instance(instance)  # the default abs_tol, from the data
    workers = resolve_workers(opts.workers)
    threads = int(opts.threads) if opts.threads is not None else 1
    root_threads = int(opts.root_threads) if opts.root_threads is not None else threads
    printer = ProgressPrinter() if verbose else None
    if printer is not None and progress is None:
        progress = printer.status
    if progress is not None:
        progress({"stage": "feasibility check", "elapsed": deadline.elapsed()})
    root = _root(instance, opts, init_labels, resumed is not None, deadline)
    if isinstance(root, Result):
        return root
    problem, witness = root
    # the node sees the checked options themselves, with the thread counts resolved
    options = dataclasses.replace(opts, workers=workers, threads=threads,
                                  root_threads=root_threads)
    rows: list[dict] = []
    state, meta = resumed if resumed is not None else (None, {})
    # a resumed run numbers its rows after the nodes of the runs before it
    logger = _RowBuilder(rows, callback, printer,
                         first=int(state.processed) if state is not None else 0)
    # the user's start or the feasibility witness is a clustering: the first incumbent, so
    # that even a stop during the root returns one
    start = ((instance.objective(witness), witness) if witness is not None
             else (math.inf, None))
    first_root_gap = meta.get("root_gap", math.inf)

    def root_gap_now() -> float:
        return _root_gap(rows) if rows and rows[0].get("node") == 0 else first_root_gap

    save_errors: list[str] = []

    def save(st) -> None:
        try:
            write_checkpoint(checkpoint, st, instance, root_gap=root_gap_now(),
                             root_size=problem.s)
        except Exception as exc:  # noqa: BLE001 - a failed checkpoint must not end the solve
            save_errors.append(str(exc))

    tr = branch_and_bound(process_node, NodeData(problem, known_feasible=True, hint=witness),
                          options=options, executor=executor, workers=workers, tol=opts.tol,
                          abs_tol=opts.abs_gap, max_nodes=opts.max_nodes,
                          time_limit=deadline, order=opts.order,
                          callback=logger, progress=progress, stop_event=stop_event,
                          abort_event=abort_event, incumbent=start, resume=state,
                          checkpoint=save if checkpoint is not None else None,
                          checkpoint_every=checkpoint_every, remote=remote,
                          history=(PseudoCosts.empty(instance.n)
                                   if opts.branching == "pseudocost" else None))
    res = _result(instance, problem, tr, rows, root_gap_now(), resumed=state is not None,
                  time_limit=opts.time_limit,
                  engine=opts.bound_settings.engine_of(instance),
                  backend=opts.bound_settings.backend)
    if save_errors:
        res.message += (f"; {len(save_errors)} checkpoint write(s) failed, the last: "
                        f"{save_errors[-1]}")
    if printer is not None:
        printer.finish()
        ProgressPrinter.summary(res)
    return res


def _root(instance, opts: SolverOptions, init_labels, resumed: bool,
          deadline: Deadline) -> tuple[Problem, np.ndarray | None] | Result:
    """The root's problem and a feasible clustering (the user's start or the feasibility
    check's witness; None on resume, whose first run settled feasibility), or the Result
    that ends the solve before the tree (infeasible, or stopped in the check)."""
    base = dict(n=instance.n, k=instance.k)
    try:
        problem = Problem.from_instance(instance)
    except InfeasibleError as exc:
        return Result(None, math.inf, math.inf, math.inf, "infeasible", str(exc),
                      seconds=deadline.elapsed(), infeasible_pairs=list(exc.pairs), **base)
    if init_labels is not None:  # checked feasible: it is the witness
        return problem, init_labels
    if resumed:
        return problem, None
    try:
        fz = check_problem(problem, opts.feasibility_backend, time_limit=deadline)
    except KeyboardInterrupt:
        return Result(None, math.inf, -math.inf, math.inf, "interrupted",
                      "interrupted during the feasibility check", seconds=deadline.elapsed(),
                      root_size=problem.s, **base)
    if fz.feasible is False:
        return Result(None, math.inf, math.inf, math.inf, "infeasible", fz.message,
                      seconds=deadline.elapsed(), infeasible_pairs=list(fz.pairs),
                      root_size=problem.s, **base)
    if fz.feasible is None:
        return Result(None, math.inf, -math.inf, math.inf, "time_limit",
                      "the time limit stopped the feasibility check", root_size=problem.s,
                      seconds=deadline.elapsed(), **base)
    return problem, fz.labels


def _result(instance, problem: Problem, tr, rows: list[dict], root_gap: float, *,
            resumed: bool, time_limit: float | None, engine: str = "sdp",
            backend: str = "admm") -> Result:
    """The :class:`Result` of a finished tree, its objective recomputed from the data and
    its message saying why a root that never finished left the bound it did (``engine``:
    the root's bound engine, 'sdp' or 'colgen'; ``backend``: the SDP's solver)."""
    labels = tr.solution
    objective = tr.objective
    if labels is not None:
        labels = canonical_labels(np.asarray(labels, dtype=np.int64))
        objective = instance.objective(labels)  # recomputed once more from the data
    # an SSE is never negative: 0 is the bound of a root that a stop left unbounded
    lower = max(float(tr.lower_bound), 0.0)
    gap = relative_gap(objective, lower) if math.isfinite(objective) else math.inf
    res = Result(labels, float(objective), lower, gap, tr.status, tr.message, nodes=tr.nodes,
                 seconds=tr.seconds, root_lower_bound=max(float(tr.root_bound), 0.0),
                 root_gap=float(root_gap), root_size=problem.s, log=rows, n=instance.n,
                 k=instance.k)
    refused = [r for r in rows if r.get("sdp_memory") is not None]
    # an interior-point solver needs s^4 memory where the built-in ADMM needs s^2
    other = f" with backend '{backend}' (the built-in 'admm' needs far less)" \
        if backend != "admm" else ""
    if labels is None and tr.status == "infeasible":
        res.message = "no feasible clustering exists (every branch is infeasible)"
    elif refused and (resumed or rows[0].get("sdp_memory") is None):
        # nodes below the root (or in an earlier run) refused for memory: the tree counts
        # them as unresolved, and only the log said why
        shortfall = memory_shortfall(max(r["sdp_memory"] for r in refused),
                                     min(r["memory_available"] for r in refused))
        res.message += (f"; {len(refused)} node(s) did not run their SDP: it needs up to "
                        f"{shortfall}{other}")
    elif tr.status == "optimal" and rows and rows[0].get("decomposition_subsets") \
            and "sdp_iterations" not in rows[0]:
        # a large root closed by its decomposition bound, its own SDP never run
        res.message += (f"; the root's bound is a decomposition bound: "
                        f"{rows[0]['decomposition_subsets']} subsets of the data bounded apart "
                        "and added (docs/decomposition.md), its own SDP not needed")
    elif not resumed and tr.status != "optimal" and (
            not rows or rows[0].get("closed") == "sdp_too_large"):
        # the root never finished
        est = rows[0].get("sdp_estimate") if rows else None
        memory = rows[0].get("sdp_memory") if rows else None
        if memory is not None:  # refused for lack of memory
            res.message = (f"the root's SDP relaxation (size s = {problem.s}) needs about "
                           f"{memory_shortfall(memory, rows[0]['memory_available'])}{other}, "
                           "so it was not started (the set-partitioning LP, engine 'colgen', needs "
                           f"no s x s matrix); the gap {gap:.3g} is certified")
        elif est is not None:  # refused for lack of time: the time limit is why it stopped
            res.status = "time_limit"
            res.message = (f"time limit of {time_limit:g} s; the root's SDP relaxation (size "
                           f"s = {problem.s}) needs at least ~{est:.0f} s, more than the time "
                           "left, so it was not started")
        else:
            res.message = f"{tr.message} before the root node finished"
        source, nsub = _root_bound_source(rows, tr.unfinished.get(0), res.lower_bound, engine)
        if source == "decomposition":
            res.message += (f"; the lower bound is a decomposition bound: {nsub} subsets of "
                            "the data bounded apart and added (docs/decomposition.md)")
        elif source == "colgen":
            res.message += ("; the lower bound is the root's last safe bound of the "
                            "set-partitioning LP (Lagrangian, docs/safe_bound.md)")
        elif source == "sdp":
            res.message += ("; the lower bound is the root SDP's last safe bound "
                            f"(docs/safe_bound.md){nsub}")
        else:
            res.message += ("; no lower bound but 0, so the clustering is the best "
                            "heuristic one, uncertified")
    return res


def _root_bound_source(rows: list[dict], unfinished: dict | None, lower: float,
                       engine: str = "sdp"):
    """Which bound a root that never finished left: ``("decomposition", subsets)``,
    ``("sdp", ", ... in round r")``, ``("colgen", "")`` (``engine``, the root's bound
    engine, where not a decomposition) or ``(None, None)`` (none above 0), from its log row (a root
    refused its SDP), from the row of the outcome it handed back at the stop, or from the
    last report of its abandoned job (the best bound reported is the one the tree kept)."""
    if lower <= 0:
        return None, None
    entry = unfinished or {}
    row = rows[0] if rows else entry.get("row") or {}
    if row.get("decomposition_subsets") and row.get("decomposition_bound", -math.inf) >= lower:
        return "decomposition", row["decomposition_subsets"]
    by = entry.get("proved_by") or {}
    if by.get("stage") == "decomposition bound" and by.get("bound", -math.inf) >= lower:
        return "decomposition", by.get("subsets")
    if engine == "colgen":
        return "colgen", ""
    return "sdp", (f", its cutting-plane loop stopped in round {by['round']}"
                   if by.get("stage") == "bound" and "round" in by else "")


def _root_gap(rows: list[dict]) -> float:
    """As in the paper: the incumbent after the root against the root's bound."""
    if rows and rows[0].get("node") == 0 and math.isfinite(rows[0]["gub"]):
        return relative_gap(rows[0]["gub"], rows[0]["lb"])
    return math.inf


class _RowBuilder:
    """Turns tree events into pc-sos-sdp log rows (node ids in order of completion)."""

    def __init__(self, rows: list[dict], callback, printer, first: int = 0):
        self.rows = rows
        self.callback = callback
        self.printer = printer
        self.first = first  # nodes logged by earlier runs (a resumed solve)
        self.ids: dict[int, int] = {}

    def __call__(self, ev: NodeEvent) -> None:
        nid = self.first + len(self.rows)
        self.ids[ev.node_id] = nid
        row = dict(ev.row)
        row.update(node=nid, node_parent=self.ids.get(ev.parent_id, -1), lb=ev.bound,
                   lb_parent=ev.parent_bound, gub=ev.incumbent, improved=ev.improved,
                   node_gap=ev.node_gap, gap=ev.gap, open=ev.open, depth=ev.depth,
                   global_lb=ev.global_bound, elapsed=ev.seconds)
        if ev.parent_id < 0:
            row["lb_parent"] = -math.inf
        self.rows.append(row)
        if self.printer is not None:
            self.printer(row)
        if self.callback is not None:
            self.callback(row)
