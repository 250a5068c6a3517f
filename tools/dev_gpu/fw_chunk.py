"""The min-plus Floyd-Warshall solve with other staged-chunk depths (KC, k per chunk) than the
kernel's 16, timed beside it in one run (issue 44, item 4: 0.95 of the add+min ceiling at
N = 16384 needs phase 3 itself at about 0.98 of it).

Each KC is a copy of fw_blocked_minplus.cu with its ``#define KC`` changed (beside a copy of its
header), built with the host's shared-memory size for that depth
(``kernels.MINPLUS_CHUNK`` while its plan is made). A deeper chunk halves the barriers and the
per-chunk copies per k, and needs more registers for A's next chunk and more shared memory.
For each N: every build's result is checked against CuPy's reference (N <= CHECK_MAX_N), then
rounds interleaved across builds, each a solve between two events; the median per build.
Printed, and written to ``$OUT/fw_chunk/times.csv``.

    PYTHONPATH=$PWD OUT=/tmp/out python3 tools/dev_gpu/fw_chunk.py [KC | SWITCH=VALUE | file:PATH ...]   (default 32)

``file:PATH`` times another version of the kernel (``git show main:kernels_cu/...``) beside this one;
``BF512`` (or another blocking factor) the kernel itself at that round depth instead of 256;
``file:PATH+BF512`` another version at that depth. ``FW_SIZES=4096,8192`` sets the sizes,
``FW_ROUNDS=15`` the interleaved rounds.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd
from fw_lanes import solve_ms  # beside this script: the chapter's way of timing a solve

from cudalab.core.gpu import require_cupy
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.blocked import kernels
from cudalab.labs.fw.blocked.variants import minplus_variants
from cudalab.labs.fw.graphs import gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_cupy
from cudalab.labs.int_ceiling import add_min_ceiling, ceiling

SEED = 2020
BF = 256
SIZES = tuple(int(n) for n in os.environ.get("FW_SIZES", "8192,16384").split(","))
CHECK_MAX_N = 8192
ROUNDS = int(os.environ.get("FW_ROUNDS", "5"))
KERNEL = Path(__file__).resolve().parents[2] / "kernels_cu" / "fw_blocked_minplus.cu"
DEFAULT_KC = kernels.MINPLUS_CHUNK


def copy_with_chunk(build: str, folder: Path) -> Path | None:
    """The kernel for ``build``: a KC (``32``: ``#define KC 32``) or a switch of the kernel's
    (``ADDR_KEPT=1``: a ``#define`` put first); None for the kernel itself. Under its own file
    name (``Launch.from_copy`` takes only a copy of the same name), in a folder of its own beside
    its headers."""
    whole, build = build, build.split("+")[0]  # file:PATH+BF512: the depth is solver_for's
    if build == str(DEFAULT_KC) or build.startswith("BF"):
        return None
    name = re.sub(r"[^A-Za-z0-9]+", "_", whole)  # a folder per build, however alike their copies
    here = folder / name
    here.mkdir()
    for header in KERNEL.parent.glob("*.cuh"):
        (here / header.name).write_text(header.read_text())
    text = KERNEL.read_text()
    if build.startswith("file:"):  # another version of the kernel, e.g. main's beside a branch's
        text = Path(build[5:]).read_text()
    elif "=" in build:
        text = "#define " + build.replace("=", " ", 1) + "\n" + text
    else:
        old = f"#define KC {DEFAULT_KC} "
        if old not in text:
            raise SystemExit(f"{KERNEL.name} no longer defines KC as {DEFAULT_KC}")
        text = text.replace(old, f"#define KC {build} ", 1)
    path = here / KERNEL.name
    path.write_text(text)
    return path


def solver_for(build: str, file: Path | None, n: int, start):
    """A solver of the BF 256 + DPX plan built from ``file``, the host sizing shared memory for
    the build's KC."""
    cp = require_cupy()
    kernels.MINPLUS_CHUNK = int(build) if build.isdigit() else DEFAULT_KC
    try:
        depth = re.search(r"BF(\d+)$", build)
        bf = int(depth[1]) if depth else BF
        plan = minplus_variants([bf], dpx=[True], file=file)[0].plan(n)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            first = plan.prepare(start)
            work = cp.empty_like(first)
            solver = fw.Solver(plan, work, use_graph=True, stream=stream)
    finally:
        kernels.MINPLUS_CHUNK = DEFAULT_KC
    return plan, solver, first, work, stream


def main(chunks: list[str]) -> pd.DataFrame:
    cp = require_cupy()
    out = Path(os.environ.get("OUT", "/tmp/cudalab-out")) / "fw_chunk"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        builds = {b: copy_with_chunk(b, Path(tmp)) for b in dict.fromkeys([str(DEFAULT_KC), *chunks])}
        for n in SIZES:
            d_input = cp.asarray(gen_matrix(n, SEED))
            solvers = {kc: solver_for(kc, file, n, d_input) for kc, file in builds.items()}
            reference = floyd_warshall_cupy(d_input) if n <= CHECK_MAX_N else None
            cp.cuda.Device().synchronize()  # the solvers' streams do not wait for the default stream
            correct = {}
            for kc, (plan, solver, first, work, stream) in solvers.items():
                with stream:
                    cp.copyto(work, first)
                    solver.run()
                    correct[kc] = (
                        bool(cp.array_equal(plan.finish(work, n), reference)) if reference is not None else None
                    )
                stream.synchronize()
            for r in range(ROUNDS):
                for kc, (_plan, solver, first, work, stream) in solvers.items():
                    ms = solve_ms(solver, work, first, stream)
                    rows.append({"n": n, "kc": kc, "round": r, "time_ms": ms, "correct": correct[kc]})
            del solvers, reference
            cp.get_default_memory_pool().free_all_blocks()
    times = pd.DataFrame(rows)
    times.to_csv(out / "times.csv", index=False)
    table = times.groupby(["n", "kc"]).agg(
        time_ms=("time_ms", "median"), spread_ms=("time_ms", lambda s: s.max() - s.min()), correct=("correct", "first")
    )
    table["relaxations_T_per_s"] = [n**3 / (t * 1e-3) / 1e12 for (n, _), t in zip(table.index, table["time_ms"])]
    roof = float(ceiling(add_min_ceiling())["relaxations_per_s"]) / 1e12  # this run's add+min ceiling
    table["of_ceiling"] = table["relaxations_T_per_s"] / roof
    print(f"add+min ceiling, this run: {roof:.2f} T relaxations/s")
    print(table.round(4).to_string())
    return table


if __name__ == "__main__":
    main(sys.argv[1:] or ["32"])
