"""Loading ``kernels_cu/*.cu`` with CuPy, and compile-checking them with nvcc.

A kernel that fails to compile must say which ``.cu`` file and line, so the
source is handed to NVRTC behind a ``#line`` directive naming the real file:
the compiler's own diagnostics then point at ``kernels_cu/...cu(LINE)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudalab.core.errors import KernelCompileError
from cudalab.core.paths import KERNELS_DIR

_DIAGNOSTIC = re.compile(
    r"(?P<file>[^\s\"()]+\.cuh?)\((?P<line>\d+)\): (?P<kind>error|catastrophic error|warning)"
    r"[^:]*: (?P<message>.*)"
)


def first_error(log: str) -> tuple[str | None, int | None, str]:
    """The file, line and message of the first error in an NVRTC/nvcc log."""
    fallback = None
    for m in _DIAGNOSTIC.finditer(log):
        hit = (m.group("file"), int(m.group("line")), m.group("message").strip())
        if "error" in m.group("kind"):
            return hit
        fallback = fallback or hit
    if fallback:
        return fallback
    return None, None, (log.strip().splitlines() or ["compilation failed"])[0]


def kernel_path(filename: str | Path) -> Path:
    path = Path(filename)
    if not path.is_absolute() and not path.exists():
        path = KERNELS_DIR / path
    if not path.is_file():
        raise KernelCompileError(path, None, "no such kernel file", "")
    return path.resolve()


_modules: dict[tuple, Any] = {}


def load_module(filename: str | Path, options: Iterable[str] = ()):
    """Compile a ``.cu`` file with NVRTC (cached) and return the ``cupy.RawModule``."""
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    path = kernel_path(filename)
    opts = (f"-I{path.parent}", "-std=c++17", *options)
    key = (str(path), path.stat().st_mtime_ns, opts)
    if key in _modules:
        return _modules[key]
    source = f'#line 1 "{path}"\n' + path.read_text()
    module = cp.RawModule(code=source, options=opts)
    try:
        module.compile()
    except cp.cuda.compiler.CompileException as exc:
        log = str(exc)
        _, line, message = first_error(log)
        raise KernelCompileError(path, line, message, log) from None
    _modules[key] = module
    return module


def precompile(builds: Iterable[tuple[str | Path, Iterable[str]]], workers: int | None = None) -> int:
    """Compile many builds (file, options) at once, before their first launch, and return how many.

    A chapter that times dozens of kernel builds would otherwise compile them one by one as each
    is first used. NVRTC compiles outside Python's interpreter lock, so threads compile in
    parallel; the modules land in ``load_module``'s cache (and CuPy's on disk). A build that
    fails to compile is left for its first use to report, where the chapter says which."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    unique = list(dict.fromkeys((str(f), tuple(o)) for f, o in builds))

    def one(build: tuple[str, tuple[str, ...]]) -> None:
        try:
            load_module(*build)
        except KernelCompileError:
            pass

    with ThreadPoolExecutor(max_workers=workers or min(16, os.cpu_count() or 1)) as pool:
        list(pool.map(one, unique))
    return len(unique)


def load_kernel(filename: str | Path, name: str, options: Iterable[str] = ()):
    """One ``extern "C"`` kernel of a ``.cu`` file, as a ``cupy.RawKernel``."""
    return load_module(filename, options).get_function(name)


def source_markdown(filename: str | Path, *, folded: bool = True):
    """The kernel file's source, for the notebook to show what is being measured.

    Folded like the report's code (a ``<details>`` block whose summary names the file and its
    length): a listing is reference material beside the story; a handout prints it open. The
    highlighting is inline, so the listing reads the same in JupyterLab, the HTML and the PDF."""
    from IPython.display import HTML
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer

    path = kernel_path(filename)
    text = path.read_text().rstrip()
    code = highlight(text, CudaLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    lines = text.count("\n") + 1
    return HTML(
        f'<details class="cudalab-listing"{"" if folded else " open"}><summary>Listing: '
        f"<code>kernels_cu/{path.name}</code> ({lines} lines)</summary>\n"
        f'<div class="cudalab-listing-code">{code}</div></details>'
    )


def kernel_resources(kernel) -> dict[str, int]:
    """What the compiled kernel uses per thread and block on the present GPU."""
    return {
        "registers_per_thread": kernel.num_regs,
        "static_shared_bytes": kernel.shared_size_bytes,
        "local_bytes_per_thread": kernel.local_size_bytes,
        "max_threads_per_block": kernel.max_threads_per_block,
    }
