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
from libc.math cimport INFINITY, NAN, fabs, sqrt
from libc.stdlib cimport free, malloc, qsort, realloc

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


cdef struct Comps:
    # the connected components of the cannot-link pairs' graph among some points of a box
    # (indices into its keep), laid out by position: component c holds the positions
    # start[c] .. start[c + 1] - 1, position q is the point pts[q], adj[q] its neighbours'
    # bits within its component (for components of at most cap points)
    Py_ssize_t ncomp
    Py_ssize_t cap
    long long budget
    Py_ssize_t *cid
    Py_ssize_t *loc
    Py_ssize_t *size
    Py_ssize_t *start
    Py_ssize_t *pts
    unsigned long long *adj
    double *w
    char *exact
    char *matched


cdef void _comps_free(Comps *g):
    free(g.cid)
    free(g.loc)
    free(g.size)
    free(g.start)
    free(g.pts)
    free(g.adj)
    free(g.w)
    free(g.exact)
    free(g.matched)


cdef void _comps_build(Comps *g, Py_ssize_t nk, const Py_ssize_t *other, Py_ssize_t u,
                       const Py_ssize_t *pa, const Py_ssize_t *pb, Py_ssize_t npairs):
    """The components of the pairs (``pa``, ``pb``) among the points ``other`` (u of the nk
    of keep; every pair's ends among them), by union-find. Free with :func:`_comps_free`."""
    cdef Py_ssize_t h, j, p, r, c, a, b
    cdef Py_ssize_t *parent = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    g.ncomp = 0
    g.cap = min(int(MWIS_MAX), 62)  # the masks' width
    g.budget = MWIS_BUDGET
    g.cid = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    g.loc = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    g.size = <Py_ssize_t *> malloc((u + 1) * sizeof(Py_ssize_t))
    g.start = <Py_ssize_t *> malloc((u + 2) * sizeof(Py_ssize_t))
    g.pts = <Py_ssize_t *> malloc((u + 1) * sizeof(Py_ssize_t))
    g.adj = <unsigned long long *> malloc((u + 1) * sizeof(unsigned long long))
    g.w = <double *> malloc((u + 1) * sizeof(double))
    g.exact = <char *> malloc((u + 1) * sizeof(char))
    g.matched = <char *> malloc((nk + 1) * sizeof(char))
    try:
        for j in range(nk):
            parent[j] = j
            g.cid[j] = -1
        for p in range(npairs):
            a = pa[p]
            while parent[a] != a:
                a = parent[a]
            b = pb[p]
            while parent[b] != b:
                b = parent[b]
            if a != b:
                parent[a] = b
        for h in range(u):
            j = other[h]
            r = j
            while parent[r] != r:
                r = parent[r]
            parent[j] = r
            if g.cid[r] < 0:
                g.cid[r] = g.ncomp
                g.size[g.ncomp] = 0
                g.ncomp += 1
            g.cid[j] = g.cid[r]
            g.loc[j] = g.size[g.cid[j]]
            g.size[g.cid[j]] += 1
        g.start[0] = 0
        for c in range(g.ncomp):
            g.start[c + 1] = g.start[c] + g.size[c]
        for h in range(u):
            j = other[h]
            g.pts[g.start[g.cid[j]] + g.loc[j]] = j
            g.adj[g.start[g.cid[j]] + g.loc[j]] = 0
        for p in range(npairs):
            c = g.cid[pa[p]]
            if g.size[c] <= g.cap:
                g.adj[g.start[c] + g.loc[pa[p]]] |= 1ULL << g.loc[pb[p]]
                g.adj[g.start[c] + g.loc[pb[p]]] |= 1ULL << g.loc[pa[p]]
    finally:
        free(parent)


cdef double _comps_lower(Comps *g, Py_ssize_t nk, const double *tk, const Py_ssize_t *pa,
                         const Py_ssize_t *pb, Py_ssize_t npairs, char *inset,
                         bint *whole) except? -1e308:
    """The least sum of the terms ``tk`` (each <= 0; indexed as keep) of the components'
    points over the sets that obey the pairs; ``whole`` says whether every component was
    searched exactly, and then the points of the set found are marked in ``inset`` (where
    given).

    Each component is searched exactly (:func:`_mwis`) up to ``MWIS_MAX`` points and
    ``MWIS_BUDGET`` calls, among its points of negative term (one of term 0 never lowers a
    sum); a larger one takes a matching of its pairs, largest saving first, of which only
    the more negative end of each matched pair counts (any matching bounds the best set
    obeying all the pairs). As the box shrinks each term tends to its value at a point, so
    the exact search makes the bound tend to the constrained minimum there, which a
    matching alone does not where a point has two partners."""
    cdef Py_ssize_t c, q, r, p, j
    cdef long long budget
    cdef unsigned long long got, mask
    cdef double value = 0.0, t
    whole[0] = True
    for c in range(g.ncomp):
        g.exact[c] = 0
        if g.size[c] <= g.cap:
            mask = 0
            for r in range(g.size[c]):
                q = g.start[c] + r
                g.w[q] = tk[g.pts[q]]
                if g.w[q] < 0:
                    mask |= 1ULL << r
            budget = g.budget
            got = 0
            t = _mwis(mask, g.adj + g.start[c], g.w + g.start[c], &got, &budget)
            if budget >= 0:
                g.exact[c] = 1
                value += t
                if inset != NULL:
                    for r in range(g.size[c]):
                        if (got >> r) & 1:
                            inset[g.pts[g.start[c] + r]] = 1
        if not g.exact[c]:
            whole[0] = False
            for r in range(g.size[c]):
                value += tk[g.pts[g.start[c] + r]]
    if not whole[0]:
        # a matching of the pairs of the components searched in vain, largest saving
        # first: of each matched pair the less negative end's term comes back off
        for j in range(nk):
            g.matched[j] = 0
        order = sorted((p for p in range(npairs) if not g.exact[g.cid[pa[p]]]),
                       key=lambda q: -_dmax(tk[pa[q]], tk[pb[q]]))
        for p in order:
            if not g.matched[pa[p]] and not g.matched[pb[p]]:
                g.matched[pa[p]] = 1
                g.matched[pb[p]] = 1
                value -= _dmax(tk[pa[p]], tk[pb[p]])
    return value


