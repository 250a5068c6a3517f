"""A chapter's section "Your kernels beside the reference", in a student's build
(``build_report.py --kernels DIR``): each chapter notebook's cell tagged ``yours`` calls
``yours(lab)``.

The build stages the student's files and writes ``submission.json`` beside the chapters' data;
this reads it, and for the chapter's declared points (``yours:`` in its declarations) that build
from a submitted file:

- on a GPU, measures the reference files and the student's, each in a process of its own
  (``isolate``: a kernel that hangs or faults costs its process only), with the recipe's own
  check; a row per point and source, marked ``yours`` or ``reference``, its speed beside the
  reference's and its fraction of the chapter's ceiling from this build's chapter 00;
- without one, compiles both for the profile's GPU (``toolchain.compile_only``): registers,
  spills, SASS instructions, or the compiler's file:line, and says that timings need a GPU.

A wrong result is marked and never called faster. In a plain build the cell shows nothing; in
JupyterLab it says how to measure one's own kernel.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter.catalog import BATCH_ENV
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.sweep import whole_numbers
from cudalab.grading import file_verdicts, isolate, plan, series, trials
from cudalab.grading import results as R
from cudalab.grading.submission import Submission
from cudalab.report.options import SUBMISSION_JSON, YOURS_VERDICTS

TABLE = "yours"  # <chapter data>/yours.csv


def submission_of(lab: Any) -> dict[str, Any] | None:
    """The build's ``submission.json`` (a student's build), or None."""
    path = Path(lab.data_dir).parent / SUBMISSION_JSON
    return json.loads(path.read_text()) if path.is_file() else None


def _request(lab: Any, task: plan.Batch, folder: Path | None, seed: int, answers: Path) -> dict[str, Any]:
    params = {**lab.params, "point_time_limit_s": lab.point_time_limit_s}
    return task.request(folder, params, seed=seed, answers=answers)


Tick = Callable[[str], None]  # told "<source>: <point>" as each point of a source has run (a progress bar)


def _judged(
    lab: Any,
    batch: plan.Batch,
    folder: Path | None,
    limits: isolate.Limits,
    seed: int,
    expected: Any,
    tick: Tick | None = None,
) -> dict[str, Any]:
    """One source's points, every task's of ``batch``, run in one process of its own, their answers
    judged here, in this process (``grading.trials``: on fresh timed inputs, a fresh untimed one and
    each task's check inputs)."""
    source = R.YOURS if folder is not None else R.REFERENCE
    on_point = None
    if tick is not None:
        labels = [plan.point_label(p) for p, _ in batch.points]
        on_point = lambda i, _r: tick(f"{source}: {labels[i] if i < len(labels) else 'a case'}")  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="cudalab-answers-") as answers:
        result = isolate.run(_request(lab, batch, folder, seed, Path(answers)), limits, on_point=on_point)
        for task, first in zip(batch.tasks, batch.firsts(), strict=True):
            trials.judge_task(task, result, seed, Path(answers), expected, first)
    return result


Part = tuple[plan.ChapterTask, bool]  # a task and whether its points are race-checked (the graded ones)


def measured_together(
    lab: Any,
    parts: Sequence[Part],
    staged: Path,
    limits: isolate.Limits,
    seed: int = 0,
    tick: Tick | None = None,
) -> list[pd.DataFrame]:
    """Each part's task's points with the reference files and with the student's: for each kernel
    file, every part's points that build it in one process per source (``plan.Batch``; the
    student's first, then the reference's, the same points in the same order), each point on its
    own task's checks, and the answers judged in this one. A frame per part, a row per point and
    source (``source``: reference, yours). A result past the chapter's ceiling beyond its spread is
    "above the ceiling"; a kernel file that races (``grading.races``, where the host has
    compute-sanitizer) is "race" with its file:line: the parts marked for race checks (the graded
    points; a sweep's others are not run under the sanitizer) go under each tool in one run per
    file. ``tick``: told as each point of each source has run.

    One process per file, not one for everything: a file that crashes, hangs or runs out of the
    budget leaves the points after it in its process "not run", and a sanitizer run stops at a
    fault, so a file shares them only with its own points, never with another file's (whose
    verdict, race included, would then be lost). Each process has the submission budget of
    each task it holds (``limits.submission`` per task, as when each task ran alone)."""
    if not parts:
        return []
    tasks = [task for task, _ in parts]
    misfits = _misfits_each(tasks, staged)
    for task, m in zip(tasks, misfits, strict=True):
        for point, file in task.points:
            if file in m and tick is not None:  # not run: done as far as a progress bar goes
                tick(f"{R.YOURS}: {plan.point_label(point)} ({m[file]['status']})")
    expected = trials.Expected()
    mine: dict[tuple[int, int], dict[str, Any]] = {}
    reference: dict[tuple[int, int], dict[str, Any]] = {}
    seconds = {R.YOURS: 0.0, R.REFERENCE: 0.0}
    files = list(dict.fromkeys(f for t in tasks for _, f in t.points))
    for file in files:
        everyone = _picked(tasks, file)  # the reference runs the misfits' points too: a row beside theirs
        yours = [(i, at) for i, at in everyone if file not in misfits[i]]
        for folder, picked, into in ((staged, yours, mine), (None, everyone, reference)):
            if not picked:
                continue
            batch = _batch(tasks, picked)
            started = time.monotonic()
            got = _judged(lab, batch, folder, _budget(limits, len(batch.tasks)), seed, expected, tick)
            seconds[R.YOURS if folder is not None else R.REFERENCE] += time.monotonic() - started
            into.update(zip(((i, j) for i, at in picked for j in at), got["points"], strict=True))
    ours = [
        [m[f] if f in m else mine[(i, j)] for j, (_, f) in enumerate(t.points)]
        for i, (t, m) in enumerate(zip(tasks, misfits, strict=True))
    ]
    theirs = [[reference[(i, j)] for j in range(len(t.points))] for i, t in enumerate(tasks)]
    # the race checks: per file, the marked parts' points of it in one run of each tool, where one
    # of those points answered (only those a race can charge)
    raced: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    for file in files:
        checked = [
            (i, at)
            for i, at in _picked(tasks, file)
            if parts[i][1] and file not in misfits[i] and any(ours[i][j].get("status") in (R.OK, R.WRONG) for j in at)
        ]
        if checked:
            raced.update(_races(lab, _batch(tasks, checked), staged, seed))
    seconds[R.YOURS] += time.monotonic() - started
    return [
        _rows(lab, task, ref, got, raced if races_too else {}, seed, seconds)
        for (task, races_too), ref, got in zip(parts, theirs, ours, strict=True)
    ]


