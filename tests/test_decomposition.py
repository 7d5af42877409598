"""The decomposition bound (``pcsos certify``): never above the optimum, on tiny instances
checked by brute force, with must-link groups, cannot-link pairs and subsets of fewer than
k + 1 groups."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from bruteforce import brute_force

import pcsos
from pcsos.certification import certify
from pcsos.cuts.loop import CuttingPlaneSettings
from pcsos.decomposition import (
    decomposition_bound,
    largest_subset_size,
    partition,
    spectral_floor,
    subset_count,
    subset_settings,
    subset_size_for,
)
from pcsos.errors import InputError
from pcsos.heuristics import run_heuristic
from pcsos.problem import Problem, make_instance, pairs_satisfied, sse

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _random_case(rng, n, k):
    truth = rng.integers(0, k, n)
    X = rng.normal(size=(n, 2)) + 2.0 * truth[:, None]
    ml, cl = [], []
    for _ in range(int(rng.integers(0, 4))):
        i, j = map(int, rng.choice(n, 2, replace=False))
        (ml if truth[i] == truth[j] else cl).append((i, j))
    for _ in range(int(rng.integers(0, 4))):
        i, j = map(int, rng.choice(n, 2, replace=False))
        if truth[i] != truth[j]:
            cl.append((i, j))
    return X, ml, cl


def _random_subsets(rng, inst, T):
    """T subsets at random, each must-link group kept whole (some may be tiny)."""
    groups = Problem.from_instance(inst, infer_k2=False).point_labels
    sub_of_group = rng.integers(0, T, groups.max() + 1)
    pts = sub_of_group[groups]
    return [np.flatnonzero(pts == t) for t in range(T) if np.any(pts == t)]


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_never_exceeds_the_optimum(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 10)), int(rng.integers(2, 4))
    X, ml, cl = _random_case(rng, n, k)
    opt, _ = brute_force(X, k, ml, cl)
    if not np.isfinite(opt):
        pytest.skip("infeasible draw")
    inst = make_instance(X, k, ml, cl)
    floor = spectral_floor(Problem.from_instance(inst))
    assert floor <= opt * (1 + 1e-9) + 1e-12
    for T in (1, 2, 3):
        subsets = _random_subsets(rng, inst, T)
        lb, parts = decomposition_bound(inst, subsets, workers=1)
        assert lb <= opt * (1 + 1e-7) + 1e-12, (T, lb, opt, [p.method for p in parts])
        assert {p.method for p in parts} <= {"groups", "sdp", "spectral"}


def test_small_subsets_are_bounded_exactly_by_their_groups():
    # two subsets with at most k groups each: each bound is its groups' own scatter
    X = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [22.0]])
    inst = make_instance(X, 3, [(0, 1), (2, 3), (4, 5)], [])
    lb, parts = decomposition_bound(inst, [np.array([0, 1, 2, 3]), np.array([4, 5])],
                                    workers=1)
    assert [p.method for p in parts] == ["groups", "groups"]
    assert lb == pytest.approx(0.5 + 0.5 + 2.0)  # = the optimum here
    assert lb == pytest.approx(brute_force(X, 3, [(0, 1), (2, 3), (4, 5)])[0])


def test_partition_keeps_groups_and_sizes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    ml = [(2 * i, 2 * i + 1) for i in range(30)]
    inst = make_instance(X, 4, ml, [(100, 101)])
    from pcsos.heuristics import run_heuristic

    labels = run_heuristic("cop-kmeans", Problem.from_instance(inst), seed=0).labels
    subsets = partition(inst, labels, 50)
    assert sorted(np.concatenate(subsets).tolist()) == list(range(200))
    owner = np.empty(200, dtype=int)
    for t, s in enumerate(subsets):
        owner[s] = t
    assert all(owner[i] == owner[j] for i, j in ml)
    assert len(subsets) == 4 and max(len(s) for s in subsets) <= 51
    # every subset gets a share of every cluster
    for s in subsets:
        assert len(set(labels[s].tolist())) == 4


def test_partition_keeps_small_cannot_link_components_whole():
    """A cannot-link component of at most size / BLOCK_SHARE points (with its must-link
    groups) lies inside one subset, so its pairs bind that subset's optimum; a larger one
    may be split. Subset sizes stay within the size asked, and the swaps move no point of a
    block (both with and without them)."""
    from pcsos.decomposition import BLOCK_SHARE

    rng = np.random.default_rng(5)
    n, size = 600, 100
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 2)) + 4.0 * y[:, None]
    perm = rng.permutation(n)
    # components: 40 cannot-link pairs, 10 paths of 3 with a must-link pair hanging on the
    # middle point, and one path of 3 * size / BLOCK_SHARE points, over the limit
    cl = [(perm[2 * i], perm[2 * i + 1]) for i in range(40)]
    ml = []
    for j in range(10):
        a, b, c, d = perm[80 + 4 * j: 84 + 4 * j]
        cl += [(a, b), (b, c)]
        ml.append((b, d))
    chain = perm[120: 120 + 3 * size // BLOCK_SHARE]
    cl += list(zip(chain[:-1], chain[1:], strict=True))
    inst = make_instance(X, 3, ml, cl)
    from pcsos.heuristics import run_heuristic

    labels = run_heuristic("cop-kmeans", Problem.from_instance(inst), seed=0).labels
    small = cl[:60]  # the pairs of the components under the limit
    for sweeps in (0, 3):
        subsets = partition(inst, labels, size, sweeps=sweeps)
        assert sorted(np.concatenate(subsets).tolist()) == list(range(n))
        owner = np.empty(n, dtype=int)
        for t, sub in enumerate(subsets):
            owner[sub] = t
        assert all(owner[i] == owner[j] for i, j in small + ml)
        assert max(len(sub) for sub in subsets) <= size
    # the long path is not kept whole: its pairs between subsets are dropped, as before
    assert len(set(owner[chain].tolist())) > 1


def test_balancing_swaps_keep_sizes_and_raise_the_ceiling():
    """The swaps move each subset's share of a cluster towards the cluster's mean: the
    reference clustering restricted to the subsets keeps more of its SSE (the most the
    bound can reach), with the same subset sizes and every group whole."""
    rng = np.random.default_rng(3)
    centres = rng.uniform(-40, 40, size=(6, 2))
    y = np.arange(600) % 6
    X = centres[y] + rng.normal(scale=10, size=(600, 2))
    ml = [(i, i + 6) for i in range(0, 120, 12)]
    inst = make_instance(X, 6, ml, [(0, 1)])
    before = partition(inst, y, 100, sweeps=0)
    after = partition(inst, y, 100)
    assert sorted(len(s) for s in before) == sorted(len(s) for s in after)
    owner = np.empty(600, dtype=int)
    for t, s in enumerate(after):
        owner[s] = t
    assert all(owner[i] == owner[j] for i, j in ml)
    total = sse(X, y)
    lost_before = total - sum(sse(X[s], y[s]) for s in before)
    lost_after = total - sum(sse(X[s], y[s]) for s in after)
    assert lost_before > 0.03 * total  # about k / size = 6 % without the swaps
    assert lost_after < 0.1 * lost_before


def _four_clusters():
    rng = np.random.default_rng(3)
    truth = np.arange(120) % 4
    X = rng.normal(scale=0.8, size=(120, 2)) + 3.0 * truth[:, None]
    inst = make_instance(X, 4, [(0, 4), (1, 5)], [(0, 1), (2, 3)])
    return inst, truth, partition(inst, truth, 30)


def test_processes_threads_and_this_thread_give_the_same_bounds():
    inst, truth, subsets = _four_clusters()
    here, parts = decomposition_bound(inst, subsets, workers=1, labels=truth)
    assert len(parts) == 4 and {b.method for b in parts} == {"sdp"}
    procs, pparts = decomposition_bound(inst, subsets, workers=2, labels=truth)
    with ThreadPoolExecutor(2) as pool:
        threads, tparts = decomposition_bound(inst, subsets, workers=2, executor=pool,
                                              labels=truth)
    # each subset's loop is deterministic given its seed: the pools change where it runs only
    for other in (pparts, tparts):
        assert [b.lower_bound for b in other] == pytest.approx(
            [b.lower_bound for b in parts], rel=1e-9)
        assert [b.points.tolist() for b in other] == [b.points.tolist() for b in parts]
    assert procs == pytest.approx(here, rel=1e-9) and threads == pytest.approx(here, rel=1e-9)


def test_each_subset_starts_with_its_share_of_the_core_seconds():
    inst, truth, subsets = _four_clusters()
    shares = []

    class Recording(ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            shares.append(args[3].limit)  # _bound_subset's time_limit: a Deadline
            return super().submit(fn, *args, **kwargs)

    with Recording(2) as pool:
        decomposition_bound(inst, subsets, workers=2, executor=pool, time_limit=40,
                            labels=truth)
    # 2 workers x 40 s over 4 subsets: the first two start with 20 s each; those that end
    # early leave their time to the later ones, never past the limit
    assert shares[:2] == pytest.approx([20.0, 20.0], abs=0.5)
    assert len(shares) == 4 and all(0 < s <= 40 for s in shares)


# a certify whose two subsets take minutes each; says when it starts bounding them, and
# prints how long it ran if interrupted
_LONG_CERTIFY = """
import signal, time
import numpy as np
from pcsos.certification import certify
def said(stage, done, total, bound):
    if stage == "clustering":
        print("bounding", flush=True)