cdef _pairs_lower(double value, const cnp.int64_t[::1] keep, Py_ssize_t nk, double *tk,
                  const char *sure, const Py_ssize_t *other, Py_ssize_t u,
                  const Py_ssize_t *pa, const Py_ssize_t *pb, Py_ssize_t npairs):
    """``value`` plus the least sum of the terms ``tk`` of the other points (``other``) over
    the sets that obey the cannot-link pairs (``pa``, ``pb``, indices into ``keep``), and
    that set with the sure points: (bound, members, or None where a component of the pairs'
    graph was bounded by a matching). See :func:`_comps_lower`."""
    cdef Py_ssize_t j
    cdef bint whole
    cdef Comps g
    cdef char *inset = <char *> malloc((nk + 1) * sizeof(char))
    _comps_build(&g, nk, other, u, pa, pb, npairs)
    try:
        for j in range(nk):
            inset[j] = 0
        value += _comps_lower(&g, nk, tk, pa, pb, npairs, inset, &whole)
        if not whole:
            return value, None
        return value, np.asarray([keep[j] for j in range(nk) if inset[j] or sure[j]],
                                 dtype=np.int64)
    finally:
        _comps_free(&g)
        free(inset)


#: the box bound with cannot-link pairs also bounds at the box's 2^d corners up to this d
CORNERS_MAX_D = 3


cdef double _corner_lower(const double[:, ::1] m, const double[::1] e, const double[::1] base,
                          const cnp.int64_t[::1] keep, Py_ssize_t nk, const double[::1] lo,
                          const double[::1] hi, const Py_ssize_t *pa, const Py_ssize_t *pb,
                          Py_ssize_t npairs) except? -1e308:
    """A second lower bound of the least sum of g_i over the box among the sets of ``keep``
    that obey the pairs: for a set T, g_T(y) - e_T ||y - y0||^2 is affine in y (y0 the
    box's centre), so it is least at a corner v, where ||v - y0||^2 is the half diagonal's
    square r^2; as g_T is at least that, the least over the corners of the least sum of
    min(0, g_i(v) - e_i r^2) over the sets obeying the pairs (:func:`_comps_lower`) bounds
    it. It is off by O(r^2) near the minimum where the points' least values are off by
    O(r), so a search that needs small boxes closes in far fewer. The pairs' components
    are the same at every corner: built once."""
    cdef Py_ssize_t d = m.shape[1], a, j, i, corner
    cdef double r2 = 0.0, h, dist, t, val, best = INFINITY
    cdef bint whole
    cdef double *tc = <double *> malloc((nk + 1) * sizeof(double))
    cdef Py_ssize_t *every = <Py_ssize_t *> malloc((nk + 1) * sizeof(Py_ssize_t))
    cdef Comps g
    for j in range(nk):
        every[j] = j
    _comps_build(&g, nk, every, nk, pa, pb, npairs)
    try:
        for a in range(d):
            h = 0.5 * (hi[a] - lo[a])
            r2 += h * h
        for corner in range(1 << d):
            for j in range(nk):
                i = keep[j]
                dist = 0.0
                for a in range(d):
                    h = m[i, a] - (hi[a] if (corner >> a) & 1 else lo[a])
                    dist += h * h
                t = e[i] * (dist - r2) + base[i]
                tc[j] = t if t < 0 else 0.0
            val = _comps_lower(&g, nk, tc, pa, pb, npairs, NULL, &whole)
            if val < best:
                best = val
        return best
    finally:
        _comps_free(&g)
        free(tc)
        free(every)


cdef inline double _g_at(const double[:, ::1] m, const double[::1] e, const double[::1] base,
                         Py_ssize_t i, const double[::1] y) noexcept nogil:
    """g_i(y) = e_i ||m_i - y||^2 + base_i."""
    cdef Py_ssize_t a
    cdef double g = 0.0, diff
    for a in range(m.shape[1]):
        diff = m[i, a] - y[a]
        g += diff * diff
    return e[i] * g + base[i]


def centre_cluster(const double[:, ::1] m, const double[::1] e, const double[::1] base,
                   const double[::1] q, const double[::1] pi, const cnp.int64_t[::1] cand,
                   const double[::1] y, const cnp.int64_t[::1] cl_ptr,
                   const cnp.int64_t[::1] cl_idx, cnp.int64_t[::1] work):
    """``(rc, members)``: the cluster of the candidates with g_i(y) < 0, cannot-link pairs
    repaired (of each violated pair the member of larger g_i leaves, the most negative
    terms staying first), and its reduced cost sum q_i - ||sum e_i m_i||^2 / sum e_i -
    sum pi_i (0.0 with no member). ``members`` is sorted."""
    cdef Py_ssize_t nc = cand.shape[0], idx, i, nk = 0
    cdef double g
    gs = np.empty(nc, dtype=np.float64)
    ids = np.empty(nc, dtype=np.int64)
    cdef double[::1] gv = gs
    cdef cnp.int64_t[::1] iv = ids
    for idx in range(nc):
        i = cand[idx]
        g = _g_at(m, e, base, i, y)
        if g < 0:
            gv[nk] = g
            iv[nk] = i
            nk += 1
    if nk == 0:
        return 0.0, np.empty(0, dtype=np.int64)
    mem = ids[:nk]
    if cl_idx.shape[0]:
        mem = repair(m, e, base, mem, y, cl_ptr, cl_idx, work)
    return cluster_rc(m, e, q, pi, mem), mem


def repair(const double[:, ::1] m, const double[::1] e, const double[::1] base,
           const cnp.int64_t[::1] col, const double[::1] y, const cnp.int64_t[::1] cl_ptr,
           const cnp.int64_t[::1] cl_idx, cnp.int64_t[::1] work):
    """The members of ``col`` (distinct) left when, of each cannot-link pair inside, the one
    of larger g_i(y) = e_i ||m_i - y||^2 + base_i leaves, the most negative terms staying
    first (ties: ``col``'s order); in ``col``'s order."""
    cdef Py_ssize_t nc = col.shape[0], j, i, p, nk = 0
    out = np.empty(nc, dtype=np.int64)
    cdef cnp.int64_t[::1] ov = out
    gs = np.empty(nc, dtype=np.float64)
    cdef double[::1] gv = gs
    for j in range(nc):
        gv[j] = _g_at(m, e, base, col[j], y)
    order = np.argsort(gs, kind="stable")
    cdef cnp.int64_t[::1] rank = order
    for j in range(nc):
        work[col[j]] = 1
    for j in range(nc):
        i = col[rank[j]]
        if work[i] == 1:
            for p in range(cl_ptr[i], cl_ptr[i + 1]):
                if work[cl_idx[p]] == 1:
                    work[cl_idx[p]] = 0
    for j in range(nc):
        if work[col[j]] == 1:
            ov[nk] = col[j]
            nk += 1
    for j in range(nc):
        work[col[j]] = -1
    return out[:nk]


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


