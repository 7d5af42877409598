"""The shared benchmark instances, for every script of ``benchmarks/``.

One place for: where things are (the repository, ``../shared``, its instances and the
results folder), how a constraint file's name reads (:func:`parse_name`, :func:`mix_of`),
which instances a run takes (:func:`constraint_files`, :func:`instances`), how an
instance is loaded (:func:`load_data`, :func:`load_constraints`, :func:`load`,
:func:`load_instance`, :func:`load_problem`, with the readers of :mod:`pcsos.io`), the
published PC-SOS-SDP figures of these instances (:func:`paper_table`, Tables 2-4 of
``../shared/docs/benchmarks.md``), and the result files (:func:`append_jsonl`,
:func:`read_jsonl`, :func:`done_rows`, :func:`write_json`, :func:`merge_json`).

The instances are ``../shared/instances/<dataset>/data.txt`` with
``constraints/ml_<A>_cl_<B>_<seed>.txt``: A must-link and B cannot-link pairs, constraint
draw ``seed`` (0-4). The scripts run as ``python benchmarks/<script>.py`` (their folder
is then on the import path), so this module imports as ``instances``.
"""

from __future__ import annotations

import ast
import datetime
import fcntl
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
INSTANCES = SHARED / "instances"
RESULTS = ROOT / "benchmarks" / "results"
PAPER = SHARED / "docs" / "benchmarks.md"

# the eight datasets of the paper's Tables 2-4, smallest first (glass is the ninth folder)
DATASETS = ("iris", "wine", "connectionist", "seeds", "heart", "vertebral", "ECG5000",
            "computers")
MIXES = ("ML", "CL", "MLCL")
_NAME = re.compile(r"ml_(\d+)_cl_(\d+)_(\d+)(\.txt)?$")


# ---------------------------------------------------------------------- names and mixes
def parse_name(name: str) -> tuple[int, int, int]:
    """(ML pairs, CL pairs, draw) of ``ml_<A>_cl_<B>_<seed>`` (with or without ``.txt``)."""
    m = _NAME.search(pathlib.PurePath(name).name)
    if m is None:
        raise ValueError(f"not a constraint file name ml_<A>_cl_<B>_<seed>.txt: {name!r}")
    ml, cl, seed, _ = m.groups()
    return int(ml), int(cl), int(seed)


def mix_of(ml: int, cl: int) -> tuple[str, int]:
    """The paper's table and total for a constraint file: ('ML', 50), ('CL', 100), ('MLCL', 50)."""
    if cl == 0:
        return "ML", ml
    if ml == 0:
        return "CL", cl
    return "MLCL", ml + cl


def constraint_path(dataset: str, stem: str, folder: pathlib.Path = INSTANCES) -> pathlib.Path:
    """The constraint file ``stem`` (e.g. ``ml_50_cl_50_0``) of ``dataset``."""
    return folder / dataset / "constraints" / f"{stem}.txt"


def split_name(name: str) -> tuple[str, str]:
    """('iris', 'ml_50_cl_50_0') from an instance name 'iris/ml_50_cl_50_0'."""
    dataset, stem = name.split("/")
    return dataset, stem.removesuffix(".txt")


def dataset_dirs(folder: pathlib.Path = INSTANCES) -> list[pathlib.Path]:
    """Every dataset folder (one with a ``data.txt``), by name."""
    return sorted(p for p in folder.iterdir() if (p / "data.txt").is_file())


def constraint_files(dataset: str, seeds=None, mixes=None,
                     folder: pathlib.Path = INSTANCES) -> list[pathlib.Path]:
    """The constraint files of ``dataset`` by file name; ``seeds``: only these draws,
    ``mixes``: only these of 'ML', 'CL', 'MLCL'. Empty when the folder is missing."""
    folder = folder / dataset / "constraints"
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("ml_*_cl_*_*.txt")):
        ml, cl, seed = parse_name(path.name)
        if seeds is not None and seed not in seeds:
            continue
        if mixes and mix_of(ml, cl)[0] not in mixes:
            continue
        out.append(path)
    return out


