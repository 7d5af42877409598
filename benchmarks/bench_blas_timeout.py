"""ADMM iterations per second against OpenBLAS's worker spin time (issue 52, item 5).

OpenBLAS's worker threads spin after each call before they sleep, for 2**T cycles
(``OPENBLAS_THREAD_TIMEOUT=T``, 4 <= T <= 30, default 28: about 0.1 s). Between the ADMM's
BLAS calls the main thread does array passes of its own; a spinning worker takes the core
those passes would use. The variable is read once, when the library loads, so each
measurement is a fresh process (``--child``) with the variable set; ``default`` sets it to
28, OpenBLAS's own default (importing pcsos first would otherwise set pcsos's).

For each case (``DATASET/STEM`` of the shared instances, or ``overlap:N:K``: the overlap
generator, N pairs, seed 0), thread count and timeout: one root ADMM (no cuts, default
settings) for ``--time-limit`` seconds or ``--max-iter`` iterations, whichever comes first;
the row holds the iterations and the seconds. ``--repeat`` rounds go round-robin over the
settings, so that drift of the machine spreads over all of them. Rows go to
``benchmarks/results/bench_blas_timeout.jsonl`` with key ``--run``. With ``--command
bound`` each measurement is the user's path instead: ``pcsos bound DATA -c PAIRS -k K
--method sdp --time-limit T [--threads N]`` (``--threads auto``: the flag left out, the
command's default), the overlap cases written to text files first::

    python benchmarks/bench_blas_timeout.py --cases overlap:1000:20 glass/ml_0_cl_100_0 \\
        ECG5000/ml_0_cl_150_0 --threads 1 2 --timeouts default 8 12 16 20 24 \\
        --time-limit 30 --max-iter 2000 --repeat 2
    python benchmarks/bench_blas_timeout.py --command bound --cases overlap:1000:20 \\
        glass/ml_0_cl_100_0 ECG5000/ml_0_cl_150_0 --threads 2 1 auto \\
        --timeouts default 20 --time-limit 60 --run bound_threads
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from instances import (
    INSTANCES,
    RESULTS,
    append_jsonl,
    code_version,
    constraint_path,
    run_bound,
    split_name,
)

OUT = RESULTS / "bench_blas_timeout.jsonl"


def child(case: str, threads: int, time_limit: float, max_iter: int) -> None:
    from bench_eig_drivers import model_of
    from threadpoolctl import threadpool_limits

    from pcsos.bounds import BoundSettings
    from pcsos.bounds.admm import solve_admm

    model = model_of(case)
    with threadpool_limits(limits=threads, user_api="blas"):
        t0 = time.perf_counter()
        res = solve_admm(model, BoundSettings(max_iter=max_iter), time_limit=time_limit)
        seconds = time.perf_counter() - t0
    print(json.dumps({"s": model.s, "iterations": res.iterations, "seconds": seconds,
                      "status": res.status, "lower_bound": res.lower_bound}))


def case_files(case: str, tmp: str) -> tuple[str, str, int]:
    """The data file, the constraint file and k of ``case`` (overlap cases: written here)."""
    if case.startswith("overlap:"):
        from bench_scale import GENERATORS

        _, n, k = case.split(":")
        X, _, ml, cl = GENERATORS["overlap"](int(n), int(k), int(n), seed=0)
        data, pairs = f"{tmp}/data.txt", f"{tmp}/pairs.txt"
        with open(data, "w") as fh:
            fh.write(f"{X.shape[0]} {X.shape[1]} {k}\n")
            fh.writelines(" ".join(repr(float(v)) for v in row) + "\n" for row in X)
        with open(pairs, "w") as fh:
            fh.writelines([*(f"ML {i} {j}\n" for i, j in ml), *(f"CL {i} {j}\n" for i, j in cl)])
        return data, pairs, int(k)
    dataset, stem = split_name(case)
    with open(INSTANCES / dataset / "data.txt") as fh:
        k = int(fh.readline().split()[2])
    return str(INSTANCES / dataset / "data.txt"), str(constraint_path(dataset, stem)), k


def measure(args, case: str, threads: str, env: dict, files: dict) -> dict:
    """One measurement of ``case`` at ``threads`` BLAS threads under ``env`` (``files``: each
    case's :func:`case_files`, for ``--command bound``)."""
    if args.command == "bound":
        data, pairs, k = files[case]
        res, rc = run_bound([data, "-c", pairs, "-k", str(k), "--method", "sdp",
                             "--time-limit", str(args.time_limit), "--max-iter",
                             str(args.max_iter)]
                            + ([] if threads == "auto" else ["--threads", threads]), env=env)
        if rc != 0:
            raise SystemExit(f"pcsos bound failed on {case} (exit {rc})")
        return {"s": res["size"], "iterations": res["iterations"], "seconds": res["seconds"],
                "status": res["status"], "lower_bound": res["lower_bound"]}
    out = subprocess.run(
        [sys.executable, __file__, "--child", case, threads,
         "--time-limit", str(args.time_limit), "--max-iter", str(args.max_iter)],
        env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["overlap:1000:20"])
    ap.add_argument("--threads", nargs="+", default=["1", "2"],
                    help="BLAS threads; 'auto' (--command bound only): the command's default")
    ap.add_argument("--command", choices=["admm", "bound"], default="admm",
                    help="admm: the ADMM in a child process; bound: pcsos bound")
    ap.add_argument("--timeouts", nargs="+", default=["default", "16"],
                    help="OPENBLAS_THREAD_TIMEOUT values; 'default': OpenBLAS's, 28")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--run", default="blas_timeout")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.time_limit, args.max_iter)
        return
    if args.command == "admm" and not all(t.isdigit() for t in args.threads):
        ap.error("--threads takes numbers with --command admm")
    settings = [(c, t, to) for c in args.cases for t in args.threads
                for to in (args.timeouts if t != "1" else ["default"])]  # 1: no workers
    files = {}
    if args.command == "bound":  # each case written once, in a folder of its own
        files = {case: case_files(case, tempfile.mkdtemp()) for case in args.cases}
    for rnd in range(args.repeat):
        for case, threads, timeout in settings:
            env = {**os.environ,
                   "OPENBLAS_THREAD_TIMEOUT": "28" if timeout == "default" else timeout}
            row = measure(args, case, threads, env, files)
            row.update(command_kind=args.command, run=args.run, round=rnd, case=case,
                       threads=int(threads) if threads.isdigit() else threads, timeout=timeout,
                       its_per_s=row["iterations"] / row["seconds"],
                       machine=platform.node(), code=code_version(),
                       command=" ".join(sys.argv))
            append_jsonl(args.out, row)
            print(f"{case:24s} s {row['s']:5d} threads {threads:>4s} timeout {timeout:>7s} "
                  f"its {row['iterations']:5d} in {row['seconds']:6.1f} s: "
                  f"{row['its_per_s']:7.2f} its/s", flush=True)


if __name__ == "__main__":
    main()
