"""Benchmark the exact solver on the shared PC-SOS-SDP instances (acceptance 2-3 of the tree issue).

Runs ``pcsos.solve`` on a chosen set of ``../shared/instances/<dataset>/constraints/*.txt``
files (``--folder``: another folder of datasets laid out the same way, e.g. the study's
accent, ecoli or gene) with a time limit and appends one JSON line per instance to a
results file (default ``benchmarks/results/bench_solve.jsonl``), each row naming its run
(``--run``: the file holds many runs); instances already in the file under that run are
skipped, so an interrupted run resumes where it stopped. Then it prints (and with
``--summary FILE`` writes as Markdown) the per-instance table and the summary aggregated
like the paper's Tables 2-4 (mean over the chosen draws of each dataset and mix), side by
side with the paper's figures parsed from ``../shared/docs/benchmarks.md``, plus the ratio
of our time to the paper's 16-core time. When the heuristics benchmark's results exist
(``benchmarks/results/bench_heuristics.json``, seed-0 draws, and
``bench_heuristics_draws.json``, the other draws), every certified lower bound is checked
against the best feasible value found there: a bound above a feasible value is a bug and
is flagged ``BOUND>UB``.

``--branching`` picks the pair a node branches on (issue 51's branching study; without it,
the solver's default): ``paper`` and ``pseudocost`` are the solver's option ``branching``
(``paper``, argmax_{i<j} min(Z_ij, ||Z_i. - Z_j.||^2), PC-SOS-SDP's rule; ``pseudocost``, the
default, the pair whose children gained most per unit of relation earlier in the same tree,
pcsos.branching);
``normalized`` is patched in (the tree's workers are threads, so it replaces
``pcsos.node.branching_score`` for every node of this process): argmax_{i<j} min(r_ij,
1 - r_ij) with r_ij = Z_ij /
sqrt(Z_ii Z_jj), the pair whose relation the relaxation leaves most open whatever the size
of its cluster (the paper's score favours pairs in small clusters, whose entries are
large); it scores below the node's ``BRANCH_THRESHOLD`` only where Z is (numerically) a
clustering matrix, so the node's closing test is the paper's.
``--most-branching N`` keeps, of the chosen instances, the N that took the most nodes in
the run ``--ranking`` (default ``all``, the 270) of the results file: the study's "draws
that branch most".

Examples::

    python benchmarks/bench_solve.py --datasets iris,wine --seeds 0 --time-limit 600 --run mine
    python benchmarks/bench_solve.py --folder /tmp/fresh --instances glass/ml_0_cl_100_5 \
        --branching normalized --time-limit 600 --workers 2 --run branch_normalized
    python benchmarks/bench_solve.py --datasets iris,wine,seeds,connectionist,heart,vertebral,\
glass,ECG5000,computers --seeds 0,1,2,3,4 --most-branching 40 --run branch40_paper
    python benchmarks/bench_solve.py --datasets ecoli --seeds 0,1,2,3,4 --folder /data/pcsos
    python benchmarks/bench_solve.py --run small --datasets iris,wine,seeds,connectionist \\
        --summary-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import sys
import time

from instances import (
    INSTANCES,
    RESULTS,
    ROOT,
    append_jsonl,
    code_version,
    instances,
    literal_settings,
    load_instance,
    mix_of,
    paper_table,
    parse_name,
    read_jsonl,
)

DEFAULT_OUT = RESULTS / "bench_solve.jsonl"


def normalized(Z) -> tuple[int, int, float]:
    """The pair i < j of largest min(r_ij, 1 - r_ij), r_ij = Z_ij / sqrt(Z_ii Z_jj), and its
    score (ties: the first in row-major order): ``--branching normalized``."""
    import numpy as np

    Zs = 0.5 * (Z + Z.T)
    s = len(Zs)
    if s < 2:
        return -1, -1, -np.inf
    d = np.sqrt(np.maximum(np.diagonal(Zs), 1e-300))
    r = Zs / np.outer(d, d)
    score = np.minimum(r, 1.0 - r)
    score[np.tril_indices(s)] = -np.inf
    i, j = divmod(int(np.argmax(score)), s)
    return i, j, float(score[i, j])


#: the rules of --branching: the solver's own by name (None), or a score patched in
BRANCHING = {"paper": None, "pseudocost": None, "normalized": normalized}
HEUR = (RESULTS / "bench_heuristics.json", RESULTS / "bench_heuristics_draws.json")
DEFAULT_DATASETS = ("iris", "wine", "seeds", "connectionist")


def run_one(ds: str, path: pathlib.Path, args) -> dict:
    """Solve one instance and return its result row."""
    from pcsos.api import solve_instance
    from pcsos.options import SolverOptions

    inst = load_instance(ds, path, args.folder)
    limit = time_limit(ds, path, args.time_limit)
    t0 = time.time()
    res = solve_instance(inst, tol=args.tol, max_nodes=args.max_nodes,
                         time_limit=limit, workers=args.workers, seed=args.seed,
                         **({"cp_settings": args.cp} if args.cp else {}),
                         **({"bound_settings": args.sdp} if args.sdp else {}),
                         # a patched score replaces the paper's, which pseudo-costs would
                         # otherwise choose among
                         **({"branching": "paper" if BRANCHING[args.branching] else
                             args.branching} if args.branching else {}))
    wall = time.time() - t0
    return {
        "instance": f"{ds}/{path.stem}", "dataset": ds, "file": path.name,
        "n": inst.n, "d": inst.d, "k": inst.k, "ml": len(inst.ml), "cl": len(inst.cl),
        "root_size": res.root_size, "root_lb": res.root_lower_bound,
        "root_gap": res.root_gap, "objective": res.objective, "lower_bound": res.lower_bound,
        "gap": res.gap, "nodes": res.nodes, "seconds": wall, "status": res.status,
        "message": res.message, "workers": args.workers, "time_limit": limit,
        "max_nodes": args.max_nodes, "tol": args.tol, "cp_settings": args.cp,
        **({"bound_settings": args.sdp} if args.sdp else {}),
        # getattr: ab_solve.sh runs this script against older trees, which lack the field
        "branching": args.branching or getattr(SolverOptions, "branching", None),
        "root_seconds": res.log[0]["time"] if res.log else None,
        "root_ub": res.log[0]["gub"] if res.log else None,
        # per node: what the child-node measurements (seconds, rounds) are taken from
        "node_rows": [{key: _clean(row.get(key)) for key in NODE_KEYS} for row in res.log],
        "code": args.code,
    }


def most_branching(rows, keys: list[str], count: int) -> list[str]:
    """The ``count`` names of ``keys`` whose last row in ``rows`` took the most nodes (ties:
    the name), most first; a name without a row is not chosen. What issue 51's branching
    study runs its rules on: the draws that branch most (``--most-branching``)."""
    nodes = {row["instance"]: row.get("nodes") or 0 for row in rows}
    ranked = sorted((k for k in keys if k in nodes), key=lambda k: (-nodes[k], k))
    return ranked[:count]


def time_limit(ds: str, path: pathlib.Path, limit: str) -> float:
    """Seconds for one instance: ``limit`` read as a number, or ``paper``: the paper's mean
    time on the instance's dataset and mix (Tables 2-4)."""
    if limit != "paper":
        return float(limit)
    ml, cl, _ = parse_name(path.name)
    key = (ds, *mix_of(ml, cl))
    row = paper_table().get(key)
    if row is None:
        raise SystemExit(f"--time-limit paper: the paper has no figure for {key}")
    return row["time"]


