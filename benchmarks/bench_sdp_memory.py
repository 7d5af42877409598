"""The peak memory of one SDP solve on the CPU, per s^2 (``pcsos.memory.SDP_DOUBLES``).

For each size s, a child process reads a Gaussian mixture of s points in 5-D (3 clusters,
no pairs, so s super-points) and runs ``pcsos bound --method sdp`` on it; another child
only reads the same file (the interpreter, numpy, scipy and pcsos imported, the data
held). The difference of their maximum resident sizes, over 8 s^2 bytes, is the doubles per
s^2 the solve holds at its peak: the ADMM's s x s arrays, its acceleration's history and
the safe bound's eigensolver. The tree refuses an SDP whose estimate exceeds the memory
available (``pcsos.memory.sdp_memory_short``), so SDP_DOUBLES must stay above every figure
here. ``--backend scs`` measures SCS per s^2 (``SCS_DOUBLES``), ``--backend clarabel`` the
interior-point solver per m^2, m = s(s + 1)/2 + s + 1 (``INTERIOR_POINT_DOUBLES``).

Example::

    python benchmarks/bench_sdp_memory.py --sizes 1000,2000,3000
    python benchmarks/bench_sdp_memory.py --backend clarabel --sizes 40,80,120
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from instances import RESULTS, ROOT, code_version, write_json

# a child prints its own peak resident size (Linux: ru_maxrss in KiB) after the command
CHILD = """
import resource, sys
from pcsos.cli import main
code = main(sys.argv[1:]) if sys.argv[1] != "load" else 0
if sys.argv[1] == "load":
    from pcsos.io import read_data
    read_data(sys.argv[2])
    import pcsos.bounds, pcsos.memory, pcsos.node  # what the solve imports
    for name in sys.argv[3:]:  # and its backend's modules
        __import__(name)
print("MAXRSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


#: what a backend imports besides pcsos (its read-only child imports them too)
MODULES = {"scs": ("cvxpy", "scs"), "clarabel": ("cvxpy", "clarabel")}


def _peak(args: list[str], timeout: float) -> tuple[float, float, int]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=timeout)
    kib = [line.split()[1] for line in p.stderr.splitlines() if line.startswith("MAXRSS")]
    if not kib:
        raise RuntimeError(f"no peak from {args}: rc {p.returncode}\n{p.stderr[-2000:]}")
    return float(kib[-1]) * 1024.0, time.perf_counter() - t, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,2000,3000")
    ap.add_argument("--time-limit", type=float, default=600.0,
                    help="of each solve (it must end on its own: a stopped solve may not "
                         "have reached its peak)")
    ap.add_argument("--backend", choices=("admm", "scs", "clarabel"), default="admm")
    ap.add_argument("--out", default=None,
                    help="default: results/bench_sdp_memory.json (admm), "
                         "bench_sdp_memory_BACKEND.json (the others)")
    args = ap.parse_args()
    from pcsos.memory import INTERIOR_POINT_DOUBLES, SCS_DOUBLES, SDP_DOUBLES

    backend = args.backend
    interior = backend in INTERIOR_POINT_DOUBLES
    figure = (INTERIOR_POINT_DOUBLES[backend] if interior
              else SCS_DOUBLES if backend == "scs" else SDP_DOUBLES)
    unit = "m^2" if interior else "s^2"
    out_path = args.out or str(RESULTS / ("bench_sdp_memory.json" if backend == "admm"
                                          else f"bench_sdp_memory_{backend}.json"))

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in (int(v) for v in args.sizes.split(",")):
            rng = np.random.default_rng(s)
            X = rng.normal(size=(s, 5)) + 3.0 * rng.integers(0, 3, size=s)[:, None]
            path = f"{tmp}/mix_{s}.txt"
            np.savetxt(path, X, header=f"{s} 5", comments="")
            pathlib.Path(f"{tmp}/b.json").unlink(missing_ok=True)
            base, _, _ = _peak(["load", path, *MODULES.get(backend, ())], 300)
            peak, secs, rc = _peak(["bound", path, "-k", "3", "--method", "sdp",
                                    "--backend", backend,
                                    "--time-limit", str(args.time_limit),
                                    "--json", f"{tmp}/b.json"], args.time_limit + 300)
            status = json.loads(open(f"{tmp}/b.json").read())["status"] if rc == 0 else None
            m = s * (s + 1) / 2 + s + 1 if interior else s
            doubles = (peak - base) / (8.0 * m * m)
            rows.append({"s": s, "peak_bytes": peak, "base_bytes": base,
                         "doubles_per_s2": (peak - base) / (8.0 * s * s),
                         "doubles_per_unit": doubles, "seconds": secs, "rc": rc,
                         "status": status})
            print(f"s = {s}: peak {peak / 2 ** 30:.2f} GiB, base {base / 2 ** 30:.2f} GiB, "
                  f"{doubles:.2f} doubles per {unit}, {secs:.0f} s, status {status}",
                  flush=True)
    worst = max(r["doubles_per_unit"] for r in rows)
    out = {"what": f"peak memory of one SDP solve on the CPU ({backend}), per {unit}",
           "backend": backend, "unit": unit, "figure": figure,
           "command": " ".join(["python", "benchmarks/bench_sdp_memory.py", *sys.argv[1:]]),
           "code": code_version(), "machine": platform.platform(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "sdp_doubles": SDP_DOUBLES, "worst_doubles_per_unit": worst,
           "median_doubles_per_unit": statistics.median(r["doubles_per_unit"] for r in rows),
           "rows": rows}
    write_json(out_path, out)
    print(f"worst {worst:.2f} doubles per {unit} (pcsos takes {figure}): {out_path}")


if __name__ == "__main__":
    main()