if __name__ == "__main__":
    # Python leaves SIGINT ignored when it starts so (a background job of a shell script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    truth = np.arange(1600) % 8
    X = np.random.default_rng(3).normal(scale=2, size=(1600, 2)) + 3.0 * truth[:, None]
    t0 = time.perf_counter()
    try:
        certify(X, 8, labels=truth, subset_size=400, workers=2, progress=said)
    except KeyboardInterrupt:
        print(time.perf_counter() - t0, flush=True)
"""


def _pool_processes(psutil, pid):
    """The forkserver started by process ``pid`` and its children (the pool's workers)."""
    servers, workers = [], []
    for child in psutil.Process(pid).children():
        try:
            if "forkserver" in " ".join(child.cmdline()):
                servers.append(child)
                workers.extend(child.children())
        except psutil.Error:
            pass
    return servers, workers


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGKILL"])
def test_the_workers_end_when_their_caller_is_stopped(signal_name, tmp_path):
    # SIGINT: the caller cancels the pool and ends its workers at once; SIGKILL: the caller
    # can clean up nothing, and each worker sees it gone within about a second
    psutil = pytest.importorskip("psutil", reason="psutil not installed")
    import signal

    # a file, not a pipe: the forkserver inherits the caller's stdout and outlives it
    said = tmp_path / "stdout"
    with open(said, "w") as fh:
        p = subprocess.Popen([sys.executable, "-c", _LONG_CERTIFY], cwd=ROOT, stdout=fh)
    servers, workers = [], []
    try:
        # the subsets were handed to the pool (minutes each) once it says so and both
        # workers exist: polled, not waited for a guessed time
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and p.poll() is None and not (
                len(workers) == 2 and "bounding" in said.read_text()):
            time.sleep(0.05)
            servers, workers = _pool_processes(psutil, p.pid)
        assert len(workers) == 2 and "bounding" in said.read_text()
        p.send_signal(getattr(signal, signal_name))
        p.wait(timeout=300)
        out = said.read_text()
        if signal_name == "SIGINT":
            # taken at once, not after the subsets, and the script ended normally
            assert p.returncode == 0 and float(out.split()[-1]) < 120, out
        _, alive = psutil.wait_procs(workers, timeout=60)
        assert alive == []
    finally:
        p.kill()
        for proc in servers + workers:  # no orphan left to take the CPU if this fails
            try:
                proc.kill()
            except psutil.Error:
                pass


def test_bad_subsets_are_refused():
    X = np.arange(6.0)[:, None]
    inst = make_instance(X, 2, [(0, 5)], [])
    with pytest.raises(InputError, match="exactly once"):
        decomposition_bound(inst, [np.array([0, 1, 2])])
    with pytest.raises(InputError, match="must-link pair is split"):
        decomposition_bound(inst, [np.array([0, 1, 2]), np.array([3, 4, 5])])
    with pytest.raises(InputError, match="exactly once"):  # a point twice in one subset
        decomposition_bound(inst, [np.array([0, 0, 1, 2, 3, 4, 5])])
    with pytest.raises(InputError, match="outside 0..5"):
        decomposition_bound(inst, [np.array([0, 1, 2, 3, 4, 5, -1])])


def test_certify_against_the_exact_optimum():
    rng = np.random.default_rng(3)
    truth = np.arange(60) % 3
    X = rng.normal(scale=0.6, size=(60, 2)) + 3.0 * truth[:, None]
    ml = [(0, 3), (1, 4), (2, 5)]
    cl = [(0, 1), (1, 2), (6, 7)]
    exact = pcsos.solve(X, 3, ml, cl, workers=1)
    res = certify(X, 3, ml, cl, subset_size=20, workers=1)
    assert res.lower_bound <= exact.objective * (1 + 1e-9)
    assert sum(b.lower_bound for b in res.subsets) > res.spectral_floor  # the SDPs pay
    assert res.objective >= exact.objective * (1 - 1e-9)
    assert pairs_satisfied(res.labels, np.array(ml), np.array(cl))
    assert res.gap == pytest.approx((res.objective - res.lower_bound) / res.objective)
    assert len(res.subsets) == 3 and res.heuristic == "s-mdeclust"
    # stratified subsets of well-separated clusters: the bound is within a few percent
    assert res.gap < 0.1


def test_certify_takes_larger_subsets_when_the_time_allows(monkeypatch):
    """certify asks subset_size_for with the time left: 1 000 points, k = 10, one worker:
    2 subsets of 500 points need 75 s each, which 1 400 s give and 140 s do not."""
    import pcsos.certification as cert

    sizes = []

    def record(instance, subsets, **kw):
        sizes.append(sorted(len(s) for s in subsets))
        return 0.0, []

    monkeypatch.setattr(cert, "decomposition_bound", record)
    X = np.random.default_rng(5).normal(size=(1000, 2))
    labels = np.arange(1000) % 10
    assert cert.certify(X, 10, labels=labels, workers=1, time_limit=1400).subset_size == 500
    assert cert.certify(X, 10, labels=labels, workers=1, time_limit=140).subset_size == 250
    assert sizes == [[500, 500], [250] * 4]


def test_largest_subset_size_is_the_largest_that_fits():
    # n = 2 000 in 725 s on one core: 3 subsets of 700 need 3 * 600 * 0.7^3 = 617 s, of
    # 750 (still 3) 759 s
    assert largest_subset_size(2000, 725.0) == 700
    assert largest_subset_size(2000, 617.4) == 700
    assert largest_subset_size(2000, 617.3) == 600  # 650 makes 4 subsets: 659 s
    assert largest_subset_size(2000, 1200.0) == 1000  # 2 subsets of 1 000
    assert largest_subset_size(2000, 1e9, hi=800) == 800
    assert largest_subset_size(2000, 10.0) is None  # not even 300 fits
    assert largest_subset_size(2000, 725.0, lo=800) is None
    assert largest_subset_size(2000, float("inf")) is None  # no time limit: no size by time
    for n, t, w in [(2000, 300.0, 1), (10000, 3000.0, 2), (5000, 400.0, 2)]:
        size = largest_subset_size(n, t, w)
        need = subset_count(n, size, w) / w * 600 * (size / 1000) ** 3
        assert need <= t and subset_count(n, size + 50, w) / w * 600 * (
            (size + 50) / 1000) ** 3 > t


def test_certify_tries_larger_subsets_when_its_first_pass_leaves_a_gap(monkeypatch):
    """With the default size and a time limit, a first pass that leaves a gap gets a second
    on the largest subsets the time left affords, the first pass leaving it half the time
    when those could fit; the better pass is kept. No second pass without a time limit,
    with a size given, or once the gap is closed."""
    import pcsos.certification as cert
    from pcsos.problem import sse

    X = np.random.default_rng(5).normal(size=(1000, 2))
    labels = np.arange(1000) % 2
    objective = sse(X, labels)
    calls = []
    closed = {"first": False}

    def fake(instance, subsets, time_limit=None, **kw):
        size = max(len(s) for s in subsets)
        calls.append((size, time_limit.seconds()))  # the pass's Deadline, in seconds left
        # a valid-looking bound that grows with the subsets (closed at once if asked)
        lb = objective * (1 - (1e-6 if closed["first"] else 0.1 / size))
        return lb, []

    monkeypatch.setattr(cert, "decomposition_bound", fake)
    monkeypatch.setattr(cert, "subset_size_for", lambda *a: 100)
    res = cert.certify(X, 2, labels=labels, workers=1, time_limit=1400)
    assert [size for size, _ in calls] == [100, 500]  # 2 x 500 need 2 x 75 s of 700 s
    assert calls[0][1] <= 0.5 * 1400 and calls[1][1] > calls[0][1]
    assert res.subset_size == 500 and res.message.startswith("the better of two passes")
    assert res.lower_bound == pytest.approx(objective * (1 - 0.1 / 500))
    for kwargs in ({"time_limit": None}, {"time_limit": 1400, "subset_size": 100}):
        calls.clear()
        res = cert.certify(X, 2, labels=labels, workers=1, **kwargs)
        assert [size for size, _ in calls] == [100]
        assert calls[0][1] is None or calls[0][1] > 0.5 * 1400  # the whole time left
        assert not res.message.startswith("the better")
    calls.clear()
    closed["first"] = True
    cert.certify(X, 2, labels=labels, workers=1, time_limit=1400)
    assert [size for size, _ in calls] == [100]


def test_default_subset_size_and_subset_settings():
    assert [subset_size_for(k) for k in (2, 10, 20, 30, 100)] == [300, 300, 600, 900, 1000]
    # k = 20, n = 10 000: 60 minutes on 2 workers give 10 subsets of 1 000 points 710 s
    # each, over the 600 s they need; 10 minutes on one worker give them 60 s
    assert subset_size_for(20, 10000, 3550.0, 2) == 1000
    assert subset_size_for(20, 10000, 600.0, 1) == 600
    assert subset_size_for(20, 10000, None, 2) == 600
    # at the threshold exactly, and just under it (20 000 points: 20 subsets of 1 000)
    assert subset_size_for(20, 20000, 6000.0, 2) == 1000
    assert subset_size_for(20, 20000, 5999.0, 2) == 600
    # the larger size for k = 10 is 500 points, which need 600 * 0.5^3 = 75 s each
    assert subset_size_for(10, 10000, 750.0, 1) == 300
    assert subset_size_for(10, 10000, 1500.0, 1) == 500
    assert subset_size_for(100, 10000, 1e6, 2) == 1000  # already at SUBSET_MAX
    assert [subset_count(10000, 556, 2), subset_count(10000, 600, 2),
            subset_count(10000, 600, 1), subset_count(300, 600, 2)] == [18, 18, 17, 1]
    X = np.random.default_rng(0).normal(size=(40, 2))
    res = certify(X, 2, labels=(np.arange(40) % 2), workers=1, time_limit=30)
    assert res.subset_size == 300 and len(res.subsets) == 1  # 40 points: one subset
    assert res.to_dict()["subset_size"] == 300
    # loose rounds are loosened to the subsets' tolerance; a looser one and "off" are kept
    assert subset_settings().loose_tol == 1e-2
    assert subset_settings(CuttingPlaneSettings(loose_tol=1e-3, max_rounds_root=5)) == \
        CuttingPlaneSettings(loose_tol=1e-2, max_rounds_root=5)
    assert subset_settings(CuttingPlaneSettings(loose_tol=5e-2)).loose_tol == 5e-2
    assert subset_settings(CuttingPlaneSettings(loose_tol=None)).loose_tol is None
    assert subset_settings(CuttingPlaneSettings(loose_tol=0.0)).loose_tol == 0.0
    # the tree's settings reach its root's subsets without the root's tail-off (a subset is
    # never branched on) and with its cut families
    tree = pcsos.SolverOptions().checked().cp_settings
    assert tree.tail_off_root and subset_settings(tree).tail_off_root is None
    assert subset_settings(tree).families == tree.families


def test_cli_certify_json(tmp_path):
    js = tmp_path / "c.json"
    p = subprocess.run([sys.executable, "-m", "pcsos", "certify", str(ROOT / "data" /
                        "blobs.txt"), "-c", str(ROOT / "data" / "blobs_constraints.txt"),
                        "-k", "3", "--subset-size", "30", "--workers", "2", "--json",
                        str(js)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(js.read_text())
    # 75 points in subsets of at most 30 take 3, rounded up to 4 for the 2 worker processes
    assert out["lower_bound"] <= out["objective"] and len(out["subsets"]) == 4
    assert out["status"] == "done" and out["interrupted"] is False
    assert max(len(s["points"]) for s in out["subsets"]) <= 30
    assert sorted(sum((s["points"] for s in out["subsets"]), [])) == list(range(75))
    assert "lower bound" in p.stdout and "gap" in p.stdout


def _blobs(n_per, centres, scale, seed):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, scale, size=(n_per, 2)) for c in centres])


