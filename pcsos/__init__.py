"""pcsos: exact semi-supervised minimum sum-of-squares clustering with certificates."""

from pcsos.errors import BackendUnavailableError, InfeasibleError, InputError, PcsosError
from pcsos.problem import Instance, Problem, make_instance, sse

__version__ = "0.1.0"

__all__ = [
    "Instance",
    "Problem",
    "make_instance",
    "sse",
    "PcsosError",
    "InputError",
    "InfeasibleError",
    "BackendUnavailableError",
    "__version__",
]
