"""Building the report: run every chapter notebook with papermill, then stitch them.

``run`` is the whole build as a plain function: it takes what the command line parsed, returns a
``BuildSummary``, and raises ``CudalabError`` for a request it cannot start (unknown profile or
chapter, nothing recorded to replay, ``--record`` without a GPU). A chapter that fails does not
raise: it is shown in the report and marked in the summary, and the other chapters still run.
``build_report.py`` is its face (arguments, messages, exit status).
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudalab.chapter import catalog, recorded
from cudalab.chapter.handle import resolve_profile_name
from cudalab.chapter.profiles import load_profile
from cudalab.chapter.recorded import PROVENANCE, SCORECARD, SUMMARY
from cudalab.core import gpu
from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import BUILD_DIR, NOTEBOOKS_DIR, RESULTS_DIR, require_checkout
from cudalab.report import handout as handouts
from cudalab.report import outdir, recordings
from cudalab.report.stitch import ChapterOutcome, cover_cell, references_cell, render_html, render_pdf, stitch

Log = Callable[[str], None]


@dataclass
class BuildSummary:
    """What a build did: written as ``build.json`` beside the report."""

    profile: str
    mode: str
    quick: bool
    built_utc: str
    command: str
    wall_s: float
    ok: bool
    out: str
    recording: str
    chapters: dict[str, dict[str, Any]] = field(default_factory=dict)
    report_html: str = ""
    report_pdf: str = ""
    notes: list[str] = field(default_factory=list)
    recorded_to: str = ""
    interrupted: bool = False
    made_by: str = outdir.MARKER
    files: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [cid for cid, c in self.chapters.items() if not c["ok"]]

    @property
    def reused(self) -> list[str]:
        return [cid for cid, c in self.chapters.items() if c.get("reused")]


def _run_chapter(
    chapter: catalog.ChapterInfo, out_nb: Path, params: dict, cell_timeout: int, progress_bar: bool
) -> tuple[bool, str]:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        # The kernel's own log stays quiet below errors: its "running over TCP" warning (a local kernel
        # on loopback, started and stopped by this build) would otherwise print once per chapter.
        papermill.execute_notebook(
            str(chapter.path),
            str(out_nb),
            parameters=params,
            kernel_name="python3",
            cwd=str(NOTEBOOKS_DIR),
            progress_bar=progress_bar,
            execution_timeout=cell_timeout,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
        return True, ""
    except PapermillExecutionError as exc:
        return False, f"{exc.ename}: {exc.evalue}"
    except Exception as exc:  # the kernel died, timed out, or could not start: the chapter failed
        return False, f"{type(exc).__name__}: {exc}"


def _inputs(chapter: catalog.ChapterInfo, prof, mode: str, quick: bool, recording_dir: Path) -> str:
    """A digest of everything a chapter's run depends on: mode, the GPU (measure) or the recording
    (replay), its parameters, and the fingerprint of kernels, package, notebook and profile."""
    import hashlib

    from cudalab.core.provenance import source_fingerprint

    where = gpu.gpu_name() if mode == "measure" else str(recording_dir)
    recorded_here = recording_dir / chapter.id / PROVENANCE if mode == "replay" else None
    key = {
        "mode": mode,
        "where": where,
        "params": prof.chapter_params(chapter.id, quick),
        "source": source_fingerprint(chapter.path, prof.model_dump(mode="json"))["sha256"],
        "recording": recorded_here.read_text() if recorded_here and recorded_here.is_file() else "",
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _reusable(out: Path, previous: dict, inputs: dict[str, str]) -> dict[str, dict]:
    """The chapters of the previous build in ``out`` that finished with the same inputs and whose
    files are all still there."""
    keep = {}
    for cid, c in (previous.get("chapters") or {}).items():
        files = [f for f in previous.get("files", []) if f == f"notebooks/{cid}.ipynb" or f.startswith(f"data/{cid}/")]
        if (
            c.get("ok")
            and c.get("inputs")
            and c["inputs"] == inputs.get(cid)
            and files
            and all((out / f).is_file() for f in files)
        ):
            keep[cid] = c
    return keep


class _stop_on_sigterm:
    """SIGTERM stops a build the way Ctrl-C does (KeyboardInterrupt), so both keep what finished."""

    def __enter__(self):
        def handler(signum, frame):
            raise KeyboardInterrupt

        try:
            self.previous = signal.signal(signal.SIGTERM, handler)
        except ValueError:  # not the main thread: leave signals alone
            self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _findings(out: Path, outcomes: list[ChapterOutcome]) -> dict[str, list[str]]:
    """Each finished chapter's headline sentences, from the summary.json it wrote in this build."""
    found = {}
    for o in outcomes:
        path = out / "data" / o.id / SUMMARY
        if o.ok and path.is_file():
            found[o.id] = [h.get("text", "") for h in json.loads(path.read_text()) if h.get("text")]
    return found


