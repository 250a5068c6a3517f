"""Turning a measured time into a rate: bytes over time as GB/s, operations as GFLOP/s.

The bytes come from a model each kernel family states beside its kernels (what it must move at
the least); the effective bandwidth is therefore a lower bound on the traffic the kernel caused,
and its fraction of a copy ceiling measured in the same run says how close the kernel comes to
being limited by DRAM alone.
"""

from __future__ import annotations

import numpy as np


def effective_GBps(nbytes, time_ms):
    """Bytes over milliseconds, in GB/s (10^9 bytes per second); arrays or scalars."""
    return np.asarray(nbytes, dtype=float) / (np.asarray(time_ms, dtype=float) * 1e-3) / 1e9


def gflop_per_s(flops, time_ms):
    """Floating-point operations over milliseconds, in GFLOP/s (10^9 per second); arrays or scalars."""
    return np.asarray(flops, dtype=float) / (np.asarray(time_ms, dtype=float) * 1e-3) / 1e9
