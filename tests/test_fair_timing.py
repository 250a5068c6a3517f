"""CPU tests of fair timing: how time_gpu batches and holds (with a fake CuPy that logs what the
host enqueues), and the baseline check's decision (core/baseline.py)."""

import math

import numpy as np
import pandas as pd
import pytest

from cudalab.core import baseline, timing
from cudalab.core.timing import batch_size, holds, summarize

POLICY = {"min_repeats": 3, "max_repeats": 30, "min_total_ms": 300.0}


# ------------------------------------------------------------------------- batching and holding


def test_short_light_calls_are_held_slow_or_launch_heavy_ones_never():
    assert holds(0.04, 0.05)  # cupy.matmul at n = 256: GPU time below the host's dispatch
    assert not holds(50.0, 0.05)  # a slow call: a host gap is negligible
    assert not holds(2.0, 1.5)  # thousands of launches per call (Floyd-Warshall): would fill the queue


def test_batch_covers_what_the_repeat_policy_needs_within_the_caps():
    assert batch_size(100.0, 0.01, [], **POLICY) == 3  # 3 x 100 ms reach 300 ms
    assert batch_size(1.0, 0.01, [], **POLICY) == 30  # max_repeats
    assert batch_size(0.01, 0.01, [], **{**POLICY, "max_repeats": 1000}) == timing.MAX_BATCH
    assert batch_size(0.01, 0.5, [], **{**POLICY, "max_repeats": 1000}) == 4  # 4 x 0.5 ms of dispatch = 2 ms
    assert batch_size(1.0, 0.01, [1.0] * 29, **POLICY) == 1  # one more to max_repeats
    assert batch_size(10.0, 0.01, [100.0] * 3, **POLICY) == 1  # policy met: never less than one


def test_batch_is_one_for_slow_calls_and_within_the_time_left():
    assert batch_size(timing.SLOW_CALL_S * 1e3, 0.01, [], **POLICY) == 1
    assert batch_size(40.0, 0.01, [], **POLICY, time_left_s=0.1) == 2  # 2 x 40 ms fit in 100 ms
    assert batch_size(40.0, 0.01, [], **POLICY, time_left_s=0.0) == 1


class FakeStream:
    def __init__(self, log):
        self.log = log

    def synchronize(self):
        self.log.append("sync")


class FakeEvent:
    def __init__(self, log):
        self.log = log

    def record(self, stream):
        self.log.append("record")

    def synchronize(self):
        self.log.append("sync")


class FakeCupy:
    """Just enough of CuPy for time_gpu: events and a stream that log, a fixed elapsed time."""

    def __init__(self, log, call_ms):
        stream = FakeStream(log)

        class cuda:  # noqa: N801  (CuPy's name)
            Event = staticmethod(lambda: FakeEvent(log))
            get_current_stream = staticmethod(lambda: stream)
            get_elapsed_time = staticmethod(lambda a, b: call_ms)

        self.cuda = cuda


class FakeHold:
    """Stands in for StreamHold (which launches kernels_cu/stream_block.cu)."""

    late = False

    def __init__(self, stream):
        self.log = stream.log

    def hold(self):
        self.log.append("hold")

    def release(self):
        self.log.append("release")

    def timed_out(self):
        return FakeHold.late


@pytest.fixture
def fake_gpu(monkeypatch):
    log: list[str] = []

    def install(call_ms: float, late: bool = False):
        monkeypatch.setattr("cudalab.core.gpu.require_cupy", lambda: FakeCupy(log, call_ms))
        monkeypatch.setattr(timing, "StreamHold", FakeHold)
        FakeHold.late = late
        return log

    return install


