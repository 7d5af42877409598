# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cut separation and branching kernels on a dense symmetric matrix Z (C-contiguous float64)."""

from libc.math cimport fabs


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
