import inspect
import math

import numpy as np
import pandas as pd
import pytest

from cudalab.chapter.published import beside_published
from cudalab.core.errors import MeasurementError
from cudalab.core.sweep import run_sweep
from cudalab.core.timing import _enough, summarize, time_cpu
from cudalab.labs.fw.scaling import cpu_times, fit_cubic, fit_quality, predict_cubic, with_speedups


def test_summarize_median_and_spread():
    s = summarize([4.0, 1.0, 3.0, 2.0, 100.0])
    assert s["time_ms"] == 3.0 and s["time_ms_min"] == 1.0 and s["time_ms_max"] == 100.0
    assert s["time_ms_q1"] == 2.0 and s["time_ms_q3"] == 4.0 and s["repeats"] == 5
    with pytest.raises(MeasurementError, match="no timing samples"):
        summarize([])


def test_repeat_policy():
    assert not _enough([1.0, 1.0], min_repeats=3, max_repeats=30, min_total_ms=0)
    assert _enough([1.0] * 3, min_repeats=3, max_repeats=30, min_total_ms=0)
    assert not _enough([1.0] * 3, min_repeats=3, max_repeats=30, min_total_ms=10)
    assert _enough([1.0] * 30, min_repeats=3, max_repeats=30, min_total_ms=1e9)


def test_time_cpu_runs_setup_before_every_timed_call():
    calls = []
    samples = time_cpu(lambda: calls.append("run"), setup=lambda: calls.append("setup"), min_repeats=4, min_total_s=0)
    assert len(samples) == 4 and (samples >= 0).all()
    assert calls == ["setup", "run"] * 4


def test_point_time_limit_is_checked_after_each_call():
    from cudalab.core import timing
    from cudalab.core.errors import PointTimeLimit, SkipPoint

    limit = timing._limit(0.5)
    timing._over_limit(0.4, "one call", limit)  # within the limit: nothing happens
    with pytest.raises(PointTimeLimit, match="0.7 s, over the per-point time limit of 0.5 s") as err:
        timing._over_limit(0.7, "one call", limit)
    assert isinstance(err.value, SkipPoint)  # a sweep records it as a skipped point
    assert timing._limit(0) is None and timing._limit(None) is None  # 0 means no limit
    timing._over_limit(1e9, "one call", timing._limit(0))


def test_the_settings_are_arguments_not_process_state():
    """Two chapters in one process (a Dask worker's threads, a test session) cannot change each
    other's progress bars or time limit: neither is a module global any more."""
    from cudalab.core import sweep, timing

    assert not hasattr(timing, "set_point_time_limit") and not hasattr(sweep, "show_progress")
    assert "time_limit_s" in inspect.signature(timing.time_gpu).parameters
    assert "show_progress" in inspect.signature(sweep.run_sweep).parameters


def test_cubic_fit_recovers_exact_model():
    n = np.array([250, 500, 1000, 1500])
    coef = fit_cubic(n, 2e-6 * n**3 + 3e-4 * n**2)
    assert coef == pytest.approx([2e-6, 3e-4], rel=1e-9)
    assert predict_cubic(coef, 5000) == pytest.approx(2e-6 * 5000**3 + 3e-4 * 5000**2)


def test_cpu_times_label_measured_and_extrapolated():
    cpu = pd.DataFrame({"n": [100, 200], "cpu_time_ms": [1.0, 8.0]})
    out = cpu_times(cpu, [100, 200, 400]).set_index("n")
    assert out.loc[100, "cpu_time_source"] == "measured" and out.loc[100, "cpu_time_ms"] == 1.0
    assert out.loc[400, "cpu_time_source"] == "extrapolated"
    assert out.loc[400, "cpu_time_ms"] == pytest.approx(64.0, rel=1e-6)
    assert fit_quality(cpu) == pytest.approx(0.0, abs=1e-9)


def test_wrong_results_never_get_a_speedup():
    gpu = pd.DataFrame(
        {
            "n": [100, 100, 100],
            "variant": ["a", "b", "c"],
            "time_ms": [0.5, 0.1, np.nan],
            "status": ["ok", "wrong", "skipped"],
        }
    )
    cpu = pd.DataFrame({"n": [100], "cpu_time_ms": [10.0]})
    out = with_speedups(gpu, cpu).set_index("variant")
    assert out.loc["a", "speedup_vs_cpu"] == pytest.approx(20.0)
    assert math.isnan(out.loc["b", "speedup_vs_cpu"]) and math.isnan(out.loc["c", "speedup_vs_cpu"])


def test_beside_published_labels_each_source_with_its_n():
    measured = pd.DataFrame(
        {
            "n": [1000, 4096, 4096, 4096],
            "block_edge": [8, 8, 16, 32],
            "speedup_vs_cpu": [5.0, 50.0, 40.0, np.nan],
            "status": ["ok", "ok", "ok", "wrong"],
        }
    )
    published = pd.DataFrame({"n": [5000, 5000], "block_edge": [8, 16], "speedup_vs_cpu": [17.3, 21.1]})
    out = beside_published(
        measured,
        published,
        on="block_edge",
        value="speedup_vs_cpu",
        measured_label="H100",
        published_label="GTX 680",
        key_label=lambda b: f"{b}x{b}",
    )
    assert set(out["source"]) == {"H100, N=4096", "GTX 680, N=5000"}
    assert list(out[out["source"].str.startswith("H100")]["block_edge"]) == ["8x8", "16x16"]
    assert out[out["source"].str.startswith("GTX")]["speedup_vs_cpu"].tolist() == [17.3, 21.1]


def test_sweep_records_skips_with_reasons_and_goes_on():
    class TooBig(Exception):
        pass

    def measure(p):
        if p["x"] == 2:
            raise TooBig("needs 3 GiB")
        return {"y": p["x"] * 10}

    df = run_sweep([{"x": 1}, {"x": 2}, {"x": 3}], measure, skip_on=(TooBig,))
    assert df["status"].tolist() == ["ok", "skipped", "ok"]
    assert df.loc[1, "reason"] == "TooBig: needs 3 GiB"
    assert df.loc[2, "y"] == 30


def test_sweep_does_not_hide_real_errors():
    with pytest.raises(RuntimeError, match="sweep point"):
        run_sweep([{"x": 1}], lambda p: 1 / 0)


def test_compare_counts_mismatches_on_host_arrays():
    from cudalab.core.check import compare

    ref = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert compare(ref.copy(), ref) == {"status": "ok", "mismatches": 0, "reason": ""}
    bad = ref.copy()
    bad[1, 2] = -1
    out = compare(bad, ref, "the CPU reference")
    assert out["status"] == "wrong" and out["mismatches"] == 1
    assert out["reason"] == "1 of 12 entries differ from the CPU reference"