# --- the sized pricing's search (pricing.price_sized) ------------------------------------

cdef struct Ratio:
    double r
    double v
    cnp.int64_t c


cdef int _cmp_double(const void *a, const void *b) noexcept nogil:
    cdef double x = (<const double *> a)[0]
    cdef double y = (<const double *> b)[0]
    return (x > y) - (x < y)


cdef int _cmp_ratio(const void *a, const void *b) noexcept nogil:
    cdef double x = (<const Ratio *> a).r
    cdef double y = (<const Ratio *> b).r
    return (x > y) - (x < y)


cdef double _sum_smallest(double *v, Py_ssize_t n, Py_ssize_t t) noexcept nogil:
    """The sum of the ``t`` smallest of v[0:n] (0 < t < n; v is reordered): a quickselect
    that leaves them in v[0:t]."""
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, k = t - 1
    cdef double pivot, tmp, total = 0.0
    while lo < hi:
        pivot = v[(lo + hi) >> 1]
        i = lo
        j = hi
        while i <= j:
            while v[i] < pivot:
                i += 1
            while v[j] > pivot:
                j -= 1
            if i <= j:
                tmp = v[i]
                v[i] = v[j]
                v[j] = tmp
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    for i in range(t):
        total += v[i]
    return total


cdef double _sum_smallest_near(double *v, Py_ssize_t n, Py_ssize_t t, double hint,
                               double *kth) noexcept nogil:
    """:func:`_sum_smallest` (0 < t < n), its first pivot the value ``hint`` (a guess of the
    t-th smallest, e.g. a neighbouring box's: then one side of that first split is small;
    NaN: none); ``kth`` gets the t-th smallest, the hint of the next."""
    cdef Py_ssize_t i = 0, j = n - 1, c
    cdef double tmp, total = 0.0, top = -INFINITY
    if hint == hint:
        while True:
            while i <= j and v[i] <= hint:
                i += 1
            while i <= j and v[j] > hint:
                j -= 1
            if i >= j:
                break
            tmp = v[i]
            v[i] = v[j]
            v[j] = tmp
            i += 1
            j -= 1
        c = i  # v[0:c] <= hint < v[c:n]
        if c > t:
            _sum_smallest(v, c, t)
        elif c < t:
            if t - c < n - c:
                _sum_smallest(v + c, n - c, t - c)
    else:
        _sum_smallest(v, n, t)
    for i in range(t):
        total += v[i]
        if v[i] > top:
            top = v[i]
    kth[0] = top
    return total


cdef struct Knap:
    # the items of one point outside every group (unit), and the groups: each offers options
    # (sets of items, at most one taken), the items of several points one option each, a
    # component of the cannot-link pairs one per non-empty set that obeys them
    Py_ssize_t nunit
    Py_ssize_t ngroups
    const cnp.int64_t *unit
    const cnp.int64_t *gptr    # ngroups + 1: the options of group g, gptr[g]..gptr[g + 1]
    const cnp.int64_t *ocnt    # per option: its points
    const cnp.int64_t *optr    # per option + 1: its items, omem[optr[o]]..omem[optr[o + 1]]
    const cnp.int64_t *omem
    const double *oadd         # per option: a constant it adds (>= 0; NULL: none)
    Py_ssize_t nitems          # every item, for the fractional knapsack
    cnp.int64_t total          # their points
    const cnp.int64_t *cnt
    cnp.int64_t lo
    cnp.int64_t hi
    bint dp                    # the groups go through a table over counts 0..hi
    double *ubuf               # nunit + 1
    double *prefix             # nunit + 1
    double *table              # hi + 1
    double *obuf               # per option: its value in the last knapsack (dp only)
    Py_ssize_t *units          # hi + 1: the unit items that complete each count (-1: none)
    Ratio *rbuf                # nitems + 1
    double hint                # a guess of the unit items' t-th smallest (NaN: none)
    double kth                 # the last unit selection's t-th smallest (0: none; NaN at first)


cdef inline Py_ssize_t _unit_count(Knap *K, Py_ssize_t c, Py_ssize_t neg) noexcept nogil:
    """How many unit items complete c points of the groups best: the ``neg`` negative ones,
    clipped to [lo - c, hi - c] and to their number; -1 where no count does."""
    cdef Py_ssize_t a = K.lo - c if K.lo > c else 0
    cdef Py_ssize_t b = K.hi - c
    if b > K.nunit:
        b = K.nunit
    if a > b:
        return -1
    return a if neg < a else (b if neg > b else neg)