def instances(datasets, seeds, mixes=None, names=None, folder: pathlib.Path = INSTANCES):
    """(dataset, path, ml, cl, seed) for every constraint file chosen, datasets in the order
    given, then by mix (:func:`mix_of`) and draw.

    ``names``: exactly these instances ('dataset/ml_0_cl_50_0'); the seed and mix filters
    then do not apply.
    """
    out = []
    for ds in datasets:
        if not (folder / ds / "constraints").is_dir():
            print(f"warning: {folder / ds / 'constraints'} not found, skipped", file=sys.stderr)
            continue
        for path in constraint_files(ds, folder=folder):
            ml, cl, seed = parse_name(path.name)
            if names is not None:
                if f"{ds}/{path.stem}" not in names:
                    continue
            elif seed not in seeds or (mixes and mix_of(ml, cl)[0] not in mixes):
                continue
            out.append((ds, path, ml, cl, seed))
    order = {ds: i for i, ds in enumerate(datasets)}
    out.sort(key=lambda t: (order[t[0]], mix_of(t[2], t[3]), t[4]))
    return out


# ---------------------------------------------------------------------- loading
def load_data(dataset: str, folder: pathlib.Path = INSTANCES):
    """The data file of ``dataset`` (:func:`pcsos.io.read_data`: X, k, n, ...)."""
    from pcsos.io import read_data

    return read_data(folder / dataset / "data.txt")


def load_constraints(dataset: str, constraints, data, folder: pathlib.Path = INSTANCES):
    """One constraint file of ``dataset`` (:func:`pcsos.io.read_constraints`), checked
    against its ``data``. ``constraints``: a path, or a file stem (``ml_50_cl_50_0``)."""
    from pcsos.io import read_constraints

    path = pathlib.Path(constraints)
    if path.parent == pathlib.Path("."):
        path = constraint_path(dataset, path.name.removesuffix(".txt"), folder)
    return read_constraints(path, n=data.n, X=data.X)


def load(dataset: str, constraints, folder: pathlib.Path = INSTANCES):
    """(data, constraints) of one shared instance (:func:`load_data`,
    :func:`load_constraints`)."""
    data = load_data(dataset, folder)
    return data, load_constraints(dataset, constraints, data, folder)


def load_instance(dataset: str, constraints, folder: pathlib.Path = INSTANCES):
    """The validated :class:`pcsos.problem.Instance` of one shared instance (k from its
    data file)."""
    from pcsos.problem import make_instance

    data, cons = load(dataset, constraints, folder)
    return make_instance(data.X, data.k, cons.ml, cons.cl)


def load_problem(dataset: str, constraints, folder: pathlib.Path = INSTANCES, **kw):
    """The super-point :class:`pcsos.problem.Problem` of one shared instance."""
    from pcsos.problem import Problem

    return Problem.from_instance(load_instance(dataset, constraints, folder), **kw)


# ---------------------------------------------------------------------- the paper
def paper_table(path: pathlib.Path = PAPER) -> dict[tuple[str, str, int], dict]:
    """The published PC-SOS-SDP figures (Tables 2-4) from ``../shared/docs/benchmarks.md``:
    {(dataset, 'ML'|'CL'|'MLCL', total): {size, root_gap (fraction), nodes, time, success}}.

    Empty when the shared docs are not beside the repository.
    """
    out: dict = {}
    if not path.exists():
        return out
    table = None
    for line in path.read_text().splitlines():
        if line.startswith("ML only"):
            table = "ML"
        elif line.startswith("CL only"):
            table = "CL"
        elif line.startswith("ML and CL"):
            table = "MLCL"
        elif line.startswith("#"):
            table = None
        if table is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 7 or not cells[1].isdigit():
            continue
        try:
            out[(cells[0], table, int(cells[1]))] = {
                "size": float(cells[2]), "root_gap": float(cells[3].rstrip("%")) / 100,
                "nodes": float(cells[4]), "time": float(cells[5]),
                "success": cells[6]}
        except ValueError:
            continue
    return out


