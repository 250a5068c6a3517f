"""Floyd-Warshall on the GPU: plans of launches, the solver, correctness tables and sweeps.

Every lab kernel of chapters 01-03 is "one launch per k": the k loop stays on the host and each
launch relaxes the whole matrix through vertex k (``PerKPlan``, its recipes in ``labs.fw.per_k``);
chapter 04's blocked kernels launch three phases per round instead (``labs.fw.blocked``). A plan
lists the ``Step``s of one solve: each a ``core.launch.Launch`` (what runs, over which grid) with
its compiled kernel and concrete arguments. The ``Solver`` runs them (captured in a CUDA graph so
that Python's launch cost stays out of the timing); the rest checks every result against a
reference on the same random input and turns a sweep into tidy frames.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from cudalab.core.check import compare
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import Launch, allow_shared_memory, check_launch, launch, refusal_types, require_memory
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize, time_cpu, time_gpu
from cudalab.labs.fw.graphs import INPUTS, gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_c, floyd_warshall_cupy


@dataclass
class Step:
    """One kernel launch of a solve, ready to enqueue: its ``launch`` (a ``core.launch.Launch``
    with its grid), the kernel compiled from it (resolved once per plan, not per step), and the
    concrete ``args``; on ``lane`` 0 (the solver's stream) or 1 (a second stream, for work that
    may run beside lane 0's until the lanes next meet). ``grid``, ``block`` and ``shared_mem``
    are the launch's, as CuPy takes them."""

    launch: Launch
    kernel: Any
    args: tuple
    lane: int = 0
    grid: tuple[int, ...] = field(init=False)
    block: tuple[int, ...] = field(init=False)
    shared_mem: int = field(init=False)

    def __post_init__(self) -> None:
        self.grid, self.block = tuple(self.launch.grid), tuple(self.launch.block)
        self.shared_mem = self.launch.dynamic_shared_bytes

    @property
    def phase(self) -> str:
        """The part of the algorithm it belongs to (its ``phase`` label), for per-phase timing."""
        return self.launch.labels.get("phase", "")


class LanesMeet:
    """In a plan's launches: each lane waits for everything enqueued so far on the other, so what
    follows on either lane runs after all that came before (``LANES_MEET``)."""


LANES_MEET = LanesMeet()


class Plan(Protocol):
    """How a kernel family solves an n x n matrix given in the labs' convention (-1 = no edge).

    ``prepare`` turns the input into what the kernels work on (the same array, or a padded copy
    in another convention), ``launches`` lists the steps of one solve of that array (in
    order; a plan that uses a second lane says where the lanes meet), and
    ``finish`` turns the solved array back into an n x n answer in the labs' convention. A plan
    may also say, by ``capture(work) -> bool``, that a solve is better launched plainly than as a
    CUDA graph.
    """

    def prepare(self, d_input) -> Any: ...

    def launches(self, work) -> Iterator[Step | LanesMeet]: ...

    def finish(self, work, n: int) -> Any: ...


@dataclass
class PerKPlan:
    """How to solve an n x n matrix with one per-k kernel: n steps of one ``launch`` (its grid
    for this n), one per k, the kernel compiled once. ``args(matrix, k, n)`` gives a step's
    arguments; ``grid_label`` is the grid as the sweep's ``grid`` column shows it."""

    launch: Launch
    kernel: Any
    args: Callable[[Any, int, int], tuple] = field(default=lambda mat, k, n: (mat, np.int32(k), np.int32(n)))
    grid_label: str = ""

    @classmethod
    def over(cls, launch: Launch, grid: tuple[int, ...], kernel: Any = None, **kwargs: Any) -> PerKPlan:
        """``launch`` over ``grid`` (the kernel compiled unless given)."""
        kernel = kernel if kernel is not None else launch.compiled()
        return cls(launch.with_grid(grid), kernel, grid_label="x".join(map(str, grid)), **kwargs)

    def prepare(self, d_input):
        return d_input

    def launches(self, work) -> Iterator[Step]:
        n = work.shape[0]
        for k in range(n):
            yield Step(self.launch, self.kernel, self.args(work, k, n))

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
        self.launches = [x for x in self.schedule if isinstance(x, Step)]
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


def correctness(
    variants: Sequence[Variant], sizes: Sequence[int], seed: int, *, show_progress: bool = True
) -> pd.DataFrame:
    """Every variant at every n on each kind of input, against the CPU reference: which
    kernels compute Floyd-Warshall, and which only look right on the labs' inputs."""
    rows = []
    points = [(n, kind, v) for n in sizes for kind in INPUTS for v in variants]
    refs: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for n, kind, variant in progress(points, desc="correctness", total=len(points), enabled=show_progress):
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
    row["grid"] = plan.grid_label if isinstance(plan, PerKPlan) else ""
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
    show_progress: bool = True,
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
    bar = progress(points, desc=desc, total=len(points), enabled=show_progress)
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
