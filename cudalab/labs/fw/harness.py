"""Floyd-Warshall on the GPU: plans of launches, the solver, correctness tables and sweeps.

Every lab kernel of chapters 01-03 is "one launch per k": the k loop stays on
the host and each launch relaxes the whole matrix through vertex k; chapter
04's blocked kernels launch three phases per round instead (``labs.fw.blocked``).
This module runs any such plan of launches (captured in a CUDA graph so that
Python's launch cost stays out of the timing), checks every result against a
reference on the same random input, and turns a sweep into tidy frames.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from cudalab.core.check import compare
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import allow_shared_memory, check_launch, launch, refusal_types, require_memory
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize, time_cpu, time_gpu
from cudalab.labs.fw.graphs import INPUTS, gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_c, floyd_warshall_cupy


@dataclass
class Launch:
    """One kernel launch of a solve: on ``lane`` 0 (the solver's stream) or 1 (a second stream,
    for work that may run beside lane 0's until the lanes next meet); ``phase`` names its part
    of the algorithm for per-phase timing."""

    kernel: Any
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple
    shared_mem: int = 0
    lane: int = 0
    phase: str = ""


class LanesMeet:
    """In a plan's launches: each lane waits for everything enqueued so far on the other, so what
    follows on either lane runs after all that came before (``LANES_MEET``)."""


LANES_MEET = LanesMeet()


class Plan(Protocol):
    """How a kernel family solves an n x n matrix given in the labs' convention (-1 = no edge).

    ``prepare`` turns the input into what the kernels work on (the same array, or a padded copy
    in another convention), ``launches`` lists the launches of one solve of that array (in
    order; a plan that uses a second lane says where the lanes meet), and
    ``finish`` turns the solved array back into an n x n answer in the labs' convention. A plan
    may also say, by ``capture(work) -> bool``, that a solve is better launched plainly than as a
    CUDA graph.
    """

    def prepare(self, d_input) -> Any: ...

    def launches(self, work) -> Iterator[Launch | LanesMeet]: ...

    def finish(self, work, n: int) -> Any: ...


@dataclass
class PerKLaunch:
    """How to launch one per-k kernel for an n x n matrix: n launches, one per k."""

    kernel: Any
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: Callable[[Any, int, int], tuple] = field(default=lambda mat, k, n: (mat, np.int32(k), np.int32(n)))
    shared_mem: int = 0

    def prepare(self, d_input):
        return d_input

    def launches(self, work) -> Iterator[Launch]:
        n = work.shape[0]
        for k in range(n):
            yield Launch(self.kernel, self.grid, self.block, self.args(work, k, n), self.shared_mem)

    def finish(self, work, n: int):
        return work


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _priority_stream():
    """A non-blocking stream of the device's highest priority: its blocks are dispatched before
    those of a kernel already running on a normal stream, as SMs free up (a hint, no preemption)."""
    cp = require_cupy()
    try:  # CUDA clamps a priority beyond the device's range to its highest
        return cp.cuda.Stream(non_blocking=True, priority=-(2**16))
    except TypeError:  # a CuPy without the argument: the lanes still overlap, unprioritized
        return cp.cuda.Stream(non_blocking=True)


class Solver:
    """Runs the launches of one solve on one device matrix, as a CUDA graph when CuPy can
    capture one (else as plain launches on the stream).

    Everything that touches the matrix (its upload, reset, reference and check)
    must run on the solver's ``stream``: a non-blocking stream is not ordered
    with the default stream, and CuPy's memory pool reuses a freed block on the
    stream it was freed on.
    """

    def __init__(self, plan: Plan, work, use_graph: bool = True, stream=None):
        cp = require_cupy()
        self.plan, self.work = plan, work
        self.schedule = list(plan.launches(work))  # launches, and where the lanes meet
        self.launches = [x for x in self.schedule if isinstance(x, Launch)]
        self.stream = stream or cp.cuda.Stream(non_blocking=True)
        self.side = _priority_stream() if any(x.lane for x in self.launches) else None
        self.graph, self.capture_error = None, ""
        firsts = {}
        for x in self.launches:
            firsts.setdefault((id(x.kernel), x.grid, x.block, x.shared_mem), x)
        for x in firsts.values():
            allow_shared_memory(x.kernel, x.shared_mem)
            check_launch(x.kernel, x.grid, x.block, x.shared_mem)
        with self.stream:
            for x in firsts.values():  # a trial of each configuration: refusals surface here
                launch(x.kernel, x.grid, x.block, x.args, x.shared_mem)
        self.stream.synchronize()
        if use_graph and getattr(plan, "capture", lambda work: True)(work):
            try:
                with self.stream:
                    self.stream.begin_capture()
                    try:
                        self._enqueue()
                    finally:
                        self.graph = self.stream.end_capture()
            except Exception as exc:  # capture unsupported here: plain launches measure the same kernels
                self.graph, self.capture_error = None, f"{type(exc).__name__}: {exc}"
        self.launch_mode = "cuda-graph" if self.graph is not None else "stream"

    def _enqueue(self) -> None:
        """Every launch on its lane's stream. Where the lanes meet, the solver's stream waits for
        the second's work so far (a join) and marks the point that the second's next launch
        waits for (a fork); the second lane is joined at the end. In a capture this forks the
        graph and joins it again: the second stream only ever waits on events of the capture."""
        cp = require_cupy()

        def mark(stream):
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
            return event

        meeting, side_joined = mark(self.stream), True
        for x in self.schedule:
            if isinstance(x, LanesMeet):
                if not side_joined:
                    self.stream.wait_event(mark(self.side))
                    side_joined = True
                meeting = mark(self.stream)
                continue
            if x.lane and side_joined:
                self.side.wait_event(meeting)
                side_joined = False
            x.kernel(x.grid, x.block, x.args, shared_mem=x.shared_mem, stream=self.side if x.lane else self.stream)
        if not side_joined:
            self.stream.wait_event(mark(self.side))

    def run(self) -> None:
        if self.graph is not None:
            self.graph.launch(self.stream)
        else:
            with self.stream:
                self._enqueue()


@dataclass
class Variant:
    """One kernel configuration of a sweep: its label, extra columns, and launch plan for n."""

    label: str
    fields: dict[str, Any]
    plan: Callable[[int], Plan]


def solve_once(variant: Variant, mat: np.ndarray, use_graph: bool = True) -> tuple[np.ndarray, str]:
    """One untimed solve of ``mat`` with a variant; (result, launch mode)."""
    cp = require_cupy()
    n = mat.shape[0]
    plan = variant.plan(n)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        start = plan.prepare(cp.asarray(mat))
        work = start.copy()
        solver = Solver(plan, work, use_graph=use_graph, stream=stream)
        cp.copyto(work, start)  # the constructor's trial launches touched work
        solver.run()
        return cp.asnumpy(plan.finish(work, n), stream=stream, blocking=True), solver.launch_mode


def correctness(variants: Sequence[Variant], sizes: Sequence[int], seed: int) -> pd.DataFrame:
    """Every variant at every n on each kind of input, against the CPU reference: which
    kernels compute Floyd-Warshall, and which only look right on the labs' inputs."""
    rows = []
    points = [(n, kind, v) for n in sizes for kind in INPUTS for v in variants]
    refs: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for n, kind, variant in progress(points, desc="correctness", total=len(points)):
        if (n, kind) not in refs:
            mat = INPUTS[kind](n, seed)
            refs[(n, kind)] = (mat, floyd_warshall_c(mat))
        mat, ref = refs[(n, kind)]
        base = {"n": n, "input": kind, "variant": variant.label, **variant.fields}
        try:
            got, _ = solve_once(variant, mat)
        except refusal_types() as exc:
            rows.append({**base, "status": "skipped", "mismatches": np.nan, "reason": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append({**base, **compare(got, ref, "the CPU reference")})
    return pd.DataFrame(rows)


def measure_variant(variant: Variant, d_input, reference, n: int, timing: dict[str, Any], stream) -> dict[str, Any]:
    """Time one kernel configuration on ``d_input`` and check the timed run's output.

    All work is ordered on ``stream``, the stream that produced ``d_input`` and ``reference``.
    """
    cp = require_cupy()
    plan = variant.plan(n)
    with stream:
        start = plan.prepare(d_input)
        work = cp.empty_like(start)
        solver = Solver(plan, work, stream=stream)

        def reset():
            cp.copyto(work, start)

        samples = time_gpu(solver.run, setup=reset, stream=stream, **timing)
        row = {
            **summarize(samples),
            "launch_mode": solver.launch_mode,
            "launches": len(solver.launches),
            **compare(plan.finish(work, n), reference),
        }
    row["grid"] = "x".join(map(str, plan.grid)) if isinstance(plan, PerKLaunch) else ""
    return row


def expected_s(rows: Sequence[dict[str, Any]], label: str, n: int) -> float | None:
    """The time one solve of ``label`` at ``n`` should take, from its median at the largest smaller
    n measured so far, scaled as n^3 (a Floyd-Warshall solve is n^3 relaxations); None if none."""
    done = [r for r in rows if r["variant"] == label and r.get("status") == "ok" and r["n"] < n]
    if not done:
        return None
    last = max(done, key=lambda r: r["n"])
    return last["time_ms"] / 1e3 * (n / last["n"]) ** 3


def sweep(
    variants: Sequence[Variant],
    sizes: Sequence[int],
    *,
    seed: int,
    cpu_max_n: int,
    timing: dict[str, Any] | None = None,
    desc: str = "Floyd-Warshall",
    point_budget_s: float = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure every variant at every n, each on a fresh seeded random graph.

    Returns (gpu, cpu): the GPU frame has one row per (n, variant) with timing,
    status and how it was checked; the CPU frame has the sequential C time for
    every n <= ``cpu_max_n``. A result is checked against the CPU reference
    where it ran, else against CuPy's own min-plus Floyd-Warshall on the GPU.

    ``point_budget_s`` (0: none) chooses sizes by expected time: a variant whose solve at n is
    expected (``expected_s``, from its own time at a smaller n) to take longer is not run there,
    and its row says so ("over budget").
    """
    cp = require_cupy()
    # at least 3 timed solves and 0.1 s of them (a solve of a few ms gets up to 30): enough for a
    # median and quartiles, and a sweep of dozens of points stays within seconds
    timing = {"min_total_s": 0.1, **(timing or {})}
    stream = cp.cuda.Stream(non_blocking=True)  # one stream orders upload, reference, solves and checks
    gpu_rows, cpu_rows = [], []
    points = [(n, v) for n in sizes for v in variants]
    bar = progress(points, desc=desc, total=len(points))
    current_n, reference, d_input, checked_by = None, None, None, ""
    for n, variant in bar:
        base = {"n": n, "variant": variant.label, **variant.fields}
        if n != current_n:
            current_n, reference, d_input = n, None, None
            cp.get_default_memory_pool().free_all_blocks()
            try:
                require_memory(4 * n * n * 4, f"n={n} (input, work, reference and a temporary)")
            except refusal_types() as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                reason = ""
                host = gen_matrix(n, seed)
                with stream:
                    d_input = cp.asarray(host)
                    if n <= cpu_max_n:
                        out = np.empty_like(host)
                        samples = time_cpu(
                            lambda host=host, out=out: floyd_warshall_c(host, out), min_total_s=1.0 if n < 512 else 0.0
                        )
                        cpu_rows.append({"n": n, **summarize(samples, "cpu_time_ms")})
                        reference, checked_by = cp.asarray(out), "cpu"
                    else:
                        reference, checked_by = floyd_warshall_cupy(d_input), "cupy"
        if d_input is None:
            gpu_rows.append({**base, "status": "skipped", "reason": reason})
            continue
        expected = expected_s(gpu_rows, variant.label, n) if point_budget_s else None
        if expected is not None and expected > point_budget_s:
            gpu_rows.append(
                {
                    **base,
                    "status": "skipped",
                    "reason": f"over budget: expected {expected:.1f} s per solve "
                    f"(n^3 from its time at a smaller N), the sweep's budget is {point_budget_s:g} s",
                }
            )
            continue
        try:
            row = measure_variant(variant, d_input, reference, n, timing, stream)
            row["checked_against"] = checked_by
        except refusal_types() as exc:
            row = {"status": "skipped", "reason": f"{type(exc).__name__}: {exc}"}
        gpu_rows.append({**base, **row})
    return pd.DataFrame(gpu_rows), pd.DataFrame(cpu_rows)
