"""Where the min-plus solve's look-ahead leaves the GPU waiting, round by round (issue 44, item 4).

Chapter 04's best kernel overlaps round r + 1's phases 1 and 2 (the second lane) with round r's
phase 3 (the first), and the lanes meet once a round. The phase split times each launch alone;
this times the overlapped solve as it runs: a CUDA event after every launch on its own stream,
so that for each round we know how long each lane took from the meeting to its last launch, and
which lane the next meeting waited for; each N twice, the second lane at the harness's highest
stream priority and at normal priority. Summed over rounds:

- ``lane0_ms``: the rest of phase 3, on the first lane;
- ``lane1_ms``: the look-ahead strips, then the next round's phases 1 and 2, on the second;
- ``round_ms``: meeting to meeting, the longer lane and what joining them costs;
- ``exposed_lane1_ms``: where the second lane finished after the first, the difference.

With ``round_ms`` against the solve's own time (no events) and phase 3's time alone (the phase
split), what is left is phase 3's drain at each meeting (its last wave, with nothing behind it).
Printed, and written to ``$OUT/fw_lanes/rounds.csv`` and ``summary.csv``.

    PYTHONPATH=$PWD OUT=/tmp/out [FW_BF=512] python3 tools/dev_gpu/fw_lanes.py [N ...]   (default 8192 16384, BF 256)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from cudalab.core.gpu import require_cupy
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.blocked.variants import minplus_variants
from cudalab.labs.fw.graphs import gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_cupy

SEED = 2020
BF = int(os.environ.get("FW_BF", "256"))  # FW_BF=512: the round depth of the solve timed
CHECK_MAX_N = 8192
# the second lane's stream priority: the harness's highest (its blocks dispatched before phase 3's
# as SMs free up), and normal beside it (phase 3's blocks first, the look-ahead in its drains)
PRIORITIES = ("highest", "normal")


def solve_ms(solver: fw.Solver, work, start, stream) -> float:
    """One solve from ``start`` as the chapter times it: an event pair around it, none between launches."""
    cp = require_cupy()
    with stream:
        cp.copyto(work, start)
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record(stream)
        solver.run()
        t1.record(stream)
    t1.synchronize()
    return cp.cuda.get_elapsed_time(t0, t1)


def marked_rounds(solver: fw.Solver) -> tuple[list[dict], object]:
    """One plain solve with an event after every launch on its lane's stream: per round (from
    one meeting of the lanes to the next) the meeting's event and each lane's list of events, one
    per launch; and the solve's end. Synchronized before it returns."""
    cp = require_cupy()
    stream, side = solver.stream, solver.side

    def mark(s):
        event = cp.cuda.Event()
        event.record(s)
        return event

    rounds: list[dict] = []
    meeting, side_joined, current = mark(stream), True, None
    for x in solver.schedule:
        if isinstance(x, fw.LanesMeet):
            if not side_joined:
                stream.wait_event(mark(side))
                side_joined = True
            meeting = mark(stream)
            current = {"meeting": meeting, "lanes": {0: [], 1: []}}
            rounds.append(current)
            continue
        if x.lane and side_joined:
            side.wait_event(meeting)
            side_joined = False
        lane_stream = side if x.lane else stream
        x.kernel(x.grid, x.block, x.args, shared_mem=x.shared_mem, stream=lane_stream)
        if current is not None:
            current["lanes"][x.lane].append(mark(lane_stream))
    if not side_joined:
        stream.wait_event(mark(side))
    end = mark(stream)
    end.synchronize()
    return rounds, end


def timed_rounds(solver: fw.Solver) -> pd.DataFrame:
    """One plain solve with an event after every launch; a row per (round, lane): the lane's time
    from the round's meeting to its last launch's end, and its launches."""
    cp = require_cupy()
    rounds, end = marked_rounds(solver)
    rows = []
    for r, info in enumerate(rounds):
        following = rounds[r + 1]["meeting"] if r + 1 < len(rounds) else end
        span = cp.cuda.get_elapsed_time(info["meeting"], following)
        lanes = {
            lane: cp.cuda.get_elapsed_time(info["meeting"], marks[-1]) if marks else 0.0
            for lane, marks in info["lanes"].items()
        }
        rows.append(
            {
                "round": r,
                "lane0_ms": lanes[0],
                "lane1_ms": lanes[1],
                "round_ms": span,
                "exposed_lane1_ms": max(0.0, lanes[1] - lanes[0]),
                "lane0_launches": len(info["lanes"][0]),
                "lane1_launches": len(info["lanes"][1]),
            }
        )
    return pd.DataFrame(rows)


def main(sizes: list[int]) -> None:
    cp = require_cupy()
    out = Path(os.environ.get("OUT", "/tmp/cudalab-out")) / "fw_lanes"
    out.mkdir(parents=True, exist_ok=True)
    variant = minplus_variants([BF], dpx=[True])[0]
    frames, summary = [], []
    highest = fw._priority_stream
    for n, priority in [(n, p) for n in sizes for p in PRIORITIES]:
        # the second lane's stream: the harness's (highest priority), or one of normal priority
        fw._priority_stream = highest if priority == "highest" else lambda: cp.cuda.Stream(non_blocking=True)
        plan = variant.plan(n)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            d_input = cp.asarray(gen_matrix(n, SEED))
            start = plan.prepare(d_input)
            work = cp.empty_like(start)
            solver = fw.Solver(plan, work, use_graph=False, stream=stream)
            plain = [solve_ms(solver, work, start, stream) for _ in range(3)]
            cp.copyto(work, start)
            rounds = timed_rounds(solver)
            # CuPy's reference costs N steps over the whole matrix: checked up to CHECK_MAX_N
            ok = bool(cp.array_equal(plan.finish(work, n), floyd_warshall_cupy(d_input))) if n <= CHECK_MAX_N else None
        rounds.insert(0, "n", n)
        rounds.insert(1, "side_priority", priority)
        frames.append(rounds)
        s = {
            "n": n,
            "side_priority": priority,
            "correct": ok,
            "solve_ms_plain": sorted(plain)[1],
            "solve_ms_with_events": float(rounds["round_ms"].sum()),
            "lane0_ms": float(rounds["lane0_ms"].sum()),
            "lane1_ms": float(rounds["lane1_ms"].sum()),
            "exposed_lane1_ms": float(rounds["exposed_lane1_ms"].sum()),
            "rounds_lane1_longer": int((rounds["lane1_ms"] > rounds["lane0_ms"]).sum()),
            "rounds": len(rounds),
        }
        summary.append(s)
        print(", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in s.items()), flush=True)
    pd.concat(frames).to_csv(out / "rounds.csv", index=False)
    pd.DataFrame(summary).to_csv(out / "summary.csv", index=False)
    columns = ["lane0_ms", "lane1_ms", "round_ms", "exposed_lane1_ms"]
    fw._priority_stream = highest
    print(pd.concat(frames).groupby(["n", "side_priority"])[columns].describe(percentiles=[0.5]).T.round(3).to_string())


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8192, 16384])
