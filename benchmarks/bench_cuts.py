"""Benchmarks of the cutting planes (issue 4, acceptance 2-4).

    python benchmarks/bench_cuts.py kernels [--s 800] [--repeat 3]
    python benchmarks/bench_cuts.py root [--datasets iris,wine] [--mixes ml_50_cl_0,...]
                                         [--instances heart/ml_0_cl_100_0,...]
                                         [--draw 0] [--time-limit 120] [--budget 3600]

``kernels``: full triangle scans on s x s matrices on one core (BLAS and kernel single
threaded) against a vectorised numpy reference, plus the branching-score kernels.
``root``: the root cutting-plane loop on the shared instances (``../shared/instances``),
with an upper bound from IPC-k-means (no SDP start, then again from the loop's Z); root safe
bound, gap, cut counts, rounds, seconds, SDP iterations of the warm rounds against the cold
root solve, and the paper's root gap (``../shared/docs/benchmarks.md``) beside it.
Results are merged into ``benchmarks/results/bench_cuts.json`` (one section per command);
``root`` writes after every instance so a time-boxed run keeps what it finished; runs with
different ``--section`` may share the file at once (it is written under a lock).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np
from instances import (
    DATASETS,
    INSTANCES,
    constraint_files,
    constraint_path,
    load_problem,
    merge_json,
    mix_of,
    paper_table,
    parse_name,
    split_name,
)
from instances import RESULTS as RESULTS_DIR
from threadpoolctl import threadpool_limits

RESULTS = RESULTS_DIR / "bench_cuts.json"


# ---------------------------------------------------------------------- results file
def _save(section: str, payload) -> None:
    # two `root` runs with different --section (one per core) may share the file
    merge_json(RESULTS, section, payload, default=_jsonable)


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def _env() -> dict:
    return {"python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_avg": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}


# ---------------------------------------------------------------------- kernels
def numpy_triangle_scan(Z: np.ndarray, eps: float, cap: int, order: np.ndarray) -> int:
    """Vectorised numpy reference: per apex, the s x s violation matrix, counted on j < h."""
    s = len(Z)
    upper = np.triu(np.ones((s, s), dtype=bool), 1)
    found = 0
    for i in order:
        V = ((Z[i, :, None] - Z[i, i]) + Z[i, None, :]) - Z
        hit = (V > eps) & upper
        hit[i, :] = False
        hit[:, i] = False
        found += int(hit.sum())
        if found > cap:
            break
    return min(found, cap)


def _median_time(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def noisy_clustering(rng, s: int, k: int, noise: float) -> np.ndarray:
    lab = rng.permutation(np.r_[np.arange(k), rng.integers(0, k, s - k)])
    sizes = np.bincount(lab)
    Z = (lab[:, None] == lab[None, :]) / sizes[lab][:, None]
    N = rng.normal(scale=noise, size=(s, s))
    return np.ascontiguousarray(Z + (N + N.T) / 2)


def bench_kernels(args) -> dict:
    from pcsos._kernels import branching_direct, branching_scan, separate_triangles

    rng = np.random.default_rng(0)
    s = args.s
    A = rng.random((s, s))
    cases = {
        # eps above every possible violation (< 2): the scan visits all s(s-1)(s-2)/2 x 3
        "random uniform, eps=2 (full scan, nothing collected)":
            (np.ascontiguousarray((A + A.T) / 2), 2.0, 100_000),
        "noisy clustering (k=5, noise 1e-3), eps=1e-4, cap 100000":
            (noisy_clustering(rng, s, 5, 1e-3), 1e-4, 100_000),
        "noisy clustering (k=5, noise 1e-5), eps=1e-4 (full scan)":
            (noisy_clustering(rng, s, 5, 1e-5), 1e-4, 100_000),
    }
    out = {"command": " ".join(["python", *sys.argv]), "s": s, "repeat": args.repeat,
           "threads": 1, "env": _env(), "triangle": [],
           "branching": []}
    order = rng.permutation(s).astype(np.int64)
    with threadpool_limits(1):
        for name, (Z, eps, cap) in cases.items():
            tk, res = _median_time(lambda Z=Z, eps=eps, cap=cap:
                                   separate_triangles(Z, eps, cap, order), args.repeat)
            tn, cnt = _median_time(lambda Z=Z, eps=eps, cap=cap:
                                   numpy_triangle_scan(Z, eps, cap, order),
                                   max(1, args.repeat_numpy))
            assert cnt == len(res[0]), (cnt, len(res[0]))
            row = {"case": name, "kernel_s": tk, "numpy_s": tn, "ratio": tn / tk,
                   "collected": len(res[0]), "hit_cap": bool(res[4])}
            out["triangle"].append(row)
            print(f"triangle  {name}: kernel {tk:.3f} s, numpy {tn:.2f} s, "
                  f"ratio {tn / tk:.0f}x, collected {len(res[0])}", flush=True)
            if cap < 10**6:
                # the loop's default: the cap most violated of the whole matrix
                tm, rm = _median_time(lambda Z=Z, eps=eps, cap=cap:
                                      separate_triangles(Z, eps, cap, order, True),
                                      args.repeat)
                row["kernel_most_s"] = tm
                row["collected_most"] = len(rm[0])
                print(f"          same, the {cap} most violated: kernel {tm:.3f} s, "
                      f"collected {len(rm[0])}", flush=True)
        for name, Z in (("random uniform", cases[next(iter(cases))][0]),
                        ("noisy clustering 1e-3", noisy_clustering(rng, s, 5, 1e-3))):
            tg, rg = _median_time(lambda Z=Z: branching_scan(Z, np.ascontiguousarray(Z @ Z.T)),
                                  args.repeat)
            td, rd = _median_time(lambda Z=Z: branching_direct(Z), args.repeat)
            out["branching"].append({"case": name, "gram_s": tg, "direct_s": td,
                                     "same_pair": rg[:2] == rd[:2],
                                     "score_diff": abs(rg[2] - rd[2])})
            print(f"branching {name}: gram+scan {tg:.3f} s, direct {td:.3f} s, "
                  f"same pair {rg[:2] == rd[:2]}", flush=True)
    _save("kernels", out)
    return out


# ---------------------------------------------------------------------- root loop
def paper_root_gaps() -> dict:
    """(table, dataset, count) -> root gap in %, from the paper's Tables 2-4."""
    return {(table.lower(), ds, total): round(100 * row["root_gap"], 6)
            for (ds, table, total), row in paper_table().items()}