def test_a_short_call_is_timed_in_held_batches_without_a_sync_between_samples(fake_gpu):
    log = fake_gpu(0.05)
    samples = timing.time_gpu(
        lambda: log.append("run"), setup=lambda: log.append("setup"), min_repeats=5, max_repeats=5, min_total_s=0
    )
    assert len(samples) == 5 and samples.host_behind == 0
    timed = log[log.index("hold") :]
    assert timed[: 1 + 4 * 5] == ["hold"] + ["setup", "record", "run", "record"] * 5
    assert timed[1 + 4 * 5] == "release" and "sync" not in timed[: 1 + 4 * 5 + 1]


def test_a_slow_call_is_never_held(fake_gpu):
    log = fake_gpu(100.0)
    samples = timing.time_gpu(lambda: log.append("run"), min_repeats=3, max_repeats=3, min_total_s=0)
    assert len(samples) == 3 and "hold" not in log


def test_a_host_that_falls_behind_is_counted_and_stops_holding(fake_gpu, monkeypatch):
    monkeypatch.setattr(timing, "MAX_BATCH", 2)  # 8 samples in 4 batches
    log = fake_gpu(0.05, late=True)
    samples = timing.time_gpu(lambda: log.append("run"), min_repeats=8, max_repeats=8, min_total_s=0)
    assert len(samples) == 8
    assert samples.host_behind == timing.HOLD_GIVE_UP and log.count("hold") == timing.HOLD_GIVE_UP
    assert log.count("sync") >= 1 + 4  # after the warm-up, and once per batch
    assert summarize(samples)["host_behind_batches"] == timing.HOLD_GIVE_UP
    assert "host_behind_batches" not in summarize([1.0, 2.0])


# ------------------------------------------------------------------------------ baseline check


def test_verdict_within_tolerance_after_one_remeasurement_or_flagged():
    assert baseline.verdict(2.7, 2.666, None) == baseline.OK  # 1.3% off
    assert baseline.verdict(2.978, 2.666, 2.67) == baseline.REMEASURED  # the outlier, measured again
    assert baseline.verdict(2.978, 2.666, 2.95) == baseline.FLAGGED
    assert baseline.verdict(0.030, 0.038, 0.030) == baseline.FLAGGED  # faster than the reference counts too
    assert baseline.verdict(2.978, 2.666, None) == baseline.FLAGGED


def test_check_measures_again_only_when_off_and_keeps_the_sweep_figure_when_flagged():
    again = []

    def measure_again():
        again.append(1)
        return 2.95

    ok = baseline.check("cuBLAS", {"n": 4096}, 2.67, measure_again, lambda: 2.666)
    assert ok["status"] == "ok" and not again and ok["remeasured_time_ms"] is None and ok["reason"] == ""
    flagged = baseline.check("cuBLAS", {"n": 4096}, 2.978, measure_again, lambda: 2.666)
    assert again == [1] and flagged["status"] == "flagged" and flagged["time_ms"] == 2.978
    assert "flagged" in flagged["reason"] and "11.7%" in flagged["reason"]
    fixed = baseline.check("cuBLAS", {"n": 4096}, 2.978, lambda: 2.67, lambda: 2.666)
    assert fixed["status"] == "remeasured" and fixed["time_ms"] == 2.67 and fixed["off_by"] < 0.03


def test_markdown_names_a_flag_and_a_missing_recording():
    assert "not recorded by this recording" in baseline.markdown(None)
    rows = pd.DataFrame(
        [
            baseline.check("cuBLAS SGEMM", {"n": 4096}, 2.978, lambda: 2.95, lambda: 2.666),
            baseline.check("cupy.max", {"n": 1 << 20}, 1.0, lambda: 1.0, lambda: 1.01),
        ]
    )
    text = baseline.markdown(rows)
    assert "**FLAGGED:** cuBLAS SGEMM at n = 4096" in text and "cupy.max at n = 1048576" in text
    assert "agrees" in text


