# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cut separation and branching kernels on a dense symmetric matrix Z (C-contiguous float64).

Conventions shared by every kernel here:

* Z is s x s, C-contiguous float64 and **assumed symmetric**: kernels read whole rows
  (``Z[i, h]`` for every h) because contiguous rows are what makes the O(s^3) scans fast.
  Callers that hold a merely approximately symmetric matrix symmetrise it first
  (``pcsos.cuts.separation`` does). :func:`max_asymmetry` checks this cheaply.
* A cut is reported when its violation is *strictly* greater than ``eps``. ``eps`` may be
  negative (tests use -1e-12 to ask for "every cut that is tight or violated").
* Collected cuts go into buffers of length ``cap``; a scan stops at the first violated cut
  beyond the cap, and the returned ``hit_cap`` flag is True exactly when more than ``cap``
  violated cuts exist (the first ``cap`` in visiting order are returned). The triangle scan
  can instead keep the ``cap`` most violated of the whole matrix (``most=True``).
* Loops are plain C loops without the GIL, so several tree workers can separate at once.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport fabs, INFINITY

cnp.import_array()

cdef extern from *:
    """
    /* max_h (a[h] - b[h]) over [lo, hi). Only a filter for the exact test done afterwards,
       so fast-math is harmless here: a difference of two doubles is exact IEEE arithmetic
       either way, and fast-math only lets gcc vectorise the max reduction. */
    __attribute__((optimize("fast-math")))
    static double pcsos_max_diff(const double *a, const double *b, Py_ssize_t lo,
                                 Py_ssize_t hi) {
        double m = -1e308;
        for (Py_ssize_t h = lo; h < hi; h++) {
            double t = a[h] - b[h];
            m = t > m ? t : m;
        }
        return m;
    }
    """
    double pcsos_max_diff(const double *a, const double *b, Py_ssize_t lo,
                          Py_ssize_t hi) noexcept nogil


def max_asymmetry(const double[:, ::1] Z):
    """Return max_{i,j} |Z_ij - Z_ji| (a cheap sanity check that callers symmetrised Z)."""
    cdef Py_ssize_t n = Z.shape[0], i, j
    cdef double best = 0.0, v
    if Z.shape[1] != n:
        raise ValueError("Z must be square")
    with nogil:
        for i in range(n):
            for j in range(i + 1, n):
                v = fabs(Z[i, j] - Z[j, i])
                if v > best:
                    best = v
    return best


cdef inline Py_ssize_t _square(const double[:, ::1] Z) except -1:
    if Z.shape[1] != Z.shape[0]:
        raise ValueError(f"Z must be square, got shape ({Z.shape[0]}, {Z.shape[1]})")
    return Z.shape[0]


def separate_pairs(const double[:, ::1] Z, double eps, Py_ssize_t cap):
    """Violated pair cuts Z_ii - Z_ij >= 0, i != j.

    Reads the diagonal and the upper triangle only. Visits i < j in row-major order and
    checks (i, j) then (j, i). Returns ``(i, j, violation, hit_cap)`` where cut t is
    ``Z[i_t, i_t] - Z[i_t, j_t] >= 0`` violated by ``Z_ij - Z_ii > eps``.
    """
    cdef Py_ssize_t s = _square(Z), i, j, m = 0
    if cap < 0:
        raise ValueError("cap must be >= 0")
    out_i = np.empty(cap, dtype=np.int64)
    out_j = np.empty(cap, dtype=np.int64)
    out_v = np.empty(cap, dtype=np.float64)
    cdef cnp.int64_t[::1] oi = out_i, oj = out_j
    cdef double[::1] ov = out_v
    cdef double z, v
    cdef bint full = False
    with nogil:
        for i in range(s):
            if full:
                break
            for j in range(i + 1, s):
                z = Z[i, j]
                v = z - Z[i, i]
                if v > eps:
                    if m == cap:
                        full = True
                        break
                    oi[m] = i
                    oj[m] = j
                    ov[m] = v
                    m += 1
                v = z - Z[j, j]
                if v > eps:
                    if m == cap:
                        full = True
                        break
                    oi[m] = j
                    oj[m] = i
                    ov[m] = v
                    m += 1
    return out_i[:m], out_j[:m], out_v[:m], bool(full)


cdef inline bint _gives_way(const double *hv, const cnp.int64_t *hq, Py_ssize_t a,
                           Py_ssize_t b) noexcept nogil:
    # the heap order (violation, -visit number): cut a gives up its place before cut b when
    # it is less violated, or equally violated and visited later
    return hv[a] < hv[b] or (hv[a] == hv[b] and hq[a] > hq[b])


