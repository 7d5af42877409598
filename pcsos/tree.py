"""A generic best-first branch-and-bound manager (minimisation) over a pool of workers.

The manager knows nothing about clustering. It holds the open nodes, hands them to a
``concurrent.futures.Executor`` and combines what comes back; the work on one node is a
*process function* ``process(data, context) -> NodeOutcome`` that must be a picklable
(module-level) function of the node's data, so that a process pool or a cluster executor can
stand in for the default thread pool (the pybnb split of problem and solver).

Guarantees, whatever makes the search stop (gap tolerance, node limit, time limit, Ctrl-C or
a stop event): the result holds the best solution found and the *certified* global gap
``(UB - LB) / |UB|`` where LB is the minimum bound over every node not yet closed (open,
running, or finished without being resolved).
"""

from __future__ import annotations

import copy
import heapq
import math
import os
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any

from pcsos.clock import Deadline

__all__ = [
    "Context",
    "NodeOutcome",
    "NodeEvent",
    "TreeResult",
    "WorkerPool",
    "branch_and_bound",
    "relative_gap",
    "gap_closed",
    "ORDERS",
    "STATUSES",
    "TreeState",
]

ORDERS = ("best", "depth", "breadth")
STATUSES = ("optimal", "node_limit", "time_limit", "interrupted", "infeasible", "unresolved")
INF = math.inf


def gap_closed(ub: float, lb: float, tol: float, abs_tol: float = 0.0) -> bool:
    """True when ``lb`` proves ``ub`` optimal within ``tol`` (relative) or ``abs_tol``
    (absolute), as MIP solvers' relative and absolute gaps; always true when ``lb = inf``.

    The absolute test is what certifies a zero or tiny optimum, whose relative gap is
    infinite or dominated by rounding.
    """
    if lb == INF:
        return True
    if not math.isfinite(ub):
        return False
    return ub - lb <= abs_tol or relative_gap(ub, lb) <= tol


def relative_gap(ub: float, lb: float) -> float:
    """(ub - lb) / |ub|; 0 when lb >= ub, inf when there is no upper bound or ub = 0 < lb gap."""
    if not math.isfinite(ub):
        return INF if ub == INF else 0.0
    if lb >= ub:
        return (ub - lb) / abs(ub) if ub != 0 else 0.0
    if ub == 0:
        return INF
    return (ub - lb) / abs(ub)


class _Incumbent:
    """The incumbent shared (by reference) with jobs running in threads of this process.

    Jobs may :meth:`offer` a solution while they run (e.g. the root's first heuristic), so
    that a stop before the job ends still returns it and the other jobs prune against it.
    """

    __slots__ = ("value", "solution", "source", "lock")

    def __init__(self, value: float, solution: Any = None, source: int = -1):
        self.value = value
        self.solution = solution
        self.source = source  # the node that found it (-1: given by the caller)
        self.lock = threading.Lock()

    def offer(self, value: float, solution: Any, source: int) -> bool:
        """Take ``solution`` when it is strictly better; True when it was taken."""
        with self.lock:
            if solution is None or not value < self.value:
                return False
            self.value, self.solution, self.source = float(value), solution, source
            return True

    def __getstate__(self):  # a lock cannot be pickled; the solution need not travel
        return (self.value, self.source)

    def __setstate__(self, state):
        self.value, self.source = state
        self.solution = None
        self.lock = threading.Lock()


