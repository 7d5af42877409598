"""Run the feasibility check on every constraint file of the shared benchmark instances.

Writes benchmarks/results/check_instances.csv (one row per file) and prints, per dataset
and constraint mix, the mean number of super-points s over the 5 draws beside the
"size" column of the PC-SOS-SDP paper (Tables 2-4, copied from shared/docs/benchmarks.md).

Usage: python benchmarks/check_instances.py [--instances DIR] [--out CSV] [--time-limit S]
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import re
import sys
import time
from collections import defaultdict

from pcsos.feasibility import check_instance
from pcsos.io import read_constraints, read_data
from pcsos.problem import Problem, make_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_INSTANCES = ROOT.parent / "shared" / "instances"

# Paper 000, Tables 2 (ML only), 3 (CL only), 4 (half ML, half CL): mean root SDP size
# after ML shrinking over the 5 draws, keyed by (dataset, mix, total number of pairs).
PAPER_SIZE = {
    ("iris", "ML", 50): 100.4, ("iris", "ML", 100): 56.0,
    ("wine", "ML", 50): 128.2, ("wine", "ML", 100): 81.4,
    ("seeds", "ML", 50): 160.0, ("seeds", "ML", 100): 111.6,
    ("connectionist", "ML", 50): 158.2, ("connectionist", "ML", 100): 109.0,
    ("heart", "ML", 100): 199.0, ("heart", "ML", 150): 152.8,
    ("vertebral", "ML", 100): 210.6, ("vertebral", "ML", 150): 161.4,
    ("ECG5000", "ML", 150): 350.4, ("ECG5000", "ML", 250): 253.2,
    ("computers", "ML", 150): 350.4, ("computers", "ML", 250): 252.0,
    ("iris", "CL", 50): 150.0, ("iris", "CL", 100): 150.0,
    ("wine", "CL", 50): 178.0, ("wine", "CL", 100): 178.0,
    ("seeds", "CL", 50): 210.0, ("seeds", "CL", 100): 210.0,
    ("connectionist", "CL", 50): 186.6, ("connectionist", "CL", 100): 139.4,
    ("heart", "CL", 100): 239.6, ("heart", "CL", 150): 182.4,
    ("vertebral", "CL", 100): 254.8, ("vertebral", "CL", 150): 199.2,
    ("ECG5000", "CL", 150): 500.0, ("ECG5000", "CL", 250): 500.0,
    ("computers", "CL", 150): 427.2, ("computers", "CL", 250): 321.2,
    ("iris", "ML+CL", 50): 125.0, ("iris", "ML+CL", 100): 100.0,
    ("wine", "ML+CL", 50): 153.0, ("wine", "ML+CL", 100): 128.4,
    ("seeds", "ML+CL", 50): 185.0, ("seeds", "ML+CL", 100): 160.0,
    ("connectionist", "ML+CL", 50): 177.6, ("connectionist", "ML+CL", 100): 139.6,
    ("heart", "ML+CL", 100): 231.2, ("heart", "ML+CL", 150): 189.4,
    ("vertebral", "ML+CL", 100): 244.0, ("vertebral", "ML+CL", 150): 199.2,
    ("ECG5000", "ML+CL", 150): 425.2, ("ECG5000", "ML+CL", 250): 375.0,
    ("computers", "ML+CL", 150): 404.0, ("computers", "ML+CL", 250): 323.2,
}

FIELDS = ["dataset", "file", "mix", "total", "n", "k", "ml", "cl", "ml_dups", "cl_dups",
          "s_ml", "s", "s_paper_rule", "cl_super", "verdict", "reason", "seconds"]


def paper_rule_size(n: int, k: int, ml, cl) -> int:
    """Super-points under our reading of the paper's k = 2 rule, for comparison only.

    For k = 2, all cannot-link neighbours of one *original* point are merged (they must
    share the other cluster), then the must-link closure is taken; the rule is not applied
    again to the shrunk graph. For k != 2 this is the plain must-link closure. This weaker
    rule reproduces the paper's sizes on the mixed k = 2 files; pcsos merges every colour
    class of each cannot-link component of the shrunk graph, which is exact and stronger.
    """
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    links = list(ml)
    if k == 2:
        first: dict[int, int] = {}
        for i, j in cl:
            for a, b in ((i, j), (j, i)):
                links.append((first.setdefault(a, b), b))
    for a, b in links:
        parent[find(a)] = find(b)
    return len({find(a) for a in range(n)})


def mix_of(name: str) -> tuple[str, int]:
    """('ML' | 'CL' | 'ML+CL', total pairs) from a file name ml_<a>_cl_<b>_<seed>.txt."""
    m = re.fullmatch(r"ml_(\d+)_cl_(\d+)_(\d+)\.txt", name)
    if m is None:
        raise ValueError(f"unexpected constraint file name {name!r}")
    a, b = int(m.group(1)), int(m.group(2))
    return ("CL" if a == 0 else "ML" if b == 0 else "ML+CL"), a + b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=pathlib.Path, default=DEFAULT_INSTANCES)
    ap.add_argument("--out", type=pathlib.Path,
                    default=ROOT / "benchmarks" / "results" / "check_instances.csv")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args(argv)
    if not args.instances.is_dir():
        print(f"instances not found at {args.instances}", file=sys.stderr)
        return 2
    rows = []
    for ds in sorted(p for p in args.instances.iterdir() if (p / "data.txt").is_file()):
        data = read_data(ds / "data.txt")
        for cf in sorted((ds / "constraints").glob("*.txt")):
            mix, total = mix_of(cf.name)
            t0 = time.perf_counter()
            cons = read_constraints(cf, n=data.n, X=data.X)
            inst = make_instance(data.X, data.k, cons.ml, cons.cl)
            res = check_instance(inst, time_limit=args.time_limit)
            secs = time.perf_counter() - t0
            # s_ml: ML shrinking only (what the paper calls size); s: after k = 2 inference
            s_ml = Problem.from_instance(inst, infer_k2=False).s if res.feasible else None
            rows.append({"dataset": ds.name, "file": cf.name, "mix": mix, "total": total,
                         "n": inst.n, "k": inst.k, "ml": len(inst.ml), "cl": len(inst.cl),
                         "ml_dups": inst.ml_duplicates, "cl_dups": inst.cl_duplicates,
                         "s_ml": s_ml, "s": res.s,
                         "s_paper_rule": paper_rule_size(inst.n, inst.k, inst.ml.tolist(),
                                                         inst.cl.tolist()),
                         "cl_super": None, "verdict": res.status,
                         "reason": res.reason, "seconds": round(secs, 4)})
            if res.feasible:
                rows[-1]["cl_super"] = len(Problem.from_instance(inst).cl)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["mix"], r["total"])].append(r)
    print("| dataset | mix | pairs | mean s (ML shrink) | mean s (pcsos, + k=2 inference) "
          "| mean s (paper's k=2 rule, reconstructed) | paper size | verdicts |")
    print("|---|---|---|---|---|---|---|---|")
    order = {"ML": 0, "CL": 1, "ML+CL": 2}
    for key in sorted(groups, key=lambda t: (order[t[1]], t[0], t[2])):
        g = groups[key]
        def mean(col, g=g):
            v = [r[col] for r in g if r[col] is not None]
            return f"{sum(v) / len(v):.1f}" if v else "-"
        verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in g)}"
                             for v in sorted({r["verdict"] for r in g}))
        paper = PAPER_SIZE.get(key)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {mean('s_ml')} | {mean('s')} | "
              f"{mean('s_paper_rule')} | "
              f"{paper if paper is not None else '-'} | {verdicts} |")
    n_feas = sum(r["verdict"] == "feasible" for r in rows)
    total_s = sum(r["seconds"] for r in rows)
    print(f"\n{len(rows)} files, {n_feas} feasible, total {total_s:.1f} s, "
          f"max {max(r['seconds'] for r in rows):.3f} s per file; wrote {args.out}")
    return 0 if n_feas == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
