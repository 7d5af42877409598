"""Does the branching pair decide what a child closes? (issue 32: strong branching's case)

From a root checkpoint (as written by bench_node_effort.py), bound one of the root's
children as the tree does (one loose cutting-plane round, default settings), then for its
``--pairs`` best pairs by the branching score (``--distinct``: that share no point) bound
both children of each pair twice:

* with short warm-started ADMM probes (25, 50, 100 and 200 iterations in all, tolerance
  1e-3): the safe bound and the ADMM's value, each less the node's;
* with the cutting-plane loop a tree child runs (default settings): its bound less the
  node's.

If the loop's gains differ much between pairs, strong branching (bounding the children of a
few pairs before choosing) can pay; if the probes rank pairs as the loop does, it can be
cheap. One JSON line per pair goes to ``--out``.

    python benchmarks/bench_node_effort.py --instance ECG5000/ml_0_cl_150_3 \\
        --root /tmp/ecg_root.ckpt --seconds 1 --policy default   # writes the root
    python benchmarks/bench_branch_pairs.py --instance ECG5000/ml_0_cl_150_3 \\
        --root /tmp/ecg_root.ckpt --child cl --pairs 8
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from instances import RESULTS, append_jsonl, code_version, constraint_path, load_instance
from threadpoolctl import threadpool_limits

from pcsos.bounds import SDPModel, WarmStart, solve_sdp
from pcsos.checkpoint import read_checkpoint
from pcsos.cuts.loop import cutting_plane_loop, inherited_selection
from pcsos.node import _child, _ranked_pairs
from pcsos.options import SolverOptions

PROBE_STEPS = (25, 25, 50, 100)  # iterations added per probe: 25, 50, 100, 200 in all


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", required=True, help="dataset/ml_A_cl_B_S")
    ap.add_argument("--root", type=pathlib.Path, required=True, help="root checkpoint")
    ap.add_argument("--child", choices=("ml", "cl"), default="cl",
                    help="which child of the root to branch")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--distinct", action="store_true",
                    help="pairs with no point in common (the best ones greedily), since the "
                         "best pairs by the score often share one point")
    ap.add_argument("--out", type=pathlib.Path, default=RESULTS / "bench_branch_pairs.jsonl")
    args = ap.parse_args(argv)
    threadpool_limits(1)
    dataset, stem = args.instance.split("/")
    inst = load_instance(dataset, constraint_path(dataset, stem))
    state, _ = read_checkpoint(args.root, inst)
    data = next(o[4] for o in state.open if o[4].kind == args.child)
    problem, ub = data.problem, state.incumbent
    st = SolverOptions(seed=0).checked().cp_settings
    common = {"instance": args.instance, "child": args.child, "incumbent": ub,
              "code": code_version(),
              "command": " ".join(["python", "benchmarks/bench_branch_pairs.py",
                                   *(argv if argv is not None else sys.argv[1:])])}

    def loop(prob, cuts, warm, known):
        return cutting_plane_loop(prob, cuts=cuts, warm_start=warm, upper_bound=ub,
                                  settings=st, root=False, bound_settings={"backend": "admm"},
                                  seed=0, known_bound=known)

    t = time.perf_counter()
    br = loop(problem, data.cuts, data.warm_start, data.parent_bound)
    lb = max(br.lower_bound, data.parent_bound)
    node = {"parent_bound": data.parent_bound, "bound": lb, "sdp_value": br.sdp.sdp_value,
            "rounds": len(br.rounds), "seconds": time.perf_counter() - t}
    print(node, flush=True)
    sel = inherited_selection(br, st)
    parent_cuts, point = br.cuts.select(sel), WarmStart.for_cuts(br.sdp, sel)
    pairs = _ranked_pairs(br.sdp.Z, problem, 50 * args.pairs if args.distinct else args.pairs)
    if args.distinct:
        chosen, used = [], set()
        for a, b in pairs:
            if a not in used and b not in used and len(chosen) < args.pairs:
                chosen.append((a, b))
                used.update((a, b))
        pairs = chosen
    for rank, (a, b) in enumerate(pairs):
        row = {**common, "node": node, "pair": [a, b], "rank": rank, "distinct": args.distinct}
        for kind in ("ml", "cl"):
            made = _child(problem, parent_cuts, point, a, b, kind)
            if made is None:
                row[kind] = "infeasible"
                continue
            child, cuts, warm = made
            model, ws, probes, done = SDPModel.from_problem(child, cuts), warm, [], 0
            t = time.perf_counter()
            for steps in PROBE_STEPS:
                r = solve_sdp(model, warm_start=ws, max_iter=steps, tol=1e-3)
                ws, done = WarmStart.from_result(r), done + int(r.iterations)
                probes.append({"iterations": done, "bound_gain": r.lower_bound - lb,
                               "value_gain": r.sdp_value - br.sdp.sdp_value,
                               "seconds": time.perf_counter() - t})
            t = time.perf_counter()
            full = loop(child, cuts, warm, lb)
            row[kind] = {"probes": probes, "loop_gain": max(full.lower_bound, lb) - lb,
                         "loop_rounds": len(full.rounds), "loop_seconds": time.perf_counter() - t}
        append_jsonl(args.out, row)
        print(a, b, {k: row[k]["loop_gain"] for k in ("ml", "cl") if isinstance(row[k], dict)},
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
