"""Chapter-agnostic machinery: the GPU, kernel loading, launches, timing, sweeps, checks, plots.

Imports nothing from ``cudalab.chapter``, ``cudalab.labs`` or ``cudalab.report``, and never CuPy
at import time (``gpu.cupy_or_none`` imports it on first use).
"""