def _large_root(monkeypatch, subset: int, per_cluster: int, bound_all: bool = False):
    """A root of 50 points or more is bounded by its decomposition first, on subsets of at
    most ``subset`` points with at least ``per_cluster`` points per cluster; ``bound_all``:
    the ceiling test never skips a pass."""
    import pcsos.node

    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_FIRST_SIZE", 50)
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_SUBSET", subset)
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_FIRST_PER_CLUSTER", per_cluster)
    if bound_all:
        monkeypatch.setattr(pcsos.node, "_decomposition_ceiling", lambda *a: float("inf"))


def test_a_large_root_closed_by_its_decomposition_skips_its_sdp(monkeypatch):
    """Well-separated blobs: the subsets' bounds add up to a closed root, so the root's
    own SDP never runs; the optimum is the one the SDP path finds."""
    import pcsos.node

    X = _blobs(30, [(0, 0), (20, 0), (0, 20)], 1.0, 0)
    ref = pcsos.solve(X, 3, workers=1, seed=0)
    _large_root(monkeypatch, 30, 10)
    res = pcsos.solve(X, 3, workers=1, seed=0)
    root = res.log[0]
    assert res.status == "optimal" and res.nodes == 1
    assert root["decomposition_subsets"] >= 3 and "sdp_iterations" not in root
    assert "decomposition bound" in res.message
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert res.lower_bound <= res.objective


