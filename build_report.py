#!/usr/bin/env python3
"""Build the cudalab lab report; run with --help for the options.

The face of ``cudalab.report.build.run``: it parses the command line, prints progress and
messages on stderr, and owns the exit status (0 all chapters ran, 1 a chapter failed or, with
``--kernels``, a student's file was not correct, 2 a request that could not start).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudalab.chapter.profiles import available_profiles
from cudalab.core.errors import CudalabError
from cudalab.core.limits import POINT_LIMIT_S, SUBMISSION_LIMIT_S
from cudalab.core.paths import RESULTS_DIR
from cudalab.report.options import BuildOptions

DESCRIPTION = """\
Build the cudalab lab report: execute every chapter notebook (notebooks/NN_*.ipynb) with
papermill against the GPU profile's sweep grid, record tidy results with their provenance,
and stitch all executed notebooks into one HTML (and, where Chromium is installed, PDF) report.

With a CUDA device present the chapters measure on it. Without one, the report is replayed
from results this same pipeline recorded on a real GPU (results/<gpu>/<profile>/), and its
first page says so and names the GPU."""

EPILOG = """\
examples:
  python build_report.py --gpu gtx680            the lab's GTX 680 grid and published numbers
  python build_report.py --gpu h100 --quick      a small grid, for a smoke run on a GPU
  python build_report.py --only 01 --out /tmp/r  one chapter into a chosen folder
  python build_report.py --gpu h100 --record     measure, then keep the results for replay
  python build_report.py --gpu gtx680 --from h100
                                                 replay the gtx680 profile as recorded on an H100
  python build_report.py --gpu gtx680,h100 --out /tmp/r
                                                 two reports, /tmp/r/gtx680/ and /tmp/r/h100/, and /tmp/r/index.html
  python build_report.py --compare results/nvidia-h100-80gb-hbm3/gtx680 results/nvidia-h100-80gb-hbm3/h100
                                                 one report comparing two recordings (no GPU needed)
  python build_report.py --compare nvidia-h100-80gb-hbm3/h100 nvidia-h200/h200 lab
                                                 the H100 and the H200, each on its own profile,
                                                 and the lab's published numbers
  python build_report.py --kernels mine/ --only 04
                                                 your fw_blocked.cu (copied into mine/) measured
                                                 beside the reference in chapter 04's report
  python build_report.py --grade class/ --gpu h100 --out build/grade
                                                 a class graded: class/<student>/*.cu, each in a
                                                 process of its own; scoreboard.csv/.html, a page each

profiles: {profiles}
output folder: a build writes only inside --out, and deletes only what an earlier cudalab build listed
  in its build.json there and this one replaces: --only keeps the earlier build's other chapters (same
  profile, mode and grid) in the report, --format html keeps its PDF; it refuses the checkout's own
  folders and a non-empty folder it did not make.
on Dask (--workers, --scheduler): chapters run as tasks, one GPU each; a chapter whose worker dies runs once
  more on another worker, then fails with the reason (exit 1) while the others complete. With several
  profiles, all their chapters are tasks on the one cluster, and each report is stitched when its own are done.
several profiles (--gpu a,b): all are checked before any work; without Dask they build one after another,
  and a profile that fails never stops the others (exit 1 if any failed).
a student's kernels (--kernels DIR): DIR holds .cu files named as the kernel files they replace
  (kernels_cu/fw_blocked.cu -> DIR/fw_blocked.cu) and .cuh headers of their own; each chapter that
  measures such a file sets it beside the reference at its declared points, in a process of its own,
  checked as the reference is. Without a GPU it is compiled for the profile's GPU (registers, spills,
  SASS) beside the reference. Files are read, never written; kernels_cu/ is never changed. The console
  then says a verdict per file and chapter (correct and N.NNx the reference, wrong, race, does not
  compile FILE:LINE, ..., or compiled only); exit status 0 only when every file compiled and was
  correct (or was compiled only, without a GPU), else 1, with the report written.
grading (--grade DIR): one folder per student; exit status 0 when every submission was graded, whatever
  their results; 2 bad arguments (one line, before any work); 1 the grader itself failed.
exit status: 0 all chapters ran; 1 a chapter failed (the report is still written); 2 bad arguments, an
  unsafe output folder or an unreachable Dask scheduler; 130 interrupted (Ctrl-C or SIGTERM: finished chapters are kept and the
  report is marked incomplete)."""


def _seconds(text: str) -> float:
    """A non-negative number of seconds, for argparse (its error exits with status 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give seconds >= 0 (0: no limit)")
    return value


def _cell_timeout(text: str) -> int:
    """``--cell-timeout``: whole seconds a notebook cell may run, 0 for no limit."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds >= 0 (0: no limit)")
    return int(text)


def _positive(text: str) -> int:
    """``--workers``: a whole number of workers, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers (1 or more)")
    return int(text)


def _formats(text: str) -> tuple[str, ...]:
    """``--format``: a comma-separated subset of html,pdf; the HTML is always written (the PDF prints it)."""
    chosen = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    unknown = [f for f in chosen if f not in ("html", "pdf")]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown format {', '.join(unknown) or repr(text)}: choose from html, pdf")
    return tuple(dict.fromkeys(("html", *chosen)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="build_report.py",
        description=DESCRIPTION,
        epilog=EPILOG.format(profiles=", ".join(available_profiles())),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--gpu",
        metavar="NAME|PATH[,...]",
        default="auto",
        help="GPU profile: a name from params/ or a path to a YAML file (default 'auto': the detected GPU's "
        "profile; without a GPU, gtx680). What it picks depends on the job: a report (and --kernels, "
        "--record, --handout) is built with that profile's grid, lab GPU and published numbers; several, "
        "comma-separated: one report per profile in --out/<profile>/ and an index.html linking them. "
        "With --grade, one profile: without a GPU here, the submissions compile for the GPU it is sized "
        "for (its gpu: compute_capability). With --compare, one profile: only its recordings are compared",
    )
    parser.add_argument(
        "--only", nargs="+", metavar="CHAPTER", help="only these chapters, by number (01) or name (01_block_size)"
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="output folder (default: build/report-<profile>)")
    parser.add_argument(
        "--quick", action="store_true", help="use the profile's small 'quick' grid: a smoke run in a minute or two"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="after measuring, copy each successful chapter's results into "
        "results/<gpu>/<profile>/ for replay (GPU only)",
    )
    parser.add_argument("--replay", action="store_true", help="replay recorded results even where a GPU is present")
    parser.add_argument(
        "--from",
        dest="from_gpu",
        metavar="GPU",
        help="replay the recording made on this GPU (a folder name under results/ or part of "
        "the GPU's name, e.g. h100); default: the newest recording of the profile",
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="SOURCE",
        help="instead of a lab report, one report comparing recordings (two or more): each SOURCE is a "
        "folder under results/ (results/<gpu>/<profile>), part of a GPU's name as --from takes it (the "
        "recording of --gpu's profile on that GPU), or 'lab' (the profile's published numbers); per chapter "
        "in common: the headlines side by side with ratios labelled same/faster/slower by the recorded "
        "spread, the main figures with one colour per source, what changed in the lesson, and every timed "
        "table joined on the points the sources share (the others listed). Nothing is measured",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS_DIR,
        metavar="DIR",
        help="where recorded results live (default: results/)",
    )
    parser.add_argument(
        "--format",
        dest="formats",
        type=_formats,
        default=("html", "pdf"),
        metavar="html[,pdf]",
        help="what to write: html,pdf (default) or html; the PDF is the HTML printed by headless "
        "Chromium (Debian: apt-get install chromium); without it the HTML still comes out",
    )
    parser.add_argument("--no-pdf", action="store_true", help="the same as --format html")
    parser.add_argument(
        "--handout",
        action="store_true",
        help="also write the student handout (handout/: the whole lab and one file per chapter): "
        "aim, kernel listings, launch configurations, what to measure, an empty results "
        "table and discussion questions with space for answers; no measured result",
    )
    parser.add_argument(
        "--answers",
        action="store_true",
        help="also write the instructor's answer key (answers/): the handout plus this run's "
        "results and a model answer to each question, written from this run's data",
    )
    parser.add_argument(
        "--cell-timeout",
        type=_cell_timeout,
        default=1800,
        metavar="SECONDS",
        help="fail a notebook cell that runs longer than this (default: 1800; 0: no limit)",
    )
    parser.add_argument(
        "--point-time-limit",
        type=_seconds,
        default=120.0,
        metavar="SECONDS",
        help="skip (with its reason) a sweep point whose one timed call runs longer than this; "
        "a running kernel is not interrupted, the limit is checked after each call "
        "(default: 120; 0: no limit)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="run every chapter; by default a chapter that the last build into --out finished "
        "with the same inputs (GPU or recording, parameters, source) is kept",
    )
    dask = parser.add_mutually_exclusive_group()
    dask.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="run the chapters as tasks on a local Dask cluster: one worker per GPU (dask-cuda, at most N) "
        "where chapters measure, else N process workers (replay)",
    )
    dask.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the chapters as tasks on a running Dask cluster (e.g. tcp://node:8786, from `dask scheduler` "
        "with `dask cuda worker` or `dask worker --nthreads 1`); its workers must see this checkout and --out",
    )
    yours = parser.add_argument_group("a student's kernels, a class graded")
    yours.add_argument(
        "--kernels",
        type=Path,
        metavar="DIR",
        help="your kernel files (named as the kernels_cu/ files they replace) measured beside the reference "
        "in every chapter that launches them; the report's first page names them and their sha256",
    )
    yours.add_argument(
        "--grade",
        type=Path,
        metavar="SUBMISSIONS",
        help="grade a class instead of building a report: SUBMISSIONS/<student>/*.cu; writes scoreboard.csv, "
        "scoreboard.html and students/<student>.html into --out (default: build/grade-<folder name>)",
    )
    yours.add_argument(
        "--cases",
        type=Path,
        metavar="DIR",
        help="with --grade: an instructor's hidden inputs, solved by every submission of the chapters that take "
        "them (NTHU graphs *.in for chapter 04) and checked byte for byte against the reference solver's answer, "
        "computed in the grader's own process",
    )
    yours.add_argument(
        "--sweep",
        action="store_true",
        help="with --grade, on a GPU: each submission also at every point of its chapter's sweep that builds from "
        "its file (the points the profile's recording on this GPU measured), checked as the graded points are, "
        "and drawn on the student's page beside the reference and the ceiling. Without it, grading keeps to the "
        "graded points (minutes for a class); with it, expect many times longer (--submission-limit still holds)",
    )
    yours.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="with --kernels/--grade: the seed every timed and check input is drawn from (default: a fresh one, "
        "printed; give the printed one to replay a run on the same inputs)",
    )
    yours.add_argument(
        "--point-limit",
        type=_seconds,
        default=POINT_LIMIT_S,
        metavar="SECONDS",
        help="with --kernels/--grade: stop a submission's process when one point (its compile, launches and "
        f"check) runs longer than this, and mark it timed out (default: {POINT_LIMIT_S:g})",
    )
    yours.add_argument(
        "--submission-limit",
        type=_seconds,
        default=SUBMISSION_LIMIT_S,
        metavar="SECONDS",
        help="with --kernels/--grade: the wall-clock limit for one submission's points in one chapter "
        f"(default: {SUBMISSION_LIMIT_S:g})",
    )
    parser.add_argument("--fail-fast", action="store_true", help="stop at the first chapter that fails")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    return parser.parse_args(argv)


_log_open = True


def _log(msg: str) -> None:
    """A progress line on stderr. If the reader has gone (``build_report.py ... | head``), the
    build goes on silently and finishes its report, rather than dying half-way."""
    global _log_open
    if not _log_open:
        return
    try:
        print(msg, file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        _log_open = False


def options(args: argparse.Namespace) -> BuildOptions:
    """The command line's build options, one typed value for every kind of build (one profile,
    several, a comparison)."""
    return BuildOptions(
        only=tuple(args.only or ()),
        quick=args.quick,
        record=args.record,
        replay=args.replay,
        results=args.results,
        from_gpu=args.from_gpu,
        pdf="pdf" in args.formats and not args.no_pdf,
        cell_timeout=args.cell_timeout,
        progress_bar=sys.stderr.isatty(),
        force=args.force,
        fail_fast=args.fail_fast,
        point_time_limit=args.point_time_limit,
        handout=args.handout,
        answers=args.answers,
        workers=args.workers,
        scheduler=args.scheduler,
        kernels=args.kernels,
        measuring=tuple(getattr(args, "measuring", ()) or ()),
        point_limit=args.point_limit,
        submission_limit=args.submission_limit,
        seed=args.seed,
    )


def _guarded(build: Callable[[], Any], args: argparse.Namespace, interrupted: str) -> tuple[Any, int | None]:
    """``build()``'s result, or the exit status of what stopped it, said in one line: a request that
    cannot start (``CudalabError``: 2), Ctrl-C (130, ``interrupted``), a bug (1; ``--debug`` shows
    its traceback)."""
    try:
        return build(), None
    except CudalabError as exc:
        _log(f"error: {exc}")
        return None, 2
    except KeyboardInterrupt:
        _log(interrupted)
        return None, 130
    except Exception as exc:  # a bug, not a bad request: one line unless asked for the traceback
        if args.debug:
            raise
        _log(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return None, 1


PATH_OPTIONS = ("kernels", "grade", "cases", "out", "results")  # folders a child process may be handed


def _absolute(args: argparse.Namespace) -> None:
    """Every folder the command line names, made absolute once, before any work: a chapter's kernel
    and a submission's worker run in folders of their own (the worker in a temporary home), where
    ``../cases`` would name nothing. ``--grade``'s default ``--out`` (``build/grade-<folder>``, from
    here) too."""
    if args.grade is not None and args.out is None:
        args.out = Path("build") / f"grade-{Path(os.path.abspath(args.grade)).name}"
    for name in PATH_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            setattr(args, name, Path(os.path.abspath(value)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python build_report.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    clash = _clash(args)
    if clash:
        _log(f"error: {clash}")
        return 2
    _absolute(args)
    if args.compare:
        return _compare(args, command)
    if args.grade is not None:
        return _grade(args)
    if args.kernels is not None:
        # the student's folder read once: what is checked here is what is hashed, staged and compiled
        from cudalab.grading.submission import check

        args.kernels = check(args.kernels)
        if not args.only:
            chapters, why = _chapters_measuring(args.kernels)
            if why:
                _log(f"error: {why}")
                return 2
            args.measuring = chapters  # not --only: the report names why a chapter was kept by what was asked
    if "," in args.gpu:
        return _several(args, command)
    if args.out is not None:  # an unsafe output folder refused before papermill and nbconvert load (1.5 s)
        from cudalab.report import outdir

        _, status = _guarded(lambda: outdir.check(args.out), args, "interrupted; nothing written")
        if status is not None:
            return status
    from cudalab.report.build import run  # after --help: papermill and nbconvert load slowly

    summary, status = _guarded(
        lambda: run(args.gpu, options(args), out=args.out, command=command, log=_log),
        args,
        "interrupted; chapters that finished keep their tables in the output folder, the report was not written",
    )
    if status is not None:
        return status
    if summary.interrupted:
        return 130
    if summary.reused:
        _log(f"kept unchanged from the last build: {', '.join(summary.reused)} (--force runs them again)")
    correct, status = (True, None) if args.kernels is None else _say_verdicts(Path(summary.out), args)
    if status is not None:
        return status
    if summary.failed:
        _log(f"FAILED chapters: {', '.join(summary.failed)} (shown in the report); exit status 1")
        return 1
    if not correct:
        said = f"the report says more: {summary.report_html}"
        _log(f"your kernels: not every file compiled and was correct ({said}); exit status 1")
        return 1
    _log(f"done in {summary.wall_s:.0f} s")
    return 0


# ---- --kernels: the verdict on the console

NO_GPU = "no GPU: compiled only; nothing timed, no case solved"
REPLAYED = "--replay: compiled only; nothing timed, no case solved"


def _say_verdicts(out: Path, args: argparse.Namespace) -> tuple[bool, int | None]:
    """The verdict lines of a student's build printed (``_verdicts``); (every file correct, None),
    or (False, the exit status) where reading them failed."""
    said, status = _guarded(lambda: _verdicts(out, bool(args.only)), args, "interrupted")
    if status is not None:
        return False, status
    lines, correct = said
    for line in lines:
        _log(line)
    return correct, None


def _verdicts(out: Path, only_given: bool) -> tuple[list[str], bool]:
    """``--kernels``: one line per submitted file and chapter, read after the build from each
    chapter's ``data/<chapter>/yours.csv`` in ``out``: correct and how fast beside the reference,
    or what went wrong (wrong, race, above the ceiling, does not compile FILE:LINE, does not fit,
    any other status as it is), or compiled only (no GPU); a line per refused file. Returns the
    lines and whether every submitted file compiled and was correct (or was compiled only, without
    a GPU). A file no chapter of the build measured counts against it unless ``--only`` left it
    out (``only_given``)."""
    from cudalab.core.gpu import gpu_available
    from cudalab.grading.plan import measured_files
    from cudalab.report.options import SUBMISSION_JSON

    built = json.loads((out / "build.json").read_text())
    record = json.loads((out / SUBMISSION_JSON).read_text())
    timed = built.get("mode") == "measure"
    lines, correct = ([] if timed else [REPLAYED if gpu_available() else NO_GPU]), True
    for refused in record.get("refused", []):
        lines.append(f"your {refused['name']}: refused, never compiled: {refused['reason']}")
        correct = False
    measured, chapters = measured_files(), built.get("chapters") or {}
    for file in record.get("kernels", []):
        mine = [c for c in chapters if c in measured.get(file, [])]
        if not mine:
            why = (
                "--only left out the chapters that measure it" if only_given else "no chapter of this build measured it"
            )
            lines.append(f"your {file}: not measured: {why}")
            correct = correct and only_given
        for chapter in mine:
            said, good = _verdict(out, chapter, file, chapters[chapter], timed)
            lines.append(f"your {file} in {chapter}: {said}")
            correct = correct and good
    return lines, correct


def _verdict(out: Path, chapter: str, file: str, entry: dict[str, Any], timed: bool) -> tuple[str, bool]:
    """One file's verdict in one chapter (``grading.file_verdicts``), as the chapter wrote it
    (``yours_verdicts.json``: its graded points and its sweep's) or, from a build before it did, from
    its rows (``source`` yours) of ``yours.csv``; and whether it is correct (or compiled only, untimed)."""
    import pandas as pd

    from cudalab.grading import file_verdicts
    from cudalab.grading import results as R
    from cudalab.report.options import YOURS_VERDICTS

    if not entry.get("ok"):
        return "not judged: the chapter failed (the report shows its error)", False
    judged = out / "data" / chapter / YOURS_VERDICTS  # the chapter's own judgement, its sweep's points too
    if judged.is_file():
        for v in json.loads(judged.read_text()):
            if v.get("file") == file:
                return v["said"], bool(v["correct"])
    path = out / "data" / chapter / "yours.csv"
    if not path.is_file():
        return f"not judged: the chapter wrote no data/{chapter}/yours.csv", False
    frame = pd.read_csv(path)
    rows = frame[frame["source"].astype(str).eq(R.YOURS) & frame["file"].astype(str).eq(file)]
    if not len(rows):
        return f"not judged: data/{chapter}/yours.csv has no row of your {file}", False
    verdict = file_verdicts.of_file(rows, file, chapter, timed)
    return verdict.said, verdict.correct


def _several(args: argparse.Namespace, command: str) -> int:
    """``--gpu a,b``: one report per profile and an index; every profile is checked first (a bad
    one is one line and exit status 2, with nothing written)."""
    from cudalab.report import multi

    summary, status = _guarded(
        lambda: multi.run(multi.split_profiles(args.gpu), options(args), out=args.out, command=command, log=_log),
        args,
        "interrupted; finished chapters are kept in each profile's folder",
    )
    if status is not None:
        return status
    if summary.interrupted:
        return 130
    correct = True
    for profile in summary.profiles if args.kernels is not None else ():
        folder = Path(summary.out) / profile.folder
        if profile.error or not (folder / "build.json").is_file():
            continue
        said, status = _guarded(lambda f=folder: _verdicts(f, bool(args.only)), args, "interrupted")
        if status is not None:
            return status
        for line in said[0]:
            _log(f"{profile.profile}: {line}")
        correct = correct and said[1]
    if summary.failed:
        _log(f"FAILED profiles: {', '.join(summary.failed)} (see the index); exit status 1")
        return 1
    if not correct:
        _log("your kernels: not every file compiled and was correct in every profile (see its report); exit status 1")
        return 1
    _log("done")
    return 0


def _chapters_measuring(sub) -> tuple[list[str], str]:
    """``--kernels``: the chapters that launch one of the checked folder's kernel files, by the points
    their declarations measure a student's copy at (``grading.plan.chapters_measuring``); (chapters,
    why not) where none does. A folder with nothing to measure is left to the build, which says why."""
    from cudalab.grading.plan import chapters_measuring, measured_files

    kernels = sub.kernels
    chapters = chapters_measuring(kernels)
    if kernels and not chapters:
        return [], (
            f"--kernels: no chapter measures a student's {', '.join(kernels)}; the files a chapter measures: "
            + ", ".join(measured_files())
        )
    return chapters, ""


def _clash(args: argparse.Namespace) -> str:
    """Options that do not go together, said in one line ("" where none)."""
    if args.cases is not None and args.grade is None:
        return "--cases adds hidden inputs to a class graded: give --grade SUBMISSIONS too"
    if args.sweep and args.grade is None:
        return "--sweep widens a class's grading to each chapter's sweep: give --grade SUBMISSIONS too (--kernels always sweeps)"
    if args.grade is not None and (args.kernels is not None or args.compare or args.record or args.handout):
        return "--grade writes a scoreboard; it takes none of --kernels, --compare, --record, --handout"
    if args.kernels is not None and args.compare:
        return "--kernels measures your files in a report of their own; --compare measures nothing"
    return ""


def _grade(args: argparse.Namespace) -> int:
    """``--grade``: a class graded into --out; 0 when every submission was graded (whatever their
    results), 2 for a bad request (one line, before any work), 1 if the grader failed."""
    from cudalab.grading import class_grading, grade, isolate

    def run() -> tuple[grade.Graded, dict[str, Path]]:
        options = grade.GradeOptions(
            submissions=args.grade,
            out=args.out,  # absolute (``_absolute``): the submissions' processes run in folders of their own
            arch=grade.arch_for(_one_profile(args, "--grade")),
            sweep=args.sweep,
            profile=_one_profile(args, "--grade"),
            only=tuple(args.only or ()),
            limits=isolate.Limits(args.point_limit or 1e9, args.submission_limit or 1e9),
            workers=args.workers,
            cases=args.cases,
            seed=args.seed,
        )
        return class_grading.run(options, _log)

    done, status = _guarded(run, args, "interrupted; the scoreboard was not written")
    if status is not None:
        return status
    graded, written = done
    for line in grade.console_lines(graded):
        _log(line)
    _log("wrote " + ", ".join(str(p) for p in list(written.values())[:2]) + f" and {len(written) - 3} student page(s)")
    return 1 if graded.failures else 0


def _one_profile(args: argparse.Namespace, job: str) -> str | None:
    """``--gpu`` where a job takes one profile (``--grade``, ``--compare``): None for "auto" (the job
    decides: the present GPU, every recording); a list is a ``CudalabError`` naming the job."""
    if args.gpu == "auto":
        return None
    if "," in args.gpu:
        raise CudalabError(f"{job} takes one profile with --gpu, not a list ({args.gpu})")
    return args.gpu


def _compare(args: argparse.Namespace, command: str) -> int:
    """``--compare``: the comparison report; a bad source (missing, single, nothing in common) is
    one line and exit status 2, with nothing written."""
    from cudalab.report.compare.report import run as compare

    summary, status = _guarded(
        lambda: compare(
            args.compare,
            options(args),
            profile=_one_profile(args, "--compare"),
            out=args.out,
            command=command,
            log=_log,
        ),
        args,
        "interrupted; nothing written",
    )
    if status is not None:
        return status
    if summary.failed:
        _log(f"FAILED chapters: {', '.join(summary.failed)} (each shows its reason in the report); exit status 1")
        return 1
    _log(f"done in {summary.wall_s:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
