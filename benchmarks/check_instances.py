"""Run the feasibility check on every constraint file of the shared benchmark instances.

Writes benchmarks/results/check_instances.csv (one row per file) and prints, per dataset
and constraint mix (ML, CL, MLCL), the mean number of super-points s over the 5 draws
beside the "size" column of the PC-SOS-SDP paper (Tables 2-4, read from
../shared/docs/benchmarks.md).

Usage: python benchmarks/check_instances.py [--instances DIR] [--out CSV] [--time-limit S]
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys
import time
from collections import defaultdict

from instances import (
    INSTANCES,
    RESULTS,
    constraint_files,
    dataset_dirs,
    load_constraints,
    load_data,
    mix_of,
    paper_table,
    parse_name,
)

from pcsos.feasibility import check_instance
from pcsos.problem import Problem, make_instance

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=pathlib.Path, default=INSTANCES)
    ap.add_argument("--out", type=pathlib.Path, default=RESULTS / "check_instances.csv")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args(argv)
    if not args.instances.is_dir():
        print(f"instances not found at {args.instances}", file=sys.stderr)
        return 2
    rows = []
    for ds in dataset_dirs(args.instances):
        data = load_data(ds.name, args.instances)
        for cf in constraint_files(ds.name, folder=args.instances):
            mix, total = mix_of(*parse_name(cf.name)[:2])
            t0 = time.perf_counter()
            cons = load_constraints(ds.name, cf, data, args.instances)
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
    order = {"ML": 0, "CL": 1, "MLCL": 2}
    paper = paper_table()
    for key in sorted(groups, key=lambda t: (order[t[1]], t[0], t[2])):
        g = groups[key]
        def mean(col, g=g):
            v = [r[col] for r in g if r[col] is not None]
            return f"{sum(v) / len(v):.1f}" if v else "-"
        verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in g)}"
                             for v in sorted({r["verdict"] for r in g}))
        size = paper.get(key, {}).get("size")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {mean('s_ml')} | {mean('s')} | "
              f"{mean('s_paper_rule')} | "
              f"{size if size is not None else '-'} | {verdicts} |")
    n_feas = sum(r["verdict"] == "feasible" for r in rows)
    total_s = sum(r["seconds"] for r in rows)
    print(f"\n{len(rows)} files, {n_feas} feasible, total {total_s:.1f} s, "
          f"max {max(r['seconds'] for r in rows):.3f} s per file; wrote {args.out}")
    return 0 if n_feas == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
