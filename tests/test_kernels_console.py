"""The console says the verdict of a student's build (issue 65, item 8, the --kernels half):
``build_report.py --kernels DIR`` prints one line per submitted file and chapter, read from each
chapter's ``data/<chapter>/yours.csv`` after the build, and its exit status is 0 only where every
submitted file compiled and was correct (or was compiled only, without a GPU); 1 otherwise, with
the report still written. Without a GPU it says that nothing was timed.

The build itself is stood in for here (a folder as a finished build leaves it: ``build.json``,
``submission.json`` and the chapters' ``yours.csv``), so these run in a second; one real build
without a GPU is tests/test_yours_report.py's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import build_report  # noqa: E402  (the face, at the checkout's root)

FW = "fw_blocked.cu"
CHAPTER = "04_blocking_factor"
P1, P2 = "n=3000, block_factor=32, kernel=shared", "n=3000, block_factor=64, kernel=registers"


def _finished_build(
    out: Path,
    yours: dict[str, list[dict]],
    *,
    mode: str = "measure",
    kernels: tuple[str, ...] = (FW,),
    refused: tuple[dict, ...] = (),
    failed: tuple[str, ...] = (),
) -> Path:
    """``out`` as a finished student's build leaves it: each chapter of ``yours`` ok (but those in
    ``failed``), its rows written as the chapter's ``yours.csv``."""
    chapters = {c: {"ok": c not in failed, "error": "", "seconds": 1.0, "provenance": {}} for c in [*yours, *failed]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "build.json").write_text(json.dumps({"mode": mode, "chapters": chapters, "made_by": "cudalab build"}))
    record = {
        "folder": "mine",
        "files": dict.fromkeys(kernels, "0" * 64),
        "kernels": list(kernels),
        "refused": list(refused),
    }
    (out / "submission.json").write_text(json.dumps(record))
    for chapter, rows in yours.items():
        (out / "data" / chapter).mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(out / "data" / chapter / "yours.csv", index=False)
    return out


def _measured(status: str, speed: float | None = None, point: str = P1, reason: str = "", file: str = FW) -> list[dict]:
    """A point's two rows as a measured chapter writes them (grading.section.measured)."""
    base = {"point": point, "file": file, "time_ms": 10.0, "fraction_of_ceiling": 0.5}
    return [
        {**base, "source": "reference", "status": "ok", "reason": "", "speed_vs_reference": 1.0},
        {**base, "source": "yours", "status": status, "reason": reason, "speed_vs_reference": speed},
    ]


def test_a_correct_file_is_said_with_its_speed_beside_the_reference(tmp_path):
    """The bug: --kernels printed "done" whatever the student's kernel did; the verdict was only in
    the report. One point: its ratio; several: their geometric mean and each."""
    one = _finished_build(tmp_path / "one", {CHAPTER: _measured("ok", 1.25)})
    lines, correct = build_report._verdicts(one, only_given=False)
    assert lines == [f"your {FW} in {CHAPTER}: correct and 1.25x the reference"] and correct
    two = _finished_build(tmp_path / "two", {CHAPTER: _measured("ok", 2.0) + _measured("ok", 0.5, P2)})
    lines, correct = build_report._verdicts(two, only_given=False)
    assert correct and lines == [
        f"your {FW} in {CHAPTER}: correct and 1.00x the reference (geometric mean of 2 points: "
        f"2.00x at {P1}, 0.50x at {P2})"
    ]


@pytest.mark.parametrize(
    "status, reason, said",
    [
        ("wrong", "12 of 9,000,000 entries differ", f"wrong at {P1}: 12 of 9,000,000 entries differ"),
        ("race", "a shared-memory hazard in phase 3", f"race at {P1}: a shared-memory hazard in phase 3"),
        ("above the ceiling", "", f"above the ceiling at {P1}"),
        ("does not compile", f'{FW}:103: expected a ";"', f'does not compile {FW}:103: expected a ";"'),
        ("does not fit the launch", "phase3 takes 4 parameters", "does not fit the launch: phase3 takes 4 parameters"),
        ("timed out", "stopped after 30 s, the limit per point", f"timed out at {P1}: stopped after 30 s"),
        ("melted", "", f"melted at {P1}"),  # a status this face does not know is said as it is
    ],
)
def test_a_file_that_is_not_correct_is_said_and_fails_the_exit_status(tmp_path, status, reason, said):
    """The bug: a wrong, racing, too fast, broken or misfit kernel exited 0 with "done", and a
    status added later (the lead's "race", "above the ceiling") would have been dropped. A
    speed is never given for a result that is not correct."""
    rows = _measured(status, None, reason=reason) + _measured("ok", 1.5, P2)
    lines, correct = build_report._verdicts(_finished_build(tmp_path, {CHAPTER: rows}), only_given=False)
    assert not correct and len(lines) == 1, lines
    assert lines[0].startswith(f"your {FW} in {CHAPTER}: {said}"), lines
    assert "x the reference" not in lines[0]


