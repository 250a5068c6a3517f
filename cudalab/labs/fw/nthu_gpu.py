"""NTHU test cases solved on the GPU, stage by stage, as lab 001 times them.

A solve of one input file is six stages: read the input into a padded host matrix (pinned, as the
lab's ``cudaMallocHost``), set up the device matrix and the captured launch graph, copy it to the
device, compute, copy it back, and write the V x V output. Host stages are timed with
``perf_counter``, device stages with CUDA events. Every answer is checked against a reference.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd

from cudalab.core import hostmem
from cudalab.core.check import compare
from cudalab.core.launch import require_memory
from cudalab.core.gpu import require_cupy
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize
from cudalab.labs.fw import blocked, nthu
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.reference import floyd_warshall_cupy

STAGES = ("read input", "setup", "H2D", "compute", "D2H", "write output")
DEVICE_STAGES = ("H2D", "compute", "D2H")


def read_padded(path: str | Path, bf: int) -> tuple[int, np.ndarray]:
    """(V, padded pinned host matrix in the NTHU convention) of an input file. A V whose matrices
    do not fit (two padded copies on the host, one on the device) is refused with the sizes."""
    import cupyx

    v, edges = nthu.read_case(path)
    size = blocked.padded_size(v, bf)
    blocked.require_int32_indexable(size)
    hostmem.require(nthu.matrix_bytes(size, 2), f"V = {v:,} (two pinned {size:,} x {size:,} int32 matrices)")
    require_memory(nthu.matrix_bytes(size), f"V = {v:,} (a {size:,} x {size:,} int32 matrix)")
    return v, nthu.to_matrix(v, edges, out=cupyx.empty_pinned((size, size), dtype=np.int32))


def solve_file(input_path: str | Path, output_path: str | Path,
               plan: blocked.BlockedPlan) -> tuple[dict[str, float], np.ndarray]:
    """Solve one input file into an output file with a blocked plan (``blocked.KernelSpec(...).plan()``);
    (milliseconds per stage, the V x V answer)."""
    import cupyx

    cp = require_cupy()
    ms: dict[str, float] = {}
    t0 = time.perf_counter()
    v, host = read_padded(input_path, plan.bf)
    ms["read input"] = (time.perf_counter() - t0) * 1e3

    t0 = time.perf_counter()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        work = cp.empty(host.shape, dtype=cp.int32)
        solver = fw.Solver(plan, work, stream=stream)  # trial launches, graph capture
        answer = cupyx.empty_pinned(host.shape, dtype=np.int32)
    stream.synchronize()
    ms["setup"] = (time.perf_counter() - t0) * 1e3

    events = [cp.cuda.Event() for _ in range(4)]
    events[0].record(stream)
    work.set(host, stream=stream)
    events[1].record(stream)
    solver.run()
    events[2].record(stream)
    work.get(stream=stream, out=answer, blocking=False)
    events[3].record(stream)
    events[3].synchronize()
    for stage, a, b in zip(DEVICE_STAGES, events, events[1:]):
        ms[stage] = cp.cuda.get_elapsed_time(a, b)

    t0 = time.perf_counter()
    dist = np.ascontiguousarray(answer[:v, :v])
    nthu.write_output(output_path, dist)
    ms["write output"] = (time.perf_counter() - t0) * 1e3
    return ms, dist


def reference_answer(v: int, edges: np.ndarray, cpu_max_v: int = 600) -> tuple[np.ndarray, str]:
    """The NTHU answer by the C reference (small V) or CuPy's min-plus Floyd-Warshall."""
    if v <= cpu_max_v:
        return nthu.solve_cpu(v, edges), "cpu"
    cp = require_cupy()
    return nthu.solve_in_labs_convention(v, edges, lambda lab: cp.asnumpy(floyd_warshall_cupy(cp.asarray(lab)))), "cupy"


def time_split(vertices: Sequence[int], density: float, seed: int, workdir: Optional[str | Path] = None,
               repeats: int = 3, *, plan_factory: Callable[[], blocked.BlockedPlan]) -> pd.DataFrame:
    """Lab 001's time distribution: for each V a generated case is solved ``repeats`` times from
    file to file (in ``workdir``, else a temporary folder); one row per (case, stage) with the
    median and range, and the check's verdict."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="cudalab-cases-") as tmp:
            return time_split(vertices, density, seed, tmp, repeats, plan_factory=plan_factory)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    plan = plan_factory()
    rows = []
    for v in progress(vertices, desc="time split", total=len(vertices)):
        case = workdir / f"case_v{v}.in"
        edges = nthu.generate_case(v, density, seed)
        nthu.write_case(case, v, edges)
        want, checked_by = reference_answer(v, edges)
        runs = []
        for _ in range(repeats):
            ms, dist = solve_file(case, workdir / f"case_v{v}.out", plan)
            runs.append(ms)
        status = compare(dist, want, f"the {checked_by} reference")
        frame = pd.DataFrame(runs)
        for stage in STAGES:
            rows.append({"case": case.name, "v": v, "e": len(edges), "stage": stage, **summarize(frame[stage].to_numpy()),
                         "input_bytes": case.stat().st_size, "output_bytes": 4 * v * v,
                         "checked_against": checked_by, **status})
        case.unlink()
        (workdir / f"case_v{v}.out").unlink()
    return pd.DataFrame(rows)
