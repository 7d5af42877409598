"""pcsos: exact semi-supervised minimum sum-of-squares clustering with certificates."""

from pcsos.api import PCSOSClustering, Result, solve
from pcsos.errors import (
    BackendUnavailableError,
    InfeasibleError,
    InputError,
    PcsosError,
    UndecidedError,
)
from pcsos.feasibility import Feasibility, check_instance
from pcsos.problem import Instance, Problem, make_instance, sse

__version__ = "0.1.0"

__all__ = [
    "solve",
    "Result",
    "PCSOSClustering",
    "Instance",
    "Problem",
    "make_instance",
    "sse",
    "PcsosError",
    "InputError",
    "InfeasibleError",
    "BackendUnavailableError",
    "UndecidedError",
    "Feasibility",
    "check_instance",
    "__version__",
]
