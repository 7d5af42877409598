"""The compiled kernels against pure-numpy references written here (tests only).

Each reference follows the kernel's documented visiting order and floating-point evaluation
order, so results are compared exactly (indices, values, flags), except the direct branching
distance whose summation order differs from numpy's.
"""

from __future__ import annotations

import numpy as np
import pytest

from pcsos._kernels import (
    as_symmetric,
    branching_direct,
    branching_scan,
    branching_score,
    max_asymmetry,
    separate_cliques,
    separate_pairs,
    separate_triangles,
)

# ------------------------------------------------------------------ references


def ref_pairs(Z, eps, cap):
    s = len(Z)
    iu, ju = np.triu_indices(s, 1)  # row-major order, as the kernel visits
    z = Z[iu, ju]
    cand_i = np.c_[iu, ju].ravel()
    cand_j = np.c_[ju, iu].ravel()
    cand_v = np.c_[z - Z[iu, iu], z - Z[ju, ju]].ravel()
    hit = cand_v > eps
    ci, cj, cv = cand_i[hit], cand_j[hit], cand_v[hit]
    return ci[:cap], cj[:cap], cv[:cap], len(cv) > cap


def ref_triangles(Z, eps, cap, order, most=False):
    """Every violated cut in visiting order, numbered from 1; the first ``cap`` of them, or
    with ``most`` the ``cap`` most violated (ties: the earlier visited), in visiting order."""
    s = len(Z)
    out_i, out_j, out_h, out_v = [], [], [], []
    jj, hh = np.triu_indices(s, 1)
    for i in order:
        # same association as the kernel: ((Z_ij - Z_ii) + Z_ih) - Z_jh
        V = ((Z[i, jj] - Z[i, i]) + Z[i, hh]) - Z[jj, hh]
        hit = (V > eps) & (jj != i) & (hh != i)
        out_i.append(np.full(hit.sum(), i))
        out_j.append(jj[hit])
        out_h.append(hh[hit])
        out_v.append(V[hit])
    cat = [np.concatenate(a) if a else np.zeros(0) for a in (out_i, out_j, out_h, out_v)]
    seq = np.arange(1, len(cat[3]) + 1)
    pick = np.arange(min(cap, len(seq)))
    if most:
        pick = np.sort(np.argsort(-cat[3], kind="stable")[:cap])
    return (*(a[pick] for a in cat), len(cat[3]) > cap, seq[pick])


def ref_cliques(Z, q, rhs, eps):
    s = len(Z)
    Qs, vals = [], []
    for v in range(s):
        rs = Z[v].copy()
        inq = np.zeros(s, bool)
        inq[v] = True
        Q = [v]
        total = 0.0
        for _ in range(1, q):
            cand = np.where(inq, np.inf, rs)
            u = int(np.argmin(cand))  # first minimum = smallest index on ties
            total += cand[u]
            inq[u] = True
            Q.append(u)
            rs = rs + Z[u]
        Qs.append(sorted(Q))
        vals.append(rhs - total)
    seen, outQ, outv = set(), [], []
    for Q, val in zip(Qs, vals):
        if val > eps and tuple(Q) not in seen:
            seen.add(tuple(Q))
            outQ.append(Q)
            outv.append(val)
    return np.array(outQ, dtype=np.int64).reshape(-1, q), np.array(outv)


def ref_branching(Z, G=None):
    s = len(Z)
    if s < 2:
        return -1, -1, -np.inf
    if G is None:
        D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
    else:
        dg = np.diag(G)
        D = (dg[:, None] + dg[None, :]) - 2.0 * G
    iu, ju = np.triu_indices(s, 1)
    score = np.minimum(Z[iu, ju], D[iu, ju])
    t = int(np.argmax(score))
    return int(iu[t]), int(ju[t]), float(score[t])


# ------------------------------------------------------------------ matrices


def random_symmetric(rng, s):
    A = rng.random((s, s))
    return np.ascontiguousarray((A + A.T) / 2)


def clustering_like(rng, s, noise=1e-3):
    """A clustering matrix of super-points with random sizes, plus symmetric noise."""
    k = int(rng.integers(1, min(s, 4) + 1))
    lab = rng.permutation(np.r_[np.arange(k), rng.integers(0, k, s - k)])
    e = rng.integers(1, 5, s).astype(float)
    sizes = np.bincount(lab, weights=e)
    Z = (lab[:, None] == lab[None, :]) / sizes[lab][:, None]
    N = rng.normal(scale=noise, size=(s, s))
    return np.ascontiguousarray(Z + (N + N.T) / 2)


def matrices():
    rng = np.random.default_rng(1234)
    out = []
    for s in (1, 2, 3, 4, 7, 25, 60):
        out.append(("rand", s, random_symmetric(rng, s)))
        out.append(("clust", s, clustering_like(rng, s)))
        out.append(("exact", s, clustering_like(rng, s, noise=0.0)))
    return out


MATS = matrices()
IDS = [f"{name}-{s}" for name, s, _ in MATS]


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, (bool, np.bool_)):
            assert bool(g) == bool(w)
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _in_visiting_order(out):
    """(i, j, h, violation, hit_cap) of a ``most=True`` scan, sorted by visit number (the
    kernel returns its heap; the visit numbers skip the cuts its rising threshold skipped,
    so only their order is compared)."""
    o = np.argsort(out[5])
    return (*(a[o] for a in out[:4]), out[4])


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("name,s,Z", MATS, ids=IDS)
@pytest.mark.parametrize("eps", [-1e-12, 1e-4, 0.05])
def test_pairs_match_reference(name, s, Z, eps):
    for cap in (0, 1, 5, 10**6):
        _assert_same(separate_pairs(Z, eps, cap), ref_pairs(Z, eps, cap))


