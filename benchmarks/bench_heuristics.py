"""Benchmark of the upper-bound heuristics on the shared instances (issue 5, acceptance 3-4).

Runs, on the seed-0 constraint draw (``--seeds``: other draws) of every mix of every
dataset in the shared folder:
S-MDEClust (default settings, SG-MDE, P = 20, N_max = 500; several seeds, each time-boxed),
IPC-k-means (k-means++, 100 starts), BLPKM-CC (100 random starts) and COP-k-means
(100 runs); then times the HiGHS assignment MILP on ECG5000 ml_0_cl_250_0.

Writes benchmarks/results/bench_heuristics.json (rewritten after every instance, so a
partial run keeps its results) and prints a summary; ``--markdown`` prints the tables of
docs/benchmarks.md (Upper-bound heuristics) from an existing JSON file.

    python benchmarks/bench_heuristics.py                 # the full run
    python benchmarks/bench_heuristics.py --quick         # iris + wine only, fewer starts
    python benchmarks/bench_heuristics.py --markdown      # tables from the JSON
    # the other four draws, with smaller budgets, for bench_solve's bound check
    python benchmarks/bench_heuristics.py --seeds 1 2 3 4 --starts 20 --smde-seeds 0 \
        --smde-time-limit 5 --time-limit 60 --skip-assignment \
        --out benchmarks/results/bench_heuristics_draws.json --resume
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import sys
import time

import numpy as np
from instances import (
    DATASETS,
    INSTANCES,
    RESULTS,
    constraint_files,
    constraint_path,
    load_instance,
    write_json,
)
from threadpoolctl import threadpool_limits

from pcsos.heuristics import AssignmentEngine, run_heuristic
from pcsos.heuristics.base import kmeanspp
from pcsos.problem import Problem

OUT = RESULTS / "bench_heuristics.json"
REL = 1e-6  # values within this relative distance of the best count as "best"


def load(folder: pathlib.Path, dataset: str, cfile: pathlib.Path):
    inst = load_instance(dataset, cfile, folder)
    return inst, Problem.from_instance(inst)


def run_one(name, problem, seed, time_limit, options):
    t0 = time.perf_counter()
    res = run_heuristic(name, problem, seed=seed, time_limit=time_limit, **options)
    stats = {k: v for k, v in res.stats.items()
             if isinstance(v, (int, float, str)) and k != "seconds"}
    return {"heuristic": name, "seed": seed, "status": res.status,
            "objective": res.objective if math.isfinite(res.objective) else None,
            "seconds": time.perf_counter() - t0, "stats": stats}


def plan(args):
    smde = {"name": "s-mdeclust", "label": "s-mdeclust (SG-MDE, default)",
            "seeds": args.smde_seeds, "time_limit": args.smde_time_limit, "options": {}}
    ipc = {"name": "ipc-kmeans", "label": f"ipc-kmeans (k-means++, {args.starts} starts)",
           "seeds": [0], "time_limit": args.time_limit, "options": {"n_init": args.starts}}
    blp = {"name": "blpkm-cc", "label": f"blpkm-cc ({args.starts} starts)", "seeds": [0],
           "time_limit": args.time_limit, "options": {"n_init": args.starts}}
    cop = {"name": "cop-kmeans", "label": f"cop-kmeans ({args.starts} runs)", "seeds": [0],
           "time_limit": args.time_limit, "options": {"n_init": args.starts}}
    return [smde, ipc, blp, cop]


def bench_instances(args, out):
    methods = plan(args)
    out["methods"] = [{k: v for k, v in m.items()} for m in methods]
    for ds in args.datasets:
        ds_dir = args.instances / ds
        if not ds_dir.is_dir():
            print(f"skip {ds}: not found", file=sys.stderr)
            continue
        for cfile in constraint_files(ds, seeds=set(args.seeds), folder=args.instances):
            key = f"{ds}/{cfile.stem}"
            if any(r["instance"] == key for r in out["instances"]):
                continue  # already measured (resumed run)
            inst, p = load(args.instances, ds, cfile)
            row = {"instance": key, "dataset": ds, "file": cfile.name, "n": inst.n,
                   "d": inst.d, "k": inst.k, "ml": len(inst.ml), "cl": len(inst.cl),
                   "super_points": p.s, "runs": []}
            for m in methods:
                for seed in m["seeds"]:
                    r = run_one(m["name"], p, seed, m["time_limit"], m["options"])
                    r["method"] = m["label"]
                    row["runs"].append(r)
                    print(f"{key:34s} {m['name']:11s} seed {seed}: {r['status']:11s} "
                          f"{r['objective'] if r['objective'] is not None else 'inf':>14} "
                          f"{r['seconds']:7.2f} s", flush=True)
            vals = [r["objective"] for r in row["runs"] if r["objective"] is not None]
            row["best"] = min(vals) if vals else None
            row["best_by"] = sorted({r["method"] for r in row["runs"]
                                     if r["objective"] is not None
                                     and r["objective"] <= row["best"] * (1 + REL)})
            out["instances"].append(row)
            save(out, args.out)


def bench_assignment(args, out):
    """Acceptance 4: seconds per HiGHS assignment call on ECG5000 ml_0_cl_250_0 (k = 5)."""
    cfile = constraint_path("ECG5000", "ml_0_cl_250_0", args.instances)
    if not cfile.is_file():
        return
    inst, p = load(args.instances, "ECG5000", cfile)
    rng = np.random.default_rng(0)
    eng = AssignmentEngine.from_problem(p)
    t_build = time.perf_counter()
    eng = AssignmentEngine.from_problem(p)
    t_build = time.perf_counter() - t_build
    cold, loop = [], []
    for _ in range(args.assign_calls):  # fresh k-means++ centres each call
        C = p.centroids[kmeanspp(p.centroids, p.e, p.k, rng)]
        cold.append(eng.solve(C).seconds)
    # the calls of real IPC-k-means loops (warm-started, centres moving less and less)
    from pcsos.heuristics.assignment import centres_of
    for _ in range(3):
        C = p.centroids[kmeanspp(p.centroids, p.e, p.k, rng)]
        warm = None
        for _it in range(30):
            a = eng.solve(C, warm=warm)
            loop.append(a.seconds)
            C2 = centres_of(a.labels, p.W, p.e, p.k)
            if np.allclose(C2, C):
                break
            C, warm = C2, a.labels
    out["assignment"] = {
        "instance": "ECG5000/ml_0_cl_250_0", "n": inst.n, "k": inst.k, "cl": len(inst.cl),
        "super_points": p.s, "backend": eng.method, "build_seconds": t_build,
        "random_centres": {"calls": len(cold), "median_seconds": float(np.median(cold)),
                           "max_seconds": float(np.max(cold))},
        "ipc_loop": {"calls": len(loop), "median_seconds": float(np.median(loop)),
                     "max_seconds": float(np.max(loop))},
        "lp_integral_calls": eng._milp.lp_hits, "mip_calls": eng._milp.mip_runs,
    }
    print("assignment:", json.dumps(out["assignment"]), flush=True)
    save(out, args.out)


def save(out, path):
    write_json(path, out)


def markdown(path):
    """The tables of docs/benchmarks.md (Upper-bound heuristics) from the JSON results."""
    out = json.loads(pathlib.Path(path).read_text())
    labels = [m["label"] for m in out["methods"]]
    short = {lab: lab.split(" ")[0] for lab in labels}
    print("| instance | n | k | ML | CL | s | best | "
          + " | ".join(f"{short[lab]} obj / s / fail" for lab in labels) + " |")
    print("|" + "---|" * (7 + len(labels)))
    summary = {lab: {"best": 0, "fail": 0, "runs": 0, "sec": [], "gap": []} for lab in labels}
    for row in out["instances"]:
        cells = []
        for lab in labels:
            runs = [r for r in row["runs"] if r["method"] == lab]
            vals = [r["objective"] for r in runs if r["objective"] is not None]
            fails = sum(r["objective"] is None for r in runs)
            sec = float(np.median([r["seconds"] for r in runs]))
            S = summary[lab]
            S["runs"] += len(runs)
            S["fail"] += fails
            S["sec"].append(sec)
            if vals:
                v = min(vals)
                S["best"] += v <= row["best"] * (1 + REL)
                S["gap"].append(100 * (v - row["best"]) / row["best"])
                txt = f"{v:.6g}"
            else:
                txt = "—"
            fail_txt = f"{fails}/{len(runs)}"
            if lab.startswith("cop"):
                fr = [r["stats"].get("failed_runs", 0) for r in runs]
                nr = [r["stats"].get("runs", 0) for r in runs]
                fail_txt += f" ({sum(fr)}/{sum(nr)} runs)"
            cells.append(f"{txt} / {sec:.2f} / {fail_txt}")
        print(f"| {row['instance']} | {row['n']} | {row['k']} | {row['ml']} | {row['cl']} | "
              f"{row['super_points']} | {row['best']:.6g} | " + " | ".join(cells) + " |")
    print()
    print("| method | instances at best | failed runs | median s / instance | "
          "max gap to best |")
    print("|---|---|---|---|---|")
    n_inst = len(out["instances"])
    for lab in labels:
        S = summary[lab]
        print(f"| {lab} | {S['best']}/{n_inst} | {S['fail']}/{S['runs']} | "
              f"{np.median(S['sec']):.2f} | {max(S['gap'], default=0):.3f}% |")
    if "assignment" in out:
        a = out["assignment"]
        print()
        print(f"Assignment MILP ({a['backend']}) on {a['instance']} (n = {a['n']}, "
              f"k = {a['k']}, {a['cl']} CL): median "
              f"{a['random_centres']['median_seconds']:.4f} s over "
              f"{a['random_centres']['calls']} calls from random centres (max "
              f"{a['random_centres']['max_seconds']:.4f} s); median "
              f"{a['ipc_loop']['median_seconds']:.4f} s over {a['ipc_loop']['calls']} "
              f"warm-started IPC-loop calls; LP relaxation integral on "
              f"{a['lp_integral_calls']} calls, MIP search on {a['mip_calls']}.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=pathlib.Path, default=INSTANCES)
    # smallest first, so that a partial run already covers whole datasets
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--starts", type=int, default=100,
                    help="starts of ipc-kmeans / blpkm-cc, runs of cop-kmeans (default 100)")
    ap.add_argument("--smde-seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--smde-time-limit", type=float, default=20.0,
                    help="time box of each S-MDEClust run in seconds (default 20)")
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="time box of each other heuristic run (default 120)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0],
                    help="constraint draws to run (default 0)")
    ap.add_argument("--assign-calls", type=int, default=21)
    ap.add_argument("--skip-assignment", action="store_true",
                    help="do not time the assignment MILP")
    ap.add_argument("--resume", action="store_true", help="keep the instances already in --out")
    ap.add_argument("--quick", action="store_true", help="iris and wine, 10 starts")
    ap.add_argument("--markdown", action="store_true", help="print tables from --out")
    args = ap.parse_args(argv)
    if args.markdown:
        markdown(args.out)
        return 0
    if args.quick:
        args.datasets, args.starts = ["iris", "wine"], 10
    if not args.instances.is_dir():
        print(f"shared instances not found at {args.instances}", file=sys.stderr)
        return 2
    out = {"command": " ".join(["python", "benchmarks/bench_heuristics.py"]
                               + (argv if argv is not None else sys.argv[1:])),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "platform": platform.platform()},
           "started": time.strftime("%Y-%m-%d %H:%M:%S"),
           "instances": []}
    if args.resume and args.out.is_file():
        old = json.loads(args.out.read_text())
        out["instances"] = old.get("instances", [])
        if "assignment" in old:
            out["assignment"] = old["assignment"]
    # as run_heuristic does: one BLAS thread (small products; threads only contend)
    with threadpool_limits(limits=1, user_api="blas"):
        if not args.skip_assignment:
            bench_assignment(args, out)
    bench_instances(args, out)
    out["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
