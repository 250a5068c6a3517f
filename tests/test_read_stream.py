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
