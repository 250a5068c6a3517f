"""SASS, the machine code ptxas really emitted: opcode counts per kernel from nvcc and cuobjdump.

Answers questions no timing can, e.g. whether ``min(a + b, c)`` became one VIADDMNMX.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from cudalab.core.errors import ToolUnavailable
from cudalab.core.kernels import kernel_path
from cudalab.toolchain.nvcc import cuda_tool, nvcc_cubin, parse_ptxas, remember_resources

_SASS_FUNCTION = re.compile(r"Function : (?P<name>\S+)")
_SASS_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_]*)(?:\.[\w.]+)?\b")


def parse_sass(text: str) -> dict[str, dict[str, int]]:
    """Opcode counts per kernel from ``cuobjdump -sass`` output (predicates and modifiers dropped)."""
    counts: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
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
        raise ToolUnavailable("cuobjdump is needed to read SASS; it is not installed here")
    path, options = kernel_path(filename), tuple(options)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        log = nvcc_cubin(path, arch, options, str(cubin), ("-Xptxas", "-v"))
        dump = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    remember_resources(path, arch, options, parse_ptxas(log))  # the occupancy table's report, for free
    return parse_sass(dump)


def present_arch() -> str:
    """The present GPU's ``sm_XY``."""
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    return f"sm_{cp.cuda.Device().compute_capability}"


def sass_table(builds: Iterable[tuple], arch: str | None = None):
    """A tidy frame (build, kernel, opcode, count, arch) of the SASS of each (label, file, options)
    build for ``arch`` (default: the present GPU's), or of each (label, file, options, arch) build
    for its own, compiled side by side; one row with the reason where nvcc or cuobjdump is missing."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import pandas as pd

    builds = list(builds)
    default = arch or (present_arch() if any(len(b) == 3 for b in builds) else None)
    builds = [tuple(b) if len(b) == 4 else (*b, default) for b in builds]
    try:  # the builds are independent child processes: compile them side by side, one per core
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            counts = list(pool.map(lambda b: sass_opcodes(b[1], b[3], b[2]), builds))
    except ToolUnavailable as exc:
        return pd.DataFrame([{"build": "", "kernel": "", "opcode": "", "count": 0, "arch": default, "note": str(exc)}])
    rows = [
        {"build": label, "kernel": kernel, "opcode": op, "count": n, "arch": build_arch, "note": ""}
        for (label, _, _, build_arch), per_kernel in zip(builds, counts)
        for kernel, ops in per_kernel.items()
        for op, n in ops.items()
    ]
    return pd.DataFrame(rows)
