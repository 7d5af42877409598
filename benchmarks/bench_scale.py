"""Heuristics at scale (issue 19): synthetic sets as in the S-MDEClust paper, and a
quality/speed regression check of ``s-mdeclust`` on the shared instances.

``synthetic``: 2-D Gaussian mixtures (standard deviation 10, equal cluster sizes; the paper
does not say where the centres lie: here uniform in a square of side 40 sqrt(k), a mean
spacing of about 40, four standard deviations), ``pairs`` point pairs drawn uniformly and
labelled must-link when the true labels agree, cannot-link otherwise (the paper's
protocol). On each set s-mdeclust runs
first with ``--time-limit``; blpkm-cc and cop-kmeans then run restarts (``n_init`` large)
for the seconds s-mdeclust used (at least ``--min-time``), so that all three get the same
time. Each run is one process (``/usr/bin/time``-free peak memory: ``ru_maxrss`` of a child
process), one JSON line per run in ``--out``.

Every part appends to ``benchmarks/results/bench_scale.jsonl`` by default, each row naming
its run (``--run``; by default the part's name); ``table`` and ``compare`` take
``--runs`` to pick rows of that file.

``memory``: every built-in heuristic once on one synthetic set (default n = 20 000,
k = 100, 1 000 pairs) with ``--time-limit``: status, objective, seconds and peak memory of
its process.

``assignment``: seconds per call of the assignment engine, decomposed (the default) and
the full MILP, on the same random centres of synthetic sets (same optimal cost checked).

``shared``: s-mdeclust (seed 0, default options) on the 30 glass instances and the seed-0
instances of the eight other shared datasets; one JSON line per instance in ``--out``.
``table`` prints the markdown table of docs/benchmarks.md from synthetic result files.
``compare`` prints, for two such files, the instances whose objective differs by more than
1e-6 relative and the median time ratio.

    python benchmarks/bench_scale.py synthetic --n 1000,5000 --k 2,20 --pairs 1000 --run mine
    python benchmarks/bench_scale.py table benchmarks/results/bench_scale.jsonl --runs mine
    python benchmarks/bench_scale.py assignment --n 1000,20000 --k 100 --pairs 1000,10000
    python benchmarks/bench_scale.py shared --run shared_after
    python benchmarks/bench_scale.py compare BEFORE.jsonl AFTER.jsonl [--runs B A]
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import time

import instances
import numpy as np
from instances import DATASETS, RESULTS, append_jsonl, constraint_files, read_jsonl


def synthetic(n: int, k: int, pairs: int, seed: int = 0, d: int = 2):
    """Data, true labels, ML and CL pairs of one synthetic set (see module doc), in ``d``
    dimensions (the centres uniform in the cube of side 40 sqrt(k))."""
    rng = np.random.default_rng(seed)
    # centres spread so that neighbouring clusters overlap a little at sd 10
    box = 10.0 * 4.0 * math.sqrt(k)
    centres = rng.uniform(-box / 2, box / 2, size=(k, d))
    y = np.arange(n) % k
    X = centres[y] + rng.normal(0.0, 10.0, size=(n, d))
    return (X, y, *_pairs(rng, y, pairs))


def overlapping(n: int, k: int, pairs: int, seed: int = 0, d: int = 2):
    """Data, true labels, ML and CL pairs of a set whose k classes overlap heavily (issue 31):
    class centres uniform in [-1, 1]^2, unit standard deviation, equal class sizes, the data
    standardised (zero mean, unit variance per coordinate); pairs as in :func:`synthetic`.
    The classes are then one blob: with 1 000 pairs and seed 0 they cost 9.8x (n = 1 000,
    k = 20), 9.4x (n = 2 000, k = 20) and 8.8x (n = 10 000, k = 20) the best of 20 k-means
    runs without pairs (``bench_certify.kmeans_best``), but only 2.5x at k = 5 and 1.3x at
    k = 2. ``d``: the dimension (centres in [-1, 1]^d)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1.0, 1.0, size=(k, d))
    y = np.arange(n) % k
    X = centres[y] + rng.normal(0.0, 1.0, size=(n, d))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return (X, y, *_pairs(rng, y, pairs))


# the generators by the name the scripts take on their command lines (--gen)
GENERATORS = {"bench": synthetic, "overlap": overlapping}


