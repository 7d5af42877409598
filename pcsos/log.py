"""Solver logs: the pc-sos-sdp gap table (header, one row per node, footer) and JSON lines.

The table reproduces the reference program's log column for column (field widths and the
C++ stream's default ``%g`` number format, ``*`` after GUB when the node improved the
incumbent, ``PRUNING BY OPTIMALITY <id>`` lines), so that users can diff old and new logs:

    |    N| NODE_PAR|    NODE|      LB_PAR|          LB|  FLAG|  TIME (s)| CP_ITER| CP_FLAG|...

N is the node's SDP size (super-points); NODE_PAR / NODE are ids in order of completion
(root -1 / 0); FLAG the SDP status (0 solved, 1 failed, -1 partial, 2 infeasible node);
CP_ITER the cutting-plane rounds; CP_FLAG why the loop stopped; CP_INEQ the cuts in the
model; PAIR / TRIANGLE / CLIQUE the cuts added per round on average; UB the node's
heuristic value; GUB the incumbent; I J the super-point pair whose branching created the
node (root -1 -1); NODE_GAP = (GUB - LB) / GUB; GAP = (GUB - min open LB) / GUB; OPEN the
open nodes. Times are fractional seconds (the reference truncates to whole seconds).
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from typing import IO, Any

from pcsos.io import cannot_write, jsonable

__all__ = ["ProgressPrinter", "format_table_header", "format_row", "format_footer",
           "format_settings", "GapLog", "JsonlLog", "ROW_KEYS"]

# (key in the row dict, column title, width); a None title marks a space-joined group
_COLUMNS = [
    ("n", "N", 5), ("node_parent", "NODE_PAR", 9), ("node", "NODE", 8),
    ("lb_parent", "LB_PAR", 12), ("lb", "LB", 12), ("flag", "FLAG", 6),
    ("time", "TIME (s)", 10), ("cp_iter", "CP_ITER", 8), ("cp_flag", "CP_FLAG", 8),
    ("cp_ineq", "CP_INEQ", 10), ("pair", "PAIR", 9), ("triangle", "TRIANGLE", 9),
    ("clique", "CLIQUE", 9), ("ub", "UB", 12), ("gub", "GUB", 12), ("i", "I", 6),
    ("j", "J", 6), ("node_gap", "NODE_GAP", 13), ("gap", "GAP", 13), ("open", "OPEN", 6),
]
ROW_KEYS = tuple(c[0] for c in _COLUMNS)
# columns followed by a space instead of "|" (the reference groups PAIR TRIANGLE CLIQUE, I J)
_SPACE_AFTER = {"pair", "triangle", "i"}


def _num(v: Any) -> str:
    """A value as the C++ stream prints it by default (%g with 6 significant digits)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if f.is_integer() and abs(f) < 1e15 and not isinstance(v, float):
        return str(int(f))
    if math.isnan(f):
        return "nan"
    return format(f, ".6g")


def format_table_header() -> str:
    """The table's title line (preceded by an empty line, as in the reference)."""
    parts = ["|"]
    for key, title, width in _COLUMNS:
        parts.append(title.rjust(width))
        parts.append(" " if key in _SPACE_AFTER else "|")
    return "\n" + "".join(parts) + "\n"


def format_row(row: Mapping[str, Any]) -> str:
    """One table row from a dict with the keys :data:`ROW_KEYS` (and ``improved``)."""
    parts = ["|"]
    for key, _title, width in _COLUMNS:
        text = _num(row.get(key))
        if key == "gub" and row.get("improved"):
            parts.append((text.rjust(width - 1)) + "*|")
            continue
        parts.append(text.rjust(width))
        parts.append(" " if key in _SPACE_AFTER else "|")
    return "".join(parts) + "\n"