def _picked(tasks: Sequence[plan.ChapterTask], file: str) -> list[tuple[int, list[int]]]:
    """Per task (its index), the indices of its points that build ``file``; tasks with none left out."""
    picked = [(i, [j for j, (_, f) in enumerate(t.points) if f == file]) for i, t in enumerate(tasks)]
    return [(i, at) for i, at in picked if at]


def _batch(tasks: Sequence[plan.ChapterTask], picked: list[tuple[int, list[int]]]) -> plan.Batch:
    """The picked points of each task, in order, as one process's batch."""
    return plan.Batch(tuple(tasks[i].keeping(tuple(tasks[i].points[j] for j in at)) for i, at in picked))


def _budget(limits: isolate.Limits, tasks: int) -> isolate.Limits:
    """``limits`` with the submission budget of ``tasks`` tasks: each task's, as when each ran alone."""
    from dataclasses import replace

    return replace(limits, submission=limits.submission * max(1, tasks)) if limits.submission else limits


def _rows(
    lab: Any,
    task: plan.ChapterTask,
    reference: list[dict[str, Any]],
    mine: list[dict[str, Any]],
    raced: dict[str, dict[str, Any]],
    seed: int,
    seconds: dict[str, float],
) -> pd.DataFrame:
    """The task's rows, a row per point and source, from each source's result per point."""
    ceiling = lab.ceilings().get(task.yours.ceiling) if task.yours.ceiling else None
    rows = []
    for i, (point, file) in enumerate(task.points):
        ref = reference[i]
        for source, got in ((R.REFERENCE, reference[i]), (R.YOURS, mine[i])):
            if source == R.YOURS and raced.get(file, {}).get("status") == R.RACE and got["status"] in (R.OK, R.WRONG):
                got = {**got, "status": R.RACE, "reason": raced[file]["reason"]}
            time_ms = got.get("time_ms") if got["status"] == R.OK else None
            ref_ms = ref.get("time_ms") if ref["status"] == R.OK else None
            rate = R.rate_of(point, time_ms, task.yours.rate)
            if got["status"] == R.OK and R.above_ceiling(rate, R.spread(got), ceiling, 0.0):
                got = {
                    **got,
                    "status": R.ABOVE_CEILING,
                    "reason": f"{rate:.4g} {task.yours.rate_unit} is {rate / ceiling:.0%} of the {task.yours.ceiling} "
                    f"ceiling this build measured ({ceiling:.4g}): past it, so the timing or the answer is not real",
                }
            rows.append(
                {
                    "point": plan.point_label(point),
                    "file": file,
                    "source": source,
                    "seed": seed,
                    "status": got["status"],
                    "time_ms": got.get("time_ms"),
                    "time_ms_q1": got.get("time_ms_q1"),
                    "time_ms_q3": got.get("time_ms_q3"),
                    "speed_vs_reference": ref_ms / time_ms if time_ms and ref_ms else None,
                    "rate_per_s": rate,
                    "fraction_of_ceiling": rate / ceiling if rate is not None and ceiling else None,
                    "ceiling": task.yours.ceiling or "",
                    "reason": got.get("reason", ""),
                    # what this source's points cost, all of them: its one process (compile, draws,
                    # timed calls, answers) for every part measured with it, the judging of its
                    # answers and, for yours, the race checks
                    "source_s": round(seconds[source], 1),
                }
            )
    return pd.DataFrame(rows)