def _pairs(rng, y, pairs: int):
    """``pairs`` distinct point pairs drawn uniformly, ML where the labels agree, else CL."""
    n = len(y)
    seen: set[tuple[int, int]] = set()
    ml, cl = [], []
    while len(seen) < pairs:
        i, j = (int(v) for v in rng.choice(n, size=2, replace=False))
        key = (min(i, j), max(i, j))
        if key in seen:
            continue
        seen.add(key)
        (ml if y[i] == y[j] else cl).append(key)
    return np.array(ml, dtype=np.int64).reshape(-1, 2), \
        np.array(cl, dtype=np.int64).reshape(-1, 2)


def run_child(spec: dict, script: str = __file__, flag: str = "_one") -> dict:
    """Run one case in a fresh process (``script flag SPEC_JSON``, which prints the row as
    its last line: :func:`print_row`); its peak RSS is the process's own. Default: one
    heuristic run here."""
    return child_row([sys.executable, script, flag, json.dumps(spec)], spec)


def child_row(cmd: list[str], base: dict) -> dict:
    """The row a child process ``cmd`` printed last, with ``exit`` and the end of its stderr
    added when it did not exit 0; ``base`` with ``status`` "error" when it printed none."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    try:
        row = json.loads(lines[-1]) if lines else None
    except ValueError:
        row = None
    if not isinstance(row, dict):
        return {**base, "status": "error", "exit": p.returncode, "error": p.stderr[-2000:]}
    if p.returncode != 0:  # the row was written: keep it, and say how the process ended
        row.update(exit=p.returncode, stderr=p.stderr[-2000:])
    return row


def print_row(row: dict) -> None:
    """A child's last act: its row as one JSON line, flushed; the process then ends at once
    when a stopped solve left a job running (:func:`pcsos.tree.exit_if_jobs_running`), whose
    finalisation could fail the exit (a 30-minute case once lost its row that way)."""
    print(json.dumps(row), flush=True)
    from pcsos.tree import exit_if_jobs_running

    exit_if_jobs_running(0)


def one(spec: dict) -> dict:
    from threadpoolctl import threadpool_limits

    from pcsos.heuristics import run_heuristic
    from pcsos.problem import Problem, make_instance

    t0 = time.perf_counter()
    if "dataset" in spec:
        data, cons = instances.load(spec["dataset"], spec["file"])
        X, k, ml, cl = data.X, data.k, cons.ml, cons.cl
    else:
        X, _, ml, cl = synthetic(spec["n"], spec["k"], spec["pairs"], spec["data_seed"])
        k = spec["k"]
    with threadpool_limits(1):
        p = Problem.from_instance(make_instance(X, k, ml, cl))
        load = time.perf_counter() - t0
        tl = spec["time_limit"]
        res = run_heuristic(spec["heuristic"], p, seed=spec["seed"],
                            time_limit=None if tl is None else max(tl - load, 0.0),
                            **spec.get("options", {}))
    stats = {key: v for key, v in res.stats.items()
             if isinstance(v, (int, float, str)) and key != "seconds"}
    return {**spec, "status": res.status,
            "objective": res.objective if math.isfinite(res.objective) else None,
            "seconds": time.perf_counter() - t0, "load_seconds": load,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "super_points": p.s, "ml": len(ml), "cl": len(cl), "stats": stats}


def emit(out: pathlib.Path, row: dict, run: str) -> None:
    row = {"run": run, **row}
    append_jsonl(out, row)
    obj = row.get("objective")
    name = f"{row['dataset']}/{row['file']}" if "dataset" in row else \
        f"n={row['n']} k={row['k']} pairs={row['pairs']}"
    print(f"{name} {row['heuristic']:11s} {row['status']:11s} "
          f"{obj if obj is not None else 'inf':>16} {row.get('seconds', 0):8.1f} s "
          f"{row.get('peak_mb', 0):7.0f} MB {row.get('stats', {}).get('stop', '')}",
          flush=True)


def cmd_synthetic(args) -> None:
    env = {"machine": platform.node(), "python": platform.python_version()}
    for n in args.n:
        for k in args.k:
            for pairs in args.pairs:
                base = {"n": n, "k": k, "pairs": pairs, "data_seed": args.data_seed,
                        "seed": args.seed, "env": env}
                smde = run_child({**base, "heuristic": "s-mdeclust",
                                  "time_limit": args.time_limit})
                emit(args.out, smde, args.run)
                budget = max(float(smde.get("seconds") or args.time_limit), args.min_time)
                for name in ("blpkm-cc", "cop-kmeans"):
                    emit(args.out, run_child({**base, "heuristic": name, "time_limit": budget,
                                              "options": {"n_init": 10 ** 6}}), args.run)


def cmd_memory(args) -> None:
    from pcsos.heuristics import available_heuristics

    for name in available_heuristics():
        emit(args.out, run_child({"n": args.n, "k": args.k, "pairs": args.pairs,
                                  "data_seed": args.data_seed, "seed": args.seed,
                                  "heuristic": name, "time_limit": args.time_limit}),
             args.run)


def cmd_assignment(args) -> None:
    from pcsos.heuristics.assignment import AssignmentEngine
    from pcsos.problem import Problem, make_instance

    for n in args.n:
        for k in args.k:
            for pairs in args.pairs:
                X, _, ml, cl = synthetic(n, k, pairs, args.data_seed)
                p = Problem.from_instance(make_instance(X, k, ml, cl))
                rng = np.random.default_rng(args.seed)
                row = {"n": n, "k": k, "pairs": pairs, "super_points": p.s,
                       "cl": len(p.cl), "calls": args.calls}
                for dec in (True, False):
                    if not dec and p.s * k > args.max_full_columns:
                        row["full"] = f"skipped: {p.s * k} columns"
                        continue
                    eng = AssignmentEngine.from_problem(p, decompose=dec)
                    rng = np.random.default_rng(args.seed)
                    secs, costs = [], []
                    for _ in range(args.calls):
                        C = p.centroids[rng.choice(p.s, k, replace=False)]
                        a = eng.solve(C, time_limit=args.call_limit)
                        secs.append(a.seconds)
                        costs.append(a.cost if a.status == "optimal" else None)
                    row["decomposed" if dec else "full"] = {
                        "median_seconds": statistics.median(secs), "max_seconds": max(secs),
                        "costs": costs}
                if isinstance(row.get("full"), dict):
                    row["same_costs"] = all(
                        a is None or b is None or abs(a - b) <= 1e-7 * max(abs(b), 1)
                        for a, b in zip(row["decomposed"]["costs"], row["full"]["costs"],
                                        strict=True))
                row = {"run": args.run, **row}
                append_jsonl(args.out, row)
                print(json.dumps({key: v for key, v in row.items()
                                  if key not in ("decomposed", "full")}),
                      {key: {"median": row[key]["median_seconds"], "max": row[key]["max_seconds"]}
                       if isinstance(row.get(key), dict) else row.get(key)
                       for key in ("decomposed", "full")}, flush=True)


def cmd_shared(args) -> None:
    jobs = [("glass", f) for f in constraint_files("glass")]
    for ds in DATASETS:
        jobs += [(ds, f) for f in constraint_files(ds, seeds={0})]
    done = {(r["dataset"], r["file"]) for r in read_jsonl(args.out)
            if r.get("run", args.run) == args.run}
    for ds, f in jobs:
        if (ds, f.name) in done:
            continue
        emit(args.out, run_child({"dataset": ds, "file": f.name, "heuristic": "s-mdeclust",
                                  "seed": 0, "time_limit": args.time_limit}), args.run)


def _rows(path, runs=None) -> list[dict]:
    """The rows of a results file; ``runs``: of these runs only."""
    return [r for r in read_jsonl(path) if not runs or r.get("run") in runs]


def cmd_table(args) -> None:
    rows: dict[tuple, dict] = {}
    for path in args.files:
        for r in _rows(path, args.runs):
            rows.setdefault((r["n"], r["k"], r["pairs"]), {})[r["heuristic"]] = r
    print("| n | k | pairs (ML / CL) | s-mdeclust | seconds, stop | blpkm-cc | cop-kmeans "
          "| others' time | s-mdeclust vs best other | peak MB (max of 3) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    wins = total = 0
    for key in sorted(rows):
        g = rows[key]
        sm = g.get("s-mdeclust", {})

        def val(r):
            return r.get("objective") if r else None

        others = [val(g.get(h)) for h in ("blpkm-cc", "cop-kmeans")]
        best = min((v for v in others if v is not None), default=None)
        f = val(sm)
        if f is None:
            verdict = "no solution"
        elif best is None:
            verdict = "only s-mdeclust found one"
        else:
            verdict = f"{100 * (f - best) / best:+.3f} %"
        total += 1
        wins += f is not None and (best is None or f <= best * (1 + 1e-6))

        def fmt(v):
            return "none" if v is None else f"{v:,.1f}".replace(",", " ")

        peak = max(r.get("peak_mb", 0) for r in g.values())
        other_t = g.get("blpkm-cc", {}).get("time_limit")
        n, pairs = (f"{v:,}".replace(",", " ") for v in (key[0], key[2]))
        print(f"| {n} | {key[1]} | {pairs} ({sm.get('ml', '?')} / {sm.get('cl', '?')}) "
              f"| {fmt(f)} | {sm.get('seconds', 0):.0f} s, {sm.get('stats', {}).get('stop', '')} "
              f"| {fmt(others[0])} | {fmt(others[1])} | {other_t or 0:.0f} s | {verdict} "
              f"| {peak:.0f} |")
    print(f"\ns-mdeclust no worse than the best of blpkm-cc and cop-kmeans on {wins} of "
          f"{total} sets")


def cmd_compare(args) -> None:
    before, after = args.runs or (None, None)
    a = {(r["dataset"], r["file"]): r for r in _rows(args.before, before and [before])}
    b = {(r["dataset"], r["file"]): r for r in _rows(args.after, after and [after])}
    worse, better, ratios = [], [], []
    for key in sorted(a.keys() & b.keys()):
        fa, fb = a[key]["objective"], b[key]["objective"]
        ratios.append(b[key]["seconds"] / a[key]["seconds"])
        if fa is None or fb is None:
            if fb is None and fa is not None:
                worse.append((key, fa, fb))
            continue
        if fb > fa * (1 + 1e-6):
            worse.append((key, fa, fb))
        elif fb < fa * (1 - 1e-6):
            better.append((key, fa, fb))
    print(f"{len(ratios)} instances in both; worse by > 1e-6 relative: {len(worse)}, "
          f"better: {len(better)}; median time ratio after/before "
          f"{statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f})")
    for key, fa, fb in worse:
        print(f"  worse  {key[0]}/{key[1]}: {fa} -> {fb}")
    for key, fa, fb in better:
        print(f"  better {key[0]}/{key[1]}: {fa} -> {fb}")


def main(argv=None) -> None:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "_one":
        print_row(one(json.loads(sys.argv[2])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    sy = sub.add_parser("synthetic")
    sy.add_argument("--n", type=ints, default=[1000, 5000, 10000, 20000])
    sy.add_argument("--k", type=ints, default=[2, 20, 100])
    sy.add_argument("--pairs", type=ints, default=[1000, 10000])
    sy.add_argument("--time-limit", type=float, default=600.0)
    sy.add_argument("--min-time", type=float, default=10.0)
    sy.add_argument("--seed", type=int, default=0)
    sy.add_argument("--data-seed", type=int, default=0)
    sy.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_scale.jsonl")
    sy.add_argument("--run", default="synthetic", help="the rows' run name (default: %(default)s)")
    me = sub.add_parser("memory")
    me.add_argument("--n", type=int, default=20000)
    me.add_argument("--k", type=int, default=100)
    me.add_argument("--pairs", type=int, default=1000)
    me.add_argument("--time-limit", type=float, default=60.0)
    me.add_argument("--seed", type=int, default=0)
    me.add_argument("--data-seed", type=int, default=0)
    me.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_scale.jsonl")
    me.add_argument("--run", default="memory", help="the rows' run name (default: %(default)s)")
    asg = sub.add_parser("assignment")
    asg.add_argument("--n", type=ints, default=[1000, 20000])
    asg.add_argument("--k", type=ints, default=[20, 100])
    asg.add_argument("--pairs", type=ints, default=[1000, 10000])
    asg.add_argument("--calls", type=int, default=5)
    asg.add_argument("--call-limit", type=float, default=120.0)
    asg.add_argument("--max-full-columns", type=int, default=2_000_000)
    asg.add_argument("--seed", type=int, default=0)
    asg.add_argument("--data-seed", type=int, default=0)
    asg.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_scale.jsonl")
    asg.add_argument("--run", default="assignment",
                     help="the rows' run name (default: %(default)s)")
    sh = sub.add_parser("shared")
    sh.add_argument("--time-limit", type=float, default=300.0)
    sh.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_scale.jsonl")
    sh.add_argument("--run", default="shared",
                    help="the rows' run name; a rerun skips the instances it holds "
                         "(default: %(default)s)")
    ta = sub.add_parser("table")
    ta.add_argument("files", type=pathlib.Path, nargs="+")
    ta.add_argument("--runs", nargs="+", default=None, help="only the rows of these runs")
    co = sub.add_parser("compare")
    co.add_argument("before", type=pathlib.Path)
    co.add_argument("after", type=pathlib.Path)
    co.add_argument("--runs", nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                    help="only the rows of these runs of before and after")
    args = ap.parse_args(argv)
    {"synthetic": cmd_synthetic, "shared": cmd_shared, "compare": cmd_compare,
     "assignment": cmd_assignment, "memory": cmd_memory, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