@pytest.mark.parametrize("name,s,Z", MATS, ids=IDS)
@pytest.mark.parametrize("eps", [-1e-12, 1e-4, 0.05])
def test_triangles_match_reference(name, s, Z, eps):
    order = np.random.default_rng(s).permutation(s).astype(np.int64)
    for cap in (0, 1, 7, 10**6):
        _assert_same(separate_triangles(Z, eps, cap, order), ref_triangles(Z, eps, cap, order))


@pytest.mark.parametrize("name,s,Z", MATS, ids=IDS)
@pytest.mark.parametrize("eps", [-1e-12, 1e-4, 0.05])
def test_most_violated_triangles_match_reference(name, s, Z, eps):
    # the kernel keeps a heap: its output, put in visiting order, is the reference's
    order = np.random.default_rng(s + 1).permutation(s).astype(np.int64)
    for cap in (0, 1, 2, 7, 50, 10**6):
        _assert_same(_in_visiting_order(separate_triangles(Z, eps, cap, order, True)),
                     ref_triangles(Z, eps, cap, order, most=True)[:5])


def test_most_violated_triangles_break_ties_by_visiting_order():
    # a constant off-diagonal above the diagonal: every triple is violated by exactly 1/8
    s = 9
    Z = np.full((s, s), 0.25)
    np.fill_diagonal(Z, 0.125)
    order = np.arange(s, dtype=np.int64)
    every = ref_triangles(Z, 1e-4, 10**6, order)[3]
    assert np.sum(every == every.max()) > 5  # the tie decides which 5 are kept
    _assert_same(_in_visiting_order(separate_triangles(Z, 1e-4, 5, order, True)),
                 ref_triangles(Z, 1e-4, 5, order, most=True)[:5])


def test_triangles_cover_every_rotation_once():
    # with eps below every violation, every (apex, unordered pair) appears exactly once
    s = 6
    Z = np.zeros((s, s))
    i, j, h, v, full, _ = separate_triangles(Z, -1.0, 10**6, np.arange(s, dtype=np.int64))
    assert not full
    assert len(i) == s * (s - 1) * (s - 2) // 2
    keys = {(a, min(b, c), max(b, c)) for a, b, c in zip(i, j, h)}
    assert len(keys) == len(i)
    assert all(a != b and a != c and b < c for a, b, c in zip(i, j, h))


def test_triangles_rejects_bad_order():
    Z = np.zeros((4, 4))
    with pytest.raises(ValueError):
        separate_triangles(Z, 0.0, 10, np.array([0, 1, 1, 3], dtype=np.int64))
    with pytest.raises(ValueError):
        separate_triangles(Z, 0.0, 10, np.arange(3, dtype=np.int64))
    with pytest.raises(ValueError):
        separate_triangles(np.zeros((3, 4)), 0.0, 10, np.arange(3, dtype=np.int64))


@pytest.mark.parametrize("name,s,Z", MATS, ids=IDS)
@pytest.mark.parametrize("q", [2, 3, 4])
def test_cliques_match_reference(name, s, Z, q):
    for rhs, eps in ((0.3, -1e-12), (0.05, 1e-4), (10.0, 0.0)):
        _assert_same(separate_cliques(Z, q, rhs, eps), ref_cliques(Z, q, rhs, eps)
                     if q <= s else (np.zeros((0, q)), np.zeros(0)))


def test_cliques_deduplicate():
    Z = np.zeros((5, 5))
    Q, v = separate_cliques(Z, 5, 1.0, 0.0)  # every seed grows the same full set
    np.testing.assert_array_equal(Q, [[0, 1, 2, 3, 4]])
    np.testing.assert_array_equal(v, [1.0])


@pytest.mark.parametrize("name,s,Z", MATS, ids=IDS)
def test_branching_matches_reference(name, s, Z):
    G = np.ascontiguousarray(Z @ Z.T)
    assert branching_scan(Z, G) == ref_branching(Z, G)
    i, j, sc = branching_direct(Z)
    ri, rj, rsc = ref_branching(Z)
    if s < 2:
        assert (i, j, sc) == (-1, -1, -np.inf)
        return
    assert sc == pytest.approx(rsc, abs=1e-12)
    if name == "rand":  # no ties on random data: the same pair
        assert (i, j) == (ri, rj)
    # whatever the tie-breaking, the pair reached the optimum score
    Zd = ((Z[i] - Z[j]) ** 2).sum()
    assert min(Z[i, j], Zd) == pytest.approx(rsc, abs=1e-12)


def test_branching_score_wrapper_on_clustering_matrix():
    rng = np.random.default_rng(5)
    Z = clustering_like(rng, 12, noise=0.0)
    for method in ("gram", "direct"):
        i, j, sc = branching_score(Z, method=method)
        assert i < j and abs(sc) < 1e-12
    with pytest.raises(ValueError):
        branching_score(Z, method="nope")
    assert branching_score(np.ones((1, 1))) == (-1, -1, -np.inf)


def test_as_symmetric_and_asymmetry():
    A = np.arange(9.0).reshape(3, 3)
    assert max_asymmetry(np.ascontiguousarray(A)) == 4.0
    S = as_symmetric(A)
    assert max_asymmetry(S) == 0.0 and S.flags.c_contiguous
    np.testing.assert_array_equal(S, (A + A.T) / 2)
    with pytest.raises(ValueError):
        as_symmetric(np.zeros((2, 3)))
