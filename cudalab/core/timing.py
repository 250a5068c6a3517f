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

# ``time_limit_s``, the most wall-clock seconds one timed point may take (None or <= 0: no limit),
# comes from a chapter's notebook parameter ``point_time_limit_s`` (``Chapter.timing``). A running
# kernel cannot be interrupted, so the limit is checked after each call: a point whose single call
# overruns it is skipped with its reason; a point that is merely slow to repeat stops repeating at
# the limit.


def _limit(seconds: float | None) -> float | None:
    return float(seconds) if seconds and seconds > 0 else None


def _over_limit(elapsed_s: float, what: str, limit_s: float | None) -> None:
    if limit_s is not None and elapsed_s > limit_s:
        raise PointTimeLimit(
            f"{what} took {elapsed_s:.3g} s, over the per-point time limit of {limit_s:g} s (point_time_limit_s)"
        )


def _enough_time(samples: list[float], t0: float, limit_s: float | None) -> bool:
    """Stop repeating once the point has used its time limit, keeping the samples taken."""
    return limit_s is not None and len(samples) > 0 and time.perf_counter() - t0 > limit_s


def summarize(samples_ms: np.ndarray | list[float], prefix: str = "time_ms") -> dict[str, float]:
    """Median and spread of repeated timings (quartiles, min, max, count); where ``time_gpu``'s host
    fell behind its hold, ``host_behind_batches`` says in how many batches (never silently)."""
    s = np.asarray(samples_ms, dtype=float)
    if s.size == 0:
        raise MeasurementError("no timing samples")
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    behind = int(getattr(samples_ms, "host_behind", 0) or 0)
    return {
        prefix: float(med),
        f"{prefix}_q1": float(q1),
        f"{prefix}_q3": float(q3),
        f"{prefix}_min": float(s.min()),
        f"{prefix}_max": float(s.max()),
        "repeats": int(s.size),
        **({"host_behind_batches": behind} if behind else {}),
    }


def _enough(samples: list[float], min_repeats: int, max_repeats: int, min_total_ms: float) -> bool:
    return len(samples) >= max_repeats or (len(samples) >= min_repeats and sum(samples) >= min_total_ms)


SLOW_CALL_S = 0.25  # a call this long is its own warm-up: see time_gpu

# How samples are enqueued (see time_gpu): at most MAX_BATCH per batch, whose host dispatch
# (setup + run, as the warm-up measured it) stays under BATCH_HOST_MS, so the launches stay far
# below the driver's queue of pending launches while the stream is held.
MAX_BATCH = 32
BATCH_HOST_MS = 2.0
# The stream is held (kernels_cu/stream_block.cu) only for calls under BLOCK_BELOW_MS of GPU time,
# where a host gap could matter, and whose dispatch takes under HOLD_HOST_MAX_MS (a call of
# thousands of launches, a long Floyd-Warshall run, is never held: it would fill the queue).
BLOCK_BELOW_MS = 20.0
HOLD_HOST_MAX_MS = 1.0
HOLD_TIMEOUT_S = 0.25  # the spin's limit: a host that falls behind costs this, never a deadlock
HOLD_GIVE_UP = 2  # after this many held batches whose host fell behind, the point stops holding


# A call under GROUP_BELOW_MS of GPU time, with no setup between calls, is timed in groups: one
# event pair around as many consecutive calls as make GROUP_MS (at most GROUP_MAX_CALLS), each
# sample their mean. Recording an event pair costs the stream about 2 us, which a sample of one
# cuBLAS call at n = 256 (8.7 us) would count as a quarter of its time.
GROUP_BELOW_MS = 0.5
GROUP_MS = 1.0
GROUP_MAX_CALLS = 200


def calls_per_sample(call_ms: float, *, has_setup: bool) -> int:
    """How many consecutive calls one sample times (``time_gpu``): 1 where a setup must run
    before each call or the call is long enough for an event pair's cost not to matter; else
    enough calls for ``GROUP_MS`` of GPU time, at most ``GROUP_MAX_CALLS``."""
    if has_setup or call_ms >= GROUP_BELOW_MS:
        return 1
    return int(min(GROUP_MAX_CALLS, max(1, np.ceil(GROUP_MS / max(call_ms, 1e-6)))))


class Samples(np.ndarray):
    """Milliseconds per call (a float array), and ``host_behind``: how many held batches the host
    did not finish enqueueing before the hold timed out (their calls may include host gaps)."""

    host_behind: int = 0