def test_a_large_root_whose_decomposition_falls_short_runs_its_sdp(monkeypatch):
    """Overlapping points in subsets of 10: the decomposition bound is weak, the SDP runs,
    and the root's bound is the SDP's (above the decomposition's, which the max keeps)."""
    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    # the ceiling test would skip these subsets (below); here they are bounded anyway
    _large_root(monkeypatch, 10, 3, bound_all=True)
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1,
                      cp_settings={"max_rounds_root": 1})
    root = res.log[0]
    assert root["sdp_iterations"] > 0 and root["decomposition_subsets"] >= 6
    assert root["lb"] == max(root["sdp_bound"], root["decomposition_bound"])
    assert root["sdp_bound"] > root["decomposition_bound"]
    assert root["decomposition_bound"] < res.objective * (1 - 1e-3)
    assert "decomposition bound" not in res.message


def test_a_large_root_reports_its_decomposition_bound_as_proved(monkeypatch):
    """The decomposition bound is handed to the tree as proved the moment it exists: a
    root abandoned mid-SDP at the stop keeps it, where its rounds report only their own,
    lower bounds."""
    import pcsos.node
    import pcsos.tree

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3, bound_all=True)
    calls = []
    report = pcsos.tree.Context.report

    def spy(self, stage, **info):
        calls.append((self.node_id, stage, info.get("bound")))
        return report(self, stage, **info)

    monkeypatch.setattr(pcsos.tree.Context, "report", spy)
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1,
                      cp_settings={"max_rounds_root": 1})
    root = res.log[0]
    proved = [b for node, stage, b in calls if node == 0 and stage == "decomposition bound"
              and b is not None]
    assert proved == [root["decomposition_bound"]]