def _races(lab: Any, task: plan.ChapterTask | plan.Batch, staged: Path, seed: int) -> dict[str, dict[str, Any]]:
    """Each of the task's files -> its race verdict (``grading.races``: one run of each tool for a
    batch's points); empty where the host has no compute-sanitizer (the section then says nothing
    of races)."""
    from cudalab.grading import races

    if races.unavailable():
        return {}
    params = {**lab.params, "point_time_limit_s": lab.point_time_limit_s}
    return races.races(task, staged, params, seed=seed)


def _misfits(task: plan.ChapterTask, staged: Path) -> dict[str, dict[str, str]]:
    """Each of the task's files whose kernels do not fit the chapter's launch (or do not compile)
    (``_misfits_each``)."""
    return _misfits_each([task], staged)[0]


def _misfits_each(tasks: Sequence[plan.ChapterTask], staged: Path) -> list[dict[str, dict[str, str]]]:
    """Per task, each of its files whose kernels do not fit the chapter's launch (or do not compile),
    by nvcc before anything runs, at each of that task's points' own build options (``-DBF=8`` ..
    ``-DBF=64``): the result its points get in that task. A build several tasks make (the graded
    point's and the sweep's BF 32) is compiled once; all run at once. Empty where nvcc is not
    installed (then NVRTC's own error says it at the first launch)."""
    from concurrent.futures import ThreadPoolExecutor

    from cudalab.core.errors import KernelCompileError, ToolUnavailable
    from cudalab.core.gpu import compute_capability
    from cudalab.toolchain import compile_only
    from cudalab.toolchain.nvcc import compile_arch

    cc = compute_capability() or "9.0"
    each = []
    for task in tasks:
        builds = point_builds([task], cc)
        each.append(
            [
                (file, options, kernels)
                for file in task.files
                for options, kernels in dict.fromkeys(
                    (o, tuple(k) if k else None) for at in builds.get(file, []) for o, k in at.builds(file)
                )
                or [((), None)]
            ]
        )
    jobs = list(dict.fromkeys(job for mine in each for job in mine))

    def problems_of(job: tuple) -> list[str] | KernelCompileError:
        file, options, kernels = job
        try:
            return compile_only.signature_problems(
                KERNELS_DIR / file, staged / file, arch, (f"-I{staged}",), options, kernels
            )
        except KernelCompileError as exc:
            return exc

    try:
        arch = compile_arch(cc)[0]
        with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1, 8))) as pool:
            done = dict(zip(jobs, pool.map(problems_of, jobs), strict=True)) if jobs else {}
    except ToolUnavailable:
        return [{} for _ in tasks]
    out = []
    for task, mine in zip(tasks, each, strict=True):
        found: dict[str, dict[str, str]] = {}
        for file in task.files:
            results = [done[job] for job in mine if job[0] == file]
            failed = next((d for d in results if isinstance(d, KernelCompileError)), None)
            if failed is not None:
                found[file] = {"status": R.DOES_NOT_COMPILE, "reason": R.compile_failure(failed)}
                continue
            problems = [m for d in results for m in d]
            if problems:
                found[file] = {"status": R.MISFIT, "reason": R.scrubbed("; ".join(dict.fromkeys(problems)))}
        out.append(found)
    return out


# ---- each graded point's launches, known without a GPU


def point_builds(tasks: list[plan.ChapterTask], cc: str) -> dict[str, list]:
    """Per kernel file, the points ``tasks`` grade it at, each as ``compile_only.PointBuild`` (its
    label and the launches it makes of that file) on the GPU of ``cc`` (``"9.0"`` or ``"sm_90"``)."""
    from cudalab.core.occupancy import cc_key
    from cudalab.toolchain.compile_only import PointBuild

    key = cc_key(cc)
    found: dict[str, list] = {}
    for task in tasks:
        for point, file in task.points:
            launches = tuple(x for x in series.point_launches(task.yours, point, key) if Path(x.file).name == file)
            found.setdefault(file, []).append(PointBuild(plan.point_label(point), launches))
    return found


def compiled(files: list[str], staged: Path, arch: str, points: dict[str, list] | None = None) -> pd.DataFrame:
    """The student's ``files`` beside the reference's, compiled for ``arch`` without a GPU, at the
    ``points`` each is graded at (``point_builds``; none: each file with its own defaults)."""
    from cudalab.toolchain import compile_only

    kernels = {f: KERNELS_DIR / f for f in dict.fromkeys(files)}
    sub = Submission(staged, kernels, [], {}, [])
    return compile_only.beside_reference(sub, arch, points)