def _mix(fname: str) -> tuple[str, int, int]:
    """('ml' | 'cl' | 'mlcl', ML pairs, CL pairs): the paper's table in lower case."""
    a, b, _ = parse_name(fname)
    return mix_of(a, b)[0].lower(), a, b


def bench_root(args) -> list:
    from pcsos.cuts.loop import CuttingPlaneSettings, cutting_plane_loop
    from pcsos.heuristics import run_heuristic

    inst_dir = INSTANCES
    if not inst_dir.is_dir():
        sys.exit(f"shared instances not found at {inst_dir}")
    paper = paper_root_gaps()
    datasets = args.datasets.split(",") if args.datasets else DATASETS
    rows = []
    section = args.section
    prev = json.loads(RESULTS.read_text()).get(section, []) if (RESULTS.exists()
                                                                 and args.resume) else []
    done = {(r["dataset"], r["file"]) for r in prev}
    rows.extend(prev)
    t_all = time.perf_counter()
    jobs = []
    if args.instances:
        for item in args.instances.split(","):
            ds, stem = split_name(item)
            jobs.append((ds, constraint_path(ds, stem)))
    else:
        for ds in datasets:
            for f in constraint_files(ds, seeds={args.draw}):
                if args.mixes and not any(f.name.startswith(m + "_")
                                          for m in args.mixes.split(",")):
                    continue
                jobs.append((ds, f))
    if args.smallest_first:
        # cheap: shrinking only; the smallest relaxations first so a time box covers most
        def size(job):
            return load_problem(*job).s
        jobs.sort(key=size)
    for ds, f in jobs:
        if (ds, f.name) in done:
            continue
        if time.perf_counter() - t_all > args.budget:
            print(f"budget of {args.budget} s spent: stopping before {ds}/{f.name}", flush=True)
            break
        prob = load_problem(ds, f)
        table, a, b = _mix(f.name)
        t0 = time.perf_counter()
        h0 = run_heuristic("ipc-kmeans", prob, seed=0, time_limit=args.heuristic_time)
        ub = h0.objective
        t_heur = time.perf_counter() - t0
        settings = CuttingPlaneSettings(
            max_rounds_root=args.max_rounds,
            max_collected={f: args.max_collected for f in ("pair", "triangle", "clique")},
            fraction={"pair": args.fraction, "triangle": args.fraction}, collect=args.collect,
            loose_tol=args.loose_tol or None, loose_gap_factor=args.loose_gap_factor or None,
            prune_tol=args.prune_tol, cp_tol=args.cp_tol)
        sdp_opts = {"threads": args.threads, "tol": args.tol}
        loop = cutting_plane_loop(prob, upper_bound=ub, settings=settings, root=True,
                                  bound_settings=sdp_opts, seed=0, time_limit=args.time_limit)
        t1 = time.perf_counter()
        if loop.sdp is not None:
            h1 = run_heuristic("ipc-kmeans", prob, Z=loop.sdp.Z, seed=0,
                               time_limit=args.heuristic_time)
            ub = min(ub, h1.objective)
        t_heur += time.perf_counter() - t1
        lb = loop.lower_bound
        its = [r.iterations for r in loop.rounds]
        warm = its[1:]
        row = {
            "dataset": ds, "file": f.name, "table": table, "ml": a, "cl": b,
            "n": prob.n, "k": prob.k, "size": prob.s, "ub": ub, "lb": lb,
            "root_gap_pct": 100 * (ub - lb) / ub if math.isfinite(ub) else None,
            "paper_root_gap_pct": paper.get((table, ds, a + b if table == "mlcl" else
                                             (a or b))),
            "rounds": loop.n_rounds, "flag": loop.flag, "flag_message": loop.message,
            "cuts_in_model": loop.cuts.counts(), "avg_added": loop.avg_added,
            "cold_root_iterations": its[0] if its else None,
            "warm_round_iterations_avg": statistics.mean(warm) if warm else None,
            "warm_rounds": len(warm), "sdp_iterations": loop.iterations,
            "loop_seconds": loop.seconds, "heuristic_seconds": t_heur,
            "round_bounds": [r.lower_bound for r in loop.rounds],
            "round_iterations": its, "round_status": [r.status for r in loop.rounds],
        }
        if args.cold_check and warm and loop.sdp is not None:
            # the same last model solved cold: what the warm start saved on that round
            from pcsos.bounds import SDPModel, solve_sdp
            model = SDPModel.from_problem(prob, loop.cuts)
            cold = solve_sdp(model, threads=args.threads, tol=args.tol,
                             time_limit=args.time_limit)
            row["cold_last_round_iterations"] = cold.iterations
            row["cold_last_round_status"] = cold.status
        rows.append(row)
        _save(section, rows)
        _save(section + "_meta", {"command": " ".join(["python", *sys.argv]), "env": _env(),
                            "time_limit": args.time_limit, "threads": args.threads,
                            "tol": args.tol, "max_rounds": args.max_rounds,
                            "fraction": args.fraction, "max_collected": args.max_collected,
                            "collect": args.collect,
                            "loose_tol": args.loose_tol,
                            "loose_gap_factor": args.loose_gap_factor,
                            "prune_tol": args.prune_tol, "cp_tol": args.cp_tol})
        print(f"{ds:13s} {f.name:22s} s={prob.s:3d} gap {row['root_gap_pct']:.4f}% "
              f"(paper {row['paper_root_gap_pct']}%) rounds {loop.n_rounds} flag {loop.flag} "
              f"cuts {loop.cuts.m} its cold {row['cold_root_iterations']} warm avg "
              f"{row['warm_round_iterations_avg']} {loop.seconds:.1f} s", flush=True)
    return rows