def _scorecards(out: Path, outcomes: list[ChapterOutcome]) -> dict[str, dict[str, Any]]:
    """Each finished chapter's scorecard (its row of the summary page), where it wrote one."""
    found = {}
    for o in outcomes:
        path = out / "data" / o.id / SCORECARD
        if o.ok and path.is_file():
            found[o.id] = json.loads(path.read_text())
    return found


def run(
    profile: str = "auto",
    *,
    only: list[str] | None = None,
    out: Path | None = None,
    quick: bool = False,
    record: bool = False,
    replay: bool = False,
    results: Path = RESULTS_DIR,
    from_gpu: str | None = None,
    pdf: bool = True,
    cell_timeout: int = 1800,
    command: str = "python build_report.py",
    log: Log = lambda msg: None,
    progress_bar: bool = False,
    force: bool = False,
    fail_fast: bool = False,
    point_time_limit: float = 120.0,
    handout: bool = False,
    answers: bool = False,
) -> BuildSummary:
    """Build the report for ``profile`` (a name in params/, a YAML path, or ``auto``); see the
    module docstring. ``log`` receives a line per step; ``from_gpu`` picks the recording to
    replay where several GPUs recorded the profile.

    Resuming: a chapter that the previous build in ``out`` finished, with the same inputs (mode,
    GPU or recording, parameters, and the fingerprint of kernels, package, notebook and profile),
    is kept, not run again; ``force`` runs every chapter. ``fail_fast`` stops at the first failed
    chapter. ``point_time_limit`` (seconds) skips a sweep point whose one call runs longer.
    ``handout`` and ``answers`` also write the student handout and the instructor's answer key
    (``handout/`` and ``answers/`` in ``out``), from the same run."""
    require_checkout()
    if record and quick:
        raise CudalabError("--record with --quick would replace the recorded full grid with the smoke-run grid")
    started = time.time()
    has_gpu = gpu.gpu_available()
    mode = "measure" if has_gpu and not replay else "replay"
    if record and mode != "measure":
        raise CudalabError("--record needs measurements, and no CUDA device is in use here")
    profile_arg = resolve_profile_name(profile)
    prof = load_profile(profile_arg, gpu_max_threads=gpu.attributes()["MaxThreadsPerBlock"] if has_gpu else None)
    chapters = catalog.select(only)
    recording_dir, why, recording_name = Path(), "", ""
    notes: list[str] = []
    if mode == "replay":
        rec, why = recorded.find(prof.name, results, from_gpu)
        recording_dir = rec.path.resolve()
        recording_name = f"{results.name}/{rec.gpu}/{rec.profile}/"
        held = [c for c in chapters if (recording_dir / c.id / PROVENANCE).is_file()]
        if not only and held and len(held) < len(chapters):  # a profile recorded for some chapters only
            left_out = ", ".join(c.id for c in chapters if c not in held)
            notes.append(
                f"the recording of {prof.name} holds {len(held)} of {len(chapters)} chapters; "
                f"left out: {left_out} (measure them on a GPU, or --only names one to see why)"
            )
            chapters = held
    if quick and mode == "replay":
        notes.append("--quick only changes what is measured; a replay shows the recorded grid")
        quick = False
    out = (out or BUILD_DIR / f"report-{prof.name}").resolve()
    previous = outdir.check(out)
    inputs = {c.id: _inputs(c, prof, mode, quick, recording_dir) for c in chapters}
    reuse = {} if force else _reusable(out, previous, inputs)
    with outdir.Lock(out), _stop_on_sigterm():
        keep = {
            f
            for cid in reuse
            for f in previous.get("files", [])
            if f == f"notebooks/{cid}.ipynb" or f.startswith(f"data/{cid}/")
        }
        outdir.remove_previous(out, previous, keep=keep)
        for sub in ("notebooks", "data"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        where = f"measuring on {gpu.gpu_name()}" if mode == "measure" else f"replaying {why}"
        log(f"cudalab: profile {prof.name}, {where}; {len(chapters)} chapter(s) -> {out}")
        for note in notes:
            log(f"note: {note}")

        profile_param = (
            profile_arg if Path(profile_arg).suffix not in (".yaml", ".yml") else str(Path(profile_arg).resolve())
        )
        outcomes: list[ChapterOutcome] = []
        interrupted = stopped = False
        try:  # Ctrl-C or SIGTERM anywhere in the loop: keep the finished chapters, report the rest
            for i, chapter in enumerate(chapters, 1):
                if chapter.id in reuse:
                    old = reuse[chapter.id]
                    outcomes.append(
                        ChapterOutcome(
                            chapter.id,
                            chapter.title,
                            out / "notebooks" / chapter.path.name,
                            True,
                            "",
                            old["seconds"],
                            old["provenance"],
                            reused=True,
                        )
                    )
                    log(
                        f"[{i}/{len(chapters)}] {chapter.id}: unchanged since the last build here, kept "
                        f"(--force runs it again)"
                    )
                    continue
                params = {
                    "profile": profile_param,
                    "mode": mode,
                    "data_dir": str(out / "data"),
                    "recorded_dir": str(recording_dir) if mode == "replay" else "",
                    "progress": False,
                    "point_time_limit_s": float(point_time_limit),
                    **prof.chapter_params(chapter.id, quick),
                }
                log(f"[{i}/{len(chapters)}] {chapter.id} ...")
                if mode == "replay":
                    for line in recorded.not_shown(recording_dir / chapter.id, prof.chapter_params(chapter.id)):
                        log(f"note: {chapter.id}: {line}; the replay shows the recording")
                t0 = time.time()
                ok, error = _run_chapter(
                    chapter, out / "notebooks" / chapter.path.name, params, cell_timeout, progress_bar
                )
                prov_path = out / "data" / chapter.id / PROVENANCE
                provenance = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
                outcomes.append(
                    ChapterOutcome(
                        chapter.id,
                        chapter.title,
                        out / "notebooks" / chapter.path.name,
                        ok,
                        error,
                        time.time() - t0,
                        provenance,
                    )
                )
                log(
                    f"[{i}/{len(chapters)}] {chapter.id}: {'ok' if ok else 'FAILED: ' + error.splitlines()[0][:300]}"
                    f" ({time.time() - t0:.0f} s)"
                )
                if not ok and fail_fast:
                    stopped = True
                    break
        except KeyboardInterrupt:
            interrupted = True
        done = [o.id for o in outcomes]
        not_run = [c.id for c in chapters if c.id not in done]
        incomplete = (
            f"The build was {'interrupted' if interrupted else 'stopped at the first failure (--fail-fast)'} "
            f"after {len(done)} of {len(chapters)} chapters; not run: {', '.join(not_run)}."
            if (interrupted or stopped) and not_run
            else ""
        )
        if interrupted:
            log(
                f"interrupted: {len(done)} of {len(chapters)} chapters complete ({', '.join(done) or 'none'}); "
                f"not run: {', '.join(not_run)}; writing a report marked incomplete"
            )
        built = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        title = f"cudalab lab report: {prof.name}" + (" (quick grid)" if quick else "")
        lab_gpu = (
            "none (no lab GPU in this profile)"
            if not prof.device
            else prof.device.name
            if prof.device.lab
            else f"{prof.device.name} (its specification: no lab ran on it)"
        )
        book = stitch(
            outcomes,
            cover_cell(
                title=title,
                profile=prof.name,
                lab_gpu=lab_gpu,
                mode=mode,
                built_utc=built,
                command=command,
                outcomes=outcomes,
                recording=recording_name,
                incomplete=incomplete,
                notes=tuple(notes),
                findings=_findings(out, outcomes),
                scorecards=_scorecards(out, outcomes),
            ),
        )
        book.cells.append(references_cell(prof, [(o.id, o.title) for o in outcomes]))
        html_path = render_html(book, out / "report.html", title)
        log(f"report: {html_path}")
        summary = BuildSummary(
            profile=prof.name,
            mode=mode,
            quick=quick,
            built_utc=built,
            command=command,
            wall_s=0.0,
            ok=all(o.ok for o in outcomes) and not interrupted,
            out=str(out),
            recording=why,
            report_html=str(html_path),
            notes=notes,
            interrupted=interrupted,
            chapters={
                o.id: {
                    "ok": o.ok,
                    "error": o.error,
                    "seconds": round(o.seconds, 1),
                    "provenance": o.provenance,
                    "inputs": inputs[o.id],
                    "reused": o.id in reuse,
                }
                for o in outcomes
            },
        )
        if pdf and not interrupted:
            pdf_path, why_not = render_pdf(html_path, out / "report.pdf")
            summary.report_pdf = str(pdf_path or "")
            log(f"report: {pdf_path}" if pdf_path else f"note: {why_not}")
            if not pdf_path:
                summary.notes.append(why_not)
        extra = ["report.html", "report.pdf", outdir.BUILD_JSON]
        source = {c.id: c.path for c in chapters}
        finished = [(o.id, o.title, source[o.id]) for o in outcomes if o.ok]
        for wanted, kind in ((handout, handouts.HANDOUT), (answers, handouts.ANSWER_KEY)):
            if wanted and not interrupted and finished:
                extra += handouts.write(
                    kind,
                    out,
                    finished,
                    profile=prof.name,
                    lab_gpu=lab_gpu,
                    measured_on=handouts.measured_on([o.provenance for o in outcomes]),
                    pdf=pdf,
                    log=log,
                )
        summary.wall_s = round(time.time() - started, 1)
        summary.files = outdir.written_files(out, done, extra)
        atomic_write_text(out / outdir.BUILD_JSON, json.dumps(asdict(summary), indent=2, default=str))
    if record and not interrupted:
        dest = recordings.record(summary, out / "data", results, gpu.gpu_name() or "unknown GPU")
        summary.recorded_to = str(dest)
        log(f"recorded: {dest}")
    return summary