cdef double _knap(Knap *K, const double *v, bint *exact, cnp.int32_t *choice=NULL,
                  Py_ssize_t *at=NULL) noexcept nogil:
    """min sum_i v_i z_i (plus the constant of each option taken) over z in {0, 1}^s with
    lo <= sum_i cnt_i z_i <= hi, at most one option of each group taken (INFINITY if no z),
    exactly (``exact`` set) where the range binds nothing but non-emptiness (lo <= 1, hi at
    least every point: each part enters when negative) or the groups' options times
    (hi + 1) are few enough for a table over the counts; else the fractional knapsack's value over every item, groups and their
    constants (>= 0) ignored: a lower bound of it.

    The unit items: for a count t of them the best takes the t smallest, and that sum is
    convex in t, least at t = the number of negative ones clipped to the range. The table
    holds the least sum over the groups per count c, and each c is completed by the best t
    in [lo - c, hi - c]. With ``choice`` (ngroups x (hi + 1)) the table records the option
    each group took per count (-1: none; not set above the counts the groups so far can
    reach), and ``at`` gets (c, t) of the least value."""
    cdef Py_ssize_t j, i, neg = 0, t, t1, t2, w, c, cc, g, o, r, nu = K.nunit, total = 0, top
    cdef double sneg = 0.0, x, best, val, part
    cdef cnp.int64_t fill, ci
    exact[0] = 1
    K.kth = 0.0
    if K.lo <= 1 and K.hi >= K.total and K.ngroups:
        # the range binds nothing but a set's being non-empty: each unit item and each
        # group's best option enter when negative; with none, the least of them alone
        val = 0.0
        best = INFINITY
        for j in range(nu):
            x = v[K.unit[j]]
            if x < 0:
                val += x
            if x < best:
                best = x
        for g in range(K.ngroups):
            part = INFINITY
            for o in range(K.gptr[g], K.gptr[g + 1]):
                x = K.oadd[o] if K.oadd != NULL else 0.0
                for j in range(K.optr[o], K.optr[o + 1]):
                    x += v[K.omem[j]]
                if x < part:
                    part = x
            if part < 0:
                val += part
            if part < best:
                best = part
        if val < 0 or K.lo <= 0:
            return val
        return best
    if K.ngroups == 0:
        for j in range(nu):
            x = v[K.unit[j]]
            K.ubuf[j] = x
            if x < 0:
                neg += 1
                sneg += x
        if K.lo > nu:
            return INFINITY
        t = neg
        if t < K.lo:
            t = K.lo
        if t > K.hi:
            t = K.hi
        if at != NULL:
            at[0] = 0
            at[1] = t
        if t == neg:
            return sneg
        if t == nu:
            val = 0.0
            for j in range(nu):
                val += K.ubuf[j]
            return val
        return _sum_smallest_near(K.ubuf, nu, t, K.hint, &K.kth)
    if K.dp:
        for c in range(K.hi + 1):
            K.table[c] = INFINITY
        K.table[0] = 0.0
        # each option's value once, and of a group's options of one count only the least
        # enters the table (the others: INFINITY); the table above the groups' counts so
        # far stays empty
        for o in range(K.gptr[K.ngroups]):
            x = K.oadd[o] if K.oadd != NULL else 0.0
            for j in range(K.optr[o], K.optr[o + 1]):
                x += v[K.omem[j]]
            K.obuf[o] = x
        for g in range(K.ngroups):
            for o in range(K.gptr[g], K.gptr[g + 1]):
                for r in range(K.gptr[g], o):
                    if K.ocnt[r] == K.ocnt[o] and K.obuf[r] < INFINITY:
                        if K.obuf[o] < K.obuf[r]:
                            K.obuf[r] = INFINITY
                        else:
                            K.obuf[o] = INFINITY
                        break
        top = 0
        for g in range(K.ngroups):
            fill = 0
            for o in range(K.gptr[g], K.gptr[g + 1]):
                if K.ocnt[o] > fill:
                    fill = K.ocnt[o]
            top = top + fill if top + fill < K.hi else K.hi
            cc = top
            while cc >= 0:
                best = K.table[cc]
                r = -1
                for o in range(K.gptr[g], K.gptr[g + 1]):
                    ci = K.ocnt[o]
                    if ci > cc or K.table[cc - ci] == INFINITY or K.obuf[o] == INFINITY:
                        continue
                    val = K.table[cc - ci] + K.obuf[o]
                    if val < best:
                        best = val
                        r = o
                K.table[cc] = best
                if choice != NULL:
                    choice[g * (K.hi + 1) + cc] = <cnp.int32_t> r
                cc -= 1
        for j in range(nu):
            x = v[K.unit[j]]
            K.ubuf[j] = x
            if x < 0:
                neg += 1
        # the unit items' counts t(c) that the counts c of the groups call for lie in
        # [t1, t2], a window as wide as the groups' counts: the t1 smallest are selected and
        # summed, and only the window is sorted
        t1 = nu + 1
        t2 = -1
        for c in range(K.hi + 1):
            t = -1 if K.table[c] == INFINITY else _unit_count(K, c, neg)
            K.units[c] = t
            if t < 0:
                continue
            if t < t1:
                t1 = t
            if t > t2:
                t2 = t
        if t2 < 0:
            return INFINITY
        if t1 == 0:
            val = 0.0
        elif t1 == nu:
            val = 0.0
            for j in range(nu):
                val += K.ubuf[j]
        else:
            val = _sum_smallest_near(K.ubuf, nu, t1, K.hint, &K.kth)
        w = t2 - t1
        if 0 < w < nu - t1:
            _sum_smallest(K.ubuf + t1, nu - t1, w)
        if w > 1:
            qsort(K.ubuf + t1, w, sizeof(double), _cmp_double)
        K.prefix[0] = val
        for j in range(w):
            K.prefix[j + 1] = K.prefix[j] + K.ubuf[t1 + j]
        best = INFINITY
        for c in range(K.hi + 1):
            t = K.units[c]
            if t < 0:
                continue
            val = K.table[c] + K.prefix[t - t1]
            if val < best:
                best = val
                if at != NULL:
                    at[0] = c
                    at[1] = t
        return best
    # the fractional knapsack over every item
    exact[0] = 0
    for j in range(K.nitems):
        K.rbuf[j].v = v[j]
        K.rbuf[j].c = K.cnt[j]
        K.rbuf[j].r = v[j] / K.cnt[j]
    c = K.nitems
    qsort(K.rbuf, c, sizeof(Ratio), _cmp_ratio)
    fill = 0
    for j in range(c):
        total += K.rbuf[j].c
        if K.rbuf[j].r < 0:
            fill += K.rbuf[j].c
    if K.lo > total:
        return INFINITY
    if fill < K.lo:
        fill = K.lo
    if fill > K.hi:
        fill = K.hi
    val = 0.0
    for j in range(c):
        if fill <= 0:
            break
        if K.rbuf[j].c <= fill:
            val += K.rbuf[j].v
            fill -= K.rbuf[j].c
        else:
            part = fill * K.rbuf[j].r
            val += part
            fill = 0
    return val


#: the sized search's table over counts is used while the groups' options times (hi + 1)
#: are at most this; above, the fractional knapsack bounds (valid, but it may not close)
DP_LIMIT = 1 << 18
#: the sized search drops a box's dominated unit items (the dominance test in sized_search)
#: with this relative slack, far above the rounding of the values it compares, ...
cdef double FILTER_SLACK = 1e-9
#: ... each time a box's r^2 is at most this share of the r^2 of the box that last did. At
#: glass 17..54's root LP duals (benchmarks/bench_sized_search.py), by the first rule of
#: sized_search's test alone, the boxes took 85-110 of 214 points (1 to 0.03), and the search
#: took 1.05 s at 0.5, 0.96 s at 0.25, 1.03 s at 0.1 and 1.47 s at every split, against
#: 1.25-1.45 s without dropping; by both rules 0.95 s at 0.5, 0.89 s at 0.25, 0.91 s at 0.1
cdef double REFINE_SHRINK = 0.25