# ---------------------------------------------------------------------- result files
def append_jsonl(path, row: dict) -> None:
    """Append ``row`` as one JSON line (the folder is made when missing)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def utc_now() -> str:
    """When a row is written: UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_bound(args: list[str], env: dict | None = None) -> tuple[dict, int]:
    """``pcsos bound ARGS --json F`` in a process of its own (this interpreter, ``env`` its
    environment, None: this one's): its JSON result ({} when it wrote none) and its exit
    code."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bound.json"
        proc = subprocess.run([sys.executable, "-m", "pcsos", "bound", *args, "--json",
                               str(out)], capture_output=True, text=True, env=env)
        return (json.loads(out.read_text()) if out.is_file() else {}), proc.returncode


def bound_methods(args: list[str], methods, upper_bound: float, time_limit: float,
                  extra=None):
    """``pcsos bound ARGS --method M --upper-bound UB --time-limit T`` (and ``extra(M)``) for
    each method M, each in a process of its own (:func:`run_bound`): per method, the fields
    of a result row that the engine benchmarks share."""
    for method in methods:
        res, rc = run_bound([*args, "--method", method, "--upper-bound", repr(upper_bound),
                             "--time-limit", str(time_limit)]
                            + (extra(method) if extra is not None else []))
        lb = res.get("lower_bound")
        yield {"method": method, "lower_bound": lb,
               "gap": None if lb is None else (upper_bound - lb) / upper_bound,
               "seconds": res.get("total_seconds", res.get("seconds")),
               "status": res.get("status"), "pricing_boxes": res.get("pricing_boxes"),
               "rc": rc, "time_limit": time_limit}


def read_jsonl(path) -> list[dict]:
    """The rows of a JSON-lines file (none when it does not exist)."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def done_rows(path, key=lambda row: row["instance"], run: str | None = None) -> dict:
    """{key(row): row} of the rows of a JSON-lines file whose ``run`` field is ``run`` (None:
    the rows without one), the last row of each key winning: what a resumed run skips."""
    return {key(row): row for row in read_jsonl(path) if row.get("run") == run}


def write_json(path, obj, default=None) -> None:
    """Write ``obj`` as indented JSON, atomically (a partial write never replaces it)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=default) + "\n")
    os.replace(tmp, path)


def merge_json(path, key: str, value, default=None) -> None:
    """Set ``key`` of the JSON object in ``path`` to ``value`` (read-modify-write under an
    exclusive lock, so runs writing other keys may share the file)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.exists() else {}
        data[key] = value
        write_json(path, data, default)


def literal_settings(items) -> dict:
    """``["KEY=VALUE", ...]`` (the scripts' repeatable ``--set`` / ``--cp`` / ``--sdp``
    options) -> {KEY: VALUE}, each VALUE read as a Python literal."""
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        out[key] = ast.literal_eval(value)
    return out


def code_version(where: pathlib.Path | None = None) -> str:
    """The commit (``git describe --always --dirty``) of the checkout whose ``pcsos``
    package is the folder ``where``; by default the ``pcsos`` this process imports, which
    is the code measured: an editable install may point at another checkout than this
    script's (a CI clone), and then the path is added. "unknown" when ``where`` is no
    checkout's package (an installed copy: git would name an enclosing repository's
    commit)."""
    if where is None:
        import pcsos

        where = pathlib.Path(pcsos.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                              text=True, timeout=10).stdout.strip()

    try:
        top = git("rev-parse", "--show-toplevel")
        if not top or (pathlib.Path(top) / "pcsos").resolve() != pathlib.Path(where).resolve():
            return f"unknown (pcsos from {where})"
        desc = git("describe", "--always", "--dirty")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if pathlib.Path(top).resolve() != ROOT:
        desc += f" (pcsos from {top})"
    return desc or "unknown"
