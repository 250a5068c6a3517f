"""Are chapter 06's kernel builds compiled in parallel, and what bounds them? On a GPU host:

    python3 tools/dev_gpu/compile_probe.py

Times the chapter's NVRTC builds in a fresh process with an empty CuPy cache each: one thread,
16 threads (``core.kernels.precompile``) and 16 worker processes. On an H100 host (16 cores):
27.1 s, 14.2 s and 15.7 s for 21 builds: threads do compile in parallel, and one slow build sets
the pace (which is why ``chapter.occupancy.compile_ahead`` runs the nvcc reports beside it).
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


if __name__ == "__main__":
    if len(sys.argv) > 1:
        probe(sys.argv[1])
    else:
        for mode in ("threads1", "threads16", "procs16"):
            subprocess.run([sys.executable, __file__, mode], env={**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp()})
