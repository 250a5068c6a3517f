"""Why chapter 04's ladder cell took 2x its serial wall time on 2 GPUs (issue 45, item 1).

On a host of 2 H100s and 32 cores, in two builds (results/build_times/*-x2-h100.json), the cell
of chapter 04 that times its optimization ladder at N = 3072 took 4.9 -> 9.6 s and 5.2 -> 11.1 s
under ``--workers 2``, while the times it measured (CUDA events) were the same to 0.3%; on 4 GPUs
and 64 cores it grew 0.7 s. This times that sweep (the notebook's ``fw.sweep``, h100's
parameters) in a process of its own, under cProfile, alone or beside a neighbour on the other
GPU, each with an empty CuPy kernel cache unless told otherwise:

    python3 tools/dev_gpu/ladder_beside.py ladder TAG     the ladder (after its builds' precompile)
    python3 tools/dev_gpu/ladder_beside.py read SECONDS   chapter 00's read-only sweep, again and again
    python3 tools/dev_gpu/ladder_beside.py compile        chapter 05's tuning grid compiled (CPU only)
    python3 tools/dev_gpu/ladder_beside.py probe          the check's CuPy compiles, variant by variant

``ladder`` prints its wall seconds and writes the profile's top functions to
``$OUT/ladder_beside/TAG.txt``; ``tools/dev_gpu/ladder_beside.sh`` runs the comparisons. The
ladder's precompile is the chapter's (``compile_ahead``), so it warms the checks' CuPy kernels as a
chapter does (``warm_checks``).

Found (2026-11-27, 2 H100s, 32 cores; docs/tuning-log.md): alone with an empty cache 11.8 s, with a
warm cache 4.9 s, beside a neighbour 10.3-11.0 s. ``probe``: the first ``(result != reference)
.sum()`` in the process took 4.5 s (three modules into the cache), every later one none.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

LADDER_N, SEED = 3072, 2020  # params/h100.yaml's ladder_n; the notebook's seed


def ladder(tag: str) -> None:
    from cudalab.chapter.occupancy import compile_ahead
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw.blocked import variants

    t0 = time.perf_counter()  # the chapter's precompile: its builds, and the checks' CuPy kernels (warm_checks)
    launches = variants.launches([8, 16, 32, 64, 128], [64], tiles=(4, 8), minplus_block_factors=(64, 256))
    compile_ahead(launches, {"this GPU": "9.0"})
    compiled_s = time.perf_counter() - t0
    chosen = _ladder_variants()
    profile = cProfile.Profile()
    t1 = time.perf_counter()
    profile.enable()
    gpu, _ = fw.sweep(chosen, [LADDER_N], seed=SEED, cpu_max_n=0, timing={"time_limit_s": 120.0}, show_progress=False)
    profile.disable()
    wall = time.perf_counter() - t1
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
    out = Path(os.environ.get("OUT", "/tmp/out")) / "ladder_beside"
    out.mkdir(parents=True, exist_ok=True)
    gpu_s = float((gpu["time_ms"] * gpu.get("repeats", 1)).sum()) / 1e3 if "repeats" in gpu else float("nan")
    line = (
        f"{tag}: ladder {wall:.2f} s wall (precompile {compiled_s:.1f} s before it), "
        f"{len(gpu)} variants, {int(gpu['status'].eq('ok').sum())} ok, median times sum {gpu['time_ms'].sum():.1f} ms, "
        f"samples x median {gpu_s:.2f} s; host_behind {gpu['host_behind'].sum() if 'host_behind' in gpu else 'n/a'}"
    )
    print(line, flush=True)
    (out / f"{tag}.txt").write_text(line + "\n\n" + text.getvalue())
    gpu.to_csv(out / f"{tag}.csv", index=False)


def _ladder_variants():
    from cudalab.labs.fw.blocked import variants

    return (
        variants.ladder_variants()
        + variants.registers_variants([64], dpx=[True], tiles=[4, 8])
        + variants.minplus_variants([64, 256], dpx=[True])
        + [variants.basic_variant(16)]
    )


def probe() -> None:
    """Each ladder variant solved once at N, then checked by CuPy's ``(result != reference).sum()``
    (what core.check.compare runs on the device): the seconds it took and the files it added to the
    CuPy kernel cache (``CUPY_CACHE_DIR``, empty at the start), with the result's layout."""
    import cupy as cp

    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw.graphs import gen_matrix
    from cudalab.labs.fw.reference import floyd_warshall_cupy

    cache = Path(os.environ["CUPY_CACHE_DIR"])
    files = lambda: sum(1 for _ in cache.rglob("*") if _.is_file())  # noqa: E731
    stream = cp.cuda.Stream(non_blocking=True)  # as fw.sweep: every step on the solver's stream
    with stream:
        d_input = cp.asarray(gen_matrix(LADDER_N, SEED))
        reference = floyd_warshall_cupy(d_input)
    stream.synchronize()
    for variant in _ladder_variants():
        plan = variant.plan(LADDER_N)
        with stream:
            start = plan.prepare(d_input)
            work = cp.empty_like(start)
            solver = fw.Solver(plan, work, stream=stream)
            cp.copyto(work, start)  # the constructor's trial launches touched work
            solver.run()
            result = plan.finish(work, LADDER_N)
            stream.synchronize()
            before, t0 = files(), time.perf_counter()
            mismatches = int((result != reference).sum())
            took = time.perf_counter() - t0
        print(
            f"probe {variant.label}: {mismatches} mismatches, (!=).sum() {took:.3f} s, {files() - before} cache files; "
            f"result {type(result).__name__} {result.dtype} {result.shape} strides {result.strides} "
            f"c {result.flags.c_contiguous} f {result.flags.f_contiguous}; reference {reference.dtype} {reference.strides}",
            flush=True,
        )
    names = sorted({f.name for f in cache.rglob("*") if f.is_file()})
    print(f"probe: {len(names)} cache files: {' '.join(names[:40])}", flush=True)


def read(seconds: float) -> None:
    from cudalab.labs import read_stream

    end = time.perf_counter() + seconds
    rounds = 0
    while time.perf_counter() < end:
        read_stream.read_stream_sweep(read_stream.read_stream_words(), show_progress=False)
        rounds += 1
    print(f"read: {rounds} sweeps in {seconds:.0f} s", flush=True)


def compile_grid() -> None:
    from cudalab.chapter.occupancy import compile_ahead
    from cudalab.labs import matmul as mm

    t0 = time.perf_counter()
    n = compile_ahead(mm.launches(mm.tuning_grid([128, 256], [8, 16], [8, 16])), {"GTX 680": "3.0", "H100": "9.0"})
    print(f"compile: {n} builds in {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "ladder":
        ladder(sys.argv[2])
    elif what == "read":
        read(float(sys.argv[2]))
    elif what == "compile":
        compile_grid()
    elif what == "probe":
        probe()
    else:
        sys.exit(__doc__)
