"""SDP bounding layer: the node relaxation, its solvers and the provable lower bound (spec §3).

Public API::

    model = SDPModel.from_problem(problem, cuts=None)
    result = solve_sdp(model, BoundSettings(tol=1e-6), warm_start=None, threads=None)
    result.lower_bound          # == safe_lower_bound(model, result.y, result.y_cl, ...)
    WarmStart.transfer(result, parent_problem, child_problem, cut_map, n_new)
"""

from pcsos.bounds.eig import eig_methods, positive_part, register_eig
from pcsos.bounds.model import SDP_TOL, SDPModel
from pcsos.bounds.result import SDPResult, WarmStart
from pcsos.bounds.safe import dual_slack, safe_lower_bound
from pcsos.bounds.settings import BACKENDS, ENGINES, BoundSettings
from pcsos.bounds.solve import solve_sdp

__all__ = ["SDPModel", "SDPResult", "WarmStart", "solve_sdp", "safe_lower_bound", "dual_slack",
           "positive_part", "register_eig", "eig_methods", "BACKENDS", "SDP_TOL",
           "BoundSettings", "ENGINES"]