cdef inline void _heap_sift_down(double *hv, cnp.int64_t *hq, cnp.int64_t *hi,
                                  cnp.int64_t *hj, cnp.int64_t *hh, Py_ssize_t m,
                                  Py_ssize_t p) noexcept nogil:
    # min-heap in the order of _gives_way: the root is the first cut to give up its place
    cdef Py_ssize_t c
    cdef double tv
    cdef cnp.int64_t t
    while True:
        c = 2 * p + 1
        if c >= m:
            return
        if c + 1 < m and _gives_way(hv, hq, c + 1, c):
            c += 1
        if _gives_way(hv, hq, c, p):
            tv = hv[c]; hv[c] = hv[p]; hv[p] = tv
            t = hq[c]; hq[c] = hq[p]; hq[p] = t
            t = hi[c]; hi[c] = hi[p]; hi[p] = t
            t = hj[c]; hj[c] = hj[p]; hj[p] = t
            t = hh[c]; hh[c] = hh[p]; hh[p] = t
            p = c
        else:
            return


def separate_triangles(const double[:, ::1] Z, double eps, Py_ssize_t cap,
                       const cnp.int64_t[::1] order, bint most=False):
    """Violated triangle cuts Z_ii + Z_jh - Z_ij - Z_ih >= 0 (apex i, distinct i, j, h).

    Visits the apexes in ``order`` (a permutation of 0..s-1, e.g. drawn from a seeded
    numpy Generator so that capped scans sample different regions) and, for each apex, the
    unordered pairs j < h in row-major order; across all apexes this covers every triple in
    all three rotations. Assumes Z symmetric (reads rows i and j). Returns
    ``(i, j, h, violation, hit_cap)`` with violation ``Z_ij + Z_ih - Z_ii - Z_jh > eps``.

    ``most=False``: the first ``cap`` violated cuts in visiting order, and the scan stops at
    the next one. ``most=True``: the whole matrix is scanned and the ``cap`` *most violated*
    cuts are returned (ties: the earlier visited), in no particular order; once more than
    ``cap`` were seen, the least violated one kept is the filter's threshold, so rows that
    cannot beat it are skipped. ``hit_cap``: more than ``cap`` violated cuts exist, in both
    modes. A sixth array, the visit number of each cut, orders ties reproducibly.
    """
    cdef Py_ssize_t s = _square(Z), a, a2, i, j, h, m = 0
    if order.shape[0] != s:
        raise ValueError(f"order must have length s = {s}, got {order.shape[0]}")
    if cap < 0:
        raise ValueError("cap must be >= 0")
    seen = np.zeros(s, dtype=np.uint8)
    cdef unsigned char[::1] sv = seen
    for a in range(s):
        i = order[a]
        if i < 0 or i >= s or sv[i]:
            raise ValueError("order must be a permutation of 0..s-1")
        sv[i] = 1
    out_i = np.empty(cap, dtype=np.int64)
    out_j = np.empty(cap, dtype=np.int64)
    out_h = np.empty(cap, dtype=np.int64)
    out_v = np.empty(cap, dtype=np.float64)
    out_q = np.empty(cap, dtype=np.int64)
    cdef cnp.int64_t[::1] oi = out_i, oj = out_j, oh = out_h, oq = out_q
    cdef double[::1] ov = out_v
    cdef const double *zi
    cdef const double *zj
    cdef double base, v
    cdef double slack = 0.0
    # ``thr``: a cut is taken when its violation exceeds it (eps, then in ``most`` mode the
    # least violation kept once the buffer is full and one more violated cut was seen)
    cdef double thr = eps
    cdef cnp.int64_t seq = 0
    cdef bint full = False
    if s < 3:
        return out_i[:0], out_j[:0], out_h[:0], out_v[:0], False, out_q[:0]
    if cap == 0:
        most = False  # nothing to keep: both modes stop at the first violated cut
    with nogil:
        # 4 ulps of the largest magnitude a violation is formed from (|base| + 2 max|Z|)
        for i in range(s):
            for h in range(s):
                if fabs(Z[i, h]) > slack:
                    slack = fabs(Z[i, h])
        slack = 16.0 * 2.220446049250313e-16 * slack

        for a in range(s):
            if full and not most:
                break
            i = order[a]
            zi = &Z[i, 0]
            for j in range(s - 1):
                if j == i:
                    continue
                zj = &Z[j, 0]
                base = zi[j] - zi[i]
                # filter: skip the pair when even the largest Z_ih - Z_jh cannot pass the
                # threshold (a branch-free loop that the compiler vectorises; violated cuts
                # are rare on most rows, so the collecting loop below seldom runs);
                # ``slack`` covers the rounding difference between base + (Z_ih - Z_jh)
                # and the exact test's (base + Z_ih) - Z_jh
                if base + pcsos_max_diff(zi, zj, j + 1, s) <= thr - slack:
                    continue
                for h in range(j + 1, s):
                    v = base + zi[h] - zj[h]
                    if v > thr and h != i:
                        seq += 1
                        if m < cap:
                            oi[m] = i
                            oj[m] = j
                            oh[m] = h
                            ov[m] = v
                            oq[m] = seq
                            m += 1
                            if most and m == cap:
                                # heapify once the buffer is full
                                for a2 in range(cap // 2 - 1, -1, -1):
                                    _heap_sift_down(&ov[0], &oq[0], &oi[0], &oj[0],
                                                    &oh[0], m, a2)
                            continue
                        if not most:
                            full = True
                            break
                        if not full:
                            # the first cut beyond the cap: from now on only cuts more
                            # violated than the least kept one can enter
                            full = True
                            thr = ov[0]
                            if not v > thr:
                                continue
                        ov[0] = v
                        oq[0] = seq
                        oi[0] = i
                        oj[0] = j
                        oh[0] = h
                        _heap_sift_down(&ov[0], &oq[0], &oi[0], &oj[0], &oh[0], m, 0)
                        thr = ov[0]
                if full and not most:
                    break
    return out_i[:m], out_j[:m], out_h[:m], out_v[:m], bool(full), out_q[:m]


def separate_cliques(const double[:, ::1] Z, Py_ssize_t q, double rhs, double eps):
    """Greedy clique cuts sum_{a<b in Q} Z_ab >= rhs with |Q| = q (q = k + 1).

    From every seed vertex v, Q starts as {v} and grows by the vertex u not in Q with the
    smallest added row sum sum_{p in Q} Z_pu (ties: smallest index) until |Q| = q. Q is
    reported when ``rhs - sum_{a<b in Q} Z_ab > eps``. Assumes Z symmetric. Returns
    ``(Q, violation)``: Q an (m, q) int64 array with sorted rows, distinct rows only (first
    occurrence by seed order), violation (m,).
    """
    cdef Py_ssize_t s = _square(Z), v, t, u, best_u, p
    if q < 2:
        raise ValueError("q = k + 1 must be >= 2")
    if q > s:
        return np.empty((0, q), dtype=np.int64), np.empty(0)
    Qs = np.empty((s, q), dtype=np.int64)
    vals = np.empty(s, dtype=np.float64)
    rowsum_arr = np.empty(s, dtype=np.float64)
    inq_arr = np.zeros(s, dtype=np.uint8)
    cdef cnp.int64_t[:, ::1] Qv = Qs
    cdef double[::1] val = vals, rs = rowsum_arr
    cdef unsigned char[::1] inq = inq_arr
    cdef double total, best
    cdef const double *zu
    with nogil:
        for v in range(s):
            for u in range(s):
                rs[u] = Z[v, u]
                inq[u] = 0
            inq[v] = 1
            Qv[v, 0] = v
            total = 0.0
            for t in range(1, q):
                best = INFINITY
                best_u = -1
                for u in range(s):
                    if not inq[u] and rs[u] < best:
                        best = rs[u]
                        best_u = u
                if best_u < 0:  # only NaN rows left: give up on this seed
                    total = INFINITY
                    break
                total += best
                inq[best_u] = 1
                Qv[v, t] = best_u
                zu = &Z[best_u, 0]
                for u in range(s):
                    rs[u] += zu[u]
            val[v] = rhs - total
    keep = vals > eps
    Qk = np.sort(Qs[keep], axis=1)
    vk = vals[keep]
    if len(vk) == 0:
        return Qk, vk
    _, first = np.unique(Qk, axis=0, return_index=True)
    first.sort()
    return np.ascontiguousarray(Qk[first]), vk[first]


def branching_scan(const double[:, ::1] Z, const double[:, ::1] G):
    """argmax_{i<j} min(Z_ij, G_ii + G_jj - 2 G_ij) given the Gram matrix G = Z Z^T.

    ``G_ii + G_jj - 2 G_ij`` is ||Z_i. - Z_j.||^2 evaluated left to right in exactly that
    order. Reads the upper triangle of Z and of G and the diagonal of G. Ties go to the
    first pair in row-major order. Returns ``(i, j, score)``; ``(-1, -1, -inf)`` when s < 2.
    """
    cdef Py_ssize_t s = _square(Z), i, j, bi = -1, bj = -1
    if G.shape[0] != s or G.shape[1] != s:
        raise ValueError("G must have the shape of Z")
    cdef double best = -INFINITY, d, v, gii
    with nogil:
        for i in range(s):
            gii = G[i, i]
            for j in range(i + 1, s):
                d = gii + G[j, j] - 2.0 * G[i, j]
                v = Z[i, j]
                if d < v:
                    v = d
                if v > best:
                    best = v
                    bi = i
                    bj = j
    return bi, bj, best


def branching_direct(const double[:, ::1] Z):
    """argmax_{i<j} min(Z_ij, ||Z_i. - Z_j.||^2), distances summed directly (O(s^3)).

    Same conventions as :func:`branching_scan` (assumes Z symmetric: reads rows).
    """
    cdef Py_ssize_t s = _square(Z), i, j, h, bi = -1, bj = -1
    cdef double best = -INFINITY, d, v, t
    cdef const double *zi
    cdef const double *zj
    with nogil:
        for i in range(s):
            zi = &Z[i, 0]
            for j in range(i + 1, s):
                v = zi[j]
                if v <= best:  # min(Z_ij, .) cannot beat the best: skip the distance
                    continue
                zj = &Z[j, 0]
                d = 0.0
                for h in range(s):
                    t = zi[h] - zj[h]
                    d += t * t
                if d < v:
                    v = d
                if v > best:
                    best = v
                    bi = i
                    bj = j
    return bi, bj, best