def format_settings(data_path: str, n: int, d: int, k: int, constraints_path: str | None,
                    log_path: str | None, settings: Mapping[str, Any]) -> str:
    """The header block: paths and sizes, then one ``KEY: value`` line per setting."""
    out = io.StringIO()
    out.write(f"\nDATA_PATH, n, d, k: {data_path} {n} {d} {k}\n")
    out.write(f"CONSTRAINTS_PATH: {constraints_path if constraints_path else '-'}\n")
    out.write(f"LOG_PATH: {log_path if log_path else '-'}\n\n")
    for key, value in settings.items():
        out.write(f"{key}: {_num(value) if isinstance(value, (int, float)) else value}\n")
    return out.getvalue()


def format_footer(wall_time: float, n_nodes: int, avg_ineq: float, avg_cp_iter: float,
                  root_gap: float, gap: float, best: float, extra: Mapping[str, Any] = ()
                  ) -> str:
    """The footer block (gaps clipped at 0 below, as in the reference)."""
    out = io.StringIO()
    out.write("\n")
    out.write(f"WALL_TIME: {_num(float(wall_time))} sec\n")
    out.write(f"N_NODES: {int(n_nodes)}\n")
    out.write(f"AVG_INEQ: {_num(float(avg_ineq))}\n")
    out.write(f"AVG_CP_ITER: {_num(float(avg_cp_iter))}\n")
    out.write(f"ROOT_GAP: {_num(max(0.0, float(root_gap)))}\n")
    out.write(f"GAP: {_num(max(0.0, float(gap)))}\n")
    out.write(f"BEST: {_num(float(best))}\n")
    for key, value in dict(extra).items():
        out.write(f"{key}: {value}\n")
    out.write("\n")
    return out.getvalue()


