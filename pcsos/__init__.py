"""pcsos: exact semi-supervised minimum sum-of-squares clustering with certificates.

The names below are imported on first use (PEP 562), so that ``import pcsos.cli`` (the
``pcsos`` command) starts in milliseconds and can take over Ctrl-C before numpy and the
solver are loaded; ``from pcsos import solve`` works as usual.
"""

import importlib as _importlib
import os as _os

__version__ = "0.1.0"

# OpenBLAS's idle worker threads spin for 2**T cycles after each call (T = 28 unless
# ``OPENBLAS_THREAD_TIMEOUT`` says otherwise, about 0.1 s). Between the ADMM's BLAS calls
# the main thread runs array passes of its own, and a spinning worker takes the core they
# need: with the default, 2 BLAS threads ran 0.11-0.7x the iterations per second of one
# (benchmarks/bench_blas_timeout.py, docs/benchmarks.md); T = 20 was the best measured.
# OpenBLAS reads the variable once, when it loads, so this counts only where pcsos is
# imported before numpy and scipy (the ``pcsos`` command always is). A value the user set
# stands, as scikit-learn does with its ``KMP_*`` defaults.
_BLAS_THREAD_TIMEOUT = "20"
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", _BLAS_THREAD_TIMEOUT)

_EXPORTS = {
    "solve": "pcsos.api",
    "Result": "pcsos.api",
    "SolverOptions": "pcsos.options",
    "PCSOSClustering": "pcsos.estimator",
    "Instance": "pcsos.problem",
    "Problem": "pcsos.problem",
    "make_instance": "pcsos.problem",
    "sse": "pcsos.problem",
    "PcsosError": "pcsos.errors",
    "InputError": "pcsos.errors",
    "InfeasibleError": "pcsos.errors",
    "BackendUnavailableError": "pcsos.errors",
    "UndecidedError": "pcsos.errors",
    "Feasibility": "pcsos.feasibility",
    "check_instance": "pcsos.feasibility",
    "impact": "pcsos.pair_impact",
    "certify": "pcsos.certification",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pcsos' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    # the public names only: not the helpers above, nor the submodules that imports bind
    return sorted(__all__)
