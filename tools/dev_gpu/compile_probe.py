"""Are chapter 06's kernel builds compiled in parallel, and what bounds them? On a GPU host:

    python3 tools/dev_gpu/compile_probe.py              # alone: 1 thread, 16 threads, 16 processes
    python3 tools/dev_gpu/compile_probe.py --together 4 # 4 chapters' compiles at once, as on Dask

Times the chapter's NVRTC builds in a fresh process with an empty CuPy cache each: one thread,
16 threads (``core.kernels.precompile``) and 16 worker processes. On an H100 host (16 cores):
27.1 s, 14.2 s and 15.7 s for 21 builds: threads do compile in parallel, and one slow build sets
the pace (which is why ``chapter.occupancy.compile_ahead`` runs the nvcc reports beside it).

``--together N`` asks why a chapter's compile cell grows under ``build_report.py --workers N``
(issue 45): N such processes at once, each with its own cache, unpinned, then each pinned to a
core set of its own (``taskset``), then with 4 threads each instead of 16. On the 4 x H100 host
(64 cores, one NUMA node; 2026-11-27), 24 builds: 9.9 s alone; 10.2-12.5 s four at once; 9.7-14.5
s pinned; 10.4-12.7 s at 4 threads each. Neither the pools' size nor the cores they run on
matter: the slowest build sets the pace, and it runs slower while the host is busy.
"""

import os
import subprocess
import sys
import tempfile
import time


def builds() -> list[tuple[str, tuple[str, ...]]]:
    from cudalab.labs.kmeans import chapter as km
    from cudalab.labs.kmeans import gpu as km_gpu

    configs = km.configurations([262144, 1048576, 4194304], [32, 64], [8, 32, 128], 32, 32) + [(20000, 32, 32)]
    return list(dict.fromkeys(launch.build for launch in km_gpu.launches(configs, "9.0")))


def compile_one(build: tuple[str, tuple[str, ...]]) -> None:
    from cudalab.core.kernels import load_module

    load_module(*build)


def probe(mode: str) -> None:
    all_builds = builds()
    t0 = time.perf_counter()
    if mode.startswith("threads"):
        from cudalab.core.kernels import precompile

        precompile(all_builds, workers=int(mode.removeprefix("threads")))
        print(f"{mode}: {len(all_builds)} builds in {time.perf_counter() - t0:.1f} s")
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(16, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(compile_one, all_builds))
    t1 = time.perf_counter()
    for build in all_builds:
        compile_one(build)
    print(
        f"{mode}: {len(all_builds)} builds in {t1 - t0:.1f} s, loaded from the disk cache in {time.perf_counter() - t1:.1f} s"
    )


def together(n: int) -> None:
    """``n`` processes compiling the chapter's builds at once, each with an empty cache of its own:
    unpinned, pinned to a set of cores each (where ``taskset`` and enough cores exist), and with 4
    threads each."""
    import shutil

    cores = os.cpu_count() or 1
    share = max(1, cores // n)
    ways = [("unpinned", "threads16", None)]
    if shutil.which("taskset") and cores >= n:
        ways.append(("pinned", "threads16", lambda i: ["taskset", "-c", f"{i * share}-{(i + 1) * share - 1}"]))
    ways.append(("4 threads each", "threads4", None))
    for label, mode, pin in ways:
        print(f"{n} at once, {label}:", flush=True)
        procs = [
            subprocess.Popen(
                [*(pin(i) if pin else []), sys.executable, __file__, mode],
                env={**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp()},
            )
            for i in range(n)
        ]
        for proc in procs:
            proc.wait()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--together":
        subprocess.run(
            [sys.executable, __file__, "threads16"], env={**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp()}
        )
        together(int(sys.argv[2]))
    elif len(sys.argv) > 1:
        probe(sys.argv[1])
    else:
        for mode in ("threads1", "threads16", "procs16"):
            subprocess.run([sys.executable, __file__, mode], env={**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp()})