def occupancy_at_points(compiled_rows: pd.DataFrame, points: dict[str, list], cc: str) -> pd.DataFrame:
    """Theoretical occupancy on the GPU of compute capability ``cc`` of each launch a graded point
    makes (``point_builds``), the student's beside the reference's: the registers and static shared
    memory of that point's own build, the launch's threads and dynamic shared memory. Registers past
    what ``cc`` allows per thread (a build for a newer architecture) are capped at it, as its
    compiler would cap them and spill. Empty where no point lists a launch."""
    from cudalab.core.occupancy import occupancy, sm_limits

    ok = compiled_rows[compiled_rows["status"].eq("ok")] if len(compiled_rows) else compiled_rows
    cap = sm_limits(cc).max_registers_per_thread
    rows = []
    for file, builds in points.items():
        for at in builds:
            for launch in at.launches:
                for source in (R.REFERENCE, R.YOURS):
                    mine = ok[
                        ok["file"].eq(file)
                        & ok["point"].eq(at.point)
                        & ok["source"].eq(source)
                        & ok["options"].eq(" ".join(launch.options))
                        & ok["kernel"].eq(launch.kernel)
                    ]
                    if not len(mine):
                        continue
                    r = mine.iloc[0]
                    registers = min(int(r["registers_per_thread"]), cap)
                    shared, dynamic = int(r["shared_bytes"]), int(launch.dynamic_shared_bytes)
                    occ = occupancy(cc, launch.threads, registers, shared, dynamic)
                    rows.append(
                        {
                            "point": at.point,
                            "kernel": launch.kernel,
                            "threads_per_block": launch.threads,
                            "dynamic_shared_bytes": dynamic,
                            "source": source,
                            "registers_per_thread": registers,
                            "occupancy_fraction": occ["occupancy"],
                            "limited_by": occ["limited_by"] or occ["reason"],
                        }
                    )
    return pd.DataFrame(rows).drop_duplicates() if rows else pd.DataFrame()


def occupancy_beside(compiled_rows: pd.DataFrame, launches: pd.DataFrame, cc: str) -> pd.DataFrame:
    """Theoretical occupancy of each compiled kernel, the student's beside the reference's, at the
    launches the chapter recorded for it (``launches``: its occupancy table's kernel, threads per
    block and shared bytes per block, on the GPU of compute capability ``cc``): the launch's
    dynamic shared memory is what the recorded total holds beyond the reference's static shared
    memory. Empty where the chapter recorded no launch of these kernels."""
    from cudalab.core.occupancy import occupancy

    ok = compiled_rows[compiled_rows["status"].eq("ok")]
    if not len(ok) or not len(launches) or not {"kernel", "threads_per_block"} <= set(launches.columns):
        return pd.DataFrame()
    same_gpu = (
        launches[launches["compute_capability"].astype(str).eq(str(cc))]
        if "compute_capability" in launches
        else launches
    )
    shapes = (same_gpu if len(same_gpu) else launches)[["kernel", "threads_per_block", "shared_bytes_per_block"]]
    reference = ok[ok["source"].eq(R.REFERENCE)].drop_duplicates("kernel").set_index("kernel")
    rows = []
    for kernel, threads, total in shapes.drop_duplicates().itertuples(index=False):
        if kernel not in reference.index:
            continue
        dynamic = max(0, int(total) - int(reference.loc[kernel, "shared_bytes"]))
        for source in (R.REFERENCE, R.YOURS):
            mine = ok[ok["source"].eq(source) & ok["kernel"].eq(kernel)]
            if not len(mine):
                continue
            r = mine.iloc[0]
            occ = occupancy(cc, int(threads), int(r["registers_per_thread"]), int(r["shared_bytes"]), dynamic)
            rows.append(
                {
                    "kernel": kernel,
                    "threads_per_block": int(threads),
                    "dynamic_shared_bytes": dynamic,
                    "source": source,
                    "registers_per_thread": int(r["registers_per_thread"]),
                    "occupancy_fraction": occ["occupancy"],
                    "limited_by": occ["limited_by"] or occ["reason"],
                }
            )
    return pd.DataFrame(rows)


def _occupancy_wide(long: pd.DataFrame) -> pd.DataFrame:
    """``occupancy_at_points``'s (or ``occupancy_beside``'s) rows as the report prints them: one row
    per point and launch, the reference's and the student's registers and occupancy side by side,
    and what limits the student's."""
    keys = [k for k in ("point", "kernel", "threads_per_block", "dynamic_shared_bytes") if k in long]
    out = long[long["source"].eq(R.REFERENCE)][keys].drop_duplicates().reset_index(drop=True)
    for source in (R.REFERENCE, R.YOURS):
        part = long[long["source"].eq(source)].set_index(keys)
        for column, label in (("registers_per_thread", "registers"), ("occupancy_fraction", "occupancy")):
            out[f"{label} ({source})"] = [part[column].get(tuple(k), None) for k in out[keys].itertuples(index=False)]
    limits = long[long["source"].eq(R.YOURS)].set_index(keys)["limited_by"]
    out["limited by (yours)"] = [limits.get(tuple(k), "") for k in out[keys].itertuples(index=False)]
    return out


def _recorded_launches(lab: Any) -> pd.DataFrame:
    """The chapter's recorded occupancy table (its launches), from this build or the recording."""
    for folder in (Path(lab.out_dir), Path(lab.recorded_dir) / lab.id):
        path = folder / "occupancy.csv"
        if path.is_file():
            return pd.read_csv(path, dtype={"compute_capability": str})
    return pd.DataFrame()


def _sized_for(lab: Any) -> Any:
    """The GPU the build's profile is sized for (``Profile.sized_for``: ``gpu:``, else its lab GPU),
    or None."""
    profile = getattr(lab, "profile", None)
    return profile.sized_for() if profile is not None and hasattr(profile, "sized_for") else None


