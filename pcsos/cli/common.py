"""Helpers shared by the subcommands: instance arguments, instance loading, JSON output."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
from typing import Any

from pcsos.bounds.arrays import DEVICES
from pcsos.bounds.settings import BoundSettings
from pcsos.cuts.loop import TAIL_OFF_ROOT_ROUNDS, TREE_CUT_DEFAULTS, CuttingPlaneSettings
from pcsos.cuts.separation import COLLECT
from pcsos.errors import InputError
from pcsos.io import STDIN, read_constraints, read_data, read_weights
from pcsos.problem import Instance, check_magnitude, make_instance

__all__ = ["add_bound_arguments", "add_cut_arguments", "add_instance_arguments",
           "bound_settings", "check_output_paths", "cut_settings", "describe_weights_sizes",
           "load_instance", "parse_options", "print_notes", "weights_sizes",
           "add_quiet_argument"]

#: the options of any subcommand that name a file to write ('-' is standard output)
OUTPUT_OPTIONS = ("log", "jsonl", "result", "labels", "json", "output", "checkpoint")
#: the options that name files to read, which no output may overwrite
INPUT_OPTIONS = ("data", "constraints", "init_labels", "run", "label_file", "weights",
                 "resume")


def report_stream(args: argparse.Namespace):
    """Where a command's human-readable output goes: nowhere with ``-q``; stderr when an
    output option writes to stdout (``--json -``, ``--labels -``, ...), so that stdout
    holds that output alone; else stdout."""
    if getattr(args, "quiet", False):
        return io.StringIO()  # discarded
    return sys.stderr if _to_stdout(args) else sys.stdout


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    """``-q``: no report and no notes; the files asked for are still written."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing (the files asked for are still written)")


def _to_stdout(args: argparse.Namespace) -> list[str]:
    """The output options of ``args`` that name ``-`` (stdout; a checkpoint is a file)."""
    return [_option_name(name) for name in OUTPUT_OPTIONS
            if name != "checkpoint" and (p := getattr(args, name, None)) is not None
            and os.fspath(p) == "-"]


def add_instance_arguments(parser: argparse.ArgumentParser, *, weights: bool = False,
                           sizes: bool = False) -> None:
    """Add ``DATA``, ``-c/--constraints FILE`` (none: unconstrained) and ``-k/--k K``; with
    ``weights`` also ``--weights FILE``, with ``sizes`` ``--size-min``, ``--size-max`` and
    ``--sizes`` (for the commands that honour them)."""
    parser.add_argument("data", metavar="DATA",
                        help="data file: pc-sos-sdp text ('n d [k]' header), CSV with a "
                             "'class' column, .npy or .npz ('-' = stdin, text)")
    parser.add_argument("-c", "--constraints", metavar="FILE", default=None,
                        help="constraint file: pc-sos-sdp text (ML/CL/DELTA/GAMMA lines) or "
                             "PCCC JSON ('-' = stdin); omitted: no constraints")
    parser.add_argument("-k", "--k", metavar="K", type=int, default=None,
                        help="number of clusters; default: the k of an 'n d k' header or "
                             "max + 1 of a CSV class column")
    if weights:
        parser.add_argument("--weights", metavar="FILE", default=None,
                            help="point weights, one positive number a line (n lines); the "
                                 "objective becomes sum_i w_i ||x_i - mu_c||^2, mu_c the "
                                 "weighted mean; default: every weight 1")
    if sizes:
        parser.add_argument("--size-min", metavar="N", type=int, default=None,
                            help="every cluster has at least N points")
        parser.add_argument("--size-max", metavar="N", type=int, default=None,
                            help="every cluster has at most N points")
        parser.add_argument("--sizes", metavar="N1,N2,...", default=None,
                            help="the k exact cluster sizes (points, not weights), in any "
                                 "order, summing to n; not with --size-min / --size-max")


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= {least}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}, got {value}")
    return value


