"""How many CPU threads this process may spread its own work over: child compilers (nvcc,
cuobjdump), NVRTC builds and the C references, each run on a pool of threads.

A serial build has the host to itself, and a pool sized for the host is right. A build on Dask
runs several chapters on one host at once, one per GPU; a pool sized for the whole host in each of
them oversubscribes its cores several times over, and the chapters that compile most slow one
another down (measured on a 4 x H100 host: chapter 05's parallel build of its tuning grid took
twice its serial time beside the others' compiles). So the build tells each chapter's kernel its
share of the host's cores (``CPU_SHARE_ENV``, set by ``report.cluster`` beside
``OMP_NUM_THREADS``), and every pool here is sized by ``cpu_share()``. The process's CPU
affinity (a Dask-CUDA worker is pinned to its GPU's NUMA node) bounds it too.
"""

from __future__ import annotations

import os

CPU_SHARE_ENV = "CUDALAB_CPUS"


def cpu_share() -> int:
    """The CPU threads this process's own pools may use: the CPUs it may run on, at most the
    share its build gave it in ``CPU_SHARE_ENV`` (a positive integer; anything else is ignored)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    given = os.environ.get(CPU_SHARE_ENV, "").strip()
    if given.isdigit() and int(given) > 0:
        cpus = min(cpus, int(given))
    return max(1, cpus)
