"""Where the ADMM's arrays live: one array namespace per solve, chosen by ``device``.

The ADMM (:mod:`pcsos.bounds.admm`) is written once over an :class:`ArrayBackend`: numpy on
the CPU, torch on CUDA (through ``array-api-compat``), and any other namespace of the array
API standard, such as ``array-api-strict``, which CI uses so that the device path is the
tested path. What the standard leaves out (writing into a matrix in place, a sparse product,
the BLAS rank-one update) is a method here, with a fast form for numpy and torch and a plain
one for the rest; the iteration itself only calls these methods and standard functions.

The backend's methods that take ``out`` write into it where the namespace can (numpy and
torch) and return the result either way: the caller always uses the returned array.

Host data (the model, the factorisations of the cut system, the safe bound's inputs) stays
in numpy; it crosses to the device once per solve through :meth:`ArrayBackend.asarray` and
back through :meth:`ArrayBackend.to_numpy`.
"""

from __future__ import annotations

import threading
import warnings
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dger as _dger

from pcsos.errors import BackendUnavailableError, InputError

__all__ = ["DEVICES", "NUMPY", "ArrayBackend", "get_backend", "cuda_available"]

#: the values of ``device``: 'auto' takes a visible CUDA GPU, else the CPU
DEVICES = ("cpu", "cuda", "auto")

#: each thread that solves on a GPU queues its work on a CUDA stream of its own, so that the
#: tree's workers on one GPU do not wait on each other's kernels (on the device's one default
#: stream, every host read of a scalar, which the iteration makes several times per step,
#: would wait for all of them). False: all on the default stream. Not yet measured (issue 52)
THREAD_STREAMS = True

_THREAD = threading.local()  # the stream of this thread, per device (THREAD_STREAMS)


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (False when torch is missing)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def get_backend(device: str | Any = "cpu") -> ArrayBackend:
    """The backend for ``device``: 'cpu' (numpy), 'cuda' (torch on the current GPU), 'auto'
    (cuda where :func:`cuda_available`, else cpu), or an array namespace module itself (for
    tests: ``array_api_strict``). Raises :class:`InputError` for an unknown name and
    :class:`BackendUnavailableError` for 'cuda' without torch or a GPU."""
    if not isinstance(device, str):
        return _namespace_backend(device)
    if device not in DEVICES:
        raise InputError(f"device must be one of {', '.join(DEVICES)}, got {device!r}",
                         source="device")
    if device == "auto":
        device = "cuda" if cuda_available() else "cpu"
    if device == "cpu":
        return NUMPY
    try:
        import torch
    except ImportError:
        raise BackendUnavailableError("device='cuda' needs PyTorch (pip install "
                                      "'pcsos[gpu]')") from None
    if not torch.cuda.is_available():
        raise BackendUnavailableError("device='cuda': PyTorch sees no CUDA device")
    try:
        from array_api_compat import array_namespace
    except ImportError:
        raise BackendUnavailableError("device='cuda' needs array-api-compat (pip install "
                                      "'pcsos[gpu]')") from None
    dev = torch.device("cuda", torch.cuda.current_device())
    xp = array_namespace(torch.empty(0, device=dev))
    return ArrayBackend("torch", xp, dev, f"cuda:{dev.index} ({torch.cuda.get_device_name(dev)})",
                        torch)


def _namespace_backend(xp) -> ArrayBackend:
    name = getattr(xp, "__name__", type(xp).__name__)
    if xp is np:
        return NUMPY
    if not hasattr(xp, "linalg") or not hasattr(xp, "asarray"):
        raise InputError(f"{name} is not an array namespace", source="device")
    if "torch" in name:  # torch (or array-api-compat's torch) on the CPU: the CUDA code path
        import torch
        from array_api_compat import array_namespace
        cpu = torch.device("cpu")
        return ArrayBackend("torch", array_namespace(torch.empty(0)), cpu, "torch (cpu)", torch)
    return ArrayBackend(name, xp, None, f"{name} (cpu)")


