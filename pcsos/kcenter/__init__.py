"""Constrained k-center (paper 004): a 2-approximation with a certified radius bound.

A separate mode of pcsos (its objective is the max radius, not the SSE) and a
constraint-aware seeding for the MSSC heuristics (:func:`kcenter_centres`).
"""

from pcsos.kcenter.cover import clique_cover
from pcsos.kcenter.init import kcenter_centres
from pcsos.kcenter.rds import max_rds, maximum_matching, rds_from_matching
from pcsos.kcenter.solver import KCenterResult, solve, solve_problem

__all__ = ["KCenterResult", "solve", "solve_problem", "kcenter_centres", "clique_cover",
           "max_rds", "maximum_matching", "rds_from_matching"]
