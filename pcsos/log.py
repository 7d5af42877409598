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
from collections.abc import Iterable, Mapping
from typing import IO, Any

__all__ = ["format_table_header", "format_row", "format_footer", "format_settings",
           "GapLog", "JsonlLog", "ROW_KEYS"]

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
        from pcsos.errors import InputError

        if hasattr(target, "write"):
            self._fh, self._own = target, False
        elif os.fspath(target) == "-":
            import sys

            self._fh, self._own = sys.stdout, False
        else:
            try:
                self._fh = open(os.fspath(target), "w", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise InputError(f"cannot write: {exc.strerror}",
                                 source=os.fspath(target)) from None
            self._own = True

    def write(self, text: str) -> None:
        self._fh.write(text)
        self._fh.flush()  # a log must be readable while the solver runs (and after a kill)

    def close(self) -> None:
        if self._own and not self._fh.closed:
            self._fh.close()


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
        self.write(json.dumps(_jsonable(obj), allow_nan=False) + "\n")

    def records(self, objs: Iterable[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.record(obj)


def _jsonable(obj: Any) -> Any:
    from pcsos.cli.common import jsonable

    return jsonable(obj)
