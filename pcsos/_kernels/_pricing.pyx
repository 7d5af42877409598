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