def test_without_a_gpu_a_compiled_file_is_compiled_only_and_passes(tmp_path, monkeypatch):
    """The bug: without a GPU the console did not say that nothing was timed. A file that compiled
    is "compiled only" (exit 0); one that does not compile says the compiler's FILE:LINE."""
    from cudalab.core import gpu

    monkeypatch.setattr(gpu, "gpu_available", lambda: False)
    compiled = [  # grading.section.compiled: a row per kernel function, no point, no time
        {"file": FW, "source": src, "kernel": k, "registers_per_thread": 40, "status": "ok", "reason": ""}
        for src in ("reference", "yours")
        for k in ("fw_blocked_phase1", "fw_blocked_phase3")
    ]
    out = _finished_build(tmp_path / "ok", {CHAPTER: compiled}, mode="replay")
    lines, correct = build_report._verdicts(out, only_given=False)
    assert correct and lines == [build_report.NO_GPU, f"your {FW} in {CHAPTER}: compiled only"]
    assert build_report.NO_GPU == "no GPU: compiled only; nothing timed, no case solved"
    broken = compiled[:2] + [{"file": FW, "source": "yours", "status": "does not compile", "reason": f"{FW}:7: oops"}]
    lines, correct = build_report._verdicts(_finished_build(tmp_path / "no", {CHAPTER: broken}, mode="replay"), False)
    assert not correct and lines[-1] == f"your {FW} in {CHAPTER}: does not compile {FW}:7: oops"


def test_a_refused_file_a_failed_chapter_and_an_unmeasured_file_fail_the_exit_status(tmp_path):
    """The bug: a file refused before it compiled, or a chapter that failed before it judged the
    file, left the exit status at 0 although nothing said the file was correct."""
    refused = ({"name": "fw_coalesced.cu", "reason": '#include "/etc/passwd" names a path'},)
    out = _finished_build(tmp_path / "r", {CHAPTER: _measured("ok", 1.0)}, refused=refused)
    lines, correct = build_report._verdicts(out, only_given=False)
    assert not correct and lines[0].startswith("your fw_coalesced.cu: refused, never compiled: #include")
    out = _finished_build(tmp_path / "f", {}, failed=(CHAPTER,))
    lines, correct = build_report._verdicts(out, only_given=False)
    assert not correct and lines == [
        f"your {FW} in {CHAPTER}: not judged: the chapter failed (the report shows its error)"
    ]
    # a second file that no chapter of this build measured: against the status, unless --only left it out
    out = _finished_build(tmp_path / "u", {CHAPTER: _measured("ok", 1.0)}, kernels=(FW, "fw_shared_tile.cu"))
    lines, correct = build_report._verdicts(out, only_given=False)
    assert not correct and "your fw_shared_tile.cu: not measured: no chapter of this build measured it" in lines
    lines, correct = build_report._verdicts(out, only_given=True)
    assert correct and "your fw_shared_tile.cu: not measured: --only left out the chapters that measure it" in lines


@pytest.mark.parametrize("verdict, status", [("ok", 0), ("wrong", 1)])
def test_the_exit_status_of_kernels_is_0_only_when_every_file_is_correct(
    tmp_path, monkeypatch, capsys, verdict, status
):
    """The bug: ``--kernels`` exited 0 whatever the verdicts. The build (stood in for here) wrote its
    report; the face reads the verdicts from it and sets the exit status: 1 for a wrong file."""
    from cudalab.report import build as report_build
    from cudalab.report.build import BuildSummary

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / FW).write_text("// mine\n")
    out = tmp_path / "out"

    def built(profile, options, *, out, command, log):
        _finished_build(out, {CHAPTER: _measured(verdict, 1.1 if verdict == "ok" else None)})
        (out / "report.html").write_text("<html></html>")
        summary = BuildSummary(
            profile, "measure", False, "", command, 1.0, True, str(out), "", report_html=str(out / "report.html")
        )
        summary.chapters = {CHAPTER: {"ok": True}}
        return summary

    monkeypatch.setattr(report_build, "run", built)
    assert build_report.main(["--kernels", str(mine), "--gpu", "h100", "--out", str(out)]) == status
    said = capsys.readouterr().err
    assert f"your {FW} in {CHAPTER}: " + ("correct and 1.10x the reference" if status == 0 else "wrong") in said
    assert ("exit status 1" in said) == bool(status) and (out / "report.html").is_file()
