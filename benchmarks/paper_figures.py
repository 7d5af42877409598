"""The published PC-SOS-SDP figures (Tables 2-4), read from ../shared/docs/benchmarks.md.

Shared by the benchmark scripts so that every table quoting the paper reads it one way.
"""

from __future__ import annotations

import pathlib

PAPER = pathlib.Path(__file__).resolve().parents[2] / "shared" / "docs" / "benchmarks.md"


def paper_table(path: pathlib.Path = PAPER) -> dict[tuple[str, str, int], dict]:
    """{(dataset, 'ML'|'CL'|'MLCL', total): {size, root_gap (fraction), nodes, time, success}}.

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