def _cc(lab: Any) -> str:
    """The compute capability a student's kernel compiles for without a GPU: that of the GPU the
    profile is sized for (``--gpu h100``: the H100's 9.0, not the lab's GTX 680), else 9.0."""
    target = _sized_for(lab)
    return str(target.compute_capability) if target is not None else "9.0"


def _arch(lab: Any) -> str:
    from cudalab.toolchain.nvcc import compile_arch

    return compile_arch(_cc(lab))[0]


_HINT = (
    "**Your own kernel here.** Copy {which} ({files}) into a folder of your own, keeping its name, edit "
    "it, and run `python build_report.py --kernels YOUR_FOLDER --only {number}`: it is measured beside "
    "the reference at {points}, checked as the reference is, in a report of its own."
)
SHOWN_POINTS = 3  # more, and the hint names where they are declared instead


def yours(lab: Any) -> None:
    """Show this chapter's section for a student's kernels (see the module docstring); its rows
    are written to ``yours.csv`` in the chapter's data."""
    from IPython.display import Markdown, display

    record = submission_of(lab)
    if record is None:
        tasks = plan.chapter_tasks(lab.id)
        if tasks and not os.environ.get(BATCH_ENV):
            names = list(dict.fromkeys(f for t in tasks for f in t.files))
            listed = [plan.point_label(p) for t in tasks for p, _ in t.points]
            points = (
                "; ".join(listed)
                if len(listed) <= SHOWN_POINTS
                else (f"the {len(listed)} points `notebooks/{lab.id}.yaml` declares under `yours`")
            )
            which = "the chapter's kernel file" if len(names) == 1 else "a kernel file this chapter measures"
            files = ", ".join(f"`kernels_cu/{n}`" for n in names)
            display(Markdown(_HINT.format(which=which, files=files, number=lab.id[:2], points=points)))
        return
    tasks = plan.chapter_tasks(lab.id, record["kernels"])
    if not tasks:
        display(
            Markdown(f"**Your kernels.** This chapter measures none of your files ({', '.join(record['kernels'])}).")
        )
        return
    staged = Path(lab.data_dir).parent / record["staged"]
    occupancy = None
    if lab.mode == "measure":
        limits = isolate.Limits(record["limits"]["point_s"] or 1e9, record["limits"]["submission_s"] or 1e9)
        frame, swept, sweep_failed = graded_and_swept(
            lab, tasks, staged, limits, int(record.get("seed") or 0), record["files"]
        )
    else:
        swept, sweep_failed = pd.DataFrame(), ""
        points = point_builds(tasks, _cc(lab))
        frame = compiled([f for t in tasks for f in t.files], staged, _arch(lab), points)
        occupancy = occupancy_at_points(frame, points, _cc(lab))
        if not len(occupancy):  # no point lists its launches: the launches the chapter recorded
            occupancy = occupancy_beside(frame, _recorded_launches(lab), _cc(lab))
        if len(occupancy):
            occupancy.to_csv(Path(lab.out_dir) / f"{TABLE}_occupancy.csv", index=False)
    frame.to_csv(Path(lab.out_dir) / f"{TABLE}.csv", index=False)
    every = frame  # the verdict and the first page count every point measured: the graded ones and the sweep's
    if len(swept):
        series.write(swept, Path(lab.out_dir))
        more = swept[swept["from_sweep"]].drop(
            columns=["series", "from_sweep", "table", *_point_keys(tasks, swept)], errors="ignore"
        )
        every = pd.concat([frame, more], ignore_index=True)
    judged = file_verdicts.of_chapter(every, lab.id, lab.mode == "measure", occupancy)
    (Path(lab.out_dir) / YOURS_VERDICTS).write_text(json.dumps([v.as_dict() for v in judged], indent=1))
    files = list(dict.fromkeys(f for t in tasks for f in t.files))
    target = _sized_for(lab)
    show(frame, files, lab.mode == "measure", occupancy, target.name if target is not None else "")
    if len(swept):
        show_sweep(lab.id, tasks, swept)
    elif sweep_failed:
        display(Markdown(f"Your kernel across the chapter's sweep could not be measured ({sweep_failed}); "
                         "the graded points above stand."))  # fmt: skip


def _point_keys(tasks: list[plan.ChapterTask], swept: pd.DataFrame) -> list[str]:
    """The point columns the sweep's rows carry (its recipes' axes and choices)."""
    return list(dict.fromkeys(k for t in tasks for k in series.point_keys(t, swept)))


def measured_cc(lab: Any) -> str:
    """The compute capability of the GPU measured on (else the one the profile is sized for)."""
    from cudalab.core import gpu

    return gpu.compute_capability() or _cc(lab)


