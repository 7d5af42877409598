# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Kernels of the exact pricing of the set-partitioning LP (pcsos.bounds.colgen.pricing).

The search over boxes of the centre y evaluates two things per box, many thousand times per
pricing, on a few hundred candidates: a lower bound of sum_i min(0, g_i(y)) over the box
(:func:`box_lower`) and the cluster at the box's centre (:func:`centre_cluster`). The maths
and the rounding margins are those of the module docs there and of docs/safe_bound.md; here
they are plain C loops over the candidates.

Shared conventions: ``m`` is the (s, d) C-contiguous array of super-point means, ``e`` the
masses, ``base`` within_i - pi_i; cannot-link pairs come as a symmetric adjacency in CSR form
(``cl_ptr``, ``cl_idx``) over the super-points; ``work`` is an int64 scratch array of length
s, every entry -1 on entry and on return.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport free, malloc

cnp.import_array()

cdef double EPS = np.finfo(np.float64).eps


cdef inline double _dmax(double a, double b) nogil:
    return a if a > b else b


cdef inline double _clip(double v, double a, double b) nogil:
    return a if v < a else (b if v > b else v)


#: calls one component's independent-set search may make before the box falls back to the
#: matching bound for it (trees take one call per vertex; a cycle adds a branch)
MWIS_BUDGET = 1 << 14
#: components of the cannot-link graph up to this many points are searched exactly (masks)
MWIS_MAX = 62


cdef inline int _popcount(unsigned long long x) nogil:
    cdef int c = 0
    while x:
        x &= x - 1
        c += 1
    return c


cdef double _mwis(unsigned long long mask, const unsigned long long *adj, const double *w,
                  unsigned long long *chosen, long long *budget) nogil:
    """The least sum of ``w`` (all negative) over the independent sets of the graph ``adj``
    (neighbour masks) inside ``mask``, its set in ``chosen``. A point of no neighbour is
    taken; a point of one neighbour at least as negative as it is taken (a set holding the
    neighbour does no worse with the point instead); else the search branches on a point of
    most neighbours. ``budget`` counts the calls down; below zero the result is void."""
    cdef unsigned long long rest = mask, bit, take = 0, ca = 0, cb = 0
    cdef double val = 0.0, va, vb
    cdef int v, dmax, deg, vmax, u
    while True:
        budget[0] -= 1
        if budget[0] < 0 or rest == 0:
            chosen[0] = take
            return val
        dmax = -1
        vmax = -1
        v = 0
        bit = rest
        u = -1
        while bit:
            while not (bit >> v) & 1:
                v += 1
            deg = _popcount(adj[v] & rest)
            if deg == 0:
                u = v
                break
            if deg == 1:
                u = 0
                while not ((adj[v] & rest) >> u) & 1:
                    u += 1
                if w[v] <= w[u]:
                    u = v
                    break
                u = -1
            if deg > dmax:
                dmax = deg
                vmax = v
            bit &= ~(1ULL << v)
            v += 1
        if u >= 0:
            val += w[u]
            take |= 1ULL << u
            rest &= ~((1ULL << u) | adj[u])
            continue
        va = w[vmax] + _mwis(rest & ~((1ULL << vmax) | adj[vmax]), adj, w, &ca, budget)
        vb = _mwis(rest & ~(1ULL << vmax), adj, w, &cb, budget)
        if va <= vb:
            chosen[0] = take | ca | (1ULL << vmax)
            return val + va
        chosen[0] = take | cb
        return val + vb


