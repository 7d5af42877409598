"""pcsos: exact semi-supervised minimum sum-of-squares clustering with certificates.

The names below are imported on first use (PEP 562), so that ``import pcsos.cli`` (the
``pcsos`` command) starts in milliseconds and can take over Ctrl-C before numpy and the
solver are loaded; ``from pcsos import solve`` works as usual.
"""

import importlib as _importlib

__version__ = "0.1.0"

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
