"""nvcc as a child process: compile-check a ``.cu`` file and read its resource usage (``ptxas -v``).

Works without a GPU (CI compiles every kernel for sm_75 and sm_90); a compile error names the
``.cu`` file and line, like a load through NVRTC does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from cudalab.core.errors import KernelCompileError, ToolUnavailable
from cudalab.core.kernels import first_error, kernel_path


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


CUDA_BIN = Path("/usr/local/cuda/bin")


def cuda_tool(name: str) -> Optional[str]:
    """A CUDA toolkit program from PATH or /usr/local/cuda/bin, or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = CUDA_BIN / name
    return str(candidate) if candidate.is_file() else None


def nvcc_cubin(path: Path, arch: str, options: Iterable[str], out: str, extra: tuple[str, ...] = ()) -> str:
    """Compile a kernel file to a cubin with nvcc; its log, or ``KernelCompileError`` naming file and line."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here (not on PATH, nor in /usr/local/cuda/bin)")
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
    return parse_ptxas(nvcc_cubin(kernel_path(filename), arch, options, "/dev/null", ("-Xptxas", "-v")))
