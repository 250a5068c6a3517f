"""Chapter 00's ceilings measured again, quickly, in a run that is not chapter 00's: a class graded
(``build_report.py --grade``) ranks a rate only below a limit of the hardware measured in its own
run (``chapter.declarations.MeasuredNow``: each function takes ``timing=`` and returns rows shaped
like the table the ceiling is read from, which the ceiling's ``where`` and ``value`` pick from).

- ``dram_read_now``: the read-only streaming ceiling (``dram_read_Bps``) through chapter 00's own
  kernel and check (``read_stream.read_stream_sweep``), over a 2 GiB array rather than 8 and six
  launch shapes rather than fifteen (the shapes around the one chapter 00 finds fastest), so that it
  costs a second, not a minute; its row is the fastest correct launch, shaped like a row of chapter
  00's ``ceilings`` table, with its timing quartiles (the grader's spread). 2 GiB is eight times
  the largest array a graded point reads (chapter 02's vecMax, 256 MiB; chapter 06's points, 128
  MiB an iteration), so a launch's ramp weighs less in the ceiling than in the kernels it bounds.
- ``fp32_peak_now``: the FP32 peak (``fp32_FLOPps``), 2 flops per FMA x FP32 lanes per SM x SMs x
  the GPU's maximum clock (``capabilities.fp32_peak_GFLOPs``), as chapter 00's ``device_spec``
  table gives it: a limit no FP32 kernel passes, nothing to time.

Chapter 06's floors read ``dram_read_now`` where its run has no chapter 00 (a notebook run alone);
with chapter 00 they read its recorded ceiling.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

NOW_READ_BYTES = 1 << 31  # the read-only stream's array (or 30% of the free memory, where less)
NOW_BLOCKS_PER_SM = (2, 4, 8)  # chapter 00's fastest on the H100 and H200: 4 blocks of 1024 per SM
NOW_THREADS = (512, 1024)


def dram_read_now(timing: dict[str, Any] | None = None) -> pd.DataFrame:
    """The read-only streaming ceiling now: one row shaped like chapter 00's ``ceilings`` row for it
    (``ceiling``: ``read_stream.READ_CEILING``, ``value`` in GB/s, ...), from the fastest correct
    launch of a short ``read_stream_sweep``, with that launch's ``time_ms`` and quartiles; none
    where no launch was correct (every launch's XOR wrong: no ceiling, never a wrong one)."""
    from cudalab.labs import read_stream

    words = read_stream.read_stream_words(NOW_READ_BYTES)
    sweep = read_stream.read_stream_sweep(
        words, NOW_BLOCKS_PER_SM, NOW_THREADS, seed=0, timing=timing, show_progress=False
    )
    ok = sweep[sweep["status"].eq("ok")] if "status" in sweep else sweep.iloc[0:0]
    if not len(ok):
        return pd.DataFrame(columns=["ceiling", "value", "unit", "status"])
    best = ok.loc[ok["bandwidth_GBps"].idxmax()]
    return pd.DataFrame(
        [
            {
                "ceiling": read_stream.READ_CEILING,
                "value": float(best["bandwidth_GBps"]),
                "unit": "GB/s",
                "transfer_bytes": int(best["bytes_read"]),
                "how": f"read-only streaming kernel ({read_stream.READ_FILE}), bytes read, fastest correct of "
                f"{len(sweep)} launches ({int(best['blocks'])} x {int(best['threads_per_block'])}), measured now",
                "blocks": int(best["blocks"]),
                "threads_per_block": int(best["threads_per_block"]),
                "time_ms": float(best["time_ms"]),
                "time_ms_q1": float(best["time_ms_q1"]),
                "time_ms_q3": float(best["time_ms_q3"]),
                "status": "ok",
            }
        ]
    )


def fp32_peak_now(timing: dict[str, Any] | None = None) -> pd.DataFrame:
    """The present GPU's spec as chapter 00's ``device_spec`` table (``capabilities.spec_frame``),
    whose ``fp32_peak_GFLOPs`` row is the FP32 peak; without that row where the peak is unknown (a
    compute capability whose FP32 lanes per SM ``capabilities`` does not list): no ceiling, never NaN.
    ``timing`` is taken and unused: nothing is timed."""
    from cudalab.labs import capabilities

    rows = capabilities.spec_frame(capabilities.present_spec())
    return rows[~(rows["key"].eq("fp32_peak_GFLOPs") & rows["value_numeric"].isna())].reset_index(drop=True)
