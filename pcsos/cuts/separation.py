"""Separation of the valid inequalities of spec §4 from a (relaxation) matrix Z.

Thin wrappers around the compiled kernels of :mod:`pcsos._kernels`: each family returns a
:class:`~pcsos.bounds.cutset.CutSet` holding the most violated cuts found, most violated first.
All families are valid for every clustering matrix in super-point space (Z_ij = 1/|C|, |C|
the number of original points of the cluster, or its weight with point weights), so a cut
found here never removes a feasible clustering.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from pcsos._kernels import as_symmetric
from pcsos._kernels import separate_cliques as _k_cliques
from pcsos._kernels import separate_pairs as _k_pairs
from pcsos._kernels import separate_triangles as _k_triangles
from pcsos.bounds.cutset import CutSet

__all__ = ["COLLECT", "DEFAULT_CAPS", "DEFAULT_FRACTIONS", "FAMILIES", "PAPER_FAMILIES",
           "FamilyCuts", "STAR_LEAVES", "SeparationResult", "clique_rhs", "cut_keys", "drop_known",
           "parse_families", "separate", "separate_cliques", "separate_pairs",
           "separate_stars", "separate_triangles", "top_k"]

#: every family, in the order they are separated; "all" selects the paper's three (the
#: loop's default), and the star cuts are taken by name ("all,star", the tree's default,
#: pcsos.cuts.loop.TREE_CUT_DEFAULTS): on glass's fresh draws they close at the root what
#: took up to 200 nodes, but must-link roots cost more with them (docs/cuts.md, "Star cuts")
FAMILIES = ("pair", "triangle", "clique", "star")
PAPER_FAMILIES = ("pair", "triangle", "clique")
#: star cuts: leaves per cut at most (a cut has 1 + t + t(t-1)/2 entries, and the ADMM's
#: cut system fills in with them: on a glass root, leaves without a limit took 4.3x the
#: time of 4 for the same bound), and the apex's largest entries each greedy search starts
#: from
STAR_LEAVES = 4
STAR_STARTS = 3
#: star cuts kept per round at most, the most violated
STAR_CAP = 300
#: per family, the defaults of :func:`separate` and of the loop's settings: cuts collected
#: per round at most, and the share of them (most violated first) added
DEFAULT_CAPS = {"pair": 100_000, "triangle": 100_000, "clique": 100_000, "star": STAR_CAP}
DEFAULT_FRACTIONS = {"pair": 0.05, "triangle": 0.05, "clique": 1.0, "star": 1.0}


def parse_families(families: str | Iterable[str] | None) -> tuple[str, ...]:
    """Normalise a family selection: "all" (the paper's pair, triangle and clique cuts; also
    None), "none", a name, a comma list or an iterable ("all,star": with the star cuts)."""
    if families is None:
        return PAPER_FAMILIES
    if isinstance(families, str):
        if not families.strip():  # '' meant 'none' without a word; 'none' says it
            raise ValueError("no cut family given: use all, none, "
                             f"{', '.join(FAMILIES)} or a comma list")
        families = [f.strip() for f in families.split(",") if f.strip()]
    out: list[str] = []
    for f in families:
        f = f.lower()
        if f == "all":
            out.extend(PAPER_FAMILIES)
        elif f == "none":
            continue
        elif f in FAMILIES:
            out.append(f)
        else:
            raise ValueError(f"unknown cut family {f!r}: use all, none, {', '.join(FAMILIES)}")
    return tuple(f for f in FAMILIES if f in out)


def top_k(violation: np.ndarray, frac: float) -> np.ndarray:
    """Indices of the ceil(frac * m) most violated entries, most violated first.

    A stable sort keeps the kernel's (seeded) visiting order among equal violations, so the
    choice is reproducible.
    """
    if not 0.0 <= frac <= 1.0:
        raise ValueError(f"fraction must lie in [0, 1], got {frac}")
    m = len(violation)
    take = min(m, math.ceil(frac * m))
    return np.argsort(-np.asarray(violation), kind="stable")[:take]


def clique_rhs(n: int, k: int, max_weight: float | None = None) -> float:
    """Right-hand side 1/(n - k + 1): the largest cluster holds at most n - k + 1 points;
    with point weights or cluster sizes 1/``max_weight``, a bound on any cluster's weight
    (:attr:`pcsos.problem.Instance.max_cluster_weight`)."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k = {k}, n = {n}")
    return 1.0 / (n - k + 1 if max_weight is None else max_weight)


class FamilyCuts(NamedTuple):
    """Cuts of one family: the kept cuts, their violations (most violated first), the number
    of violated cuts collected before selection and whether the scan stopped at its cap."""

    cuts: CutSet
    violation: np.ndarray
    found: int
    hit_cap: bool


