"""Floyd-Warshall, chapters 01-04: graphs and conventions (``graphs``), references (``reference``),
the solver and sweeps every kernel shares (``harness``), launch recipes of the per-k kernels
(``per_k``) and of the blocked kernels (``blocked``), CPU-time extrapolation (``scaling``), and the
NTHU test-case format of lab 001 with its GPU solve (``nthu``, ``nthu_gpu``).
"""