class Context:
    """What a job gets besides its node data: incumbent, deadline, cancellation and options.

    ``incumbent`` reads the live incumbent value when the job runs in a thread of the
    manager's process (it improves while the job runs); after pickling (process pools) it is
    the value at submission. ``deadline`` is the search's :class:`~pcsos.clock.Deadline`
    (None: no limit), which every job must respect so that a time limit or Ctrl-C returns
    within seconds; ``cancelled()`` turns true when the manager stops (threads; in other
    processes only through a ``remote`` signal object, else at the deadline). A job hands
    ``context.deadline`` on to what it calls: it stops on both the time and the manager's
    stop. ``remote``: a picklable
    object with ``cancelled()`` and ``incumbent()`` that reaches the manager from any
    process (e.g. :class:`pcsos.distributed.DaskSignals`). ``is_root`` is true for the
    first node, which runs alone.
    ``offer(value, solution)`` hands a solution found mid-job to the manager at once and
    ``report(stage, **info)`` says what the job is doing, for progress output (both only
    reach the manager from threads of its process; elsewhere they are no-ops and the
    solution travels in the job's :class:`NodeOutcome`). ``history``: the search's memory
    (see :func:`branch_and_bound`), live in threads, elsewhere a copy from when the context
    was pickled.
    """

    def __init__(self, incumbent: float | _Incumbent, deadline: Deadline | None = None,
                 options: Any = None,
                 cancel: threading.Event | None = None, node_id: int = 0, depth: int = 0,
                 is_root: bool = False, reports: dict | None = None, remote: Any = None,
                 history: Any = None):
        self._inc = incumbent if isinstance(incumbent, _Incumbent) else _Incumbent(incumbent)
        self._snapshot = self._inc.value
        self.options = options
        self._cancel = cancel
        self._reports = reports
        self._remote = remote
        # the search's instant, stopping also when the manager stops
        self.deadline = (deadline or Deadline()).within(stop=self._stopped)
        self.node_id = node_id
        self.depth = depth
        self.is_root = is_root
        self.history = history

    @property
    def incumbent(self) -> float:
        """The best objective value known to the manager (never worse than at submission)."""
        if self._remote is not None:
            return min(self._snapshot, self._inc.value, self._remote.incumbent())
        return min(self._snapshot, self._inc.value)

    def offer(self, value: float, solution: Any) -> bool:
        """Offer a feasible solution found mid-job; True when it became the incumbent."""
        return self._inc.offer(value, solution, self.node_id)

    def report(self, stage: str, **info: Any) -> None:
        """Record what the job is doing (shown by the manager's progress callback).

        ``bound``, when given, must be a valid lower bound of the node's subproblem: a job
        that has not handed in its outcome when the search stops (abandoned after the grace
        period, or cancelled) keeps the best such bound in the certified gap, in the tree's
        result and in its checkpoint (``proved`` in the report, and ``proved_by``: the stage
        and info of the report that gave it)."""
        if self._reports is not None:
            old = self._reports.get(self.node_id) or {}
            proved, by = float(old.get("proved", -INF)), old.get("proved_by")
            bound = info.get("bound")
            if bound is not None and float(bound) > proved:  # False for NaN
                proved, by = float(bound), {"stage": stage, **info}
            entry = {"stage": stage, "time": time.time(), **info}  # a timestamp, not a limit
            if proved > -INF:
                entry.update(proved=proved, proved_by=by)
            self._reports[self.node_id] = entry

    def _stopped(self) -> bool:
        return ((self._cancel is not None and self._cancel.is_set())
                or (self._remote is not None and self._remote.cancelled()))

    def cancelled(self) -> bool:
        """True when the manager has stopped (interrupt, time limit, limit reached)."""
        return self.deadline.expired()

    def __getstate__(self):
        # Events, locks and the live incumbent cannot cross a process boundary: a snapshot.
        state = self.__dict__.copy()
        # the local value only: pickling may run in an executor's I/O thread, where a remote
        # read would block or misbehave; the remote signal travels and is read on arrival
        state["_inc"] = _Incumbent(min(self._snapshot, self._inc.value))
        state["_snapshot"] = state["_inc"].value
        state["_cancel"] = None
        state["_reports"] = None
        state["deadline"] = self.deadline.within(stop=None)
        state["deadline"].stop = None  # the manager's stop travels as ``remote``
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.deadline = self.deadline.within(stop=self._stopped)


