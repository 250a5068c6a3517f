"""Time per phase of a blocked solve: where a round's time goes.

Phase 1 is one block per round and runs serially, phase 2 is 2(R-1) tiles, phase 3 the other
(R-1)^2 tiles: the split says how much the serial phases cost beside the bulk of the work. Every
launch is bracketed by CUDA events on plain stream launches (a CUDA graph cannot be timed per
node), so the sum is a little above a captured solve's time.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cudalab.core.check import compare
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import refusal_types
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.graphs import gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_cupy


def phase_split(
    variants: Sequence[fw.Variant], n: int, seed: int, repeats: int = 3, *, show_progress: bool = True
) -> pd.DataFrame:
    """Time per phase of each blocked variant at n: every launch bracketed by CUDA events on
    plain stream launches, summed per phase, median over ``repeats`` solves after a warm-up.
    Each solve's answer is checked against CuPy's min-plus Floyd-Warshall."""
    cp = require_cupy()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        d_input = cp.asarray(gen_matrix(n, seed))
        reference = floyd_warshall_cupy(d_input)
    rows = []
    for v in progress(variants, desc=f"phase split, N = {n}", total=len(variants), enabled=show_progress):
        base = {"n": n, "variant": v.label, **v.fields}
        plan = v.plan(n)
        try:
            with stream:
                start = plan.prepare(d_input)
                work = cp.empty_like(start)
                solver = fw.Solver(plan, work, use_graph=False, stream=stream)
                per_solve = []
                for _ in range(repeats + 1):
                    cp.copyto(work, start)
                    per_solve.append(_timed_launches(solver, stream))
                status = compare(plan.finish(work, n), reference, "CuPy's min-plus reference")
        except refusal_types() as exc:
            rows.append({**base, "status": "skipped", "reason": f"{type(exc).__name__}: {exc}"})
            continue
        times = pd.DataFrame(per_solve[1:])
        for phase in times.columns:
            rows.append(
                {
                    **base,
                    "phase": phase,
                    "launches": sum(x.phase == phase for x in solver.launches),
                    **summarize(times[phase].to_numpy()),
                    **status,
                }
            )
    return pd.DataFrame(rows)


def _timed_launches(solver: fw.Solver, stream) -> dict[str, float]:
    cp = require_cupy()
    events = [cp.cuda.Event() for _ in range(len(solver.launches) + 1)]
    events[0].record(stream)
    for i, x in enumerate(solver.launches):  # one lane: every launch after the one before
        x.kernel(x.grid, x.block, x.args, shared_mem=x.shared_mem, stream=stream)
        events[i + 1].record(stream)
    events[-1].synchronize()
    totals: dict[str, float] = {}
    for i, x in enumerate(solver.launches):
        totals[x.phase] = totals.get(x.phase, 0.0) + cp.cuda.get_elapsed_time(events[i], events[i + 1])
    return totals
