"""Timing like a benchmark harness: CUDA events, warm-up, repeats, median and spread.

``cupyx.profiler.benchmark`` times with events too, but it has no per-run
setup hook; in-place algorithms (Floyd-Warshall overwrites its matrix) need
their input restored before every run and outside the timed region, so the
loop lives here, in one place for every chapter.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from cudalab.core.errors import MeasurementError, PointTimeLimit

# The most wall-clock seconds one sweep point may take (None: no limit). A running kernel cannot
# be interrupted, so the limit is checked after each call: a point whose single call overruns it
# is skipped with its reason; a point that is merely slow to repeat stops repeating at the limit.
_point_limit_s: float | None = None


def set_point_time_limit(seconds: float | None) -> None:
    """Limit every timed point of this process to ``seconds`` of wall clock (None or <= 0: none).
    A chapter sets it from its notebook parameter ``point_time_limit_s``."""
    global _point_limit_s
    _point_limit_s = float(seconds) if seconds and seconds > 0 else None


def _over_limit(elapsed_s: float, what: str) -> None:
    if _point_limit_s is not None and elapsed_s > _point_limit_s:
        raise PointTimeLimit(
            f"{what} took {elapsed_s:.3g} s, over the per-point time limit of {_point_limit_s:g} s (point_time_limit_s)"
        )


def _enough_time(samples: list[float], t0: float) -> bool:
    """Stop repeating once the point has used its time limit, keeping the samples taken."""
    return _point_limit_s is not None and len(samples) > 0 and time.perf_counter() - t0 > _point_limit_s


def summarize(samples_ms: np.ndarray | list[float], prefix: str = "time_ms") -> dict[str, float]:
    """Median and spread of repeated timings (quartiles, min, max, count)."""
    s = np.asarray(samples_ms, dtype=float)
    if s.size == 0:
        raise MeasurementError("no timing samples")
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    return {
        prefix: float(med),
        f"{prefix}_q1": float(q1),
        f"{prefix}_q3": float(q3),
        f"{prefix}_min": float(s.min()),
        f"{prefix}_max": float(s.max()),
        "repeats": int(s.size),
    }


def _enough(samples: list[float], min_repeats: int, max_repeats: int, min_total_ms: float) -> bool:
    return len(samples) >= max_repeats or (len(samples) >= min_repeats and sum(samples) >= min_total_ms)


SLOW_CALL_S = 0.25  # a call this long is its own warm-up: see time_gpu


def time_gpu(
    run: Callable[[], None],
    *,
    setup: Callable[[], None] | None = None,
    warmup: int = 1,
    min_repeats: int = 3,
    max_repeats: int = 30,
    min_total_s: float = 0.3,
    stream=None,
) -> np.ndarray:
    """Milliseconds per call of ``run`` on the GPU, measured with CUDA events.

    ``setup`` runs before each call, on the same stream but outside the timed
    region. After ``warmup`` untimed calls (module load, JIT, caches), calls are
    repeated until at least ``min_repeats`` and ``min_total_s`` of GPU time, or
    ``max_repeats``, so fast kernels get many samples and slow ones few.

    Repeats follow the expected time: a warm-up call that takes ``SLOW_CALL_S`` or more is timed
    with events and kept as the first sample (what a warm-up removes, module loads and cold
    caches, is a millisecond or two, under 1% of a quarter second), so a slow solve costs three
    calls, not four.
    """
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    stream = stream or cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    t0 = time.perf_counter()
    samples: list[float] = []
    for _ in range(warmup):
        if setup:
            setup()
        t1 = time.perf_counter()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        _over_limit(time.perf_counter() - t1, "one warm-up call")
        if time.perf_counter() - t1 >= SLOW_CALL_S:
            samples.append(cp.cuda.get_elapsed_time(start, end))
            break
    while not _enough(samples, min_repeats, max_repeats, min_total_s * 1e3) and not _enough_time(samples, t0):
        if setup:
            setup()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end))
        _over_limit(samples[-1] / 1e3, "one call")
    return np.asarray(samples)


def time_cpu(
    run: Callable[[], None],
    *,
    setup: Callable[[], None] | None = None,
    warmup: int = 0,
    min_repeats: int = 1,
    max_repeats: int = 10,
    min_total_s: float = 0.5,
) -> np.ndarray:
    """Milliseconds per call of a host function (``perf_counter``), same repeat policy as
    ``time_gpu``. The per-point time limit does not apply: a CPU run is a reference that the
    GPU points are checked against, bounded by each chapter's ``cpu_max_n``."""
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
