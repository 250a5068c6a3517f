"""A graded point measured and checked so that the verdict survives the kernel (``labs.checks``):
timed on fresh inputs in the submission's process, its answers judged in the grader's.

In the submission's process (``_worker_target``), ``measure_point``:

1. builds the point's ``Trial`` (its compile, its launches captured);
2. draws distinct inputs of the chapter's timed kind from the run's seed, as many as the timing
   uses (``POOL`` for a fast call, five for a slow one: one untimed call first says which), and
   times one call per input (``core.timing.time_gpu``, the harness every chapter times with: CUDA events, a
   warm-up, repeats, median and quartiles), each call's input copied in by the untimed setup, so no
   call solves an input a call before it solved; the last timed call's answer is kept;
3. solves, in the same process, a fresh input of the timed kind that no call was timed on, then each
   check input the grader asks (the request's ``checks``: the chapter's ``yours.checks.inputs`` at
   a graded point; at a sweep's other points only the first, which is then its fresh input), once each;
4. writes each answer to the answers folder the grader gave (``answer_file``) and reports the time
   and which pool input the last timed call solved. No answer is ever computed in this process.

In the grader's process, ``judge`` draws the same inputs from the same seeds (``answers_expected``),
computes what each answer must be (the family's ``expected``) and replaces the worker's
"measured" with ok, or wrong and why ("on a sparse graph at n = 1013: ..."). The seeds are the
grader's: the worker only says which of the pool's inputs came last.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cudalab.grading import results as R
from cudalab.labs.checks import Checks, input_seed

POOL = 8  # distinct timed inputs per point: a warm-up, a pace call and up to six timed calls
MEASURED = "measured"  # a worker's status for a point timed and answered, before the grader judges it
UNTIMED = "untimed"
# What a worker may report for a point besides MEASURED: it did not get as far as answering.
WORKER_FAILURES = (
    R.CRASHED,
    R.TIMED_OUT,
    R.NOT_RUN,
    R.DOES_NOT_COMPILE,
    R.MISFIT,
    "failed",
)  # the fresh input of the timed kind that no timed call solved


@dataclass(frozen=True)
class Answer:
    """One answer a point owes the grader: the input's ``kind``, the ``n`` it is drawn at and its
    ``seed``, and what it is (``about``: "the last timed call's input", "a check input")."""

    kind: str
    n: int
    seed: int
    about: str


def _drawn_bytes() -> int:
    """The inputs a process keeps drawn, at most (bytes): an eighth of the host's memory, at least
    4 GiB and at most 8 GiB. A point at n = 16384 owes five 1 GiB timed inputs and a 1 GiB harsh
    one: with less than 6 GiB kept, the next blocking factor at that n drew all six again (a cache
    smaller than what one point cycles through keeps none of it)."""
    from cudalab.core.limits import host_memory_share

    return int(max(4 << 30, min(8 << 30, host_memory_share(1 / 8) or 0)))


DRAWN_BYTES = _drawn_bytes()
DRAW_THREADS = 8  # inputs drawn at once (numpy's generators release the GIL while they fill)


def input_key(kit: Checks, kind: str, point: Mapping[str, Any], seed: int) -> tuple:
    """What one input, and its answer, is: the kit, the kind, the seed and the point, all of it, or
    only its ``input_axes`` where the kit reads no other (``Checks.inputs_only``)."""
    return (id(kit), kind, point_key("", point, kit if kit.inputs_only else None), int(seed))


class Drawn:
    """The inputs a process has drawn, by ``input_key``. The grader judges the reference's answers
    and the student's on the same inputs, and a submission's process times every point at one n on
    the same pool: a 1 GiB graph at n = 16384 takes seconds to draw, so each is drawn once, not once
    a source or a point; several wanted at once are drawn in parallel (``draw_many``). The whole
    point keys an input unless the kit says its kinds read only its ``input_axes``: a kind may read
    the launch (vecmax's "last block"). Kept read-only (a kit that wrote into one would raise, never
    change the next use), at most ``limit`` bytes, the oldest dropped first."""

    def __init__(self, limit: int = DRAWN_BYTES) -> None:
        self.limit, self._bytes = limit, 0
        self._kept: OrderedDict[tuple, Any] = OrderedDict()

    def draw(self, kit: Checks, kind: str, point: Mapping[str, Any], seed: int) -> Any:
        return self.draw_many(kit, [(kind, point, seed)])[0]

    def draw_many(self, kit: Checks, wanted: Iterable[tuple[str, Mapping[str, Any], int]]) -> list[Any]:
        """The inputs ``wanted`` ((kind, point, seed) each), in order: those not kept drawn at once
        on up to ``DRAW_THREADS`` threads, each once."""
        wanted = [(kind, dict(point), int(seed)) for kind, point, seed in wanted]
        keys = [input_key(kit, *w) for w in wanted]
        have = {k: self._kept[k] for k in keys if k in self._kept}
        for k in have:
            self._kept.move_to_end(k)
        missing = {k: w for k, w in zip(keys, wanted, strict=True) if k not in have}
        if len(missing) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(len(missing), DRAW_THREADS)) as pool:
                have |= dict(zip(missing, pool.map(lambda w: kit.draw(*w), missing.values()), strict=True))
        elif missing:
            ((k, w),) = missing.items()
            have[k] = kit.draw(*w)
        for k in missing:
            self._keep(k, have[k])
        return [have[k] for k in keys]

    def _keep(self, key: tuple, value: Any) -> None:
        size = _nbytes(value)
        _read_only(value)
        if size > self.limit:
            return
        self._kept[key] = value
        self._bytes += size
        while self._bytes > self.limit:
            _, old = self._kept.popitem(last=False)
            self._bytes -= _nbytes(old)


def _read_only(value: Any) -> None:
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, Mapping):
        for v in value.values():
            _read_only(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _read_only(v)


DRAWN = Drawn()  # this process's: the grader's, or a submission's (its points at one n share a pool)


def kit_of(spec: str) -> Checks:
    """The ``labs.checks.Checks`` that ``"module:NAME"`` names."""
    from cudalab.grading.plan import named

    return named(spec, Checks, "yours.checks.kit")


def point_key(chapter: str, point: Mapping[str, Any], kit: Checks | None = None) -> str:
    """What a point's seeds are derived from: its chapter and the axes that decide its inputs
    (``kit.input_axes``; every axis where the kit names none), the same for every student, and for
    every kernel of a chapter at the same sizes (their answers are computed once)."""
    axes = sorted(point) if kit is None or not kit.input_axes else [a for a in kit.input_axes if a in point]
    return f"{chapter}|" + ",".join(f"{k}={point[k]}" for k in axes)


def timed_seed(run_seed: int, key: str, kind: str, index: int) -> int:
    """The seed of the pool's input ``index`` (0 .. POOL - 1) at a point."""
    return input_seed(run_seed, key, kind, "timed", index)


