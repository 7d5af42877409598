"""Upper-bound heuristics (spec §6), as plugins chosen by name.

>>> from pcsos.heuristics import run_heuristic
>>> res = run_heuristic("ipc-kmeans", problem, Z=Z, seed=0, time_limit=10)  # doctest: +SKIP
>>> res.status, res.objective, res.labels                                     # doctest: +SKIP

Built in: ``ipc-kmeans``, ``s-mdeclust``, ``blpkm-cc``, ``cop-kmeans``, ``repair``; more
through :func:`register_heuristic` or the entry-point group ``pcsos.heuristics``. The
contract a heuristic follows is in :mod:`pcsos.heuristics.base`; all ILP-based ones share
the assignment engine of :mod:`pcsos.heuristics.assignment`.
"""

from pcsos.heuristics.assignment import Assignment, AssignmentEngine
from pcsos.heuristics.base import Deadline, HeuristicResult
from pcsos.heuristics.registry import (
    ENTRY_POINT_GROUP,
    available_heuristics,
    check_labels,
    check_options,
    get_heuristic,
    register_heuristic,
    run_heuristic,
)

__all__ = [
    "run_heuristic",
    "get_heuristic",
    "available_heuristics",
    "register_heuristic",
    "check_labels",
    "check_options",
    "HeuristicResult",
    "Deadline",
    "Assignment",
    "AssignmentEngine",
    "ENTRY_POINT_GROUP",
]
