"""Loading ``kernels_cu/*.cu`` with CuPy, and compile-checking them with nvcc.

A kernel that fails to compile must say which ``.cu`` file and line, so the
source is handed to NVRTC behind a ``#line`` directive naming the real file:
the compiler's own diagnostics then point at ``kernels_cu/...cu(LINE)``, or at
the header's own line where the error is in a header the file includes.

A kernel file may include local headers (``#include "add_min.cuh"``, found in
the file's own folder, which every compiler here has on its include path). What
a build depends on is therefore the file *and* those headers: ``source_digest``
covers both, and every cache of a compiled kernel (``load_module``'s, CuPy's on
disk, ``toolchain.nvcc``'s ``ptxas`` reports) is keyed on it.
"""

from __future__ import annotations

import hashlib
import os
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


def compile_error(path: Path, log: str) -> KernelCompileError:
    """The error to raise for a kernel file ``path`` that failed to compile with this ``log``: it
    names the file and line of the first error, the included header's where the error is in one
    (a relative name in the log is the compiler's working folder's or the kernel's folder's)."""
    where, line, message = first_error(log)
    if where is not None:
        for named in (Path(where), path.parent / where):
            if named.is_file() and named.resolve() != path:
                return KernelCompileError(named.resolve(), line, message, log)
    return KernelCompileError(path, line, message, log)


def kernel_path(filename: str | Path) -> Path:
    path = Path(filename)
    if not path.is_absolute() and not path.exists():
        path = KERNELS_DIR / path
    if not path.is_file():
        raise KernelCompileError(path, None, "no such kernel file", "")
    return path.resolve()


def include_options(path: Path) -> tuple[str, ...]:
    """The include path a kernel file compiles with, NVRTC and nvcc alike: its own folder, where its
    local headers (``#include "add_min.cuh"``) are."""
    return (f"-I{path.parent}",)


_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def included_headers(path: str | Path) -> list[Path]:
    """The local headers a kernel file includes, directly or through another header, in the order
    first met: each ``#include "NAME"`` found beside the file that includes it or in the kernel's
    folder (the include path). Includes under an ``#if`` count as well: a digest may cover more than
    a build reads, never less. System headers (``<...>``) are the toolkit's, not the project's."""
    top = kernel_path(path)
    found: list[Path] = []
    todo = [top]
    while todo:
        current = todo.pop(0)
        for name in _LOCAL_INCLUDE.findall(current.read_text(errors="replace")):
            for folder in dict.fromkeys((current.parent, top.parent)):
                candidate = (folder / name).resolve()
                if candidate.is_file():
                    if candidate != top and candidate not in found:
                        found.append(candidate)
                        todo.append(candidate)
                    break
    return found


_digests: dict[Path, tuple[tuple[tuple[Path, int, int], ...], str]] = {}


def _stamp(path: Path) -> tuple[Path, int, int]:
    st = os.stat(path)
    return path, st.st_mtime_ns, st.st_size


def source_digest(path: str | Path) -> str:
    """sha256 of a kernel file and the local headers it includes (``included_headers``): what its
    compilation depends on, beside the options and the compiler. Every cache of a compiled kernel
    keys on it, so an edit to a shared header rebuilds each file that includes it.

    Remembered per file while none of the files it covers changes size or modification time (one
    ``stat`` each): ``load_module`` asks for it at every launch."""
    path = kernel_path(path)
    memo = _digests.get(path)
    if memo is not None:
        try:
            if all(_stamp(stamp[0]) == stamp for stamp in memo[0]):
                return memo[1]
        except OSError:
            pass
    files = [path, *included_headers(path)]
    stamps = tuple(_stamp(p) for p in files)
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    digest = h.hexdigest()
    _digests[path] = (stamps, digest)
    return digest


_modules: dict[tuple, Any] = {}


def load_module(filename: str | Path, options: Iterable[str] = ()):
    """Compile a ``.cu`` file with NVRTC (cached) and return the ``cupy.RawModule``.

    Cached in this process on the file, ``source_digest`` and options, and on disk by CuPy on the
    source text and options: the text handed to NVRTC therefore starts with a comment carrying the
    digest, so that an edit to an included header, which NVRTC reads from disk behind CuPy's back,
    still changes the text CuPy keys on."""
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    path = kernel_path(filename)
    key = _module_key(path, options)
    if key in _modules:
        return _modules[key]
    _, digest, opts = key
    source = f"// cudalab source_digest {digest} ({path.name} and its headers)\n" + f'#line 1 "{path}"\n'
    module = cp.RawModule(code=source + path.read_text(), options=opts)
    try:
        module.compile()
    except cp.cuda.compiler.CompileException as exc:
        raise compile_error(path, str(exc)) from None
    _modules[key] = module
    return module


def loaded_module(filename: str | Path, options: Iterable[str] = ()):
    """The ``cupy.RawModule`` this process already compiled for ``filename`` and ``options``
    (``load_module``), or None: never compiles. What the run timed, for a report on the code as
    loaded (its registers and static shared memory) without compiling it a second time."""
    return _modules.get(_module_key(kernel_path(filename), options))


def _module_key(path: Path, options: Iterable[str]) -> tuple[str, str, tuple[str, ...]]:
    """A module's key in this process: its file, ``source_digest`` (the file and its headers) and
    the options NVRTC gets (the folder's includes first)."""
    return str(path), source_digest(path), (*include_options(path), "-std=c++17", *options)


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


def _listing(path: Path, title: str, inner: str = "", *, folded: bool) -> str:
    """One folded listing of a file: a ``<details>`` block whose summary names it and its length."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer

    text = path.read_text().rstrip()
    code = highlight(text, CudaLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    lines = text.count("\n") + 1
    return (
        f'<details class="cudalab-listing"{"" if folded else " open"}><summary>{title}: '
        f"<code>kernels_cu/{path.name}</code> ({lines} lines)</summary>\n"
        f'<div class="cudalab-listing-code">{code}</div>{inner}</details>'
    )


def source_markdown(filename: str | Path, *, folded: bool = True):
    """The kernel file's source, for the notebook to show what is being measured.

    Folded like the report's code (a ``<details>`` block whose summary names the file and its
    length): a listing is reference material beside the story; a handout prints it open. The
    highlighting is inline, so the listing reads the same in JupyterLab, the HTML and the PDF.
    Each local header the file includes (``included_headers``, e.g. ``add_min.cuh``) follows its
    code as a listing of its own, folded inside, so that the listing shows all the code it runs."""
    from IPython.display import HTML

    path = kernel_path(filename)
    headers = "".join(_listing(h, "Included", folded=folded) for h in included_headers(path))
    return HTML(_listing(path, "Listing", headers, folded=folded))


def kernel_resources(kernel) -> dict[str, int]:
    """What the compiled kernel uses per thread and block on the present GPU."""
    return {
        "registers_per_thread": kernel.num_regs,
        "static_shared_bytes": kernel.shared_size_bytes,
        "local_bytes_per_thread": kernel.local_size_bytes,
        "max_threads_per_block": kernel.max_threads_per_block,
    }
