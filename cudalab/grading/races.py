"""Races: the kernels a submission's graded points launch, run once under compute-sanitizer's
``racecheck`` (shared-memory hazards) and ``synccheck`` (barrier misuse), where the host has it.

A race can give the right answer on the inputs tried, on this GPU, today, and the wrong one on
another; no output check sees it. So each of a chapter's points is run once more in a child
process (``grading._sanitize_target``) at a small input of two or three of its tiles
(``labs.checks.Checks.small``), its kernels built with line information, once under each tool.
A hazard is the verdict ``race`` with its ``file:line`` (the file's name, never the machine's
path), and the student is not ranked.

The reference files are held to the same rule: every reference kernel a chapter's ``yours:`` names
runs clean under both tools (``tests/test_gpu_races.py``), so that a race verdict means the
student's code. A hazard in a reference file met while checking a submission (a point that
launches the reference's phases beside the student's) is never charged to the student: that file
is ``not checked``, with the reason.

``races(task, folder, params)`` is the one call; ``judge`` turns the tools' runs into verdicts and
needs no GPU.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import results as R
from cudalab.grading.plan import Batch, ChapterTask, point_label
from cudalab.toolchain import hazards as sanitizer
from cudalab.toolchain.hazards import TOOLS, Hazard, ToolRun

NOT_CHECKED = "not checked"
TARGET = ("-m", "cudalab.grading._sanitize_target")
LIMIT_S = 240.0  # one tool's run over one chapter's points (on an H200 at n = 96: racecheck about 5 s a file)
SUBMISSION, REFERENCE, ELSEWHERE, UNPLACED = "submission", "reference", "elsewhere", "unplaced"


def unavailable() -> str:
    """Why races cannot be checked on this host ("" where they can): no compute-sanitizer, no GPU."""
    from cudalab.core.gpu import gpu_available
    from cudalab.toolchain.nvcc import cuda_tool

    if cuda_tool("compute-sanitizer") is None:
        return "compute-sanitizer is not installed on the grading host"
    if not gpu_available():
        return "no GPU here: compute-sanitizer runs kernels"
    return ""


def request(
    task: ChapterTask | Batch, folder: Path | None, params: dict[str, Any], seed: int, results: Path
) -> dict[str, Any]:
    """The target's request (``_sanitize_target``): the worker's (``ChapterTask.request``) and the
    file it writes a line per point to."""
    return {**task.request(folder, params, seed=seed), "results": str(results)}


def races(
    task: ChapterTask | Batch,
    folder: Path | None,
    params: dict[str, Any],
    *,
    seed: int = 0,
    limit_s: float = LIMIT_S,
    tools: Sequence[str] = TOOLS,
    env: dict[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each kernel file of ``task`` (its points' files, in order) -> its verdict: ``{"status":
    "race" | "ok" | "not checked", "reason": "fw_blocked.cu:49: racecheck: ...", "hazards": [every
    hazard charged to it, one line each], "seconds": the tools' wall time over the task, the slower's: they run side by side}``.

    ``task``: one group's points, or several groups' (a ``plan.Batch``: one run of each tool for
    them all); ``folder``: the staged submission (None: the reference files); ``params``: the chapter's;
    ``seed``: the grading run's (the small inputs are drawn from it); ``limit_s``: wall-clock limit
    of each tool's run (past it the process group is killed and what was not placed is ``not
    checked``); ``env``: the child's environment (default: ``isolate.scrubbed_env``, as the
    grader's worker has it)."""
    from cudalab.grading import isolate

    why = unavailable()
    if not why and any(t.yours.checks is None for t in getattr(task, "tasks", (task,))):
        why = "the chapter declares no checks kit (yours.checks) to build its points with"
    if why:
        return {f: _verdict(NOT_CHECKED, why) for f in task.files}
    runs: dict[str, tuple[ToolRun, dict[int, dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="cudalab-races-") as home:
        environment = env if env is not None else isolate.scrubbed_env(Path(home))
        # every tool at once (they instrument, they do not time): a grader waits for the slower
        results = {tool: Path(home) / f"{tool}-points.jsonl" for tool in tools}
        asked = [(tool, json.dumps(request(task, folder, params, seed, results[tool]))) for tool in tools]
        done = sanitizer.run_tools(asked, TARGET, timeout_s=limit_s, env=environment, cwd=home)
        for tool, run in zip(tools, done, strict=True):
            runs[tool] = (run, read_points(results[tool]))
    return judge(task, folder, runs)


def read_points(path: Path) -> dict[int, dict[str, Any]]:
    """The target's line per point, by index (a line it could not finish is left out)."""
    found: dict[int, dict[str, Any]] = {}
    if not path.is_file():
        return found
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
            found[int(row["index"])] = row
        except (ValueError, KeyError, TypeError):
            continue
    return found


def side(file: str, folder: Path | None, files: Iterable[str] = ()) -> str:
    """Whose code a hazard's file is: the submission's (in ``folder``), the reference's
    (``kernels_cu/``), elsewhere (a library's), or unplaced (no line information).

    compute-sanitizer names a file by its name alone (``fw_blocked.cu:49``), so a name both folders
    hold is told apart by the task's ``files``: a point builds its own file from the submission and
    every other ``.cu`` file it launches from the reference (``Launch.from_copy``); a header both
    hold is the submission's (its own file includes it from its folder first). A path, where the
    tool prints one, decides by itself."""
    if not file:
        return UNPLACED
    path = Path(file)
    if path.is_absolute():
        where = Path(os.path.normpath(path))
        if folder is not None and where.is_relative_to(Path(os.path.normpath(Path(folder).resolve()))):
            return SUBMISSION
        if where.is_relative_to(KERNELS_DIR.resolve()):
            return REFERENCE
        return ELSEWHERE
    name = path.name
    mine = folder is not None and (Path(folder) / name).is_file()
    ours = (KERNELS_DIR / name).is_file()
    if mine and (name in set(files) or not ours or not name.endswith(".cu")):
        return SUBMISSION
    return REFERENCE if ours else ELSEWHERE


def describe(h: Hazard) -> str:
    """A hazard in one line, file names only: ``fw_blocked.cu:49: racecheck: a shared-memory write
    at fw_blocked.cu:49 races a shared-memory read at fw_blocked.cu:49 in fw_blocked_phase1 (31
    hazards)``."""
    count = f" ({h.count} hazards)" if h.count > 1 else ""
    severity = "" if h.severity == "error" else f" [{h.severity}]"
    return R.scrubbed(f"{h.where}: {h.tool}: {h.what}{count}{severity}")


def judge(
    task: ChapterTask | Batch,
    folder: Path | None,
    runs: Mapping[str, tuple[ToolRun, Mapping[int, Mapping[str, Any]]]],
) -> dict[str, dict[str, Any]]:
    """The verdict of each of ``task``'s files (see ``races``) from each tool's run and the target's
    line per point. A hazard in the subject's code (the submission's files, or the reference's where
    ``folder`` is None) is charged to the file it names, or, in a header, to every file of the task;
    one in the reference's code while a submission is checked, or one the tool could not place,
    leaves the files ``not checked``; so does a tool that did not finish or a point that did not run."""
    files = task.files
    own: dict[str, list[str]] = {f: [] for f in files}
    problems: dict[str, list[str]] = {f: [] for f in files}
    subject = SUBMISSION if folder is not None else REFERENCE
    seconds = max((run.seconds for run, _ in runs.values()), default=0.0)  # the tools run side by side
    for tool, (run, points) in runs.items():
        if not run.ran:
            _all(problems, files, R.scrubbed(run.reason or f"{tool} did not run"))
        for index, (point, file) in enumerate(task.points):
            row = points.get(index)
            if row is None:
                problems[file].append(f"{tool}: the point {point_label(point)} did not run to its end")
            elif row.get("status") != "ran":
                problems[file].append(R.scrubbed(f"{tool}: {point_label(point)}: {row.get('reason', '')}"))
        placed = 0
        for h in run.hazards:
            whose = side(h.file, folder, files)
            line = describe(h)
            if whose == subject:
                placed += 1
                for f in [h.name] if h.name in own else files:
                    own[f].append(line)
            elif whose == REFERENCE:
                placed += 1
                _all(problems, files, f"the reference's own code reports a hazard: {line}")
            elif whose == UNPLACED:
                placed += 1
                _all(problems, files, f"{tool} reported a hazard it could not place at a line: {line}")
            # ELSEWHERE: a library's kernel (CuPy's own reductions), no code of the lab's
        if run.ran and run.reported and not placed and not run.hazards:
            _all(problems, files, f"{tool} counted {run.reported} hazard(s) it did not describe")
    out = {}
    for f in files:
        if own[f]:
            more = f" (and {len(own[f]) - 1} more)" if len(own[f]) > 1 else ""
            out[f] = _verdict(R.RACE, own[f][0] + more, own[f], seconds)
        elif problems[f]:
            out[f] = _verdict(NOT_CHECKED, problems[f][0], [], seconds)
        else:
            out[f] = _verdict(R.OK, "", [], seconds)
    return out


def _all(problems: dict[str, list[str]], files: Iterable[str], why: str) -> None:
    for f in files:
        if why not in problems[f]:
            problems[f].append(why)


def _verdict(status: str, reason: str, hazards: list[str] | None = None, seconds: float = 0.0) -> dict[str, Any]:
    return {"status": status, "reason": reason, "hazards": list(hazards or []), "seconds": round(float(seconds), 2)}
