"""How many bytes a kernel must move at the least, to turn a time into an effective bandwidth.

Effective bandwidth = bytes of the model / measured time. It is a lower bound on the traffic the
kernel really caused (re-reads, partly used sectors and cache misses add to it), so its fraction of
the measured copy ceiling says how close the kernel comes to being limited by DRAM alone.
"""

from __future__ import annotations

import numpy as np

INT32 = 4
FLOAT32 = 4


def floyd_warshall_step_bytes(n: int) -> int:
    """One per-k step: read and write every d[i][j] once (row k and column k, n entries each,
    are read too but are negligible beside n^2, and counted)."""
    return INT32 * (2 * n * n + 2 * n)


def floyd_warshall_bytes(n: int) -> int:
    """A whole solve: n steps."""
    return n * floyd_warshall_step_bytes(n)


def reduction_bytes(n: int) -> int:
    """A max reduction reads every float once (its few partial results are negligible)."""
    return FLOAT32 * n


def effective_GBps(nbytes, time_ms):
    """Bytes over milliseconds, in GB/s (10^9 bytes per second)."""
    return np.asarray(nbytes, dtype=float) / (np.asarray(time_ms, dtype=float) * 1e-3) / 1e9
