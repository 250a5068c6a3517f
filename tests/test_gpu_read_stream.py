"""GPU tests of chapter 00's read-only streaming ceiling (kernels_cu/read_stream.cu): its XOR
matches CuPy's reduction and the host's XOR bit for bit at awkward sizes,
and the bandwidth it reports is a real one: below the theoretical DRAM peak, above a copy's
share of it."""

import numpy as np
import pandas as pd
import pytest

from cudalab.labs import bandwidth, capabilities, read_stream

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def test_read_stream_xor_matches_the_host_xor_at_awkward_sizes(cp):
    from cudalab.core.kernels import load_kernel

    kernel = load_kernel(read_stream.READ_FILE, read_stream.READ_KERNEL)
    rng = np.random.default_rng(1)
    for words, blocks, threads in ((4, 1, 32), (4 * 1001, 3, 64), (4 * 65537, 7, 256)):
        host = rng.integers(0, 2**32, words, dtype=np.uint64).astype(np.uint32)
        partial = cp.empty(blocks * threads, dtype=cp.uint32)
        kernel((blocks,), (threads,), (cp.asarray(host), partial, np.int64(words)))
        assert int(np.bitwise_xor.reduce(partial.get())) == int(np.bitwise_xor.reduce(host)), (words, blocks, threads)
        assert read_stream.xor_reference(cp.asarray(host)) == int(np.bitwise_xor.reduce(host))


def test_read_stream_ceiling_is_checked_and_below_the_theoretical_peak(cp):
    words = min(read_stream.read_stream_words(), 1 << 28)  # at most 1 GiB: seconds, still many times any L2
    read = read_stream.read_stream_sweep(words, blocks_per_sm=(2, 8), threads=(256, 1024))
    assert read["status"].eq("ok").all(), read[["blocks", "threads_per_block", "status", "reason"]]
    spec = capabilities.spec_frame(capabilities.present_spec())
    copy = pd.DataFrame(
        [
            {
                "direction": "device_to_device",
                "transfer_bytes": 1 << 28,
                "status": "ok",
                **bandwidth.copy_bandwidth("device_to_device", 1 << 28),
            }
        ]
    )
    ceilings = read_stream.with_read_ceiling(bandwidth.ceilings(copy, spec), read, spec).set_index("ceiling")
    peak = float(spec.set_index("key")["value_numeric"]["peak_dram_bandwidth_GBps"])
    best = ceilings.loc[read_stream.READ_CEILING, "value"]
    assert best < peak, f"read-only {best:.0f} GB/s above the theoretical peak {peak:.0f} GB/s"
    assert best > 0.5 * ceilings.loc["dram_copy_bandwidth", "value"], "a read streams at least half a copy's bytes"
    assert 0 < ceilings.loc[read_stream.READ_CEILING, "fraction_of_theoretical_peak"] < 1
