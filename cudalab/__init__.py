"""cudalab: parameterized Jupyter lab notebooks for GPU performance experiments.

Layers, each a subpackage (ARCHITECTURE.md draws them):

- ``core``: chapter-agnostic machinery (GPU, kernels, launches, timing, sweeps, checks, plots);
- ``toolchain``: the CUDA tools as child processes (nvcc, cuobjdump, ncu, compute-sanitizer);
- ``chapter``: a chapter's life (profile, measure or replay, tables, headline summary);
- ``labs``: one module per kernel family, with its launch recipes, references and checks;
- ``report``: build, stitch, recordings, BENCHMARKS.md, comparisons (no CuPy, no lab code);
- ``explore``: JupyterLab's explorer of a chapter's data (never in a batch build);
- ``grading``: a student's kernels beside the reference, and a class graded (``--kernels``,
  ``--grade``), each kernel run in a child process of its own.

Faces (command lines) sit outside them: ``build_report.py``, ``python -m cudalab.apsp``,
``python -m cudalab.kmeans`` and ``tools/``. Nothing here imports CuPy at import time, so replay
works without a GPU.
"""

from typing import Any

__all__ = ["Chapter", "open_chapter"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``from cudalab import open_chapter`` loads the chapter layer (and pandas) on first use only,
    so that tools needing just ``cudalab.core`` start fast and with the standard library alone."""
    if name in __all__:
        from cudalab.chapter import handle

        return getattr(handle, name)
    raise AttributeError(f"module 'cudalab' has no attribute {name!r}")
