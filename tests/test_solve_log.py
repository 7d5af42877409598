"""The pc-sos-sdp gap-log writer: columns aligned with the reference header, footer keys."""

from __future__ import annotations

import io
import json
import math

from pcsos.log import GapLog, JsonlLog, format_footer, format_row, format_table_header

REFERENCE_TITLE = (
    "|    N| NODE_PAR|    NODE|      LB_PAR|          LB|  FLAG|  TIME (s)| CP_ITER| CP_FLAG|"
    "   CP_INEQ|     PAIR  TRIANGLE    CLIQUE|          UB|         GUB|     I      J|"
    "     NODE_GAP|          GAP|  OPEN|")

ROW = {"n": 150, "node_parent": -1, "node": 0, "lb_parent": -math.inf, "lb": 78.8514,
       "flag": 0, "time": 12.5, "cp_iter": 7, "cp_flag": 0, "cp_ineq": 1234, "pair": 10.5,
       "triangle": 1200.25, "clique": 3.0, "ub": 78.85144, "gub": 78.85144, "i": -1, "j": -1,
       "node_gap": 5.07e-7, "gap": 5.07e-7, "open": 2, "improved": True}


def _bars(line: str) -> list[int]:
    return [i for i, c in enumerate(line) if c == "|"]


def test_title_is_the_reference_title():
    assert format_table_header() == "\n" + REFERENCE_TITLE + "\n"


def test_row_columns_line_up_with_the_title():
    for improved in (True, False):
        line = format_row({**ROW, "improved": improved}).rstrip("\n")
        assert _bars(line) == _bars(REFERENCE_TITLE)
        assert len(line) == len(REFERENCE_TITLE)
    line = format_row(ROW)
    assert "78.8514*|" in line and "    -inf|" in line and "|  150|" in line
    assert "     10.5   1200.25         3|" in line  # PAIR TRIANGLE CLIQUE, space-joined
    assert "|    -1     -1|" in line


def test_numbers_use_the_cpp_default_format():
    line = format_row({**ROW, "lb": 123456.789, "node_gap": 1.5e-9, "ub": math.inf})
    assert "|      123457|" in line and "1.5e-09|" in line and "|         inf|" in line


def test_gaplog_writes_header_rows_pruning_and_footer():
    buf = io.StringIO()
    log = GapLog(buf)
    log.header("data.txt", 150, 4, 3, "c.txt", "log.txt", {"BRANCH_AND_BOUND_TOL": 1e-4})
    log.row({**ROW, "pruned_by_optimality": True})
    log.footer(wall_time=12.5, n_nodes=1, avg_ineq=1213.75, avg_cp_iter=7, root_gap=-1e-9,
               gap=0.0, best=78.85144)
    text = buf.getvalue()
    assert text.startswith("\nDATA_PATH, n, d, k: data.txt 150 4 3\nCONSTRAINTS_PATH: c.txt\n"
                           "LOG_PATH: log.txt\n\nBRANCH_AND_BOUND_TOL: 0.0001\n")
    assert REFERENCE_TITLE in text and "PRUNING BY OPTIMALITY 0\n" in text
    assert text.endswith("\nWALL_TIME: 12.5 sec\nN_NODES: 1\nAVG_INEQ: 1213.75\n"
                         "AVG_CP_ITER: 7\nROOT_GAP: 0\nGAP: 0\nBEST: 78.8514\n\n")


def test_footer_extra_lines():
    text = format_footer(1.0, 2, 0.0, 1.0, 0.1, 0.0, 5.0, extra={"STATUS": "optimal"})
    assert "BEST: 5\nSTATUS: optimal\n" in text


def test_jsonl_is_strict_json_per_line():
    buf = io.StringIO()
    JsonlLog(buf).records([ROW, {**ROW, "node": 1}])
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2
    obj = json.loads(lines[0])
    assert obj["lb_parent"] is None and obj["node"] == 0  # -inf is not JSON: null
