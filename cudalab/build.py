"""``build_report.py``: run every chapter notebook with papermill, then stitch the report."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Optional

from cudalab import catalog, gpu
from cudalab.chapter import PROVENANCE, resolve_profile_name
from cudalab.paths import BUILD_DIR, NOTEBOOKS_DIR, RESULTS_DIR
from cudalab.profiles import ProfileError, available_profiles, load_profile
from cudalab.report import ChapterOutcome, cover_cell, render_html, render_pdf, stitch

DESCRIPTION = """\
Build the cudalab lab report: execute every chapter notebook (notebooks/NN_*.ipynb) with
papermill against the GPU profile's sweep grid, record tidy results with their provenance,
and stitch all executed notebooks into one HTML (and, where Chromium is installed, PDF) report.

With a CUDA device present the chapters measure on it. Without one, the report is replayed
from results this same pipeline recorded on a real GPU (results/<profile>/), and its first
page says so."""

EPILOG = """\
examples:
  python build_report.py --gpu gtx680            the lab's GTX 680 grid and published numbers
  python build_report.py --gpu h100 --quick      a small grid, for a smoke run on a GPU
  python build_report.py --only 01 --out /tmp/r  one chapter into a chosen folder
  python build_report.py --gpu h100 --record     measure, then keep the results for replay