@dataclass
class NodeOutcome:
    """What a process function returns for one node.

    bound : the node's lower bound after processing (``inf`` when the node is infeasible).
    objective, solution : the best feasible solution the node found (``inf`` / None if none).
    children : ``(child_data, child_bound)`` pairs; child_bound is a valid lower bound for
        the child (typically the node's bound). A node returned without children is closed:
        if its bound is not within the tolerance of the incumbent (e.g. a numerical failure
        or a job stopped by its deadline), the bound stays in the global lower bound, so the
        certified gap remains honest.
    row : free-form per-node data for logs (the manager adds ids, incumbent, gap, open).
    learned : what the search should remember from this node, or None: the manager passes
        it to its ``history`` (``history.record(learned)``), which later jobs read.
    finished : False when the job stopped (deadline, cancellation) before it could bound
        or branch the node: the node is then still open (with ``bound`` if it improved),
        it is neither counted as processed nor logged, and a later run (after a resume)
        processes it again; its solution, if any, is still taken.
    """

    bound: float
    objective: float = INF
    solution: Any = None
    children: Sequence[tuple[Any, float]] = ()
    row: dict = field(default_factory=dict)
    learned: Any = None
    finished: bool = True


@dataclass
class NodeEvent:
    """One finished node, as passed to the callback and kept in ``TreeResult.log``."""

    node_id: int
    parent_id: int
    depth: int
    parent_bound: float
    bound: float
    objective: float
    incumbent: float
    improved: bool
    global_bound: float
    gap: float
    node_gap: float
    open: int
    processed: int
    seconds: float
    row: dict


@dataclass
class TreeResult:
    """The outcome of :func:`branch_and_bound`."""

    status: str
    solution: Any
    objective: float
    lower_bound: float
    gap: float
    nodes: int
    seconds: float
    root_bound: float
    root_objective: float
    open_nodes: int
    log: list[NodeEvent]
    message: str = ""
    #: each node a stop left unfinished, by id, with no log row: its job's last report
    #: (:meth:`Context.report`; the node's bound in the result is at least its ``proved``)
    #: and, when the job handed the node back rather than being abandoned, the outcome's
    #: ``row``
    unfinished: dict[int, dict] = field(default_factory=dict)


@dataclass
class TreeState:
    """What a search needs to go on later (checkpoint / resume), whatever stopped it.

    ``open``: ``(node_id, parent_id, depth, bound, data)`` of every node not yet processed
    (queued or running when the state was taken: a running node is processed again);
    ``incumbent`` and ``solution``; ``unresolved`` (nodes closed without proof, e.g. a
    numerical failure or an SDP too large for the time left, in the same form as ``open``:
    a resumed run processes them again) and ``closed`` (smallest bound pruned within the
    tolerance), both part of the certified bound; ``processed`` nodes and ``seconds`` over
    every run so far; ``next_id``; the root's bound and objective; the search's ``history``
    (see :func:`branch_and_bound`; None: none). The node data must be picklable to be
    written to a file.
    """

    open: list
    incumbent: float
    solution: Any
    unresolved: list
    closed: float
    processed: int
    next_id: int
    seconds: float
    root_bound: float
    root_objective: float
    history: Any = None

    @property
    def lower_bound(self) -> float:
        """The certified lower bound the state carries."""
        lbs = [o[3] for o in self.open] + [o[3] for o in self.unresolved] + [self.closed]
        return min(min(lbs), self.incumbent)


@dataclass(order=True)
class _Open:
    key: tuple
    node_id: int = field(compare=False)
    parent_id: int = field(compare=False)
    depth: int = field(compare=False)
    bound: float = field(compare=False)
    data: Any = field(compare=False)


WORKER_PREFIX = "pcsos-worker-"  # the names of WorkerPool's threads
# names of the WorkerPool threads running a job now: a pool may be collected while its
# abandoned job still runs, so the record cannot live on the pool
_BUSY: dict[int, str] = {}  # thread ident -> name
_BUSY_LOCK = threading.Lock()


