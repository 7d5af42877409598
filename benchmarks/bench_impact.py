"""Validate the constraint-impact scores (``pcsos impact``) against exact re-solves.

Two parts, one JSON file (default ``benchmarks/results/bench_impact.json``):

1. ``small``: synthetic Gaussian mixtures (n points, k clusters, pairs drawn from the true
   labels with a few flipped). For every pair the exact drop of the optimum without it is
   computed by pcsos's exact solver (warm-started from the optimum, which stays feasible);
   the heuristic scores (``impact``'s default) and the thesis's dual scores are compared
   with it: Spearman rank correlation per instance, and the largest amount by which a score
   exceeds the certified upper bound on the drop (value - the re-solve's lower bound; must
   be <= 0 up to rounding: the score is a proven lower bound).
2. ``flipped``: shared instances with a few of their (correct) pairs flipped, ML to CL or CL
   to ML: the rank of each flipped pair among all pairs by score.

Example::

    python benchmarks/bench_impact.py --small 8 --flip 5 \\
        --instances iris/ml_50_cl_50_0,wine/ml_50_cl_50_0,seeds/ml_50_cl_50_0
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np
from instances import RESULTS, code_version, load, split_name, write_json


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _pairs_from(truth, rng, n_ml, n_cl, n_flip):
    n = len(truth)
    ml, cl = [], []
    while len(ml) < n_ml or len(cl) < n_cl:
        i, j = map(int, rng.choice(n, 2, replace=False))
        p = (min(i, j), max(i, j))
        if p in ml or p in cl:
            continue
        if truth[i] == truth[j] and len(ml) < n_ml:
            ml.append(p)
        elif truth[i] != truth[j] and len(cl) < n_cl:
            cl.append(p)
    flipped = []
    for t in rng.permutation(len(ml) + len(cl))[:n_flip]:
        flipped.append(("ML", ml[t]) if t < len(ml) else ("CL", cl[t - len(ml)]))
    for kind, p in flipped:  # a flipped pair changes list
        (ml if kind == "ML" else cl).remove(p)
        (cl if kind == "ML" else ml).append(p)
    return ml, cl, [("CL" if kind == "ML" else "ML", p) for kind, p in flipped]


def small_part(args, out):
    from pcsos.api import solve_instance
    from pcsos.pair_impact import impact
    from pcsos.problem import make_instance

    rows = []
    for seed in range(args.small):
        rng = np.random.default_rng(seed)
        truth = np.arange(args.n) % args.k
        X = rng.normal(scale=args.std, size=(args.n, 2)) + 4.0 * truth[:, None]
        ml, cl, flipped = _pairs_from(truth, rng, args.pairs // 2, args.pairs // 2,
                                      args.small_flip)
        t0 = time.perf_counter()
        try:
            res = impact(X, args.k, ml, cl, workers=args.workers)
        except Exception as exc:  # an infeasible draw: reported, not scored
            rows.append({"seed": seed, "error": str(exc)})
            continue
        t_score = time.perf_counter() - t0
        exact, upper, t1 = [], [], time.perf_counter()
        for p in res.pairs:
            rest_ml = [q for q in ml if q != (p.i, p.j)] if p.type == "ML" else ml
            rest_cl = [q for q in cl if q != (p.i, p.j)] if p.type == "CL" else cl
            r = solve_instance(make_instance(X, args.k, rest_ml, rest_cl),
                               init_labels=res.labels, workers=args.workers, tol=1e-6)
            exact.append(res.objective - r.objective)
            upper.append(res.objective - r.lower_bound)  # certified: the drop is at most this
        t_exact = time.perf_counter() - t1
        score = [p.score for p in res.pairs]
        dual = [p.dual for p in res.pairs]
        flipped_set = {(kind, p) for kind, p in flipped}
        ranks = [r + 1 for r, p in enumerate(res.pairs) if (p.type, (p.i, p.j)) in flipped_set]
        rows.append({
            "seed": seed, "n": args.n, "k": args.k, "ml": len(ml), "cl": len(cl),
            "optimal": res.optimal, "objective": res.objective,
            "spearman_score": _spearman(score, exact), "spearman_dual": _spearman(dual, exact),
            "max_score_over_certified_drop": float(max(s - u for s, u in zip(score, upper))),
            "flipped_ranks": ranks, "seconds_score": t_score, "seconds_exact": t_exact,
            "scores": score, "duals": dual, "exact_drops": exact, "drop_upper": upper,
            "pairs": [(p.type, p.i, p.j) for p in res.pairs]})
        print(f"small seed {seed}: spearman score {rows[-1]['spearman_score']:.3f} dual "
              f"{rows[-1]['spearman_dual']:.3f}, flipped ranks {ranks}, "
              f"{t_score:.1f} s scoring, {t_exact:.1f} s exact", flush=True)
    out["small"] = rows


def flipped_part(args, out):
    from pcsos.pair_impact import impact
    from pcsos.problem import Problem, make_instance

    rows = []
    for name in filter(None, args.instances.split(",")):
        data, cons = load(*split_name(name))
        ml, cl = [tuple(map(int, p)) for p in cons.ml], [tuple(map(int, p)) for p in cons.cl]
        rng = np.random.default_rng(args.seed)
        flipped = []
        for t in rng.permutation(len(ml) + len(cl)):
            if len(flipped) == args.flip:
                break
            kind, p = ("ML", ml[t]) if t < len(ml) else ("CL", cl[t - len(ml)])
            ml2 = [q for q in ml if q != p] + ([] if kind == "ML" else [p])
            cl2 = [q for q in cl if q != p] + ([p] if kind == "ML" else [])
            try:  # a flip that closes a must-link chain with a cannot-link is not drawn
                Problem.from_instance(make_instance(data.X, data.k, ml2, cl2))
            except Exception:
                continue
            ml, cl = ml2, cl2
            flipped.append(("CL" if kind == "ML" else "ML", p))
        t0 = time.perf_counter()
        res = impact(data.X, data.k, ml, cl, workers=args.workers, time_limit=args.time_limit)
        secs = time.perf_counter() - t0
        fs = set(flipped)
        ranks = [r + 1 for r, p in enumerate(res.pairs) if (p.type, (p.i, p.j)) in fs]
        by_dual = sorted(res.pairs, key=lambda p: -p.dual)
        dual_ranks = [r + 1 for r, p in enumerate(by_dual) if (p.type, (p.i, p.j)) in fs]
        rows.append({"instance": name, "n": data.n, "k": data.k, "ml": len(ml), "cl": len(cl),
                     "flipped": [(kind, *p) for kind, p in flipped], "ranks": sorted(ranks),
                     "dual_ranks": sorted(dual_ranks), "optimal": res.optimal,
                     "seconds": secs, "top": [vars(p) for p in res.pairs[:10]]})
        print(f"{name}: {len(ml)} ML, {len(cl)} CL, flipped {len(flipped)}: ranks by score "
              f"{sorted(ranks)}, by dual {sorted(dual_ranks)} ({secs:.1f} s)", flush=True)
    out["flipped"] = rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=8, help="synthetic instances (0: none)")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--std", type=float, default=1.0)
    ap.add_argument("--pairs", type=int, default=16, help="pairs per synthetic instance")
    ap.add_argument("--small-flip", type=int, default=2)
    ap.add_argument("--instances", default="", help="comma list of dataset/ml_A_cl_B_S")
    ap.add_argument("--flip", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--out", default=str(RESULTS / "bench_impact.json"))
    args = ap.parse_args()
    out = {"command": "python " + " ".join(sys.argv), "code": code_version(),
           "machine": {"python": platform.python_version(), "platform": platform.platform()}}
    if args.small:
        small_part(args, out)
    if args.instances:
        flipped_part(args, out)
    sm = [r for r in out.get("small", []) if "spearman_score" in r]
    if sm:
        out["summary_small"] = {
            "instances": len(sm),
            "median_spearman_score": statistics.median(r["spearman_score"] for r in sm),
            "median_spearman_dual": statistics.median(
                r["spearman_dual"] for r in sm if r["spearman_dual"] == r["spearman_dual"]),
            "max_score_over_certified_drop": max(r["max_score_over_certified_drop"]
                                                 for r in sm)}
        print(json.dumps(out["summary_small"]))
    write_json(args.out, out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
