"""Timing like a benchmark harness: CUDA events, warm-up, repeats, median and spread.

``cupyx.profiler.benchmark`` times with events too, but it has no per-run
setup hook; in-place algorithms (Floyd-Warshall overwrites its matrix) need
their input restored before every run and outside the timed region, so the
loop lives here, in one place for every chapter.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from cudalab.core.errors import MeasurementError


def summarize(samples_ms: np.ndarray | list[float], prefix: str = "time_ms") -> dict[str, float]:
    """Median and spread of repeated timings (quartiles, min, max, count)."""
    s = np.asarray(samples_ms, dtype=float)
    if s.size == 0:
        raise MeasurementError("no timing samples")
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    return {prefix: float(med), f"{prefix}_q1": float(q1), f"{prefix}_q3": float(q3),
            f"{prefix}_min": float(s.min()), f"{prefix}_max": float(s.max()), "repeats": int(s.size)}


def _enough(samples: list[float], min_repeats: int, max_repeats: int, min_total_ms: float) -> bool:
    return len(samples) >= max_repeats or (len(samples) >= min_repeats and sum(samples) >= min_total_ms)


def time_gpu(run: Callable[[], None], *, setup: Optional[Callable[[], None]] = None, warmup: int = 1,
             min_repeats: int = 3, max_repeats: int = 30, min_total_s: float = 0.3, stream=None) -> np.ndarray:
    """Milliseconds per call of ``run`` on the GPU, measured with CUDA events.

    ``setup`` runs before each call, on the same stream but outside the timed
    region. After ``warmup`` untimed calls (module load, JIT, caches), calls are
    repeated until at least ``min_repeats`` and ``min_total_s`` of GPU time, or
    ``max_repeats``, so fast kernels get many samples and slow ones few.
    """
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    stream = stream or cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        if setup:
            setup()
        run()
    stream.synchronize()
    samples: list[float] = []
    while not _enough(samples, min_repeats, max_repeats, min_total_s * 1e3):
        if setup:
            setup()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end))
    return np.asarray(samples)


def time_cpu(run: Callable[[], None], *, setup: Optional[Callable[[], None]] = None, warmup: int = 0,
             min_repeats: int = 1, max_repeats: int = 10, min_total_s: float = 0.5) -> np.ndarray:
    """Milliseconds per call of a host function (``perf_counter``), same policy as ``time_gpu``."""
    for _ in range(warmup):
        if setup:
            setup()
        run()
    samples: list[float] = []
    while not _enough(samples, min_repeats, max_repeats, min_total_s * 1e3):
        if setup:
            setup()
        t0 = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t0) * 1e3)
    return np.asarray(samples)
