"""Phase 3's memory throughput and GOPS per kernel, as lab 001 compared its blocking factors.

The lab read, with nvprof, phase 3's global and shared load and store throughput and its GOPS
(integer instructions over time, in 2^30 per second). Where Nsight Compute can read this GPU's
counters we read the same quantities for one phase-3 launch (the middle round), from a child
process (``labs.fw._ncu_target``); elsewhere ``models.traffic_model`` fills in from the phase
split's time. The ``source`` column says which.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.errors import CountersUnavailable
from cudalab.labs.fw.blocked.models import shared_loads_per_relaxation, traffic_model
from cudalab.labs.fw.blocked.plans import padded_size
from cudalab.toolchain import nsight

COUNTER_COLUMNS = ("global_load_GBps", "global_store_GBps", "shared_load_GBps", "shared_store_GBps")


def phase3_counters(specs: Sequence[dict[str, Any]], n: int, seed: int, phases: pd.DataFrame) -> pd.DataFrame:
    """Phase 3's global and shared throughput per kernel, and lab 001's GOPS (integer instructions
    of all phase-3 launches over their total time, in 2^30 per second).

    Read with Nsight Compute where it can read the counters (one launch, the middle round);
    otherwise computed from ``traffic_model`` and the phase-3 time of ``phase_split``. The
    ``source`` column says which."""
    p3 = phases[phases["phase"].eq("phase 3")].set_index("variant")
    try:
        frame = profile_phase3(specs, n, seed)
        source = "Nsight Compute counters, one phase-3 launch (middle round)"
    except CountersUnavailable as exc:
        frame, source = None, f"bytes model ({exc})"
    rows = []
    for i, spec in enumerate(specs):
        bf = int(spec["bf"])
        rounds = padded_size(n, bf) // bf
        p3_s = float(p3.loc[spec["label"], "time_ms"]) * 1e-3 if spec["label"] in p3.index else np.nan
        row: dict[str, Any] = {
            "variant": spec["label"],
            "block_factor": bf,
            "kernel": spec["kind"],
            "n": n,
            "rounds": rounds,
            "phase3_time_ms": p3_s * 1e3,
            "source": source,
        }
        if frame is not None:
            got = frame.iloc[i]
            row.update({c: got[c] for c in COUNTER_COLUMNS + ("dram_GBps", "kernel_time_ms", "integer_instructions")})
            row["GOPS"] = got["integer_instructions"] * rounds / p3_s / 2**30
        else:
            model = traffic_model(n, bf, shared_loads_per_relaxation(spec))
            for c, key in zip(
                COUNTER_COLUMNS, ("global_load_bytes", "global_store_bytes", "shared_load_bytes", "shared_store_bytes")
            ):
                row[c] = model[key] / p3_s / 1e9
            row["GOPS"] = 2 * model["relaxations"] / p3_s / 2**30
        rows.append(row)
    return pd.DataFrame(rows)


# our column -> (Nsight Compute metric, factor from its base unit)
NCU_METRICS: dict[str, tuple[str, float]] = {
    "kernel_time_ms": ("gpu__time_duration.sum", 1e-6),
    "global_load_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second", 1e-9),
    "global_store_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum.per_second", 1e-9),
    "shared_load_GBps": ("sm__sass_data_bytes_mem_shared_op_ld.sum.per_second", 1e-9),
    "shared_store_GBps": ("sm__sass_data_bytes_mem_shared_op_st.sum.per_second", 1e-9),
    "dram_GBps": ("dram__bytes.sum.per_second", 1e-9),
    "integer_instructions": ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum", 1.0),
}


def profile_phase3(specs: Sequence[dict[str, Any]], n: int, seed: int = 1, timeout_s: float = 300) -> pd.DataFrame:
    """One row per spec ({"label", "kind", "bf", "dpx"}): phase 3's counters at its middle round,
    read by Nsight Compute from a child process (``_ncu_target``), in our units (GB/s, ms)."""

    target = ["-m", "cudalab.labs.fw._ncu_target", json.dumps(list(specs)), str(n), str(seed)]
    frame = nsight.profile_launches(target, NCU_METRICS, "regex:phase3", expected=len(specs), timeout_s=timeout_s)
    ids = pd.DataFrame(
        [{"variant": s["label"], "block_factor": int(s["bf"]), "kernel": s["kind"], "n": n} for s in specs]
    )
    return pd.concat([ids, frame], axis=1)


def counters_available() -> str | None:
    """None where ncu can read counters here, else the reason it cannot."""
    try:
        profile_phase3([{"label": "probe", "kind": "shared", "bf": 8}], 16, timeout_s=120)
    except CountersUnavailable as exc:
        return str(exc)
    return None
