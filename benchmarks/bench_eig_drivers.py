"""LAPACK drivers of the PSD projection on the ADMM's own matrices (issue 52, item 5).

The projection's cost depends on the spectrum of W, not only on its size: divide and
conquer ('evd') deflates clustered eigenvalues, MRRR ('evr') does not need to. So the
matrices timed here are the W that real solves project: the ADMM of each case runs
``--at`` iterations (the default settings, one BLAS thread) and the W of that projection
is kept. The cases are shared instances (``DATASET/STEM``) and the overlap generator of
``bench_scale`` (``overlap:N:K``, N pairs, seed 0; ``overlap:1000:20`` is issue 52's
s = 951 case). For each W and thread count, the median of ``--repeat`` calls of

- ``evr`` and ``evd``: all eigenpairs (what method 'full' does);
- ``evr_top``: the top r + 8 eigenpairs, r the positive rank of W (what 'partial' does);
- each call after a pass over 128 MiB of other memory (as in a solve, W is not hot in
  the cache);
- with ``--fractions``: the same two on W shifted by a multiple of the identity so that
  the positive rank is that fraction of s (the eigenvectors and the gaps of the spectrum
  kept), to place the window against the full decomposition.

Results go to key ``--run`` of ``benchmarks/results/bench_eig_drivers.json``::

    python benchmarks/bench_eig_drivers.py --cases glass/ml_0_cl_100_0 \\
        ECG5000/ml_75_cl_75_0 ECG5000/ml_0_cl_150_0 overlap:300:20 overlap:600:20 \\
        overlap:1000:20 --threads 1 2 --fractions 0.03 0.06 0.12 0.25
"""

from __future__ import annotations  # noqa: I001 (pcsos first, below)

# first: pcsos shortens OpenBLAS's worker spin (pcsos/__init__.py) only where it loads
# before numpy, and these BLAS threads must behave as the pcsos command's
import pcsos  # noqa: F401
import argparse
import os
import platform
import statistics
import time

import numpy as np
import scipy.linalg as sla
from bench_projection import watched_projections
from bench_scale import GENERATORS
from instances import RESULTS, code_version, load_problem, merge_json, split_name
from threadpoolctl import threadpool_limits

from pcsos.bounds import BoundSettings, SDPModel
from pcsos.bounds.admm import solve_admm
from pcsos.problem import Problem, make_instance

OUT = RESULTS / "bench_eig_drivers.json"


def model_of(case: str) -> SDPModel:
    if case.startswith("overlap:"):
        _, n, k = case.split(":")
        X, _, ml, cl = GENERATORS["overlap"](int(n), int(k), int(n), seed=0)
        return SDPModel.from_problem(Problem.from_instance(make_instance(X, int(k), ml, cl)))
    return SDPModel.from_problem(load_problem(*split_name(case)))


def captured(model: SDPModel, at: int) -> np.ndarray:
    """The W of the ADMM's ``at``-th projection (default settings, one BLAS thread)."""
    kept: list[np.ndarray] = []

    def keeping(inner, W, rank_hint, tol):
        if len(kept) < at:
            kept.append(W.copy() if len(kept) == at - 1 else None)
        return inner(W, rank_hint, tol)

    with watched_projections(keeping), threadpool_limits(1):
        solve_admm(model, BoundSettings(max_iter=at, polish=0))
    if len(kept) < at:
        raise SystemExit(f"the ADMM stopped after {len(kept)} projections, before {at}")
    return kept[-1]


# written over between calls, untimed: in a solve, W reaches the eigensolver after passes
# over a dozen other s x s arrays, not hot in the cache from the last call. (It does not
# reproduce the slower first call of a solve at two threads: docs/benchmarks.md)
_SWEEP = np.zeros(2 ** 24)  # 128 MiB


def timed(fn, repeat: int) -> float:
    fn()  # workspace and page faults stay out
    times = []
    for _ in range(repeat):
        np.add(_SWEEP, 1.0, out=_SWEEP)
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def drivers(W: np.ndarray, repeat: int) -> dict:
    s = W.shape[0]
    r = int(np.count_nonzero(np.linalg.eigvalsh(W) > 0))
    lo = max(0, s - r - 8)
    return {"rank": r,
            "evr_ms": timed(lambda: sla.eigh(W, driver="evr", check_finite=False), repeat),
            "evd_ms": timed(lambda: sla.eigh(W, driver="evd", check_finite=False), repeat),
            "evr_top_ms": timed(lambda: sla.eigh(W, driver="evr", check_finite=False,
                                                 subset_by_index=[lo, s - 1]), repeat)}


def shifted(W: np.ndarray, fraction: float) -> np.ndarray:
    """W - c I with about ``fraction`` s positive eigenvalues."""
    vals = np.linalg.eigvalsh(W)
    r = max(1, round(fraction * len(vals)))
    c = 0.5 * (vals[-r] + vals[-r - 1])
    return W - c * np.eye(len(vals))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--at", type=int, default=40, help="the projection kept (default: 40)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--fractions", type=float, nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--run", default="drivers")
    args = ap.parse_args(argv)
    result = {"code_version": code_version(), "machine": platform.platform(),
              "cpus": os.cpu_count(), "load_at_start": os.getloadavg(), "rows": []}
    for case in args.cases:
        W = captured(model_of(case), args.at)
        for threads in args.threads:
            with threadpool_limits(threads):
                row = {"case": case, "s": W.shape[0], "at": args.at, "threads": threads,
                       **drivers(W, args.repeat)}
                row["shifted"] = [{"fraction": f, **drivers(shifted(W, f), args.repeat)}
                                  for f in args.fractions]
            result["rows"].append(row)
            merge_json(args.out, args.run, result)
            print(f"{case:24s} s {row['s']:4d} threads {threads} rank {row['rank']:4d}  evr "
                  f"{row['evr_ms']:7.1f}  evd {row['evd_ms']:7.1f}  top {row['evr_top_ms']:7.1f}"
                  f" ms  evd/evr {row['evd_ms'] / row['evr_ms']:.2f}", flush=True)
            for sh in row["shifted"]:
                print(f"{'':24s} shifted to rank {sh['rank']:4d}: evd {sh['evd_ms']:7.1f}  top "
                      f"{sh['evr_top_ms']:7.1f} ms", flush=True)
    result["load_at_end"] = os.getloadavg()
    merge_json(args.out, args.run, result)


if __name__ == "__main__":
    main()
