"""Benchmark of the root SDP bound (issue 3, acceptance 2 and 3).

For the seed-0 draw of every constraint mix of the shared datasets (files
``ml_*_cl_*_0.txt``): the root SDP without cuts by the ADMM, with s, the objective, the safe
bound, their relative gap (acceptance 2: <= 1e-5), iterations and seconds. Then the time of
SCS (via cvxpy, eps_abs = eps_rel = tol) on the smallest instances with s >= 100, and a warm
re-solve after adding the 1000 most violated triangle cuts against a cold solve of the same
model (``--warm-rounds R``: R such rounds, each adding the 1000 most violated triangles
that the model lacks at the last warm solution). Results go to key ``--run`` of the JSON
object in ``benchmarks/results/bench_sdp.json`` (``--out``; the other keys are kept).

    python benchmarks/bench_sdp.py [--threads 1] [--datasets iris wine ...] [--budget 1500]
        [--instances iris/ml_50_cl_50_0 ...] [--baseline] [--cp iris/ml_50_cl_50_0 ...]
        [--warm iris/ml_50_cl_50_0 ...] [--warm-rounds 4] [--run NAME]

``--instances`` replaces the sweep by the named instances; ``--baseline`` also runs every
ADMM solve with the earlier settings (no Anderson acceleration, sigma ratio 3), in the same
process, for before/after ratios; ``--bound-match`` times both solvers to a safe bound of
a given quality (:func:`bound_match`); ``--cp`` runs the root cutting-plane loop
(:func:`pcsos.cuts.loop.cutting_plane_loop`, default settings, seed 0) on the named
instances and records the iterations of every round (with ``--baseline`` also with the
earlier settings).
"""

from __future__ import annotations  # noqa: I001 (pcsos first, below)

# first: pcsos shortens OpenBLAS's worker spin (pcsos/__init__.py) only where it loads
# before numpy, and these BLAS threads must behave as the pcsos command's
import pcsos  # noqa: F401
import argparse
import os
import platform
import sys
import time

import numpy as np
from instances import INSTANCES, RESULTS, ROOT, constraint_files, dataset_dirs, merge_json
from instances import load_problem as load
from threadpoolctl import threadpool_limits

from pcsos.bounds import SDPModel, WarmStart, solve_sdp
from pcsos.bounds.cutset import CutSet
from pcsos.cuts.separation import drop_known
from pcsos.io import jsonable

# the ADMM settings before the Anderson acceleration
BASELINE = {"anderson": 0, "sigma_ratio": 3.0}


def top_triangles(Z: np.ndarray, count: int) -> CutSet:
    """The ``count`` most violated triangle cuts Z_ii + Z_jh - Z_ij - Z_ih >= 0 (exhaustive)."""
    s = len(Z)
    best_v, best = [], []
    jj, hh = np.triu_indices(s, 1)
    for i in range(s):
        v = Z[i, jj] + Z[i, hh] - Z[i, i] - Z[jj, hh]
        ok = (jj != i) & (hh != i) & (v > 1e-6)
        if ok.any():
            idx = np.flatnonzero(ok)
            if len(idx) > count:
                idx = idx[np.argpartition(-v[idx], count)[:count]]
            best_v.append(v[idx])
            best.append(np.c_[np.full(len(idx), i), jj[idx], hh[idx]])
    if not best:
        return CutSet.empty()
    V = np.concatenate(best_v)
    T = np.vstack(best)
    order = np.argsort(-V)[:count]
    return CutSet.triangles(T[order, 0], T[order, 1], T[order, 2])


def _with_cold_twin(solve, pairs: list):
    """``solve_sdp`` that also solves every warm-started call cold (same model and options)
    and appends a record to ``pairs``: warm and cold iterations, tol, the cuts in the model
    and whether the cut set changed since the previous call (False: the loop's re-solve of
    the same model at a tighter tolerance). Returns the warm result, so the loop runs as
    without it."""
    last = [None]  # the cut set of the previous call

    def wrapped(model, *, warm_start=None, **kw):
        res = solve(model, warm_start=warm_start, **kw)
        if warm_start is not None:
            cold = solve(model, **kw)
            pairs.append({"warm": int(res.iterations), "cold": int(cold.iterations),
                          "tol": float(kw.get("tol", 0)), "cuts": int(model.cuts.m),
                          "new_cuts": model.cuts is not last[0]})
        last[0] = model.cuts
        return res
    return wrapped