def test_a_large_root_tries_larger_subsets_when_the_first_pass_does_not_prune(monkeypatch):
    """A first pass on small subsets that does not prune is followed, under a time limit, by
    one on the largest subsets the time left affords (here half the points each), whose
    bound the root keeps when it is higher; without a time limit there is no second pass
    (its size cannot be chosen by time)."""
    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3, bound_all=True)
    passes = []
    run = pcsos.node._decomposition

    def spy(problem, labels, ctx, options, share=1.0, subsets=None):
        out = run(problem, labels, ctx, options, share=share, subsets=subsets)
        passes.append((share, out["decomposition_size"], out["decomposition_bound"]))
        return out

    monkeypatch.setattr(pcsos.node, "_decomposition", spy)
    # one SDP round: the passes are the subject, and they come before it
    one = {"max_rounds_root": 1}
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1, time_limit=600, cp_settings=one)
    root = res.log[0]
    assert [(sh, size) for sh, size, _ in passes] == [
        (pcsos.node.DECOMPOSITION_FIRST_SHARE, 10), (pcsos.node.DECOMPOSITION_SECOND_SHARE, 30)]
    assert passes[1][2] > passes[0][2]  # 2 subsets of 30 keep more than 6 of 10
    assert root["decomposition_size"] == 30
    assert root["decomposition_bound"] == passes[1][2] <= root["lb"] <= res.objective
    passes.clear()
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1, cp_settings=one)
    assert [size for _, size, _ in passes] == [10] and res.log[0]["decomposition_size"] == 10


