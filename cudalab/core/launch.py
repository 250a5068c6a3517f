"""Can this sweep point run here? Launch limits and memory, checked before launching.

A point that cannot run is skipped with its reason (the rest of the sweep
goes on); these checks turn the driver's terse refusals into sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudalab.core.errors import LaunchRefused, NotEnoughMemory, SkipPoint
from cudalab.core.gpu import attributes, require_cupy


def _dims(v: int | Sequence[int]) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(v)
    return tuple(t) + (1,) * (3 - len(t))  # type: ignore[return-value]


def check_launch(kernel, grid: int | Sequence[int], block: int | Sequence[int], shared_bytes: int = 0) -> None:
    """Raise ``LaunchRefused`` if the GPU or the compiled kernel cannot take this launch."""
    attrs = attributes()
    g, b = _dims(grid), _dims(block)
    threads = b[0] * b[1] * b[2]
    big = 2**31 - 1
    limit = attrs.get("MaxThreadsPerBlock", 1024)
    if threads > limit:
        raise LaunchRefused(
            f"block {b[0]}x{b[1]}x{b[2]} = {threads} threads exceeds this GPU's limit of {limit} threads per block"
        )
    if threads > kernel.max_threads_per_block:
        raise LaunchRefused(
            f"block of {threads} threads exceeds what this kernel can launch "
            f"({kernel.max_threads_per_block} threads at {kernel.num_regs} registers per thread)"
        )
    for axis, n, lim in zip("xyz", b, ("MaxBlockDimX", "MaxBlockDimY", "MaxBlockDimZ")):
        if n > attrs.get(lim, big):
            raise LaunchRefused(f"block dimension {axis}={n} exceeds this GPU's limit of {attrs[lim]}")
    for axis, n, lim in zip("xyz", g, ("MaxGridDimX", "MaxGridDimY", "MaxGridDimZ")):
        if n > attrs.get(lim, big):
            raise LaunchRefused(f"grid dimension {axis}={n} exceeds this GPU's limit of {attrs[lim]}")
    smem = shared_bytes + kernel.shared_size_bytes
    smem_limit = attrs.get("MaxSharedMemoryPerBlockOptin", attrs.get("MaxSharedMemoryPerBlock", big))
    if smem > smem_limit:
        raise LaunchRefused(f"{smem} bytes of shared memory per block exceeds this GPU's limit of {smem_limit}")


DEFAULT_SHARED_LIMIT = 48 * 1024


def allow_shared_memory(kernel, shared_bytes: int) -> None:
    """Opt a kernel in to more than 48 KiB of dynamic shared memory, where the GPU has it.

    CUDA caps dynamic shared memory at 48 KiB per block unless the kernel asks for more; asking
    for more than the GPU has is left to ``check_launch`` to refuse with a clear reason."""
    if shared_bytes + kernel.shared_size_bytes <= DEFAULT_SHARED_LIMIT:
        return
    limit = attributes().get("MaxSharedMemoryPerBlockOptin", DEFAULT_SHARED_LIMIT)
    want = min(shared_bytes, limit - kernel.shared_size_bytes)
    if want > kernel.max_dynamic_shared_size_bytes:
        kernel.max_dynamic_shared_size_bytes = want


def require_memory(nbytes: int, what: str, headroom: float = 0.9) -> None:
    """Raise ``NotEnoughMemory`` unless ``nbytes`` fit in the GPU's free memory."""
    cp = require_cupy()
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cp.cuda.runtime.memGetInfo()
    if nbytes > headroom * free:
        raise NotEnoughMemory(
            f"{what} needs {nbytes / 2**30:.2f} GiB of GPU memory; "
            f"{free / 2**30:.2f} GiB of {total / 2**30:.1f} GiB are free"
        )


def refusal_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the GPU refused a point rather than the code being wrong."""
    cp = require_cupy()
    return (SkipPoint, cp.cuda.memory.OutOfMemoryError)


_REFUSALS = ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_CONFIGURATION")


def launch(kernel, grid, block, args, shared_mem: int = 0, stream=None) -> None:
    """Launch, turning the driver's refusal of this configuration into ``LaunchRefused``.

    Faults during execution (illegal addresses) are not refusals: they propagate.
    """
    cp = require_cupy()
    try:
        kernel(grid, block, args, shared_mem=shared_mem, stream=stream)
    except cp.cuda.driver.CUDADriverError as exc:
        if any(code in str(exc) for code in _REFUSALS):
            raise LaunchRefused(f"the driver refused grid {grid}, block {block}: {exc}") from None
        raise
