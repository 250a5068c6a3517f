"""Closing the pivot block at BF 512 with the BF 128 build or the BF 64 one, and where the
look-ahead lane's time goes while phase 3 fills the GPU (issue 44, item 4: 0.93 of the add+min
ceiling at N = 8192). The chapter's plan closes by 128 since this measured it faster at 8192
(``kernels.minplus_closing_bf``).

At BF 512 and 8192 the look-ahead lane finished after phase 3 in 16 of 18 rounds
(``fw_lanes.py``). That lane runs the look-ahead strips, then closes the next pivot block as a
blocked solve of its 8 x 8 tiles of 64 (24 dependent launches of one to 49 blocks), then the next
round's phase 2. Alone, the closing takes 0.27 ms a round (the phase split); beside phase 3 each
of its blocks shares an SM with phase-3 blocks, and each of its launches waits for the one
before. Closed with the BF 128 build instead, the chain is 12 launches, each twice as deep.

For each N, each plan's solve is checked against CuPy's reference (N <= CHECK_MAX_N); then solves
interleaved across plans, the median per plan; then one solve of each with an event after every
launch, giving per round when the look-ahead lane finished its strips, its closing and its
phase 2, against when the first lane finished. Printed, and written to ``$OUT/fw_inner/``.

    PYTHONPATH=$PWD OUT=/tmp/out python3 tools/dev_gpu/fw_inner.py [N ...]   (default 8192 16384)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
from fw_lanes import marked_rounds, solve_ms  # beside this script: the chapter's way of timing a solve

from cudalab.core.gpu import require_cupy
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.blocked.kernels import minplus_plan
from cudalab.labs.fw.blocked.plans import LookaheadPlan
from cudalab.labs.fw.graphs import gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_cupy

SEED = 2020
CHECK_MAX_N = 8192
ROUNDS = int(os.environ.get("FW_ROUNDS", "7"))


def plans() -> dict[str, LookaheadPlan]:
    """The chapter's BF 512 plan, the same closed by BF 64 and by BF 128, and its BF 256 plan."""
    base = minplus_plan(512)
    out: dict[str, LookaheadPlan] = {f"BF512 (chapter's, close by {base.inner_bf})": base}
    for by in (64, 128):
        inner = minplus_plan(by).phases
        out[f"BF512 (close by {by})"] = LookaheadPlan(512, base.phases, tile=base.tile, inner=inner, inner_bf=by)
    return out | {"BF256": minplus_plan(256)}


def lane_marks(solver: fw.Solver) -> pd.DataFrame:
    """One plain solve with an event after every launch: per round, from the meeting, when lane 0
    finished, and when lane 1 finished its strips (its first launch), its closing and its phase 2
    (its last launch)."""
    cp = require_cupy()
    rounds, _ = marked_rounds(solver)
    rows = []
    for r, info in enumerate(rounds):
        lane0, lane1 = info["lanes"][0], info["lanes"][1]
        if not lane0 or not lane1:
            continue

        def at(e, info=info):
            return cp.cuda.get_elapsed_time(info["meeting"], e)

        rows.append(
            {
                "round": r,
                "lane0_end_ms": at(lane0[-1]),
                "strips_end_ms": at(lane1[0]),
                "closing_end_ms": at(lane1[-2]),
                "phase2_end_ms": at(lane1[-1]),
                "closing_launches": len(lane1) - 2,
            }
        )
    return pd.DataFrame(rows)


def main(sizes: list[int]) -> None:
    cp = require_cupy()
    out = Path(os.environ.get("OUT", "/tmp/cudalab-out")) / "fw_inner"
    out.mkdir(parents=True, exist_ok=True)
    times, marks = [], []
    for n in sizes:
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            d_input = cp.asarray(gen_matrix(n, SEED))
            reference = floyd_warshall_cupy(d_input) if n <= CHECK_MAX_N else None
            stream.synchronize()
            solvers = {}
            for name, plan in plans().items():
                start = plan.prepare(d_input)
                work = cp.empty_like(start)
                solver = fw.Solver(plan, work, use_graph=False, stream=stream)
                ok = None
                if reference is not None:
                    cp.copyto(work, start)
                    solver.run()
                    ok = bool(cp.array_equal(plan.finish(work, n), reference))
                solvers[name] = (solver, work, start, ok)
                print(f"N {n} {name}: correct {ok}", flush=True)
            for rep in range(ROUNDS):
                for name, (solver, work, start, ok) in solvers.items():
                    times.append(
                        {
                            "n": n,
                            "plan": name,
                            "rep": rep,
                            "correct": ok,
                            "time_ms": solve_ms(solver, work, start, stream),
                        }
                    )
            for name, (solver, work, start, _) in solvers.items():
                cp.copyto(work, start)
                m = lane_marks(solver)
                m.insert(0, "n", n)
                m.insert(1, "plan", name)
                marks.append(m)
        frame = pd.DataFrame(times)
        print(
            frame[frame.n == n].groupby("plan")["time_ms"].describe(percentiles=[0.5]).round(3).to_string(), flush=True
        )
        pd.DataFrame(times).to_csv(out / "times.csv", index=False)
        pd.concat(marks).to_csv(out / "marks.csv", index=False)
    m = pd.concat(marks)
    m["exposed_ms"] = (m.phase2_end_ms - m.lane0_end_ms).clip(lower=0)
    print(
        m.groupby(["n", "plan"])[["lane0_end_ms", "strips_end_ms", "closing_end_ms", "phase2_end_ms", "exposed_ms"]]
        .median()
        .round(3)
        .to_string()
    )
    print(m.groupby(["n", "plan"])["exposed_ms"].sum().round(3).to_string())


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8192, 16384])