def test_a_root_whose_passes_leave_its_sdp_too_little_time_does_not_start_it(monkeypatch):
    """After the decomposition passes, a root whose SDP no longer fits the time left is
    closed as too large, with the passes' bound, and the result says why."""
    import pcsos.clock
    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3, bound_all=True)
    monkeypatch.setattr(pcsos.node, "sdp_seconds", lambda s: 10.0)
    left = {"s": 1000.0, "passes": 0}  # the time left as the node sees it
    # the time left as every Deadline reports it (the instants stay real)
    monkeypatch.setattr(pcsos.clock.Deadline, "remaining", lambda self: left["s"])
    run = pcsos.node._decomposition

    def spy(*args, **kwargs):
        out = run(*args, **kwargs)
        left["passes"] += 1
        if left["passes"] == 2:
            left["s"] = 5.0  # under the SDP's 10 s
        return out

    monkeypatch.setattr(pcsos.node, "_decomposition", spy)
    res = pcsos.solve(X, 3, workers=1, seed=0, time_limit=600)
    root = res.log[0]
    assert left["passes"] == 2 and "sdp_iterations" not in root
    assert root["closed"] == "sdp_too_large" and root["sdp_estimate"] == 10.0
    assert root["decomposition_size"] == 30 and root["lb"] == root["decomposition_bound"]
    assert res.status == "time_limit" and "was not started" in res.message
    assert "decomposition bound: 2 subsets" in res.message


