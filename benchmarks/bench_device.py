"""The ADMM on a device against the CPU (issue 52): time per iteration, and a root's bound.

``iteration``: on the benchmarks' generator (``bench_scale.synthetic``, 2-D Gaussian
mixtures, no pairs, so s = n super-points) with seed 0, the ADMM runs from the same cold
start on each device for ``--iters`` iterations (or ``--run-limit`` seconds, whichever comes
first; ``--cpu-run-limit`` on the CPU), with the default eig method ('auto') and
``--cpu-threads`` BLAS threads on the CPU, after a short untimed run on each device.
A row records the median wall time of an iteration over the second half of the run (the
steady state: the first iterations project a wide positive part by a dense
eigendecomposition on every device), the mean over all but the first, and the KKT residuals
after the last iteration, so that devices are compared at the same iteration count. The run
ends without its safe bound (not part of an iteration).

``root``: the full SDP of an instance file without pairs (abalone: s = 4 177, k = 3) on one
device, stopped as soon as the safe bound reaches ``--target`` (a fraction of ``--ub``, a
known feasible SSE) or at ``--time-limit``; records the bound, its gap to ``--ub``, the
iterations and the seconds, the safe bound's host work included, and the rank of the
projected part every 10 iterations (``--max-iter`` for a run of fixed length).

    python benchmarks/bench_device.py iteration --sizes 1000 2000 4000 10000 --ks 3 20 \\
        --devices cuda cpu --cpu-threads 2 --iters 40 --run-limit 60
    python benchmarks/bench_device.py root ../shared/instances/abalone/data.txt -k 3 \\
        --ub 1005.068418 --target 0.99 --device cuda --time-limit 110

``streams``: ``--threads`` T threads at once, as the tree's workers on one GPU, each running
``--iters`` ADMM iterations of the same model (the generator, seed 0) on ``--device``, each
thread on a CUDA stream of its own and all on the default stream
(``pcsos.bounds.arrays.THREAD_STREAMS``), alternating; records the wall time and the
iterations per second of all threads together.

    python benchmarks/bench_device.py streams --sizes 300 1000 -k 6 --threads 1 4 \\
        --iters 60 --device cuda

One JSON line per run in ``--out`` (default ``benchmarks/results/bench_device.jsonl``).
"""

from __future__ import annotations  # noqa: I001 (pcsos first, below)

# first: pcsos shortens OpenBLAS's worker spin (pcsos/__init__.py) only where it loads
# before numpy, and these BLAS threads must behave as the pcsos command's
import pcsos  # noqa: F401
import argparse
import math
import platform
import statistics
import threading
import time

from bench_scale import GENERATORS, synthetic
from instances import RESULTS, append_jsonl, code_version
from threadpoolctl import threadpool_limits

from pcsos.bounds import BoundSettings, SDPModel
from pcsos.bounds.admm import solve_admm
from pcsos.bounds import arrays
from pcsos.bounds.arrays import get_backend
from pcsos.io import read_data
from pcsos.problem import Problem, make_instance

OUT = RESULTS / "bench_device.jsonl"


class _Enough(Exception):
    """Raised from the progress hook to end a timed run before its safe bound."""


def model_of(X, k: int) -> SDPModel:
    return SDPModel.from_problem(Problem.from_instance(make_instance(X, k)))


