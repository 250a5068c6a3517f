"""``build_report.py --grade``, the job: one ``run(options)`` whose steps a reader can list, over
``grade`` (the grading itself) and ``pages`` (what it writes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalab.core.errors import CudalabError
from cudalab.grading import cases, pages, plan
from cudalab.grading.grade import Graded, GradeOptions, Log, grade, students


def run(options: GradeOptions, log: Log = print) -> tuple[Graded, dict[str, Path]]:
    """``--grade``, end to end, one step after another:

    1. the class folder read (a bad one is one line, before any work, ``students``);
    2. each instructor's hidden case read as its chapter reads it (``cases.check_folder``);
    3. the output folder claimed (``pages.prepare``: never one cudalab did not make);
    4. every submission graded (``grade``: checked, compiled, run isolated, judged, ranked);
    5. the scoreboard and a page per student written (``pages.write``).

    Returns what was graded and the files written; ``console_lines`` says it in a terminal."""
    found = students(options.submissions)
    if options.cases is not None:
        if not Path(options.cases).is_dir():
            raise CudalabError(
                f"--cases {options.cases}: not a folder (give a folder of case files, e.g. NTHU *.in graphs)"
            )
        counted = cases.check_folder(options.cases, plan.case_takers(options.only))
        log("hidden cases: " + ", ".join(f"{n} for {chapter}" for chapter, n in counted.items() if n))
    options = replace(options, out=pages.prepare(options.out))
    log(f"grading {len(found)} submission(s) from {options.submissions} into {options.out}")
    graded = grade(options, log)
    klass = Path(options.submissions).resolve().name
    return graded, pages.write(graded, options.out, title=f"Scoreboard: {klass}", klass=klass)