def test_the_second_pass_leaves_the_sdp_its_estimated_time(monkeypatch):
    """The second pass takes at most what the time left less the SDP's estimate allows."""
    import pcsos.clock
    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3, bound_all=True)
    monkeypatch.setattr(pcsos.node, "sdp_seconds", lambda s: 700.0)
    monkeypatch.setattr(pcsos.clock.Deadline, "remaining", lambda self: 1000.0)
    shares = []
    run = pcsos.node._decomposition

    def spy(*args, share=1.0, **kwargs):
        shares.append(share)
        return run(*args, share=share, **kwargs)

    monkeypatch.setattr(pcsos.node, "_decomposition", spy)
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1, time_limit=600,
                      cp_settings={"max_rounds_root": 1})
    assert shares == [pcsos.node.DECOMPOSITION_FIRST_SHARE, pytest.approx(0.3)]
    assert res.log[0]["sdp_iterations"] > 0  # the SDP ran after both


def _stopped_after_decomposition(monkeypatch, hand_back: bool):
    """A root bounded by its decomposition whose SDP loop is stopped at once by an
    interrupt: the loop hands the node back (``hand_back``) or outlives the tree's grace
    period (the job is abandoned)."""
    import threading
    import types

    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3, bound_all=True)
    stop, released = threading.Event(), threading.Event()

    def loop(*args, **kwargs):
        stop.set()
        if not hand_back:
            # held past branch_and_bound's 1 s grace, until the solve has returned: the job
            # is abandoned (60 s: a hang guard)
            released.wait(60)
        t0 = time.perf_counter()  # the tree's cancellation follows the stop event's
        while not kwargs["time_limit"].expired() and time.perf_counter() - t0 < 30:
            time.sleep(0.01)
        return types.SimpleNamespace(lower_bound=0.0, sdp=None, rounds=[], flag=0, cuts=None,
                                     iterations=0, avg_added={})

    monkeypatch.setattr(pcsos.node, "cutting_plane_loop", loop)
    try:
        return pcsos.solve(X, 3, workers=1, seed=0, stop_event=stop)
    finally:
        released.set()


@pytest.mark.parametrize("hand_back", [True, False])
def test_a_root_stopped_after_its_decomposition_says_its_bound_is_that(monkeypatch,
                                                                       hand_back):
    """The result of a root stopped mid-SDP keeps the decomposition's bound and says so,
    whether the job handed the node back or was abandoned (no log row either way)."""
    res = _stopped_after_decomposition(monkeypatch, hand_back)
    assert res.status == "interrupted" and res.log == []
    assert 0 < res.lower_bound < res.objective
    assert "before the root node finished" in res.message
    assert "the lower bound is a decomposition bound" in res.message
    assert "subsets of the data" in res.message and "None subsets" not in res.message


def test_a_large_root_skips_a_decomposition_that_cannot_prune(monkeypatch):
    """The subsets' restrictions of the clustering cap what their bounds can add up to; when
    that ceiling misses what prunes the root, no subset is bounded and the SDP runs."""
    import pcsos.node

    X = _blobs(20, [(0, 0), (1, 0), (0, 1)], 1.0, 1)
    _large_root(monkeypatch, 10, 3)
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1,
                      cp_settings={"max_rounds_root": 1})
    root = res.log[0]
    assert "decomposition_subsets" not in root and root["sdp_iterations"] > 0
    assert root["decomposition_ceiling"] < res.objective * (1 - 1e-4)
    assert root["lb"] == root["sdp_bound"]


def test_a_large_root_skips_a_decomposition_with_few_points_per_cluster(monkeypatch):
    """Subsets with fewer than DECOMPOSITION_FIRST_PER_CLUSTER points per cluster cannot
    prune the root (their own optima fall short of their shares): no subset is bounded,
    the row says why, and the SDP runs; the same root with the rule relaxed is closed by
    its decomposition (so the skip is the rule's doing)."""
    import pcsos.node

    X = _blobs(30, [(0, 0), (20, 0), (0, 20)], 1.0, 0)
    _large_root(monkeypatch, 30, 11)  # 30 / 3 = 10
    res = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1)
    root = res.log[0]
    assert "decomposition_subsets" not in root and root["sdp_iterations"] > 0
    assert root["decomposition_per_cluster"] == 10
    monkeypatch.setattr(pcsos.node, "DECOMPOSITION_FIRST_PER_CLUSTER", 10)
    root = pcsos.solve(X, 3, workers=1, seed=0, max_nodes=1).log[0]
    assert root["decomposition_subsets"] >= 3 and "sdp_iterations" not in root


