"""The child process that Nsight Compute profiles (see ``blocked.counters.profile_phase3``): one phase-3
launch of each blocked kernel spec at its middle round, in order.

    python -m cudalab.labs.fw._ncu_target SPECS_JSON N SEED
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from cudalab.core.gpu import require_cupy
from cudalab.core.launch import allow_shared_memory
from cudalab.labs.fw.blocked.kernels import KernelSpec
from cudalab.labs.fw.graphs import gen_matrix


def launch_phase3(specs: Sequence[dict[str, Any]], n: int, seed: int) -> None:
    cp = require_cupy()
    d_input = cp.asarray(gen_matrix(n, seed))
    for spec in specs:
        plan = KernelSpec(spec["kind"], int(spec["bf"]), bool(spec.get("dpx", True)), int(spec.get("tile", 4))).plan()
        work = plan.prepare(d_input)
        size = work.shape[0]
        rounds = size // plan.bf
        p3 = plan.phases[2]
        launch = p3.launch.with_grid(p3.grid(rounds))
        allow_shared_memory(p3.kernel, launch.dynamic_shared_bytes)
        launch.check(p3.kernel)
        launch(p3.args(work, size, rounds // 2), kernel=p3.kernel)
        cp.cuda.Device().synchronize()
    print(json.dumps({"launched": len(specs), "n": n}), file=sys.stderr)


if __name__ == "__main__":
    launch_phase3(json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