def separate_pairs(Z, *, eps: float = 1e-4, cap: int = 100_000,
                   frac: float = 1.0) -> FamilyCuts:
    """Pair cuts Z_ii >= Z_ij violated by more than ``eps``.

    Collects at most ``cap`` (row-major order) and keeps the top ``frac`` of them.
    """
    Z = as_symmetric(Z)
    i, j, v, full = _k_pairs(Z, float(eps), int(cap))
    sel = top_k(v, frac)
    return FamilyCuts(CutSet.pairs(i[sel], j[sel]), v[sel], len(v), full)


COLLECT = ("most", "first")


def separate_triangles(Z, *, eps: float = 1e-4, cap: int = 100_000, frac: float = 1.0,
                       seed=None, collect: str = "most") -> FamilyCuts:
    """Triangle cuts Z_ii + Z_jh >= Z_ij + Z_ih violated by more than ``eps``.

    Collects at most ``cap`` violated cuts and keeps the top ``frac`` of them. The apexes
    are visited in a random order drawn from ``seed`` (an int, a numpy Generator or None).
    ``collect="most"``: the ``cap`` most violated cuts of the whole matrix (a full scan);
    ``"first"`` (the pc-sos-sdp code's random sample): the first ``cap`` in visiting
    order, the scan stopping there.
    """
    if collect not in COLLECT:
        raise ValueError(f"collect must be one of {COLLECT}, got {collect!r}")
    Z = as_symmetric(Z)
    order = np.random.default_rng(seed).permutation(len(Z)).astype(np.int64)
    i, j, h, v, full, q = _k_triangles(Z, float(eps), int(cap), order, collect == "most")
    # visiting order, so that top_k's stable sort breaks ties the same way in both modes
    o = np.argsort(q, kind="stable")
    i, j, h, v = i[o], j[o], h[o], v[o]
    sel = top_k(v, frac)
    return FamilyCuts(CutSet.triangles(i[sel], j[sel], h[sel]), v[sel], len(v), full)


def separate_cliques(Z, k: int, n: int, *, eps: float = 1e-4, frac: float = 1.0,
                     max_weight: float | None = None) -> FamilyCuts:
    """Greedy clique cuts sum_{a<b in Q} Z_ab >= 1/(n-k+1) over k+1 super-points Q.

    ``n`` is the number of ORIGINAL points; with point weights the rhs is 1/``max_weight``
    (:func:`clique_rhs`). At most one cut per seed vertex (deduplicated); none when there
    are fewer than k + 1 super-points.
    """
    Z = as_symmetric(Z)
    rhs = clique_rhs(n, k, max_weight)
    if k + 1 > len(Z):
        return FamilyCuts(CutSet.empty(), np.zeros(0), 0, False)
    Q, v = _k_cliques(Z, int(k) + 1, rhs, float(eps))
    sel = top_k(v, frac)
    cuts = CutSet.cliques(Q[sel], rhs) if len(sel) else CutSet.empty()
    return FamilyCuts(cuts, v[sel], len(v), False)


@dataclass
class SeparationResult:
    """What :func:`separate` found.

    ``cuts``: the kept cuts, families in the order pair, triangle, clique, star; per family name:
    ``found`` (violated cuts collected, at most the cap), ``added`` (cuts kept),
    ``hit_cap`` (scan stopped at the cap), ``max_violation`` (0 when none).
    """

    cuts: CutSet
    found: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    hit_cap: dict[str, bool] = field(default_factory=dict)
    max_violation: dict[str, float] = field(default_factory=dict)


