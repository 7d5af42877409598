"""Which pair a node branches on: the paper's score, or pseudo-costs learned in the tree.

The paper's rule (PC-SOS-SDP) takes the pair i < j of largest min(Z_ij, ||Z_i. - Z_j.||²)
(the compiled ``branching_score``). ``'pseudocost'`` learns from the tree which pairs pay,
as a MIP solver's pseudo-costs do for its variables. The branching "variable" of a pair is
its relation r_ij = Z_ij / sqrt(Z_ii Z_jj) in [0, 1]: the must-link child moves it to 1 (a
change of 1 - r), the cannot-link child to 0 (a change of r). A child's gain over its
parent's bound, divided by that change, is its *unit gain*. A pair is rarely branched
twice, so unit gains are kept per original point (a super-point is named by its first
point) and side: each child's is credited to both points of its pair. A node then takes,
of the ``CANDIDATES`` best pairs by the paper's score, the pair of largest estimated
product

    max(eps, (1 - r) psi_ml) * max(eps, r psi_cl),   psi_side = the mean of its points' own

(a point without a record takes the mean of all records of that side), and the paper's
pair while either side has fewer than ``RELIABLE`` records. The closing test (Z a
clustering matrix) is the paper's either way: only the pair changes.

The records live in a ``PseudoCosts`` that the tree manager holds (its ``history``):
a node returns its own record in its outcome (``learned``), the manager adds it, and each
job reads the records as they are when it runs (live in threads; in other processes a copy
from when its job was sent). A node also counts its own record, which the manager adds only
after it. With one worker the choices are reproducible, through a checkpoint and resume
too; with several, which records a node sees depends on which jobs finished first.

What is recorded: a node whose bound was computed in full (an LP node cut short to branch,
``status == 'branch'``, records nothing); a child that the feasibility check or
preprocessing proves infeasible is not bounded and records nothing either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["RULES", "CANDIDATES", "RELIABLE", "PseudoCosts", "unit_gain", "relation",
           "choose_pair"]

#: the branching rules by name
RULES = ("paper", "pseudocost")
#: the paper's best pairs that pseudo-costs choose among
CANDIDATES = 10
#: records of each side before pseudo-costs choose (before: the paper's pair)
RELIABLE = 4
_SIDES = {"ml": 0, "cl": 1}
_EPS = 1e-9
# a relation change below this is no branching on that side (its gain divides by it)
_MIN_CHANGE = 1e-6


@dataclass
class PseudoCosts:
    """The unit gains seen so far, by side (0: must-link, 1: cannot-link) and original
    point: ``table[side, point] = (sum, count)``.

    :meth:`record` replaces the table rather than writing into it, so a node reading it in
    another thread sees one consistent table."""

    table: np.ndarray

    @classmethod
    def empty(cls, n: int) -> PseudoCosts:
        """No records, for ``n`` original points."""
        return cls(np.zeros((2, int(n), 2)))

    def record(self, learned) -> None:
        """Add one node's record ``(side, (point_a, point_b), unit_gain)``."""
        self.table = _added(self.table, learned)

    def records(self, side: str) -> int:
        """How many nodes of ``side`` ('ml' or 'cl') have recorded."""
        return _records(self.table, side)


def _records(table: np.ndarray, side: str) -> int:
    # each record counts once at each of its two points
    return int(round(table[_SIDES[side], :, 1].sum() / 2))


def _added(table: np.ndarray, learned) -> np.ndarray:
    side, points, unit = learned
    out = table.copy()
    for p in points:
        out[_SIDES[side], p] += (unit, 1.0)
    return out


def relation(Z: np.ndarray, a: int, b: int) -> float:
    """r_ab = Z_ab / sqrt(Z_aa Z_bb) of the symmetrised Z, clipped to [0, 1]."""
    zab = 0.5 * (Z[a, b] + Z[b, a])
    return min(max(zab / math.sqrt(max(Z[a, a] * Z[b, b], 1e-300)), 0.0), 1.0)


def unit_gain(side: str, change: float, parent_bound: float, bound: float,
              upper: float) -> float | None:
    """A child's gain over its parent's bound per unit of its relation's ``change``; the
    bound counts up to the incumbent ``upper`` (a bound above it, infinite included, gains
    what pruning needed). None when there is nothing to learn (no change, no finite
    gain)."""
    gain = min(bound, upper) - parent_bound
    if side not in _SIDES or not change > _MIN_CHANGE or not math.isfinite(gain):
        return None
    return max(gain, 0.0) / change


def choose_pair(Z: np.ndarray, candidates, first: np.ndarray, costs: PseudoCosts | None,
                own=None) -> tuple[int, int] | None:
    """The pair of ``candidates`` (super-point pairs, best paper score first) that
    pseudo-costs rank first, or None while they are not reliable (fewer than ``RELIABLE``
    records of a side). ``first``: each super-point's first original point; ``own``: the
    node's own record, not yet in ``costs``."""
    if costs is None:
        return None
    table = costs.table
    if own is not None:
        table = _added(table, own)
    if min(_records(table, side) for side in _SIDES) < RELIABLE:
        return None
    count = table[:, :, 1]
    mean = table[:, :, 0].sum(axis=1) / np.maximum(count.sum(axis=1), 1.0)
    psi = np.where(count > 0, table[:, :, 0] / np.maximum(count, 1.0), mean[:, None])
    best, pick = -math.inf, None
    for a, b in candidates:
        r = relation(Z, a, b)
        pa, pb = first[a], first[b]
        ml = 0.5 * (psi[0, pa] + psi[0, pb])
        cl = 0.5 * (psi[1, pa] + psi[1, pb])
        value = max(_EPS, (1.0 - r) * ml) * max(_EPS, r * cl)
        if value > best:
            best, pick = value, (int(a), int(b))
    return pick