class WorkerPool(Executor):
    """A thread pool whose workers are daemon threads.

    Unlike ``ThreadPoolExecutor`` (whose threads the interpreter joins at exit), a job still
    running when the search is interrupted can never delay the exit of the program; the job
    sees the cancellation through its :class:`Context` and stops on its own soon after.
    """

    def __init__(self, max_workers: int | None = None):
        self._n = max(1, int(max_workers or os.cpu_count() or 1))
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shutdown = False

    @property
    def max_workers(self) -> int:
        return self._n

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            fut: Future = Future()
            self._queue.put((fut, fn, args, kwargs))
            if len(self._threads) < self._n:
                t = threading.Thread(target=_worker, args=(weakref.ref(self), self._queue),
                                     name=f"{WORKER_PREFIX}{len(self._threads)}", daemon=True)
                t.start()
                self._threads.append(t)
            return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._threads:
                self._queue.put(None)
        if wait:
            for t in self._threads:
                t.join()


def jobs_running() -> bool:
    """True while a :class:`WorkerPool` thread runs a job, as one does after a stop that left
    a job running (inside LAPACK or HiGHS, it may take a while to notice). A process that
    ends then should flush its output and leave by ``os._exit``: finalising the interpreter
    under such a thread can abort it ("terminate called without an active exception") or
    fail the last flush of stdout. An idle worker waiting for work does not count."""
    with _BUSY_LOCK:
        return any(name.startswith(WORKER_PREFIX) for name in _BUSY.values())


def exit_if_jobs_running(code: int) -> None:
    """End the process at once with exit status ``code``, stdout and stderr flushed, when
    :func:`jobs_running`; else return (the interpreter may finalise safely)."""
    if not jobs_running():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more to write
            pass
    os._exit(code)


def _worker(pool_ref, q: queue.SimpleQueue) -> None:
    while True:
        item = q.get()
        if item is None:
            return
        fut, fn, args, kwargs = item
        if not fut.set_running_or_notify_cancel():
            continue
        me = threading.current_thread()
        with _BUSY_LOCK:
            _BUSY[me.ident] = me.name
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: B036 - hand every failure to the manager
            fut.set_exception(exc)
        finally:
            with _BUSY_LOCK:
                _BUSY.pop(me.ident, None)
        del item, fut


def _key(order: str, bound: float, depth: int, node_id: int) -> tuple:
    if order == "best":      # smallest bound first; ties: deeper first, then older
        return (bound, -depth, node_id)
    if order == "depth":     # LIFO: deepest first, newest first among equals
        return (-depth, -node_id)
    return (depth, node_id)  # breadth-first: FIFO by level


