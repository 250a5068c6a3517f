"""The tensor-core k-means pass built with experiment switches, timed beside its default build
(issue 44, item 2: at most 0.20 ms per iteration at N = 4 Mi, D = K = 32 on an H100).

Each contestant is a copy of km_07_tensor_scores.cu with ``#define``s put first (its switches
default to off, so the copy without any is the chapter's kernel). For each K:

- bits: every build runs ``BITS_ITERATIONS`` iterations (3 unless set) from the same centres; after
  each, its centres and memberships must equal the default build's bit for bit (the switches change
  how, never what, the pass computes); the default's change counts are printed, iteration by
  iteration, since a switch may cost what it does by how many objects moved;
- time: rounds interleaved across the builds (``ROUNDS``), each round ``gpu.time_iterations``
  (the chapter's per-iteration pass time, an event pair around each launch), its median kept; the
  table gives each build's median over the rounds and its ratio to the default's; a second table,
  each timed iteration's median over the rounds (the first timed one is iteration ``gpu.WARMUP``
  of the run, counted from 0).

Printed, and written to ``$OUT/kmeans_builds/times.csv`` and ``per_iteration.csv``.

    PYTHONPATH=$PWD OUT=/tmp/out python3 tools/dev_gpu/kmeans_builds.py SWITCH=1 OTHER=1,SWITCH=1 ...

KMEANS_SOURCE=FILE copies that version instead of the chapter's kernel; a FILE ending in ``.patch`` is
applied to the chapter's kernel first (``patch``): tools/dev_gpu/patches/ keeps the experiments
that were measured that way, e.g. ``km_07_filter.patch`` (the switch FILTER, docs/tuning-log.md).
The earlier switch versions (B_FLOATS, PREFETCH_NEXT, X_STAGES, X_ROWS, X_BULK) were on branches
that are gone; their results are in the tuning log.

Each argument is one build; several switches in one build are joined by commas
(``B_FLOATS=1,PREFETCH_NEXT=1``). A switch ``plan.NAME=V`` changes the launch plan instead
(``gpu.tensor_shape``: ``plan.THREADS=512`` builds and launches blocks of 512); a build with
``X_STAGES=S`` (a KMEANS_SOURCE version that stages points in shared memory) gets S buffers of a
step's points per warp added to its dynamic shared memory, and ``X_BULK=1`` (a copy-engine
version) a buffer of ``X_BULK_ROW``-byte rows and an mbarrier per warp.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from cudalab.core.gpu import gpu_name, require_cupy
from cudalab.labs.kmeans import gpu

N, D, KS = 4_194_304, 32, (8, 32)
ROUNDS = 6
ITERATIONS = 10
BITS_ITERATIONS = int(os.environ.get("BITS_ITERATIONS", 3))
KERNEL = Path(__file__).resolve().parents[2] / "kernels_cu" / "km_07_tensor_scores.cu"
# the source the builds copy: the chapter's kernel, or KMEANS_SOURCE (a version with switches of its
# own, or a patch of the chapter's kernel that makes one)
SOURCE = Path(os.environ.get("KMEANS_SOURCE", KERNEL))


def source_text() -> str:
    """The text the builds copy: SOURCE, or the chapter's kernel with SOURCE applied where it is a patch."""
    if SOURCE.suffix != ".patch":
        return SOURCE.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        made = Path(tmp) / KERNEL.name
        subprocess.run(["patch", "-s", "-o", str(made), str(KERNEL), str(SOURCE)], check=True)
        return made.read_text()


def copies(builds: list[str], folder: Path) -> dict[str, Path | None]:
    """name -> the kernel copy to build (None: the chapter's own file). Each copy keeps the
    kernel's file name (``Launch.from_copy`` takes only a copy of the same name) in a folder of
    its own, beside copies of the project's headers (a kernel's include path is its folder)."""
    files: dict[str, Path | None] = {"default": None}
    source = source_text()
    for i, build in enumerate(builds):
        here = folder / f"build{i}"
        here.mkdir()
        for header in KERNEL.parent.glob("*.cuh"):
            (here / header.name).write_text(header.read_text())
        switches = [d for d in build.split(",") if not d.startswith("plan.")]
        defines = "".join(f"#define {d.replace('=', ' ', 1)}\n" for d in switches)
        path = here / KERNEL.name
        path.write_text(defines + source)
        files[build] = path
    return files