cdef extern from *:
    """
    static inline int pcsos_ctz(unsigned long long x) { return __builtin_ctzll(x); }
    """
    int _ctz "pcsos_ctz"(unsigned long long x) noexcept nogil


cdef void _knap_init(Knap *K, const cnp.int64_t[::1] cnt, cnp.int64_t lo, cnp.int64_t hi,
                     groups, Py_ssize_t dp_limit):
    """``groups``: (unit, gptr, ocnt, optr, omem), int64 arrays (``pricing.knapsack_groups``),
    and optionally oadd, float64: a constant (>= 0) per option that taking it adds; kept
    alive by the caller."""
    cdef const cnp.int64_t[::1] unit = groups[0]
    cdef const cnp.int64_t[::1] gptr = groups[1]
    cdef const cnp.int64_t[::1] ocnt = groups[2]
    cdef const cnp.int64_t[::1] optr = groups[3]
    cdef const cnp.int64_t[::1] omem = groups[4]
    cdef const double[::1] oadd = groups[5] if len(groups) > 5 else None
    cdef Py_ssize_t s = cnt.shape[0], nopt = ocnt.shape[0], i
    K.nunit = unit.shape[0]
    K.ngroups = gptr.shape[0] - 1
    K.unit = &unit[0] if K.nunit else NULL
    K.gptr = &gptr[0]
    K.ocnt = &ocnt[0] if nopt else NULL
    K.optr = &optr[0]
    K.omem = &omem[0] if omem.shape[0] else NULL
    K.oadd = &oadd[0] if oadd is not None and nopt else NULL
    K.nitems = s
    K.total = 0
    for i in range(s):
        K.total += cnt[i]
    K.cnt = &cnt[0] if s else NULL
    K.lo = lo
    K.hi = hi
    K.dp = hi >= 0 and nopt * (hi + 1) <= dp_limit
    K.ubuf = <double *> malloc((K.nunit + 1) * sizeof(double))
    K.prefix = <double *> malloc((K.nunit + 1) * sizeof(double))
    K.table = <double *> malloc(((hi + 1) if K.dp else 1) * sizeof(double))
    K.units = <Py_ssize_t *> malloc(((hi + 1) if K.dp else 1) * sizeof(Py_ssize_t))
    K.obuf = <double *> malloc(((nopt + 1) if K.dp else 1) * sizeof(double))
    K.rbuf = <Ratio *> malloc((s + 1) * sizeof(Ratio))
    K.hint = NAN
    K.kth = NAN


cdef void _knap_free(Knap *K):
    free(K.ubuf)
    free(K.prefix)
    free(K.table)
    free(K.units)
    free(K.obuf)
    free(K.rbuf)


def sum_smallest(double[::1] v, Py_ssize_t t, double hint=NAN):
    """``(sum, kth)``: the sum of the ``t`` smallest of ``v`` (0 < t < len(v); reordered) and
    the t-th smallest, by the selection the sized search uses with ``hint`` as its first
    pivot (NaN: none)."""
    if not 0 < t < v.shape[0]:
        raise ValueError("0 < t < len(v)")
    cdef double kth = 0.0
    cdef double total = _sum_smallest_near(&v[0], v.shape[0], t, hint, &kth)
    return total, kth


def knapsack(const double[::1] v, const cnp.int64_t[::1] cnt, cnp.int64_t lo, cnp.int64_t hi,
             groups, Py_ssize_t dp_limit=-1):
    """``(value, exact, members)``: min sum_i v_i z_i (plus the constants of the options
    taken) over z in {0, 1}^s with lo <= sum_i cnt_i z_i <= hi and at most one option of
    each of ``groups`` (:func:`_knap`; cnt_i >= 1), whether it is exact (else the fractional knapsack's value, groups ignored:
    a lower bound), and a set of the range (sorted): the least one where exact, else the
    whole items of the fractional solution if they meet the range and obey the groups; None
    if none is found. ``dp_limit``: :data:`DP_LIMIT` if negative."""
    cdef Py_ssize_t s = v.shape[0], c, g, o
    cdef Py_ssize_t at[2]
    cdef bint exact
    cdef double val
    cdef Knap K
    cdef cnp.int32_t *choice = NULL
    if hi < 0 or lo > hi:
        return INFINITY, True, None
    _knap_init(&K, cnt, max(lo, 0), hi, groups, DP_LIMIT if dp_limit < 0 else dp_limit)
    at[0] = 0
    at[1] = 0
    try:
        if K.dp and K.ngroups:
            choice = <cnp.int32_t *> malloc(K.ngroups * (hi + 1) * sizeof(cnp.int32_t))
        val = _knap(&K, &v[0] if s else NULL, &exact, choice, at)
        if val == INFINITY:
            return val, bool(exact), None
        vals = np.asarray(v)
        counts = np.asarray(cnt)
        unit = np.asarray(groups[0])
        gptr, optr, omem = (np.asarray(groups[1]), np.asarray(groups[3]),
                            np.asarray(groups[4]))
        if lo <= 1 and hi >= K.total and K.ngroups:
            # the fast path of _knap: every negative unit item and group's best option
            add = (np.asarray(groups[5]) if len(groups) > 5 else
                   np.zeros(len(np.asarray(groups[2]))))

            def worth(o):
                return float(add[o] + np.sum(vals[omem[optr[o]:optr[o + 1]]]))

            best_o = [min(range(gptr[g], gptr[g + 1]), key=worth) for g in range(K.ngroups)]
            mem = [int(i) for i in unit if vals[i] < 0]
            mem += [int(i) for o in best_o if worth(o) < 0 for i in omem[optr[o]:optr[o + 1]]]
            if not mem and lo >= 1:
                cands = [(float(vals[i]), [int(i)]) for i in unit]
                cands += [(worth(o), [int(i) for i in omem[optr[o]:optr[o + 1]]])
                          for o in best_o]
                mem = min(cands, key=lambda c: c[0])[1]
            return val, True, np.sort(np.asarray(mem, dtype=np.int64))
        if exact:
            mem = list(unit[np.argsort(vals[unit], kind="stable")[:at[1]]])
            c = at[0]
            g = K.ngroups - 1
            while g >= 0:
                o = choice[g * (hi + 1) + c]
                if o >= 0:
                    mem.extend(np.asarray(groups[4])[K.optr[o]:K.optr[o + 1]])
                    c -= K.ocnt[o]
                g -= 1
            return val, True, np.sort(np.asarray(mem, dtype=np.int64))
        order = np.argsort(vals / counts, kind="stable")
        room, mem = hi, []
        for i in order:
            if vals[i] >= 0 and counts[mem].sum() >= lo:
                break
            if counts[i] <= room:
                mem.append(i)
                room -= counts[i]
        mem = np.sort(np.asarray(mem, dtype=np.int64))
        taken = np.zeros(s, dtype=bool)
        taken[mem] = True
        ok = lo <= counts[mem].sum() <= hi
        for g in range(K.ngroups):
            # a group's points taken must form one of its options
            pts = np.unique(omem[optr[gptr[g]]:optr[gptr[g + 1]]])
            inside = frozenset(int(i) for i in pts[taken[pts]])
            if inside and inside not in {frozenset(int(i) for i in omem[optr[o]:optr[o + 1]])
                                         for o in range(gptr[g], gptr[g + 1])}:
                ok = False
        return val, False, mem if ok else None
    finally:
        free(choice)
        _knap_free(&K)


