"""Pluggable eigendecompositions for the PSD projection of the ADMM.

The only operation the solver needs per iteration is the *positive part* of a symmetric
matrix, ``Π_PSD(W) = V diag(λ+) V^T``, which at a clustering-like solution is low rank
(about k). A method is a function ``(W, rank_hint) -> (vals, vecs)`` returning the strictly
positive eigenvalues of W and their eigenvectors; register new ones (a GPU implementation
with torch or cupy, say) with :func:`register_eig` and select them by name through
``solve_sdp(..., eig=NAME)``.

Built in:

- ``'full'``: ``scipy.linalg.eigh`` with the MRRR driver ``'evr'`` (measured faster than
  ``'evd'`` here: 37 ms vs 49 ms at s = 500 on 2 OpenBLAS threads).
- ``'partial'``: the top ``r`` eigenpairs only (``subset_by_index``, driver ``'evr'``), with
  ``r`` = rank hint + a margin; when all ``r`` computed values are positive the window may
  have cut the positive part, so it doubles ``r`` and retries (exact, never truncated).
- ``'auto'``: ``'partial'`` while the hint is at most s/4, else ``'full'``.
- ``'full32'``, ``'partial32'``, ``'auto32'``: the same on W rounded to single precision,
  the results returned in double. The projection is then exact to about 1e-7 relative,
  which limits the KKT accuracy the ADMM can reach; the safe bound is computed in double
  whatever the method, so it stays valid. Not the default: on a subset of 556 points (k =
  20, one thread) an iteration took 66 ms against 83 ms and the first 300 iterations
  followed the same residuals, but the solve to 1e-3 took 1 451 iterations against 929
  (docs/decomposition.md).
- ``'torch'``: hook for a GPU path (``torch.linalg.eigh`` on CUDA); raises
  :class:`~pcsos.errors.BackendUnavailableError` where torch or a GPU is missing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

from pcsos.errors import BackendUnavailableError, InputError

__all__ = ["positive_part", "register_eig", "eig_methods"]

EigFn = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
_REGISTRY: dict[str, EigFn] = {}
# 'auto' picks a method by the rank hint; the suffix says the precision
_AUTO = {"auto": "", "auto32": "32"}


def register_eig(name: str, fn: EigFn) -> None:
    """Register ``fn(W, rank_hint) -> (positive eigenvalues, eigenvectors)`` under ``name``."""
    _REGISTRY[name] = fn


def eig_methods() -> list[str]:
    """Names accepted by ``solve_sdp(eig=...)``."""
    return sorted(_REGISTRY) + list(_AUTO)


def _full(W: np.ndarray, rank_hint: int) -> tuple[np.ndarray, np.ndarray]:
    vals, vecs = sla.eigh(W, driver="evr", check_finite=False, overwrite_a=False)
    pos = vals > 0
    return vals[pos], vecs[:, pos]


def _partial(W: np.ndarray, rank_hint: int) -> tuple[np.ndarray, np.ndarray]:
    s = W.shape[0]
    r = min(s, max(8, int(rank_hint) + 8))
    while True:
        vals, vecs = sla.eigh(W, driver="evr", check_finite=False,
                              subset_by_index=[s - r, s - 1])
        if vals[0] <= 0 or r == s:
            pos = vals > 0
            return vals[pos], vecs[:, pos]
        r = min(s, 2 * r)


def _torch(W: np.ndarray, rank_hint: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise BackendUnavailableError("eig='torch' needs PyTorch (pip install torch)") from None
    if not torch.cuda.is_available():
        raise BackendUnavailableError("eig='torch' needs a CUDA device; none is visible")
    vals, vecs = torch.linalg.eigh(torch.as_tensor(W, device="cuda"))
    pos = vals > 0
    return vals[pos].cpu().numpy(), vecs[:, pos].cpu().numpy()


def _single(fn: EigFn) -> EigFn:
    def run(W: np.ndarray, rank_hint: int) -> tuple[np.ndarray, np.ndarray]:
        vals, vecs = fn(W.astype(np.float32), rank_hint)
        return vals.astype(np.float64), vecs.astype(np.float64)
    return run


register_eig("full", _full)
register_eig("partial", _partial)
register_eig("full32", _single(_full))
register_eig("partial32", _single(_partial))
register_eig("torch", _torch)


def resolve(method: str) -> str:
    """Check a method name (raises :class:`InputError` for an unknown one)."""
    if method not in _AUTO and method not in _REGISTRY:
        raise InputError(f"unknown eig method {method!r}; choose one of {eig_methods()}",
                         source="eig")
    return method


def positive_part(W: np.ndarray, method: str = "auto",
                  rank_hint: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positive eigenvalues and eigenvectors of the symmetric matrix W (``method`` by name)."""
    s = W.shape[0]
    hint = s if rank_hint is None else int(rank_hint)
    if method in _AUTO:
        method = ("partial" if 4 * (hint + 8) <= s else "full") + _AUTO[method]
    return _REGISTRY[method](W, hint)