class _Sink:
    """A text file opened for writing (``'-'`` or a stream: written to, never closed)."""

    def __init__(self, target: str | os.PathLike | IO[str]):
        self._failed = False
        if hasattr(target, "write"):
            self._fh, self._own = target, False
        elif os.fspath(target) == "-":
            self._fh, self._own = sys.stdout, False
        else:
            try:
                self._fh = open(os.fspath(target), "w", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise cannot_write(exc, os.fspath(target)) from None
            self._own = True

    def write(self, text: str) -> None:
        if not self._failed:
            with self._errors():
                self._fh.write(text)
                self._fh.flush()  # readable while the solver runs (and after a kill)

    def close(self) -> None:
        if self._own and not self._fh.closed and not self._failed:
            with self._errors():
                self._fh.close()

    @contextmanager
    def _errors(self):
        """A full disk is an InputError naming the file, not a traceback; after the first,
        the sink writes nothing more (closing it would raise the same again)."""
        try:
            yield
        except OSError as exc:
            self._failed = True
            raise cannot_write(exc, getattr(self._fh, "name", "log")) from None


class GapLog(_Sink):
    """The pc-sos-sdp log file: :meth:`header`, then :meth:`row` per node, :meth:`footer`."""

    def header(self, data_path: str, n: int, d: int, k: int, constraints_path: str | None,
               log_path: str | None, settings: Mapping[str, Any]) -> None:
        self.write(format_settings(data_path, n, d, k, constraints_path, log_path, settings))
        self.write(format_table_header())

    def row(self, row: Mapping[str, Any]) -> None:
        self.write(format_row(row))
        if row.get("pruned_by_optimality"):
            self.write(f"PRUNING BY OPTIMALITY {row['node']}\n")

    def line(self, text: str) -> None:
        self.write(text.rstrip("\n") + "\n")

    def footer(self, **kwargs) -> None:
        self.write(format_footer(**kwargs))


class JsonlLog(_Sink):
    """One JSON object per line (non-finite floats become null, numpy values plain)."""

    def record(self, obj: Mapping[str, Any]) -> None:
        self.write(json.dumps(jsonable(obj), allow_nan=False) + "\n")

    def records(self, objs: Iterable[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.record(obj)


class ProgressPrinter:
    """A MIP-style progress table on a stream (stderr by default).

    :meth:`__call__` takes the node rows: a line at the root, at every improvement of the
    incumbent (marked ``*``) and otherwise at most once per ``interval`` seconds.
    :meth:`status` takes the tree's progress snapshots, so that a long root (or a long
    node) shows what it is doing from the first second: a line whenever the work or the
    bounds change, at most once per ``interval``, and at least every ``heartbeat`` seconds.
    :meth:`finish` prints the last row if the throttle held it back, so the table ends on
    the same counts as the summary.
    """

    HEADER = (f"{'':1}{'Nodes':>7} {'Open':>6} {'Depth':>5} {'Best bound':>14} "
              f"{'Incumbent':>14} {'Gap':>9} {'Time':>8}  Work")

    def __init__(self, stream=None, interval: float = 1.0, heartbeat: float = 30.0):
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.heartbeat = heartbeat
        self.last = -math.inf
        self.started = False
        self.pending: dict | None = None  # the last row, when it was not printed
        self.said: tuple = ()  # what the last status line showed

    def _write(self, mark: str, nodes, open_, depth, lb, ub, gap, elapsed: float,
               work: str = "") -> None:
        if not self.started:
            self.stream.write(self.HEADER + "\n")
            self.started = True

        def col(v, width: int, fmt: str) -> str:
            return f"{v:{width}{fmt}}" if v is not None else f"{'-':>{width}}"

        gap_s = f"{100 * gap:8.4f}%" if gap is not None and math.isfinite(gap) else f"{'-':>9}"
        self.stream.write(f"{mark}{col(nodes, 7, 'd')} {col(open_, 6, 'd')} "
                          f"{col(depth, 5, 'd')} {col(lb, 14, '.6f')} {col(ub, 14, '.6f')} "
                          f"{gap_s} {elapsed:7.1f}s  {work}".rstrip() + "\n")
        self.stream.flush()
        self.last = time.time()

    def __call__(self, row: dict) -> None:
        now = time.time()
        if not (row.get("improved") or row["node"] == 0 or now - self.last >= self.interval):
            self.pending = row
            return
        self.pending = None
        self._write("*" if row.get("improved") else " ", row["node"] + 1, row["open"],
                    row["depth"], row["global_lb"], row["gub"], row["gap"], row["elapsed"])

    def status(self, st: dict) -> None:
        """One progress snapshot (see :func:`solve_instance`'s ``progress``)."""
        work = self._work(st)
        seen = (work, st.get("bound"), st.get("incumbent"))
        now = time.time()
        if now - self.last < (self.interval if seen != self.said else self.heartbeat):
            return
        self.said = seen
        if "nodes" not in st:  # before the tree starts
            self._write(" ", None, None, None, None, None, None, st["elapsed"], work)
            return
        self._write(" ", st["nodes"], st["open"], None, st["bound"], st["incumbent"],
                    st["gap"], st["elapsed"], work)

    @staticmethod
    def _work(st: dict) -> str:
        if "stage" in st:
            return st["stage"]
        running = st.get("running", {})
        if len(running) != 1:
            return f"{len(running)} nodes running" if running else ""
        (nid, rep), = running.items()
        who = "root" if nid == 0 else f"node {nid}"
        stage = rep.get("stage", "starting")
        if stage == "bound" and rep.get("round"):
            return f"{who}: cutting-plane round {rep['round']}, bound {rep['bound']:.6f}"
        if stage == "heuristic":
            return f"{who}: heuristic {rep.get('name', '')}".rstrip()
        return f"{who}: {stage}"

    def finish(self) -> None:
        """Print the last node row if the throttle held it back."""
        if self.pending is not None:
            row, self.pending = self.pending, None
            self.last = -math.inf
            self(row)

    @staticmethod
    def summary(res, stream=None) -> None:
        """One line for a :class:`pcsos.api.Result`: status, objective, bound, gap, counts."""
        stream = stream if stream is not None else sys.stderr
        gap_s = f"{100 * res.gap:.4f}%" if math.isfinite(res.gap) else "-"
        stream.write(f"{res.status}: objective {res.objective:.6f}, lower bound "
                     f"{res.lower_bound:.6f}, gap {gap_s}, {res.nodes} nodes, "
                     f"{res.seconds:.1f} s ({res.message})\n")
        stream.flush()