def time_iterations(model: SDPModel, device: str, iters: int, run_limit: float) -> dict:
    """Iterations of the ADMM on ``device``, timed one by one (see the module doc)."""
    stamps, last = [], {}
    t0 = time.perf_counter()

    def progress(info):
        stamps.append(time.perf_counter())
        last.update(info)
        if info["it"] >= iters or stamps[-1] - t0 > run_limit:
            raise _Enough

    try:
        solve_admm(model, BoundSettings(device=device, max_iter=iters, tol=1e-14, polish=0),
                   progress=progress)
    except _Enough:
        pass
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    tail = steps[len(steps) // 2:]
    return {"iterations": last.get("it", 0), "setup_first_s": stamps[0] - t0 if stamps else None,
            "per_iter_median_s": statistics.median(tail) if tail else None,
            "per_iter_mean_s": statistics.fmean(steps) if steps else None,
            "pinf": last.get("pinf"), "dinf": last.get("dinf"), "gap": last.get("gap"),
            "rank": last.get("rank"), "seconds": time.perf_counter() - t0}


def warm_up(device: str) -> None:
    """A short untimed run on ``device``, so that start-up (the CUDA context, the solver
    handles) stays out of the timed ones."""
    time_iterations(model_of(synthetic(200, 3, 0, seed=1)[0], 3), device, 5, 60.0)


def cmd_iteration(args) -> None:
    for device in args.devices:
        warm_up(device)
    for s in args.sizes:
        for k in args.ks:
            X = synthetic(s, k, 0, seed=0)[0]
            model = model_of(X, k)
            for device in args.devices:
                if device == "cpu" and s > args.cpu_max_s:
                    continue
                label = get_backend(device).label
                limit = args.cpu_run_limit if device == "cpu" else args.run_limit
                with threadpool_limits(limits=args.cpu_threads, user_api="blas"):
                    row = time_iterations(model, device, args.iters, limit)
                row = {"kind": "iteration", "s": model.s, "k": k, "device": label,
                       "cpu_threads": args.cpu_threads, **row, "machine": platform.node(),
                       "code": code_version()}
                append_jsonl(args.out, row)
                print(f"s {model.s:6d} k {k:3d} {label:28s} its {row['iterations']:4d} "
                      f"median {row['per_iter_median_s'] * 1e3:9.1f} ms  mean "
                      f"{row['per_iter_mean_s'] * 1e3:9.1f} ms  pinf {row['pinf']:.3e} "
                      f"dinf {row['dinf']:.3e}", flush=True)


def cmd_root(args) -> None:
    if args.gen:
        X, _, ml, cl = GENERATORS[args.gen](args.n, args.k, args.pairs, seed=0)
        model = SDPModel.from_problem(Problem.from_instance(make_instance(X, args.k, ml, cl)))
        args.data = f"{args.gen} n={args.n} k={args.k} pairs={args.pairs} seed=0"
    else:
        model = model_of(read_data(args.data).X, args.k)
    target = args.target * args.ub if args.target else None
    ranks: list[int] = []  # the projected part's rank: what decides the eig method's cost
    t0 = time.perf_counter()
    with threadpool_limits(limits=args.cpu_threads, user_api="blas"):
        settings = BoundSettings(device=args.device, eig=args.eig,
                                 **({"max_iter": args.max_iter} if args.max_iter else {}))
        res = solve_admm(model, settings, time_limit=args.time_limit, bound_target=target,
                         progress=lambda info: ranks.append(int(info["rank"])))
    seconds = time.perf_counter() - t0
    gap = (args.ub - res.lower_bound) / args.ub
    row = {"kind": "root", "data": str(args.data), "s": model.s, "k": args.k,
           "device": res.device, "cpu_threads": args.cpu_threads, "eig": args.eig,
           "status": res.status,
           "lower_bound": res.lower_bound, "ub": args.ub, "gap": gap,
           "iterations": res.iterations, "seconds": seconds, "sdp_value": res.sdp_value,
           "ranks_every_10": ranks[::10], "machine": platform.node(), "code": code_version()}
    append_jsonl(args.out, row)
    print(f"root s {model.s} k {args.k} {res.device}: bound {res.lower_bound:.6f} "
          f"gap {100 * gap:.3f} % ({res.status}, {res.iterations} its, {seconds:.1f} s)",
          flush=True)


def run_threads(model: SDPModel, device: str, threads: int, iters: int) -> float:
    """Wall seconds for ``threads`` threads to run ``iters`` iterations each at once."""
    start = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def one():
        start.wait()
        try:
            time_iterations(model, device, iters, math.inf)
        except BaseException as exc:  # noqa: BLE001 (reported below, in the main thread)
            errors.append(exc)

    pool = [threading.Thread(target=one) for _ in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def cmd_streams(args) -> None:
    warm_up(args.device)
    label = get_backend(args.device).label
    for s in args.sizes:
        model = model_of(synthetic(s, args.k, 0, seed=0)[0], args.k)
        for threads in args.threads:
            for own in (True, False, True, False):  # alternating, two runs each
                arrays.THREAD_STREAMS = own
                try:
                    with threadpool_limits(limits=1, user_api="blas"):
                        seconds = run_threads(model, args.device, threads, args.iters)
                finally:
                    arrays.THREAD_STREAMS = True
                row = {"kind": "streams", "s": model.s, "k": args.k, "device": label,
                       "threads": threads, "thread_streams": own, "iters": args.iters,
                       "seconds": seconds, "its_per_s": threads * args.iters / seconds,
                       "machine": platform.node(), "code": code_version()}
                append_jsonl(args.out, row)
                print(f"s {model.s:6d} k {args.k:3d} {label:28s} threads {threads:2d} "
                      f"{'own' if own else 'default':7s} streams: {seconds:7.2f} s, "
                      f"{row['its_per_s']:8.1f} it/s", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    it = sub.add_parser("iteration")
    it.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 10000])
    it.add_argument("--ks", type=int, nargs="+", default=[3, 20])
    it.add_argument("--devices", nargs="+", default=["cuda", "cpu"])
    it.add_argument("--cpu-threads", type=int, default=2)
    it.add_argument("--cpu-max-s", type=int, default=math.inf)
    it.add_argument("--iters", type=int, default=40)
    it.add_argument("--run-limit", type=float, default=60.0)
    it.add_argument("--cpu-run-limit", type=float, default=60.0)
    it.add_argument("--out", default=OUT)
    st = sub.add_parser("streams")
    st.add_argument("--sizes", type=int, nargs="+", default=[300, 1000])
    st.add_argument("-k", type=int, default=6)
    st.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    st.add_argument("--iters", type=int, default=60)
    st.add_argument("--device", default="cuda")
    st.add_argument("--out", default=OUT)
    rt = sub.add_parser("root")
    rt.add_argument("data", nargs="?")
    rt.add_argument("--gen", choices=sorted(GENERATORS))
    rt.add_argument("--n", type=int)
    rt.add_argument("--pairs", type=int, default=0)
    rt.add_argument("-k", type=int, required=True)
    rt.add_argument("--ub", type=float, default=math.nan)
    rt.add_argument("--target", type=float, default=None)
    rt.add_argument("--device", default="cuda")
    rt.add_argument("--eig", default="auto")
    rt.add_argument("--cpu-threads", type=int, default=None)
    rt.add_argument("--time-limit", type=float, default=110.0)
    rt.add_argument("--max-iter", type=int, default=None)
    rt.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    {"iteration": cmd_iteration, "root": cmd_root, "streams": cmd_streams}[args.cmd](args)


if __name__ == "__main__":
    main()
