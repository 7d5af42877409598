"""Two runs of ``bench_solve.py`` on the same instances, side by side (issue 31, acceptance 5).

Reads the results files of a "before" and an "after" run (the last row of each instance
counts), keeps the instances both ran, and prints per instance the status, nodes and
seconds of each and the time ratio after / before. Then, per group (``--group``: a name
and a comma list of instance prefixes, none for every instance; repeatable; default: one
group of all), it prints the median of the per-instance ratios and each run's median
ratio of its time to the paper's mix mean time (the figure the headline rows quote).
``--runs BEFORE AFTER`` takes only the rows of those runs (bench_solve.py's ``--run``; each
may be a comma list, the first run listed that has an instance giving its row) of the two
files, which may be one file. A side that stopped on its time limit gives only a floor on
its time, so that instance's ratio is a bound (``ratio_is``: ``at_most`` when the before
side stopped, ``at_least`` when the after side did, ``unknown`` for both); a group with such
instances also gets ``median_ratio_at_most``, the median with each ratio not bounded from
above taken as infinite, which no run to the end can exceed. With ``--out`` the same goes
to a JSON file; with ``--out FILE --key NAME`` under key NAME of the JSON object in FILE
(other keys kept). Run the two sides one instance at a time, alternating which goes
first, on an otherwise idle machine, so that both see the same conditions
(``benchmarks/ab_solve.sh``, whose rows go to ``benchmarks/results/ab_solve.jsonl``, run
``NAME_base`` and ``NAME_head``):

    python benchmarks/compare_solve.py benchmarks/results/ab_solve.jsonl \\
        benchmarks/results/ab_solve.jsonl --runs NAME_base NAME_head \\
        --group seed0:iris,wine,seeds --out benchmarks/results/ab_compare.json --key NAME_compare
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

from instances import merge_json, mix_of, paper_table, parse_name, read_jsonl


def last_rows(path, run: str | None = None) -> dict:
    """{instance: its last row} of a bench_solve results file; ``run``: of that run only,
    or of a comma list of runs, an instance's row taken from the first run listed that has
    one (a rerun of some instances in a run of its own, over the run it completes)."""
    rows = read_jsonl(path)
    if run is None:
        return {r["instance"]: r for r in rows}
    out: dict = {}
    for name in reversed(run.split(",")):
        out.update({r["instance"]: r for r in rows if r.get("run") == name})
    return out


def paper_ratio(row: dict, paper: dict) -> float | None:
    kind, total = mix_of(*parse_name(row["file"])[:2])
    p = paper.get((row["dataset"], kind, total))
    return row["seconds"] / p["time"] if p and p.get("time") else None


def _median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _f3(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def ratio_is(before: dict, after: dict) -> str:
    """'exact', or which way the ratio after / before bounds the one of two runs to the end:
    a time-limited side's seconds are only a floor on its time."""
    stopped = (before["status"] == "time_limit", after["status"] == "time_limit")
    return {(False, False): "exact", (True, False): "at_most",
            (False, True): "at_least", (True, True): "unknown"}[stopped]


def compare(before: dict, after: dict, groups: list[tuple[str, tuple[str, ...]]]) -> dict:
    paper = paper_table()
    names = [n for n in before if n in after]
    per = []
    for n in names:
        a, b = before[n], after[n]
        per.append({"instance": n, "status": [a["status"], b["status"]],
                    "nodes": [a["nodes"], b["nodes"]], "seconds": [a["seconds"], b["seconds"]],
                    "ratio": b["seconds"] / a["seconds"] if a["seconds"] > 0 else None,
                    "ratio_is": ratio_is(a, b),
                    "paper_ratio": [paper_ratio(a, paper), paper_ratio(b, paper)],
                    "code": [a.get("code"), b.get("code")]})
    summary = {}
    for name, prefixes in groups or [("all", ("",))]:
        rows = [r for r in per if r["instance"].startswith(prefixes)]
        if not rows:
            continue
        summary[name] = {
            "instances": len(rows),
            "optimal": [sum(r["status"][i] == "optimal" for r in rows) for i in (0, 1)],
            "median_ratio_after_over_before": _median(r["ratio"] for r in rows),
            "median_paper_ratio": [_median(r["paper_ratio"][i] for r in rows) for i in (0, 1)],
            "seconds": [sum(r["seconds"][i] for r in rows) for i in (0, 1)],
            "nodes": [sum(r["nodes"][i] for r in rows) for i in (0, 1)]}
        bounded = [r for r in rows if r["ratio_is"] != "exact"]
        if bounded:
            summary[name]["ratio_is"] = {k: sum(r["ratio_is"] == k for r in bounded)
                                         for k in ("at_most", "at_least", "unknown")}
            summary[name]["median_ratio_at_most"] = _median(
                r["ratio"] if r["ratio_is"] in ("exact", "at_most") else math.inf
                for r in rows)
    return {"per_instance": per, "groups": summary}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--group", action="append", default=[],
                    help="NAME:PREFIX[,PREFIX...] (instance names start with a prefix)")
    ap.add_argument("--runs", nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                    help="only the rows of these runs (their 'run' field) of before and after")
    ap.add_argument("--out", help="also write the comparison here (JSON)")
    ap.add_argument("--key", help="with --out: write the comparison under this key of the "
                                  "JSON object in --out, keeping its other keys")
    args = ap.parse_args(argv)
    groups = []
    for g in args.group:
        name, _, rest = g.partition(":")
        # no prefix: every instance
        groups.append((name, tuple(p for p in rest.split(",") if p) or ("",)))
    if args.before == args.after and not args.runs:
        ap.error("one file on both sides: name the two runs (--runs BEFORE AFTER)")
    runs = args.runs or (None, None)
    res = compare(last_rows(args.before, runs[0]), last_rows(args.after, runs[1]), groups)
    print("| instance | status before / after | nodes | seconds | after / before |")
    print("|---|---|---|---|---|")
    for r in res["per_instance"]:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        ratio = {"at_most": "<= ", "at_least": ">= "}.get(r["ratio_is"], "") + ratio
        if r["ratio_is"] == "unknown":
            ratio += " (both stopped on the time limit)"
        print(f"| {r['instance']} | {r['status'][0]} / {r['status'][1]} | "
              f"{r['nodes'][0]} / {r['nodes'][1]} | {r['seconds'][0]:.1f} / "
              f"{r['seconds'][1]:.1f} | {ratio} |")
    for name, s in res["groups"].items():
        print(f"{name}: {s['instances']} instances, optimal {s['optimal'][0]} / "
              f"{s['optimal'][1]}, median after/before {_f3(s['median_ratio_after_over_before'])}, "
              f"median ratio to the paper {_f3(s['median_paper_ratio'][0])} / "
              f"{_f3(s['median_paper_ratio'][1])}, seconds {s['seconds'][0]:.1f} / "
              f"{s['seconds'][1]:.1f}, nodes {s['nodes'][0]} / {s['nodes'][1]}")
        if "ratio_is" in s:
            n = s["ratio_is"]
            print(f"  {n['at_most']} ratios at most, {n['at_least']} at least, "
                  f"{n['unknown']} unknown (a side stopped on its time limit): the median of "
                  f"runs to the end is at most {_f3(s['median_ratio_at_most'])}")
    if args.out and args.key:
        merge_json(args.out, args.key, res)
    elif args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
