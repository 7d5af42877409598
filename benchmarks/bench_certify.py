"""Certified gaps at scale: ``pcsos.certify`` on synthetic Gaussian mixtures.

The sets of the S-MDEClust paper's third group, made by
:func:`bench_scale.synthetic` (the same sets as the heuristics benchmark): 2-D mixtures of
k spherical Gaussians with standard deviation 10 ("so that they are not well separated"),
n points, 1 000 pairs drawn at random and labelled must-link or cannot-link by the true
classes; numpy seed = the case's seed.

Each case runs in its own process (so that its peak memory, ``ru_maxrss``, is its own) and
appends one JSON line to the results file (default
``benchmarks/results/bench_certify.jsonl``, which holds many runs): the run's name
(``--run``), n, k, pairs, subset size, lower bound, objective, gap, spectral floor,
seconds, peak MB of the case's process (``peak_mb``) and of it with its subsets' worker
processes (``tree_peak_mb``, sampled; :class:`TreeMemory`), how
the subsets were bounded. ``--gen overlap`` takes :func:`bench_scale.overlapping` instead
(issue 31: classes that are one blob).

Example::

    python benchmarks/bench_certify.py --n 2000,5000,10000 --k 2,20 --time-limit 3600 --run mine
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from bench_scale import child_row, overlapping, print_row, synthetic
from instances import RESULTS, append_jsonl, code_version, load, read_jsonl


class TreeMemory:
    """The largest sum of resident memory over this process and its descendants (the
    subsets' worker processes), sampled every ``every`` seconds by a daemon thread (psutil,
    installed with dask[distributed]). Pages the workers share are counted once per process,
    so the figure errs high."""

    def __init__(self, every: float = 0.5):
        import threading

        import psutil

        self.peak, self._proc, self._stop = 0, psutil.Process(), threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every):
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self._proc, *self._proc.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:  # a worker that ended between the two calls
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(every)

    def stop(self) -> float:
        """The peak in MB."""
        self._stop.set()
        self._thread.join()
        return self.peak / 2 ** 20


def one_case(args) -> dict:
    import resource

    import pcsos
    from pcsos.problem import sse

    make = overlapping if args.gen == "overlap" else synthetic
    X, _, ml, cl = make(args.n_one, args.k_one, args.pairs, args.seed)
    memory = TreeMemory()
    t0 = time.perf_counter()
    res = pcsos.certify(X, args.k_one, ml, cl, subset_size=args.subset_size,
                        time_limit=args.time_limit, workers=args.workers, seed=args.seed,
                        heuristic=args.heuristic)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    tree_peak = memory.stop()
    methods = {}
    for b in res.subsets:
        methods[b.method] = methods.get(b.method, 0) + 1
    return {"gen": args.gen, "n": args.n_one, "k": args.k_one, "pairs": args.pairs,
            "ml": len(ml),
            "cl": len(cl), "seed": args.seed, "subset_size": res.subset_size,
            "heuristic": args.heuristic, "time_limit": args.time_limit,
            "lower_bound": res.lower_bound, "objective": res.objective, "gap": res.gap,
            "spectral_floor": res.spectral_floor, "subsets": len(res.subsets),
            "methods": methods, "seconds": secs, "peak_mb": peak,
            "tree_peak_mb": tree_peak, "message": res.message,
            # where the gap lies: the objective minus the sum of "restricted" is what the
            # partition loses; each subset's "restricted" minus its bound, what its SDP does
            "per_subset": [{"n": b.n, "s": b.s, "lower_bound": b.lower_bound,
                            "restricted": sse(X[b.points], res.labels[b.points]),
                            "method": b.method, "seconds": b.seconds, "message": b.message}
                           for b in res.subsets]}


def reference_labels(X, y, k: int):
    """Lloyd's iterations (scikit-learn, the test extra) from the true classes' means:
    the unconstrained reference clustering of the subset-size measurements."""
    import numpy as np
    from sklearn.cluster import KMeans

    return KMeans(k, init=np.array([X[y == h].mean(axis=0) for h in range(k)]),
                  n_init=1).fit(X).labels_


def reference_instance(n: int, k: int, pairs: int, seed: int):
    """A synthetic set (:func:`bench_scale.synthetic`) as ``(X, instance, reference
    labels)``, the reference from :func:`reference_labels`: what the subset measurements
    partition."""
    from pcsos.problem import make_instance

    X, y, ml, cl = synthetic(n, k, pairs, seed)
    return X, make_instance(X, k, ml, cl), reference_labels(X, y, k)


def kmeans_best(X, k: int, runs: int = 40) -> float:
    """The best SSE of ``runs`` k-means++ runs (seeds 0..runs-1): above the optimum."""
    from sklearn.cluster import KMeans

    return min(KMeans(k, n_init=1, random_state=r).fit(X).inertia_ for r in range(runs))


def subset_loss(args) -> None:
    """How far a subset's own optimum falls below its share of the whole clustering, per
    subset size: for each subset of :func:`pcsos.decomposition.partition`, (share -
    best of 40 k-means++ runs on the subset) / share. The best of 40 runs is above the
    subset's optimum, so this is a lower estimate of the loss. Reference clustering: Lloyd's
    iterations from the true classes' means (unconstrained, as k-means++ is); scikit-learn
    (the test extra) runs k-means."""
    import numpy as np

    from pcsos.decomposition import partition
    from pcsos.problem import sse

    for n in map(int, args.n.split(",")):
        for k in map(int, args.k.split(",")):
            X, inst, ref = reference_instance(n, k, args.pairs, args.seed)
            for size in map(int, args.subset_loss.split(",")):
                t0 = time.perf_counter()
                loss = []
                for pts in partition(inst, ref, size, seed=args.seed):
                    share = sse(X[pts], ref[pts])
                    loss.append((share - kmeans_best(X[pts], k)) / share)
                q1, med, q3 = np.percentile(loss, [25, 50, 75])
                row = {"part": "subset_loss", "n": n, "k": k, "pairs": args.pairs,
                       "seed": args.seed, "subset_size": size, "subsets": len(loss),
                       "loss": loss, "median": med, "q1": q1, "q3": q3,
                       "seconds": time.perf_counter() - t0,
                       "command": "python " + " ".join(sys.argv)}
                append_jsonl(args.out, {"run": args.run, **row})
                print(f"n = {n}, k = {k}, subsets of {size}: loss median "
                      f"{100 * med:.2f} % (quartiles {100 * q1:.2f}-{100 * q3:.2f} %)",
                      flush=True)


def shared_part(args) -> None:
    """Validity on the shared instances: the decomposition bound of every instance in
    ``args.shared_results`` (bench_solve JSON lines) against the objective pcsos certified
    optimal there (a valid bound never exceeds it)."""
    import pcsos

    runs = set(args.shared_runs.split(",")) if args.shared_runs else None
    rows = [r for f in args.shared_results.split(",") for r in read_jsonl(f)
            if runs is None or r.get("run") in runs]
    for r in rows:
        if r["status"] != "optimal":
            continue
        data, cons = load(r["dataset"], r["file"])
        t0 = time.perf_counter()
        res = pcsos.certify(data.X, r["k"], cons.ml, cons.cl, subset_size=args.subset_size,
                            workers=args.workers, seed=args.seed,
                            time_limit=args.time_limit)
        row = {"part": "shared", "instance": r["instance"], "n": r["n"], "k": r["k"],
               "subset_size": res.subset_size, "lower_bound": res.lower_bound,
               "optimum": r["objective"], "optimum_lower_bound": r["lower_bound"],
               "valid": bool(res.lower_bound <= r["objective"] * (1 + 1e-9)),
               "gap_to_optimum": (r["objective"] - res.lower_bound) / r["objective"],
               "subsets": len(res.subsets), "seconds": time.perf_counter() - t0}
        append_jsonl(args.out, {"run": args.run, **row})
        print(f"{r['instance']}: bound {res.lower_bound:.6g} <= optimum {r['objective']:.6g}"
              f" {'ok' if row['valid'] else 'INVALID'} (gap {100 * row['gap_to_optimum']:.2f}"
              f" %, {row['seconds']:.1f} s)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="2000,5000,10000,20000")
    ap.add_argument("--k", default="2,20,100")
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--gen", choices=("bench", "overlap"), default="bench",
                    help="the data: bench_scale.synthetic (default) or bench_scale.overlapping "
                         "(the certify cases only)")
    ap.add_argument("--subset-size", type=int, default=None,
                    help="points per subset (default: pcsos's, 30 per cluster within "
                         "300-1000)")
    ap.add_argument("--time-limit", type=float, default=3600.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--heuristic", default="s-mdeclust")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS / "bench_certify.jsonl"))
    ap.add_argument("--run", default="default",
                    help="this run's name, stored in every row (default: %(default)s)")
    ap.add_argument("--shared-results", default=None,
                    help="comma list of bench_solve .jsonl files: check the bound on their "
                         "optimal instances instead of the synthetic sets")
    ap.add_argument("--shared-runs", default=None,
                    help="comma list: only the rows of these runs of --shared-results "
                         "(bench_solve.py's --run; default: every row)")
    ap.add_argument("--subset-loss", default=None, metavar="SIZES",
                    help="comma list of subset sizes: measure how far the subsets' own "
                         "optima fall below their shares (no SDP) instead")
    ap.add_argument("--n-one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--k-one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.n_one is not None:  # the child process of one case
        print_row(one_case(args))
        return 0
    if args.shared_results:
        shared_part(args)
        return 0
    if args.subset_loss:
        subset_loss(args)
        return 0
    code = code_version()
    for n in map(int, args.n.split(",")):
        for k in map(int, args.k.split(",")):
            cmd = [sys.executable, __file__, "--n-one", str(n), "--k-one", str(k),
                   "--pairs", str(args.pairs), "--gen", args.gen,
                   "--time-limit", str(args.time_limit),
                   "--workers", str(args.workers),
                   "--heuristic", args.heuristic, "--seed", str(args.seed)]
            if args.subset_size is not None:
                cmd += ["--subset-size", str(args.subset_size)]
            row = child_row(cmd, {"n": n, "k": k})
            row.update(code=code, command="python " + " ".join(sys.argv),
                       machine={"python": platform.python_version(),
                                "platform": platform.platform()})
            append_jsonl(args.out, {"run": args.run, **row})
            print(f"{args.gen} n = {n}, k = {k}: " + (f"gap {100 * row['gap']:.2f} %, "
                  f"{row['seconds']:.0f} s, {row['tree_peak_mb']:.0f} MB with its workers"
                  if "gap" in row else f"error {row['error']}"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