def report() -> str:
    """Markdown tables of the stored results (what docs/benchmarks.md (Cutting planes) quotes)."""
    data = json.loads(RESULTS.read_text())
    lines = []
    kern = data.get("kernels")
    if kern:
        lines += [f"Kernels, s = {kern['s']}, one thread, median of {kern['repeat']} "
                  f"(load average {kern['env']['load_avg'][0]:.1f} on "
                  f"{kern['env']['cpus']} cores):", "",
                  "| triangle scan | kernel (s) | numpy reference (s) | ratio | collected |",
                  "|---|---|---|---|---|"]
        for r in kern["triangle"]:
            lines.append(f"| {r['case']} | {r['kernel_s']:.3f} | {r['numpy_s']:.2f} | "
                         f"{r['ratio']:.1f}x | {r['collected']} |")
        lines += ["", "| branching score | gram + scan (s) | direct (s) | same pair |",
                  "|---|---|---|---|"]
        for r in kern["branching"]:
            lines.append(f"| {r['case']} | {r['gram_s']:.3f} | {r['direct_s']:.3f} | "
                         f"{r['same_pair']} |")
        lines.append("")
    for key in [k for k in data if k.startswith("root") and not k.endswith("_meta")]:
        rows = data[key]
        meta = data.get(key + "_meta", {})
        lines += [f"Section `{key}`: `{meta.get('command', '?')}`", ""]
        lines += ["| dataset | constraints | s | root gap | paper root gap | rounds | flag | "
                  "cuts P/T/C | cold its | warm its/round | loop s |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            c = r["cuts_in_model"]
            warm = r["warm_round_iterations_avg"]
            cold_last = r.get("cold_last_round_iterations")
            cold_note = ("" if cold_last is None else
                         f"; last round {r['round_iterations'][-1]}, same model cold {cold_last}")
            lines.append(
                f"| {r['dataset']} | {r['file'][:-4]} | {r['size']} | "
                f"{r['root_gap_pct']:.4f}% | {r['paper_root_gap_pct']}% | {r['rounds']} | "
                f"{r['flag']} | {c['pair']}/{c['triangle']}/{c['clique']} | "
                f"{r['cold_root_iterations']} | "
                f"{'-' if warm is None else f'{warm:.0f}'}"
                f"{cold_note} | "
                f"{r['loop_seconds']:.1f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    from pcsos.cuts.loop import CuttingPlaneSettings
    from pcsos.cuts.separation import COLLECT

    d = CuttingPlaneSettings()  # the loop's defaults, so that the benchmark cannot disagree
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels", help="triangle scan and branching kernels vs numpy")
    k.add_argument("--s", type=int, default=800)
    k.add_argument("--repeat", type=int, default=3)
    k.add_argument("--repeat-numpy", type=int, default=1)
    r = sub.add_parser("root", help="root cutting-plane loop on the shared instances")
    r.add_argument("--datasets", default=None, help="comma list (default: all 8)")
    r.add_argument("--mixes", default=None, help="comma list of prefixes like ml_50_cl_0")
    r.add_argument("--draw", type=int, default=0, help="constraint draw (default 0)")
    r.add_argument("--time-limit", type=float, default=120.0, help="loop seconds per instance")
    r.add_argument("--heuristic-time", type=float, default=20.0)
    r.add_argument("--budget", type=float, default=3600.0, help="total seconds")
    r.add_argument("--max-rounds", type=int, default=80)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--cp-tol", type=float, default=d.cp_tol,
                   help=f"the loop stops when a round improves the bound by less than this, "
                        f"relatively (default {d.cp_tol:g}, the paper's)")
    r.add_argument("--collect", choices=COLLECT, default=d.collect,
                   help=f"which violated triangles fill --max-collected (default {d.collect})")
    r.add_argument("--fraction", type=float, default=0.05,
                   help="share of collected pair/triangle cuts added (default 0.05)")
    r.add_argument("--max-collected", type=int, default=100_000,
                   help="violated cuts collected per family and round (default 100000)")
    r.add_argument("--tol", type=float, default=1e-5)
    r.add_argument("--loose-tol", type=float, default=1e-3,
                   help="KKT tolerance of the intermediate rounds (0 = all rounds at --tol)")
    r.add_argument("--loose-gap-factor", type=float, default=d.loose_gap_factor,
                   help=f"intermediate rounds' tolerance at most this times the gap "
                        f"(default {d.loose_gap_factor:g}; 0 = --loose-tol alone)")
    r.add_argument("--prune-tol", type=float, default=d.prune_tol,
                   help=f"the loop stops once (UB - LB) / UB <= this (default "
                        f"{d.prune_tol:g}, the solver's); smaller measures how far below it "
                        f"the root gets")
    r.add_argument("--instances", default=None,
                   help="comma list of dataset/file-stem, e.g. heart/ml_0_cl_100_0 "
                        "(instead of --datasets/--mixes)")
    r.add_argument("--cold-check", action="store_true",
                   help="also solve the last round's model cold (iterations comparison)")
    r.add_argument("--smallest-first", action="store_true",
                   help="run the instances by increasing root size")
    r.add_argument("--resume", action="store_true", help="keep finished rows of the file")
    r.add_argument("--section", default="root",
                   help="key of the results file to write (default root)")
    sub.add_parser("report", help="print the stored results as markdown tables")
    args = p.parse_args(argv)
    if args.cmd == "kernels":
        bench_kernels(args)
    elif args.cmd == "root":
        bench_root(args)
    else:
        print(report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
