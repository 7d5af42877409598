"""Compiled (Cython, nogil) kernels. Pure-numpy references live in the tests only."""

from pcsos._kernels._separation import max_asymmetry

__all__ = ["max_asymmetry"]