def answers_expected(
    kit: Checks,
    run_seed: int,
    key: str,
    point: Mapping[str, Any],
    last_timed: int,
    inputs: Iterable[Any],
    fresh: bool = True,
) -> list[Answer]:
    """The answers a point owes, in the order the worker writes them: the last timed call's, the
    untimed fresh input's (where ``fresh``: a sweep's points have a harsh check input as their fresh
    one), then one per check input (``CheckInput``: kind and n)."""
    n = int(point["n"])
    out = [Answer(kit.timed, n, timed_seed(run_seed, key, kit.timed, last_timed), "the last timed call's input")]
    if fresh:
        out.append(
            Answer(kit.timed, n, input_seed(run_seed, key, kit.timed, UNTIMED), "a fresh input no timed call solved")
        )
    for check in inputs:
        size = int(check.n if check.n is not None else n)
        out.append(Answer(check.input, size, input_seed(run_seed, key, check.input, size), "a check input"))
    return out


def answer_file(folder: Path, index: int, j: int) -> Path:
    """Where point ``index``'s answer ``j`` is written (named by the grader's count, never the
    worker's): a folder of one ``.npy`` per array, written and read without an archive's checksum
    (a 1 GiB distance matrix at n = 16384 is written, copied back and read once each)."""
    return Path(folder) / f"point{index}-answer{j}"


# ------------------------------------------------------------------------------ in the submission's process