def _samples(values: list[float], host_behind: int = 0) -> Samples:
    out = np.asarray(values, dtype=float).view(Samples)
    out.host_behind = host_behind
    return out


def holds(call_ms: float, host_ms: float) -> bool:
    """Whether samples of a call are enqueued behind a hold: only short calls (under
    ``BLOCK_BELOW_MS``), where the host's dispatch could leave the GPU idle inside the timed
    region, and only light dispatches (under ``HOLD_HOST_MAX_MS``), so a held batch never fills the
    launch queue."""
    return call_ms < BLOCK_BELOW_MS and host_ms < HOLD_HOST_MAX_MS


def batch_size(
    call_ms: float,
    host_ms: float,
    taken: list[float],
    *,
    min_repeats: int,
    max_repeats: int,
    min_total_ms: float,
    time_left_s: float | None = None,
) -> int:
    """How many samples to enqueue in the next batch (at least 1): as many as the repeat policy
    still needs (``min_repeats``, ``min_total_ms`` at ``call_ms`` each, at most ``max_repeats``), at
    most ``MAX_BATCH``, with their host dispatch (``host_ms`` each) under ``BATCH_HOST_MS``, and,
    under a per-point time limit, expected to end within ``time_left_s``. A call of
    ``SLOW_CALL_S`` or more is enqueued alone, checked against the limit after each call."""
    call_ms = max(call_ms, 1e-6)
    if call_ms >= SLOW_CALL_S * 1e3:
        return 1
    by_total = int(np.ceil(max(0.0, min_total_ms - sum(taken)) / call_ms))
    need = min(max(min_repeats - len(taken), by_total), max_repeats - len(taken))
    size = min(need, MAX_BATCH, int(BATCH_HOST_MS / max(host_ms, 1e-6)))
    if time_left_s is not None:
        size = min(size, int(time_left_s * 1e3 / call_ms))
    return max(1, size)


class StreamHold:
    """Holds a stream (``kernels_cu/stream_block.cu``) while the host enqueues work behind it;
    ``release()`` lets it run and says whether the hold had already timed out (the host fell
    behind). One per timed point: its flags live in pinned host memory the GPU reads."""

    def __init__(self, stream) -> None:
        from cudalab.core.gpu import require_cupy
        from cudalab.core.kernels import load_kernel

        cp = require_cupy()
        self.stream = stream
        self.kernel = load_kernel("stream_block.cu", "stream_block")
        self._memory = cp.cuda.alloc_pinned_memory(8)
        self.flags = np.frombuffer(self._memory, dtype=np.int32, count=2)  # release, timed_out
        self.flags[:] = 0

    def hold(self) -> None:
        self.flags[:] = 0
        ptr = self._memory.ptr
        self.kernel(
            (1,), (1,), (np.uintp(ptr), np.uintp(ptr + 4), np.uint64(int(HOLD_TIMEOUT_S * 1e9))), stream=self.stream
        )

    def release(self) -> None:
        """Let the held stream run."""
        self.flags[0] = 1

    def timed_out(self) -> bool:
        """After the stream has finished the held work: whether the hold had given up."""
        return bool(self.flags[1])