def sweep_rest(
    lab: Any, tasks: list[plan.ChapterTask], cc: str, graded: list[plan.ChapterTask] | None = None
) -> list[tuple[plan.ChapterTask, plan.ChapterTask]]:
    """Each task beside the rest of its chapter's sweep (``grading.series``): every point of its
    recipe's table in this build that builds from a submitted file and is not one of the task's
    ``graded`` points (``plan.graded_once``), as a task checked lightly. Tasks whose table is not in
    this build's data are left out."""
    graded_points = {t.key: t.points for t in (plan.graded_once(tasks) if graded is None else graded)}
    out = []
    for task in tasks:
        recipe = plan.recipe_of(task.yours.recipe)
        path = Path(lab.out_dir) / f"{recipe.table}.csv"
        if not path.is_file():
            continue
        whole = series.sweep_task(task, pd.read_csv(path), set(task.files), series.builds_for(task.yours, cc))
        if whole is None:
            continue
        done = {plan.point_label(p) for p, _ in graded_points.get(task.key, ())}
        rest = whole.keeping(tuple((p, f) for p, f in whole.points if plan.point_label(p) not in done))
        out.append((task, series.checked_lightly(rest)))
    return out


def results_planned(tasks: list[plan.ChapterTask], rests: list[tuple[plan.ChapterTask, plan.ChapterTask]]) -> int:
    """How many results ``graded_and_swept`` ticks for: each graded and swept point, per source."""
    return 2 * (sum(len(t.points) for t in plan.graded_once(tasks)) + sum(len(r.points) for _, r in rests))


