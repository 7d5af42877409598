"""Valid inequalities: their representation (:class:`CutSet`), separation and the loop."""

from pcsos.bounds.cutset import CLIQUE, PAIR, TRIANGLE, CutSet
from pcsos.cuts.loop import (
    CP_FLAGS,
    BoundResult,
    CuttingPlaneSettings,
    cutting_plane_loop,
    inherit_cuts,
    inherit_cuts_map,
)
from pcsos.cuts.separation import separate

__all__ = ["CutSet", "PAIR", "TRIANGLE", "CLIQUE", "separate", "cutting_plane_loop",
           "CuttingPlaneSettings", "BoundResult", "CP_FLAGS", "inherit_cuts",
           "inherit_cuts_map"]