@dataclass(frozen=True)
class ArrayBackend:
    """An array namespace and its device, with the few operations the standard lacks.

    name : 'numpy', 'torch' or the namespace's module name.
    xp : the namespace (numpy itself, array-api-compat's torch, or the module).
    device : the namespace's device object (None: its default).
    label : what the solve's result reports as its device.
    native : torch itself for the torch backend (its in-place operations), else None.

    Set from the name: ``is_numpy``, ``is_torch``, and ``in_place`` (the namespace writes
    into arrays: numpy and torch).
    """

    name: str
    xp: Any
    device: Any
    label: str
    native: Any = None

    def __post_init__(self):
        # plain attributes, read in the iteration's every operation: no property call
        object.__setattr__(self, "is_numpy", self.name == "numpy")
        object.__setattr__(self, "is_torch", self.name == "torch")
        object.__setattr__(self, "in_place", self.is_numpy or self.is_torch)

    def stream(self):
        """A context in which the calling thread's work on a CUDA device runs on that thread's
        own stream (``THREAD_STREAMS``), made on its first use and kept for the thread's
        life; a no-op off CUDA. Arrays made inside are for use inside it only."""
        if not (THREAD_STREAMS and self.is_torch and getattr(self.device, "type", "") == "cuda"):
            return nullcontext()
        streams = _THREAD.__dict__.setdefault("streams", {})
        stream = streams.get(self.device)
        if stream is None:
            stream = streams[self.device] = self.native.cuda.Stream(device=self.device)
        return self.native.cuda.stream(stream)

    # ------------------------------------------------------------- host <-> device
    def asarray(self, a) -> Any:
        """A float64 copy of the host array ``a`` on the device (numpy: ``a`` itself when it
        is already float64)."""
        return self._put(a, np.float64, "float64")

    def index(self, a) -> Any:
        """An integer index array on the device."""
        return self._put(a, np.intp if self.is_numpy else np.int64, "int64")

    def mask(self, a) -> Any:
        """A boolean array on the device."""
        return self._put(a, bool, "bool")

    def _put(self, a, np_dtype, xp_dtype: str) -> Any:
        if self.is_numpy:
            return np.asarray(a, dtype=np_dtype)
        a = np.ascontiguousarray(a, dtype=np_dtype)
        if self.is_torch:
            return self.native.as_tensor(a, device=self.device)
        return self.xp.asarray(a, dtype=getattr(self.xp, xp_dtype))

    def to_numpy(self, x) -> np.ndarray:
        """The host copy of a device array (numpy arrays pass through)."""
        if isinstance(x, np.ndarray):
            return x
        if self.is_torch:
            return x.detach().cpu().numpy()
        return np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)

    def zeros(self, shape) -> Any:
        if self.is_numpy:
            return np.zeros(shape)
        return self.xp.zeros(shape, dtype=self.xp.float64, device=self.device)

    def empty(self, shape) -> Any:
        if self.is_numpy:
            return np.empty(shape)
        return self.xp.empty(shape, dtype=self.xp.float64, device=self.device)

    def concat(self, parts, axis: int = 0):
        """The arrays ``parts`` joined along ``axis`` (vectors end to end; ``axis=1``:
        matrices side by side)."""
        if self.is_numpy:
            return np.concatenate(parts, axis=axis)
        return self.xp.concat(parts, axis=axis)

    def copy(self, a, out=None):
        """A copy of ``a`` (into ``out`` where given and writable)."""
        if self.is_numpy:
            if out is None:
                return a.copy()
            np.copyto(out, a)
            return out
        if self.is_torch:
            return a.clone() if out is None else out.copy_(a)
        return self.xp.asarray(a, copy=True)

    # -------------------------------------------------------------- elementwise
    def sub(self, a, b, out=None):
        """a - b (into ``out`` where the namespace can write in place)."""
        if self.is_numpy:
            return np.subtract(a, b, out=out)
        if self.is_torch and out is not None:
            return self.native.sub(a, b, out=out)
        return a - b

    def add(self, a, b, out=None):
        """a + b."""
        if self.is_numpy:
            return np.add(a, b, out=out)
        if self.is_torch and out is not None:
            return self.native.add(a, b, out=out)
        return a + b

    def scale(self, a, c: float, out=None):
        """c a for a Python float c."""
        if self.is_numpy:
            return np.multiply(a, c, out=out)
        if self.is_torch and out is not None:
            return self.native.mul(a, c, out=out)
        return a * c

    def matmul(self, a, b, out=None):
        if self.is_numpy:
            return np.matmul(a, b, out=out)
        if self.is_torch and out is not None:
            return self.native.matmul(a, b, out=out)
        return a @ b

    def clip0(self, X, upper: bool, keep=None, keep_mask=None):
        """min(X, 0) (``upper``) or max(X, 0) entrywise, in place where possible, except on
        the entries that stay as they are: flat indices ``keep`` (numpy, torch) or, for the
        other namespaces, where ``keep_mask`` is True. Returns the result."""
        if self.in_place:
            flat = X.reshape(-1)  # a view: X is contiguous
            saved = flat[keep] if keep is not None else None
            if self.is_numpy:
                (np.minimum if upper else np.maximum)(X, 0.0, out=X)
            else:
                X.clamp_(max=0.0) if upper else X.clamp_(min=0.0)
            if keep is not None:
                flat[keep] = saved
            return X
        xp = self.xp
        zero = xp.zeros((), dtype=X.dtype, device=self.device)
        Y = xp.minimum(X, zero) if upper else xp.maximum(X, zero)
        return Y if keep_mask is None else xp.where(keep_mask, X, Y)

    def add_diag(self, X, a: float, eye=None):
        """X + a I, in place where possible (``eye``: the identity, for the other
        namespaces)."""
        if self.is_numpy:
            X.flat[:: X.shape[0] + 1] += a
            return X
        if self.is_torch:
            X.diagonal().add_(a)
            return X
        return X + a * eye

    def add_sym_outer(self, X, alpha: float, x, f):
        """X + alpha (x f^T + f x^T) / 2: two BLAS rank-one updates in place on numpy."""
        if self.is_numpy:
            _ger(0.5 * alpha, x, f, X)
            _ger(0.5 * alpha, f, x, X)
            return X
        if self.is_torch:
            return X.addr_(x, f, alpha=0.5 * alpha).addr_(f, x, alpha=0.5 * alpha)
        xp = self.xp
        T = xp.reshape(x, (-1, 1)) * xp.reshape(f, (1, -1))
        return X + (0.5 * alpha) * (T + T.T)

    # ------------------------------------------------------------------ scalars
    def norm(self, x) -> float:
        """The 2-norm of a vector or the Frobenius norm of a matrix, as a float."""
        if self.is_numpy:
            return float(np.linalg.norm(x))
        return float(self.xp.linalg.vector_norm(x))

    def vdot(self, a, b) -> float:
        """sum(a * b) over all entries, as a float."""
        if self.is_numpy:
            return float(np.vdot(a, b))
        if self.is_torch:
            return float((a * b).sum())
        return float(self.xp.sum(a * b))

    def trace(self, X):
        """tr X as a 0-d array."""
        if self.is_numpy:
            return np.trace(X)
        return self.xp.linalg.trace(X)

    # ------------------------------------------------------------------- sparse
    def sparse(self, A: sp.spmatrix) -> Any:
        """The host sparse matrix ``A`` prepared for :meth:`spmv` on the device (scipy CSR on
        numpy, a torch CSR tensor, else a dense array: namespaces without sparse arrays are
        for tests)."""
        A = sp.csr_matrix(A)
        if self.is_numpy:
            return A
        if self.is_torch:
            with warnings.catch_warnings():  # "sparse CSR support is in beta"
                warnings.simplefilter("ignore", UserWarning)
                return self.native.sparse_csr_tensor(
                    self.native.as_tensor(A.indptr.astype(np.int64), device=self.device),
                    self.native.as_tensor(A.indices.astype(np.int64), device=self.device),
                    self.native.as_tensor(A.data.astype(np.float64), device=self.device),
                    size=A.shape, check_invariants=False)
        return self.asarray(A.toarray())

    def spmv(self, A, x):
        """A @ x for A from :meth:`sparse` and a device vector x."""
        if self.is_numpy:
            return A @ x
        if self.is_torch:
            return (A @ x.reshape(-1, 1)).reshape(-1)
        return A @ x

    def scatter_add(self, X, idx, vals):
        """X += vals at the flat indices ``idx`` (distinct), in place: numpy and torch only
        (the standard has no scatter)."""
        if self.is_numpy:
            X.ravel()[idx] += vals
        else:
            X.view(-1).index_add_(0, idx, vals)
        return X

    # ------------------------------------------------------------------- linalg
    def eigh(self, W):
        """Eigenvalues (ascending) and eigenvectors of the symmetric W, on the device."""
        return self.xp.linalg.eigh(W)


#: the host's backend (numpy), the default wherever no device is given
NUMPY = ArrayBackend("numpy", np, None, "cpu")


def _ger(alpha: float, x: np.ndarray, y: np.ndarray, X: np.ndarray) -> None:
    """X += alpha x y^T in place by BLAS dger (on X^T, the Fortran view of a C array)."""
    XT = X.T
    out = _dger(alpha, y, x, a=XT, overwrite_a=True)
    if not np.shares_memory(out, X):  # f2py made a copy (X not contiguous)
        X[...] = out.T
