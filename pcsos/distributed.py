"""The tree on a Dask cluster: an executor adapter and cross-process signals.

``pcsos.solve(..., dask="local:2")`` (a ``LocalCluster`` of 2 worker processes),
``dask="tcp://scheduler:8786"`` (a running scheduler) or ``dask=client`` (a
``distributed.Client``) runs the nodes on Dask workers (``pip install 'pcsos[dask]'``). The
tree manager stays in the calling process and knows nothing of Dask: it gets an
``Executor`` (``DaskExecutor``) and a ``remote`` signal object (``DaskSignals``).

* The data travels once: the instance is the result of one task that every job depends
  on, so a worker fetches it once while it holds it. It is not scattered: Dask's memory
  manager drops the extra replicas of scattered data, and scattered data whose last
  holder dies is lost, where a task's result is computed again. A node travels as a
  pickle of its data in which the instance is a reference (``persistent_id``), and so do
  the children that come back. The rest of a node (its branching decisions as a
  super-point problem, its cut set, its warm start) is compact arrays.
* Ctrl-C, a stop event and the time limit reach running nodes through a Dask ``Event``
  that their ``Context`` (:mod:`pcsos.tree`) polls (at most every ``poll`` seconds), so remote
  SDP solves stop within about a second; the incumbent reaches them through a Dask
  ``Variable``, their pruning target. The worker processes of a ``'local:N'`` cluster
  ignore Ctrl-C (``dask_setup``): a terminal sends it to the whole process group.
* A worker that dies loses no node: Dask runs its task again on another worker.
* Heuristics are found by name on every worker: the built-in ones and entry points of the
  ``pcsos.heuristics`` group. One registered with ``register_heuristic`` in the calling
  process only is not seen by the workers (register it by entry point).
"""

from __future__ import annotations

import io
import math
import pickle
import signal
import time
import uuid
from concurrent.futures import Executor, Future

from pcsos.errors import BackendUnavailableError, InputError

__all__ = ["DaskSignals", "DaskExecutor", "connect"]

_REF = "pcsos-instance"


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise BackendUnavailableError(
            "running on Dask needs dask.distributed, which is not installed: "
            "pip install 'pcsos[dask]'") from None
    return distributed


def connect(spec):
    """``(client, own)`` for ``spec``: a Client (not owned), ``'local:N'`` (a new
    LocalCluster of N worker processes, owned) or a scheduler address (owned client)."""
    distributed = _import_distributed()
    if isinstance(spec, distributed.Client):
        return spec, False
    if not isinstance(spec, str) or not spec:
        raise InputError(f"dask must be a Client, 'local:N' or a scheduler address, got "
                         f"{spec!r}", source="dask")
    if spec.startswith("local:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            n = 0
        if n < 1:
            raise InputError(f"'local:N' needs N >= 1 worker processes, got {spec!r}",
                             source="dask")
        import logging

        import dask

        # the preload (dask_setup below) runs in each worker process, restarted ones too;
        # a list given here replaces the configuration's, so that one is kept in front
        preload = [*dask.config.get("distributed.worker.preload", []), __name__]
        # its HTTP server on a free port: None still takes 8787, and a second solve at once
        # warned that the port was in use
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address="127.0.0.1:0",
                                           silence_logs=logging.ERROR, preload=preload)
        return distributed.Client(cluster), True
    try:
        return distributed.Client(spec, timeout="20s"), True
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {spec}: {exc}",
                         source="dask") from None


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each worker process of the clusters :func:`connect`
    starts: the worker ignores Ctrl-C. A terminal's Ctrl-C reaches the whole process group;
    the manager takes it, stops the running nodes through the stop event and closes the
    cluster, as :mod:`pcsos.decomposition`'s pool workers leave it to their caller."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the process's main thread: Python allows no handler there
        pass


def close(client, own: bool) -> None:
    """Close ``client`` and its LocalCluster when :func:`connect` made them (``own``)."""
    if not own:
        return
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