@pytest.mark.parametrize("seed", range(3))
def test_the_ceiling_caps_the_decomposition_bound(seed):
    """The skip test is safe: no decomposition bound passes the ceiling it is judged by."""
    from pcsos.node import _decomposition_ceiling

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 2))
    inst = make_instance(X, 3, ml=[(0, 1), (2, 3)], cl=[(4, 5)])
    # any clustering the pairs allow (the test is about the ceiling, not the optimum)
    labels = run_heuristic("ipc-kmeans", Problem.from_instance(inst), seed=0).labels
    subsets = partition(inst, labels, 15)
    lb, _ = decomposition_bound(inst, subsets, workers=1, labels=labels)
    ceiling = _decomposition_ceiling(Problem.from_instance(inst), labels, subsets)
    assert lb <= ceiling * (1 + 1e-9) and ceiling <= inst.objective(labels) * (1 + 1e-12)


def test_subsets_beyond_the_memory_are_refused(monkeypatch):
    """A subset size whose SDPs, one per worker side by side, need more memory than the
    machine has is an InputError naming it, before any work (the OS would kill the run)."""
    import pcsos.memory

    monkeypatch.setattr(pcsos.memory, "CHECK_BYTES", 0.0)
    one = 8.0 * pcsos.memory.SDP_DOUBLES * 30 ** 2  # 60 points at most 40 each: 2 of 30
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 1.5 * one)
    X = _blobs(20, [(0, 0), (4, 0), (0, 4)], 0.5, 0)
    with pytest.raises(InputError, match="subsets of 30 points need about .* for 2 SDP") as e:
        pcsos.certify(X, 3, subset_size=40, workers=2)
    assert e.value.source == "subset_size"
    cert = pcsos.certify(X, 3, subset_size=40, workers=1)  # one at a time fits
    assert cert.lower_bound > 0 and cert.subset_size == 30
    # one subset runs one SDP, whatever the workers
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 8.0 * pcsos.memory.SDP_DOUBLES
                        * 60 ** 2 * 1.5)
    assert pcsos.certify(X, 3, subset_size=100, workers=2).lower_bound > 0


def test_a_subset_whose_sdp_would_not_fit_keeps_its_spectral_floor(monkeypatch):
    """A subset whose SDP (here Clarabel's, which holds s^4) would not fit in memory is not
    started, where the OS would kill the run: it keeps its spectral floor, and says why."""
    import pcsos.memory

    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 1e8)
    X = _blobs(20, [(0, 0), (4, 0), (0, 4)], 0.5, 0)
    cert = pcsos.certify(X, 3, workers=1, bound_settings={"backend": "clarabel"})
    assert cert.subsets and all(b.method == "spectral" and not b.cut_short
                                and "its SDP needs about" in b.message for b in cert.subsets)
    assert cert.lower_bound == pytest.approx(cert.spectral_floor)
    monkeypatch.setattr(pcsos.memory, "memory_available", lambda: 1e12)
    fits = pcsos.certify(X, 3, workers=1, bound_settings={"backend": "clarabel"})
    assert fits.subsets[0].method == "sdp" and fits.lower_bound > cert.lower_bound


@pytest.mark.parametrize("kwargs, message", [
    ({"subset_size": "10"}, "subset_size: subset size must be a whole number"),
    ({"subset_size": 2.5}, "subset_size: subset size must be a whole number"),
    ({"cp_settings": 5}, "cp_settings: cp_settings must be a CuttingPlaneSettings"),
    ({"cp_settings": {"bogus": 1}}, "cp_settings: invalid cutting-plane settings"),
])
def test_certify_checks_its_settings_at_the_edge(kwargs, message):
    # before: a raw TypeError, a size silently truncated, or an AttributeError deep in the
    # loop after the heuristic had run
    X = _blobs(10, [(0, 0), (4, 0), (0, 4)], 0.5, 0)
    with pytest.raises(InputError, match=message):
        pcsos.certify(X, 3, workers=1, **kwargs)


def test_certify_takes_cut_settings_as_a_dict():
    X = _blobs(10, [(0, 0), (4, 0), (0, 4)], 0.5, 0)
    cert = pcsos.certify(X, 3, workers=1, subset_size=10, cp_settings={"max_rounds_root": 1})
    assert 0 < cert.lower_bound <= cert.objective
