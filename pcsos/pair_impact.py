"""Which pairs cost the most: a score per must-link / cannot-link pair (``pcsos impact``).

Pairs come from people and are often wrong, and a wrong pair usually costs the objective
more than a right one: it forces two points of one natural cluster apart, or two of
different clusters together. :func:`impact` estimates, for each pair, how much the optimum
would drop without it, from a clustering of the instance (the optimal one by default):

``score`` = ``drop``
    value(clustering) minus the value of the best clustering found for the instance
    without the pair: a heuristic (ipc-kmeans by default) started from the clustering
    itself, which stays feasible when a pair is removed; with ``exact=True``, the exact
    solver, warm-started the same way. Any clustering that obeys the other pairs bounds
    the optimum without the pair from above, so ``drop`` is a **proven lower bound** on
    value(clustering) - OPT(without the pair), and with the optimal clustering and
    ``exact=True`` it is that drop itself (to the solver's tolerance). A must-link pair
    whose ends stay linked through other must-link pairs scores 0, rightly.
``dual``
    the score of Randel's thesis (seed 003, ch. 5, eq. 5.17), with the clustering
    criterion linearised at the clustering's means: minus the sum over clusters of the LP
    multipliers of the pair's rows in the assignment relaxation (x_ih + x_jh <= 1 for a
    cannot-link pair, x_ih = x_jh for a must-link pair), the first-order rate at which the
    assignment cost falls as the pair is relaxed. Reported beside ``drop``; the validation
    in ``docs/impact.md`` shows how the two rank.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack

from pcsos.api import solve_instance
from pcsos.clock import Deadline
from pcsos.errors import (
    InfeasibleError,
    InputError,
    UndecidedError,
    check_hooks,
    check_seed,
)
from pcsos.heuristics import get_heuristic, run_heuristic
from pcsos.options import SolverOptions
from pcsos.problem import Instance, Problem, canonical_labels, check_start, make_instance

__all__ = ["impact", "ImpactResult", "PairImpact"]


@dataclass
class PairImpact:
    """One pair's scores, in the ``pairs`` of an :class:`~pcsos.pair_impact.ImpactResult`.

    Attributes
    ----------
    i, j : int
        The pair's points, 0-based, i < j.
    type : {'ML', 'CL'}
        Must-link or cannot-link.
    score : float
        Equal to ``drop``, the ranking key.
    drop : float
        A proven lower bound on how much the clustering's value would fall without the
        pair.
    dual : float
        The thesis's Lagrangian score, >= 0 (NaN when its LP failed).
    """

    i: int
    j: int
    type: str
    score: float
    drop: float
    dual: float


@dataclass
class ImpactResult:
    """What :func:`pcsos.impact` returns.

    Attributes
    ----------
    pairs : list of PairImpact
        Ranked by ``score``, highest first.
    labels : ndarray of shape (n,)
        The clustering the pairs were scored against.
    objective : float
        Its SSE.
    optimal : bool
        Whether that clustering is certified optimal.
    seconds : float
        Wall time.
    notes : list of str
        What the run had to note (e.g. a first solve stopped at its limit).
    total : int
        Pairs to score (-1: not counted, for a result built by hand).
    status : str
        'done' (every pair scored), 'interrupted' (a stop request ended the run) or
        'time_limit' (the time limit did); in the last two, ``pairs`` holds only the pairs
        scored by then.
    """

    pairs: list[PairImpact]
    labels: np.ndarray
    objective: float
    optimal: bool
    seconds: float
    notes: list[str] = field(default_factory=list)
    total: int = -1
    status: str = "done"

    @property
    def interrupted(self) -> bool:
        """A stop request or the time limit ended the run (status other than 'done')."""
        return self.status != "done"

    @property
    def success(self) -> bool:
        """True when every pair was scored."""
        return self.status == "done"

    @property
    def message(self) -> str:
        """How it ended, in a sentence: the notes, or that every pair was scored."""
        return "; ".join(self.notes) if self.notes else f"{len(self.pairs)} pairs scored"

    def to_dict(self) -> dict:
        """JSON-ready: ``pairs`` as a list of objects, highest score first."""
        return {"pairs": [vars(p) for p in self.pairs], "labels": self.labels.tolist(),
                "objective": self.objective, "optimal": self.optimal,
                "seconds": self.seconds, "notes": list(self.notes),
                "interrupted": self.interrupted, "total": self.total,
                "status": self.status, "message": self.message}


def _value_without(inst: Instance, lab: np.ndarray, heuristic: str, exact: bool,
                   seed: int, time_limit: Deadline, solve_options: dict,
                   stop_event=None) -> float:
    """The value of the best clustering found for ``inst`` (a pair removed), started from
    ``lab``, which obeys every pair of ``inst``."""
    if exact:
        res = solve_instance(inst, init_labels=lab, time_limit=_solve_seconds(time_limit),
                             stop_event=stop_event, seed=seed, **solve_options)
        return res.objective
    problem = Problem.from_instance(inst, infer_k2=False)
    h = run_heuristic(heuristic, problem, seed=seed, init_labels=lab,
                      time_limit=time_limit, stop_event=stop_event)
    return h.objective if h.status == "found" else math.inf


def _solve_seconds(deadline: Deadline) -> float | None:
    """The time left as :func:`~pcsos.api.solve_instance` takes it: None without a limit,
    else at least a nanosecond (it refuses 0, which a spent limit leaves)."""
    left = deadline.seconds()
    return None if left is None else max(left, 1e-9)


def _dual_scores(Xc: np.ndarray, k: int, ml: np.ndarray, cl: np.ndarray,
                 centres: np.ndarray, deadline: Deadline) -> tuple[np.ndarray, np.ndarray]:
    """The thesis's scores (5.17) from the LP relaxation of the fixed-centre assignment
    (NaN when the LP fails or ``deadline`` stops it)."""
    n = len(Xc)
    c = ((Xc[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2).ravel()  # x_ih at i*k+h
    var = np.arange(n * k).reshape(n, k)

    def rows(pairs, sign):
        # one row per pair and cluster, pair-major: x_ih + sign * x_jh
        m = len(pairs)
        r = np.repeat(np.arange(m * k), 2)
        cols = np.column_stack([var[pairs[:, 0]].ravel(), var[pairs[:, 1]].ravel()]).ravel()
        vals = np.tile([1.0, sign], m * k)
        return coo_matrix((vals, (r, cols)), shape=(m * k, n * k))

    A_eq = [coo_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), var.ravel())),
                       shape=(n, n * k))]
    b_eq = [np.ones(n)]
    if len(ml):
        A_eq.append(rows(ml, -1.0))
        b_eq.append(np.zeros(len(ml) * k))
    # every cluster non-empty: -sum_i x_ih <= -1
    A_ub = [coo_matrix((-np.ones(n * k), (np.tile(np.arange(k), n), var.ravel())),
                       shape=(k, n * k))]
    b_ub = [-np.ones(k)]
    if len(cl):
        A_ub.append(rows(cl, 1.0))
        b_ub.append(np.ones(len(cl) * k))
    left = deadline.seconds()
    res = linprog(c, A_ub=vstack(A_ub).tocsr(), b_ub=np.concatenate(b_ub),
                  A_eq=vstack(A_eq).tocsr(), b_eq=np.concatenate(b_eq), bounds=(0, 1),
                  method="highs", options={} if left is None else {"time_limit": left})
    if res.status != 0:
        return np.full(len(ml), math.nan), np.full(len(cl), math.nan)
    eq = np.asarray(res.eqlin.marginals)[n:]
    ub = np.asarray(res.ineqlin.marginals)[k:]
    # a <= row's multiplier is <= 0: relaxing it lowers the cost by |multiplier| per unit;
    # an equality row relaxed both ways by b lowers it by |multiplier| per unit
    dual_ml = np.abs(eq.reshape(-1, k)).sum(axis=1) if len(ml) else np.zeros(0)
    dual_cl = -ub.reshape(-1, k).sum(axis=1) if len(cl) else np.zeros(0)
    return dual_ml, np.maximum(dual_cl, 0.0)


def impact(X, k: int, ml=(), cl=(), labels=None, *, heuristic: str = "ipc-kmeans",
           exact: bool = False, seed: int = 0, time_limit: float | None = None,
           progress=None, stop_event=None, sample_weight=None,
           **solve_options) -> ImpactResult:
    """Score every pair by how much the optimum would drop without it; ranked, highest first.

    A wrong pair (a label error) usually costs the most, so it ranks near the top
    (docs/impact.md measures how well).

    Parameters
    ----------
    X : array_like of shape (n, d)
        The points.
    k : int
        Number of clusters.
    ml, cl : iterable of (i, j) pairs
        The pairs to score.
    labels : array_like of shape (n,), optional
        The clustering to score against, checked as a warm start (n labels, k clusters,
        every pair obeyed). Default: the optimum from :func:`pcsos.solve` (with
        ``time_limit`` and ``solve_options``; if a limit stops it, its best clustering, and
        ``optimal`` is False).
    heuristic : str, default 'ipc-kmeans'
        The registered heuristic that re-solves the instance without each pair, from that
        clustering.
    exact : bool, default False
        Re-solve with the exact solver instead.
    seed : int, default 0
        Seed of the heuristic and of the solves (the first, and the exact re-solves).
    time_limit : float, optional
        Seconds for the whole run. The first solve may take up to half of them; each
        re-solve gets an equal share of what is left for the pairs not yet scored. Once
        they are spent, the pairs scored so far are returned (``interrupted`` is True).
    progress : callable, optional
        ``progress(done, total)``, called after each pair.
    stop_event : threading.Event, optional
        Once set, stops the first solve with its best clustering, and the scoring.
    sample_weight : None
        Not supported yet (an :class:`~pcsos.errors.InputError`), nor are the size
        keywords.
    **solve_options
        Fields of :class:`~pcsos.options.SolverOptions` for the solves.

    Returns
    -------
    ImpactResult
        The pairs ranked by score. After a stop or at the time limit, ``interrupted`` is
        True and it holds the pairs scored before (after a stop, a pair whose re-solve was
        cut short is left out: its drop would be too small).

    Raises
    ------
    InputError
        Bad input, ``sample_weight`` or a size keyword.
    InfeasibleError
        No clustering obeys the pairs.
    UndecidedError
        None was found in time (or the stop came first).

    Examples
    --------
    >>> import numpy as np, pcsos
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> ranked = pcsos.impact(X, 2, ml=[(0, 1)], cl=[(0, 2)])
    >>> [(p.type, p.i, p.j) for p in ranked.pairs]
    [('CL', 0, 2), ('ML', 0, 1)]
    >>> ranked.pairs[0].score > 0 and ranked.optimal
    True
    """
    t0 = time.perf_counter()
    given = {"sample_weight": sample_weight,
             **{name: solve_options.pop(name, None) for name in ("size_min", "size_max", "sizes")}}
    for name, value in given.items():
        if value is not None:
            # the scores come from an unweighted assignment LP without sizes (thesis 5.17)
            raise InputError(f"impact does not support {name} yet", source=name)
    get_heuristic(heuristic)  # an unknown name is an InputError listing the known ones
    check_seed(seed)
    check_hooks(progress=progress, stop_event=stop_event)
    deadline = Deadline.checked(time_limit)  # the whole run's, not each solve's
    SolverOptions.make(**solve_options).checked()  # a misspelt option is named, not dropped
    inst = make_instance(X, k, ml, cl)
    total = len(inst.ml) + len(inst.cl)
    notes: list[str] = []
    if labels is None:
        # half at most, so that a first solve that runs to its limit leaves the pairs time
        first = deadline.within(share=0.5) if total else deadline
        res = solve_instance(inst, time_limit=_solve_seconds(first), stop_event=stop_event,
                             seed=seed, **solve_options)
        if res.status == "infeasible":
            raise InfeasibleError(res.message, pairs=res.infeasible_pairs)
        if res.labels is None:
            raise UndecidedError(f"no clustering to score the pairs against ({res.status}: "
                                 f"{res.message}); give one (labels=, or --labels FILE)")
        lab, optimal = np.asarray(res.labels), res.status == "optimal"
        if not optimal:
            notes.append(f"the solve stopped ({res.status}, gap {res.gap:.3%}): the scores "
                         "bound the drop of its clustering's value, not of the optimum")
    else:
        lab, optimal = check_start(inst, labels, source="labels"), False
        notes.append("scored against the given clustering: each drop bounds how much its "
                     "value would fall without the pair")
    value = inst.objective(lab)
    Xc = inst.X - inst.X.mean(axis=0)
    centres = np.vstack([Xc[lab == h].mean(axis=0) for h in range(inst.k)])
    # at most half of what is left, so that a slow LP leaves the drops, the ranking key, time
    dual_ml, dual_cl = _dual_scores(Xc, inst.k, inst.ml, inst.cl, centres,
                                    deadline.within(share=0.5))
    out: list[PairImpact] = []

    def stopped() -> bool:  # a time_limit given as a Deadline may carry a stop signal
        return (stop_event is not None and stop_event.is_set()) or deadline.stopped()

    timed_out = False
    for kind, pairs, duals in (("ML", inst.ml, dual_ml), ("CL", inst.cl, dual_cl)):
        for t, (i, j) in enumerate(pairs):
            timed_out = deadline.expired()
            if stopped() or timed_out:
                break
            rest = np.delete(pairs, t, axis=0)
            without = make_instance(inst.X, inst.k, rest if kind == "ML" else inst.ml,
                                    rest if kind == "CL" else inst.cl)
            # an equal share of what is left: a re-solve that runs to its limit cannot
            # starve the pairs after it. Its drop is still a proven bound, so it is kept
            share = deadline.within(share=1.0 / (total - len(out)))
            best = _value_without(without, lab, heuristic, exact, seed, share,
                                  solve_options, stop_event)
            if stopped():
                break  # its re-solve may have been cut short: no score rather than too low
            # the start is feasible without the pair: best <= value up to rounding
            drop = max(0.0, value - best) if math.isfinite(best) else 0.0
            out.append(PairImpact(int(i), int(j), kind, drop, drop, float(duals[t])))
            if progress is not None:
                progress(len(out), total)
        if stopped() or timed_out:
            break
    status = "done"
    if len(out) < total:
        asked = stopped()  # read once: a stop coming now must not split status and note
        if asked or timed_out:
            status = "interrupted" if asked else "time_limit"
            why = "interrupted" if asked else f"time limit of {deadline.limit:g} s reached"
            notes.append(f"{why}: {len(out)} of {total} pairs scored")
    out.sort(key=lambda p: (-p.score, -(p.dual if math.isfinite(p.dual) else 0.0)))
    return ImpactResult(out, canonical_labels(lab), value, optimal, time.perf_counter() - t0,
                        notes, total, status)