def pool_size(input_bytes: int) -> int:
    """How many distinct timed inputs fit: ``POOL``, fewer where the device's free memory (a quarter
    of it for the pool) does not hold them; never fewer than 5 (three timed calls)."""
    from cudalab.core.gpu import require_cupy

    free, _ = require_cupy().cuda.runtime.memGetInfo()
    return int(max(5, min(POOL, free // 4 // max(1, input_bytes))))


MIN_REPEATS, MIN_TOTAL_S = 3, 0.3  # a point's timed calls: at least three, and 0.3 s of them


def calls_needed(call_ms: float) -> int:
    """How many inputs the timing of a call of ``call_ms`` uses: a warm-up, a pace call and the
    repeats ``time_gpu`` makes (``MIN_REPEATS``, more until ``MIN_TOTAL_S``), at most ``POOL``."""
    repeats = max(MIN_REPEATS, math.ceil(MIN_TOTAL_S * 1e3 / max(call_ms, 1e-3)))
    return int(min(POOL, 2 + repeats))


def _probe_ms(trial: Any, staged: Any) -> float:
    """One untimed call on the first input, its GPU time (CUDA events): what sizes the pool."""
    from cudalab.core.gpu import require_cupy

    cp = require_cupy()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    trial.load(staged)
    start.record(trial.stream)
    trial.run()
    end.record(trial.stream)
    end.synchronize()
    return float(cp.cuda.get_elapsed_time(start, end))


def measure_point(
    kit: Checks,
    point: dict[str, Any],
    kernel_file: str | None,
    params: dict[str, Any],
    run_seed: int,
    key: str,
    inputs: Iterable[Any],
    folder: Path,
    index: int,
    fresh: bool = True,
) -> dict[str, Any]:
    """Time the point on fresh inputs and write every answer it owes (see the module docstring);
    the result's status is ``MEASURED`` until the grader judges the answers."""
    from cudalab.core.gpu import require_cupy
    from cudalab.core.timing import summarize, time_gpu

    cp = require_cupy()
    cp.get_default_memory_pool().free_all_blocks()
    trial = kit.trial(point, kernel_file, params)
    # the first timed input and every untimed one this point owes, drawn at once (``DRAWN``: in
    # parallel, and once for all the points at one n where the kit allows)
    owed = answers_expected(kit, run_seed, key, point, 0, inputs, fresh)[1:]
    first, *later = DRAWN.draw_many(
        kit,
        [(kit.timed, point, timed_seed(run_seed, key, kit.timed, 0))]
        + [(a.kind, {**point, "n": a.n}, a.seed) for a in owed],
    )
    staged = [trial.upload(first)]
    # as many inputs as the timing will use, all drawn before it: a slow call is timed MIN_REPEATS
    # times, so a 1 GiB graph at n = 16384 (a draw of seconds) is drawn five times, not POOL
    pool = min(pool_size(_nbytes(first)), calls_needed(_probe_ms(trial, staged[0])))
    more = DRAWN.draw_many(kit, [(kit.timed, point, timed_seed(run_seed, key, kit.timed, i)) for i in range(1, pool)])
    staged += [trial.upload(x) for x in more]
    used: list[int] = []

    def setup() -> None:
        i = len(used)
        if i >= pool:  # never reached: time_gpu makes at most pool calls with these limits
            raise RuntimeError("more timed calls than distinct inputs")
        used.append(i)
        trial.load(staged[i])

    samples = time_gpu(
        trial.run,
        setup=setup,
        warmup=1,
        min_repeats=MIN_REPEATS,
        max_repeats=pool - 2,
        min_total_s=MIN_TOTAL_S,  # fast calls up to the pool's repeats, a slow one three
        stream=trial.stream,
        time_limit_s=params.get("point_time_limit_s"),
    )
    trial.stream.synchronize()
    last = used[-1]
    _save(trial.output(), answer_file(folder, index, 0))
    staged.clear()
    cp.get_default_memory_pool().free_all_blocks()
    trials = {int(point["n"]): trial}  # one trial per size: a check input at another n builds its own, once
    for j, (answer, host_input) in enumerate(zip(owed, later, strict=True), start=1):
        at = {**point, "n": answer.n}
        if answer.n not in trials:
            trials[answer.n] = kit.trial(at, kernel_file, params)
        trial = trials[answer.n]
        trial.load(trial.upload(host_input))
        trial.run()
        trial.stream.synchronize()
        _save(trial.output(), answer_file(folder, index, j))
    stats = summarize(samples)
    return {
        "status": MEASURED,
        "reason": "",
        "time_ms": stats["time_ms"],
        "time_ms_q1": stats["time_ms_q1"],
        "time_ms_q3": stats["time_ms_q3"],
        "repeats": stats["repeats"],
        "last_timed": last,
    }


def _nbytes(host_input: Any) -> int:
    if isinstance(host_input, np.ndarray):
        return host_input.nbytes
    if isinstance(host_input, Mapping):
        return sum(_nbytes(v) for v in host_input.values())
    if isinstance(host_input, (tuple, list)):
        return sum(_nbytes(v) for v in host_input)
    return 0


def _save(output: Mapping[str, Any], path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, value in output.items():
        if not name.isidentifier():
            raise ValueError(f"an answer's array is named {name!r}: a name of letters, digits and _ only")
        np.save(path / f"{name}.npy", np.asarray(value), allow_pickle=False)


# ------------------------------------------------------------------------------ in the grader's process


class Expected:
    """The answers the grader computed, by input (``input_key``): every student's point is checked
    on the same inputs, so each is computed once a run."""

    def __init__(self) -> None:
        self._found: dict[tuple, dict[str, Any]] = {}

    def of(self, kit: Checks, point: Mapping[str, Any], answer: Answer) -> tuple[Any, dict[str, Any]]:
        at = {**point, "n": answer.n}
        host_input = DRAWN.draw(kit, answer.kind, at, answer.seed)
        key = input_key(kit, answer.kind, at, answer.seed)
        if key not in self._found:
            self._found[key] = kit.expected(at, host_input)
        return host_input, self._found[key]


def _load(path: Path) -> dict[str, Any] | None:
    """An answer folder's arrays by name (its regular ``.npy`` files), or None where one is unreadable."""
    try:
        files = [f for f in sorted(path.iterdir()) if f.suffix == ".npy" and f.is_file() and not f.is_symlink()]
        return {f.stem: np.load(f, allow_pickle=False) for f in files}
    except (OSError, ValueError, EOFError):
        return None


def _remove(path: Path) -> None:
    import shutil

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def judge(
    kit: Checks,
    point: dict[str, Any],
    got: dict[str, Any],
    run_seed: int,
    key: str,
    inputs: Iterable[Any],
    folder: Path,
    index: int,
    expected: Expected,
    fresh: bool = True,
) -> dict[str, Any]:
    """The worker's result for a point with its answers judged: ok, or wrong with the first wrong
    answer's input and why. Anything but ``MEASURED`` (crashed, timed out, ...) is returned as it is."""
    if got.get("status") in WORKER_FAILURES:
        return got
    if got.get("status") != MEASURED:  # an "ok" from the worker's side is never a verdict: only the grader's is
        return {
            **got,
            "status": "failed",
            "reason": f"the worker reported {got.get('status')!r}, a status it never gives",
        }
    last = got.get("last_timed")
    if not isinstance(last, int) or not 0 <= last < POOL:
        return {**got, "status": R.WRONG, "reason": "the worker did not say which input its last timed call solved"}
    out = {k: v for k, v in got.items() if k != "last_timed"}
    verdict = {"status": R.OK, "reason": ""}
    owed = answers_expected(kit, run_seed, key, point, last, inputs, fresh)
    DRAWN.draw_many(kit, [(a.kind, {**point, "n": a.n}, a.seed) for a in owed])  # at once, in parallel
    for j, answer in enumerate(owed):
        path = answer_file(folder, index, j)
        answered = _load(path) if path.is_dir() and not path.is_symlink() else None
        _remove(path)  # judged (or unreadable): the folder keeps only what is still to judge
        if verdict["status"] != R.OK:
            continue
        where = f"on {kit.kinds[answer.kind].about} at n = {answer.n:,} ({answer.about})"
        if answered is None:
            verdict = {"status": R.WRONG, "reason": f"no readable answer {where}"}
            continue
        host_input, want = expected.of(kit, point, answer)
        why = kit.verdict({**point, "n": answer.n}, answered, want, host_input)
        if why:
            verdict = {"status": R.WRONG, "reason": R.scrubbed(f"wrong {where}: {why}")}
    return {**out, **verdict}


def judge_task(
    task: Any, result: dict[str, Any], run_seed: int, folder: Path, expected: Expected, first: int = 0
) -> None:
    """A worker's ``result`` for a ``plan.ChapterTask`` with each point judged in place, where its
    chapter declares checks (a chapter without a kit keeps its recipe's own verdict). ``first``:
    where the task's points start in the worker's request (a ``plan.Batch`` of several tasks)."""
    if task.yours.checks is None:
        return
    kit = kit_of(task.yours.checks.kit)
    for index, (point, _) in enumerate(task.points, start=first):
        result["points"][index] = judge(
            kit,
            dict(point),
            result["points"][index],
            int(run_seed),
            point_key(task.chapter, point, kit),
            task.yours.checks.inputs,
            folder,
            index,
            expected,
            task.yours.checks.fresh,
        )
