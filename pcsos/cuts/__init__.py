"""Valid inequalities: their representation (:class:`CutSet`), separation and the loop."""

from pcsos.cuts.cutset import CLIQUE, PAIR, TRIANGLE, CutSet

__all__ = ["CutSet", "PAIR", "TRIANGLE", "CLIQUE"]
