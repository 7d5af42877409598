"""How high can the set-partitioning LP's bound go on an instance? An upper estimate of the
LP's value, for deciding whether the LP engine could close a case at its root.

Column generation with the heuristic pricing only (pcsos.bounds.colgen.pricing
.price_heuristic, Lloyd steps from random centres and from the master's clusters' means),
the duals priced smoothed towards those of the best heuristic Lagrangian value (Wentges),
over pcsos's own restricted master (pcsos.bounds.colgen.master.Master, no dual box). The
restricted master's value is at least the LP's whatever columns it holds, so its last value
is a proven upper bound on the LP's value and hence on any bound the LP engine can prove at
the root; it is not a lower bound on anything. The "gap at least" it reports is the
incumbent's distance to that value: the LP bound's root gap cannot be smaller.

    python benchmarks/lp_value.py glass --size-min 17 --size-max 54 --time-limit 600 \
        --run glass_17_54
    python benchmarks/lp_value.py --gen overlap --n 2000 -k 20 --pairs 500 --time-limit 1800

(the second: an instance of the benchmarks' generators, bench_scale.GENERATORS, with its
must-link and cannot-link pairs, which the columns obey).

One JSON line per run in ``benchmarks/results/lp_value.jsonl``: the master's value after
each iteration that lowered it, the incumbent (the best of ``--starts`` s-mdeclust runs) and
the seconds.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time

import numpy as np
from bench_scale import GENERATORS
from bench_sizes import data_of
from instances import RESULTS, append_jsonl, code_version

from pcsos.bounds.colgen.aggregation import Aggregation
from pcsos.bounds.colgen.engine import _build, _clusters, _improving
from pcsos.bounds.colgen.pricing import PricingData, price_heuristic
from pcsos.heuristics import run_heuristic
from pcsos.problem import Problem, make_instance

DEFAULT_OUT = RESULTS / "lp_value.jsonl"
#: smoothing of the priced duals towards the best ones (as the engine's SMOOTHING)
SMOOTHING = 0.7
#: random centres per iteration, and columns added per iteration at most
CENTRES = 40
COLUMNS = 150


def estimate(problem: Problem, labels: np.ndarray, *, time_limit: float, seed: int = 0,
             verbose: bool = False) -> dict:
    """Generate columns until no heuristic column prices out or the time is spent. The
    result's ``duals`` are the last master's (an array, not for the JSON row)."""
    rng = np.random.default_rng(seed)
    data = PricingData.from_problem(problem)
    s = problem.s
    big = 2.0 * float(np.sum(data.q)) + 1.0
    start = _clusters(labels)
    # the simplex: its value is the restricted master's exactly (an interior point's is
    # within a tolerance), and this script reports that value as at least the LP's
    master = _build(Aggregation.singletons(data.e), data, big, start,
                    [data.cost(np.asarray(c)) for c in start], {}, "simplex")
    t0 = time.perf_counter()
    best_pi, best_L, history, it = None, -math.inf, [], 0
    value, pi0 = math.inf, None
    while time.perf_counter() - t0 < time_limit:
        it += 1
        pi0, sigma, lam, value = master.solve()
        pi = pi0 if best_pi is None else SMOOTHING * best_pi + (1 - SMOOTHING) * pi0
        used = np.flatnonzero(lam > 1e-9)
        means = [data.m[list(master.columns[j])].mean(axis=0) for j in used]
        centres = np.vstack([data.m[rng.choice(s, min(CENTRES, s), replace=False)], *means])
        found = price_heuristic(data, pi, centres, max_columns=COLUMNS)
        # the heuristic Lagrangian value at pi (an estimate only: the pricing is not exact)
        least = np.zeros(len(data.classes))
        for rc, col in found:
            j = data.size_class(col)
            least[j] = min(least[j], rc)
        L = float(pi.sum()) + float(np.dot([c for _, _, c in data.classes], least))
        if L > best_L:
            best_L, best_pi = L, pi.copy()
        if not history or value < history[-1][2] - 1e-12 * abs(value):
            history.append((it, round(time.perf_counter() - t0, 2), value))
        if verbose:
            print(f"it {it:5d} master {value:.6f} heuristic L {best_L:.6f} "
                  f"columns {len(master.columns)} ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr)
        # the columns that price out against the master's own duals
        new = _improving(data, found, pi0, sigma, 1e-9, master.index)
        if not new and best_pi is not None and np.allclose(pi, pi0):
            break
        if not new:
            best_pi = pi0.copy()  # smoothing found nothing: price the master's own duals
            continue
        master.add([c for c, _ in new], [v for _, v in new],
                   classes=[data.size_class(c) for c, _ in new])
    return {"master_value": value, "duals": pi0, "heuristic_L": best_L, "iterations": it,
            "seconds": round(time.perf_counter() - t0, 2), "columns": len(master.columns),
            "artificial_weight": master.artificial_weight(), "history": history}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("data", nargs="?", help="a shared dataset's name (or 'blobs')")
    what.add_argument("--gen", choices=sorted(GENERATORS), help="a generator of bench_scale")
    ap.add_argument("--n", type=int, default=2000, help="with --gen")
    ap.add_argument("--pairs", type=int, default=0, help="with --gen")
    ap.add_argument("--d", type=int, default=2, help="with --gen")
    ap.add_argument("-k", type=int, default=None, help="default: the dataset's")
    ap.add_argument("--size-min", type=int, default=None)
    ap.add_argument("--size-max", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--starts", type=int, default=5, help="s-mdeclust runs for the incumbent")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run", default="default")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.gen:
        if args.k is None:
            ap.error("--gen needs -k")
        k = args.k
        X, _, ml, cl = GENERATORS[args.gen](args.n, k, args.pairs, args.seed, d=args.d)
        name = f"{args.gen}_n{args.n}_k{k}_pairs{args.pairs}_d{args.d}_seed{args.seed}"
    else:
        X, k0 = data_of(args.data)
        k = args.k or k0
        ml = cl = ()
        name = args.data
    inst = make_instance(X, k, ml, cl, size_min=args.size_min, size_max=args.size_max)
    problem = Problem.from_instance(inst)
    runs = [run_heuristic("s-mdeclust", problem, seed=args.seed + t) for t in range(args.starts)]
    best = min((r for r in runs if r.labels is not None), key=lambda r: r.objective)
    row = {"run": args.run, "data": name, "n": int(X.shape[0]), "d": int(X.shape[1]),
           "k": k, "size_min": args.size_min, "size_max": args.size_max,
           "incumbent": best.objective, "time_limit": args.time_limit}
    row.update(estimate(problem, np.asarray(best.super_labels), time_limit=args.time_limit,
                        seed=args.seed, verbose=args.verbose))
    del row["duals"]
    row["gap_at_least"] = (best.objective - row["master_value"]) / best.objective
    row.update(code=code_version(), machine=platform.platform(),
               command="python " + " ".join(sys.argv))
    append_jsonl(args.out, row)
    print(f"{name} k={k}: master {row['master_value']:.6f} (an upper bound on the LP's "
          f"value), incumbent {best.objective:.6f}: the LP's root gap is at least "
          f"{100 * row['gap_at_least']:.4f} % ({row['iterations']} iterations, "
          f"{row['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
