"""A kernel launch, described once (``Launch``), and the checks before it runs.

``Launch`` is what every kernel family produces and every harness, the occupancy table and a
"measure this one point" call accept: which kernel of which ``kernels_cu`` file, built with which
compile-time options, over which grid and block, with how much dynamic shared memory, what its
arguments mean and which tunables of its family chose it. ``Dim3`` is the one type of a block or
grid shape; its text ("16x16") is for tables and is never parsed back.

A point that cannot run is skipped with its reason (the rest of the sweep goes on); the checks
here turn the driver's terse refusals into sentences.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral
from pathlib import Path
from typing import Any

from cudalab.core.errors import LaunchRefused, NotEnoughMemory, SkipPoint
from cudalab.core.gpu import attributes, require_cupy


@dataclass(frozen=True)
class Dim3:
    """A block or grid shape, as CUDA's ``dim3``: ``Dim3(16, 16)`` is 16 x 16 x 1.

    It iterates as ``(x, y, z)``, so CuPy takes it where it takes a tuple; ``str`` gives the
    shape as tables show it: ``"16x16"``, or ``"256"`` for a 1D shape."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            value = getattr(self, axis)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ValueError(f"a Dim3's {axis} must be a positive integer, got {value!r}")
            object.__setattr__(self, axis, int(value))

    @classmethod
    def of(cls, shape: Dim3 | int | Sequence[int]) -> Dim3:
        """The shape given as a ``Dim3``, an int (1D) or a sequence of up to three ints."""
        if isinstance(shape, Dim3):
            return shape
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        if not 1 <= len(dims) <= 3:
            raise ValueError(f"a shape has 1 to 3 dimensions, got {shape!r}")
        return cls(*dims)

    @classmethod
    def square(cls, edge: int) -> Dim3:
        """An ``edge`` x ``edge`` block (the labs' 2D blocks)."""
        return cls(edge, edge)

    @property
    def size(self) -> int:
        """Threads in a block, or blocks in a grid."""
        return self.x * self.y * self.z

    @property
    def edge(self) -> int:
        """The edge of a square 2D shape (``Dim3(16, 16).edge == 16``); ``ValueError`` otherwise."""
        if self.x != self.y or self.z != 1:
            raise ValueError(f"shape {self} is not square")
        return self.x

    def __iter__(self) -> Iterator[int]:
        return iter((self.x, self.y, self.z))

    def __str__(self) -> str:
        if self.z != 1:
            return f"{self.x}x{self.y}x{self.z}"
        return f"{self.x}x{self.y}" if self.y != 1 else str(self.x)


def _dims(v: Dim3 | int | Sequence[int]) -> tuple[int, int, int]:
    return tuple(Dim3.of(v))  # type: ignore[return-value]


@dataclass(frozen=True)
class Launch:
    """One kernel launch configuration: the unit a family produces and a harness times.

    ``file`` and ``kernel`` name the ``extern "C"`` function of ``kernels_cu/<file>``; ``options``
    are the compile-time options it is built with (``-DBF=64``); ``block`` and ``grid`` its shape
    (``grid`` is None where it depends on a problem size not yet given: ``with_grid`` sets it);
    ``dynamic_shared_bytes`` the shared memory it asks for at launch; ``arguments`` what each
    kernel argument means, in order; ``tunables`` the family's knobs that chose this build (a
    blocking factor, a tile); ``labels`` how the chapter names it in its tables (``variant``,
    ``phase``): the occupancy table carries them as its key columns."""

    file: str
    kernel: str
    block: Dim3
    grid: Dim3 | None = None
    options: tuple[str, ...] = ()
    dynamic_shared_bytes: int = 0
    arguments: tuple[str, ...] = ()
    tunables: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    labels: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "block", Dim3.of(self.block))
        if self.grid is not None:
            object.__setattr__(self, "grid", Dim3.of(self.grid))
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "arguments", tuple(self.arguments))
        object.__setattr__(self, "tunables", dict(self.tunables))
        object.__setattr__(self, "labels", dict(self.labels))
        if self.dynamic_shared_bytes < 0:
            raise ValueError(f"dynamic shared memory must be >= 0 bytes, got {self.dynamic_shared_bytes}")

    @property
    def threads(self) -> int:
        """Threads per block."""
        return self.block.size

    @property
    def build(self) -> tuple[str, tuple[str, ...]]:
        """(file, options): what one compile produces; launches that share it share a module."""
        return self.file, self.options

    @property
    def key(self) -> tuple[str, str, tuple[str, ...], int, int]:
        """What decides the launch's resources and occupancy: file, kernel, options, threads and
        dynamic shared memory (two sweeps that time one build give the same key)."""
        return self.file, self.kernel, self.options, self.threads, self.dynamic_shared_bytes

    def with_grid(self, grid: Dim3 | int | Sequence[int]) -> Launch:
        """This launch over ``grid``."""
        return replace(self, grid=Dim3.of(grid))

    def relabel(self, **labels: Any) -> Launch:
        """This launch with more (or other) labels."""
        return replace(self, labels={**self.labels, **labels})

    def from_copy(self, file: str | Path | None) -> Launch:
        """This launch built from ``file``, a copy of its ``kernels_cu`` file (the same file name:
        a scratch copy a student edits), instead of the original; unchanged where ``file`` is None
        or a copy of another file (a plan of several files takes the copy where it fits)."""
        if file is None or Path(file).name != Path(self.file).name:
            return self
        return replace(self, file=str(file))

    def compiled(self):
        """The compiled kernel (a ``cupy.RawKernel``; NVRTC, cached)."""
        from cudalab.core.kernels import load_kernel

        return load_kernel(self.file, self.kernel, self.options)

    def check(self, kernel=None) -> None:
        """``check_launch`` of this configuration (``LaunchRefused`` with the reason)."""
        if self.grid is None:
            raise ValueError(f"{self.kernel}: no grid given (with_grid)")
        check_launch(kernel or self.compiled(), self.grid, self.block, self.dynamic_shared_bytes)

    def __call__(self, args: tuple, *, kernel=None, stream=None) -> None:
        """Launch with ``args`` (refusals as ``LaunchRefused``, see ``launch``)."""
        if self.grid is None:
            raise ValueError(f"{self.kernel}: no grid given (with_grid)")
        launch(  # Dim3s as they are: no shape is rebuilt between a timed region's events
            kernel or self.compiled(),
            self.grid,
            self.block,
            args,
            shared_mem=self.dynamic_shared_bytes,
            stream=stream,
        )


def check_launch(
    kernel, grid: Dim3 | int | Sequence[int], block: Dim3 | int | Sequence[int], shared_bytes: int = 0
) -> None:
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
        kernel(tuple(Dim3.of(grid)), tuple(Dim3.of(block)), args, shared_mem=shared_mem, stream=stream)
    except cp.cuda.driver.CUDADriverError as exc:
        if any(code in str(exc) for code in _REFUSALS):
            raise LaunchRefused(f"the driver refused grid {grid}, block {block}: {exc}") from None
        raise
