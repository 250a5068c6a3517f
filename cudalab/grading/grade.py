"""A class graded: every student's folder checked, compiled, measured in a process of its own
beside the reference kernels and the chapter's ceiling measured in the same run, and ranked.

``grade(options)`` returns the scoreboard, one row per student, kernel file and point:

- ``compiled`` and ``status``: ok, wrong, refused, does not compile, does not fit the launch,
  timed out, crashed, not run, compiled only (no GPU here), with the ``reason``;
- ``time_ms`` beside ``reference_time_ms`` (the reference file at the same point, same run), and
  ``speed_vs_reference`` (the reference's time over the student's: 1.2 is 20% faster);
- ``rate_per_s`` (the chapter's declared rate) and ``fraction_of_ceiling`` (of the ceiling the
  chapter is judged by, measured in this run);
- ``rank`` among the students whose every point and case is correct, at the same point.

``Graded.students`` is the verdict, one row per student: correct (every point and case ok), wrong,
race, above the ceiling, ... with the first reason; the geometric-mean speed against the reference
over the student's points; the best fraction of the ceiling; and the rank by that mean among the
correct students only. A point's answers are judged here, in the grader's process, on inputs drawn
from the run's ``seed`` (printed, and given again with ``--seed`` to replay the run): the timed
inputs, a fresh one and the harsh inputs each chapter declares (``grading.trials``). A rate past the
chapter's physical ceiling beyond both spreads is "above the ceiling", never ranked. The reference
files failing a point or a case is the grader's failure (``Graded.failures``), never a student's row.

Nothing a submission writes or prints reaches the scoreboard except through its worker's results,
and every message is scrubbed of the machine's paths (``results.scrubbed``).
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter import catalog
from cudalab.chapter.parameters import check_one
from cudalab.core import gpu
from cudalab.core.errors import CudalabError, ToolUnavailable
from cudalab.grading import cases, isolate, plan, series, trials
from cudalab.grading import results as R
from cudalab.grading.submission import Submission, check, stage

Log = Callable[[str], None]

SCOREBOARD_COLUMNS = (
    "student",
    "chapter",
    "file",
    "point",
    "compiled",
    "status",
    "correct",
    "time_ms",
    "reference_time_ms",
    "speed_vs_reference",
    "rate_per_s",
    "rate_unit",
    "ceiling_per_s",
    "fraction_of_ceiling",
    "rank",
    "reason",
)


@dataclass(frozen=True)
class GradeOptions:
    """What to grade and how: ``submissions`` (a folder of one folder per student), ``out`` (where the
    scoreboard, the staged copies and the students' reports go), ``arch`` (the architecture a
    submission compiles for without a GPU: the profile's), ``only`` (chapters), ``limits`` (seconds
    per point and per submission), ``workers`` (GPUs, through Dask), ``point_time_limit_s`` (the
    chapters' own per-point limit on repeats)."""

    submissions: Path
    out: Path
    arch: str = "sm_90"
    only: tuple[str, ...] = ()
    limits: isolate.Limits = isolate.Limits()
    workers: int | None = None
    point_time_limit_s: float = 20.0
    cases: Path | None = None  # an instructor's hidden inputs (--cases)
    measure: bool | None = None  # None: where a GPU is present
    worker: tuple[str, ...] = isolate.WORKER  # what each submission's process runs (a test's stand-in)
    seed: int | None = None  # the inputs' seed (--seed): None draws a fresh one, printed
    races: bool = True  # each graded point's kernels once under racecheck and synccheck, where the host has them
    # --sweep: each submission also at every point of its chapter's sweep that builds from its file
    # (the profile's recorded table on this GPU: ``grading.series``), checked as the graded points are
    sweep: bool = False
    profile: str | None = None  # the profile whose recorded sweep that is (None: this GPU's)


@dataclass
class Graded:
    """What ``grade`` produced: the scoreboard, each student's submission and compiled resources."""

    scoreboard: pd.DataFrame
    submissions: dict[str, Submission] = field(default_factory=dict)
    resources: dict[str, pd.DataFrame] = field(default_factory=dict)
    measured_on: str = ""
    students: pd.DataFrame = field(default_factory=pd.DataFrame)  # the verdict, a row per student
    seed: int = 0  # the seed every input of the run was drawn from
    failures: list[str] = field(default_factory=list)  # the grader's own: a reference that failed
    # --sweep: each student's measured tasks, their points with the axes a page draws them over
    swept: dict[str, list[plan.ChapterTask]] = field(default_factory=dict)


STUDENT_COLUMNS = (
    "student",
    "verdict",
    "points",
    "correct_points",
    "speed_vs_reference_geomean",
    "best_fraction_of_ceiling",
    "rank",
    "reason",
)


def students(folder: Path) -> list[Path]:
    """The student folders of ``folder`` (its sub-folders, by name, neither links nor hidden); a
    ``CudalabError`` where none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CudalabError(f"--grade {folder}: not a folder (give a folder with one folder per student)")
    found = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    if not found:
        raise CudalabError(f"--grade {folder}: no student folder in it (one folder per student, holding .cu files)")
    return found


def refused_folders(folder: Path) -> list[tuple[str, str]]:
    """The entries of ``folder`` that look like a student's but are not graded, each with why: a
    link (it may point anywhere on the machine) or a hidden folder. Never dropped without a word."""
    out = []
    for p in sorted(Path(folder).iterdir()):
        if p.is_symlink():
            out.append((p.name, "a link, not a folder: copy the student's files into a folder of its own"))
        elif p.is_dir() and p.name.startswith("."):
            out.append((p.name, "a hidden folder: rename it without the leading dot to grade it"))
    return out


def chapter_params(chapter: str, point_time_limit_s: float | None) -> dict[str, Any]:
    """The parameters a chapter's recipe reads (its seed, iterations, ...) at the notebook's defaults."""
    values: dict[str, Any] = {}
    for name, declared in catalog.chapter(chapter).parameters().items():
        value, problem = check_one(declared, declared.default)
        if problem is None:
            values[name] = value
    values["point_time_limit_s"] = point_time_limit_s
    return values


def _compile_checked(
    sub: Submission, folder: Path, arch: str, only: tuple[str, ...] = ()
) -> tuple[dict[tuple[str, str], dict[str, str]], pd.DataFrame]:
    """Each (kernel file, point label) that cannot be measured (does not compile, does not fit) ->
    its status and reason, and the compiled resources beside the reference's (empty where nvcc is
    missing), each file built at every point a chapter grades it at, with that point's own options:
    a build that fails at one point (04's ladder step 7, 22 registers) costs that point alone. The
    label is "" for a file built with no point's options (its own defaults): then every point."""
    from cudalab.grading.section import point_builds
    from cudalab.toolchain import compile_only

    staged = Submission(folder, dict(sub.kernels), list(sub.headers), dict(sub.sha256), [])
    try:
        points = point_builds(plan.tasks_for(sub.kernels, only), arch)
        frame = compile_only.beside_reference(staged, arch, points)
    except ToolUnavailable:
        return {}, pd.DataFrame()
    bad: dict[tuple[str, str], dict[str, str] | None] = {}
    for _, row in frame[frame["source"].eq(R.YOURS)].iterrows():
        key = (row["file"], str(row["point"] or ""))
        if row["status"] != "ok" and bad.get(key) is None:
            bad[key] = {"status": row["status"], "reason": R.scrubbed(row["reason"])}
        else:
            bad.setdefault(key, None)  # built there: measured
    return bad, frame


def _bad_at(bad: dict[tuple[str, str], dict[str, str] | None], file: str, point: str) -> dict[str, str] | None:
    """The compiler's verdict on ``file`` at the point labelled ``point`` (``_compile_checked``), None
    where it built; at a point the compiler did not build (a ``--sweep`` point), the file's first
    failure, so that no kernel of another signature is ever launched."""
    if (file, point) in bad:
        return bad[(file, point)]
    if (file, "") in bad:
        return bad[(file, "")]
    return next((v for (f, _), v in bad.items() if f == file and v is not None), None)


def _row(student: str, chapter: str, file: str, point: str, **fields: Any) -> dict[str, Any]:
    return {"student": student, "chapter": chapter, "file": file, "point": point, **fields}


def grade(options: GradeOptions, log: Log = print) -> Graded:
    """Grade every student folder of ``options.submissions`` (see the module docstring)."""
    folders = students(options.submissions)
    measure = gpu.gpu_available() if options.measure is None else options.measure
    if options.seed is None:
        from dataclasses import replace

        options = replace(options, seed=secrets.randbits(63))
    log(f"inputs drawn with seed {options.seed} (--seed {options.seed} replays them)")
    checked = {folder.name: check(folder) for folder in folders}
    staged = {name: stage(sub, options.out / "staged" / name) for name, sub in checked.items() if sub.kernels}
    # the compiler's verdicts, on every core: nvcc runs as child processes, outside Python's lock;
    # meanwhile the Dask pool starts (--workers N), so its start-up costs nothing on the way
    pool = None
    try:
        with ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // 2)) as threads:
            pending = {
                n: threads.submit(_compile_checked, checked[n], staged[n], options.arch, options.only) for n in staged
            }
            if measure and (options.workers or 0) > 1 and staged:
                from cudalab.grading import spread

                pool = spread.open_pool(options.workers, log)
            verdicts = {n: f.result() for n, f in pending.items()}
        return _graded(options, checked, staged, verdicts, measure, pool, log)
    finally:
        if pool is not None:
            pool.close()


def _graded(
    options: GradeOptions,
    checked: dict[str, Submission],
    staged: dict[str, Path],
    verdicts: dict[str, Any],
    measure: bool,
    pool: Any,
    log: Log,
) -> Graded:
    """The scoreboard from the checked submissions and the compiler's verdicts: each submission's
    points measured beside the reference (on ``pool`` where there is one), or compiled only."""
    graded = Graded(pd.DataFrame(), seed=int(options.seed or 0))
    if options.sweep and not measure:
        log("--sweep: no GPU here, so no sweep: the graded points are compiled only")
    rows: list[dict[str, Any]] = [
        _row(name, "", "", "", compiled=False, status=R.REFUSED, reason=why)
        for name, why in refused_folders(options.submissions)
    ]
    jobs: list[tuple[str, plan.ChapterTask, Path]] = []
    tables: dict[str, tuple[pd.DataFrame | None, str]] = {}  # --sweep: each chapter's recorded table, read once
    for name, sub in checked.items():
        graded.submissions[name] = sub
        rows += [_row(name, "", r.name, "", compiled=False, status=R.REFUSED, reason=r.reason) for r in sub.refused]
        if not sub.kernels:
            continue
        bad, graded.resources[name] = verdicts[name]
        tasks = plan.tasks_for(sub.kernels, options.only)
        if options.sweep and measure:
            tasks = [series.with_the_sweep(task, *_sweep_table(task, options, tables, log)) for task in tasks]
            graded.swept[name] = tasks
        measured = {f for t in tasks for f in t.files}
        for file in sorted(set(sub.kernels) - measured):
            where = "" if options.only else " (no chapter declares a point built from it)"
            rows.append(
                _row(
                    name,
                    "",
                    file,
                    "",
                    compiled=all(f != file or v is None for (f, _), v in bad.items()),
                    status=R.NOT_RUN,
                    reason=f"no chapter graded here measures a student's {file}{where}",
                )
            )
        for task in tasks:
            for point, file in task.points:
                if found := _bad_at(bad, file, plan.point_label(point)):
                    compiled = found["status"] != R.DOES_NOT_COMPILE
                    rows.append(_row(name, task.chapter, file, plan.point_label(point), compiled=compiled, **found))
            good = task.keeping(tuple(p for p in task.points if not _bad_at(bad, p[1], plan.point_label(p[0]))))
            if good.points:
                jobs.append((name, good, staged[name]))
        log(
            f"checked {name}: {len(sub.kernels)} kernel file(s), {len(sub.refused)} refused, {len({f for (f, _), v in bad.items() if v})} not compiling or not fitting"
        )
    if not measure:
        for name, task, _ in jobs:
            for point, file in task.points:
                rows.append(
                    _row(
                        name,
                        task.chapter,
                        file,
                        plan.point_label(point),
                        compiled=True,
                        status=R.COMPILED_ONLY,
                        reason="compiled for " + options.arch + "; its timings need a GPU",
                    )
                )
        graded.scoreboard = scoreboard(rows)
        graded.students = verdicts_of(graded.scoreboard)
        graded.measured_on = f"no GPU here: compiled for {options.arch} only; nothing timed, no case solved"
        return graded
    graded.measured_on = gpu.gpu_name() or "GPU"
    # the references (and the chapters' ceilings) are measured in this run beside the students
    ref_tasks = _reference_tasks(jobs)
    expected = {}
    for task in ref_tasks:
        log(
            f"reference {task.folder_name}: {len(task.points)} point(s)"
            + (f" and the {task.yours.ceiling} ceiling" if task.yours.ceiling else "")
        )
        expected[task.key] = {c.name: task_kind(task).expected(c) for c in _cases(task, options)}  # grader's own
    results = _run_all(
        [_request(t, None, options, True, REFERENCE_ANSWERS) for t in ref_tasks]
        + [_request(task, folder, options, False, name) for name, task, folder in jobs],
        ["reference"] * len(ref_tasks) + [name for name, _, _ in jobs],
        [_reference_limits(options)] * len(ref_tasks) + [options.limits] * len(jobs),
        pool,
        log,
        options.worker,
    )
    answers = trials.Expected()  # every student's point is checked on the same inputs: each answer computed once
    whose = [REFERENCE_ANSWERS] * len(ref_tasks) + [name for name, _, _ in jobs]
    for who, task, result in zip(whose, ref_tasks + [t for _, t, _ in jobs], results, strict=True):
        _judge(task, result, who, options, answers)
    references = {
        t.key: _reference(t, r, expected[t.key], options, log)
        for t, r in zip(ref_tasks, results[: len(ref_tasks)], strict=True)
    }
    for task, ref in zip(ref_tasks, references.values(), strict=True):
        graded.failures += _reference_failures(task, ref, log)
    found = _races(
        ref_tasks, [j for j, r in zip(jobs, results[len(ref_tasks) :], strict=True) if _chargeable(r)], options, log
    )
    for task in ref_tasks:
        for file, verdict in found.get((REFERENCE_ANSWERS, task.key), {}).items():
            if verdict["status"] == R.RACE:
                graded.failures.append(f"the reference {file} ({task.folder_name}) races: {verdict['reason']}")
                log(f"error: {graded.failures[-1]}")
    for (name, task, _), result in zip(jobs, results[len(ref_tasks) :], strict=True):
        _charge_races(task, result, found.get((name, task.key), {}))
        ref = references[(task.chapter, task.group)]
        measured, solved = result["points"][: len(task.points)], result["points"][len(task.points) :]
        rows += _case_rows(name, task, solved, ref, options)
        for (point, file), got in zip(task.points, measured, strict=True):
            key = plan.point_label(point)
            base = ref["by_point"].get(key, {})
            rows.append(
                _row(
                    name,
                    task.chapter,
                    file,
                    key,
                    compiled=got["status"] != R.DOES_NOT_COMPILE,
                    **_scored(point, got, base, task, ref["ceiling"], ref["ceiling_spread"]),
                )
            )
    graded.scoreboard = scoreboard(rows)
    graded.students = verdicts_of(graded.scoreboard)
    return graded


def _sweep_table(
    task: plan.ChapterTask, options: GradeOptions, tables: dict[str, tuple[pd.DataFrame | None, str]], log: Log
) -> tuple[pd.DataFrame | None, str]:
    """``--sweep``: the table of ``task``'s chapter whose points its sweep takes, as the recording of
    the profile (``options.profile``, else this GPU's) holds it, and this GPU's compute capability;
    read once a chapter into ``tables`` (None, said once in the log, where there is no recording)."""
    from cudalab.chapter.profiles import profile_for_gpu

    recipe = plan.recipe_of(task.yours.recipe)
    key = f"{task.chapter}/{recipe.table}"
    if key not in tables:
        name = gpu.gpu_name() or ""
        profile = options.profile or profile_for_gpu(name)
        table = series.recorded_table(task.chapter, recipe.table, profile, name)
        if table is None:
            log(
                f"--sweep: no recording of {task.chapter}'s {recipe.table} for profile {profile}: its graded points only"
            )
        tables[key] = (table, gpu.compute_capability() or "9.0")
    return tables[key]


def _judge(task: plan.ChapterTask, result: dict[str, Any], who: str, options: GradeOptions, answers: Any) -> None:
    """A worker's points judged in place (``trials.judge_task``), in this process."""
    trials.judge_task(task, result, int(options.seed or 0), _answers(options, who, task), answers)


def _races(ref_tasks: list[plan.ChapterTask], jobs: list, options: GradeOptions, log: Log) -> dict:
    """Each (who, task key) -> each kernel file's race verdict (``grading.races``), the references'
    and every submission's, a few at a time (racecheck is slow: seconds a file); empty where the
    run asks for none or the host cannot (said once)."""
    from cudalab.grading import races

    if not options.races:
        return {}
    why = races.unavailable()
    if why:
        log(f"races not checked: {why}")
        return {}
    work = [(REFERENCE_ANSWERS, t, None) for t in ref_tasks] + list(jobs)

    def one(item: tuple) -> dict:
        who, task, folder = item
        params = chapter_params(task.chapter, options.point_time_limit_s)
        return races.races(task, folder, params, seed=int(options.seed or 0), limit_s=options.limits.submission)

    with ThreadPoolExecutor(max_workers=RACE_CHECKS_AT_ONCE) as threads:
        verdicts = list(threads.map(one, work))
    log(f"races checked: {len(work)} submission(s) and reference(s) under racecheck and synccheck")
    return {(who, task.key): v for (who, task, _), v in zip(work, verdicts, strict=True)}


def _chargeable(result: dict[str, Any]) -> bool:
    """Whether a race could change the result's verdict: only a point that ran to an answer (ok or
    wrong) is charged with a race (``_charge_races``). A kernel that timed out or crashed is not
    run again under the sanitizer, where it would hold a slot for twice the submission's limit."""
    return any(p.get("status") in (R.OK, R.WRONG) for p in result["points"])


RACE_CHECKS_AT_ONCE = 4  # compute-sanitizer processes at once on one GPU (each a small input)


def _charge_races(task: plan.ChapterTask, result: dict[str, Any], verdicts: dict[str, dict[str, Any]]) -> None:
    """A point whose kernel file races is ``race`` with the hazard's file:line, whatever its answers."""
    for index, (_, file) in enumerate(task.points):
        verdict = verdicts.get(file)
        if verdict and verdict["status"] == R.RACE and result["points"][index].get("status") in (R.OK, R.WRONG):
            result["points"][index] = {**result["points"][index], "status": R.RACE, "reason": verdict["reason"]}


def _reference_failures(task: plan.ChapterTask, ref: dict[str, Any], log: Log) -> list[str]:
    """Each point or case where the reference files were not right: the grader's failure, said on
    the console, never a row against a student."""
    failed = []
    for key, got in ref["by_point"].items():
        if got.get("status") != R.OK:
            failed.append(f"the reference at {task.folder_name} {key}: {got.get('status')}: {got.get('reason', '')}")
    for case, got in ref["by_case"].items():
        if got.get("status") != R.OK:
            failed.append(f"the reference on case {case} ({task.folder_name}): {got.get('status')}")
    for line in failed:
        log(f"error: {line}")
    return failed


def _scored(
    point: dict, got: dict, ref: dict, task: plan.ChapterTask, ceiling: float | None, ceiling_spread: float = 0.0
) -> dict[str, Any]:
    """One measured point's scoreboard fields, beside the reference's result at the same point; a
    correct result whose rate is past the ceiling beyond both spreads is "above the ceiling"."""
    time_ms = got.get("time_ms") if got["status"] == R.OK else None
    ref_ms = ref.get("time_ms") if ref.get("status") == R.OK else None
    rate = R.rate_of(point, time_ms, task.yours.rate)
    status, reason = got["status"], got.get("reason", "")
    if status == R.OK and R.above_ceiling(rate, R.spread(got), ceiling, ceiling_spread):
        status = R.ABOVE_CEILING
        reason = (
            f"{rate:.4g} {task.yours.rate_unit} is {rate / ceiling:.0%} of the {task.yours.ceiling} ceiling measured "
            f"in this run ({ceiling:.4g}); past it beyond both spreads, so the timing or the answer is not real"
        )
    return {
        "status": status,
        "reason": reason,
        "time_ms": got.get("time_ms"),
        "reference_time_ms": ref_ms,
        "speed_vs_reference": ref_ms / time_ms if time_ms and ref_ms else None,
        "rate_per_s": rate,
        "rate_unit": task.yours.rate_unit if rate is not None else "",
        "ceiling_per_s": ceiling if rate is not None else None,
        "fraction_of_ceiling": rate / ceiling if rate is not None and ceiling else None,
    }


def _cases(task: plan.ChapterTask, options: GradeOptions) -> list[Path]:
    """The instructor's case files this chapter takes (``--cases``), by name."""
    return cases.cases_in(options.cases, task.yours.cases.suffix) if task.yours.cases else []


def _answers(options: GradeOptions, who: str, task: plan.ChapterTask) -> Path:
    """Where a submission's process writes its answers to the cases (the grader's folder, not the
    cases' folder; the expected answers are never written anywhere)."""
    folder = options.out / "answers" / who / task.folder_name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _request(
    task: plan.ChapterTask, folder: Path | None, options: GradeOptions, ceiling: bool, who: str
) -> dict[str, Any]:
    answers = _answers(options, who, task)
    given = [(c, answers / f"{c.name}.out") for c in _cases(task, options)]
    return task.request(
        folder,
        chapter_params(task.chapter, options.point_time_limit_s),
        ceiling=ceiling,
        cases=given,
        seed=int(options.seed or 0),
        answers=answers,
    )


def _case_rows(name: str, task: plan.ChapterTask, solved: list[dict], ref: dict, options: GradeOptions) -> list[dict]:
    """The scoreboard rows of a submission's answers to the cases: ok where the case's kind finds
    the answer right (with its note), wrong (with why) where not, or what stopped its process."""
    rows = []
    file = task.points[0][1]
    for case, got in zip(_cases(task, options), solved, strict=True):
        status, reason = got["status"], got.get("reason", "")
        if status == "solved":
            why, note = task_kind(task).verdict(
                _answers(options, name, task) / f"{case.name}.out", ref["expected"][case.name]
            )
            status, reason = (R.WRONG, why) if why else (R.OK, note)
        base = ref["by_case"].get(case.name, {})
        ref_ms = base.get("time_ms") if base.get("status") == R.OK else None
        time_ms = got.get("time_ms") if status == R.OK else None
        rows.append(
            _row(
                name,
                task.chapter,
                file,
                f"{CASE_PREFIX}{case.name}",
                compiled=status != R.DOES_NOT_COMPILE,
                status=status,
                reason=reason,
                time_ms=got.get("time_ms"),
                reference_time_ms=ref_ms,
                speed_vs_reference=ref_ms / time_ms if time_ms and ref_ms else None,
            )
        )
    return rows


def _reference_tasks(jobs: list) -> list[plan.ChapterTask]:
    """Per chapter and group (``ChapterTask.key``): the reference's task, at every point any student
    is measured at."""
    union: dict[tuple[str, int], plan.ChapterTask] = {}
    for _, task, _ in jobs:
        have = union.get(task.key)
        points = (have.points if have else ()) + tuple(p for p in task.points if not have or p not in have.points)
        union[task.key] = task.keeping(points)
    return list(union.values())


def _reference_limits(options: GradeOptions) -> isolate.Limits:
    """The reference is never stopped where a student would be: four times the limits."""
    return isolate.Limits(options.limits.point * 4, options.limits.submission * 4)


def _reference(
    task: plan.ChapterTask, result: dict[str, Any], expected: dict[str, bytes], options: GradeOptions, log: Log
) -> dict[str, Any]:
    """The reference files' results at the task's points and cases, and the chapter's ceiling, from
    its worker's ``result`` (measured in this run, in a process of its own); ``expected``: the
    cases' answers, computed in the grader's own process."""
    measured, solved = result["points"][: len(task.points)], result["points"][len(task.points) :]
    by_case = {}
    for case, got in zip(_cases(task, options), solved, strict=True):
        why, _ = task_kind(task).verdict(
            _answers(options, REFERENCE_ANSWERS, task) / f"{case.name}.out", expected[case.name]
        )
        by_case[case.name] = {**got, "status": R.OK if got["status"] == "solved" and not why else got["status"]}
        if why and got["status"] == "solved":
            log(f"warning: the reference kernel's answer to {case.name} differs from the reference solver's: {why}")
    return {
        "ceiling": result["ceiling"],
        "ceiling_spread": float(result.get("ceiling_spread") or 0.0),
        "by_point": {plan.point_label(p): r for (p, _), r in zip(task.points, measured, strict=True)},
        "by_case": by_case,
        "expected": expected,
    }


REFERENCE_ANSWERS = ".reference"  # no student folder is hidden: students() skips them


def task_kind(task: plan.ChapterTask) -> cases.CaseKind:
    """The kind of case a chapter takes (``yours.cases.kind``)."""
    return cases.kind_of(task.yours.cases.kind)


def _run_all(
    requests: list[dict[str, Any]],
    names: list[str],
    limits: list[isolate.Limits],
    pool: Any,
    log: Log,
    worker: tuple[str, ...] = isolate.WORKER,
) -> list[dict[str, Any]]:
    """Each request's worker result, in order: one after another here, or as tasks on the Dask
    ``pool`` (``grading.spread``: one GPU each, a task retried once where its Dask worker died)."""
    if pool is not None and len(requests) > 1:
        from cudalab.grading import spread

        return spread.run(pool, requests, names, limits, log, worker=worker)
    results = []
    for name, request, limit in zip(names, requests, limits, strict=True):
        result = isolate.run(request, limit, worker=worker)
        log(R.progress_line(name, request["chapter"], result))
        results.append(result)
    return results


def scoreboard(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the scoreboard: its columns in order, ``correct`` from the status, and ``rank``
    (1 = fastest) at each chapter's point among the students whose every point and case is correct
    (``fully_correct``): a student wrong anywhere holds no rank anywhere. Cases are never ranked."""
    frame = pd.DataFrame(rows)
    for column in SCOREBOARD_COLUMNS:
        if column not in frame:
            frame[column] = None
    frame["correct"] = frame["status"].map(lambda s: True if s == R.OK else (False if s in WRONG_KINDS else None))
    good = fully_correct(frame)
    ok = (
        frame["status"].eq(R.OK)
        & frame["time_ms"].notna()
        & frame["student"].isin(good)
        & ~frame["point"].astype(str).str.startswith(CASE_PREFIX)
    )
    frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    if ok.any():
        frame.loc[ok, "rank"] = frame[ok].groupby(["chapter", "point"])["time_ms"].rank(method="min").astype("Int64")
    frame = frame[list(SCOREBOARD_COLUMNS)]
    return frame.sort_values(["chapter", "point", "rank", "student"], na_position="last", kind="stable").reset_index(
        drop=True
    )


CASE_PREFIX = "case "  # a scoreboard row of an instructor's case: its point column reads "case NAME"
WRONG_KINDS = (R.WRONG, R.RACE, R.ABOVE_CEILING)  # a result that is there and not right


def fully_correct(frame: pd.DataFrame) -> set[str]:
    """The students whose every row is ok (every point, every case, nothing refused or unmeasured)."""
    if not len(frame):
        return set()
    return {s for s, rows in frame.groupby("student") if rows["status"].eq(R.OK).all()}


# How a student's verdict is worded from their rows' statuses, the first that applies: a student is
# "correct" only where every row is ok.
_VERDICT_ORDER = (
    R.REFUSED,
    R.DOES_NOT_COMPILE,
    R.MISFIT,
    R.WRONG,
    R.RACE,
    R.ABOVE_CEILING,
    R.CRASHED,
    R.TIMED_OUT,
    "failed",
    R.NOT_RUN,
    R.COMPILED_ONLY,
)


def verdicts_of(board: pd.DataFrame) -> pd.DataFrame:
    """One row per student, the verdict first (``STUDENT_COLUMNS``): "correct" where every point and
    case is ok, else the worst status with its first reason; the geometric mean of the speed
    against the reference over the student's points (a correct student's only: a student wrong
    anywhere counts no speed), their best fraction of the ceiling, and the
    rank by that mean among the correct students (1 = fastest). Sorted: ranked first, by rank."""
    out = []
    if not len(board):
        return pd.DataFrame(columns=list(STUDENT_COLUMNS))
    good = fully_correct(board)
    for student, rows in board.groupby("student", sort=True):
        points = rows[~rows["point"].astype(str).str.startswith(CASE_PREFIX) & rows["chapter"].ne("")]
        speeds = pd.to_numeric(points["speed_vs_reference"], errors="coerce").dropna()
        speeds = speeds[speeds > 0]
        fractions = pd.to_numeric(points["fraction_of_ceiling"], errors="coerce").dropna()
        if student in good:
            verdict, reason = "correct", ""
        else:
            statuses = list(rows["status"].astype(str))
            verdict = next((v for v in _VERDICT_ORDER if v in statuses), next(s for s in statuses if s != R.OK))
            bad = rows[rows["status"].astype(str).eq(verdict)].iloc[0]
            where = " ".join(str(x) for x in (bad["chapter"], bad["file"], bad["point"]) if x)
            if verdict == R.COMPILED_ONLY or not where:  # the same for every point, or a whole folder refused
                reason = str(bad["reason"] or "")
            else:
                reason = f"{where}: {bad['reason']}" if bad["reason"] else where
        out.append(
            {
                "student": student,
                "verdict": verdict,
                "points": int(len(points)),
                "correct_points": int(points["status"].eq(R.OK).sum()),
                # a student wrong anywhere gets no speed: a wrong result is never counted as one
                "speed_vs_reference_geomean": float(math.exp(speeds.map(math.log).mean()))
                if len(speeds) and student in good
                else None,
                "best_fraction_of_ceiling": float(fractions.max()) if len(fractions) else None,
                "reason": R.scrubbed(reason),
            }
        )
    frame = pd.DataFrame(out)
    ranked = frame["verdict"].eq("correct") & frame["speed_vs_reference_geomean"].notna()
    frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    if ranked.any():
        frame.loc[ranked, "rank"] = (
            frame.loc[ranked, "speed_vs_reference_geomean"].rank(ascending=False, method="min").astype("Int64")
        )
    frame = frame[list(STUDENT_COLUMNS)]
    return frame.sort_values(["rank", "student"], na_position="last", kind="stable").reset_index(drop=True)


def console_lines(graded: Graded) -> list[str]:
    """What ``--grade`` prints when it is done: a line per student (the refused included) with the
    verdict, and for a correct one its rank, speed and fraction of the ceiling; then the seed, and
    the grader's own failures. Without a GPU it says that nothing was timed."""
    lines = []
    width = max((len(str(s)) for s in graded.students.get("student", [])), default=0)
    for _, row in graded.students.iterrows():
        said = str(row["verdict"])
        if row["verdict"] == "correct" and pd.notna(row["speed_vs_reference_geomean"]):
            said += f", rank {row['rank']}, {row['speed_vs_reference_geomean']:.2f}x the reference"
            if pd.notna(row["best_fraction_of_ceiling"]):
                said += f", {row['best_fraction_of_ceiling']:.1%} of the ceiling at best"
        elif row["reason"] and row["verdict"] != R.COMPILED_ONLY:  # the last line says why nothing was timed
            said += f": {row['reason']}"
        lines.append(f"  {str(row['student']).ljust(width)}  {said}")
    if graded.measured_on.startswith("no GPU"):
        lines.append("no GPU: compiled only; nothing timed, no case solved")
    else:
        lines.append(f"inputs drawn with seed {graded.seed} (--seed {graded.seed} replays them)")
    lines += [f"error: {f}" for f in graded.failures]
    return lines


def arch_for(profile: str | None) -> str:
    """The architecture a submission compiles for: the present GPU's, else that of the GPU the
    profile is sized for (``--gpu``: its ``gpu``; without one, sm_90), as nvcc can build it (``toolchain.nvcc.compile_arch``)."""
    from cudalab.chapter.profiles import load_profile
    from cudalab.toolchain.nvcc import compile_arch

    cc = gpu.compute_capability()
    if cc is None and profile:
        target = load_profile(profile).sized_for()  # the GPU the profile is sized for, not the lab's it extends
        cc = target.compute_capability if target is not None else None
    try:
        return compile_arch(cc or "9.0")[0]
    except (ToolUnavailable, CudalabError):
        return "sm_" + str(cc or "9.0").replace(".", "")
