"""The set-partitioning LP's root alone, under several bound settings, from one clustering:
its bound over time and where the time goes (issue 50).

The instance is a TSPLIB set or a dataset of ../shared/instances (``--data``; its k unless
``--k``), or one of the benchmarks' generators (``--gen``, :data:`bench_scale.GENERATORS`),
with cluster sizes in [``--size-min``, ``--size-max``] if given. One heuristic run
(``--heuristic``, IPC-k-means by default; ``--heuristic-time``, one thread) gives the
clustering that every configuration starts from, so the configurations differ only in their
settings. Each configuration is a comma-separated list of
:class:`~pcsos.bounds.settings.BoundSettings` fields (``NAME=VALUE``, as ``--bound-option``;
"" for the defaults), run by :func:`pcsos.bounds.colgen.colgen_bound` for ``--time-limit``
seconds on one thread, one after the other, each in a process of its own. A row per
configuration goes to ``--out``: status, bound, gap to the clustering, iterations, the
engine's time profile (master, exact and heuristic pricing; HiGHS iterations) and the
bound after each exact pricing (``history``).

    python benchmarks/bench_colgen_root.py --gen overlap --n 2000 --k 20 --pairs 500 \\
        --time-limit 300 --config "" "exact_every=5" --run exact_every
    python benchmarks/bench_colgen_root.py --data glass --size-min 17 --size-max 54 \\
        --heuristic s-mdeclust --time-limit 600 --config "" "sr_rounds=1" --run sr_glass
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from bench_scale import GENERATORS, child_row, print_row
from instances import INSTANCES, RESULTS, append_jsonl, code_version, load_data, utc_now

#: the one-thread setting of every BLAS a child may load (read at import)
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def load(spec: dict):
    """The instance of ``spec``: (X, k, must-link, cannot-link, a name for it)."""
    import numpy as np

    from pcsos.io import read_data

    if spec.get("data"):
        name = spec["data"]
        path = Path(name) if Path(name).is_file() else INSTANCES / "tsplib" / f"{name}.txt"
        empty = np.zeros((0, 2), dtype=np.int64)
        if path.is_file():
            data, name = read_data(path), path.stem
        else:
            data = load_data(name)  # a dataset of ../shared/instances
        k = spec["k"] or data.k
        if not k:
            raise SystemExit(f"{name} has no k: give --k")
        return data.X, k, empty, empty, name
    X, _, ml, cl = GENERATORS[spec["gen"]](spec["n"], spec["k"], spec["pairs"], spec["seed"],
                                           d=spec["d"])
    return X, spec["k"], ml, cl, (f"bench_scale.{GENERATORS[spec['gen']].__name__}("
                                  f"{spec['n']}, {spec['k']}, {spec['pairs']}, "
                                  f"seed={spec['seed']}, d={spec['d']})")


def one_case(spec: dict) -> dict:
    """One configuration's root (in a child process): the row."""
    import numpy as np

    from pcsos.bounds.colgen import colgen_bound
    from pcsos.bounds.settings import BoundSettings
    from pcsos.cli.common import parse_options
    from pcsos.problem import Problem, make_instance

    X, k, ml, cl, name = load(spec)
    problem = Problem.from_instance(make_instance(X, k, ml, cl, **sizes_of(spec)))
    labels = np.asarray(spec["labels"], dtype=np.int64)
    items = [item for item in spec["config"].split(",") if item]
    bs = BoundSettings.make(parse_options(items, "--config"), source="--config")
    res = colgen_bound(problem, labels=labels, upper_bound=spec["upper_bound"],
                       time_limit=spec["time_limit"], seed=spec["seed"],
                       **bs.colgen_options())
    ub = spec["upper_bound"]
    return {"data": name, "n": len(X), "d": X.shape[1], "k": k, "ml": len(ml), "cl": len(cl),
            "size": problem.s, **sizes_of(spec), "config": spec["config"], "upper_bound": ub,
            "lower_bound": res.lower_bound, "gap": (ub - res.lower_bound) / ub,
            "lp_value": res.lp_value if np.isfinite(res.lp_value) else None,
            "status": res.status, "iterations": res.iterations, "seconds": res.seconds,
            "time_limit": spec["time_limit"], "profile": res.profile,
            "history": [[it, round(t, 3), lp if np.isfinite(lp) else None, b]
                        for it, t, lp, b in res.history]}