class _Search:
    """The state of one branch-and-bound run (see :func:`branch_and_bound`)."""

    def __init__(self, order: str, tol: float, abs_tol: float, incumbent: tuple[float, Any],
                 callback: Callable[[NodeEvent], None] | None, clock: Deadline,
                 history: Any = None):
        self.order = order
        self.tol = tol
        self.abs_tol = abs_tol
        self.inc = _Incumbent(float(incumbent[0]), incumbent[1])
        self.callback = callback
        self.clock = clock
        self.next_id = 0
        self.prior = 0.0  # seconds of the runs before a resume
        self.heap: list[_Open] = []
        self.running: dict[Future, _Open] = {}
        self.reports: dict[int, dict] = {}  # what running jobs say they are doing
        self.unfinished: dict[int, dict] = {}  # TreeResult.unfinished, of jobs handed back
        self.unresolved: list[_Open] = []  # nodes closed without proof (bound updated)
        self.closed = INF  # smallest bound of a node pruned within the tolerance
        self.log: list[NodeEvent] = []
        self.submitted = 0  # jobs handed out, including the ones still running
        self.processed = 0  # nodes finished (logged)
        self.root_bound = -INF
        self.root_objective = INF
        self.history = history

    def prunable(self, bound: float) -> bool:
        return gap_closed(self.inc.value, bound, self.tol, self.abs_tol)

    def push(self, data: Any, bound: float, depth: int, parent_id: int,
             node_id: int | None = None) -> None:
        if node_id is None:
            nid, self.next_id = self.next_id, self.next_id + 1
        else:
            nid = node_id
        heapq.heappush(self.heap, _Open(_key(self.order, bound, depth, nid), nid, parent_id,
                                        depth, bound, data))

    def elapsed(self) -> float:
        """Seconds over every run (a resumed search goes on counting)."""
        return self.prior + self.clock.elapsed()

    def proved(self, node: _Open) -> float:
        """A running node's bound: its bound when it was submitted, or the better one its job
        has reported since (:meth:`Context.report`)."""
        rep = self.reports.get(node.node_id) or {}
        return max(node.bound, float(rep.get("proved", -INF)))

    def snapshot(self) -> TreeState:
        """The state to resume from; running nodes count as open (they run again), with the
        bounds their jobs have proved so far."""
        with self.inc.lock:  # a job may offer a solution meanwhile: value and solution agree
            value, solution = self.inc.value, self.inc.solution

        def rows(opens, bound=lambda o: o.bound):
            return [(o.node_id, o.parent_id, o.depth, bound(o), o.data) for o in opens]

        return TreeState(
            open=rows(self.heap) + rows(self.running.values(), self.proved),
            incumbent=value, solution=solution,
            unresolved=rows(self.unresolved), closed=self.closed, processed=self.processed,
            next_id=self.next_id, seconds=self.elapsed(), root_bound=self.root_bound,
            # a copy: the state must not change as the search records on
            root_objective=self.root_objective, history=copy.copy(self.history))

    def restore(self, state: TreeState) -> None:
        """Go on from ``state`` (see :class:`TreeState`)."""
        self.inc.offer(float(state.incumbent), state.solution, -1)
        # nodes closed without proof get another chance (more time, another machine)
        for nid, parent, depth, bound, data in list(state.open) + list(state.unresolved):
            self.push(data, bound, depth, parent, nid)
        self.closed = state.closed
        self.processed = self.submitted = int(state.processed)
        self.next_id = int(state.next_id)
        self.prior = float(state.seconds)
        self.root_bound = state.root_bound
        self.root_objective = state.root_objective
        if state.history is not None:
            self.history = copy.copy(state.history)

    def global_bound(self) -> float:
        """The certified lower bound: the minimum bound over open, running, unresolved and
        pruned nodes (pruned ones lie within the tolerance of the incumbent)."""
        lbs = ([o.bound for o in self.heap] + [self.proved(o) for o in self.running.values()]
               + [o.bound for o in self.unresolved] + [self.closed])
        return min(min(lbs), self.inc.value)

    def close(self, bound: float) -> None:
        if bound < INF:
            self.closed = min(self.closed, bound)

    def drop_pruned(self) -> None:
        keep_u = []
        for o in self.unresolved:
            if self.prunable(o.bound):
                self.close(o.bound)
            else:
                keep_u.append(o)
        self.unresolved = keep_u
        kept = []
        for o in self.heap:
            if self.prunable(o.bound):
                self.close(o.bound)
            else:
                kept.append(o)
        if len(kept) != len(self.heap):
            self.heap = kept
            heapq.heapify(self.heap)

    def requeue(self, node: _Open) -> None:
        """A submitted node that did not run to the end: open again, not counted, with the
        bound its job proved meanwhile."""
        self.submitted -= 1
        bound = self.proved(node)
        self.reports.pop(node.node_id, None)
        self.push(node.data, bound, node.depth, node.parent_id, node.node_id)

    def absorb(self, node: _Open, out: NodeOutcome) -> None:
        """Merge a finished node: incumbent, children, log event."""
        # never below its parent's bound, nor below one its job reported on the way
        bound = max(float(out.bound), self.proved(node))
        report = self.reports.pop(node.node_id, None) or {}
        self.unfinished.pop(node.node_id, None)
        self.inc.offer(float(out.objective), out.solution, node.node_id)
        if not out.finished:
            # stopped before it could bound or branch: still open, not a processed node
            self.unfinished[node.node_id] = {**report, "row": dict(out.row)}
            self.submitted -= 1
            if self.prunable(bound):
                self.close(bound)
            else:
                self.push(node.data, bound, node.depth, node.parent_id, node.node_id)
            return
        self.processed += 1
        if out.learned is not None and self.history is not None:
            self.history.record(out.learned)
        improved = self.inc.source == node.node_id
        if node.node_id == 0:
            self.root_bound = bound
            self.root_objective = float(out.objective)
        if out.children:
            for data, child_bound in out.children:
                cb = max(float(child_bound), bound)
                if self.prunable(cb):
                    self.close(cb)
                else:
                    self.push(data, cb, node.depth + 1, node.node_id)
        elif self.prunable(bound):
            self.close(bound)
        else:
            # closed without children, yet its bound is not within tol of the incumbent
            # (a numerical failure): keep it in the gap, and its data for a resume
            self.unresolved.append(_Open(node.key, node.node_id, node.parent_id, node.depth,
                                         bound, node.data))
        self.drop_pruned()
        glb = self.global_bound()
        ub = self.inc.value
        ev = NodeEvent(node_id=node.node_id, parent_id=node.parent_id, depth=node.depth,
                       parent_bound=node.bound, bound=bound, objective=float(out.objective),
                       incumbent=ub, improved=improved, global_bound=glb,
                       gap=relative_gap(ub, glb) if math.isfinite(ub) else INF,
                       node_gap=relative_gap(ub, bound) if math.isfinite(ub) else INF,
                       open=len(self.heap) + len(self.running), processed=self.processed,
                       seconds=self.elapsed(), row=dict(out.row))
        self.log.append(ev)
        if self.callback is not None:
            self.callback(ev)

    def status(self) -> dict:
        """A snapshot for progress output: counts, bounds and what running jobs do."""
        glb = self.global_bound()
        ub = self.inc.value
        return {"nodes": self.processed, "open": len(self.heap) + len(self.running),
                "bound": glb, "incumbent": ub,
                "gap": relative_gap(ub, glb) if math.isfinite(ub) else INF,
                "elapsed": self.elapsed(),
                "running": {o.node_id: dict(self.reports.get(o.node_id, {}))
                            for o in self.running.values()}}


