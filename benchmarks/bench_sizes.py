"""Cluster sizes: pcsos against k-means-constrained, and exact class sizes (issue 33).

Parts, one JSON-lines results file (``benchmarks/results/bench_sizes.jsonl``; rows
of the same ``--run`` already there are skipped, so an interrupted run resumes, and a new
run name measures again; the rows without a name are those of no ``--run``):

* ``kmc``: every shared dataset and two synthetic sets (n = 1 000 and 5 000, d = 2, k = 5,
  the generator of bench_scale.py), no pairs, size_min = floor(n / (2k)) and
  size_max = ceil(1.5 n / k). k-means-constrained 0.9.1 (``KMeansConstrained``, its
  defaults, ``random_state=0``) and ``pcsos.solve`` with the same bounds. Each row: both
  objectives (the k-means SSE of the labels, recomputed by ``pcsos.problem.sse`` for
  both), both times, pcsos's
  status, bound and gap, and the gap that pcsos's bound proves for k-means-constrained's
  answer, (SSE_kmc - LB) / SSE_kmc.
* ``exact``: iris, wine and seeds with their true class sizes (50/50/50, 59/71/48,
  70/70/70), beside the unconstrained solve.
* ``ranges``: the kmc part's size bounds at other k (``RANGES``), one engine per run
  (``--bound``): which engine 'auto' should take for bounded sizes.
* ``cases``: the two open cases of issue 50: glass with sizes 17..54, and data/blobs.txt
  with exact sizes 30, 25, 20; ``pcsos.solve`` with its defaults (the bound engine 'auto'),
  and which engine bounded.

    python benchmarks/bench_sizes.py [--part kmc,exact,cases] [--time-limit 600] [--workers 2]
    python benchmarks/bench_sizes.py --report      # the tables of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import platform
import sys
import time

import numpy as np
from bench_scale import synthetic
from instances import DATASETS, RESULTS, append_jsonl, code_version, done_rows, load_data

from pcsos.problem import sse

DEFAULT_OUT = RESULTS / "bench_sizes.jsonl"
KMC_DATASETS = ("iris", "wine", "connectionist", "seeds", "heart", "vertebral", "glass",
                "ECG5000", "computers", "abalone")
TRUE_SIZES = {"iris": (50, 50, 50), "wine": (59, 71, 48), "seeds": (70, 70, 70)}
#: issue 50's open cases: (data, its size constraints)
CASES = {"glass_17_54": ("glass", {"size_min": 17, "size_max": 54}),
         "blobs_30_25_20": ("blobs", {"sizes": (30, 25, 20)})}
#: the ``ranges`` part: (dataset, k), the kmc part's bounds at other k, for 'auto''s rule
#: on bounded sizes (run it once per engine, ``--bound sdp`` and ``--bound colgen``)
RANGES = (("iris", 3), ("iris", 4), ("iris", 6), ("seeds", 3), ("seeds", 4), ("seeds", 6),
          ("wine", 3), ("wine", 6), ("vertebral", 2), ("vertebral", 4), ("vertebral", 6),
          ("heart", 2), ("heart", 6))
BLOBS = pathlib.Path(__file__).resolve().parents[1] / "data" / "blobs.txt"
assert set(DATASETS) <= set(KMC_DATASETS)


def data_of(name: str):
    if name == "blobs":
        X = np.loadtxt(BLOBS, skiprows=1, ndmin=2)
        return X, int(BLOBS.read_text().split()[2])
    if name.startswith("synthetic"):
        n = int(name.split("_")[1])
        X, _y, _ml, _cl = synthetic(n, 5, 0, seed=0)
        return X, 5
    d = load_data(name)
    return d.X, d.k


def kmc_bounds(n: int, k: int) -> tuple[int, int]:
    """The kmc part's size bounds: floor(n / (2k)) and ceil(1.5 n / k)."""
    return n // (2 * k), math.ceil(1.5 * n / k)


def run_kmc(X, k, lo, hi) -> tuple[float, float, np.ndarray]:
    from k_means_constrained import KMeansConstrained

    t = time.perf_counter()
    est = KMeansConstrained(n_clusters=k, size_min=lo, size_max=hi, random_state=0)
    labels = est.fit_predict(np.asarray(X, dtype=np.float64))
    return sse(X, labels), time.perf_counter() - t, labels