def separate_stars(Z, *, eps: float = 1e-4, cap: int = STAR_CAP, frac: float = 1.0,
                   leaves: int = STAR_LEAVES, starts: int = STAR_STARTS) -> FamilyCuts:
    """Star cuts Z_ii + sum_{j<h in T} Z_jh >= sum_{j in T} Z_ij (apex i, 3 <= |T| <=
    ``leaves``) violated by more than ``eps``; |T| = 2 is a triangle cut.

    Valid for every clustering matrix (docs/cuts.md): with m of T in i's cluster the left
    side exceeds the right by Z_ii (1 - m (3 - m) / 2) plus T's pairs in other clusters, and
    m (3 - m) / 2 <= 1 for every integer m. A greedy search per apex i, from each of its
    ``starts`` largest entries Z_ij, adds the point h of largest gain Z_ih - sum_{j in T}
    Z_jh while it is positive. Of the distinct cuts found (at most ``starts`` per apex), keeps
    the ``cap`` most violated, then the top ``frac`` of those.
    """
    Z = as_symmetric(Z)
    s = Z.shape[0]
    empty = FamilyCuts(CutSet.empty(), np.zeros(0), 0, False)
    if s < 4 or leaves < 3 or starts < 1 or cap <= 0:
        return empty
    rows = np.arange(s)
    diag = Z.diagonal().copy()
    off = Z.copy()
    off[rows, rows] = -np.inf
    first = np.argsort(-off, axis=1, kind="stable")[:, :min(starts, s - 1)]
    found: dict[tuple, float] = {}
    for r in range(first.shape[1]):
        j0 = first[:, r]
        value = Z[rows, j0] - diag
        gain = Z - Z[j0]
        gain[rows, rows] = -np.inf
        gain[rows, j0] = -np.inf
        T = [j0]
        alive = np.ones(s, dtype=bool)
        for _ in range(leaves - 1):
            j = np.argmax(gain, axis=1)
            g = gain[rows, j]
            alive &= g > 0
            if not alive.any():
                break
            value = np.where(alive, value + g, value)
            T.append(np.where(alive, j, -1))
            gain[alive] -= Z[j[alive]]
            gain[rows, j] = -np.inf
        leaves_of = np.stack(T, axis=1)
        size = np.sum(leaves_of >= 0, axis=1)
        for i in np.flatnonzero((size >= 3) & (value > eps)):
            key = (int(i), tuple(sorted(int(v) for v in leaves_of[i, :size[i]])))
            found[key] = max(found.get(key, -np.inf), float(value[i]))
    if not found:
        return empty
    keys = list(found)
    violation = np.array([found[key] for key in keys])
    order = np.argsort(-violation, kind="stable")[:cap]
    order = order[top_k(violation[order], frac)]
    sets, kept = [], []
    for t in range(3, leaves + 1):  # CutSet.stars takes cuts of one size
        same = [int(o) for o in order if len(keys[o][1]) == t]
        if same:
            sets.append(CutSet.stars([keys[o][0] for o in same], [keys[o][1] for o in same]))
            kept.extend(same)
    kept = np.asarray(kept, dtype=np.int64)
    most = np.argsort(-violation[kept], kind="stable")  # most violated first again
    return FamilyCuts(sets[0].concat(*sets[1:]).select(most), violation[kept][most],
                      len(found), False)


def separate(Z, *, k: int, n: int, families=None, eps: float = 1e-4,
             caps: dict[str, int] | None = None, fracs: dict[str, float] | None = None,
             seed=None, collect: str = "most", star_leaves: int = STAR_LEAVES,
             max_weight: float | None = None) -> SeparationResult:
    """Separate every selected family from Z (super-point space, n ORIGINAL points;
    ``max_weight``: see :func:`clique_rhs`).

    ``caps`` / ``fracs`` map a family name to its collection cap / kept fraction (defaults,
    as the paper's code: 100 000 and 5 % for pairs and triangles, all cliques). ``seed``
    drives the triangle visiting order; ``collect``: which triangles fill the cap
    (:func:`separate_triangles`); ``star_leaves``: leaves of a star cut at most.
    """
    caps = {**DEFAULT_CAPS, **(caps or {})}
    fracs = {**DEFAULT_FRACTIONS, **(fracs or {})}
    Z = as_symmetric(Z)
    res = SeparationResult(CutSet.empty())
    sets = []
    for fam in parse_families(families):
        if fam == "pair":
            fc = separate_pairs(Z, eps=eps, cap=caps["pair"], frac=fracs["pair"])
        elif fam == "triangle":
            fc = separate_triangles(Z, eps=eps, cap=caps["triangle"], frac=fracs["triangle"],
                                    seed=seed, collect=collect)
        elif fam == "star":
            fc = separate_stars(Z, eps=eps, cap=caps["star"], frac=fracs["star"],
                                leaves=star_leaves)
        else:
            fc = separate_cliques(Z, k, n, eps=eps, frac=fracs["clique"], max_weight=max_weight)
        sets.append(fc.cuts)
        res.found[fam], res.added[fam], res.hit_cap[fam] = fc.found, fc.cuts.m, fc.hit_cap
        res.max_violation[fam] = float(fc.violation.max(initial=0.0))
    if sets:
        res.cuts = sets[0].concat(*sets[1:])
    return res


def cut_keys(cuts: CutSet) -> np.ndarray:
    """A hashable canonical key per cut (family, rhs, sorted (i, j, coef) entries).

    Two cuts with the same key are the same inequality, whatever order their entries were
    stored in (freshly separated or re-indexed); used to avoid adding a cut twice.
    """
    m = cuts.m
    keys = np.empty(m, dtype=object)
    if m == 0:
        return keys
    rows = np.repeat(np.arange(m), np.diff(cuts.indptr))
    o = np.lexsort((cuts.j, cuts.i, rows))
    i, j, c = cuts.i[o], cuts.j[o], cuts.coef[o]
    ptr = cuts.indptr
    for t in range(m):
        a, b = ptr[t], ptr[t + 1]
        keys[t] = (int(cuts.family[t]), float(cuts.rhs[t]), i[a:b].tobytes(), j[a:b].tobytes(),
                   c[a:b].tobytes())
    return keys


def drop_known(new: CutSet, old: CutSet) -> CutSet:
    """The cuts of ``new`` that ``old`` does not hold (compared by :func:`cut_keys`), in order."""
    if not (new.m and old.m):
        return new
    have = set(cut_keys(old))
    return new.select(np.array([k not in have for k in cut_keys(new)], dtype=bool))