def box_lower(const double[:, ::1] m, const double[::1] e, const double[::1] base,
              const double[::1] mag, const double[::1] pi, const cnp.int64_t[::1] cand,
              const double[::1] lo, const double[::1] hi, const cnp.int64_t[::1] cl_ptr,
              const cnp.int64_t[::1] cl_idx, int exact_crossing, cnp.int64_t[::1] work):
    """``(bound, keep, members)``: a lower bound of sum_i min(0, g_i(y)) over the box
    [lo, hi] among clusters that obey the cannot-link pairs, the candidates of ``cand``
    whose disk g_i < 0 meets the box (in ``cand``'s order), and the set that attains the
    bound where it is exact (sorted; else None). See ``pricing._box_lower``."""
    cdef Py_ssize_t nc = cand.shape[0], d = m.shape[1]
    cdef Py_ssize_t j, a, h, p, nk = 0, npairs = 0, u = 0, idx, i, S, nsub, best_s = 0
    cdef double x, nl, f, dist2, far2, t, A = 0.0, c = 0.0, scale = 0.0, value, val
    cdef double At, ct, yy, by, ya, best_val = 0.0
    cdef cnp.int64_t nb
    keep_arr = np.empty(nc, dtype=np.int64)
    cdef cnp.int64_t[::1] keep = keep_arr
    cdef double *tk = <double *> malloc((nc + 1) * sizeof(double))
    cdef double *fk = <double *> malloc((nc + 1) * sizeof(double))
    cdef char *sure = <char *> malloc((nc + 1) * sizeof(char))
    cdef double *b = <double *> malloc(d * sizeof(double))
    cdef double *bt = <double *> malloc(d * sizeof(double))
    cdef Py_ssize_t *other = <Py_ssize_t *> malloc((nc + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *pa = NULL
    cdef Py_ssize_t *pb = NULL
    cdef long long *pmask = NULL
    cdef Py_ssize_t *opos = NULL
    members = None
    try:
        for idx in range(nc):
            i = cand[idx]
            dist2 = 0.0
            far2 = 0.0
            for a in range(d):
                x = m[i, a]
                nl = _dmax(lo[a] - x, 0.0) + _dmax(x - hi[a], 0.0)
                dist2 += nl * nl
                f = _dmax(fabs(x - lo[a]), fabs(x - hi[a]))
                far2 += f * f
            t = e[i] * dist2 + base[i]
            if t < 0:
                keep[nk] = i
                tk[nk] = t
                fk[nk] = far2
                sure[nk] = e[i] * far2 + base[i] < 0
                nk += 1
        # the cannot-link pairs inside keep: neither end is sure to be in the cluster
        for j in range(nk):
            work[keep[j]] = j
        for j in range(nk):
            i = keep[j]
            for p in range(cl_ptr[i], cl_ptr[i + 1]):
                nb = cl_idx[p]
                if nb > i and work[nb] >= 0:
                    npairs += 1
        if npairs:
            pa = <Py_ssize_t *> malloc(npairs * sizeof(Py_ssize_t))
            pb = <Py_ssize_t *> malloc(npairs * sizeof(Py_ssize_t))
            npairs = 0
            for j in range(nk):
                i = keep[j]
                for p in range(cl_ptr[i], cl_ptr[i + 1]):
                    nb = cl_idx[p]
                    if nb > i and work[nb] >= 0:
                        pa[npairs] = j
                        pb[npairs] = work[nb]
                        sure[j] = 0
                        sure[work[nb]] = 0
                        npairs += 1
        for j in range(nk):
            work[keep[j]] = -1
        for a in range(d):
            b[a] = 0.0
        for j in range(nk):
            i = keep[j]
            scale += 3.0 * mag[i] + 2.0 * e[i] * fk[j] + fabs(pi[i])
            if sure[j]:
                A += e[i]
                yy = 0.0
                for a in range(d):
                    b[a] += e[i] * m[i, a]
                    yy += m[i, a] * m[i, a]
                c += e[i] * yy + base[i]
            else:
                other[u] = j
                u += 1
        if u <= exact_crossing:
            # every subset of the other points that obeys the pairs, one quadratic each
            opos = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
            pmask = <long long *> malloc((npairs + 1) * sizeof(long long))
            for h in range(u):
                opos[other[h]] = h
            for p in range(npairs):
                pmask[p] = (1LL << opos[pa[p]]) | (1LL << opos[pb[p]])
            nsub = 1 << u
            best_val = 0.0
            best_s = -1
            for S in range(nsub):
                for p in range(npairs):
                    if (S & pmask[p]) == pmask[p]:
                        break
                else:
                    At = A
                    ct = c
                    for a in range(d):
                        bt[a] = b[a]
                    for h in range(u):
                        if (S >> h) & 1:
                            i = keep[other[h]]
                            yy = 0.0
                            for a in range(d):
                                bt[a] += e[i] * m[i, a]
                                yy += m[i, a] * m[i, a]
                            At += e[i]
                            ct += e[i] * yy + base[i]
                    yy = 0.0
                    by = 0.0
                    for a in range(d):
                        ya = _clip(bt[a] / At if At > 0 else bt[a], lo[a], hi[a])
                        yy += ya * ya
                        by += bt[a] * ya
                    val = At * yy - 2.0 * by + ct
                    if best_s < 0 or val < best_val:
                        best_val = val
                        best_s = S
            value = best_val
            mem = [keep[j] for j in range(nk) if sure[j]]
            mem += [keep[other[h]] for h in range(u) if (best_s >> h) & 1]
            members = np.sort(np.asarray(mem, dtype=np.int64))
        else:
            value = c
            if A > 0:
                yy = 0.0
                by = 0.0
                for a in range(d):
                    ya = _clip(b[a] / A, lo[a], hi[a])
                    yy += ya * ya
                    by += b[a] * ya
                value = A * yy - 2.0 * by + c
            if npairs:
                value, members = _pairs_lower(value, keep, nk, tk, sure, other, u, pa, pb,
                                              npairs)
                if d <= CORNERS_MAX_D:
                    value = _dmax(value, _corner_lower(m, e, base, keep, nk, lo, hi, pa, pb,
                                                       npairs))
            else:
                for h in range(u):
                    value += tk[other[h]]
        value -= 4.0 * (d + 4 + nk) * EPS * scale
        return value, keep_arr[:nk].copy(), members
    finally:
        free(tk)
        free(fk)
        free(sure)
        free(b)
        free(bt)
        free(other)
        free(pa)
        free(pb)
        free(pmask)
        free(opos)


cdef _pairs_lower(double value, const cnp.int64_t[::1] keep, Py_ssize_t nk, double *tk,
                  const char *sure, const Py_ssize_t *other, Py_ssize_t u,
                  const Py_ssize_t *pa, const Py_ssize_t *pb, Py_ssize_t npairs):
    """``value`` plus the least sum of the terms ``tk`` of the other points (``other``) over
    the sets that obey the cannot-link pairs (``pa``, ``pb``, indices into ``keep``), and
    that set with the sure points: (bound, members, or None where a component of the pairs'
    graph was bounded by a matching).

    Each connected component of the graph is searched exactly (:func:`_mwis`) up to
    ``MWIS_MAX`` points and ``MWIS_BUDGET`` calls; a larger one takes a matching of its
    pairs, largest saving first, of which only the more negative end of each counts (any
    matching bounds the best set obeying all the pairs). As the box shrinks each term tends
    to its value at a point, so the exact search makes the bound tend to the constrained
    minimum there, which a matching alone does not where a point has two partners."""
    cdef Py_ssize_t h, j, p, r, c, ncomp = 0, a, b
    cdef long long budget, budget0 = MWIS_BUDGET
    cdef Py_ssize_t cap = min(int(MWIS_MAX), 62)  # the masks' width
    cdef unsigned long long got
    cdef double t
    cdef Py_ssize_t *parent = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *cid = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *loc = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *size = <Py_ssize_t *> malloc((u + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *start = <Py_ssize_t *> malloc((u + 2) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *pts = <Py_ssize_t *> malloc((u + 1) * sizeof(Py_ssize_t))
    cdef unsigned long long *adj = <unsigned long long *> malloc(
        (u + 1) * sizeof(unsigned long long))
    cdef double *w = <double *> malloc((u + 1) * sizeof(double))
    cdef char *inset = <char *> malloc((nk + 1) * sizeof(char))
    cdef char *matched = <char *> malloc((nk + 1) * sizeof(char))
    cdef char *exact = <char *> malloc((u + 1) * sizeof(char))
    cdef bint whole = True
    try:
        for j in range(nk):
            parent[j] = j
            inset[j] = sure[j]
            matched[j] = 0
        for p in range(npairs):
            a = pa[p]
            while parent[a] != a:
                a = parent[a]
            b = pb[p]
            while parent[b] != b:
                b = parent[b]
            if a != b:
                parent[a] = b
        for j in range(nk):
            cid[j] = -1
        for h in range(u):
            j = other[h]
            r = j
            while parent[r] != r:
                r = parent[r]
            parent[j] = r
            if cid[r] < 0:
                cid[r] = ncomp
                size[ncomp] = 0
                ncomp += 1
            cid[j] = cid[r]
            loc[j] = size[cid[j]]
            size[cid[j]] += 1
        start[0] = 0
        for c in range(ncomp):
            start[c + 1] = start[c] + size[c]
        for h in range(u):
            j = other[h]
            pts[start[cid[j]] + loc[j]] = j
            adj[start[cid[j]] + loc[j]] = 0
            w[start[cid[j]] + loc[j]] = tk[j]
        for p in range(npairs):
            c = cid[pa[p]]
            if size[c] <= cap:
                adj[start[c] + loc[pa[p]]] |= 1ULL << loc[pb[p]]
                adj[start[c] + loc[pb[p]]] |= 1ULL << loc[pa[p]]
        for c in range(ncomp):
            exact[c] = 0
            if size[c] <= cap:
                budget = budget0
                got = 0
                t = _mwis((~0ULL) >> (64 - size[c]), adj + start[c], w + start[c], &got,
                          &budget)
                if budget >= 0:
                    exact[c] = 1
                    value += t
                    for r in range(size[c]):
                        if (got >> r) & 1:
                            inset[pts[start[c] + r]] = 1
            if not exact[c]:
                whole = False
                for r in range(size[c]):
                    value += tk[pts[start[c] + r]]
        if not whole:
            # a matching of the pairs of the components searched in vain, largest saving
            # first: of each matched pair the less negative end's term comes back off
            order = sorted((p for p in range(npairs) if not exact[cid[pa[p]]]),
                           key=lambda q: -_dmax(tk[pa[q]], tk[pb[q]]))
            for p in order:
                if not matched[pa[p]] and not matched[pb[p]]:
                    matched[pa[p]] = 1
                    matched[pb[p]] = 1
                    value -= _dmax(tk[pa[p]], tk[pb[p]])
            return value, None
        return value, np.asarray([keep[j] for j in range(nk) if inset[j]], dtype=np.int64)
    finally:
        free(parent)
        free(cid)
        free(loc)
        free(size)
        free(start)
        free(pts)
        free(adj)
        free(w)
        free(inset)
        free(matched)
        free(exact)


#: the box bound with cannot-link pairs also bounds at the box's 2^d corners up to this d
CORNERS_MAX_D = 3


cdef double _corner_lower(const double[:, ::1] m, const double[::1] e, const double[::1] base,
                          const cnp.int64_t[::1] keep, Py_ssize_t nk, const double[::1] lo,
                          const double[::1] hi, const Py_ssize_t *pa, const Py_ssize_t *pb,
                          Py_ssize_t npairs):
    """A second lower bound of the least sum of g_i over the box among the sets of ``keep``
    that obey the pairs: for a set T, g_T(y) - e_T ||y - y0||^2 is affine in y (y0 the
    box's centre), so it is least at a corner v, where ||v - y0||^2 is the half diagonal's
    square r^2; as g_T is at least that, the least over the corners of the least sum of
    min(0, g_i(v) - e_i r^2) over the sets obeying the pairs (:func:`_pairs_lower`) bounds
    it. It is off by O(r^2) near the minimum where the points' least values are off by
    O(r), so a search that needs small boxes closes in far fewer."""
    cdef Py_ssize_t d = m.shape[1], a, j, i, corner
    cdef double r2 = 0.0, h, dist, t, val, best = INFINITY
    cdef double *tc = <double *> malloc((nk + 1) * sizeof(double))
    cdef char *none = <char *> malloc((nk + 1) * sizeof(char))
    cdef Py_ssize_t *every = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    try:
        for a in range(d):
            h = 0.5 * (hi[a] - lo[a])
            r2 += h * h
        for j in range(nk):
            none[j] = 0
            every[j] = j
        for corner in range(1 << d):
            for j in range(nk):
                i = keep[j]
                dist = 0.0
                for a in range(d):
                    h = m[i, a] - (hi[a] if (corner >> a) & 1 else lo[a])
                    dist += h * h
                t = e[i] * (dist - r2) + base[i]
                tc[j] = t if t < 0 else 0.0
            val = _pairs_lower(0.0, keep, nk, tc, none, every, nk, pa, pb, npairs)[0]
            if val < best:
                best = val
        return best
    finally:
        free(tc)
        free(none)
        free(every)


def centre_cluster(const double[:, ::1] m, const double[::1] e, const double[::1] base,
                   const double[::1] q, const double[::1] pi, const cnp.int64_t[::1] cand,
                   const double[::1] y, const cnp.int64_t[::1] cl_ptr,
                   const cnp.int64_t[::1] cl_idx, cnp.int64_t[::1] work):
    """``(rc, members)``: the cluster of the candidates with g_i(y) < 0, cannot-link pairs
    repaired (of each violated pair the member of larger g_i leaves, the most negative
    terms staying first), and its reduced cost sum q_i - ||sum e_i m_i||^2 / sum e_i -
    sum pi_i (0.0 with no member). ``members`` is sorted."""
    cdef Py_ssize_t nc = cand.shape[0], d = m.shape[1], idx, i, a, j, p, nk = 0
    cdef double g, diff
    gs = np.empty(nc, dtype=np.float64)
    ids = np.empty(nc, dtype=np.int64)
    cdef double[::1] gv = gs
    cdef cnp.int64_t[::1] iv = ids
    for idx in range(nc):
        i = cand[idx]
        g = 0.0
        for a in range(d):
            diff = m[i, a] - y[a]
            g += diff * diff
        g = e[i] * g + base[i]
        if g < 0:
            gv[nk] = g
            iv[nk] = i
            nk += 1
    if nk == 0:
        return 0.0, np.empty(0, dtype=np.int64)
    mem = ids[:nk]
    if cl_idx.shape[0]:
        order = np.argsort(gs[:nk], kind="stable")
        for j in range(nk):
            work[iv[j]] = 1
        for j in order:
            i = iv[j]
            if work[i] == 1:
                for p in range(cl_ptr[i], cl_ptr[i + 1]):
                    if work[cl_idx[p]] == 1:
                        work[cl_idx[p]] = 0
        mem = np.asarray([iv[j] for j in range(nk) if work[iv[j]] == 1], dtype=np.int64)
        for j in range(nk):
            work[iv[j]] = -1
    return cluster_rc(m, e, q, pi, mem), mem


def cluster_rc(const double[:, ::1] m, const double[::1] e, const double[::1] q,
               const double[::1] pi, const cnp.int64_t[::1] members):
    """The reduced cost sum q_i - ||sum e_i m_i||^2 / sum e_i - sum pi_i of the cluster
    ``members`` (non-empty), in plain sums (the callers' margins cover their rounding)."""
    cdef Py_ssize_t d = m.shape[1], j, i, a
    cdef double E = 0.0, Q = 0.0, P = 0.0, ww = 0.0
    cdef double *W = <double *> malloc(d * sizeof(double))
    try:
        for a in range(d):
            W[a] = 0.0
        for j in range(members.shape[0]):
            i = members[j]
            E += e[i]
            Q += q[i]
            P += pi[i]
            for a in range(d):
                W[a] += e[i] * m[i, a]
        for a in range(d):
            ww += W[a] * W[a]
        return Q - ww / E - P
    finally:
        free(W)
