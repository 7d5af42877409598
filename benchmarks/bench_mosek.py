"""Time to build the MOSEK task of an SDP model (no licence needed: only ``optimize`` does).

For each size s: s random points in 2-D, a cannot-link pair on every third point, 3 s random
triangle cuts, k = 5; the best of ``--repeat`` builds of :func:`build_mosek_task`. Results go
to ``benchmarks/results/bench_mosek.json``.

    python benchmarks/bench_mosek.py [--sizes 100 300 600] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from instances import RESULTS, ROOT, write_json

from pcsos.bounds import SDPModel
from pcsos.bounds.cutset import CutSet
from pcsos.problem import Problem, make_instance


def model(s: int, k: int = 5, seed: int = 0) -> SDPModel:
    """The root model of s random points with CL pairs and 3 s triangle cuts."""
    rng = np.random.default_rng(seed)
    cl = [(i, i + 1) for i in range(0, s - 1, 3)]
    P = Problem.from_instance(make_instance(rng.normal(size=(s, 2)), k, [], cl))
    i, j, h = (rng.integers(0, s, size=3 * s) for _ in range(3))
    ok = (i != j) & (j != h) & (i != h)
    return SDPModel.from_problem(P, CutSet.triangles(i[ok], j[ok], h[ok]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 300, 600])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "bench_mosek.json"))
    args = ap.parse_args(argv)
    try:
        import mosek

        from pcsos.bounds.mosek_backend import build_mosek_task
    except ImportError as exc:
        print(f"the mosek package is not installed: {exc}", file=sys.stderr)
        return 2
    rows = []
    with mosek.Env() as env:
        for s in args.sizes:
            m = model(s)
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                with build_mosek_task(m, env):
                    best = min(best, time.perf_counter() - t0)
            rows.append({"s": s, "cuts": int(m.cuts.m), "cl": len(m.cl), "seconds": best})
            print(f"s = {s}: {m.cuts.m} cuts, {len(m.cl)} CL pairs, build {best:.4f} s",
                  flush=True)
    out = {"command": "python " + " ".join([os.path.relpath(__file__, ROOT), *sys.argv[1:]]),
           "machine": platform.node(), "load_avg_start": os.getloadavg(), "rows": rows}
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
