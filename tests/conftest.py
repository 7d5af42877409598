import os
import pathlib
import sys
import warnings

import numpy as np
import pytest

# tests/ holds shared test helpers (bruteforce.py); make them importable as plain modules
sys.path.insert(0, os.path.dirname(__file__))

#: the variables that size a BLAS's (or OpenMP's) thread pool when the library loads
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config):
    """Under pytest-xdist, each worker's BLAS gets its share of the cores (scikit-learn's
    conftest does the same). Pools of every core in each worker oversubscribe them: an
    OpenBLAS thread then waits on a core another worker holds, and a test of small matrices
    took 92 s in one run of the suite and 9 s in another."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS: loaded, so the limit holds)
        from threadpoolctl import threadpool_limits

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
        share = max(1, cores // int(workers))
        for var in BLAS_THREAD_VARS:
            os.environ.setdefault(var, str(share))  # the processes the tests start
        threadpool_limits(share)

try:
    import cvxpy

    CVXPY_SOLVERS = set(cvxpy.installed_solvers())
except ImportError:  # the reference-solver tests skip without it
    CVXPY_SOLVERS = set()

#: marks a test that needs the interior-point reference (cvxpy with Clarabel)
needs_clarabel = pytest.mark.skipif(
    "CLARABEL" not in CVXPY_SOLVERS,
    reason="needs cvxpy with Clarabel for the interior-point reference (pip install -e '.[test]')")



def reference_value(prob) -> float:
    """The optimal value of the cvxpy problem ``prob`` by Clarabel at the tightest tolerance
    it certifies: 1e-9 (gap and feasibility), else 1e-8; fails the test if neither is
    certified optimal. (Clarabel 0.11 stops some of these SDPs 'optimal_inaccurate' at 1e-9
    with the value it certifies at 1e-8.)"""
    for tol in (1e-9, 1e-8):
        with warnings.catch_warnings():  # cvxpy's "may be inaccurate": the status says it
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver="CLARABEL", tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
        if prob.status == "optimal":
            return float(prob.value)
    pytest.fail(f"the reference solver did not certify optimality: {prob.status}")


# a clone that is not beside them (one in /tmp, say) names them in PCSOS_SHARED_INSTANCES
SHARED = pathlib.Path(os.environ.get("PCSOS_SHARED_INSTANCES") or pathlib.Path(
    __file__).resolve().parents[1].parent / "shared" / "instances")


@pytest.fixture
def shared_instances() -> pathlib.Path:
    """The shared benchmark instances (``../shared/instances``, or the folder that
    PCSOS_SHARED_INSTANCES names); skips the test when they are not there."""
    if not SHARED.is_dir():
        pytest.skip(f"shared instances not found at {SHARED} (PCSOS_SHARED_INSTANCES names "
                    "another folder)")
    return SHARED


def random_instance(rng: np.random.Generator, n: int, d: int = 2, n_ml: int = 0,
                    n_cl: int = 0):
    """Random data and random (possibly conflicting) ML/CL pairs for property tests."""
    X = rng.normal(size=(n, d)) + rng.integers(0, 3, size=(n, 1)) * 2.0
    def pairs(m):
        out = []
        while len(out) < m:
            i, j = rng.choice(n, size=2, replace=False)
            out.append((int(i), int(j)))
        return out
    return X, pairs(n_ml), pairs(n_cl)


def planted_pairs(rng: np.random.Generator, truth: np.ndarray, n_ml: int, n_cl: int):
    """Random ML / CL pairs that agree with the labelling ``truth`` (so always feasible)."""
    n = len(truth)
    ml, cl = [], []
    while len(ml) < n_ml:
        i, j = rng.choice(n, 2, replace=False)
        if truth[i] == truth[j]:
            ml.append((int(i), int(j)))
    while len(cl) < n_cl:
        i, j = rng.choice(n, 2, replace=False)
        if truth[i] != truth[j]:
            cl.append((int(i), int(j)))
    return ml, cl


def violated_triangles(Z: np.ndarray, top: int):
    """The ``top`` most violated triangle cuts Z_ii + Z_jh - Z_ij - Z_ih >= 0 of Z (brute
    force, independent of the separators under test)."""
    from pcsos.bounds.cutset import CutSet

    s = len(Z)
    V = Z[:, :, None] + Z[:, None, :] - np.diag(Z)[:, None, None] - Z[None, :, :]
    i, j, h = np.meshgrid(np.arange(s), np.arange(s), np.arange(s), indexing="ij")
    ok = (i != j) & (i != h) & (j < h) & (V > 1e-6)
    order = np.argsort(-V[ok])[:top]
    return CutSet.triangles(i[ok][order], j[ok][order], h[ok][order])


def exact_spectrum_matrix(rng, lam):
    """A dense symmetric matrix whose eigenvalues are exactly ``lam`` (pairs a +- b as 2 x 2
    blocks [[a, b], [b, a]] with a, b representable so that a +- b are exact, then a
    symmetric permutation): no rounding in its spectrum, unlike U diag(lam) U^T."""
    lam = np.sort(np.asarray(lam, dtype=float))
    n = len(lam)
    A = np.zeros((n, n))
    idx = rng.permutation(n)
    i = 0
    while i + 1 < n:
        lo, hi = lam[i], lam[i + 1]
        a, b = 0.5 * (lo + hi), 0.5 * (hi - lo)
        if a - b == lo and a + b == hi:
            A[idx[i], idx[i]] = A[idx[i + 1], idx[i + 1]] = a
            A[idx[i], idx[i + 1]] = A[idx[i + 1], idx[i]] = b
        else:
            A[idx[i], idx[i]], A[idx[i + 1], idx[i + 1]] = lo, hi
        i += 2
    if i < n:
        A[idx[i], idx[i]] = lam[i]
    return A


def spectra(rng, s, k):
    """Named spectra of s eigenvalues that are hard for an eigenvalue certificate of the k
    smallest: gapped, clustered at zero, tiny, continuous, wide and all equal."""
    yield "gapped", np.concatenate([-rng.random(k + 2), 1 + rng.random(s - k - 2)])
    yield "zero cluster", np.concatenate([np.zeros(3 * k), rng.random(s - 3 * k) * 50])
    yield "tiny negative cluster", np.concatenate([-1e-4 * rng.random(40),
                                                   1e-4 * rng.random(s - 40) + 1e-6])
    yield "continuum", np.sort(rng.normal(size=s))
    yield "wide", np.concatenate([[-1e3], rng.random(s - 1) * 1e3])
    yield "equal", np.full(s, -2.0 ** -20)