profiles: {profiles}
exit status: 0 all chapters ran; 1 a chapter failed (the report is still written); 2 bad arguments."""


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="build_report.py", description=DESCRIPTION,
                                     epilog=EPILOG.format(profiles=", ".join(available_profiles())),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", metavar="NAME|PATH", default="auto",
                        help="GPU profile: a name from params/ or a path to a YAML file "
                             "(default: the detected GPU's profile; without a GPU, gtx680)")
    parser.add_argument("--only", nargs="+", metavar="CHAPTER",
                        help="only these chapters, by number (01) or name (01_block_size)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="output folder (default: build/report-<profile>)")
    parser.add_argument("--quick", action="store_true",
                        help="use the profile's small 'quick' grid: a smoke run in a minute or two")
    parser.add_argument("--record", action="store_true",
                        help="after measuring, copy each successful chapter's results into "
                             "results/<profile>/ for replay (GPU only)")
    parser.add_argument("--replay", action="store_true",
                        help="replay recorded results even where a GPU is present")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, metavar="DIR",
                        help="where recorded results live (default: results/)")
    parser.add_argument("--no-pdf", action="store_true", help="write the HTML report only")
    parser.add_argument("--cell-timeout", type=int, default=1800, metavar="SECONDS",
                        help="fail a notebook cell that runs longer than this (default: 1800)")
    return parser.parse_args(argv)


RECORDINGS = "recordings.json"


def merge_recordings(previous: dict, build: dict) -> dict:
    """The recording log of a profile: for each chapter, the build that recorded it last
    (its command, date, wall time and the chapter's own run time). Chapters that
    failed in ``build`` keep their earlier recording."""
    chapters = dict(previous.get("chapters", {}))
    for chapter_id, c in build["chapters"].items():
        if c["ok"]:
            chapters[chapter_id] = {"seconds": c["seconds"], "git_commit": c["provenance"].get("git_commit"),
                                    "gpu_name": c["provenance"].get("gpu_name"),
                                    "build": {**{k: build[k] for k in ("command", "built_utc", "wall_s")},
                                              "chapters_ok": {k: v["ok"] for k, v in build["chapters"].items()}}}
    return {"profile": build["profile"], "chapters": dict(sorted(chapters.items()))}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _run_chapter(chapter: catalog.ChapterInfo, out_nb: Path, params: dict, cell_timeout: int) -> tuple[bool, str]:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        papermill.execute_notebook(str(chapter.path), str(out_nb), parameters=params, kernel_name="python3",
                                   cwd=str(NOTEBOOKS_DIR), progress_bar=sys.stderr.isatty(),
                                   execution_timeout=cell_timeout)
        return True, ""
    except PapermillExecutionError as exc:
        return False, f"{exc.ename}: {exc.evalue}"
    except Exception as exc:  # the kernel died, timed out, or could not start
        return False, f"{type(exc).__name__}: {exc}"


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.record and args.quick:
        _log("error: --record with --quick would replace the recorded full grid with the smoke-run grid")
        return 2
    started = time.time()
    has_gpu = gpu.gpu_available()
    mode = "measure" if has_gpu and not args.replay else "replay"
    if args.record and mode != "measure":
        _log("error: --record needs measurements, and no CUDA device is in use here")
        return 2
    try:
        profile_arg = resolve_profile_name(args.gpu)
        profile = load_profile(profile_arg, gpu_max_threads=gpu.attributes()["MaxThreadsPerBlock"] if has_gpu else None)
        chapters = catalog.select(args.only)
    except (ProfileError, ValueError) as exc:
        _log(f"error: {exc}")
        return 2
    recorded = args.results / profile.name
    if mode == "replay" and not recorded.is_dir():
        have = sorted(p.name for p in args.results.glob("*") if p.is_dir())
        _log(f"error: no CUDA device here and no recorded results for profile {profile.name!r} in {args.results}; "
             f"recorded profiles: {', '.join(have) or 'none'}")
        return 2
    out = (args.out or BUILD_DIR / f"report-{profile.name}").resolve()
    for sub in ("notebooks", "data"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    where = gpu.gpu_name() if mode == "measure" else f"replay of {recorded}"
    if args.quick and mode == "replay":
        _log("note: --quick only changes what is measured; a replay shows the recorded grid")
        args.quick = False
    _log(f"cudalab: profile {profile.name}, {mode} ({where}), {len(chapters)} chapter(s) -> {out}")

    profile_param = profile_arg if Path(profile_arg).suffix not in (".yaml", ".yml") else str(Path(profile_arg).resolve())
    os.environ["CUDALAB_BATCH"] = "1"
    outcomes = []
    for i, chapter in enumerate(chapters, 1):
        params = {"profile": profile_param, "mode": mode, "data_dir": str(out / "data"),
                  "recorded_dir": str(recorded.resolve()), **profile.chapter_params(chapter.id, args.quick)}
        _log(f"[{i}/{len(chapters)}] {chapter.id} ...")
        t0 = time.time()
        ok, error = _run_chapter(chapter, out / "notebooks" / chapter.path.name, params, args.cell_timeout)
        prov_path = out / "data" / chapter.id / PROVENANCE
        provenance = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
        outcomes.append(ChapterOutcome(chapter.id, chapter.title, out / "notebooks" / chapter.path.name, ok,
                                       error, time.time() - t0, provenance))
        _log(f"[{i}/{len(chapters)}] {chapter.id}: {'ok' if ok else 'FAILED: ' + error.splitlines()[0][:300]}"
             f" ({time.time() - t0:.0f} s)")

    built = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    command = "python build_report.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    title = f"cudalab lab report: {profile.name}" + (" (quick grid)" if args.quick else "")
    lab_gpu = profile.device.name if profile.device else "none (no lab GPU in this profile)"
    book = stitch(outcomes, cover_cell(title=title, profile=profile.name, lab_gpu=lab_gpu, mode=mode,
                                       built_utc=built, command=command, outcomes=outcomes))
    html_path = render_html(book, out / "report.html", title)
    _log(f"report: {html_path}")
    if not args.no_pdf:
        pdf, why = render_pdf(html_path, out / "report.pdf")
        _log(f"report: {pdf}" if pdf else f"note: {why}")

    all_ok = all(o.ok for o in outcomes)
    summary = {"profile": profile.name, "mode": mode, "quick": args.quick, "built_utc": built, "command": command,
               "wall_s": round(time.time() - started, 1), "ok": all_ok,
               "chapters": {o.id: {"ok": o.ok, "error": o.error, "seconds": round(o.seconds, 1),
                                   "provenance": o.provenance} for o in outcomes}}
    (out / "build.json").write_text(json.dumps(summary, indent=2, default=str))

    if args.record:
        recorded.mkdir(parents=True, exist_ok=True)
        for o in outcomes:
            if o.ok:
                dest = recorded / o.id
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(out / "data" / o.id, dest)
                _log(f"recorded: {dest}")
        log = recorded / RECORDINGS
        previous = json.loads(log.read_text()) if log.is_file() else {}
        log.write_text(json.dumps(merge_recordings(previous, summary), indent=2, default=str))
    failed = [o.id for o in outcomes if not o.ok]
    if failed:
        _log(f"FAILED chapters: {', '.join(failed)} (shown in the report); exit status 1")
        return 1
    _log(f"done in {time.time() - started:.0f} s")
    return 0
