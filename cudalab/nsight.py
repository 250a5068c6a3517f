"""Hardware counters of the blocked kernels' phase 3, read with Nsight Compute (``ncu``).

Lab 001 read global and shared load/store throughput and integer instruction counts per
blocking factor with nvprof; ``ncu`` is its successor. One ``ncu`` process profiles one phase-3
launch (the middle round) of each kernel, run by this module as a child process
(``python -m cudalab.nsight target``). Where ``ncu`` is missing or may not read the counters
(``ERR_NVGPUCTRPERM`` without admin rights), ``available`` says why and chapter 04 falls back
to its bytes model.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from typing import Any, Optional, Sequence

import pandas as pd

# our column -> (Nsight Compute metric, factor from its base unit)
METRICS: dict[str, tuple[str, float]] = {
    "kernel_time_ms": ("gpu__time_duration.sum", 1e-6),
    "global_load_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second", 1e-9),
    "global_store_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum.per_second", 1e-9),
    "shared_load_GBps": ("sm__sass_data_bytes_mem_shared_op_ld.sum.per_second", 1e-9),
    "shared_store_GBps": ("sm__sass_data_bytes_mem_shared_op_st.sum.per_second", 1e-9),
    "dram_GBps": ("dram__bytes.sum.per_second", 1e-9),
    "integer_instructions": ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum", 1.0),
}


class CountersUnavailable(RuntimeError):
    """Nsight Compute is missing here, or may not read the GPU's counters."""


def _ncu() -> str:
    path = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if shutil.which(p)), None)
    if path is None:
        raise CountersUnavailable("Nsight Compute (ncu) is not installed on this host")
    return path


def plan_for(spec: dict[str, Any]):
    """The blocked plan a spec names: {"kind": "shared"|"registers", "bf": int, "dpx": bool}."""
    from cudalab import blocked

    if spec["kind"] == "shared":
        return blocked.shared_plan(int(spec["bf"]))
    if spec["kind"] == "registers":
        return blocked.registers_plan(int(spec["bf"]), bool(spec.get("dpx", True)))
    raise ValueError(f"unknown kernel kind {spec['kind']!r}")


def run_target(specs: Sequence[dict[str, Any]], n: int, seed: int) -> None:
    """In the profiled child: one phase-3 launch of each spec at its middle round, in order."""
    from cudalab import floyd_warshall as fw
    from cudalab.gpu import require_cupy
    from cudalab.launch import allow_shared_memory, check_launch

    cp = require_cupy()
    d_input = cp.asarray(fw.gen_matrix(n, seed))
    for spec in specs:
        plan = plan_for(spec)
        work = plan.prepare(d_input)
        size = work.shape[0]
        rounds = size // plan.bf
        p3 = plan.phases[2]
        allow_shared_memory(p3.kernel, p3.shared_mem)
        check_launch(p3.kernel, p3.grid(rounds), p3.block, p3.shared_mem)
        p3.kernel(p3.grid(rounds), p3.block, p3.args(work, size, rounds // 2), shared_mem=p3.shared_mem)
        cp.cuda.Device().synchronize()
    print(json.dumps({"launched": len(specs), "n": n}), file=sys.stderr)


def profile_phase3(specs: Sequence[dict[str, Any]], n: int, seed: int = 1, timeout_s: float = 300) -> pd.DataFrame:
    """One row per spec: phase 3's counters at its middle round, in our units (GB/s, ms)."""
    ncu = _ncu()
    names = ",".join(m for m, _ in METRICS.values())
    cmd = [ncu, "--csv", "--print-units", "base", "--metrics", names, "--kernel-name", "regex:phase3",
           sys.executable, "-m", "cudalab.nsight", "target", json.dumps(list(specs)), str(n), str(seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    text = proc.stdout
    if "ERR_NVGPUCTRPERM" in text + proc.stderr:
        raise CountersUnavailable("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)")
    start = text.find('"ID"')
    if proc.returncode != 0 or start < 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
        raise CountersUnavailable("ncu did not profile the kernels: " + " | ".join(tail))
    raw = pd.read_csv(io.StringIO(text[start:]), thousands=",")
    values = raw.pivot_table(index="ID", columns="Metric Name", values="Metric Value", aggfunc="first")
    if len(values) != len(specs):
        raise CountersUnavailable(f"ncu profiled {len(values)} launches, expected {len(specs)}")
    rows = []
    for spec, (_, got) in zip(specs, values.sort_index().iterrows()):
        row: dict[str, Any] = {"variant": spec["label"], "block_factor": int(spec["bf"]), "kernel": spec["kind"], "n": n}
        for column, (metric, factor) in METRICS.items():
            row[column] = float(got[metric]) * factor if metric in got else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def available() -> Optional[str]:
    """None where ncu can read counters here, else the reason it cannot."""
    try:
        profile_phase3([{"label": "probe", "kind": "shared", "bf": 8}], 16, timeout_s=120)
    except (CountersUnavailable, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "target":
        run_target(json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("usage: python -m cudalab.nsight target SPECS_JSON N SEED (run under ncu by profile_phase3)")
