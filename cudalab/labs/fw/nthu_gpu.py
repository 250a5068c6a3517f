"""NTHU test cases solved on the GPU, stage by stage, as lab 001 times them.

A solve of one input file is six stages, each timed (host stages with ``perf_counter``, device
stages with CUDA events), so that they add up to the whole program's time:

- **read input**: one ``numpy.fromfile`` of the file (its header and size checked);
- **setup**: the device matrix, the captured launch graph (kernels loaded, a trial of each
  launch), two pinned staging buffers for the output;
- **H2D**: the edge list copied to the device, where the matrix is built and each edge checked
  as it is placed (``nthu_edges_to_matrix.cu``): the host never touches the V x V matrix;
- **compute**; **D2H** and **write output**: the answer leaves the device in row blocks through
  the two pinned buffers, each block written to the file while the next one is copied, so the
  copies hide behind the writes (D2H is what the host still waited for).

``time_split`` measures beside them, in the same run, one ``numpy.fromfile`` of the input and one
write of the output's bytes from a host array: the floors the file stages are judged by.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cudalab.core.check import compare
from cudalab.core.gpu import require_cupy
from cudalab.core.kernels import load_kernel
from cudalab.core.launch import require_memory
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw import nthu
from cudalab.labs.fw.blocked.plans import BlockedPlan, padded_size, require_int32_indexable
from cudalab.labs.fw.reference import floyd_warshall_cupy

if TYPE_CHECKING:
    from cudalab.labs.fw.blocked.kernels import KernelSpec

STAGES = ("read input", "setup", "H2D", "compute", "D2H", "write output")
INPUT_STAGES = ("read input", "H2D")  # judged against one numpy.fromfile of the input
OUTPUT_STAGES = ("D2H", "write output")  # judged against one write of the output's bytes
STAGING_BYTES = 32 << 20  # each of the two pinned output buffers


EDGES_FILE = "nthu_edges_to_matrix.cu"


class MatrixBuilder:
    """Builds a case's distance matrix on the device from its edge list (``nthu_edges_to_matrix.cu``).

    Made during setup for a case of ``e`` edges: its two kernels loaded (a trial launch of each:
    CUDA loads a module at its first launch), the device buffer for the edges and its two status
    words allocated, so that the H2D stage is only the copy of the edges and two passes: no
    allocation, module load or library kernel of CuPy's on the way."""

    def __init__(self, e: int):
        cp = require_cupy()
        self.fill = load_kernel(EDGES_FILE, "nthu_fill")
        self.place = load_kernel(EDGES_FILE, "nthu_edges_to_matrix")
        self.edges = cp.empty((max(e, 1), 3), dtype=cp.int32)
        self.first_bad = cp.empty(1, dtype=cp.uint64)
        self.heaviest = cp.empty(1, dtype=cp.int32)
        self._status(0)
        one = cp.empty((1, 1), dtype=cp.int32)
        self.fill((1,), (32,), (one, np.int32(1)))
        self.place((1,), (32,), (one, np.int32(1), self.edges, np.int64(0), np.int32(1), self.first_bad, self.heaviest))

    def _status(self, e: int) -> None:
        self.first_bad.set(np.array([e], dtype=np.uint64))
        self.heaviest.set(np.zeros(1, dtype=np.int32))

    def build(self, work, v: int, edges: np.ndarray, name: str = "input") -> None:
        """Fill the (padded) device matrix ``work`` with the case's distances before any
        relaxation: 0 on the diagonal, unreachable elsewhere, then the lightest edge per (src, dst)
        by an atomic minimum, each edge checked as it is placed. A bad edge, or weights heavy
        enough that a shortest path could reach 'unreachable', is then named by the host's own
        check (``nthu.validate_edges``), so the error is the one a host-side read gives."""
        size = work.shape[0]
        self.fill((min(65535, -(-size * size // 256)),), (256,), (work, np.int32(size)))
        self._status(len(edges))
        if len(edges):
            self.edges[: len(edges)].set(edges)
            self.place(
                (min(4096, -(-len(edges) // 256)),),
                (256,),
                (work, np.int32(size), self.edges, np.int64(len(edges)), np.int32(v), self.first_bad, self.heaviest),
            )
        bad, top = int(self.first_bad.get()[0]), int(self.heaviest.get()[0])
        if bad < len(edges) or top * min(v - 1, len(edges)) >= nthu.UNREACHABLE:
            nthu.validate_edges(v, edges, name)  # raises, naming the edge and its offset


class OutputStage:
    """Two pinned buffers through which a V x V answer leaves the device in row blocks."""

    def __init__(self, v: int):
        import cupyx

        self.rows = max(1, min(v, STAGING_BYTES // (4 * v)))
        self.buffers = [cupyx.empty_pinned((self.rows, v), dtype=np.int32) for _ in range(2)]

    def write(self, work, v: int, path: str | Path, stream) -> tuple[float, float]:
        """Copy ``work[:v, :v]`` to the file; (ms waiting for copies, ms writing). Block i+1 is
        copied (compacted from the padded matrix on the device first) while block i is written."""
        cp = require_cupy()
        starts = list(range(0, v, self.rows))
        events = [cp.cuda.Event(disable_timing=True) for _ in starts]

        def copy(i: int) -> None:
            r0 = starts[i]
            r1 = min(r0 + self.rows, v)
            block = cp.ascontiguousarray(work[r0:r1, :v])
            block.get(stream=stream, out=self.buffers[i % 2][: r1 - r0], blocking=False)
            events[i].record(stream)

        waited = written = 0.0
        with stream, open(path, "wb") as f:
            copy(0)
            for i, r0 in enumerate(starts):
                t0 = time.perf_counter()
                events[i].synchronize()
                t1 = time.perf_counter()
                if i + 1 < len(starts):
                    copy(i + 1)  # into the other buffer, while this one is written
                f.write(memoryview(self.buffers[i % 2][: min(self.rows, v - r0)]))
                waited += t1 - t0
                written += time.perf_counter() - t1
        return waited * 1e3, written * 1e3


def solve_file(input_path: str | Path, output_path: str | Path, plan: BlockedPlan) -> tuple[dict[str, float], int]:
    """Solve one input file into an output file with a blocked plan (``blocked.kernels.KernelSpec(...).plan()``);
    (milliseconds per stage, V). A V whose padded matrix does not fit the GPU is refused with the sizes."""
    cp = require_cupy()
    ms: dict[str, float] = {}
    t0 = time.perf_counter()
    v, edges = nthu.read_case(input_path, check=False)  # the edges are checked on the device
    ms["read input"] = (time.perf_counter() - t0) * 1e3

    t0 = time.perf_counter()
    size = padded_size(v, plan.bf)
    require_int32_indexable(size)
    require_memory(nthu.matrix_bytes(size) + edges.nbytes, f"V = {v:,} (a {size:,} x {size:,} int32 matrix)")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        work = cp.empty((size, size), dtype=cp.int32)
        solver = fw.Solver(plan, work, stream=stream)  # kernels, a trial of each launch, graph capture
        builder = MatrixBuilder(len(edges))
        output = OutputStage(v)
    stream.synchronize()
    ms["setup"] = (time.perf_counter() - t0) * 1e3

    events = [cp.cuda.Event() for _ in range(3)]
    with stream:
        events[0].record(stream)
        builder.build(work, v, edges, str(input_path))
        events[1].record(stream)
        solver.run()
        events[2].record(stream)
    events[2].synchronize()
    ms["H2D"] = cp.cuda.get_elapsed_time(events[0], events[1])
    ms["compute"] = cp.cuda.get_elapsed_time(events[1], events[2])

    ms["D2H"], ms["write output"] = output.write(work, v, output_path, stream)
    return ms, v


def file_floors(input_path: str | Path, output_bytes: int, scratch: str | Path) -> dict[str, float]:
    """The floors the file stages are judged by, measured now: one ``numpy.fromfile`` of the input,
    and one write of ``output_bytes`` from a host array to ``scratch`` (removed afterwards)."""
    t0 = time.perf_counter()
    np.fromfile(input_path, dtype="<i4")
    read_ms = (time.perf_counter() - t0) * 1e3
    host = np.ones(output_bytes // 4, dtype=np.int32)  # touched, so the write measures the write
    t0 = time.perf_counter()
    with open(scratch, "wb") as f:
        f.write(memoryview(host))
    write_ms = (time.perf_counter() - t0) * 1e3
    Path(scratch).unlink()
    return {"fromfile_ms": read_ms, "host_write_ms": write_ms}


def reference_answer(v: int, edges: np.ndarray, cpu_max_v: int = 600) -> tuple[np.ndarray, str]:
    """The NTHU answer by the C reference (small V) or CuPy's min-plus Floyd-Warshall."""
    if v <= cpu_max_v:
        return nthu.solve_cpu(v, edges), "cpu"
    cp = require_cupy()
    return nthu.solve_in_labs_convention(v, edges, lambda lab: cp.asnumpy(floyd_warshall_cupy(cp.asarray(lab)))), "cupy"


def time_split(
    vertices: Sequence[int],
    density: float,
    seed: int,
    workdir: str | Path | None = None,
    repeats: int = 3,
    *,
    kernel_for: Callable[[int], KernelSpec],
    show_progress: bool = True,
) -> pd.DataFrame:
    """Lab 001's time distribution: for each V a generated case is solved ``repeats`` times from
    file to file (in ``workdir``, else a temporary folder) with the blocked kernel ``kernel_for(V)``
    (each kernel built once); one row per (case, stage) with the median and range, the kernel
    (``kernel``, its spec text) and the check's verdict."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="cudalab-cases-") as tmp:
            return time_split(vertices, density, seed, tmp, repeats, kernel_for=kernel_for, show_progress=show_progress)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    plans: dict[str, BlockedPlan] = {}
    rows = []
    for v in progress(vertices, desc="time split", total=len(vertices), enabled=show_progress):
        spec = kernel_for(v)
        kernel = spec.as_text()
        if kernel not in plans:
            plans[kernel] = spec.plan()
        plan = plans[kernel]
        case = workdir / f"case_v{v}.in"
        edges = nthu.generate_case(v, density, seed)
        nthu.write_case(case, v, edges)
        want, checked_by = reference_answer(v, edges)
        out = workdir / f"case_v{v}.out"
        runs, floors = [], []
        for _ in range(repeats):  # the floors first: the solve's own output file is then truncated, not cached dirty
            floors.append(file_floors(case, 4 * v * v, workdir / "floor.bin"))
            ms, _ = solve_file(case, out, plan)
            runs.append(ms)
        status = compare(nthu.read_output(out, v), want, f"the {checked_by} reference")  # the file itself
        frame, base = pd.DataFrame(runs), pd.DataFrame(floors).median()
        input_ratio = frame[list(INPUT_STAGES)].sum(axis=1).median() / base["fromfile_ms"]
        output_ratio = frame[list(OUTPUT_STAGES)].sum(axis=1).median() / base["host_write_ms"]
        for stage in STAGES:
            rows.append(
                {
                    "case": case.name,
                    "v": v,
                    "e": len(edges),
                    "stage": stage,
                    "kernel": kernel,
                    **summarize(frame[stage].to_numpy()),
                    "input_bytes": case.stat().st_size,
                    "output_bytes": 4 * v * v,
                    "fromfile_ms": base["fromfile_ms"],
                    "host_write_ms": base["host_write_ms"],
                    "input_over_fromfile": input_ratio,
                    "output_over_host_write": output_ratio,
                    "checked_against": checked_by,
                    **status,
                }
            )
        case.unlink()
        out.unlink()
    return pd.DataFrame(rows)