def bound_match(inst: str, args) -> dict:
    """Seconds each solver needs for a safe bound within a relative gap of the optimum.

    Both the ADMM and SCS solve the root SDP (no cuts) at every ``--match-tols`` tolerance;
    the reference is the best safe bound of all runs and of an ADMM solve at
    ``--match-ref-tol`` (every safe bound is <= the SDP optimum, so the gaps measured against
    it are, if anything, too small, for both solvers alike). For each ``--match-targets``
    gap the time of a solver is that of its fastest run whose bound is within the gap.
    """
    ds, name = inst.split("/")
    P = load(ds, name)
    model = SDPModel.from_problem(P)
    ref = solve_sdp(model, tol=args.match_ref_tol, max_iter=200000)
    runs = []
    for backend in ("admm", "scs"):
        for tol in args.match_tols:
            r = solve_sdp(model, backend=backend, tol=tol, time_limit=args.scs_time_limit)
            runs.append({"backend": backend, "tol": tol, "seconds": r.seconds,
                         "lower_bound": r.lower_bound, "sdp_value": r.sdp_value,
                         "iterations": r.iterations, "status": r.status})
            print(f"match {inst} {backend} tol {tol:g}: {r.seconds:.2f}s "
                  f"lb {r.lower_bound:.10g} {r.status}", flush=True)
    best = max([ref.lower_bound] + [run["lower_bound"] for run in runs])
    for run in runs:
        run["rel_gap"] = (best - run["lower_bound"]) / max(1.0, abs(best))
    targets = []
    for eps in args.match_targets:
        row = {"target": eps}
        for backend in ("admm", "scs"):
            ok = [run for run in runs if run["backend"] == backend and run["rel_gap"] <= eps]
            fastest = min(ok, key=lambda run: run["seconds"]) if ok else None
            row[backend + "_seconds"] = fastest["seconds"] if fastest else None
            row[backend + "_tol"] = fastest["tol"] if fastest else None
        both = row["admm_seconds"] is not None and row["scs_seconds"] is not None
        row["ratio"] = row["scs_seconds"] / max(row["admm_seconds"], 1e-9) if both else None
        targets.append(row)
        print(f"match {inst} gap <= {eps:g}: ADMM {row['admm_seconds']} (tol "
              f"{row['admm_tol']}), SCS {row['scs_seconds']} (tol {row['scs_tol']}), "
              f"ratio {row.get('ratio')}", flush=True)
    return {"instance": inst, "s": P.s, "k": P.k, "reference_bound": best,
            "reference_admm_bound": ref.lower_bound, "reference_admm_value": ref.sdp_value,
            "reference_admm_status": ref.status, "reference_admm_seconds": ref.seconds,
            "runs": runs, "targets": targets}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--budget", type=float, default=1800.0,
                    help="seconds for the root sweep; instances left out are listed")
    ap.add_argument("--scs-sizes", type=int, nargs="*", default=[100, 150, 200, 250],
                    help="compare with SCS on the instance closest to each of these s")
    ap.add_argument("--scs-time-limit", type=float, default=600.0)
    ap.add_argument("--bound-match", nargs="*", default=[],
                    help="time to a certified bound of given quality, ADMM vs SCS, on these "
                         "instances (see --match-tols, --match-targets)")
    ap.add_argument("--match-tols", type=float, nargs="*",
                    default=[1e-4, 3e-5, 1e-5, 3e-6, 1e-6],
                    help="tolerances at which both solvers run for --bound-match")
    ap.add_argument("--match-targets", type=float, nargs="*", default=[1e-5, 3e-6],
                    help="bound qualities (relative gap to the reference) for --bound-match")
    ap.add_argument("--match-ref-tol", type=float, default=1e-8,
                    help="ADMM tolerance of the reference solve for --bound-match")
    ap.add_argument("--warm", nargs="*", default=["iris/ml_50_cl_50_0", "wine/ml_50_cl_50_0",
                                                  "heart/ml_50_cl_50_0"])
    ap.add_argument("--warm-rounds", type=int, default=1,
                    help="rounds of --warm: each adds the 1000 most violated triangles that "
                         "the model lacks at the last warm solution and solves warm and cold")
    ap.add_argument("--first", nargs="*", default=["ECG5000/ml_0_cl_150_0"],
                    help="instances run before the others (the s = 500 time target)")
    ap.add_argument("--instances", nargs="*", default=None,
                    help="dataset/name list instead of the seed-0 sweep")
    ap.add_argument("--baseline", action="store_true",
                    help="also solve with the earlier ADMM settings (no acceleration)")
    ap.add_argument("--cp", nargs="*", default=[],
                    help="root cutting-plane loop on these instances (iterations per round)")
    ap.add_argument("--cp-time-limit", type=float, default=300.0)
    ap.add_argument("--cp-cold", action="store_true",
                    help="with --cp: also solve every warm-started round cold (same model, "
                         "tolerance and options) and record both iteration counts")
    ap.add_argument("--linsolve-cuts", type=int, nargs="*", default=[],
                    help="ms per iteration of 100 warm iterations with this many cuts (the "
                         "most violated triangles at the root), for each (y, u) solver of "
                         "the ADMM: entry-space dense Cholesky, cut-space sparse LU, "
                         "entry-space sparse LU, CG")
    ap.add_argument("--linsolve-instance", default=None,
                    help="instance of --linsolve-cuts (default: the first --warm one)")
    ap.add_argument("--out", default=str(RESULTS / "bench_sdp.json"))
    ap.add_argument("--run", default="bench_sdp",
                    help="the key of this run in --out (default: %(default)s)")
    args = ap.parse_args(argv)
    if not INSTANCES.is_dir():
        print(f"shared instances not found at {INSTANCES}", file=sys.stderr)
        return 2
    threadpool_limits(args.threads)
    datasets = args.datasets or [p.name for p in dataset_dirs()]
    todo = []
    for ds in datasets:
        for f in constraint_files(ds, seeds={0}):
            todo.append((ds, f.stem))
    if args.instances is not None:
        todo = [tuple(x.split("/")) for x in args.instances]
    # the named target instances first, then by increasing s, so that a budget cut drops
    # the largest instances
    sizes = {key: load(*key).s for key in todo}
    first = [tuple(x.split("/")) for x in args.first if tuple(x.split("/")) in sizes]
    todo = first + sorted((key for key in todo if key not in first), key=lambda key: sizes[key])
    out = {"command": "python " + " ".join([os.path.relpath(__file__, ROOT), *sys.argv[1:]]),
           "threads": args.threads, "tol": args.tol, "machine": platform.node(),
           "cpus": os.cpu_count(), "load_avg_start": os.getloadavg(), "root": [],
           "skipped": [], "scs": [], "warm": [], "cp": [], "baseline_options": BASELINE,
           "baseline": bool(args.baseline)}
    t_begin = time.perf_counter()
    results = {}
    for ds, name in todo:
        if time.perf_counter() - t_begin > args.budget:
            out["skipped"].append(f"{ds}/{name}")
            continue
        P = load(ds, name)
        r = solve_sdp(SDPModel.from_problem(P), tol=args.tol)
        rel = (r.sdp_value - r.lower_bound) / abs(r.sdp_value)
        row = {"instance": f"{ds}/{name}", "n": P.n, "k": P.k, "s": P.s, "cl": len(P.cl),
               "sdp_value": r.sdp_value, "lower_bound": r.lower_bound, "rel_gap": rel,
               "gap_ok": bool(rel <= 1e-5), "iterations": r.iterations,
               "seconds": r.seconds, "status": r.status,
               "primal_residual": r.primal_residual, "dual_residual": r.dual_residual}
        if args.baseline:
            rb = solve_sdp(SDPModel.from_problem(P), tol=args.tol, **BASELINE)
            row.update(base_iterations=rb.iterations, base_seconds=rb.seconds,
                       base_lower_bound=rb.lower_bound, base_status=rb.status,
                       iter_ratio=r.iterations / rb.iterations, time_ratio=r.seconds / rb.seconds)
            print(f"    earlier settings: it={rb.iterations} {rb.seconds:.1f}s "
                  f"lb={rb.lower_bound:.8g}", flush=True)
        results[(ds, name)] = (P, r)
        out["root"].append(row)
        print(f"{ds:14s} {name:16s} s={P.s:4d} k={P.k} obj={r.sdp_value:.8g} "
              f"lb={r.lower_bound:.8g} gap={rel:.1e} it={r.iterations:5d} "
              f"{r.seconds:7.1f}s {r.status}", flush=True)
    out["gap_failures"] = [row["instance"] for row in out["root"] if not row["gap_ok"]]
    # SCS on instances spread over s: the one closest to each target size (s >= 100)
    picked = []
    for target in args.scs_sizes:
        cand = [row for row in out["root"] if row["s"] >= 100 and row not in picked]
        if cand:
            picked.append(min(cand, key=lambda row: abs(row["s"] - target)))
    for row in picked:
        ds, name = row["instance"].split("/")
        P, r = results[(ds, name)]
        sc = solve_sdp(SDPModel.from_problem(P), backend="scs", tol=args.tol,
                       time_limit=args.scs_time_limit)
        entry = {"instance": row["instance"], "s": P.s, "admm_seconds": r.seconds,
                 "admm_value": r.sdp_value, "scs_seconds": sc.seconds, "scs_value": sc.sdp_value,
                 "scs_status": sc.status, "scs_message": sc.message,
                 "scs_lower_bound": sc.lower_bound, "ratio": sc.seconds / r.seconds}
        out["scs"].append(entry)
        print(f"SCS {row['instance']}: {sc.seconds:.1f}s ({sc.message}) vs ADMM "
              f"{r.seconds:.1f}s, ratio {entry['ratio']:.1f}", flush=True)
    for inst in args.bound_match:
        out.setdefault("bound_match", []).append(bound_match(inst, args))
    for inst in args.warm:
        ds, name = inst.split("/")
        P, r0 = results.get((ds, name), (None, None))
        if P is None:
            P = load(ds, name)
            r0 = solve_sdp(SDPModel.from_problem(P), tol=args.tol)
        cuts = CutSet.empty()
        for rnd in range(1, args.warm_rounds + 1):
            # the 1000 most violated triangles at the last solution that the model lacks
            found = drop_known(top_triangles(r0.Z, 1000 + cuts.m), cuts)
            new = found.select(np.arange(min(1000, found.m)))
            if not new.m:
                break
            cuts = cuts.concat(new)
            mc = SDPModel.from_problem(P, cuts)
            w = solve_sdp(mc, tol=args.tol, warm_start=WarmStart.for_cuts(r0, n_new=new.m))
            c = solve_sdp(mc, tol=args.tol)
            entry = {"instance": inst, "s": P.s, "round": rnd, "cuts": cuts.m,
                     "new_cuts": new.m, "root_iterations": r0.iterations,
                     "warm_iterations": w.iterations, "cold_iterations": c.iterations,
                     "warm_seconds": w.seconds, "cold_seconds": c.seconds,
                     "ratio": w.iterations / c.iterations, "warm_value": w.sdp_value,
                     "cold_value": c.sdp_value, "warm_bound": w.lower_bound,
                     "cold_bound": c.lower_bound, "warm_status": w.status,
                     "cold_status": c.status,
                     "bound_move": (w.lower_bound - r0.lower_bound) / abs(r0.lower_bound)}
            if args.baseline:
                wb = solve_sdp(mc, tol=args.tol, warm_start=WarmStart.for_cuts(r0, n_new=new.m),
                               **BASELINE)
                cb = solve_sdp(mc, tol=args.tol, **BASELINE)
                entry.update(base_warm_iterations=wb.iterations,
                             base_cold_iterations=cb.iterations,
                             base_warm_seconds=wb.seconds, base_cold_seconds=cb.seconds,
                             base_ratio=wb.iterations / cb.iterations)
                print(f"    earlier settings: warm {wb.iterations} it vs cold {cb.iterations} it",
                      flush=True)
            out["warm"].append(entry)
            print(f"warm {inst} round {rnd}: {cuts.m} cuts (+{new.m}), warm {w.iterations} it "
                  f"vs cold {c.iterations} it (ratio {entry['ratio']:.2f}); bound "
                  f"{r0.lower_bound:.8g} -> {w.lower_bound:.8g} "
                  f"({entry['bound_move']:.1e})", flush=True)
            r0 = w
    if args.linsolve_cuts:
        import pcsos.bounds.admm as admm
        inst = args.linsolve_instance or args.warm[0]
        ds, name = inst.split("/")
        P, r0 = results.get((ds, name), (None, None))
        if P is None:
            P = load(ds, name)
            r0 = solve_sdp(SDPModel.from_problem(P), tol=args.tol)
        limits = ("ENTRY_DENSE_MAX", "DIRECT_MAX_CUTS", "ENTRY_SPARSE_MAX")
        saved = {k: getattr(admm, k) for k in limits}
        big = 10**9
        # the module limits that make _Scaled pick each (y, u) solver
        force = {"entry_dense": (big, 0, 0), "cut_lu": (0, big, 0),
                 "entry_lu": (0, 0, big), "cg": (0, 0, 0)}
        for m in args.linsolve_cuts:
            cuts = top_triangles(r0.Z, m)
            mc = SDPModel.from_problem(P, cuts)
            sc = admm._Scaled(mc)
            n_e = int(sc.BE.shape[1])
            row = {"instance": inst, "s": P.s, "cuts": cuts.m, "entries": n_e,
                   "default_solver": sc.ksolver}
            for label, values in force.items():
                if label == "entry_dense" and not (n_e < cuts.m and n_e <= 6000):
                    continue  # applies to fewer entries than cuts; dense G beyond 6000 is slow
                if label == "cut_lu" and cuts.m > 5000:
                    continue  # fill-in of the cut-space LU explodes
                for k, v in zip(limits, values):
                    setattr(admm, k, v)
                try:
                    w = solve_sdp(mc, tol=args.tol, max_iter=100,
                                  warm_start=WarmStart.for_cuts(r0, n_new=cuts.m))
                finally:
                    for k, v in saved.items():
                        setattr(admm, k, v)
                row[label + "_ms_per_it"] = 1e3 * w.seconds / w.iterations
                row[label + "_lower_bound"] = w.lower_bound
            out.setdefault("linsolve", []).append(row)
            print(f"linsolve {inst} {cuts.m} cuts ({n_e} entries, default "
                  f"{row['default_solver']}): " + ", ".join(
                      f"{lab} {row[lab + '_ms_per_it']:.1f} ms/it" for lab in force
                      if lab + "_ms_per_it" in row) + " (100 warm iterations incl. setup)",
                  flush=True)
    for inst in args.cp:
        import pcsos.bounds
        from pcsos.cuts.loop import cutting_plane_loop
        P = load(*inst.split("/"))
        for label, opts in [("default", {})] + ([("baseline", BASELINE)] if args.baseline
                                               else []):
            pairs = []  # one record per warm-started round (see _with_cold_twin)
            if args.cp_cold:
                pcsos.bounds.solve_sdp = _with_cold_twin(solve_sdp, pairs)
            try:
                br = cutting_plane_loop(P, bound_settings=dict(opts, tol=args.tol), seed=0,
                                        time_limit=args.cp_time_limit)
            finally:
                pcsos.bounds.solve_sdp = solve_sdp
            its = [int(st.iterations) for st in br.rounds]
            entry = {"instance": inst, "s": P.s, "settings": label, "rounds": len(its),
                     "iterations": its, "total_iterations": sum(its),
                     "seconds": br.seconds, "lower_bound": br.lower_bound,
                     "message": br.message,
                     "round_seconds": [float(st.seconds) for st in br.rounds]}
            if args.cp_cold:
                entry["warm_cold"] = pairs
                cut_rounds = [q for q in pairs if q["new_cuts"]]
                if cut_rounds:
                    ratios = [q["warm"] / q["cold"] for q in cut_rounds]
                    print(f"cp {inst} [{label}]: warm/cold iterations after adding cuts "
                          + ", ".join(f"{q['warm']}/{q['cold']}" for q in cut_rounds)
                          + f" (median ratio {float(np.median(ratios)):.2f})", flush=True)
            out["cp"].append(entry)
            print(f"cp {inst} [{label}]: {len(its)} rounds, {sum(its)} iterations "
                  f"(first {its[0]}, then {its[1:]}), "
                  f"{sum(entry['round_seconds']):.1f}s in the SDP", flush=True)
    out["load_avg_end"] = os.getloadavg()
    out["total_seconds"] = time.perf_counter() - t_begin
    merge_json(args.out, args.run, jsonable(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
