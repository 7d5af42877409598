"""Build the compiled kernels in ``pcsos/_kernels`` (everything else is in pyproject.toml)."""

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup


def _kernel(name: str) -> Extension:
    """The extension ``pcsos._kernels.<name>`` from its .pyx, with numpy's headers."""
    return Extension(
        f"pcsos._kernels.{name}",
        [f"pcsos/_kernels/{name}.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=["-O3"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    ext_modules=cythonize(
        [_kernel("_separation"), _kernel("_pricing")],
        language_level="3",
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ),
)