@contextlib.contextmanager
def planned(build: str) -> Iterator[None]:
    """``gpu.tensor_shape`` as the build's ``plan.`` switches and X_STAGES change it, while it runs."""
    if build == "default":
        yield
        return
    values = dict(d.split("=", 1) for d in build.split(","))
    overrides = {k[5:]: int(v) for k, v in values.items() if k.startswith("plan.")}
    stages = int(values.get("X_STAGES", 0))
    bulk_row = int(values.get("X_BULK_ROW", 144)) if int(values.get("X_BULK", 0)) else 0
    original = gpu.tensor_shape

    def shape(d: int, k: int) -> dict[str, int]:
        plan = {**original(d, k), **overrides}
        warps = plan["THREADS"] // 32
        plan["dynamic_bytes"] += stages * warps * -(-d // 8) * 2 * 32 * 16
        if bulk_row:  # a buffer of 8 ceil(D / 8) rows and an mbarrier (16 bytes) per warp
            plan["dynamic_bytes"] += warps * (8 * -(-d // 8) * bulk_row + 16)
        return plan

    gpu.tensor_shape = shape
    try:
        yield
    finally:
        gpu.tensor_shape = original


def main(builds: list[str]) -> pd.DataFrame:
    cp = require_cupy()
    out = Path(os.environ.get("OUT", "build/dev_gpu")) / "kmeans_builds"
    out.mkdir(parents=True, exist_ok=True)
    print(f"GPU: {gpu_name()}", flush=True)
    rows, per_iteration = [], []
    with tempfile.TemporaryDirectory() as tmp:
        files = copies(builds, Path(tmp))
        for k in KS:
            problem = gpu.Problem(gpu.blobs_on_device(N, D, k, seed=2011), k)
            same = {}
            reference: list[tuple[np.ndarray, np.ndarray]] = []
            for name, file in files.items():
                same[name] = True
                changed = []
                with planned(name):
                    runner = gpu.Runner(problem, "tensor", file)
                    for it in range(BITS_ITERATIONS):
                        changed.append(runner.step())
                        centres, membership = runner.result()
                        if name == "default":
                            reference.append((centres, membership))
                        same[name] &= bool(
                            np.array_equal(centres.view(np.int32), reference[it][0].view(np.int32))
                            and np.array_equal(membership, reference[it][1])
                        )
                if name == "default":
                    print(f"K = {k}: objects moved, iteration by iteration: {changed}", flush=True)
                del runner
            del reference
            for r in range(ROUNDS):
                for name, file in files.items():
                    with planned(name):
                        t = gpu.time_iterations(problem, "tensor", ITERATIONS, file=file)
                    per_it = t.groupby("iteration")["time_ms"].sum()
                    per_iteration += [
                        {"k": k, "build": name, "round": r, "iteration": gpu.WARMUP + i, "time_ms": float(ms)}
                        for i, ms in per_it.items()
                    ]
                    rows.append(
                        {"k": k, "build": name, "round": r, "time_ms": float(per_it.median()), "same_bits": same[name]}
                    )
            print(f"K = {k}: {', '.join(f'{n}: same bits {s}' for n, s in same.items())}", flush=True)
            del problem
            cp.get_default_memory_pool().free_all_blocks()
    times = pd.DataFrame(rows)
    times.to_csv(out / "times.csv", index=False)
    table = times.groupby(["k", "build"], sort=False).agg(
        time_ms=("time_ms", "median"),
        spread_ms=("time_ms", lambda s: s.max() - s.min()),
        same_bits=("same_bits", "all"),
    )
    table["vs_default"] = (
        table["time_ms"]
        / table.xs("default", level="build")["time_ms"].reindex(table.index.get_level_values("k")).to_numpy()
    )
    print(table.round(4).to_string())
    each = pd.DataFrame(per_iteration)
    each.to_csv(out / "per_iteration.csv", index=False)
    print(each.pivot_table(index=["k", "iteration"], columns="build", values="time_ms", aggfunc="median").round(4))
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
