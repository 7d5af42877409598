"""The cutting-plane loop around the SDP bounding layer (spec §4).

One node: solve the relaxation, separate violated pair / triangle / clique / star cuts from its Z,
drop the cuts that became inactive, add the most violated new ones, and re-solve warm-started
from the previous round, until a stopping rule fires. The result carries the best *safe*
lower bound over the rounds (every round's bound is valid for the node) and the last cut set,
which the children inherit (:func:`inherit_cuts`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from pcsos.bounds import BoundSettings, SDPModel, WarmStart, solve_sdp
from pcsos.bounds.cutset import CutSet
from pcsos.bounds.model import sse_magnitude
from pcsos.bounds.sizes import separate_sizes
from pcsos.clock import Deadline
from pcsos.cuts.separation import (
    COLLECT,
    DEFAULT_CAPS,
    DEFAULT_FRACTIONS,
    FAMILIES,
    STAR_LEAVES,
    cut_keys,
    drop_known,
    parse_families,
    separate,
)
from pcsos.errors import InputError
from pcsos.problem import Problem
from pcsos.tree import gap_closed

__all__ = ["CP_FLAGS", "TREE_CUT_DEFAULTS", "BoundResult", "CuttingPlaneSettings",
           "RoundStats", "cutting_plane_loop", "heuristic_round", "inherit_cuts",
           "inherit_cuts_map", "inherited_selection"]

# Why the loop stopped: the pc-sos-sdp CP_FLAG codes (reference-notes.md), plus two pcsos
# codes for limits the reference code does not have.
BOUND_WORSE, SDP_FAILED, ROUND_LIMIT, NO_CUT, CUT_LIMIT, PRUNED, TOLERANCE = -3, -2, -1, 0, 1, 2, 3
TIME_LIMIT, CALLBACK_STOP, TAILING_OFF = -4, -5, 5
# a loose round that would end the loop multiplies the loosest tolerance by this
TIGHTEN = 0.1
# the root tails off only after this many rounds in a row closed less than tail_off_root of
# its gap: its early, loose rounds are uneven (computers ml_0_cl_250_1 with the star cuts:
# round 3 closed 7.7 % of the gap, round 4 45 %; stopping at round 3 left 0.49 % and a tree
# of 200 nodes, where the root prunes at round 7)
TAIL_OFF_ROOT_ROUNDS = 3
#: the branch-and-bound tree's defaults where they differ from the loop's own (a bound
#: alone, ``pcsos bound`` and ``pcsos certify`` keep the loop's): the star cuts, and
#: the root's tail-off that stops their long run of small gains for a branch. Measured on
#: data not tuned on (fresh glass and ECG5000 draws) and on the 270 shared draws:
#: docs/solver.md, "The tree's cut defaults". Three star leaves, not four: their cut
#: system fills in far less, and a tree's roots tail off before a fourth leaf would pay
#: (fresh glass draws 0.60x the time, the 270 the same statuses)
TREE_CUT_DEFAULTS = {"families": "all,star", "tail_off_root": 0.1, "star_leaves": 3}
CP_FLAGS = {
    BOUND_WORSE: "bound got worse", SDP_FAILED: "SDP failed", ROUND_LIMIT: "round limit",
    NO_CUT: "no violated cut", CUT_LIMIT: "cut limit", PRUNED: "node pruned",
    TOLERANCE: "tolerance", TIME_LIMIT: "time limit", CALLBACK_STOP: "stopped by callback",
    TAILING_OFF: "tailing off",
}


@dataclass
class CuttingPlaneSettings:
    """Settings of the loop; the defaults are those of the pc-sos-sdp code (config.txt).

    Attributes
    ----------
    families : str or tuple of str
        Which cuts to separate ("all", "none", a name or a comma list).
    eps_violation : float
        A cut is violated when rhs - <B, Z> > this (SDP_SOLVER_EPS_INEQ).
    eps_violation_fine : float or None
        When a tight round would end the loop for lack of progress (no violated cut, an
        improvement below ``cp_tol``, a worse bound) and the node is not pruned but within
        ``fine_gap`` of it, the loop separates at this smaller threshold from then on and
        goes on; it stops for lack of progress only at that one. ``None``: off.
    fine_gap : float
        The most the node's bound may still have to rise to prune it, relative to the
        incumbent, for that fallback (never without an incumbent). The cuts violated by 1e-5
        to 1e-4 raised a root by 5e-5 of the incumbent on ECG5000 ml_0_cl_150_3 (0.615 of
        the 1.52 to its target; that draw then closed in 21 nodes instead of 200 unfinished)
        and by 3-4e-5 on glass, whose roots stand 6e-4 to 5e-3 from their targets: there the
        fallback doubled the root's time, cut the nodes by 0-25 % and slowed the trees by a
        median 1.19x (docs/solver.md, "The root's cuts at a finer violation threshold").
    max_collected : dict of str to int
        Per family, violated cuts collected per round (SDP_SOLVER_MAX_*_INEQ; for the star
        cuts, which pc-sos-sdp does not have, the most violated ``separation.STAR_CAP`` of
        those the greedy search finds).
    fraction : dict of str to float
        Per family, the share of the collected cuts (most violated first) added.
    star_leaves : int
        Leaves of a star cut at most (3 or more; docs/cuts.md, "Star cuts").
    collect : {'most', 'first'}
        Which violated triangles fill ``max_collected``: "most", the most violated of the
        whole matrix (a full scan), or "first", the first ones in a random apex order (the
        pc-sos-sdp code's random sample). A choice that departs from that code: on ECG5000
        ml_0_cl_150_0 (s = 500, k = 5) the root gap went from 0.355 % after 600 s to
        0.0063 % in 379 s, because the cuts of one round no longer crowd on a few apexes
        (docs/cuts.md, "Which triangles").
    max_cuts : int
        Cuts in the model at most (SDP_SOLVER_MAX_INEQ); reaching it stops the loop with
        CUT_LIMIT when no new cut fits.
    eps_active, u_active : float
        A cut stays when its slack <B, Z> - rhs <= this, measured against the cut's own rhs
        (spec §4), or when its multiplier exceeds ``u_active``. The one default that differs
        from pc-sos-sdp's (1e-6): at the ADMM's accuracy (relative KKT 1e-5, 1e-3 in loose
        rounds) the cuts that hold the bound up have slacks of 1e-5 to 1e-4 (median 4e-5 on
        iris ml_50_cl_50 after round 1), so 1e-6 dropped ~90 % of the model every round and
        the loop cycled, re-adding what it had dropped; 1e-4 (the violation threshold) keeps
        them (root loops: iris ml_0_cl_50 57 s -> 18 s, wine ml_0_cl_100 closed at the root
        in 37 s, connectionist ml_0_cl_50 from a 3.5e-4 gap to closed at the root). The
        multiplier test is off by default (inf): the first-order solver leaves u ~ 1e-5 on
        almost every cut whose slack exceeds 1e-6 (iris ml_50_cl_50: 992 of 1015 after round
        2), so "u > 0" would keep nearly all cuts and every round would grow the model.
    max_rounds_root, max_rounds_child : int
        SDP solves per node (root / other nodes).
    cp_tol : float
        Stop when the bound improves by less than this, relatively.
    prune_tol, prune_abs_tol : float
        Stop when (UB - LB) / UB <= ``prune_tol`` or UB - LB <= ``prune_abs_tol`` (the
        branch-and-bound tolerances, ``pcsos.tree.gap_closed``).
    loose_tol : float or None
        Rounds are solved to at most this relative KKT tolerance instead of the SDP
        tolerance: their Z only has to be good enough to separate cuts, and their safe bound
        is valid whatever the accuracy. When a loose round would end the loop (no violated
        cut, cut limit, small or negative improvement), the same model is re-solved warm at
        a 10x tighter tolerance (``TIGHTEN``; the SDP tolerance in the end) and the loop
        goes on from there, so the final bound is as tight as without this setting; the last
        round the limit allows is always tight. ``None`` (or a value not above the SDP
        tolerance) solves every round tightly.
    loose_gap_factor : float or None
        With an incumbent, a round's tolerance is also at most this times what the node's
        bound before it still has to rise to prune it (to the incumbent less the pruning
        tolerance, relative to the incumbent): the bound's error, about the tolerance, stays
        a fifth of what is left to close (0.2 solved the four glass seed-0 instances with
        cannot-link pairs in 439 s against 542 s with 0.1, docs/cuts.md). Measured against
        the gap to the incumbent itself, a node whose pruning tolerance is a large share of
        its gap got loose rounds whose error was larger than what a child closes: ECG5000
        ml_0_cl_150_3 (root gap 2.3e-4, tolerance 1e-4), the root's cannot-link child proved
        11 687.93 at the gap's tolerance (4.7e-5) and 11 688.20 solved tightly, 0.27 more,
        where a child closed 0.1 at that depth (docs/solver.md). ``None`` or 0:
        ``loose_tol`` alone.
    inherit_min_u : float
        Children inherit the cuts whose multiplier at the parent's last solution exceeds
        this share of the largest one (0: every cut, as pc-sos-sdp's
        SDP_SOLVER_INHERIT_PERC = 1). The loop keeps a cut while its slack is at most
        ``eps_active``, so at a glass root 11 214 of 11 218 cuts were kept though only
        4 155 carried a multiplier above 1e-3 of the largest; a child's first solve with
        those took the same iterations to a bound as good (76.184 against 76.181), 36 %
        faster.
    tail_off : float or None
        At a node other than the root, with an incumbent, stop (TAILING_OFF) once a round
        closed less than this share of the node's gap before it (UB minus the best bound so
        far, the parent's for the first round), and branch instead: on glass a child's
        rounds after the first closed 1-10 % of its gap each at up to 10 s a round, while
        two children cost 2-3 s each (docs/cuts.md, "Children"); ``None`` or 0: off
        (pc-sos-sdp: rounds until ``cp_tol``).
    tail_off_root : float or None
        The same rule at the root, after ``TAIL_OFF_ROOT_ROUNDS`` (3) such rounds in a row;
        ``None`` or 0: off (the root runs its rounds until ``cp_tol``). With the star cuts a
        glass root (ml_25_cl_25_5) went on closing 4-10 % of its gap a round at 8-15 s a
        round, 0.048 % left after 57 s and 0.027 % after 235 s, where the whole tree without
        them took 186 s (docs/solver.md, "A heuristic inside the loop").
    """

    families: str | tuple[str, ...] = "all"
    eps_violation: float = 1e-4
    eps_violation_fine: float | None = 1e-5
    fine_gap: float = 3e-4
    max_collected: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_CAPS))
    fraction: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FRACTIONS))
    collect: str = "most"
    star_leaves: int = STAR_LEAVES
    max_cuts: int = 100_000
    eps_active: float = 1e-4
    u_active: float = math.inf
    max_rounds_root: int = 80
    max_rounds_child: int = 40
    cp_tol: float = 1e-6
    prune_tol: float = 1e-4
    prune_abs_tol: float = 0.0
    loose_tol: float | None = 1e-3
    loose_gap_factor: float | None = 0.2
    tail_off: float | None = 0.3
    tail_off_root: float | None = None
    inherit_min_u: float = 1e-3

    def __post_init__(self):
        self.families = parse_families(self.families)
        self.max_collected = {**DEFAULT_CAPS, **self.max_collected}
        self.fraction = {**DEFAULT_FRACTIONS, **self.fraction}
        for f in FAMILIES:
            if self.max_collected[f] < 0:
                raise ValueError(f"max_collected[{f!r}] must be >= 0")
            if not 0.0 <= self.fraction[f] <= 1.0:
                raise ValueError(f"fraction[{f!r}] must lie in [0, 1]")
        if self.collect not in COLLECT:
            raise ValueError(f"collect must be one of {COLLECT}, got {self.collect!r}")
        if isinstance(self.star_leaves, bool) or not isinstance(self.star_leaves, int) \
                or self.star_leaves < 3:
            raise ValueError(f"star_leaves must be an integer >= 3, got {self.star_leaves!r}")
        if self.max_rounds_root < 1 or self.max_rounds_child < 1:
            raise ValueError("max_rounds_root and max_rounds_child must be >= 1")
        if self.max_cuts < 0:
            raise ValueError("max_cuts must be >= 0")
        if self.loose_tol is not None and not self.loose_tol >= 0:
            raise ValueError(f"loose_tol must be >= 0 or None, got {self.loose_tol}")
        if not 0 <= self.inherit_min_u <= 1:
            raise ValueError(f"inherit_min_u must lie in [0, 1], got {self.inherit_min_u}")
        for name in ("tail_off", "tail_off_root"):
            v = getattr(self, name)
            if v is not None and not 0 <= v <= 1:
                raise ValueError(f"{name} must lie in [0, 1] or be None, got {v}")
        if self.loose_gap_factor is not None and not self.loose_gap_factor >= 0:
            raise ValueError(f"loose_gap_factor must be >= 0 or None, "
                             f"got {self.loose_gap_factor}")
        for name in ("eps_violation", "eps_active", "cp_tol", "prune_tol", "prune_abs_tol",
                     "fine_gap"):
            if not getattr(self, name) >= 0:  # also rejects NaN
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.eps_violation_fine is not None and not self.eps_violation_fine >= 0:
            raise ValueError(f"eps_violation_fine must be >= 0 or None, "
                             f"got {self.eps_violation_fine}")

    @classmethod
    def make(cls, settings, source: str = "cp_settings", **defaults
             ) -> CuttingPlaneSettings | None:
        """``settings`` as given, or built from a dict over ``defaults``; None stays None
        when there are no defaults. Anything else, or a dict with an unknown key or a bad
        value, is an :class:`~pcsos.InputError` naming ``source``."""
        if isinstance(settings, cls):
            return settings
        if settings is None and not defaults:
            return None
        if settings is None or isinstance(settings, dict):
            try:
                return cls(**{**defaults, **dict(settings or {})})
            except (TypeError, ValueError) as exc:
                raise InputError(f"invalid cutting-plane settings: {exc}",
                                 source=source) from None
        raise InputError(f"{source} must be a CuttingPlaneSettings, a dict or None, got "
                         f"{type(settings).__name__}", source=source)


@dataclass
class RoundStats:
    """One SDP solve of the loop (round 1 solves with the inherited cuts only).

    ``added``/``removed``: cuts added / dropped *after* this solve, per family for added.
    ``eps_violation``: the violation threshold of the separation after this solve.
    """

    round: int
    lower_bound: float
    sdp_value: float
    status: str
    iterations: int
    seconds: float
    cuts_in_model: int
    found: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    removed: int = 0
    eps_violation: float = math.nan


@dataclass
class BoundResult:
    """Outcome of :func:`cutting_plane_loop` for one node.

    ``lower_bound``: best safe bound over the rounds (-inf if no solve finished).
    ``sdp``: the last SDPResult (its Z drives branching). ``cuts``: the cut set of the last
    solve, to be inherited by the children. ``rounds``: per-round :class:`RoundStats`.
    ``flag``: CP_FLAG code (see ``CP_FLAGS``); ``message`` says it in words.
    ``iterations``: SDP iterations over all rounds; ``seconds``: wall time of the loop.
    ``avg_added``: average cuts added per separating round, per family (the PAIR /
    TRIANGLE / CLIQUE columns of the pc-sos-sdp log).
    """

    lower_bound: float
    sdp: object
    cuts: CutSet
    rounds: list[RoundStats]
    flag: int
    iterations: int
    seconds: float
    avg_added: dict[str, float]
    message: str = ""

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)

    def summary(self) -> dict:
        """JSON-ready scalars and the per-round table."""
        return {"lower_bound": self.lower_bound, "flag": self.flag, "message": self.message,
                "rounds": [asdict(r) for r in self.rounds], "cp_iter": self.n_rounds,
                "cuts": self.cuts.counts(), "iterations": self.iterations,
                "seconds": self.seconds, "avg_added": self.avg_added}


def inherit_cuts_map(cuts: CutSet, child: Problem) -> tuple[CutSet, np.ndarray]:
    """The parent's cuts for ``child`` and where each parent cut went.

    A cannot-link child (identity ``parent_map``) keeps every cut. A must-link child
    re-indexes them (:meth:`CutSet.reindex`: the cut P^T B_t P, valid by construction),
    which drops cuts whose terms cancelled; cuts that became identical are kept once, in
    order of first appearance. The map (one entry per parent cut: its child cut, or -1 when
    dropped) carries the parent's multipliers over (``WarmStart.transfer(..., cut_map=)``),
    adding those of cuts that merged into one, so that the child's dual point is exactly
    the parent's: dropping them instead cost a glass child 0.5 of its bound (75.66 against
    the parent's 76.17) before its first solve.
    """
    pm = child.parent_map
    ident = np.arange(cuts.m)
    if pm is None or cuts.m == 0:
        return cuts, ident
    pm = np.asarray(pm, dtype=np.int64)
    if len(pm) == child.s and np.array_equal(pm, np.arange(child.s)):
        return cuts, ident
    # carry each cut's index through reindex in place of its rhs to learn which survived
    tagged = CutSet(cuts.indptr, cuts.i, cuts.j, cuts.coef, np.arange(cuts.m, dtype=float),
                    cuts.family)
    survived = tagged.reindex(pm).rhs.astype(np.int64)
    out = cuts.reindex(pm)
    _, first, inv = np.unique(cut_keys(out), return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))  # child order: first appearance
    cut_map = np.full(cuts.m, -1, dtype=np.int64)
    cut_map[survived] = rank[inv.ravel()]
    return out.select(np.sort(first)), cut_map


def inherited_selection(br: BoundResult, settings: CuttingPlaneSettings) -> np.ndarray:
    """The indices of the node's final cuts that its children inherit (``inherit_min_u``)."""
    m = br.cuts.m
    u = getattr(br.sdp, "u", None)  # the LP engine's result has no cut multipliers
    if not settings.inherit_min_u or u is None or len(u) != m or not m:
        return np.arange(m)
    top = float(np.max(u))
    if not top > 0:
        return np.arange(m)
    return np.flatnonzero((u > settings.inherit_min_u * top) | br.cuts.is_size)


def inherit_cuts(cuts: CutSet, child_problem: Problem) -> CutSet:
    """The parent's cuts for a child problem (see :func:`inherit_cuts_map`)."""
    return inherit_cuts_map(cuts, child_problem)[0]


def _round_tol(cap: float, tight: float, gap_factor: float | None, gap: float) -> float:
    """The KKT tolerance of the next round: ``cap``, or ``gap_factor`` times the node's
    relative gap when that is smaller, never below the SDP tolerance ``tight``."""
    tol = cap
    if gap_factor and math.isfinite(gap):
        tol = min(tol, gap_factor * max(gap, 0.0))
    # within 2x of the SDP tolerance a loose round would only cost a re-solve
    return tight if tol < 2.0 * tight else tol


def _prune_slack(st: CuttingPlaneSettings, ub: float) -> float:
    """How far below the incumbent ``ub`` a bound prunes the node (``gap_closed``'s test)."""
    return max(st.prune_tol * abs(ub), st.prune_abs_tol)


def _prune_gap(st: CuttingPlaneSettings, ub: float, lb: float) -> float:
    """What the bound ``lb`` still has to rise to prune the node, relative to the incumbent
    ``ub`` (inf without one)."""
    if not math.isfinite(ub) or ub == 0:
        return math.inf
    return (ub - _prune_slack(st, ub) - lb) / abs(ub)


def cutting_plane_loop(problem: Problem, *, cuts: CutSet | None = None, warm_start=None,
                       upper_bound: float = math.inf,
                       settings: CuttingPlaneSettings | None = None, root: bool = True,
                       bound_settings: BoundSettings | dict | None = None,
                       threads: int | None = None, seed=None,
                       time_limit: float | Deadline | None = None,
                       callback: Callable[[RoundStats], bool | None] | None = None,
                       known_bound: float = -math.inf,
                       incumbent: Callable[[object], float] | None = None) -> BoundResult:
    """Run the cutting-plane loop on one node and return its :class:`BoundResult`.

    ``cuts``: cuts to start from (e.g. inherited); ``warm_start``: a WarmStart or SDPResult
    matching them (e.g. ``WarmStart.transfer`` of the parent's result); ``upper_bound``: the
    incumbent SSE, to stop as soon as the node can be pruned; ``root`` picks the round limit;
    ``bound_settings``: the SDP's :class:`~pcsos.bounds.settings.BoundSettings` (a dict of
    its fields, or None: the defaults), whose ``tol`` is that of the tight rounds;
    ``threads``: passed to every ``solve_sdp``; ``seed``: int or Generator for the triangle
    visiting order; ``time_limit`` (seconds, or a :class:`~pcsos.clock.Deadline` whose stop
    signal also ends it) covers the whole loop, and every solve gets the same Deadline;
    ``callback(stats)`` runs after every round and stops the loop
    by returning True; ``known_bound``: a valid lower bound of the node known beforehand
    (e.g. its parent's), used only in the gap that sets the rounds' tolerances;
    ``incumbent(sdp_result)``: after rounds 1, 2, 4, 8, ... (:func:`heuristic_round`), the
    incumbent value now known, e.g. after a heuristic on the round's Z; the loop prunes
    against it and sets its tolerances from it from then on.
    """
    st = settings or CuttingPlaneSettings()
    bs = BoundSettings.make(bound_settings)
    max_rounds = st.max_rounds_root if root else st.max_rounds_child
    rng = np.random.default_rng(seed)
    deadline = Deadline.of(time_limit).within()  # its elapsed() counts this loop

    model = SDPModel.from_problem(problem, cuts)
    ws = warm_start
    rounds: list[RoundStats] = []
    best = -math.inf
    prev = -math.inf
    res = None
    flag, total_iter = ROUND_LIMIT, 0
    added_tot = {f: 0 for f in FAMILIES}
    n_sep = 0
    slow = 0  # consecutive rounds that closed less than the tail-off share of the gap
    tight_tol = float(bs.tol)
    # the loosest tolerance the next rounds may use; it only ever decreases (_round_tol
    # keeps every round at or above the SDP tolerance)
    cap = st.loose_tol if st.families and st.loose_tol is not None else tight_tol
    eps = st.eps_violation
    # the threshold a stalled loop falls back to before it stops (itself when off)
    fine = min(eps, st.eps_violation_fine) if st.eps_violation_fine is not None else eps
    while True:
        if deadline.expired():
            flag = TIME_LIMIT
            break
        # the last round the limit allows is always solved tightly
        tol_r = tight_tol if len(rounds) + 1 >= max_rounds else _round_tol(
            cap, tight_tol, st.loose_gap_factor,
            _prune_gap(st, upper_bound, max(best, known_bound)))
        loose = tol_r > tight_tol
        res_new = solve_sdp(model, bs, warm_start=ws, threads=threads, time_limit=deadline,
                            **_round_options(tol_r, upper_bound, st))
        total_iter += int(res_new.iterations)
        stats = RoundStats(len(rounds) + 1, float(res_new.lower_bound),
                           float(res_new.sdp_value), res_new.status, int(res_new.iterations),
                           float(res_new.seconds), model.cuts.m)
        rounds.append(stats)
        if res_new.status == "failed" and not math.isfinite(res_new.lower_bound):
            flag = SDP_FAILED
            if callback is not None:
                callback(stats)
            break
        res = res_new
        lb = float(res.lower_bound)
        before = max(best, known_bound)  # what the node had proved before this round
        best = max(best, lb)
        # a round whose bound already prunes the node needs no better incumbent
        if (incumbent is not None and heuristic_round(len(rounds)) and res.Z is not None
                and not gap_closed(upper_bound, best, st.prune_tol, st.prune_abs_tol)):
            upper_bound = min(upper_bound, float(incumbent(res)))
        improvement = ((lb - prev) / sse_magnitude(prev, problem.c0) if math.isfinite(prev)
                       else math.inf)
        prev = lb
        slow = slow + 1 if _tailing(st.tail_off_root if root else st.tail_off, upper_bound,
                                    before, best) else 0
        stop = _stop_rule(st, upper_bound, best, improvement, len(rounds), max_rounds,
                          res.status == "time_limit" or deadline.expired(),
                          slow >= (TAIL_OFF_ROOT_ROUNDS if root else 1))
        if stop is None:
            stop, nxt = _next_round_cuts(res, model, problem, st, rng, stats, eps)
        if loose and stop in (NO_CUT, CUT_LIMIT, TOLERANCE, BOUND_WORSE):
            # a loose round would end the loop: re-solve this model warm at a tighter
            # tolerance (at the SDP tolerance in the end) and let those rounds decide
            cap = tol_r * TIGHTEN
            ws = res
            prev = -math.inf
            if callback is not None and callback(stats):
                flag = CALLBACK_STOP
                break
            continue
        if (stop in (NO_CUT, TOLERANCE, BOUND_WORSE) and st.families and eps > fine
                and len(rounds) < max_rounds and _prune_gap(st, upper_bound, best) <= st.fine_gap):
            # the cuts violated by more than eps have stopped moving the bound: those
            # violated by less may still (docs/solver.md, "The root's cuts at a finer
            # violation threshold")
            eps = fine
            stop, nxt = _next_round_cuts(res, model, problem, st, rng, stats, eps)
        if stop is None:
            n_sep += 1
            for f, a in stats.added.items():
                added_tot[f] += a
            new_cuts, keep, n_new = nxt
            model = model.with_cuts(new_cuts)
            ws = WarmStart.for_cuts(res, keep, n_new)
        if callback is not None and callback(stats) and stop is None:
            stop = CALLBACK_STOP
        if stop is not None:
            flag = stop
            break

    avg = {f: (added_tot[f] / n_sep if n_sep else 0.0) for f in FAMILIES}
    return BoundResult(best, res, model.cuts, rounds, flag,
                       total_iter, deadline.elapsed(), avg, CP_FLAGS[flag])


def heuristic_round(r: int) -> bool:
    """Whether round ``r`` (from 1) hands its solution to the loop's ``incumbent`` hook: the
    powers of two, so a loop of R rounds makes about log2(R) calls, whatever the machine.

    A mid-loop heuristic finds the clustering that prunes a root long before its last round:
    on a fresh glass draw (ml_50_cl_0_7) the root heuristic left 100.83 and the loop, unable
    to rise past the optimum 100.47, ran to the time limit, while IPC-k-means on round 4's Z
    (0.04 s) found 100.47 (docs/solver.md, "A heuristic inside the loop")."""
    return r >= 1 and r & (r - 1) == 0


def _round_options(tol: float, upper_bound: float, st: CuttingPlaneSettings) -> dict:
    """``solve_sdp``'s keywords for one round: the round's tolerance and the bound that
    prunes the node as a target."""
    kw: dict = {"tol": tol}
    if math.isfinite(upper_bound):
        # the solve may stop as soon as its safe bound prunes the node (a hair inside the
        # loop's pruning test, so that a bound at the target always passes it)
        kw["bound_target"] = upper_bound - 0.999 * _prune_slack(st, upper_bound)
    return kw


def _tailing(share: float | None, upper_bound: float, before: float, best: float) -> bool:
    """Whether a round that raised the node's bound from ``before`` to ``best`` closed less
    than ``share`` of the gap to the incumbent ``upper_bound`` (False when off or unknown)."""
    return bool(share and math.isfinite(upper_bound) and math.isfinite(before)
                and upper_bound > before and best - before < share * (upper_bound - before))


def _stop_rule(st: CuttingPlaneSettings, upper_bound: float, best: float, improvement: float,
               rounds: int, max_rounds: int, out_of_time: bool,
               tailing_off: bool) -> int | None:
    """Why the loop ends after this round (a CP flag), or None to separate more cuts:
    ``best`` is the best bound so far, ``improvement`` the round's relative gain over the
    one before, ``tailing_off`` whether the tail-off rule holds."""
    if gap_closed(upper_bound, best, st.prune_tol, st.prune_abs_tol):
        return PRUNED
    if out_of_time:
        return TIME_LIMIT
    if rounds > 1 and improvement < -st.cp_tol:
        return BOUND_WORSE
    if rounds > 1 and improvement < st.cp_tol:
        return TOLERANCE
    if rounds >= max_rounds:
        return ROUND_LIMIT
    if tailing_off:
        return TAILING_OFF
    if not st.families:
        return NO_CUT
    return None


def _next_round_cuts(res, model, problem: Problem, st: CuttingPlaneSettings, rng,
                     stats: RoundStats, eps: float):
    """Separate at ``res.Z`` the cuts violated by more than ``eps`` and drop the inactive
    cuts; fills ``stats`` in.

    Returns ``(stop_flag, None)`` (NO_CUT, CUT_LIMIT) or ``(None, (cuts, keep, n_new))``:
    the next cut list, the indices of the old cuts it keeps (a prefix) and the number of
    cuts appended, as ``WarmStart.for_cuts`` takes them.
    """
    Z = np.asarray(res.Z, dtype=np.float64)
    stats.eps_violation = eps
    sep = separate(Z, k=problem.k, n=problem.n, families=st.families, eps=eps,
                   caps=st.max_collected, fracs=st.fraction, seed=rng, collect=st.collect,
                   star_leaves=st.star_leaves, max_weight=problem.instance.max_cluster_weight)
    stats.found = dict(sep.found)
    old = model.cuts
    # keep the cuts that are active at the new solution: slack against their own rhs
    if old.m:
        slack = -old.violation(Z)
        u = np.zeros(old.m) if res.u is None else np.asarray(res.u, dtype=np.float64)
        # the size constraints are part of the relaxation, never pruned
        active = (slack <= st.eps_active) | (u > st.u_active) | old.is_size
    else:
        active = np.zeros(0, dtype=bool)
    # a cut already in the model (solved inexactly) is not added twice
    new = drop_known(sep.cuts.concat(separate_sizes(Z, problem, eps=eps)), old)
    if new.m == 0:
        stats.added = {f: 0 for f in sep.found}
        return NO_CUT, None
    keep = np.flatnonzero(active)
    room = st.max_cuts - len(keep)
    if room <= 0:
        stats.added = {f: 0 for f in sep.found}
        return CUT_LIMIT, None
    if new.m > room:
        # families are concatenated in order; keep the most violated overall
        order = np.argsort(-new.violation(Z), kind="stable")[:room]
        new = new.select(np.sort(order))
    fam = new.counts()
    stats.added = {f: fam[f] for f in sep.found}
    stats.removed = int(old.m - len(keep))
    return None, (old.select(keep).concat(new), keep, new.m)