def run_pcsos(X, k, args, **sizes) -> dict:
    import pcsos

    opts = pcsos.SolverOptions(time_limit=args.time_limit, workers=args.workers, seed=0,
                               bound_settings={"engine": args.bound})
    t = time.perf_counter()
    r = pcsos.solve(X, k, options=opts, **sizes)
    secs = time.perf_counter() - t
    cnt = sorted(np.bincount(r.labels).tolist()) if r.labels is not None else None
    return {"objective": sse(X, r.labels) if r.labels is not None else math.inf,
            "reported": r.objective, "lower_bound": r.lower_bound, "gap": r.gap,
            "status": r.status, "nodes": r.nodes, "seconds": secs, "sizes_found": cnt,
            "root_gap": r.root_gap,
            "engines": sorted({row["engine"] for row in r.log if "engine" in row})}


def part_kmc(args, done, out):
    names = [*KMC_DATASETS, "synthetic_1000", "synthetic_5000"]
    for name in names:
        key = f"kmc/{name}"
        if key in done:
            continue
        X, k = data_of(name)
        n = len(X)
        lo, hi = kmc_bounds(n, k)
        print(f"{key} (n={n}, k={k}, sizes {lo}..{hi}) ...", flush=True)
        kmc_obj, kmc_t, kmc_lab = run_kmc(X, k, lo, hi)
        cnt = np.bincount(kmc_lab, minlength=k)
        row = {"instance": key, "n": n, "k": k, "size_min": lo, "size_max": hi,
               "kmc_objective": kmc_obj, "kmc_seconds": kmc_t,
               "kmc_sizes_ok": bool(cnt.min() >= lo and cnt.max() <= hi),
               "pcsos": run_pcsos(X, k, args, size_min=lo, size_max=hi)}
        p = row["pcsos"]
        row["kmc_certified_gap"] = ((kmc_obj - p["lower_bound"]) / kmc_obj
                                    if math.isfinite(p["lower_bound"]) else math.inf)
        emit(row, args, out, done)
        print(f"   kmc {kmc_obj:.6g} in {kmc_t:.1f} s; pcsos {p['status']} {p['objective']:.6g}"
              f" (gap {p['gap']:.2e}) in {p['seconds']:.1f} s", flush=True)


def part_exact(args, done, out):
    for name, sizes in TRUE_SIZES.items():
        key = f"exact/{name}"
        if key in done:
            continue
        X, k = data_of(name)
        print(f"{key} sizes {sizes} ...", flush=True)
        row = {"instance": key, "n": len(X), "k": k, "sizes": list(sizes),
               "unconstrained": run_pcsos(X, k, args),
               "exact": run_pcsos(X, k, args, sizes=sizes)}
        emit(row, args, out, done)
        e, u = row["exact"], row["unconstrained"]
        print(f"   exact {e['status']} {e['objective']:.6g} gap {e['gap']:.2e} "
              f"{e['seconds']:.1f} s; unconstrained {u['status']} {u['objective']:.6g} "
              f"{u['seconds']:.1f} s", flush=True)


def part_ranges(args, done, out):
    for name, k in RANGES:
        key = f"ranges/{name}/{k}"
        if key in done:
            continue
        X, _k = data_of(name)
        n = len(X)
        lo, hi = kmc_bounds(n, k)
        print(f"{key} (n={n}, d={X.shape[1]}, sizes {lo}..{hi}, {args.bound}) ...", flush=True)
        row = {"instance": key, "n": n, "d": int(X.shape[1]), "k": k, "size_min": lo,
               "size_max": hi, "pcsos": run_pcsos(X, k, args, size_min=lo, size_max=hi)}
        emit(row, args, out, done)
        p = row["pcsos"]
        print(f"   {p['status']} {p['objective']:.8g} gap {p['gap']:.2e} {p['nodes']} nodes "
              f"{p['seconds']:.1f} s {p['engines']}", flush=True)


