"""The set-partitioning LP bound by column generation (the bound engine for many clusters).

    result = colgen_bound(problem, labels=None, upper_bound=inf, time_limit=None)
    result.lower_bound    # a safe Lagrangian bound, <= the optimal SSE at any stop

Modules: ``master`` (the restricted master LP in HiGHS), ``pricing`` (heuristic and exact
pricing), ``engine`` (the column-generation loop and its bound).
"""

from pcsos.bounds.colgen.engine import (
    ColGenResult,
    ColumnStart,
    colgen_bound,
    column_mip,
    inherit_columns,
)

__all__ = ["ColGenResult", "ColumnStart", "colgen_bound", "column_mip", "inherit_columns"]
