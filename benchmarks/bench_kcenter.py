"""Benchmark of the constrained k-center mode (pcsos.kcenter, paper 004).

Parts (each writes into benchmarks/results/bench_kcenter.json, merged with earlier parts):

* ``synthetic``: data shaped like the paper's simulated set (n points in d dimensions, k
  well-separated balls of radius r* = 1 whose centre is a data point and which contain an
  antipodal pair at distance exactly 1 from it, so the optimal constrained radius is exactly
  1 for constraints drawn from the true clusters). Constraints as in the paper: the
  constrained points form disjoint must-link groups of one class, and the groups are
  partitioned into disjoint cannot-link sets of distinct classes (at most k each).
  Reports radius / r* (the paper's Table 2 "empirical approximation ratio", 1.99-2.00),
  also before centre refinement, the certified lower bound / r* and seconds.
* ``shared``: the shared instances (../shared/instances): radius, certified lower bound,
  seconds, ARI against the true classes where known (iris and wine: the rows are those of
  scikit-learn's bundled copies; the pc-sos-sdp files carry no classes), and the effect on
  the IPC-k-means local search (spec §6) of starting from the k-center cluster means
  instead of k-means++ centres.

Run: python benchmarks/bench_kcenter.py synthetic --n 10000 --d 50 --k 5 10 50 100 \
         --m 1000 10000 --reps 1
     python benchmarks/bench_kcenter.py shared --seeds 0
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from instances import RESULTS as RESULTS_DIR
from instances import constraint_files, dataset_dirs, load_constraints, load_data, merge_json

from pcsos.heuristics.metrics import adjusted_rand_index
from pcsos.kcenter import kcenter_centres, solve
from pcsos.problem import Problem, make_instance, pairs_satisfied

RESULTS = RESULTS_DIR / "bench_kcenter.json"


def planted(n: int, d: int, k: int, m: int, rng: np.random.Generator):
    """(X, ml, cl, truth, r_star): k balls of radius 1, optimal constrained radius exactly 1."""
    centres = rng.normal(size=(k, d)) * 10.0
    # any two balls must be > 2 apart (centres > 4) so that no centre serves two balls
    D = np.linalg.norm(centres[:, None] - centres[None], axis=2) + np.eye(k) * 1e9
    assert D.min() > 4.0
    truth = np.concatenate([np.arange(k), rng.integers(0, k, size=n - k)])
    X = np.empty((n, d))
    X[:k] = centres
    u = rng.normal(size=(n - k, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    rad = rng.random(n - k) ** (1.0 / d)  # uniform in the ball
    X[k:] = centres[truth[k:]] + u * rad[:, None]
    # an antipodal pair at distance exactly 1 per ball: no data point covers the ball with
    # radius < 1, and the ball centre (a data point) covers it with radius 1
    for h in range(k):
        idx = np.nonzero(truth == h)[0][1:3]
        if len(idx) == 2:
            v = rng.normal(size=d)
            v /= np.linalg.norm(v)
            X[idx[0]], X[idx[1]] = centres[h] + v, centres[h] - v
    # constraints: m constrained points -> ML groups (1-4 points of one class) -> CL sets of
    # distinct classes (size 1..k), all disjoint, as in the paper's construction
    cons = rng.choice(n, size=m, replace=False)
    units: list[list[int]] = []
    for h in range(k):
        pts = list(cons[truth[cons] == h])
        rng.shuffle(pts)
        while pts:
            g = int(rng.integers(1, 5))
            units.append([int(p) for p in pts[:g]])
            pts = pts[g:]
    order = rng.permutation(len(units))
    ml, cl = [], []
    for u_ in units:
        ml += list(zip(u_[:-1], u_[1:]))
    pool = [units[t] for t in order]
    while pool:
        size = int(rng.integers(1, k + 1))
        chosen, rest, seen = [], [], set()
        for u_ in pool:
            c = truth[u_[0]]
            if len(chosen) < size and c not in seen:
                chosen.append(u_)
                seen.add(c)
            else:
                rest.append(u_)
        pool = rest
        for a in range(len(chosen)):
            for b in range(a + 1, len(chosen)):
                cl.append((chosen[a][0], chosen[b][0]))
    return X, ml, cl, truth, 1.0


def run_synthetic(args) -> list[dict]:
    rows = []
    for k in args.k:
        for m in args.m:
            for rep in range(args.reps):
                rng = np.random.default_rng([args.seed, k, m, rep])
                X, ml, cl, truth, rstar = planted(args.n, args.d, k, min(m, args.n), rng)
                t0 = time.perf_counter()
                res = solve(X, k, ml, cl, seed=rep, search="bisect", rtol=args.rtol,
                            time_limit=args.time_limit)
                sec = time.perf_counter() - t0
                ok = pairs_satisfied(res.labels, np.asarray(ml, dtype=np.int64).reshape(-1, 2),
                                     np.asarray(cl, dtype=np.int64).reshape(-1, 2))
                row = {"n": args.n, "d": args.d, "k": k, "constrained": min(m, args.n),
                       "rep": rep, "ml_pairs": len(ml), "cl_pairs": len(cl),
                       "radius_ratio": res.radius / rstar,
                       "radius_ratio_unrefined": res.stats["radius_unrefined"] / rstar,
                       "lower_bound_ratio": res.lower_bound / rstar,
                       "certified_ratio": res.ratio, "seconds": sec,
                       "status": res.status, "constraints_ok": ok,
                       "clusters": len(res.centers), "runs": res.stats["runs"],
                       "ari": float(adjusted_rand_index(truth, res.labels))}
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def _classes(name: str, n: int):
    """True classes where known: iris and wine are scikit-learn's bundled copies."""
    try:
        from sklearn.datasets import load_iris, load_wine
    except ImportError:  # pragma: no cover
        return None
    loader = {"iris": load_iris, "wine": load_wine}.get(name)
    return None if loader is None else loader().target