NODE_KEYS = ("node", "node_parent", "kind", "depth", "n", "time", "cp_iter", "cp_flag", "lb",
             "lb_parent", "ub", "gub", "closed", "elapsed", "sdp_iterations", "pseudocost")


def _clean(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ---------------------------------------------------------------------- paper figures
def heuristic_ubs() -> dict[str, float]:
    """Best feasible value per instance found by the heuristics benchmarks (those present)."""
    best: dict[str, float] = {}
    for path in HEUR:
        if not path.exists():
            continue
        for inst in json.loads(path.read_text()).get("instances", []):
            vals = [r["objective"] for r in inst.get("runs", [])
                    if r.get("status") == "found" and r.get("objective") is not None]
            if vals:
                key = inst["instance"]
                best[key] = min(min(vals), best.get(key, math.inf))
    return best


# ---------------------------------------------------------------------- reporting
def _f(v, fmt="{:.4f}"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _against_mix(tr: list, nr: list, per: list) -> list[str]:
    """The largest per-mix ratios of mean time (``tr``) and mean nodes (``nr``) to the
    paper's, as (ratio, key), and the 10 instances of ``per`` (ratio to their mix's paper
    mean time, row) slowest against it, with nodes and root gap, what explains them."""
    if not tr:
        return []
    name = lambda key: f"{key[0]} {key[1]} {key[2]}"  # noqa: E731
    out = [f"Per mix: mean time / paper's mean at most {max(tr)[0]:.2f} ({name(max(tr)[1])}); "
           + (f"mean nodes / paper's at most {max(nr)[0]:.2f} ({name(max(nr)[1])})."
              if nr else ""),
           "", "Slowest 10 against their mix's paper mean time:", "",
           "| instance | time (s) | / paper mix mean | nodes | root gap | levels |",
           "|---|---|---|---|---|---|"]
    for ratio, r in sorted(per, key=lambda x: -x[0])[:10]:
        out.append(f"| {r['instance']} | {r['seconds']:.1f} | {ratio:.2f} | {r['nodes']} | "
                   f"{_f(r['root_gap'], '{:.4%}')} | {_levels_text(levels(r))} |")
    return out + ["", "levels: what the root left to close before the node can be pruned "
                  "(root bound to incumbent x (1 - tol)) over the median gain of a child's "
                  "bound over its parent's (children not pruned): the depth the tree needs "
                  "at that rate; 0: the root's bound met the final incumbent, the tree "
                  "waited for the incumbent.", ""]


def _levels_text(v: float | None) -> str:
    return "-" if v is None else ("0" if v <= 0 else f"{v:.1f}")


def levels(r: dict) -> float | None:
    """(incumbent (1 - tol) - root bound) / median gain of a branched child over its parent;
    None for a root-only tree."""
    rows = [n for n in (r.get("node_rows") or []) if n.get("kind") != "root"
            and n.get("lb_parent") is not None and n.get("lb") is not None]
    gains = [n["lb"] - n["lb_parent"] for n in rows if n.get("closed") != "pruned"]
    gains = gains or [n["lb"] - n["lb_parent"] for n in rows]
    obj, root, tol = r.get("objective"), r.get("root_lb"), r.get("tol")
    if (not gains or obj is None or root is None or tol is None or not math.isfinite(obj)
            or not math.isfinite(root)):
        return None
    g = statistics.median(gains)
    return (obj * (1 - tol) - root) / g if g > 0 else None


def report(rows: list[dict]) -> str:
    paper = paper_table()
    hub = heuristic_ubs()
    lines = ["### Per instance", "",
             "| instance | n | k | ML | CL | root size | root LB | root gap | objective | "
             "LB | gap | nodes | time (s) | status | best heuristic UB | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    flags = []
    for r in rows:
        ub = hub.get(r["instance"])
        check = "-"
        if ub is not None and r["lower_bound"] is not None:
            lb, obj = r["lower_bound"], r["objective"]
            if lb > ub + 1e-9 * max(1.0, abs(ub)):
                check = "BOUND>UB"
                flags.append(r["instance"])
            elif obj is not None and obj > ub * (1 + 1e-4):
                check = "worse than heuristic"
                flags.append(r["instance"])
            else:
                check = "ok"
        lines.append(
            f"| {r['instance']} | {r['n']} | {r['k']} | {r['ml']} | {r['cl']} | "
            f"{r['root_size']} | {_f(r['root_lb'])} | {_f(r['root_gap'], '{:.4%}')} | "
            f"{_f(r['objective'])} | {_f(r['lower_bound'])} | {_f(r['gap'], '{:.4%}')} | "
            f"{r['nodes']} | {r['seconds']:.1f} | {r['status']} | {_f(ub)} | {check} |")
    # aggregate like Tables 2-4
    groups: dict = {}
    for r in rows:
        kind, total = mix_of(*parse_name(r["file"])[:2])
        groups.setdefault((r["dataset"], kind, total), []).append(r)
    lines += ["", "### Aggregated like the paper's Tables 2-4 (ours | paper)", "",
              "| dataset | mix | draws | size | root gap | nodes | time (s) | median time (s) | "
              "success | paper size | paper root gap | paper nodes | paper time (s) | "
              "paper success | time ratio | median / paper |", "|" + "---|" * 16]
    ratios = []
    tr, nr, per = [], [], []  # for _against_mix
    first = {}
    for r in rows:
        first.setdefault(r["dataset"], len(first))
    for key in sorted(groups, key=lambda t: (first[t[0]], ("ML", "CL", "MLCL").index(t[1]),
                                             t[2])):
        rs = groups[key]
        ds, kind, total = key
        p = paper.get(key, {})
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
        t = mean([r["seconds"] for r in rs])
        succ = sum(r["status"] == "optimal" and (r["max_nodes"] is None or r["nodes"] <=
                                                 r["max_nodes"]) for r in rs) / len(rs)
        rg = [r["root_gap"] for r in rs if r["root_gap"] is not None]
        tm = statistics.median([r["seconds"] for r in rs])
        ratio = t / p["time"] if p.get("time") else None
        mratio = tm / p["time"] if p.get("time") else None
        if ratio is not None:
            ratios.append(ratio)
            tr.append((ratio, key))
            per += [(r["seconds"] / p["time"], r) for r in rs]
            if p.get("nodes"):
                nr.append((mean([r["nodes"] for r in rs]) / p["nodes"], key))
        lines.append(
            f"| {ds} | {kind} {total} | {len(rs)} | {mean([r['root_size'] for r in rs]):.1f} | "
            f"{_f(mean(rg), '{:.4%}') if rg else '-'} | {mean([r['nodes'] for r in rs]):.1f} | "
            f"{t:.1f} | {tm:.1f} | {succ:.0%} | {_f(p.get('size'), '{:.1f}')} | "
            f"{_f(p.get('root_gap'), '{:.3%}')} | {_f(p.get('nodes'), '{:.1f}')} | "
            f"{_f(p.get('time'), '{:.1f}')} | {p.get('success', '-')} | "
            f"{_f(ratio, '{:.2f}')} | {_f(mratio, '{:.2f}')} |")
    lines.append("")
    lines += _against_mix(tr, nr, per)
    if ratios:
        lines.append(f"Median ratio of our wall time (2-core machine) to the paper's 16-core "
                     f"time over {len(ratios)} dataset/mix groups: "
                     f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max "
                     f"{max(ratios):.2f}).")
    children = [n for r in rows for n in (r.get("node_rows") or []) if n.get("kind") != "root"]
    if children:
        lines.append(f"Child nodes ({len(children)}): median "
                     f"{statistics.median(n['time'] for n in children):.2f} s and "
                     f"{statistics.median(n['cp_iter'] for n in children):g} cutting-plane "
                     f"rounds per child.")
    n_opt = sum(r["status"] == "optimal" for r in rows)
    lines.append(f"{n_opt} of {len(rows)} instances optimal (gap <= tol).")
    if flags:
        lines.append("Flagged against the heuristics benchmark: " + ", ".join(flags))
    elif hub:
        checked = sum(r["instance"] in hub and r["lower_bound"] is not None for r in rows)
        lines.append(f"Checked against a heuristic's feasible value: {checked} of {len(rows)} "
                     "instances. No certified lower bound exceeds it, and no objective is "
                     "worse than the best heuristic value beyond 1e-4.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DEFAULT_DATASETS),
                    help="comma list (default: iris,wine,seeds,connectionist)")
    ap.add_argument("--seeds", default="0", help="constraint draws, comma list (default: 0)")
    ap.add_argument("--mixes", default=None, help="ML, CL and/or MLCL (default: all)")
    ap.add_argument("--instances", default=None,
                    help="comma list of 'dataset/ml_A_cl_B_S' names (default: every one chosen "
                         "by --datasets, --seeds and --mixes)")
    ap.add_argument("--folder", type=pathlib.Path, default=INSTANCES,
                    help="the folder of datasets, each DATASET/data.txt and "
                         "DATASET/constraints/ml_A_cl_B_S.txt (default: ../shared/instances)")
    ap.add_argument("--time-limit", default="600",
                    help="per instance (s), or 'paper': the paper's mean time on the "
                         "instance's dataset and mix (default: 600)")
    ap.add_argument("--max-nodes", type=int, default=200, help="paper: 200 (0 = none)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cp", action="append", default=[], metavar="NAME=VALUE",
                    help="a CuttingPlaneSettings field for this run, e.g. tail_off=0.3 "
                         "(repeatable; values are read as Python literals)")
    ap.add_argument("--sdp", action="append", default=[], metavar="NAME=VALUE",
                    help="an SDP option for this run, e.g. polish=0 (repeatable; values are "
                         "read as Python literals)")
    ap.add_argument("--branching", choices=sorted(BRANCHING), default=None,
                    help="the pair a node branches on (module doc; default: the solver's)")
    ap.add_argument("--most-branching", type=int, default=None, metavar="N",
                    help="of the chosen instances, only the N whose row in run --ranking of "
                         "--out took the most nodes")
    ap.add_argument("--ranking", default="all",
                    help="the run whose node counts --most-branching ranks by (default: "
                         "%(default)s)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                    help=f"results file, JSON lines (default: {DEFAULT_OUT.relative_to(ROOT)})")
    ap.add_argument("--run", default="default",
                    help="this run's name, stored in every row; resuming and the report take "
                         "the rows of this run only (rows without a name count for every run; "
                         "default: %(default)s)")
    ap.add_argument("--summary", type=pathlib.Path, default=None,
                    help="also write the report as Markdown to this file")
    ap.add_argument("--summary-only", action="store_true", help="report the results file only")
    ap.add_argument("--budget", type=float, default=None,
                    help="stop starting new instances after this many seconds in all")
    args = ap.parse_args(argv)
    args.max_nodes = args.max_nodes or None
    if args.time_limit != "paper":
        try:
            float(args.time_limit)
        except ValueError:
            ap.error(f"--time-limit: seconds or 'paper', not {args.time_limit!r}")
    args.cp, args.sdp = literal_settings(args.cp), literal_settings(args.sdp)
    if args.branching and BRANCHING[args.branching] is not None:
        import pcsos.node

        pcsos.node.branching_score = BRANCHING[args.branching]

    # once, before any solve: the code loaded now is the code every instance runs
    args.code = code_version()
    seeds = {int(s) for s in args.seeds.split(",")}
    mixes = set(args.mixes.split(",")) if args.mixes else None
    names = set(args.instances.split(",")) if args.instances else None
    if names:  # the datasets of the named instances, in the order named
        args.datasets = ",".join(dict.fromkeys(n.split("/")[0] for n in args.instances.split(",")))
    chosen = instances([d for d in args.datasets.split(",") if d], seeds, mixes, names,
                       folder=args.folder)
    previous = read_jsonl(args.out)
    if args.most_branching is not None:
        ranked = [row for row in previous if row.get("run") == args.ranking]
        if not ranked:
            ap.error(f"--most-branching: no rows of run {args.ranking!r} in {args.out}")
        pick = set(most_branching(ranked, [f"{ds}/{p.stem}" for ds, p, *_ in chosen],
                                  args.most_branching))
        chosen = [c for c in chosen if f"{c[0]}/{c[1].stem}" in pick]
    # the last row of each instance in this run counts
    done = {row["instance"]: row for row in previous if row.get("run", args.run) == args.run}
    if not args.summary_only:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        t_all = time.time()
        for ds, path, _ml, _cl, _seed in chosen:
            key = f"{ds}/{path.stem}"
            if key in done:
                continue
            if args.budget is not None and time.time() - t_all > args.budget:
                print(f"budget of {args.budget:.0f} s used: stopping before {key}")
                break
            print(f"{key} ...", end=" ", flush=True)
            try:
                row = run_one(ds, path, args)
            except KeyboardInterrupt:  # outside the solve
                row = None
            if row is None or row["status"] == "interrupted":  # Ctrl-C inside the solve
                print("interrupted, not recorded; rerun to resume")
                break
            row = {"run": args.run, **row}
            row.update(machine={"python": platform.python_version(),
                                "cpus": os.cpu_count(), "platform": platform.platform()},
                       command=" ".join(["python", "benchmarks/bench_solve.py",
                                         *(argv if argv is not None else sys.argv[1:])]))
            append_jsonl(args.out, {k: _clean(v) for k, v in row.items()})
            done[key] = row
            print(f"{row['status']} gap {row['gap']:.2e} nodes {row['nodes']} "
                  f"{row['seconds']:.1f} s", flush=True)
    keys = [f"{ds}/{p.stem}" for ds, p, *_ in chosen]
    rows = [done[k] for k in keys if k in done]
    for r in rows:  # JSON null back to inf for the report
        for key in ("root_gap", "gap", "objective", "lower_bound", "root_lb"):
            if r.get(key) is None:
                r[key] = math.inf if key != "root_lb" else -math.inf
    text = report(rows)
    print(text)
    if args.summary:
        args.summary.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