def sizes_of(spec: dict) -> dict:
    """The size bounds given (make_instance's keywords)."""
    return {key: spec[key] for key in ("size_min", "size_max") if spec.get(key) is not None}


def start(spec: dict) -> dict:
    """The clustering every configuration starts from (in a child process): the heuristic's."""
    from pcsos.heuristics import run_heuristic
    from pcsos.problem import Problem, make_instance

    X, k, ml, cl, _ = load(spec)
    problem = Problem.from_instance(make_instance(X, k, ml, cl, **sizes_of(spec)))
    h = run_heuristic(spec["heuristic"], problem, seed=spec["seed"],
                      time_limit=spec["heuristic_time"])
    return {"upper_bound": h.objective, "labels": h.super_labels.tolist()}


def instance_arguments(ap: argparse.ArgumentParser, heuristic: str,
                       heuristic_time: float) -> None:
    """The options that name the instance (:func:`load`) and the heuristic of its starting
    clustering (:func:`start`; ``heuristic`` for ``heuristic_time`` seconds by default);
    :func:`instance_spec` reads them back."""
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--data", help="a TSPLIB name (../shared/instances/tsplib), a dataset "
                      "of ../shared/instances or a path")
    what.add_argument("--gen", choices=sorted(GENERATORS), help="a generator of bench_scale")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--k", type=int, help="clusters (required but with --data's datasets)")
    ap.add_argument("--size-min", type=int)
    ap.add_argument("--size-max", type=int)
    ap.add_argument("--heuristic", default=heuristic, help="the starting clustering's")
    ap.add_argument("--pairs", type=int, default=0)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0, help="the generator's and the heuristic's")
    ap.add_argument("--heuristic-time", type=float, default=heuristic_time)


def instance_spec(ap: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The spec (:func:`load`, :func:`start`) of the options of :func:`instance_arguments`;
    argparse's error where a generator is given no k."""
    if args.k is None and not args.data:
        ap.error("--gen needs --k")
    return {key: getattr(args, key) for key in ("data", "gen", "n", "k", "pairs", "d", "seed",
                                                "heuristic", "heuristic_time", "size_min",
                                                "size_max")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    instance_arguments(ap, "ipc-kmeans", 30.0)
    ap.add_argument("--config", nargs="+", default=[""],
                    help="bound settings per configuration: NAME=VALUE[,NAME=VALUE...]")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--run", default="root", help="a name for this run's rows")
    ap.add_argument("--out", type=Path, default=RESULTS / "colgen_root.jsonl")
    args = ap.parse_args(argv)
    spec = {**instance_spec(ap, args), "time_limit": args.time_limit}
    os.environ.update(ONE_THREAD)  # the children inherit it
    first = child_row([sys.executable, __file__, "_start", json.dumps(spec)], spec)
    if "labels" not in first:
        print(f"the starting clustering failed: {first.get('error', first)}", file=sys.stderr)
        return 1
    version = code_version()
    command = shlex.join(["python", "benchmarks/bench_colgen_root.py",
                          *(argv if argv is not None else sys.argv[1:])])
    for config in args.config:
        # the clustering goes by file: a label per point is too long for a command line
        with tempfile.TemporaryDirectory() as tmp:
            case = Path(tmp) / "case.json"
            case.write_text(json.dumps({**spec, **first, "config": config}))
            row = child_row([sys.executable, __file__, "_one", str(case)], {})
        row = {"run": args.run, **row, "code_version": version, "command": command,
               "date": utc_now()}
        row.pop("labels", None)
        append_jsonl(args.out, row)
        print(f"config {config or '(defaults)'}: {row.get('status')}, bound "
              f"{row.get('lower_bound')}, gap {row.get('gap')}, "
              f"{row.get('seconds')} s, profile {row.get('profile')}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "_one":
        print_row(one_case(json.loads(Path(sys.argv[2]).read_text())))
    elif len(sys.argv) == 3 and sys.argv[1] == "_start":
        print_row(start(json.loads(sys.argv[2])))
    else:
        sys.exit(main())