def test_matmul_checks_cublas_at_4096_or_the_largest_size_below():
    from cudalab.labs import matmul as mm

    frame = pd.DataFrame(
        {"n": [256, 1024, 4096, 6400, 1024], "kernel": [mm.CUBLAS] * 4 + ["ours"], "status": ["ok"] * 5}
    )
    assert mm.check_point(frame) == 4096
    assert mm.check_point(frame[~frame["n"].eq(4096)]) == 1024
    assert mm.check_point(frame[frame["n"].eq(6400)]) == 6400
    assert mm.check_point(frame.assign(status="wrong")) is None


def test_kmeans_baseline_is_the_cupy_iterations_device_stages():
    from cudalab.labs.kmeans import chapter as km

    rows = [
        {"n": 8, "d": 2, "k": 2, "variant": "cupy", "iteration": it, "stage": s, "time_ms": ms, "status": "ok"}
        for it in range(3)
        for s, ms in (("assign", 1.0 + it), ("delta", 0.5), ("update", 0.5), ("transfer", 9.0))
    ]
    stages = pd.DataFrame(rows)
    assert km.device_iteration_ms(stages, 8, 2, 2) == 3.0  # median of 2, 3, 4; the host's transfer left out
    assert math.isnan(km.device_iteration_ms(stages, 16, 2, 2))
    assert np.isnan(km.device_iteration_ms(stages.assign(status="skipped"), 8, 2, 2))


def test_benchmarks_show_a_recorded_baseline_check_and_nothing_without_one(tmp_path):
    from cudalab.report.benchmarks import baseline_lines

    assert baseline_lines(tmp_path / "baseline_check.csv") == []
    rows = pd.DataFrame([baseline.check("cuBLAS SGEMM", {"n": 4096}, 2.978, lambda: 2.95, lambda: 2.666)])
    rows.to_csv(tmp_path / "baseline_check.csv", index=False)
    (line,) = baseline_lines(tmp_path / "baseline_check.csv")
    assert "cuBLAS SGEMM at n = 4096: **FLAGGED**" in line and "2.978 ms" in line and "50 back-to-back" in line


def test_a_first_call_slowed_by_one_off_host_work_does_not_stop_holding(fake_gpu):
    """The first call of a CuPy routine builds its kernel on the host (a JIT, a cuBLAS handle): its
    dispatch is no measure of the host's pace. time_gpu takes the pace from a later call, so a
    short call is still held; timed without holding, its samples would include the host's gaps."""
    import time as clock

    log = fake_gpu(0.05)
    calls = []

    def run():
        if not calls:
            clock.sleep(0.005)  # 5 ms of one-off host work, over HOLD_HOST_MAX_MS
        calls.append(1)
        log.append("run")

    samples = timing.time_gpu(run, min_repeats=5, max_repeats=5, min_total_s=0)
    assert len(samples) == 5 and "hold" in log
    group = timing.calls_per_sample(0.05, has_setup=False)
    assert log.count("run") == 2 + 5 * group  # the warm-up, the pace call, five timed samples


def test_a_short_call_without_setup_is_timed_in_groups_per_event_pair(fake_gpu):
    """An event pair costs the stream about 2 us: a short call with no setup is timed as groups of
    consecutive calls, each sample their mean (the fake's elapsed time is per pair: 0.05 ms)."""
    log = fake_gpu(0.05)
    samples = timing.time_gpu(lambda: log.append("run"), min_repeats=3, max_repeats=3, min_total_s=0)
    group = timing.calls_per_sample(0.05, has_setup=False)
    assert group == 20 and len(samples) == 3
    assert np.allclose(samples, 0.05 / group)
    timed = log[log.index("hold") :]
    first = timed.index("record")
    assert timed[first : first + group + 2] == ["record"] + ["run"] * group + ["record"]


def test_a_call_with_setup_or_a_long_call_is_one_call_per_sample():
    assert timing.calls_per_sample(0.05, has_setup=True) == 1
    assert timing.calls_per_sample(timing.GROUP_BELOW_MS, has_setup=False) == 1
    assert timing.calls_per_sample(1e-5, has_setup=False) == timing.GROUP_MAX_CALLS