def graded_and_swept(
    lab: Any,
    tasks: list[plan.ChapterTask],
    staged: Path,
    limits: isolate.Limits,
    seed: int,
    sha256: dict[str, str],
    tick: Tick | None = None,
    rests: list[tuple[plan.ChapterTask, plan.ChapterTask]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The student's files at the chapter's graded points, each graded build once (``plan.graded_once``:
    every check input, a fresh one of the timed kind and the race checks), and over the chapter's
    own sweep (``grading.series``): for each group, every point of its recipe's table in this
    build that builds from a submitted file (``sweep_rest``, or ``rests`` where the caller planned
    them already), checked lightly. Every point of one source that builds one file runs in one
    process (``measured_together``): the student's graded and swept points of it in one, the
    reference's in another, the same points in the same order.

    Returns the graded points' rows (a row per point and source), the series (a row per point and
    source, the graded points and the others, with the point's keys, ``series``, ``from_sweep`` and
    ``table``; empty where no group's table is in this build's data) and why the sweep could not be
    measured ("" where it was). The sweep is more than the graded points: where it fails, the
    graded points are measured without it."""
    graded = plan.graded_once(tasks)
    failed = ""
    if rests is None:
        try:
            rests = sweep_rest(lab, tasks, measured_cc(lab), graded)
        except Exception as exc:
            rests, failed = [], R.scrubbed(f"{type(exc).__name__}: {exc}")
    swept = [rest for _, rest in rests if rest.points]
    try:
        frames = measured_together(
            lab, [(t, True) for t in graded] + [(rest, False) for rest in swept], staged, limits, seed, tick
        )
    except Exception as exc:
        if not swept:
            raise
        failed, rests = R.scrubbed(f"{type(exc).__name__}: {exc}"), []
        frames = measured_together(lab, [(t, True) for t in graded], staged, limits, seed, tick)
    frame = pd.concat(frames[: len(graded)], ignore_index=True)
    more = iter(frames[len(graded) :])
    swept_rows = [next(more) if rest.points else None for _, rest in rests]
    try:
        series_rows = _series(graded, frames[: len(graded)], rests, swept_rows, sha256)
    except Exception as exc:  # the series is more than the graded points: its failure costs them nothing
        series_rows, failed = pd.DataFrame(), R.scrubbed(f"{type(exc).__name__}: {exc}")
    return frame, series_rows, failed


def _series(
    graded: list[plan.ChapterTask],
    graded_rows: list[pd.DataFrame],
    rests: list[tuple[plan.ChapterTask, plan.ChapterTask]],
    swept_rows: list[pd.DataFrame | None],
    sha256: dict[str, str],
) -> pd.DataFrame:
    """The series of each group whose table is in this build's data (``rests``, and each one's
    sweep's rows or None): its graded points' rows, then its sweep's, with the point's keys,
    ``series``, ``from_sweep`` and ``table``."""
    mine = {t.key: (t, rows) for t, rows in zip(graded, graded_rows, strict=True)}
    parts = []
    for (task, rest), rows in zip(rests, swept_rows, strict=True):
        table = plan.recipe_of(task.yours.recipe).table  # which table's points these are (the explorer reads it)
        if task.key in mine:
            at, done = mine[task.key]
            parts.append(series.as_table(done, at, sha256).assign(from_sweep=False, table=table))
        if rows is not None:
            # a point the reference itself does not run at on this GPU (a launch it refuses) is no
            # point of the sweep: nothing to set the student's beside, nor to hold against them
            ref_ok = rows[rows["source"].eq(R.REFERENCE) & rows["status"].eq(R.OK)]["point"]
            rows = rows[rows["point"].isin(set(ref_ok))]
            parts.append(series.as_table(rows, rest, sha256).assign(from_sweep=True, table=table))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _cost(swept: pd.DataFrame) -> str:
    """What the sweep's points beyond the graded ones took, per source (``source_s``), as a sentence."""
    if "source_s" not in swept or "from_sweep" not in swept:
        return ""
    extra = swept[swept["from_sweep"].astype(bool)].drop_duplicates(["series", "file"])
    if extra.empty:
        return ""
    per = extra.groupby("series", sort=False)["source_s"].sum()
    return " Measuring them took " + ", ".join(f"{s:.0f} s for {name}" for name, s in per.items()) + "."


def show_sweep(chapter: str, tasks: list[plan.ChapterTask], swept: pd.DataFrame) -> None:
    """The student's series in the chapter's declared figures of each sweep's table, beside the
    reference measured the same way, and the sweep's rows."""
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    from cudalab.core import plots

    wrong = swept[swept["series"].ne(R.REFERENCE) & swept["status"].ne(R.OK)]
    display(
        Markdown(
            "#### Your kernel across the chapter's sweep\n\nEvery point of the chapter's sweep that your file "
            f"builds for ({swept['point'].nunique()} points), measured as the graded points are and checked on "
            "its timed input, a fresh one and one harsh input of its size, your series beside the reference's "
            "(yours dashed, or hatched in a ladder's bars"
            + (f"; a red cross: {len(wrong)} point(s) not correct, with no time" if len(wrong) else "")
            + ")."
            + _cost(swept)
        )
    )
    drawn = set()
    for task in tasks:
        recipe = plan.recipe_of(task.yours.recipe)
        if recipe.table in drawn:  # two groups of one table (04's shared and registers kernels): one figure
            continue
        drawn.add(recipe.table)
        # each table's own rows (04's ladder and its blocking-factor sweep both have an n), with
        # its keys as the table has them (whole numbers, not the floats a column with gaps became)
        rows = swept[swept["table"].eq(recipe.table)] if "table" in swept else swept
        rows = rows.dropna(axis=1, how="all")
        keys = series.point_keys(task, rows)
        rows = whole_numbers(rows, keys)
        for spec in series.figures_of(chapter, recipe.table):
            if spec.x not in keys or spec.y not in rows or rows.empty:
                continue
            fig = series.draw_declared(rows, spec, keys, order=recipe.kernel_choices.get(spec.x))
            plt.show()
            plt.close(fig)
    shown = [
        c for c in ("series", "point", "status", "time_ms", "speed_vs_reference", "fraction_of_ceiling") if c in swept
    ]
    display(
        plots.styled(
            swept[shown].rename(columns=READABLE),
            {"time (ms)": "{:.3f}", "speed vs reference": "{:.2f}x", "fraction of the ceiling": "{:.1%}"},
            small_print=True,
        )
    )


SAME_WITHIN = 0.02  # a ratio closer to 1 than this is "as fast as", whatever the spreads say


def _beside(mine: pd.Series, ref: pd.Series) -> str:
    """Faster or slower than the reference only where the two times differ by more than
    ``SAME_WITHIN`` and their spreads (quartiles) do not overlap; otherwise as fast as it."""
    x = float(ref["time_ms"]) / float(mine["time_ms"])
    lo, hi = mine.get("time_ms_q1", mine["time_ms"]), mine.get("time_ms_q3", mine["time_ms"])
    ref_lo, ref_hi = ref.get("time_ms_q1", ref["time_ms"]), ref.get("time_ms_q3", ref["time_ms"])
    if x > 1 + SAME_WITHIN and pd.notna(hi) and pd.notna(ref_lo) and hi < ref_lo:
        return "faster than"
    if x < 1 - SAME_WITHIN and pd.notna(lo) and pd.notna(ref_hi) and lo > ref_hi:
        return "slower than"
    return "as fast as"


def _verdict(frame: pd.DataFrame) -> list[str]:
    """One sentence per point: how the student's kernel did beside the reference (never "faster"
    for a result that is not correct)."""
    out = []
    for point, rows in frame.groupby("point", sort=False):
        mine = rows[rows["source"].eq(R.YOURS)].iloc[0]
        ref = rows[rows["source"].eq(R.REFERENCE)].iloc[0]
        if mine["status"] != R.OK:
            out.append(f"- At {point}: your kernel is **{mine['status']}**: {mine['reason'] or 'no reason given'}.")
        elif pd.notna(mine["speed_vs_reference"]):
            x = float(mine["speed_vs_reference"])
            word = _beside(mine, ref)
            ceiling = (
                f", {mine['fraction_of_ceiling']:.1%} of the chapter's ceiling"
                if pd.notna(mine["fraction_of_ceiling"])
                else ""
            )
            out.append(
                f"- At {point}: correct, {mine['time_ms']:.3f} ms, {x:.2f}x the reference's speed ({word} it){ceiling}."
            )
        else:
            out.append(f"- At {point}: correct, {mine['time_ms']:.3f} ms (the reference has no time to set beside it).")
    return out


CONSTANT_SAID = ("file", "point", "options", "shared_bytes", "spill_bytes", "stack_bytes")  # said once where the same


def _same_everywhere(frame: pd.DataFrame) -> dict[str, str]:
    """The columns of ``CONSTANT_SAID`` that hold one value in every row (said once under the table,
    so that a printed page holds it whole)."""
    return {
        c: str(frame[c].iloc[0])
        for c in CONSTANT_SAID
        if c in frame and len(frame) > 1 and frame[c].astype(str).nunique() == 1 and _has_values(frame[c])
    }


def _narrow(frame: pd.DataFrame) -> list[str]:
    """The compiled table's columns worth a column: those with a value somewhere, less those the
    same in every row (``_same_everywhere``)."""
    same = _same_everywhere(frame)
    return [
        c
        for c in frame.columns
        if c not in same
        and (_has_values(frame[c]) or c in ("file", "source", "status"))
        and not (c == "reason" and not _has_values(frame[c]))
    ]


def _has_values(column: pd.Series) -> bool:
    """A column with a value somewhere (not all missing, not all empty text)."""
    return bool(column.notna().any() and column.dropna().astype(str).str.strip().ne("").any())


READABLE = {
    "time_ms": "time (ms)",
    "speed_vs_reference": "speed vs reference",
    "fraction_of_ceiling": "fraction of the ceiling",
}


def show(
    frame: pd.DataFrame,
    kernel_files: list[str],
    timed: bool,
    occupancy: pd.DataFrame | None = None,
    gpu: str = "",
) -> None:
    """The section as the report shows it: a sentence per point, the table with the student's rows
    marked, and (timed) a figure of both sources' times; compiled only, the resources and the
    theoretical occupancy (on ``gpu``) beside the reference's."""
    from IPython.display import Markdown, display

    from cudalab.core import plots

    files = ", ".join(f"`{f}`" for f in kernel_files)
    if not timed:
        from cudalab.toolchain.compile_only import sass_unavailable

        per_point = "point" in frame and _has_values(frame["point"])
        how = (
            "at each point the chapter grades, built with that point's own options"
            if per_point
            else "each as the file builds without options (its own defaults)"
        )
        built = "status" in frame and frame["status"].eq("ok").any()
        absent = built and ("sass_instructions" not in frame or not frame["sass_instructions"].notna().any())
        why = sass_unavailable() or "SASS instruction counts are left out: cuobjdump could not read the compiled code"
        sass = f" {why}." if absent else ""
        display(
            Markdown(
                f"### Your kernels beside the reference\n\nYour {files}, compiled for this profile's GPU "
                f"({gpu or 'compute capability 9.0'}) beside the reference, {how}: "
                f"{R.COMPILED_ONLY}; **its timings need a GPU** (run the same command on a GPU host).{sass}"
            )
        )
        display(plots.styled(frame[_narrow(frame)], {"registers_per_thread": "{:.0f}"}, small_print=True))
        same = _same_everywhere(frame)
        if same:
            display(Markdown("Every row: " + "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in same.items()) + "."))
        if occupancy is not None and len(occupancy):
            where = (
                "at each launch of the points the chapter grades"
                if "point" in occupancy
                else "at the launches the chapter recorded for these kernels"
            )
            display(Markdown(f"Theoretical occupancy on the profile's GPU ({gpu}), {where}:"))
            display(
                plots.styled(
                    _occupancy_wide(occupancy), {"occupancy (reference)": "{:.0%}", "occupancy (yours)": "{:.0%}"}
                )
            )
        return
    display(
        Markdown(
            "### Your kernels beside the reference\n\nYour " + files + ", each point measured with the "
            "reference file and with yours, in processes of their own, each timed call on an input of its own; "
            "the answers are judged outside the process your kernel ran in, on the last timed input, a fresh "
            "one and the harsh inputs the chapter declares"
            + (f" (drawn with seed {int(frame['seed'].iloc[0])}: `--seed` replays them)" if "seed" in frame else "")
            + ":\n\n"
            + "\n".join(_verdict(frame))
        )
    )
    marked = frame.assign(source=frame["source"].map({R.YOURS: "yours", R.REFERENCE: "reference"}))
    shown = [
        c
        for c in ("point", "source", "status", "time_ms", "speed_vs_reference", "fraction_of_ceiling", "reason")
        if marked[c].notna().any() or c in ("point", "source", "status")
    ]
    st = plots.styled(
        marked[shown].rename(columns=READABLE),
        {"time (ms)": "{:.3f}", "speed vs reference": "{:.2f}x", "fraction of the ceiling": "{:.1%}"},
        small_print=True,
    )
    st = st.apply(
        lambda r: ["font-weight: bold; background: #fff4d6" if r["source"] == "yours" else "" for _ in r], axis=1
    )
    display(st)
    timed_rows = marked[marked["time_ms"].notna()]
    if len(timed_rows):
        import matplotlib.pyplot as plt

        labels = timed_rows.assign(
            source=[
                f"{s} ({st})" if st != R.OK else s
                for s, st in zip(timed_rows["source"], timed_rows["status"], strict=True)
            ]
        )
        plots.bars_per_panel(
            labels,
            "point",
            "time_ms",
            "source",
            xlabel="time (ms), each point on its own scale",
            title="Your kernel beside the reference",
            unit="ms",
        )
        plt.show()