def time_gpu(
    run: Callable[[], None],
    *,
    setup: Callable[[], None] | None = None,
    warmup: int = 1,
    min_repeats: int = 3,
    max_repeats: int = 30,
    min_total_s: float = 0.3,
    stream=None,
    time_limit_s: float | None = None,
) -> Samples:
    """Milliseconds per call of ``run`` on the GPU, measured with CUDA events: one event pair per
    call, so the median and spread are per call.

    ``setup`` runs before each call, on the same stream but outside the timed region; it must
    enqueue GPU work, never wait for it. After ``warmup`` untimed calls (module load, JIT, caches),
    calls are repeated until at least ``min_repeats`` and ``min_total_s`` of GPU time, or
    ``max_repeats``, so fast kernels get many samples and slow ones few.

    Fair to every contestant, our kernels and a library's host-heavy call alike: samples are
    enqueued in batches (``batch_size``) of [setup, start event, run, end event], with no
    synchronization inside a batch, and a short call's batch is enqueued behind a hold on the
    stream (``holds``, ``StreamHold``), so the host is ahead of the GPU and its dispatch never
    lands inside a timed region. A batch whose hold timed out before the host finished enqueueing
    is counted in the result's ``host_behind`` (its samples stay: they are real, perhaps slower,
    calls); after ``HOLD_GIVE_UP`` of them the point stops holding. A short call with no setup is
    timed in groups of consecutive calls per event pair (``calls_per_sample``), so that the cost of
    recording events is not counted as the call's; each sample is then the group's mean.

    Repeats follow the expected time: a warm-up call that takes ``SLOW_CALL_S`` or more is timed
    with events and kept as the first sample (what a warm-up removes, module loads and cold
    caches, is a millisecond or two, under 1% of a quarter second), so a slow solve costs three
    calls, not four.

    ``time_limit_s`` bounds the point's wall clock (see ``_over_limit``): a call over it raises
    ``PointTimeLimit``; repeats stop at it.
    """
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    limit_s = _limit(time_limit_s)
    stream = stream or cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    t0 = time.perf_counter()
    samples: list[float] = []
    call_ms, host_ms = 0.0, 0.0
    for _ in range(warmup):
        stream.synchronize()
        t1 = time.perf_counter()
        if setup:
            setup()
        start.record(stream)
        run()
        end.record(stream)
        host_ms = (time.perf_counter() - t1) * 1e3
        end.synchronize()
        _over_limit(time.perf_counter() - t1, "one warm-up call", limit_s)
        call_ms = cp.cuda.get_elapsed_time(start, end)
        if time.perf_counter() - t1 >= SLOW_CALL_S:
            samples.append(call_ms)
            break
    if not samples and host_ms > HOLD_HOST_MAX_MS:
        # The first call's dispatch includes one-off host work (a JIT build, a library handle);
        # the host's own pace, which decides holding and batch sizes, is that of a later call.
        stream.synchronize()
        t1 = time.perf_counter()
        if setup:
            setup()
        run()
        host_ms = (time.perf_counter() - t1) * 1e3
        stream.synchronize()
    hold = None
    behind = 0
    events: list[tuple] = []
    group = 1
    while not _enough(samples, min_repeats, max_repeats, min_total_s * 1e3) and not _enough_time(samples, t0, limit_s):
        left = None if limit_s is None else max(0.0, limit_s - (time.perf_counter() - t0))
        group = calls_per_sample(call_ms or 1.0, has_setup=setup is not None)
        size = batch_size(
            (call_ms or 1.0) * group,
            host_ms * group,
            samples,
            min_repeats=min_repeats,
            max_repeats=max_repeats,
            min_total_ms=min_total_s * 1e3,
            time_left_s=left,
        )
        held = behind < HOLD_GIVE_UP and holds(call_ms or 1.0, host_ms)
        if held and hold is None:
            hold = StreamHold(stream)
        while len(events) < size:
            events.append((cp.cuda.Event(), cp.cuda.Event()))
        if held:
            hold.hold()
        t1 = time.perf_counter()
        for first, last in events[:size]:
            if setup:
                setup()
            first.record(stream)
            for _ in range(group):
                run()
            last.record(stream)
        enqueued_ms = (time.perf_counter() - t1) * 1e3
        if held:
            hold.release()
        stream.synchronize()
        host_ms = enqueued_ms / (size * group)  # the host's pace: nothing inside a batch waits on the GPU
        if held and hold.timed_out():
            behind += 1
        batch = [cp.cuda.get_elapsed_time(first, last) / group for first, last in events[:size]]
        samples.extend(batch)
        call_ms = float(np.median(batch))
        for ms in batch:
            _over_limit(ms / 1e3, "one call", limit_s)
    return _samples(samples, behind)


def back_to_back(
    run: Callable[[], None],
    *,
    calls: int = 50,
    warmup: int = 1,
    hold: bool = True,
    stream=None,
) -> float:
    """Milliseconds per call of ``calls`` consecutive calls of ``run`` between one event pair, as a
    standalone benchmark times a library call: the reference ``time_gpu``'s per-call samples are
    checked against (``core.baseline``). ``run`` must not consume its input (it is called again
    on its own output). Held (``StreamHold``) while the host enqueues, where ``hold``; a hold that
    timed out is said by ``MeasurementError``, never returned as a time."""
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    stream = stream or cp.cuda.get_current_stream()
    for _ in range(warmup):
        run()
    stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    holder = StreamHold(stream) if hold else None
    if holder:
        holder.hold()
    start.record(stream)
    for _ in range(calls):
        run()
    end.record(stream)
    if holder:
        holder.release()
    end.synchronize()
    if holder and holder.timed_out():
        raise MeasurementError(
            f"the host did not enqueue {calls} back-to-back calls within the hold's {HOLD_TIMEOUT_S:g} s"
        )
    return cp.cuda.get_elapsed_time(start, end) / calls


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
