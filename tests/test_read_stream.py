"""Chapter 00's read-only ceiling row, without a GPU: the fastest correct launch, never a wrong one,
and no row (old recordings) where the sweep is absent."""

import pandas as pd

from cudalab.labs import read_stream

SPEC = pd.DataFrame([{"key": "peak_dram_bandwidth_GBps", "value_numeric": 3352.0}])
COPY = pd.DataFrame(
    [
        {
            "ceiling": "dram_copy_bandwidth",
            "value": 2866.0,
            "unit": "GB/s",
            "transfer_bytes": 1 << 29,
            "fraction_of_theoretical_peak": 2866.0 / 3352.0,
            "how": "device-to-device memcpy",
        }
    ]
)


def test_the_read_ceiling_is_the_fastest_correct_launch_after_the_copy():
    read = pd.DataFrame(
        [
            {"blocks": 132, "threads_per_block": 256, "bandwidth_GBps": 3100.0, "bytes_read": 1 << 31, "status": "ok"},
            {"blocks": 264, "threads_per_block": 512, "bandwidth_GBps": 3050.0, "bytes_read": 1 << 31, "status": "ok"},
            {
                "blocks": 528,
                "threads_per_block": 256,
                "bandwidth_GBps": 3300.0,
                "bytes_read": 1 << 31,
                "status": "wrong",
            },
        ]
    )
    out = read_stream.with_read_ceiling(COPY, read, SPEC)
    assert list(out["ceiling"]) == ["dram_copy_bandwidth", read_stream.READ_CEILING]
    row = out.iloc[1]
    assert row["value"] == 3100.0 and "132 x 256" in row["how"] and row["fraction_of_theoretical_peak"] < 1


def test_no_read_sweep_leaves_the_copy_ceiling_alone():
    assert read_stream.with_read_ceiling(COPY, None, SPEC).equals(COPY)
    wrong = pd.DataFrame(
        [{"blocks": 1, "threads_per_block": 32, "bandwidth_GBps": 9.0, "bytes_read": 16, "status": "wrong"}]
    )
    assert read_stream.with_read_ceiling(COPY, wrong, SPEC).equals(COPY)


# vecMax's best row against that ceiling: chapter 02 never quotes a fraction above 1.
BEST = pd.Series({"bandwidth_GBps": 3113.1, "time_ms": 1.64464, "time_ms_q3": 1.64675, "fraction_of_copy": 1.05})


def test_vecmax_below_the_read_ceiling_gets_its_fraction():
    from cudalab.labs import vecmax

    v = vecmax.against_read_ceiling(BEST, {"dram_read_Bps": 3200e9, "dram_read_fast_Bps": 3205e9})
    assert abs(v.fraction - 3113.1 / 3200) < 1e-9
    assert "97.3% of the read-only streaming ceiling (chapter 00, 3200 GB/s)" in v.prose
    assert "3200 GB/s" in v.ceiling


def test_vecmax_above_the_read_ceiling_within_the_spread_is_at_the_ceiling_with_no_fraction():
    from cudalab.labs import vecmax

    # a recorded case (gtx680 profile on an H100): 3113 GB/s against a ceiling of 3108, whose
    # faster quartile reaches 3109.6 GB/s, past vecMax's slower quartile (3109.1 GB/s)
    v = vecmax.against_read_ceiling(BEST, {"dram_read_Bps": 3108.4e9, "dram_read_fast_Bps": 3109.6e9})
    assert v.fraction is None
    assert "at the read-only streaming ceiling: 3113 GB/s against chapter 00's 3108 GB/s" in v.prose
    assert v.ceiling.startswith("vecMax at the read-only streaming ceiling")


def test_vecmax_beyond_the_spread_says_the_ceiling_kernel_missed_the_bound():
    from cudalab.labs import vecmax

    v = vecmax.against_read_ceiling(BEST, {"dram_read_Bps": 3000e9, "dram_read_fast_Bps": 3001e9})
    assert v.fraction is None and "did not find the bound" in v.prose and "3113 against 3000" in v.ceiling
    # a recording without the ceiling's quartile falls back to its median
    assert vecmax.against_read_ceiling(BEST, {"dram_read_Bps": 3000e9}).fraction is None


def test_vecmax_without_a_read_ceiling_falls_back_to_the_copy_and_says_so():
    from cudalab.labs import vecmax

    v = vecmax.against_read_ceiling(BEST, {"dram_Bps": 2966e9})
    assert v.fraction is None and "105.0% of the copy ceiling" in v.prose and "not recorded" in v.ceiling
