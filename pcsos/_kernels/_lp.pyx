"""The restricted master's interior-point method's linear algebra (pcsos.bounds.colgen.ipm),
without the GIL, so that the tree's workers run their masters side by side: the
normal-equations matrix A D A^T from A's sparse columns, O(sum of each column's nonzeros
squared) where a dense product costs O(rows^2 columns) (glass's master, 215 rows, 2 956
columns, 119 470 nonzeros: 2.3 ms against 9.3 ms for numpy's one-thread product), its
Cholesky factor and solves (LAPACK), and products with A and A^T."""

from scipy.linalg.cython_lapack cimport dpotrf, dpotrs


def normal_lower(const long long[::1] indptr, const int[::1] indices,
                 const double[::1] values, const double[::1] d, double[:, ::1] M) -> None:
    """Add sum_c d_c a_c a_c^T to the lower triangle of M (rows i >= j), a_c the column c of
    the CSC matrix (``indptr``, ``indices`` sorted within each column, ``values``)."""
    cdef Py_ssize_t n = d.shape[0], c, p, q, a, b
    cdef double w, wv
    cdef int i
    with nogil:
        for c in range(n):
            w = d[c]
            if w == 0.0:
                continue
            a = indptr[c]
            b = indptr[c + 1]
            for p in range(a, b):
                i = indices[p]
                wv = w * values[p]
                for q in range(a, p + 1):
                    M[i, indices[q]] += wv * values[q]


def factor(double[:, ::1] M, double[:, ::1] L, double shift, int tries):
    """Fill M's upper triangle from its lower one, then the Cholesky factor of M + shift I
    into L, the shift multiplied by 100 after each failure, at most ``tries`` times; returns
    the shift that succeeded, or -1."""
    cdef int m = M.shape[0], info = 0, i, j, t
    cdef char uplo = b'U'  # LAPACK reads the C-ordered arrays transposed: our lower triangle
    cdef double done = -1.0
    with nogil:
        for i in range(m):
            for j in range(i):
                M[j, i] = M[i, j]
        for t in range(tries):
            for i in range(m):
                for j in range(i + 1):
                    L[i, j] = M[i, j]
                L[i, i] += shift
            dpotrf(&uplo, &m, &L[0, 0], &m, &info)
            if info == 0:
                done = shift
                break
            shift *= 100.0
    return done


def solve(double[:, ::1] L, double[::1] r) -> None:
    """Overwrite r with (L L^T)^-1 r, L from :func:`factor`."""
    cdef int m = L.shape[0], one = 1, info = 0
    cdef char uplo = b'U'
    with nogil:
        dpotrs(&uplo, &m, &one, &L[0, 0], &m, &r[0], &m, &info)


def matvec(const long long[::1] indptr, const int[::1] indices, const double[::1] values,
           const double[::1] x, double[::1] out) -> None:
    """out = A x for the CSC matrix A (out has A's rows)."""
    cdef Py_ssize_t n = x.shape[0], c, p
    cdef double v
    with nogil:
        out[:] = 0.0
        for c in range(n):
            v = x[c]
            if v != 0.0:
                for p in range(indptr[c], indptr[c + 1]):
                    out[indices[p]] += values[p] * v


def rmatvec(const long long[::1] indptr, const int[::1] indices, const double[::1] values,
            const double[::1] y, double[::1] out) -> None:
    """out = A^T y for the CSC matrix A (out has A's columns)."""
    cdef Py_ssize_t n = out.shape[0], c, p
    cdef double s
    with nogil:
        for c in range(n):
            s = 0.0
            for p in range(indptr[c], indptr[c + 1]):
                s += values[p] * y[indices[p]]
            out[c] = s