cdef void _dist_full(const double[:, ::1] m, const double *y0, double *dist,
                     const cnp.int64_t *idx, Py_ssize_t nidx) noexcept nogil:
    """dist[i] = ||m_i - y0||^2 for the points i of ``idx``."""
    cdef Py_ssize_t d = m.shape[1], i, a, j
    cdef double dc, diff
    for j in range(nidx):
        i = idx[j]
        dc = 0.0
        for a in range(d):
            diff = m[i, a] - y0[a]
            dc += diff * diff
        dist[i] = dc


cdef void _dist_shift(const double[:, ::1] m, const double *dpar, Py_ssize_t axis, double yax,
                      double delta, double *dist, const cnp.int64_t *idx,
                      Py_ssize_t nidx) noexcept nogil:
    """dist[i] = ||m_i - (y + delta u)||^2 from dpar[i] = ||m_i - y||^2 (u the unit vector of
    ``axis``, yax = y[axis]) for the points i of ``idx``: dpar[i] - 2 delta (m_i[axis] - yax)
    + delta^2."""
    cdef Py_ssize_t i, j
    cdef double dd = delta * delta, t2 = 2.0 * delta
    for j in range(nidx):
        i = idx[j]
        dist[i] = dpar[i] - t2 * (m[i, axis] - yax) + dd


cdef double _eval_box(const double[::1] e, const double[::1] base, const double *dist,
                      const double *y0, Py_ssize_t d, const double *lo, const double *hi,
                      Knap *K, double *vc, double *vg, double *up,
                      double prune, double *hint, const cnp.int64_t *idx,
                      Py_ssize_t nidx) noexcept nogil:
    """The box [lo, hi]'s bound (sized_search's doc) about a point ``y0`` of it, ``dist`` the
    points' squared distances to y0; ``up`` gets the exact knapsack of g_i(y0) (INFINITY
    where the knapsack is not exact, or where the bound is at least ``prune``: the box is
    pruned, and its centre's cluster could gain less than the search's tolerance).
    ``hint``: guesses of the two knapsacks' thresholds (:func:`_sum_smallest_near`), which
    get this box's."""
    cdef Py_ssize_t i, a, j
    cdef double r2 = 0.0, w, lb
    cdef bint ex
    for a in range(d):
        # the box's farthest corner from y0, whatever y0's rounding
        w = _dmax(y0[a] - lo[a], hi[a] - y0[a])
        r2 += w * w
    for j in range(nidx):
        i = idx[j]
        vg[i] = e[i] * dist[i] + base[i]
        vc[i] = vg[i] - e[i] * r2
    K.hint = hint[0]
    lb = _knap(K, vc, &ex)
    hint[0] = K.kth
    up[0] = INFINITY
    if lb < prune:
        K.hint = hint[1]
        up[0] = _knap(K, vg, &ex)
        hint[1] = K.kth
        if not ex:
            up[0] = INFINITY
    return lb


