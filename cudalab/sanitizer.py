"""What compute-sanitizer's synccheck says of a per-k kernel: barrier misuse that no output
check can see (a __syncthreads() that only some threads reach is undefined behaviour even when
the answer comes out right).

    python -m cudalab.sanitizer FILE KERNEL BLOCK_X BLOCK_Y N [NVRTC_OPTION ...]

launches one step of the kernel on a ceil grid; ``synccheck`` runs that under compute-sanitizer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Optional, Sequence

import pandas as pd

from cudalab.paths import ROOT


def find_sanitizer() -> Optional[str]:
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)


def synccheck(file: str, kernel: str, block: tuple[int, int], n: int, options: Sequence[str] = (),
              timeout_s: int = 300) -> dict:
    """Errors synccheck reports for one launch (a dict row; 'errors' is None if it could not run)."""
    tool = find_sanitizer()
    row = {"file": file, "kernel": kernel, "block": f"{block[0]}x{block[1]}", "n": n, "options": " ".join(options)}
    if tool is None:
        return {**row, "errors": None, "first_error": "compute-sanitizer not found"}
    cmd = [tool, "--tool", "synccheck", sys.executable, "-m", "cudalab.sanitizer", file, kernel,
           str(block[0]), str(block[1]), str(n), *options]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {**row, "errors": None, "first_error": f"timed out after {timeout_s} s"}
    out = proc.stdout + proc.stderr
    m = re.search(r"ERROR SUMMARY: (\d+) error", out)
    first = next((line.strip("= ").strip() for line in out.splitlines() if "Barrier error" in line or "error" in line.lower()
                  and "ERROR SUMMARY" not in line), "")
    return {**row, "errors": int(m.group(1)) if m else None, "first_error": first if m and int(m.group(1)) else
            ("" if m else out.strip()[-300:])}


def synccheck_table(cases: Sequence[tuple[str, str, tuple[int, int], int, Sequence[str]]]) -> pd.DataFrame:
    return pd.DataFrame([synccheck(*case) for case in cases])


def _probe(argv: list[str]) -> None:
    import numpy as np

    from cudalab.floyd_warshall import gen_sparse
    from cudalab.kernels import load_kernel

    import cupy as cp

    file, name, bx, by, n, *options = argv
    bx, by, n = int(bx), int(by), int(n)
    kernel = load_kernel(file, name, options=options)
    d = cp.asarray(gen_sparse(n, 1))
    grid = (-(-n // bx), -(-n // by))
    kernel(grid, (bx, by), (d, np.int32(n // 2), np.int32(n)))
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    _probe(sys.argv[1:])
