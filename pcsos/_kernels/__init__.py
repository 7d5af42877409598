"""Compiled (Cython, nogil) kernels. Pure-numpy references live in the tests only.

The kernels assume a C-contiguous float64 symmetric Z (see ``_separation.pyx``); the
wrappers in :mod:`pcsos.cuts.separation` and :func:`branching_score` prepare it.
"""

from __future__ import annotations

import numpy as np

try:
    from pcsos._kernels._separation import (
        branching_direct,
        branching_scan,
        max_asymmetry,
        separate_cliques,
        separate_pairs,
        separate_triangles,
    )
except ModuleNotFoundError as exc:
    if exc.name != "pcsos._kernels._separation":
        raise
    import pathlib

    from pcsos.errors import KernelsNotBuiltError

    # the usual cause: `pip install .` then Python run from the repository root, where the
    # source tree (without the built extension) shadows the installed package
    _root = pathlib.Path(__file__).resolve().parents[2]
    raise KernelsNotBuiltError(
        f"pcsos's compiled kernels are not built in {_root / 'pcsos'}, which is the copy "
        "Python imported (it shadows an installed pcsos when the current directory is the "
        "repository root): run from another directory, or build this copy in place with "
        "`pip install -e .`") from None

__all__ = ["max_asymmetry", "separate_pairs", "separate_triangles", "separate_cliques",
           "branching_scan", "branching_direct", "branching_score", "as_symmetric"]


def as_symmetric(Z) -> np.ndarray:
    """Z as a C-contiguous float64 matrix, symmetrised as (Z + Z^T) / 2 when it is not."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] != Z.shape[1]:
        raise ValueError(f"Z must be a square matrix, got shape {Z.shape}")
    if Z.shape[0] and max_asymmetry(Z) > 0.0:
        Z = np.ascontiguousarray(0.5 * (Z + Z.T))
    return Z


def branching_score(Z, method: str = "gram") -> tuple[int, int, float]:
    """The branching pair argmax_{i<j} min(Z_ij, ||Z_i. - Z_j.||^2) and its score.

    ``method="gram"`` forms G = Z Z^T with one BLAS product and scans it in compiled code
    (O(s^2) after the product; the faster choice for s >= ~200, see the cutting-plane
    section of docs/benchmarks.md);
    ``"direct"`` sums each distance in compiled code, skipping pairs whose Z_ij cannot win.
    Returns ``(i, j, score)`` with i < j, or ``(-1, -1, -inf)`` when s < 2. Ties go to the
    first pair in row-major order. Z is symmetrised first when it is not symmetric.
    """
    Z = as_symmetric(Z)
    if method == "gram":
        return branching_scan(Z, np.ascontiguousarray(Z @ Z.T))
    if method == "direct":
        return branching_direct(Z)
    raise ValueError(f"unknown method {method!r}: use 'gram' or 'direct'")
