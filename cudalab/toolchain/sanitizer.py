"""What compute-sanitizer's synccheck says of a kernel launch: barrier misuse that no output
check can see (a ``__syncthreads()`` that only some threads reach is undefined behaviour even
when the answer comes out right).

The launch itself is a child Python process (a target module and its arguments, named by the
caller) run under ``compute-sanitizer --tool synccheck``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from cudalab.core.paths import ROOT
from cudalab.toolchain.nvcc import cuda_tool


def synccheck(target: Sequence[str], timeout_s: int = 300) -> dict[str, Any]:
    """Errors synccheck reports for ``python TARGET...``: ``errors`` (None where it could not run)
    and the first error line (or why it could not run)."""
    tool = cuda_tool("compute-sanitizer")
    if tool is None:
        return {"errors": None, "first_error": "compute-sanitizer not found"}
    cmd = [tool, "--tool", "synccheck", sys.executable, *target]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"errors": None, "first_error": f"timed out after {timeout_s} s"}
    out = proc.stdout + proc.stderr
    m = re.search(r"ERROR SUMMARY: (\d+) error", out)
    first = next(
        (
            line.strip("= ").strip()
            for line in out.splitlines()
            if "Barrier error" in line or "error" in line.lower() and "ERROR SUMMARY" not in line
        ),
        "",
    )
    return {
        "errors": int(m.group(1)) if m else None,
        "first_error": first if m and int(m.group(1)) else ("" if m else out.strip()[-300:]),
    }
