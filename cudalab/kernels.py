"""Loading ``kernels_cu/*.cu`` with CuPy, and compile-checking them with nvcc.

A kernel that fails to compile must say which ``.cu`` file and line, so the
source is handed to NVRTC behind a ``#line`` directive naming the real file:
the compiler's own diagnostics then point at ``kernels_cu/...cu(LINE)``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

from cudalab.paths import KERNELS_DIR

_DIAGNOSTIC = re.compile(r"(?P<file>[^\s\"()]+\.cuh?)\((?P<line>\d+)\): (?P<kind>error|catastrophic error|warning)"
                         r"[^:]*: (?P<message>.*)")


class KernelCompileError(RuntimeError):
    """A ``.cu`` file that does not compile; carries the file, line and full log."""

    def __init__(self, path: Path, line: Optional[int], message: str, log: str):
        self.path, self.line, self.log = Path(path), line, log
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {message}\n--- compiler log ---\n{log.strip()}")


def first_error(log: str) -> tuple[Optional[str], Optional[int], str]:
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
        raise FileNotFoundError(f"no kernel file {path}")
    return path.resolve()


_modules: dict[tuple, Any] = {}


def load_module(filename: str | Path, options: Iterable[str] = ()):
    """Compile a ``.cu`` file with NVRTC (cached) and return the ``cupy.RawModule``."""
    from cudalab.gpu import require_cupy

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


def load_kernel(filename: str | Path, name: str, options: Iterable[str] = ()):
    """One ``extern "C"`` kernel of a ``.cu`` file, as a ``cupy.RawKernel``."""
    return load_module(filename, options).get_function(name)


def source_markdown(filename: str | Path):
    """The kernel file's source, for the notebook to show what is being measured."""
    from IPython.display import Markdown

    path = kernel_path(filename)
    return Markdown(f"`kernels_cu/{path.name}`\n\n```cuda\n{path.read_text().rstrip()}\n```")


def kernel_resources(kernel) -> dict[str, int]:
    """What the compiled kernel uses per thread and block on the present GPU."""
    return {
        "registers_per_thread": kernel.num_regs,
        "static_shared_bytes": kernel.shared_size_bytes,
        "local_bytes_per_thread": kernel.local_size_bytes,
        "max_threads_per_block": kernel.max_threads_per_block,
    }


# --------------------------------------------------------------- nvcc check


@dataclass(frozen=True)
class PtxasUsage:
    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?")


def parse_ptxas(log: str) -> list[PtxasUsage]:
    """Per-kernel registers, shared memory and spills from ``ptxas -v`` output."""
    usages, current = [], None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = {"kernel": m["name"], "arch": m["arch"], "stack": 0, "st": 0, "ld": 0}
        elif current and (m := _FRAME.search(line)):
            current.update(stack=int(m["stack"]), st=int(m["st"]), ld=int(m["ld"]))
        elif current and (m := _USED.search(line)):
            usages.append(PtxasUsage(current["kernel"], current["arch"], int(m["regs"]), int(m["smem"] or 0),
                                     current["stack"], current["st"], current["ld"]))
            current = None
    return usages


def _nvcc_cubin(path: Path, arch: str, options: Iterable[str], out: str, extra: tuple[str, ...] = ()) -> str:
    """Compile a kernel file to a cubin with nvcc; its log, or ``KernelCompileError`` naming file and line."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc is not installed here (not on PATH, nor in /usr/local/cuda/bin)")
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", *extra, f"-I{path.parent}", "-o", out, *options, str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        _, line, message = first_error(log)
        raise KernelCompileError(path, line, message, log)
    return log


def nvcc_check(filename: str | Path, arch: str = "sm_90", options: Iterable[str] = ()) -> list[PtxasUsage]:
    """Compile a ``.cu`` file to a cubin with nvcc (no GPU needed) and report resources.

    Raises ``KernelCompileError`` naming the file and line when it does not compile.
    """
    return parse_ptxas(_nvcc_cubin(kernel_path(filename), arch, options, "/dev/null", ("-Xptxas", "-v")))


# --------------------------------------------------------------- SASS


CUDA_BIN = Path("/usr/local/cuda/bin")
_SASS_FUNCTION = re.compile(r"Function : (?P<name>\S+)")
_SASS_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_]*)(?:\.[\w.]+)?\b")


def cuda_tool(name: str) -> Optional[str]:
    """A CUDA toolkit program from PATH or /usr/local/cuda/bin, or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = CUDA_BIN / name
    return str(candidate) if candidate.is_file() else None


def parse_sass(text: str) -> dict[str, dict[str, int]]:
    """Opcode counts per kernel from ``cuobjdump -sass`` output (predicates and modifiers dropped)."""
    counts: dict[str, dict[str, int]] = {}
    current: Optional[dict[str, int]] = None
    for line in text.splitlines():
        if m := _SASS_FUNCTION.search(line):
            current = counts.setdefault(m["name"], {})
        elif current is not None and (m := _SASS_INSTRUCTION.search(line)):
            current[m["op"]] = current.get(m["op"], 0) + 1
    return counts


def sass_opcodes(filename: str | Path, arch: str, options: Iterable[str] = ()) -> dict[str, dict[str, int]]:
    """Compile a kernel file with nvcc for ``arch`` and count the machine instructions of each
    kernel: what ptxas really emitted (e.g. whether min(a + b, c) became one VIADDMNMX)."""
    import tempfile

    cuobjdump = cuda_tool("cuobjdump")
    if cuobjdump is None:
        raise FileNotFoundError("cuobjdump is needed to read SASS; it is not installed here")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        _nvcc_cubin(kernel_path(filename), arch, options, str(cubin))
        dump = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return parse_sass(dump)


def present_arch() -> str:
    """The present GPU's ``sm_XY``."""
    from cudalab.gpu import require_cupy

    cp = require_cupy()
    return f"sm_{cp.cuda.Device().compute_capability}"


def sass_table(builds: Iterable[tuple[str, str, tuple[str, ...]]], arch: Optional[str] = None):
    """A tidy frame (build, kernel, opcode, count) of the SASS of each (label, file, options)
    build for the present GPU; one row with the reason where nvcc or cuobjdump is missing."""
    import pandas as pd

    arch = arch or present_arch()
    rows = []
    for label, filename, options in builds:
        try:
            counts = sass_opcodes(filename, arch, options)
        except FileNotFoundError as exc:
            return pd.DataFrame([{"build": "", "kernel": "", "opcode": "", "count": 0, "arch": arch, "note": str(exc)}])
        rows += [{"build": label, "kernel": kernel, "opcode": op, "count": n, "arch": arch, "note": ""}
                 for kernel, ops in counts.items() for op, n in ops.items()]
    return pd.DataFrame(rows)