def _number(text: str, what: str, unit: str = "") -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not value >= 0:  # False for NaN
        raise argparse.ArgumentTypeError(f"must be >= 0{unit}, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    """An argparse type: a whole number >= 0 (a seed: numpy refuses a negative one; a
    count)."""
    return _whole(text, 0)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (argparse names the option in its error)."""
    return _whole(text, 1)


def seconds(text: str) -> float:
    """An argparse type: a number of seconds >= 0 (a time limit; argparse names the option
    in its error)."""
    return _number(text, "a number of seconds", " seconds")


def tolerance(text: str) -> float:
    """An argparse type: a relative tolerance, a number in [0, 1)."""
    value = _number(text, "a number in [0, 1)")
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 (a solver's tolerance)."""
    value = _number(text, "a number > 0")
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds > 0 (an interval)."""
    value = seconds(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
    return value


def sse_value(text: str) -> float:
    """An argparse type: a value of the objective, a number >= 0 or inf (nan is none)."""
    return _number(text, "a sum of squares")


def add_parallel_arguments(parser, *, what: str, where: str) -> None:
    """``--workers`` and ``--dask`` for a command that runs ``what`` (e.g. "nodes") at
    once ``where`` (how each runs, e.g. "in parallel")."""
    parser.add_argument("--workers", type=positive_int, default=None,
                        help=f"{what} {where} (default: CPU count; with --dask, the "
                             "cluster's threads)")
    parser.add_argument("--dask", metavar="ADDRESS", default=None,
                        help=f"run the {what} on a Dask cluster: a scheduler address, or "
                             "local:N for a local cluster of N worker processes (pip install "
                             "'pcsos[dask]'; docs/solver.md)")


def add_bound_arguments(parser) -> None:
    """``--device`` and ``--bound-option``: the bound settings every bounding command takes
    (the one definition of these options)."""
    parser.add_argument("--device", choices=DEVICES, default=BoundSettings.device,
                        help="where the SDP solver iterates: cpu (default), cuda (a GPU "
                             "through PyTorch: pip install 'pcsos[gpu]'), or auto (a visible "
                             "GPU, else the CPU)")
    parser.add_argument("--bound-option", metavar="NAME=VALUE", action="append", default=[],
                        help="a bound setting, e.g. --bound-option polish=0 (the names: "
                             f"{', '.join(BoundSettings.names())}; VALUE is read as JSON "
                             "when it parses, else as a string); repeatable")


def bound_settings(args: argparse.Namespace, **given) -> BoundSettings:
    """The :class:`BoundSettings` of the command line: the options ``given`` by the
    command's own flags, ``--device``, then ``--bound-option`` items; an unknown name or a
    bad value is an :class:`InputError` naming ``--bound-option``."""
    extra = parse_options(args.bound_option, "--bound-option")
    return BoundSettings.make({**given, "device": args.device, **extra},
                              source="--bound-option")


def parse_options(items: list[str], flag: str) -> dict:
    """``['a=1', 'b=x']`` -> ``{'a': 1, 'b': 'x'}`` (JSON values where they parse); a
    malformed item is an :class:`InputError` naming ``flag``."""
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"an option must read NAME=VALUE, got {item!r}", source=flag)
        try:
            val = json.loads(raw)
        except json.JSONDecodeError:
            val = raw
        out[key.strip()] = val
    return out


def add_cut_arguments(parser: argparse.ArgumentParser, *, children: bool) -> None:
    """Add the cutting-plane loop's settings (``children``: a tree's loop, with the
    per-node settings).

    The defaults are read from :class:`~pcsos.cuts.loop.CuttingPlaneSettings` (with
    ``TREE_CUT_DEFAULTS`` for a tree's), so the CLI and the API cannot disagree.
    """
    # a tree's loop (children) has the tree's defaults
    d = CuttingPlaneSettings(**(TREE_CUT_DEFAULTS if children else {}))
    g = parser.add_argument_group("cutting-plane loop")
    g.add_argument("--max-rounds", type=int, default=d.max_rounds_root, metavar="N",
                   help=f"SDP solves at the root at most (default {d.max_rounds_root})")
    if children:
        g.add_argument("--max-rounds-child", type=int, default=d.max_rounds_child,
                       metavar="N",
                       help=f"SDP solves at other nodes at most (default {d.max_rounds_child})")
        g.add_argument("--tail-off", type=float, default=d.tail_off, metavar="F",
                       help=f"at nodes other than the root, stop the loop and branch once a "
                            f"round closed less than this share of the node's gap (default "
                            f"{d.tail_off}; 0 = off)")
        g.add_argument("--tail-off-root", type=float, default=d.tail_off_root, metavar="F",
                       help=f"the same at the root, after {TAIL_OFF_ROOT_ROUNDS} such rounds in a "
                            f"row (default {d.tail_off_root or 0}; 0 = off)")
        g.add_argument("--inherit-min-u", type=float, default=d.inherit_min_u, metavar="F",
                       help=f"children inherit the cuts whose multiplier exceeds this share of "
                            f"the largest (default {d.inherit_min_u:g}; 0 = every cut)")
    g.add_argument("--cp-tol", type=float, default=d.cp_tol,
                   help=f"stop when the bound improves by less than this, relatively "
                        f"(default {d.cp_tol:g})")
    g.add_argument("--loose-tol", type=float, default=d.loose_tol, metavar="T",
                   help=f"solve the intermediate rounds to this KKT tolerance, the last ones "
                        f"to the SDP tolerance (default {d.loose_tol:g}; 0 = every round tight)")
    g.add_argument("--loose-gap-factor", type=float, default=d.loose_gap_factor, metavar="F",
                   help=f"with an incumbent, an intermediate round's tolerance is at most F "
                        f"times what the node's bound still has to rise to prune it, relative "
                        f"(default {d.loose_gap_factor:g}; "
                        f"0 = --loose-tol alone)")
    g.add_argument("--cut-violation", type=float, default=d.eps_violation, metavar="EPS",
                   help=f"separate cuts violated by more than this (default {d.eps_violation:g})")
    g.add_argument("--cut-violation-fine", type=float, default=d.eps_violation_fine,
                   metavar="EPS",
                   help=f"when the loop would stop for lack of progress, separate at this "
                        f"smaller threshold and go on (default {d.eps_violation_fine}; "
                        f"0 = off)")
    g.add_argument("--cut-violation-fine-gap", type=float, default=d.fine_gap, metavar="G",
                   help=f"--cut-violation-fine applies only while the node's bound is within "
                        f"G of pruning it, relative to the incumbent (default {d.fine_gap:g}; "
                        f"inf = whatever the gap)")
    g.add_argument("--eps-active", type=float, default=d.eps_active, metavar="EPS",
                   help=f"keep a cut while its slack is at most this (default {d.eps_active:g})")
    g.add_argument("--cut-fraction", type=float, default=d.fraction["triangle"], metavar="F",
                   help=f"share of the collected pair/triangle cuts added per round, most "
                        f"violated first (default {d.fraction['triangle']:g})")
    g.add_argument("--max-collected", type=int, default=d.max_collected["triangle"],
                   metavar="N", help=f"violated cuts collected per family and round "
                                     f"(default {d.max_collected['triangle']})")
    g.add_argument("--cut-collect", choices=COLLECT, default=d.collect,
                   help=f"which violated triangles fill --max-collected: the most violated "
                        f"of the matrix, or the first in a random apex order as in pc-sos-sdp "
                        f"(default {d.collect})")
    g.add_argument("--star-leaves", type=int, default=d.star_leaves, metavar="N",
                   help=f"leaves of a star cut at most, 3 or more (default {d.star_leaves})")
    g.add_argument("--max-cuts", type=int, default=d.max_cuts, metavar="N",
                   help=f"cuts in the model at most (default {d.max_cuts})")


def cut_settings(args: argparse.Namespace, families: str, prune_tol: float):
    """The :class:`~pcsos.cuts.loop.CuttingPlaneSettings` of ``add_cut_arguments``' options
    (an :class:`InputError` naming the settings when they are invalid)."""
    kw = {}
    if hasattr(args, "max_rounds_child"):
        kw["max_rounds_child"] = args.max_rounds_child
        kw["tail_off"] = args.tail_off or None
        kw["tail_off_root"] = args.tail_off_root or None
        kw["inherit_min_u"] = args.inherit_min_u
    try:
        return CuttingPlaneSettings(
            families=families, eps_violation=args.cut_violation,
            eps_violation_fine=args.cut_violation_fine or None,
            fine_gap=args.cut_violation_fine_gap, eps_active=args.eps_active,
            max_collected={f: args.max_collected for f in ("pair", "triangle", "clique")},
            fraction={"pair": args.cut_fraction, "triangle": args.cut_fraction},
            collect=args.cut_collect, star_leaves=args.star_leaves, max_cuts=args.max_cuts,
            max_rounds_root=args.max_rounds, cp_tol=args.cp_tol, prune_tol=prune_tol,
            loose_tol=args.loose_tol or None, loose_gap_factor=args.loose_gap_factor or None,
            **kw)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), source="cutting-plane settings") from None


def load_instance(args: argparse.Namespace, *, notes: bool = True) -> tuple[Instance, dict]:
    """Read ``args.data`` / ``args.constraints`` and validate them with ``make_instance``;
    with ``notes``, print the readers' notes on stderr unless ``-q`` (a misspelt key must not
    pass unseen; ``pcsos check`` reports them itself).

    k is ``args.k`` when given, else the header's k, else max + 1 of the class column;
    with none of them, :class:`InputError`. Returns the instance and an info dict with keys
    ``data``, ``constraints``, ``header``, ``data_notes``, ``constraint_notes``, ``classes``
    (true labels or None), ``k``, ``k_source`` (``'-k'``, ``'header'``, ``'class column'``),
    ``ml_given``, ``cl_given`` (pairs read, DELTA/GAMMA expansions included),
    ``delta_pairs``, ``gamma_pairs`` and ``weights`` (the weights file or None). The
    weights and size options, where the command has them, go to ``make_instance``; its
    errors name the option (``--sizes``, ...).
    """
    data = read_data(args.data)
    check_magnitude(data.X, data.source)
    info: dict[str, Any] = {
        "data": os.fspath(args.data),
        "constraints": None,
        "header": data.header,
        "data_notes": list(data.notes),
        "constraint_notes": [],
        "classes": data.classes,
    }
    k = getattr(args, "k", None)
    if k is not None:
        if k < 1:
            raise InputError(f"k must be a positive integer, got {k}", source="-k")
        info["k_source"] = "-k"
        if data.k is not None and data.k != k:
            where = "'n d k' header" if data.header.startswith("n d") else "class column"
            info["data_notes"].append(f"-k {k} overrides k = {data.k} from the {where}")
    elif data.k is not None:
        k = data.k
        info["k_source"] = "header" if data.header.startswith("n d") else "class column"
        info["data_notes"].append(f"k = {k} taken from the {info['k_source']} (no -k given)")
    else:
        # a header's k = 0 means none (the reader's note says so)
        raise InputError("k is unknown: give -k K (the data file gives no k: no 'n d k' "
                         "header with k >= 1 and no class column)", source="-k")
    ml: list = []
    cl: list = []
    cpath = getattr(args, "constraints", None)
    info["delta_pairs"] = info["gamma_pairs"] = 0
    if cpath is not None:
        cons = read_constraints(cpath, n=data.n, X=data.X)
        ml, cl = cons.ml, cons.cl
        info["constraints"] = os.fspath(cpath)
        info["constraint_notes"] = list(cons.notes)
        info["delta_pairs"], info["gamma_pairs"] = cons.n_delta, cons.n_gamma
    else:
        info["constraint_notes"] = ["no constraint file: the unconstrained problem"]
    info["ml_given"], info["cl_given"] = len(ml), len(cl)
    if k > data.n:
        raise InputError(f"k = {k} exceeds the number of points n = {data.n}",
                         source="-k" if info["k_source"] == "-k" else data.source)
    w = getattr(args, "weights", None)
    info["weights"] = None if w is None else os.fspath(w)
    weights = None if w is None else read_weights(w, data.n)
    sizes = _sizes_list(getattr(args, "sizes", None))
    try:
        inst = make_instance(data.X, k, ml, cl, weights=weights,
                             size_min=getattr(args, "size_min", None),
                             size_max=getattr(args, "size_max", None), sizes=sizes)
    except InputError as exc:
        option = {"size_min": "--size-min", "size_max": "--size-max", "sizes": "--sizes",
                  "sample_weight": "--weights"}.get(exc.source)
        if option is None:
            raise
        # the library names its keyword; the user wrote an option
        message = str(exc).removeprefix(f"{exc.source}: ")
        raise InputError(message, source=option) from None
    info["k"] = k
    if notes and not getattr(args, "quiet", False):
        print_notes(info)
    return inst, info


def weights_sizes(inst: Instance, info: dict) -> dict:
    """The report keys of the weights and sizes: ``weights`` (the file or None),
    ``total_weight``, ``size_min``, ``size_max`` and ``sizes`` (None when not set)."""
    return {"weights": info.get("weights"),
            "total_weight": None if inst.weights is None else inst.total_weight,
            "size_min": inst.size_min, "size_max": inst.size_max,
            "sizes": None if inst.sizes is None else list(inst.sizes)}


def describe_weights_sizes(inst: Instance, info: dict) -> str | None:
    """One line on the weights and size constraints, or None when there are neither."""
    parts = []
    if inst.weights is not None:
        w = inst.weights
        parts.append(f"weights from {info.get('weights')} (total {inst.total_weight:.6g}, "
                     f"min {w.min():.6g}, max {w.max():.6g})")
    if inst.sizes is not None:
        parts.append(f"cluster sizes {list(inst.sizes)}")
    elif inst.has_sizes:
        lo, hi = inst.size_bounds()
        parts.append(f"cluster sizes in {lo}..{hi} points")
    return "; ".join(parts) or None


def _sizes_list(text: str | None) -> list[int] | None:
    """The integers of ``--sizes 50,50,50``; an InputError names a token that is not one."""
    if text is None:
        return None
    out = []
    for tok in text.split(","):
        try:
            out.append(int(tok.strip()))
        except ValueError:
            raise InputError(f"not a whole number: {tok.strip()!r} (give N1,N2,...)",
                             source="--sizes") from None
    return out


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse, before any work, output paths that could not be written (exit code 2).

    Each of ``OUTPUT_OPTIONS`` that is set must name a file (not a directory) in an existing,
    writable directory, must not be an input file, and no two may name the same file;
    otherwise the result of a long solve would be lost at the end. Of the inputs, one at most
    may be ``-`` (stdin), and not ``--resume``.
    """
    if len(stdout := _to_stdout(args)) > 1:  # their outputs would be mixed in one stream
        raise InputError(f"{' and '.join(stdout)} both name '-' (stdout): give one of them a "
                         "file", source=stdout[1])
    given = _inputs(args)
    stdin = stdin_inputs(args)
    if len(stdin) > 1:  # the first would read it all
        raise InputError(f"{' and '.join(stdin)} both name '-' (stdin): give one of them a "
                         "file", source=stdin[1])
    if given.get("resume") == STDIN:
        raise InputError("a checkpoint is an archive to resume from: give it a file, not '-'",
                         source="--resume")
    seen: dict[str, str] = {}
    inputs = {os.path.realpath(p): _option_name(name) for name, p in given.items()
              if p != STDIN}
    for name in OUTPUT_OPTIONS:
        path = getattr(args, name, None)
        if name == "checkpoint" and path is not None and os.fspath(path) == "-":
            raise InputError("a checkpoint is an archive to resume from: give it a file, not "
                             "'-'", source="--checkpoint")
        if path is None or os.fspath(path) == "-":
            continue
        path = os.fspath(path)
        opt = _option_name(name)
        real = os.path.realpath(path)
        parent = os.path.dirname(real) or "."
        why = None
        if os.path.isdir(real):
            why = "it is a directory"
        elif not os.path.isdir(parent):
            why = f"its directory {parent} does not exist"
        elif os.path.exists(real) and not os.access(real, os.W_OK):
            why = "it is not writable"
        elif not os.path.exists(real) and not os.access(parent, os.W_OK | os.X_OK):
            why = f"its directory {parent} is not writable"
        elif real in inputs and not (name == "checkpoint" and inputs[real] == "--resume"):
            # a checkpoint goes on in the file it resumed from: it is written atomically
            why = f"it is the input file of {inputs[real]}"
        elif real in seen:
            why = f"it is also the file of {seen[real]}"
        if why is not None:
            raise InputError(f"cannot write {path!r}: {why}", source=opt)
        seen[real] = opt


def _inputs(args: argparse.Namespace) -> dict[str, str]:
    """The input options set in ``args``, by destination: their paths."""
    return {name: os.fspath(p) for name in INPUT_OPTIONS
            if (p := getattr(args, name, None)) is not None}


def stdin_inputs(args: argparse.Namespace) -> list[str]:
    """The input options that name ``-`` (standard input), as the user wrote them."""
    return [_option_name(name) for name, p in _inputs(args).items() if p == STDIN]


def _option_name(dest: str) -> str:
    """How the user wrote the option whose argparse destination is ``dest``."""
    return {"data": "DATA", "run": "RUN", "label_file": "--labels"}.get(
        dest, "--" + dest.replace("_", "-"))


def print_notes(info: dict, stream=None) -> None:
    """The readers' notes (header counts, k's source, ignored soft pairs, ...), one a line."""
    stream = stream if stream is not None else sys.stderr
    for note in info["data_notes"] + info["constraint_notes"]:
        stream.write(f"note: {note}\n")
    stream.flush()


