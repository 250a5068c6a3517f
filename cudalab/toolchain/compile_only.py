"""A submission compiled without a GPU: each of its kernel files beside the project's file it
stands in for, built with nvcc for the profile's architecture (issue 43, item 2).

Per kernel function: registers, shared memory, stack and spills (``ptxas -v``), and the number of
machine instructions (``cuobjdump -sass``), the student's and the reference's side by side. A file
that does not compile is one row saying so, with the file name and line of the compiler's first
error, the submission's own file name and never a path of the machine. Timings need a GPU; this
says what the compiler made of the code.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from cudalab.core.errors import KernelCompileError, ToolUnavailable
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.submission import Submission
from cudalab.toolchain.nvcc import cuda_tool, nvcc_cubin, parse_ptxas
from cudalab.toolchain.sass import parse_sass

YOURS, REFERENCE = "yours", "reference"
TIMINGS_NEED_A_GPU = "compiled only: its timings need a GPU (run the same command on a GPU host)"


def _where(error: KernelCompileError, folder: Path) -> str:
    """The compiler's first error as the student reads it: 'fw_blocked.cu:12: expected a ";"'."""
    name = error.path.name if error.path.resolve().parent in (folder.resolve(), KERNELS_DIR.resolve()) else "?"
    return f"{name}:{error.line}: {error.message}" if error.line else f"{name}: {error.message}"


def _build(path: Path, arch: str, includes: tuple[str, ...]) -> list[dict]:
    """One kernel file's functions: resources and SASS instruction counts (ToolUnavailable where
    nvcc is missing; a missing cuobjdump leaves the instruction count out)."""
    cuobjdump = cuda_tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        log = nvcc_cubin(path, arch, (), str(cubin), ("-Xptxas", "-v", *includes))
        sass = (
            parse_sass(subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout)
            if cuobjdump
            else {}
        )
    return [
        {
            "kernel": u.kernel,
            "registers_per_thread": u.registers,
            "shared_bytes": u.shared_bytes,
            "stack_bytes": u.stack_bytes,
            "spill_bytes": u.spill_store_bytes + u.spill_load_bytes,
            **({"sass_instructions": sum(sass.get(u.kernel, {}).values())} if sass else {}),
        }
        for u in parse_ptxas(log)
    ]


def beside_reference(sub: Submission, arch: str) -> pd.DataFrame:
    """Every kernel file of ``sub`` and its reference, compiled for ``arch`` (``sm_90``): one row
    per (file, source, kernel function), ``status`` ok or "does not compile" with ``reason``."""
    if cuda_tool("nvcc") is None:
        raise ToolUnavailable("nvcc is not installed here: a submission cannot be compiled")
    rows = []
    own = (f"-I{sub.folder.resolve()}", f"-I{KERNELS_DIR}")
    for name, reference in sub.kernels.items():
        for source, path, includes in ((REFERENCE, reference, ()), (YOURS, sub.folder / name, own)):
            base = {"file": name, "source": source}
            try:
                built = _build(path, arch, includes)
            except KernelCompileError as exc:
                rows.append({**base, "status": "does not compile", "reason": _where(exc, sub.folder)})
                continue
            rows += [{**base, **b, "status": "ok", "reason": ""} for b in built]
    frame = pd.DataFrame(rows)
    counts = [c for c in frame.columns if c.endswith(("_per_thread", "_bytes", "_instructions"))]
    return frame.astype({c: "Int64" for c in counts})  # whole numbers, a file that failed has none
