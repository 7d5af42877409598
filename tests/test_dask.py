"""The tree on a Dask LocalCluster of worker processes: the same answer as the thread
pool, a stop within seconds, and no node lost when a worker dies."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from subproc import wait_for_rows

import pcsos

distributed = pytest.importorskip("distributed", reason="dask.distributed not installed "
                                  "(pip install 'pcsos[dask]')")

ROOT = pathlib.Path(__file__).resolve().parents[1]
BRANCHY = dict(tol=1e-6, root_heuristic=None, cp_settings={"families": "none"},
               bound_settings={"tol": 1e-3})


@pytest.fixture(scope="module")
def client():
    # connect's cluster takes a free HTTP port: each of the suite's worker processes starts
    # one, and a fixed port (dashboard_address=None takes 8787) warned in the second
    from pcsos.distributed import close, connect

    c, own = connect("local:2")
    yield c
    close(c, own)


def _uniform(n, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, 2))


def test_same_answer_as_the_thread_pool(client):
    X = _uniform(30)
    local = pcsos.solve(X, 3, workers=2, **BRANCHY)
    remote = pcsos.solve(X, 3, dask=client, **BRANCHY)
    assert local.status == remote.status == "optimal" and remote.nodes > 5
    assert remote.objective == pytest.approx(local.objective, rel=1e-9)
    assert remote.lower_bound <= local.objective * (1 + 1e-9)


def test_a_stop_reaches_remote_nodes_within_seconds(client):
    X = _uniform(90, seed=2)  # each node takes seconds: a stop must cut them short
    stop = threading.Event()
    stopped_at = []

    def on_row(row):
        # the first child has finished: its siblings are running on the workers now
        if row.get("node", 0) >= 1 and not stop.is_set():
            stopped_at.append(time.monotonic())
            stop.set()

    res = pcsos.solve(X, 6, dask=client, stop_event=stop, tol=1e-9, root_heuristic=None,
                      callback=on_row)
    took = time.monotonic() - stopped_at[0]
    assert res.status == "interrupted"
    # generous for a loaded machine; a stop that did not reach the workers would wait for
    # every running node's whole cutting-plane loop
    assert took < 30.0
    assert res.labels is not None and res.lower_bound <= res.objective


def test_a_worker_that_dies_loses_no_node(client):
    X = _uniform(36, seed=3)
    ref = pcsos.solve(X, 3, workers=2, **BRANCHY)
    assert ref.nodes > 5
    pids = list(client.run(os.getpid).values())
    killed = []

    def on_row(row):
        # mid-tree by construction: the root has branched and more nodes are to come
        if row.get("node", 0) >= 1 and not killed:
            killed.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

    res = pcsos.solve(X, 3, dask=client, callback=on_row, **BRANCHY)
    assert killed
    assert res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    client.wait_for_workers(2, timeout=600)  # the nanny restarts it for the next test


def test_cli_dask_and_sigint(tmp_path):
    X = _uniform(90, seed=2)
    data = tmp_path / "u.txt"
    data.write_text("90 2\n" + "".join(f"{a!r} {b!r}\n" for a, b in X.tolist()))
    js, log = tmp_path / "r.json", tmp_path / "g.log"
    p = subprocess.Popen([sys.executable, "-m", "pcsos", "solve", str(data), "-k", "6",
                          "--dask", "local:2", "--tol", "1e-9", "--root-heuristic", "none",
                          "--json", str(js), "--log", str(log)], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        wait_for_rows(log, p, rows=2)  # the tree runs on the cluster's workers
        t_int = time.monotonic()
        # as a terminal's Ctrl-C: to the whole process group, the cluster's workers too
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the cluster's processes too
    assert time.monotonic() - t_int < 60.0  # the stop, then the cluster's shutdown
    assert p.returncode == 0, err
    assert "Traceback" not in err
    res = pcsos.Result.from_json(js)
    assert res.status == "interrupted" and res.lower_bound <= res.objective


def test_a_local_cluster_leaves_ctrl_c_to_its_manager_and_keeps_the_configured_preloads(client):
    """The workers of 'local:N' ignore SIGINT (a terminal sends it to the whole group),
    and a worker preload of the user's Dask configuration still runs beside pcsos's. Its
    HTTP server takes a free port, not the one the module's cluster (``client``) holds (no
    warning)."""
    import warnings

    import dask

    from pcsos.distributed import close, connect

    mine = "import os\nos.environ['PCSOS_TEST_PRELOAD'] = 'ran'"  # text: a preload script
    # A process that starts with SIGINT ignored (a pytest-xdist worker, a background job)
    # passes that on to the workers it spawns, and the check below could not fail: the
    # caller takes Python's own handler for the test.
    caller = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with dask.config.set({"distributed.worker.preload": [mine]}):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # "Port 8787 is already in use" among them
                client, own = connect("local:1")
        try:
            got = client.run(lambda: (signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
                                      os.environ.get("PCSOS_TEST_PRELOAD")))
            assert list(got.values()) == [(True, "ran")]
        finally:
            close(client, own)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the caller's
    finally:
        signal.signal(signal.SIGINT, caller)


def test_certify_bounds_the_subsets_on_dask(client):
    from pcsos.certification import certify

    rng = np.random.default_rng(3)
    truth = np.arange(120) % 4
    X = rng.normal(scale=0.8, size=(120, 2)) + 3.0 * truth[:, None]
    here = certify(X, 4, [(0, 4)], [(0, 1)], labels=truth, subset_size=30, workers=1)
    remote = certify(X, 4, [(0, 4)], [(0, 1)], labels=truth, subset_size=30, dask=client)
    # the cluster's 2 threads: 4 subsets, as in this thread, each bounded alike
    assert len(remote.subsets) == len(here.subsets) == 4
    assert [b.lower_bound for b in remote.subsets] == pytest.approx(
        [b.lower_bound for b in here.subsets], rel=1e-9)
    assert remote.lower_bound == pytest.approx(here.lower_bound, rel=1e-9)


def test_the_instance_enters_the_graph_without_a_large_graph_warning(client):
    import warnings

    import dask

    from pcsos.distributed import DaskExecutor
    from pcsos.problem import Instance

    inst = Instance(_uniform(200), 3, np.empty((0, 2), int), np.empty((0, 2), int))
    # a threshold below the instance's size stands for a large instance
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1kB"}):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ex = DaskExecutor(client, inst)
            assert ex._ref.result() is not None
            # the same data warns here: the executor left the threshold as it found it
            client.submit(len, inst.X, pure=False).result()
    large = [w for w in seen if "large graph" in str(w.message)]
    assert len(large) == 1