def part_cases(args, done, out):
    for key, (name, sizes) in CASES.items():
        key = f"cases/{key}"
        if key in done:
            continue
        X, k = data_of(name)
        print(f"{key} {sizes} ...", flush=True)
        row = {"instance": key, "n": len(X), "k": k, **{a: list(v) if isinstance(v, tuple)
                                                         else v for a, v in sizes.items()},
               "pcsos": run_pcsos(X, k, args, **sizes)}
        emit(row, args, out, done)
        p = row["pcsos"]
        print(f"   {p['status']} {p['objective']:.8g} gap {p['gap']:.2e} root gap "
              f"{p['root_gap']:.2e} {p['nodes']} nodes {p['seconds']:.1f} s {p['engines']}",
              flush=True)


def report(rows: dict) -> str:
    """The two Markdown tables of docs/benchmarks.md from the results file."""
    lines = ["| instance | n | k | sizes | k-means-constrained SSE | pcsos SSE | pcsos status "
             "(gap) | gap proved for kmc | kmc s | pcsos s |", "|---" * 10 + "|"]
    for key, r in rows.items():
        if not key.startswith("kmc/"):
            continue
        p = r["pcsos"]
        lines.append(f"| {key[4:]} | {r['n']} | {r['k']} | {r['size_min']}..{r['size_max']} | "
                     f"{r['kmc_objective']:.8g} | {p['objective']:.8g} | {p['status']} "
                     f"({100 * p['gap']:.3f} %) | {100 * r['kmc_certified_gap']:.3f} % | "
                     f"{r['kmc_seconds']:.1f} | {p['seconds']:.1f} |")
    lines += ["", "| dataset | sizes | exact: SSE | status (gap) | s | nodes | unconstrained: "
              "SSE | s | its sizes |", "|---" * 9 + "|"]
    for key, r in rows.items():
        if not key.startswith("exact/"):
            continue
        e, u = r["exact"], r["unconstrained"]
        lines.append(f"| {key[6:]} | {'/'.join(map(str, r['sizes']))} | {e['objective']:.8g} | "
                     f"{e['status']} ({100 * e['gap']:.4f} %) | {e['seconds']:.1f} | "
                     f"{e['nodes']} | {u['objective']:.8g} | {u['seconds']:.1f} | "
                     f"{'/'.join(map(str, u['sizes_found'] or []))} |")
    lines += ["", "| case | n | k | sizes | engine | status (gap) | root gap | nodes | s |",
              "|---" * 9 + "|"]
    for key, r in rows.items():
        if not key.startswith("cases/"):
            continue
        p = r["pcsos"]
        sz = ("/".join(map(str, r["sizes"])) if "sizes" in r
              else f"{r['size_min']}..{r['size_max']}")
        lines.append(f"| {key[6:]} | {r['n']} | {r['k']} | {sz} | "
                     f"{', '.join(p.get('engines', []))} | {p['status']} "
                     f"({100 * p['gap']:.4f} %) | {100 * p['root_gap']:.4f} % | {p['nodes']} | "
                     f"{p['seconds']:.1f} |")
    return "\n".join(lines)


def emit(row, args, out, done):
    if args.run is not None:
        row["run"] = args.run
    row.update(time_limit=args.time_limit, workers=args.workers, code=args.code,
               machine={"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform()},
               command=" ".join(["python", "benchmarks/bench_sizes.py", *args.argv]))
    append_jsonl(out, row)
    done[row["instance"]] = row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", default="exact,kmc", help="comma list of exact, kmc, ranges, cases")
    ap.add_argument("--time-limit", type=float, default=600.0, help="per pcsos solve (s)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--bound", choices=("auto", "sdp", "colgen"), default="auto",
                    help="the node bound's engine (BoundSettings.engine)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--report", action="store_true", help="only print the tables")
    ap.add_argument("--run", default=None,
                    help="this run's name, stored in every row; resuming and the report take "
                         "the rows of this run only (default: the rows without a name)")
    args = ap.parse_args(argv)
    if args.report:
        print(report(done_rows(args.out, run=args.run)))
        return 0
    args.argv = list(argv if argv is not None else sys.argv[1:])

    args.code = code_version()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = done_rows(args.out, run=args.run)
    for part in args.part.split(","):
        {"exact": part_exact, "kmc": part_kmc, "ranges": part_ranges,
         "cases": part_cases}[part.strip()](
            args, done, args.out)
    print(report(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