def sized_search(const double[:, ::1] m, const double[::1] e, const cnp.int64_t[::1] cnt,
                 const double[::1] base, const double[::1] lo0, const double[::1] hi0,
                 cnp.int64_t lo, cnp.int64_t hi, groups, double best, double tol,
                 Py_ssize_t max_boxes, poll=None, double[::1] shared=None,
                 double stop_at=-INFINITY, double unit=1.0):
    """The best-first search over boxes of the centre y of ``pricing.price_sized``, from the
    box [lo0, hi0], which must hold the mean of every cluster of count in [lo, hi]:
    ``(open_lb, best, boxes, complete, centres)``.

    A box B bounds the clusters whose mean lies in it (each lies in a box of the partition)
    by the knapsack (:func:`_knap`) of g_i(y0) - e_i r^2 over the points (y0 B's centre as
    computed, r its distance to B's farthest corner): for such a cluster T, rc(T) =
    g_T(mean) = g_T(y0) - e_T ||mean - y0||^2 >= g_T(y0) - e_T r^2. A split box's halves
    take their squared distances ||m_i - y0||^2 from the parent's centre's, in one pass
    over the points each (:func:`_dist_shift`; three roundings more than from scratch,
    which the caller's margin covers), and their knapsacks' selections start from the
    parent's thresholds.
    The exact knapsack of g_i(y0) is the sum of g_i(y0) over a cluster of the range, at
    least its reduced cost: an upper bound on the minimum (``best``, from the one given).
    ``open_lb``: the least bound of the boxes left open (INFINITY if none); ``complete``: it
    is within ``tol`` of ``best``; ``centres``: the centres where ``best`` improved, in
    order. ``poll()``, called every 256 boxes split, stops the search when it returns true.
    ``groups``: the knapsack's (:func:`knapsack`; the cannot-link pairs' components). No
    rounding margin is taken here (the caller's).

    ``shared``: (best, boxes, stop) of searches of other parts of the box in other threads:
    each search prunes by the least best of all and writes its own better ones there,
    ``max_boxes`` counts the boxes of all, and a search whose ``poll()`` fires sets stop,
    which ends the others at their next box. Unlocked: a write one thread loses only prunes
    less (``best`` is always a cluster's value), ``boxes`` is a budget, not a bound, and a
    search that ends early keeps its open boxes in ``open_lb``.

    ``stop_at``: the search ends as soon as its best is below it (and, shared, ends the
    others): a caller that needs only such a set, not the minimum. ``unit``: the least length
    that counts in the floor on a box's width (``PricingData.unit``)."""
    if shared is not None and shared.shape[0] < 3:
        raise ValueError("shared holds (best, boxes, stop)")
    cdef Py_ssize_t s = m.shape[0], d = m.shape[1], i, j, a, axis, q, c, half, slot, h
    cdef Py_ssize_t cap = 1024, used = 1, nheap = 0, nfree = 0, boxes = 0, pops = 0
    cdef Py_ssize_t ncent = 0, ccap = 16
    cdef double x, w, wmax, mid, lb, up, open_lb
    cdef bint polled = poll is not None, stop = 0
    cdef Knap K
    cdef double *blo = <double *> malloc(cap * d * sizeof(double))
    cdef double *bhi = <double *> malloc(cap * d * sizeof(double))
    cdef double *blb = <double *> malloc(cap * sizeof(double))
    # per box the thresholds of its two knapsacks, the first guesses of its halves'
    cdef double *bth = <double *> malloc(2 * cap * sizeof(double))
    cdef double hints[4]
    cdef Py_ssize_t *heap = <Py_ssize_t *> malloc(cap * sizeof(Py_ssize_t))
    cdef Py_ssize_t *freel = <Py_ssize_t *> malloc(cap * sizeof(Py_ssize_t))
    cdef double *vc = <double *> malloc((s + 1) * sizeof(double))
    cdef double *vg = <double *> malloc((s + 1) * sizeof(double))
    cdef double *dpar = <double *> malloc((s + 1) * sizeof(double))
    cdef double *dch = <double *> malloc(2 * (s + 1) * sizeof(double))
    cdef double *ych = <double *> malloc((2 * d + 1) * sizeof(double))
    cdef double *y0 = <double *> malloc(d * sizeof(double))
    cdef double *yc = NULL
    cdef double *cbuf = <double *> malloc(ccap * d * sizeof(double))
    cdef Py_ssize_t pair[2]
    cdef double *sh = NULL
    cdef Py_ssize_t counted = 0
    # the unit items each box may still take (a bit per point), the list of those and the
    # other items, and scratch for the dominance test
    cdef Py_ssize_t W = (s + 63) >> 6, nua = 0, nnu = 0, nidx = 0, H = hi
    cdef unsigned long long *amask = <unsigned long long *> malloc(cap * W * sizeof(unsigned long long))
    cdef cnp.int64_t *idx = <cnp.int64_t *> malloc((s + 1) * sizeof(cnp.int64_t))
    cdef cnp.int64_t *nonunit = <cnp.int64_t *> malloc((s + 1) * sizeof(cnp.int64_t))
    cdef double *lbound = <double *> malloc((s + 1) * sizeof(double))
    # per box the r^2 of the box it last dropped items at
    cdef double *bref = <double *> malloc(cap * sizeof(double))
    cdef double r2q, rq, Dq, Mq, theta, gq, tlo
    cdef Py_ssize_t L
    cdef unsigned long long bits
    cdef Py_ssize_t kept
    cdef bint filt
    cdef const cnp.int64_t[::1] unit0 = groups[0]
    if shared is not None:
        sh = &shared[0]
        if sh[0] < best:
            best = sh[0]
    _knap_init(&K, cnt, lo, hi, groups, DP_LIMIT)
    L = K.lo if K.lo > 0 else 0
    if H < L:
        H = L
    filt = (K.ngroups == 0 or K.dp) and L < K.nunit
    for j in range(W):
        amask[j] = 0
    for j in range(K.nunit):
        i = unit0[j]
        amask[i >> 6] |= 1ULL << (i & 63)
        idx[j] = i
    nua = K.nunit
    for i in range(s):
        if not (amask[i >> 6] >> (i & 63)) & 1:
            nonunit[nnu] = i
            nnu += 1
    for j in range(nnu):
        idx[nua + j] = nonunit[j]
    nidx = nua + nnu
    bref[0] = INFINITY
    try:
        # the search holds no GIL: the tree's workers are threads of one process, and each
        # runs its own pricing (the GIL is taken only to call ``poll``)
        with nogil:
            for a in range(d):
                blo[a] = lo0[a]
                bhi[a] = hi0[a]
            pair[0] = 0
            pair[1] = -1
            for a in range(d):
                ych[a] = 0.5 * (blo[a] + bhi[a])
            _dist_full(m, ych, dch, idx, nidx)
            hints[0] = NAN
            hints[1] = NAN
            while True:
                # evaluate the new boxes in ``pair``: keep those that may hold a better one
                for h in range(2):
                    slot = pair[h]
                    if slot < 0:
                        continue
                    yc = &ych[h * d]
                    lb = _eval_box(e, base, &dch[h * s], yc, d, &blo[slot * d],
                                   &bhi[slot * d], &K, vc, vg, &up, best - tol, &hints[2 * h],
                                   idx, nidx)
                    bth[2 * slot] = hints[2 * h]
                    bth[2 * slot + 1] = hints[2 * h + 1]
                    boxes += 1
                    if up < best:
                        best = up
                        if sh != NULL and best < sh[0]:
                            sh[0] = best
                        if ncent >= ccap:
                            ccap *= 2
                            cbuf = <double *> realloc(cbuf, ccap * d * sizeof(double))
                        for a in range(d):
                            cbuf[ncent * d + a] = yc[a]
                        ncent += 1
                    if lb < best - tol:
                        blb[slot] = lb
                        j = nheap
                        nheap += 1
                        while j > 0 and blb[heap[(j - 1) >> 1]] > lb:
                            heap[j] = heap[(j - 1) >> 1]
                            j = (j - 1) >> 1
                        heap[j] = slot
                    else:
                        freel[nfree] = slot
                        nfree += 1
                if sh != NULL:
                    sh[1] += boxes - counted
                    counted = boxes
                    if sh[0] < best:
                        best = sh[0]
                if best < stop_at:
                    # a set below stop_at is all the caller needs: end here, and end the
                    # searches of the other parts too
                    if sh != NULL:
                        sh[2] = 1
                    break
                if nheap == 0 or blb[heap[0]] >= best - tol or (
                        (sh[1] if sh != NULL else boxes) >= max_boxes) or (
                        sh != NULL and sh[2] != 0):
                    break
                pops += 1
                if polled and pops % 256 == 0:
                    with gil:
                        stop = bool(poll())
                    if stop:
                        if sh != NULL:
                            sh[2] = 1
                        break
                q = heap[0]
                axis = 0
                wmax = -1.0
                for a in range(d):
                    w = bhi[q * d + a] - blo[q * d + a]
                    if w > wmax:
                        wmax = w
                        axis = a
                if not wmax > 1e-12 * (unit + _dmax(fabs(blo[q * d + axis]),
                                                  fabs(bhi[q * d + axis]))):
                    break  # the least box is too small to split: its bound is final
                # pop q
                nheap -= 1
                if nheap:
                    x = blb[heap[nheap]]
                    j = 0
                    while True:
                        half = 2 * j + 1
                        if half >= nheap:
                            break
                        if half + 1 < nheap and blb[heap[half + 1]] < blb[heap[half]]:
                            half += 1
                        if blb[heap[half]] >= x:
                            break
                        heap[j] = heap[half]
                        j = half
                    heap[j] = heap[nheap]
                if nfree:
                    nfree -= 1
                    c = freel[nfree]
                else:
                    if used >= cap:
                        cap *= 2
                        blo = <double *> realloc(blo, cap * d * sizeof(double))
                        bhi = <double *> realloc(bhi, cap * d * sizeof(double))
                        blb = <double *> realloc(blb, cap * sizeof(double))
                        bth = <double *> realloc(bth, 2 * cap * sizeof(double))
                        amask = <unsigned long long *> realloc(amask, cap * W * sizeof(unsigned long long))
                        bref = <double *> realloc(bref, cap * sizeof(double))
                        heap = <Py_ssize_t *> realloc(heap, cap * sizeof(Py_ssize_t))
                        freel = <Py_ssize_t *> realloc(freel, cap * sizeof(Py_ssize_t))
                    c = used
                    used += 1
                # the halves' distances from the parent's: one pass over the points and
                # dimensions per split, not one per half
                r2q = 0.0
                for a in range(d):
                    y0[a] = 0.5 * (blo[q * d + a] + bhi[q * d + a])
                    ych[a] = y0[a]
                    ych[d + a] = y0[a]
                    w = _dmax(y0[a] - blo[q * d + a], bhi[q * d + a] - y0[a])
                    r2q += w * w
                # the unit items q may still take (the others follow once it has tested them)
                nua = 0
                for j in range(W):
                    bits = amask[q * W + j]
                    while bits:
                        i = (j << 6) + _ctz(bits)
                        bits &= bits - 1
                        idx[nua] = i
                        nua += 1
                _dist_full(m, y0, dpar, idx, nua)
                if filt and nua > L and r2q <= REFINE_SHRINK * bref[q]:
                    bref[q] = r2q
                    # a unit item i is in no least set of any box inside q (of either
                    # knapsack) where its value there is above the values there of H = hi
                    # other unit items (a set of at most hi points holding i misses one of
                    # them, and taking it in i's place does better), or is positive and
                    # above those of L = lo others (a set holding i of more than lo points
                    # does better without it, and one of at most lo misses one of them):
                    # q and its descendants drop it (docs/safe_bound.md)
                    rq = sqrt(r2q)
                    for j in range(nua):
                        i = idx[j]
                        Dq = sqrt(dpar[i])
                        gq = e[i] * (Dq + rq) * (Dq + rq)
                        Mq = FILTER_SLACK * (gq + fabs(base[i]) + e[i] * r2q)
                        # the upper bounds go to scratch (vc): the selections reorder them
                        vc[j] = gq + base[i] + Mq
                        gq = _dmax(Dq - rq, 0.0)
                        lbound[j] = e[i] * gq * gq + base[i] - e[i] * r2q - Mq
                    theta = INFINITY
                    if 0 < H < nua:
                        _sum_smallest(vc, nua, H)
                        theta = -INFINITY
                        for j in range(H):
                            if vc[j] > theta:
                                theta = vc[j]
                    # the L smallest lie among the H smallest (L <= H)
                    tlo = -INFINITY
                    if L > 0:
                        if L < (H if H < nua else nua):
                            _sum_smallest(vc, H if H < nua else nua, L)
                        for j in range(L):
                            if vc[j] > tlo:
                                tlo = vc[j]
                    tlo = _dmax(tlo, 0.0)
                    kept = 0
                    for j in range(nua):
                        i = idx[j]
                        if lbound[j] > theta or lbound[j] > tlo:
                            amask[q * W + (i >> 6)] &= ~(1ULL << (i & 63))
                        else:
                            idx[kept] = i
                            kept += 1
                    nua = kept
                for j in range(nnu):
                    idx[nua + j] = nonunit[j]
                nidx = nua + nnu
                _dist_full(m, y0, dpar, &idx[nua], nnu)
                K.unit = idx
                K.nunit = nua
                x = 0.25 * (bhi[q * d + axis] - blo[q * d + axis])
                # a half's r^2 is 3 x^2 less than its parent's, and its first knapsack's
                # values rise by about that: the thresholds guess the halves' (a guess is only
                # a first pivot, whatever it is the sums are exact)
                hints[0] = bth[2 * q] + 3.0 * x * x
                hints[1] = bth[2 * q + 1]
                hints[2] = hints[0]
                hints[3] = hints[1]
                ych[axis] = y0[axis] - x
                ych[d + axis] = y0[axis] + x
                _dist_shift(m, dpar, axis, y0[axis], -x, dch, idx, nidx)
                _dist_shift(m, dpar, axis, y0[axis], x, &dch[s], idx, nidx)
                mid = y0[axis]
                for a in range(d):
                    blo[c * d + a] = blo[q * d + a]
                    bhi[c * d + a] = bhi[q * d + a]
                for j in range(W):
                    amask[c * W + j] = amask[q * W + j]
                bref[c] = bref[q]
                bhi[c * d + axis] = mid
                blo[q * d + axis] = mid
                pair[0] = c
                pair[1] = q
        open_lb = blb[heap[0]] if nheap else INFINITY
        centres = [np.asarray(<double[:d]> &cbuf[i * d]).copy() for i in range(ncent)]
        return open_lb, best, boxes, bool(open_lb >= best - tol), centres
    finally:
        free(blo)
        free(bhi)
        free(blb)
        free(bth)
        free(heap)
        free(freel)
        free(vc)
        free(vg)
        free(dpar)
        free(dch)
        free(ych)
        free(y0)
        free(cbuf)
        free(amask)
        free(idx)
        free(nonunit)
        free(lbound)
        free(bref)
        _knap_free(&K)