def branch_and_bound(
    process: Callable[[Any, Context], NodeOutcome],
    root_data: Any,
    *,
    root_bound: float = -INF,
    options: Any = None,
    executor: Executor | None = None,
    workers: int = 1,
    tol: float = 1e-4,
    abs_tol: float = 0.0,
    max_nodes: int | None = None,
    time_limit: float | Deadline | None = None,
    order: str = "best",
    incumbent: tuple[float, Any] = (INF, None),
    callback: Callable[[NodeEvent], None] | None = None,
    progress: Callable[[dict], None] | None = None,
    progress_interval: float = 1.0,
    stop_event: threading.Event | None = None,
    abort_event: threading.Event | None = None,
    grace: float = 1.0,
    resume: TreeState | None = None,
    checkpoint: Callable[[TreeState], None] | None = None,
    checkpoint_every: float | None = None,
    remote: Any = None,
    history: Any = None,
) -> TreeResult:
    """Minimise by best-first (or depth-/breadth-first) branch and bound.

    ``process(data, context)`` processes one node and returns a :class:`NodeOutcome`; it runs
    on ``executor`` (default: a :class:`WorkerPool` of ``workers`` daemon threads, shut down
    at the end; an executor passed in is left running). At most ``workers`` jobs are in
    flight at once and the root runs alone. A node is pruned when its bound is within
    ``tol`` (relative) or ``abs_tol`` (absolute) of the incumbent (:func:`gap_closed`).
    Stops when no node is left or the global gap is closed (``optimal``, or ``infeasible``
    when no solution exists), after ``max_nodes`` processed nodes (``node_limit``, running
    nodes are finished), when ``time_limit`` runs out (seconds from now, or a
    :class:`~pcsos.clock.Deadline` the caller started earlier: its instant, and the time
    reported counts from its start), or on KeyboardInterrupt or ``stop_event``
    (``interrupted``); running jobs then get ``grace`` seconds to report before they are
    abandoned (the best bounds they reported stay in the certified gap), none once
    ``abort_event`` is set.
    ``callback(event)`` runs in the calling thread after every node; ``progress(status)``
    about every ``progress_interval`` seconds while jobs run (see ``_Search.status``).
    ``resume``: a :class:`TreeState` to go on from instead of ``root_data`` (node and time
    counts go on; ``max_nodes`` counts every run, ``time_limit`` this run);
    ``checkpoint(state)`` is called with the current :class:`TreeState` every
    ``checkpoint_every`` seconds (None: only at the end) and once when the search ends.
    ``remote``: signals for jobs in other processes (see :class:`Context`): the manager
    calls ``remote.publish(incumbent)`` when the incumbent improves and ``remote.stop()``
    when the search stops.
    ``history``: the search's memory (e.g. pseudo-costs), an object with
    ``record(learned)``: the manager calls it with every finished node's
    ``NodeOutcome.learned`` that is not None, and jobs read it as ``context.history``; a
    ``resume`` state's history, when it has one, replaces it (states hold a shallow copy:
    ``record`` must replace what it changes, not write into it).
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if not abs_tol >= 0:
        raise ValueError(f"abs_tol must be >= 0, got {abs_tol}")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError(f"max_nodes must be >= 1, got {max_nodes}")
    if time_limit is not None and not isinstance(time_limit, Deadline) and not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit}")
    workers = max(1, int(workers))
    deadline = Deadline.of(time_limit)
    own = executor is None
    pool = WorkerPool(workers) if own else executor
    cancel = threading.Event()
    st = _Search(order, tol, abs_tol, incumbent, callback, deadline, history)
    if resume is not None:
        st.restore(resume)
    else:
        st.push(root_data, root_bound, 0, -1)
    ticker = _Ticker(progress, progress_interval)
    saved = time.monotonic()  # checkpoints' cadence, not a limit
    status = None
    published = st.inc.value
    if remote is not None:
        remote.publish(published)  # workers may read it before any improvement
    try:
        while status is None:
            status = _step(st, process, pool, options, cancel, deadline, workers, max_nodes,
                           stop_event, remote)
            ticker(st)
            if remote is not None and st.inc.value < published:
                published = st.inc.value
                remote.publish(published)
            if (status is None and checkpoint is not None and checkpoint_every is not None
                    and time.monotonic() - saved >= checkpoint_every):
                checkpoint(st.snapshot())
                saved = time.monotonic()
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        cancel.set()
        if remote is not None:
            remote.stop()
        if own:
            pool.shutdown(wait=False, cancel_futures=True)
        else:
            for fut in st.running:
                fut.cancel()
    if st.running and status in ("interrupted", "time_limit"):
        # jobs saw the cancellation / deadline: give them a moment to hand in their work
        end = Deadline(grace, stop=abort_event)
        try:
            while st.running and not end.expired():
                done, _ = wait(list(st.running), timeout=min(0.1, grace))
                for fut in done:
                    node = st.running.pop(fut)
                    if not fut.cancelled() and fut.exception() is None:
                        st.absorb(node, fut.result())
                    else:  # never ran, or failed: still open (its bound stays in the gap)
                        st.requeue(node)
        except KeyboardInterrupt:
            pass
    if checkpoint is not None:
        st.drop_pruned()
        checkpoint(st.snapshot())
    return _result(st, status, tol, max_nodes, deadline.limit)


class _Ticker:
    """Calls ``progress(status)`` at most once per ``interval`` seconds."""

    def __init__(self, progress, interval: float):
        self.progress = progress
        self.interval = interval
        self.last = time.monotonic()

    def __call__(self, st: _Search) -> None:
        if self.progress is None or not st.running:
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self.progress(st.status())


def _step(st: _Search, process, pool: Executor, options, cancel: threading.Event,
          deadline: Deadline, workers: int, max_nodes: int | None,
          stop_event: threading.Event | None, remote: Any = None) -> str | None:
    """One round of the main loop: stop tests, submissions, collection. A status stops it."""
    st.drop_pruned()
    # the stop tests come first: a job that saw the deadline hands its node back unfinished,
    # and an empty queue after it means "stopped", not "closed" (_result still calls a tree
    # that closed completely before the stop optimal)
    if stop_event is not None and stop_event.is_set():
        return "interrupted"
    if deadline.expired():
        return "time_limit"
    if not st.heap and not st.running:
        return "optimal"  # every node closed (_result turns it into infeasible / unresolved)
    limit_hit = max_nodes is not None and st.submitted >= max_nodes
    if limit_hit and not st.running:
        return "node_limit"
    while st.heap and len(st.running) < workers and not limit_hit:
        if any(o.node_id == 0 for o in st.running.values()):
            break  # the root runs alone (it may use every core)
        node = heapq.heappop(st.heap)
        ctx = Context(st.inc, deadline, options, cancel, node.node_id, node.depth,
                      is_root=node.node_id == 0, reports=st.reports, remote=remote,
                      history=st.history)
        try:
            fut = pool.submit(process, node.data, ctx)
        except BaseException:  # Ctrl-C or a refusing executor: the node stays open
            heapq.heappush(st.heap, node)
            raise
        st.running[fut] = node
        st.submitted += 1
        limit_hit = max_nodes is not None and st.submitted >= max_nodes
        if node.node_id == 0:
            break
    if not st.running:
        return None
    timeout = min(0.25, deadline.remaining())
    done, _ = wait(list(st.running), timeout=timeout, return_when=FIRST_COMPLETED)
    for fut in done:
        node = st.running.pop(fut)
        st.absorb(node, fut.result())  # a failing job is a bug: let it propagate
    return None


def _result(st: _Search, status: str, tol: float, max_nodes, time_limit) -> TreeResult:
    ub = st.inc.value
    st.drop_pruned()
    lb = st.global_bound()
    left = len(st.heap) + len(st.running)
    if status in ("time_limit", "interrupted", "node_limit") and not left and not st.unresolved:
        status = "optimal"  # the last running jobs closed the tree before the stop
    if status == "optimal":
        if not math.isfinite(ub) and not st.unresolved:
            status, lb = "infeasible", INF
    gap = relative_gap(ub, lb) if math.isfinite(ub) else INF
    if status == "optimal" and not gap_closed(ub, lb, tol, st.abs_tol):
        status = "unresolved"  # only nodes that failed numerically keep the gap open
    messages = {
        "optimal": (f"optimal within the relative gap tolerance {tol:g} (gap {gap:.3g})"
                    if gap <= tol else
                    f"optimal within the absolute gap tolerance {st.abs_tol:g} "
                    f"(gap {ub - lb:.3g}; relative gap {gap:.3g}, above the tolerance {tol:g}: "
                    "with values this small, lower abs_tol or rescale the data for a "
                    "relative certificate)"),
        "infeasible": "no feasible solution exists",
        "node_limit": (f"node limit {max_nodes} reached" if max_nodes
                       else "stopped with unresolved nodes"),
        "time_limit": f"time limit of {time_limit:g} s reached" if time_limit else "time limit",
        "interrupted": "interrupted",
        "unresolved": (f"{len(st.unresolved)} node(s) could not be resolved (a bound that "
                       f"failed or was not run; the log's rows say which); the gap {gap:.3g} "
                       "is certified"),
    }
    return TreeResult(status=status, solution=st.inc.solution, objective=ub, lower_bound=lb,
                      gap=gap, nodes=st.processed, seconds=st.elapsed(),
                      root_bound=st.root_bound, root_objective=st.root_objective,
                      open_nodes=left, log=st.log, message=messages[status],
                      unfinished={**st.unfinished,
                                  **{o.node_id: dict(st.reports.get(o.node_id, {}))
                                     for o in st.running.values()}})
