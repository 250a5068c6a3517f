"""The child process that compute-sanitizer watches (see ``per_k.synccheck``): one step of a
per-k kernel on a ceil grid over a sparse graph.

    python -m cudalab.labs.fw._sanitizer_target FILE KERNEL BLOCK_X BLOCK_Y N [NVRTC_OPTION ...]
"""

from __future__ import annotations

import sys

import numpy as np

from cudalab.core.gpu import require_cupy
from cudalab.core.kernels import load_kernel
from cudalab.labs.fw.graphs import gen_sparse


def launch_one_step(file: str, name: str, bx: int, by: int, n: int, options: list[str]) -> None:
    cp = require_cupy()
    kernel = load_kernel(file, name, options=options)
    d = cp.asarray(gen_sparse(n, 1))
    kernel((-(-n // bx), -(-n // by)), (bx, by), (d, np.int32(n // 2), np.int32(n)))
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    file, name, bx, by, n, *options = sys.argv[1:]
    launch_one_step(file, name, int(bx), int(by), int(n), options)