class DaskSignals:
    """The stop flag and the incumbent, shared with every worker by name (a Dask ``Event``
    and ``Variable``); workers poll them at most every ``poll`` seconds."""

    def __init__(self, name: str | None = None, poll: float = 0.5):
        self.name = name or f"pcsos-{uuid.uuid4().hex}"
        self.poll = float(poll)
        self._reset()

    def _reset(self) -> None:
        self._event = self._var = None
        self._stopped = False
        self._best = math.inf
        self._seen = -math.inf  # when the flag and the incumbent were last read

    def __getstate__(self):
        return {"name": self.name, "poll": self.poll}

    def __setstate__(self, state):
        self.name, self.poll = state["name"], state["poll"]
        self._reset()

    def _objects(self):
        if self._event is None:
            distributed = _import_distributed()
            # in a task, get_client() is the worker's client in its synchronous form (the
            # default one would hand back coroutines); in the manager, the caller's client
            client = distributed.get_client()
            self._event = distributed.Event(f"{self.name}-stop", client=client)
            self._var = distributed.Variable(f"{self.name}-incumbent", client=client)
        return self._event, self._var

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._seen < self.poll or self._stopped:
            return
        self._seen = now
        try:
            event, var = self._objects()
            stopped = event.is_set()
            best = var.get(timeout=1)
        except Exception:  # noqa: BLE001 - no scheduler, no value yet: the deadline holds
            return
        if isinstance(stopped, bool):  # anything else is a misuse: never read it as a stop
            self._stopped = stopped
        if isinstance(best, (int, float)):
            self._best = min(self._best, float(best))

    def cancelled(self) -> bool:
        """True once the manager has stopped (read at most every ``poll`` seconds)."""
        self._refresh()
        return self._stopped

    def incumbent(self) -> float:
        """The manager's incumbent value as last read (inf before any)."""
        self._refresh()
        return self._best

    def publish(self, value: float) -> None:
        """Manager side: a better incumbent value."""
        self._objects()[1].set(float(value))

    def stop(self) -> None:
        """Manager side: the search stops; running nodes hand in their work."""
        self._objects()[0].set()


class _Pickler(pickle.Pickler):
    def __init__(self, fh, instance):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._instance = instance

    def persistent_id(self, obj):
        return _REF if obj is self._instance else None


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, instance):
        super().__init__(fh)
        self._instance = instance

    def persistent_load(self, pid):
        if pid != _REF:
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        return self._instance


def dumps(obj, instance) -> bytes:
    """``obj`` pickled with ``instance`` as a reference (see the module doc)."""
    fh = io.BytesIO()
    _Pickler(fh, instance).dump(obj)
    return fh.getvalue()


def loads(blob: bytes, instance):
    """The inverse of :func:`dumps`, with this process's copy of the instance."""
    return _Unpickler(io.BytesIO(blob), instance).load()


def _identity(obj):
    """The instance's task (module doc)."""
    return obj


def _run_remote(process, blob: bytes, ctx, instance) -> bytes:
    """A node's job on a worker: unpickle its data, process it, pickle the outcome."""
    data = loads(blob, instance)
    return dumps(process(data, ctx), instance)


class DaskExecutor(Executor):
    """An ``Executor`` that runs ``process(data, ctx)`` jobs on Dask workers, sending the
    instance once (module doc). ``bytes_sent`` / ``bytes_back`` / ``jobs`` count the traffic
    of node data and outcomes."""

    def __init__(self, client, instance):
        self.client = client
        self.instance = instance
        import dask

        # Dask warns of a large graph from 10 MB on and advises futures, which is what
        # this task is: the one place the data enters a graph (module doc)
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": 2**62}):
            self._ref = client.submit(_identity, instance, pure=False)
        self.bytes_sent = self.bytes_back = self.jobs = 0
        self._pending: set = set()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if kwargs or len(args) != 2:
            raise TypeError("DaskExecutor runs process(data, ctx) jobs only")
        process, (data, ctx) = fn, args
        blob = dumps(data, self.instance)
        self.bytes_sent += len(blob)
        self.jobs += 1
        remote = self.client.submit(_run_remote, process, blob, ctx, self._ref, pure=False)
        # hold the client's future until it is done: a key whose last future is released
        # is forgotten by the scheduler, and a job on a worker that dies then comes back
        # "cancelled: already forgotten" instead of being run again elsewhere
        self._pending.add(remote)
        out: Future = Future()

        def done(f) -> None:
            self._pending.discard(f)
            if out.cancelled():
                return
            try:
                back = f.result()
                self.bytes_back += len(back)
                out.set_result(loads(back, self.instance))
            except BaseException as exc:  # noqa: B036 - hand it to the manager
                if not out.done():
                    out.set_exception(exc)

        # a cancel() of `out` (the manager stopping) leaves the remote job running until it
        # sees the stop signal, which the manager sets at the same time
        remote.add_done_callback(done)
        return out

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to release: the client belongs to the caller."""
