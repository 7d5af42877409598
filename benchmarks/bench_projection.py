"""Benchmark of the PSD projection of the ADMM (issue 31): 'full', 'partial' and 'krylov'.

On synthetic instances (s points drawn around k Gaussian centres in 10 dimensions, no
constraints, so s super-points; seed 0), runs the ADMM for N iterations with each eig
method from the same cold start and records the time of every projection call (the
per-iteration time: mean over all N; median over the iterations whose rank hint
allows a window (``eig._dense_wide`` false), after the early wide iterations that every method
does by a full eigh; median over the last N/2, the steady state), the primal and dual KKT
residuals and the gap after the N iterations, and the krylov method's counters. At the
last iterate of the 'krylov' run it also times the safe bound by the dense eigensolver
and by the iterative certificate (:func:`pcsos.bounds.safe.ky_fan_certificate`) and
records both bounds. All with one BLAS thread (threadpoolctl), for per-core numbers. Results go to
key ``--run`` of the JSON object in ``benchmarks/results/bench_projection.json`` (``--out``;
rewritten after every run, the other keys kept).

    python benchmarks/bench_projection.py [--sizes 1000 2000 4000] [--ks 3 20]
        [--iters 40] [--iters-large 25] [--methods full partial krylov] [--out FILE]
        [--run NAME]

``--iters-large`` is N from s = 4000 on (a full eigh there takes seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import time

import numpy as np
from instances import RESULTS, code_version, merge_json
from threadpoolctl import threadpool_limits

import pcsos.bounds.eig as eigmod
import pcsos.bounds.safe as safemod
from pcsos.bounds import SDPModel, solve_sdp
from pcsos.problem import Problem, make_instance

OUT = RESULTS / "bench_projection.json"


def synthetic(s: int, k: int, seed: int = 0) -> SDPModel:
    """k Gaussian clusters (unit spread, centres at scale 3) of s points in 10 dimensions."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, 10)) * 3
    X = centres[rng.integers(0, k, size=s)] + rng.normal(size=(s, 10))
    return SDPModel.from_problem(Problem.from_instance(make_instance(X, k)))


@contextlib.contextmanager
def watched_projections(on_call):
    """Within the block, every projection of the ADMM goes through ``on_call(inner, W,
    rank_hint, tol)``, which returns ``inner``'s result (``inner``: the projector the solve
    would have used). Yields the list of those projectors, one per solve."""
    original = eigmod.projector
    inners = []

    def watched(name="auto", backend=None):
        inner = original(name, backend)
        inners.append(inner)

        def call(W, rank_hint=None, tol=None):
            out = on_call(inner, W, rank_hint, tol)
            call.last = inner.last
            return out

        call.last = None
        return call

    eigmod.projector = watched
    try:
        yield inners
    finally:
        eigmod.projector = original


def run(model: SDPModel, method: str, iters: int) -> tuple[dict, object]:
    """N ADMM iterations with ``method``, every projection call timed."""
    calls = []

    def timed(inner, W, rank_hint, tol):
        t = time.perf_counter()
        out = inner(W, rank_hint, tol)
        calls.append((time.perf_counter() - t, int(rank_hint), len(out[0])))
        return out

    with watched_projections(timed) as inners:
        t0 = time.perf_counter()
        r = solve_sdp(model, eig=method, max_iter=iters, tol=1e-14)
        total = time.perf_counter() - t0
    made = {"inner": inners[-1]}
    s = model.s
    times = np.array([c[0] for c in calls])
    window = np.array([not eigmod._dense_wide(s, c[1]) for c in calls])
    kp = made["inner"].instances.get("krylov")
    row = {
        "iterations": r.iterations, "seconds": total,
        "proj_mean_ms": 1e3 * float(times.mean()),
        "proj_median_window_ms": 1e3 * float(np.median(times[window])) if window.any() else None,
        "window_iterations": int(window.sum()),
        # the ADMM's steady state: a solve runs hundreds of iterations past the early ones
        "proj_median_last_half_ms": 1e3 * float(np.median(times[len(times) // 2:])),
        "calls": [{"ms": round(1e3 * c[0], 2), "hint": c[1], "rank": c[2]} for c in calls],
        "proj_total_s": float(times.sum()),
        "primal_residual": r.primal_residual, "dual_residual": r.dual_residual,
        "gap": r.gap, "sdp_value": r.sdp_value, "lower_bound": r.lower_bound,
        "final_rank": calls[-1][2],
        "krylov_stats": dict(kp.stats) if kp is not None else None,
    }
    return row, (r, made["inner"].last)


def bound_timing(model: SDPModel, r, last) -> dict:
    """The safe bound at the run's last point: dense eigensolver against the certificate."""
    out = {}
    start = None if last is None else last[1]
    for name, min_s in (("dense", 10 ** 9), ("certificate", 1)):
        old = safemod.ITERATIVE_MIN_S
        safemod.ITERATIVE_MIN_S = min_s
        try:
            t = time.perf_counter()
            lb = safemod.safe_lower_bound(model, r.y, r.y_cl, r.u, r.N, start=start)
            out[name] = {"seconds": time.perf_counter() - t, "bound": lb}
        finally:
            safemod.ITERATIVE_MIN_S = old
    S = safemod.dual_slack(model, r.y, r.y_cl, r.u, r.N)
    info = {}
    t = time.perf_counter()
    cert = safemod.ky_fan_certificate(S, model.k, start, info=info)
    out["certificate_alone"] = {"seconds": time.perf_counter() - t, "value": cert,
                                "ok": bool(info.get("ok")), "tries": info.get("tries"),
                                "block": info.get("p")}
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--ks", type=int, nargs="+", default=[3, 20])
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--iters-large", type=int, default=25)
    ap.add_argument("--methods", nargs="+", default=["full", "partial", "krylov"])
    ap.add_argument("--out", default=str(OUT), help="result file (default: %(default)s)")
    ap.add_argument("--run", default="bench_projection",
                    help="the key of this run in --out (default: %(default)s)")
    args = ap.parse_args(argv)
    result = {"code_version": code_version(), "machine": platform.platform(),
              "cpus": os.cpu_count(), "blas_threads": 1,
              "load_at_start": os.getloadavg(), "runs": []}
    with threadpool_limits(1):
        for s in args.sizes:
            iters = args.iters if s < 4000 else args.iters_large
            for k in args.ks:
                model = synthetic(s, k)
                for method in args.methods:
                    row, (r, last) = run(model, method, iters)
                    row.update(s=s, k=k, method=method, load=os.getloadavg())
                    if method == "krylov":
                        row["safe_bound"] = bound_timing(model, r, last)
                    result["runs"].append(row)
                    merge_json(args.out, args.run, result)
                    print(f"s {s} k {k} {method:8s} N {row['iterations']} "
                          f"proj mean {row['proj_mean_ms']:.0f} ms window median "
                          f"{row['proj_median_window_ms'] or math.nan:.0f} ms last half "
                          f"{row['proj_median_last_half_ms']:.0f} ms "
                          f"pinf {row['primal_residual']:.3e} dinf {row['dual_residual']:.3e}"
                          f" gap {row['gap']:.2e}", flush=True)
    result["load_at_end"] = os.getloadavg()
    merge_json(args.out, args.run, result)


if __name__ == "__main__":
    main()