def run_shared(args) -> list[dict]:
    from pcsos.heuristics.assignment import AssignmentEngine
    from pcsos.heuristics.base import Deadline, assign_update_loop, kmeanspp

    rows = []
    for ddir in dataset_dirs():
        data = load_data(ddir.name)
        classes = _classes(ddir.name, data.n)
        if classes is not None:
            # the rows must be the same points as scikit-learn's copy, else no ARI
            from sklearn.datasets import load_iris, load_wine
            ref = {"iris": load_iris, "wine": load_wine}[ddir.name]().data
            if ref.shape != data.X.shape or not np.allclose(ref, data.X):
                classes = None
        for cf in constraint_files(ddir.name, seeds=set(args.seeds)):
            cons = load_constraints(ddir.name, cf, data)
            k = data.k
            t0 = time.perf_counter()
            res = solve(data.X, k, cons.ml, cons.cl, time_limit=args.time_limit)
            sec = time.perf_counter() - t0
            row = {"dataset": ddir.name, "constraints": cf.name, "n": data.n, "d": data.d,
                   "k": k, "radius": res.radius, "lower_bound": res.lower_bound,
                   "certified_ratio": res.ratio, "seconds": sec, "status": res.status,
                   "cover_exact": res.stats["cover_exact"], "repaired": res.stats["repaired"],
                   "uncovered_cl_pairs": res.stats["uncovered_cl_pairs"],
                   "clusters": len(res.centers),
                   "constraints_ok": pairs_satisfied(res.labels, cons.ml, cons.cl),
                   "ari": None, "constraints_agree_with_classes": None}
            if classes is not None:
                row["ari"] = float(adjusted_rand_index(classes, res.labels))
                ml = np.asarray(cons.ml, dtype=np.int64).reshape(-1, 2)
                cl = np.asarray(cons.cl, dtype=np.int64).reshape(-1, 2)
                row["constraints_agree_with_classes"] = bool(
                    np.all(classes[ml[:, 0]] == classes[ml[:, 1]])
                    and np.all(classes[cl[:, 0]] != classes[cl[:, 1]]))
            # IPC-k-means local search from the k-center means vs from k-means++ centres
            prob = Problem.from_instance(make_instance(data.X, k, cons.ml, cons.cl))
            eng = AssignmentEngine.from_problem(prob)
            t1 = time.perf_counter()
            C0 = kcenter_centres(prob, seed=0, time_limit=args.time_limit)
            r = assign_update_loop(prob, eng, C0, Deadline(60.0))
            row["ipc_from_kcenter_sse"] = r.sse
            row["ipc_from_kcenter_seconds"] = time.perf_counter() - t1
            rng = np.random.default_rng(0)
            pp = []
            t1 = time.perf_counter()
            for _ in range(args.kmeanspp_starts):
                C = prob.centroids[kmeanspp(prob.centroids, prob.e, k, rng)]
                pp.append(assign_update_loop(prob, eng, C, Deadline(60.0)).sse)
            row["ipc_from_kmeanspp_sse_median"] = float(np.median(pp))
            row["ipc_from_kmeanspp_sse_best"] = float(np.min(pp))
            row["ipc_from_kmeanspp_seconds_per_start"] = (
                (time.perf_counter() - t1) / max(1, len(pp)))
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="part", required=True)
    s = sub.add_parser("synthetic")
    s.add_argument("--n", type=int, default=10_000)
    s.add_argument("--d", type=int, default=50)
    s.add_argument("--k", type=int, nargs="+", default=[5, 10, 50, 100])
    s.add_argument("--m", type=int, nargs="+", default=[1000, 10_000])
    s.add_argument("--reps", type=int, default=1)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--rtol", type=float, default=1e-4)
    s.add_argument("--time-limit", type=float, default=None)
    h = sub.add_parser("shared")
    h.add_argument("--seeds", type=int, nargs="+", default=[0])
    h.add_argument("--time-limit", type=float, default=60.0)
    h.add_argument("--kmeanspp-starts", type=int, default=10)
    args = ap.parse_args()
    rows = run_synthetic(args) if args.part == "synthetic" else run_shared(args)
    merge_json(RESULTS, args.part, {"rows": rows, "args": vars(args),
                                    "python": platform.python_version(),
                                    "machine": platform.machine(),
                                    "date": time.strftime("%Y-%m-%d %H:%M")})


if __name__ == "__main__":
    main()
