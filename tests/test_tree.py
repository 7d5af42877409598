"""The generic branch-and-bound manager on a toy problem with a known optimum (0/1 knapsack)."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from pcsos.tree import (
    Context,
    NodeOutcome,
    WorkerPool,
    branch_and_bound,
    jobs_running,
)


def _knapsack(seed: int, n: int = 12):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 30, size=n).astype(float)
    v = rng.integers(1, 40, size=n).astype(float)
    cap = float(w.sum() // 2)
    order = np.argsort(-v / w)  # Dantzig order makes the fractional bound greedy
    return w[order], v[order], cap


def _brute(w, v, cap) -> float:
    """-(best value) over all 2^n selections, enumerated as bit patterns."""
    n = len(w)
    x = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
    ok = x @ w <= cap
    return -float((x[ok] @ v).max())


def knapsack_node(data, ctx: Context) -> NodeOutcome:
    """Minimise -value. data = (w, v, cap, fixed prefix decisions)."""
    w, v, cap, fixed = data
    i = len(fixed)
    used = float(np.dot(w[:i], fixed))
    val = float(np.dot(v[:i], fixed))
    if used > cap:
        return NodeOutcome(bound=math.inf)
    # fractional (Dantzig) bound and the greedy completion as a feasible solution
    room, frac, greedy, x = cap - used, val, val, list(fixed)
    for t in range(i, len(w)):
        take = w[t] <= room
        x.append(int(take))
        if take:
            room -= w[t]
            frac += v[t]
            greedy += v[t]
    room2 = cap - used
    bound = val
    for t in range(i, len(w)):
        if w[t] <= room2:
            room2 -= w[t]
            bound += v[t]
        else:
            bound += v[t] * room2 / w[t]
            break
    if i == len(w):
        return NodeOutcome(bound=-val, objective=-val, solution=tuple(fixed))
    children = [((w, v, cap, fixed + (1,)), -bound), ((w, v, cap, fixed + (0,)), -bound)]
    return NodeOutcome(bound=-bound, objective=-greedy, solution=tuple(x), children=children,
                       row={"depth": i})


@pytest.mark.parametrize("order", ["best", "depth", "breadth"])
@pytest.mark.parametrize("seed", range(6))
def test_knapsack_optimum_all_orders(order, seed):
    w, v, cap = _knapsack(seed)
    res = branch_and_bound(knapsack_node, (w, v, cap, ()), order=order, tol=0.0, workers=2)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(_brute(w, v, cap))
    assert float(np.dot(w, res.solution)) <= cap
    assert res.gap <= 1e-12
    assert res.nodes == len(res.log) >= 1


def test_best_first_visits_fewest_nodes_and_logs_every_node():
    w, v, cap = _knapsack(3, n=16)
    counts = {o: branch_and_bound(knapsack_node, (w, v, cap, ()), order=o, tol=0.0).nodes
              for o in ("best", "depth", "breadth")}
    assert counts["best"] <= counts["breadth"]
    res = branch_and_bound(knapsack_node, (w, v, cap, ()), tol=0.0)
    assert [e.node_id for e in res.log][0] == 0 and res.log[0].parent_id == -1
    # best-first with a single worker processes nodes in non-decreasing bound order
    bounds = [e.parent_bound for e in res.log[1:]]
    assert all(b2 >= b1 - 1e-9 for b1, b2 in zip(bounds, bounds[1:]))


def test_process_pool_gives_the_same_optimum():
    w, v, cap = _knapsack(1, n=10)
    with ProcessPoolExecutor(2) as ex:
        res = branch_and_bound(knapsack_node, (w, v, cap, ()), executor=ex, workers=2, tol=0.0)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(_brute(w, v, cap))


def test_thread_pool_executor_can_be_passed():
    w, v, cap = _knapsack(2, n=10)
    with ThreadPoolExecutor(3) as ex:
        res = branch_and_bound(knapsack_node, (w, v, cap, ()), executor=ex, workers=3, tol=0.0)
    assert res.objective == pytest.approx(_brute(w, v, cap))


def test_node_limit_returns_certified_gap():
    w, v, cap = _knapsack(4, n=18)
    opt = _brute(w, v, cap)
    res = branch_and_bound(knapsack_node, (w, v, cap, ()), tol=0.0, max_nodes=3,
                           order="breadth")
    assert res.status == "node_limit" and res.nodes == 3
    assert res.lower_bound <= opt + 1e-9 <= res.objective + 1e-9
    # the gap written out, not the tree's own helper
    assert res.gap == pytest.approx((res.objective - res.lower_bound) / abs(res.objective))
    assert res.open_nodes > 0


def test_tolerance_stops_early_with_gap_within_tol():
    w, v, cap = _knapsack(5, n=18)
    opt = _brute(w, v, cap)
    res = branch_and_bound(knapsack_node, (w, v, cap, ()), tol=0.05)
    assert res.status == "optimal" and res.gap <= 0.05
    # a solution within the tolerance of the optimum, and a bound that never exceeds it
    assert opt <= res.objective <= opt + 0.05 * abs(res.objective) + 1e-12
    assert res.lower_bound <= opt + 1e-9


def test_infeasible_when_root_is_infeasible():
    res = branch_and_bound(lambda d, c: NodeOutcome(bound=math.inf), None)
    assert res.status == "infeasible" and res.solution is None and res.gap == math.inf


def _slow_node(data, ctx: Context) -> NodeOutcome:
    # an endless tree whose jobs honour the cancellation within ~10 ms
    depth = data
    t = time.time()
    while time.time() - t < 0.05:
        if ctx.cancelled():
            break
        time.sleep(0.01)
    return NodeOutcome(bound=float(depth), objective=100.0 - depth, solution=depth,
                       children=[(depth + 1, float(depth)), (depth + 1, float(depth))])


def test_time_limit_returns_best_solution_quickly():
    t = time.time()
    res = branch_and_bound(_slow_node, 0, workers=2, time_limit=0.5)
    # hang guard: the tree is endless, so only the limit ends it (60 s of slack for a loaded
    # machine; the limit is 0.5 s)
    assert time.time() - t < 60.0
    assert res.status == "time_limit" and res.solution is not None
    assert res.lower_bound <= res.objective and res.gap > 0


def test_stop_event_interrupts():
    ev = threading.Event()
    threading.Timer(0.3, ev.set).start()
    res = branch_and_bound(_slow_node, 0, workers=2, stop_event=ev)
    assert res.status == "interrupted" and res.solution is not None


def test_keyboard_interrupt_in_callback_is_an_interrupt():
    calls = []

    def cb(ev):
        calls.append(ev)
        if len(calls) == 3:
            raise KeyboardInterrupt

    res = branch_and_bound(_slow_node, 0, callback=cb)
    assert res.status == "interrupted" and len(calls) == 3


def test_context_pickles_a_snapshot():
    import pickle

    ev = threading.Event()
    ctx = Context(5.0, None, {"a": 1}, ev)
    ev.set()
    ctx2 = pickle.loads(pickle.dumps(ctx))
    assert ctx2.incumbent == 5.0 and ctx2.options == {"a": 1} and not ctx2.cancelled()
    assert ctx.cancelled()


def test_worker_pool_runs_and_shuts_down():
    pool = WorkerPool(2)
    futs = [pool.submit(pow, 2, i) for i in range(5)]
    assert [f.result() for f in futs] == [1, 2, 4, 8, 16]
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(pow, 2, 2)


def test_bad_arguments():
    with pytest.raises(ValueError):
        branch_and_bound(knapsack_node, None, order="random")
    with pytest.raises(ValueError):
        branch_and_bound(knapsack_node, None, max_nodes=0)


def _late_leaf(data, ctx: Context) -> NodeOutcome:
    while not ctx.cancelled():  # runs past the deadline, then closes the whole tree
        time.sleep(0.01)
    return NodeOutcome(bound=1.0, objective=1.0, solution="leaf")


def test_a_tree_closed_at_the_deadline_is_optimal():
    res = branch_and_bound(_late_leaf, None, time_limit=0.3)
    assert res.status == "optimal" and res.solution == "leaf" and res.gap == 0.0



def test_a_node_stopped_early_leaves_the_stop_status():
    # the job sees the stop and hands in an unfinished node before the manager looks: the
    # queue is then empty, yet the tree is not closed
    stop = threading.Event()

    def stopped_leaf(data, ctx: Context) -> NodeOutcome:
        stop.set()
        return NodeOutcome(bound=0.5, objective=1.0, solution="leaf")

    res = branch_and_bound(stopped_leaf, None, stop_event=stop)
    assert res.status == "interrupted" and res.solution == "leaf"
    assert res.lower_bound == 0.5 and res.gap == pytest.approx(0.5)


def test_a_job_abandoned_at_the_stop_keeps_the_bound_it_reported():
    # the root proves bounds on its way (3, then nothing valid, then a weaker 2), then is
    # still busy when the search stops and the grace runs out: the result and the
    # checkpoint carry 3, not the root's bound at submission (before the fix: -inf, 0 for a
    # clustering), and nothing below it
    stop, release = threading.Event(), threading.Event()
    saved = []

    def busy_root(data, ctx: Context) -> NodeOutcome:
        ctx.offer(5.0, "incumbent")
        for b in (3.0, math.nan, 2.0):
            ctx.report("bound", bound=b)
        stop.set()
        release.wait(600)  # busy past the grace (a hang guard, never reached)
        return NodeOutcome(bound=4.0, objective=5.0, solution="late")

    try:
        res = branch_and_bound(busy_root, None, stop_event=stop, grace=0.05,
                               checkpoint=saved.append)
    finally:
        release.set()
    assert res.status == "interrupted" and res.objective == 5.0
    assert res.lower_bound == 3.0
    assert [row[3] for row in saved[-1].open] == [3.0]


def test_jobs_running_while_a_worker_thread_runs_a_job(monkeypatch):
    """What the CLI and the benchmarks' children ask before exiting: a stop can leave a job
    running in a worker thread, and finalising the interpreter under it can abort. An idle
    worker thread is no such job."""
    import pcsos.tree

    # this test's threads only: other tests' pools may still be winding down
    monkeypatch.setattr(pcsos.tree, "WORKER_PREFIX", "pcsos-worker-jobs-running-test-")

    def settled(want: bool) -> bool:
        # a job's end wakes its future a moment before its thread is recorded idle
        deadline = time.monotonic() + 30
        while jobs_running() != want and time.monotonic() < deadline:
            time.sleep(0.01)
        return jobs_running() == want

    assert not jobs_running()
    started, release = threading.Event(), threading.Event()

    def job():
        started.set()
        return release.wait(30)

    pool = WorkerPool(1)
    assert pool.submit(lambda: None).result(timeout=30) is None
    assert settled(False)  # its thread lives on, waiting for work
    fut = pool.submit(job)
    assert started.wait(30)
    assert jobs_running()
    pool.shutdown(wait=False)  # as a stopped search does: the job goes on
    assert jobs_running()
    release.set()
    assert fut.result(timeout=30) is True
    assert settled(False)
    pool.shutdown(wait=True)
    assert not jobs_running()
