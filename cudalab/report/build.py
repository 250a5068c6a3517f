"""Building the report: run every chapter notebook with papermill, then stitch them.

``run`` is the whole build as a plain function: it takes what the command line parsed, returns a
``BuildSummary``, and raises ``CudalabError`` for a request it cannot start (unknown profile or
chapter, nothing recorded to replay, ``--record`` without a GPU). A chapter that fails does not
raise: it is shown in the report and marked in the summary, and the other chapters still run.
``build_report.py`` is its face (arguments, messages, exit status).

The steps, each a function below: resolve the request (the profile loaded and validated, the
only time in a build), pick the recording (replay), plan what the last build's folder lets it
keep, prepare the folder (the resolved profile written there for every notebook), run the
chapters, render the report, write the handouts, summarise (``build.json``), record.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudalab.chapter import catalog, declarations, recorded
from cudalab.chapter.profiles import RESOLVED, Profile, load_profile, resolve_profile_name, write_resolved
from cudalab.chapter.recorded import PROVENANCE, SCORECARD, SUMMARY
from cudalab.core import gpu
from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import BUILD_DIR, require_checkout
from cudalab.report import handout as handouts
from cudalab.report import order, outdir, recordings, replay_cache
from cudalab.report.execute import run_notebook
from cudalab.report.options import (
    SUBMISSION_DIR,
    SUBMISSION_JSON,
    YOURS_VERDICTS,
    BuildOptions,
    StudentFiles,
    dask_pool,
    options_from,
)
from cudalab.report.stitch import ChapterOutcome, cover_cell, references_cell, render_html, render_pdf, stitch

# a serial build's chapter: papermill, or a replay kept by its inputs where CUDALAB_REPLAY_CACHE asks
_run_chapter = replay_cache.cached(run_notebook)

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
        return [cid for cid, c in self.chapters.items() if c.get("reused") and not c.get("kept")]

    @property
    def kept(self) -> list[str]:
        """The earlier build's chapters that this one was not asked for (``--only``), left in place."""
        return [cid for cid, c in self.chapters.items() if c.get("kept")]


def _inputs(
    chapter: catalog.ChapterInfo, prof, mode: str, quick: bool, recording_dir: Path, submission: str | None = None
) -> str:
    """A digest of everything a chapter's run depends on: mode, the GPU (measure) or the recording
    (replay), its parameters, the fingerprint of kernels, package, notebook and profile, and a
    student's kernels (``_submission_key``; None in a build without them): every chapter of a
    student's build shows its section on the student's files, so none is ever another's."""
    from cudalab.core.provenance import source_fingerprint

    where = gpu.gpu_name() if mode == "measure" else str(recording_dir)
    recorded_here = recording_dir / chapter.id / PROVENANCE if mode == "replay" else None
    key = {
        "mode": mode,
        "where": where,
        "params": prof.chapter_params(chapter.id, quick),
        "source": source_fingerprint(chapter.path, prof.model_dump(mode="json"))["sha256"],
        "recording": recorded_here.read_text() if recorded_here and recorded_here.is_file() else "",
        "submission": submission,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _submission_key(submission: StudentFiles | None, limits: tuple[float, float]) -> str | None:
    """What a chapter of a student's build was measured with, as one digest: every accepted file's
    sha256 (its kernels and headers, as ``submission.json`` names them) and the limits its process
    ran under; None for a build without a student's kernels."""
    if submission is None:
        return None
    record = {"files": submission.sha256, "kernels": sorted(submission.kernels), "limits": list(limits)}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


UNKNOWN_SUBMISSION = "unknown: built before build.json named each chapter's submission"


def _submission_of(previous: dict[str, Any], entry: dict[str, Any]) -> str | None:
    """The submission an earlier build's chapter (its build.json ``entry``) was measured with:
    its key, None for a build without a student's kernels, or ``UNKNOWN_SUBMISSION`` for a
    student's build written before build.json named it (never the same as this build's)."""
    if "submission" in entry:
        return entry["submission"]
    return UNKNOWN_SUBMISSION if SUBMISSION_JSON in previous.get("files", []) else None


def _chapter_files(previous: dict[str, Any], chapter_id: str) -> list[str]:
    """The files the previous build listed for one chapter: its executed notebook and data folder."""
    return [
        f
        for f in previous.get("files", [])
        if f == f"notebooks/{chapter_id}.ipynb" or f.startswith(f"data/{chapter_id}/")
    ]


def _finished(out: Path, previous: dict) -> dict[str, dict]:
    """The chapters the previous build in ``out`` finished whose files are all still there: what
    a build may keep (``_reusable``) or carry over (``_carried``)."""
    done = {}
    for cid, c in (previous.get("chapters") or {}).items():
        files = _chapter_files(previous, cid)
        if c.get("ok") and files and all((out / f).is_file() for f in files):
            done[cid] = c
    return done


def _reusable(out: Path, previous: dict, inputs: dict[str, str]) -> dict[str, dict]:
    """The chapters of the previous build in ``out`` that finished with the same inputs and whose
    files are all still there."""
    return {cid: c for cid, c in _finished(out, previous).items() if c.get("inputs") and c["inputs"] == inputs.get(cid)}


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


def _your_verdicts(out: Path, outcomes: list[ChapterOutcome]) -> list[dict[str, Any]]:
    """A student's build: each chapter's verdict on each file it measured (its
    ``yours_verdicts.json``), and a chapter that failed or wrote none as not judged."""
    found: list[dict[str, Any]] = []
    for o in outcomes:
        path = out / "data" / o.id / YOURS_VERDICTS
        if o.ok and path.is_file():
            found += json.loads(path.read_text())
        elif not o.ok and declarations.of(o.id).yours:
            found.append({"file": "", "chapter": o.id, "said": "not judged: the chapter failed", "correct": False})
    return found


@dataclass
class _Request:
    """The build asked for, resolved: the validated profile, how the chapters run, which ones,
    where their recorded results come from (replay) and the output folder."""

    prof: Profile
    source: str  # the profile as given: a name, or a YAML file's absolute path
    gpu_max_threads: int | None  # the present GPU's threads-per-block limit the profile was checked against
    mode: str
    quick: bool
    chapters: list[catalog.ChapterInfo]
    out: Path
    notes: list[str] = field(default_factory=list)
    recording_dir: Path = Path()  # replay: the recording read
    why: str = ""  # replay: which recording, and why that one
    recording_name: str = ""  # replay: the recording's folder as the cover page names it
    submission: StudentFiles | None = None  # --kernels: a student's files, checked
    limits: tuple[float, float] = (30.0, 300.0)  # --kernels: seconds per point, per submission's chapter
    seed: int | None = None  # --kernels: the check inputs' seed (None: a fresh one)
    extra: list[str] = field(default_factory=list)  # --kernels: the staged copy and submission.json
    only: bool = False  # --only was given: the chapters it leaves out are kept from an earlier build

    @property
    def submission_key(self) -> str | None:
        """What this build's chapters are measured with (``_submission_key``), None without --kernels."""
        return _submission_key(self.submission, self.limits)


@dataclass
class _Plan:
    """The chapters' inputs and what the previous build into the same folder leaves to keep:
    ``reuse``, requested chapters it finished with the same inputs; ``carried``, chapters it
    finished that this build was not asked for (``--only``), left as they are and stitched in."""

    previous: dict[str, Any]
    inputs: dict[str, str]
    reuse: dict[str, dict[str, Any]]
    carried: dict[str, dict[str, Any]] = field(default_factory=dict)
    # chapters the previous build finished that this one runs again: set aside until they ran,
    # put back where an interrupt leaves none (cid -> its build.json entry)
    earlier: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept_why: dict[str, str] = field(default_factory=dict)  # each carried chapter: why it was kept


@dataclass
class _Ran:
    """What running the chapters gave: an outcome per chapter reached, and why the loop stopped early."""

    outcomes: list[ChapterOutcome]
    interrupted: bool = False
    stopped: bool = False  # --fail-fast, at a failed chapter

    @property
    def done(self) -> list[str]:
        return [o.id for o in self.outcomes]


@dataclass
class _Report:
    """The stitched report as written."""

    built_utc: str
    lab_gpu: str
    html: Path
    pdf: Path | None = None
    notes: list[str] = field(default_factory=list)  # why there is no PDF, where there is none
    extra: list[str] = field(default_factory=list)  # files besides the chapters' that build.json lists


def _resolve_request(profile: str, opts: BuildOptions, out: Path | None) -> _Request:
    """Step 1: the request checked and resolved: mode (measure on the GPU, or replay), the profile
    loaded and fully validated (the only time in the build), the chapters by name."""
    quick, record, replay = opts.quick, opts.record, opts.replay
    if record and quick:
        raise CudalabError("--record with --quick would replace the recorded full grid with the smoke-run grid")
    submission = _submission(opts, record)
    has_gpu = gpu.gpu_available()
    mode = "measure" if has_gpu and not replay else "replay"
    if record and mode != "measure":
        raise CudalabError("--record needs measurements, and no CUDA device is in use here")
    name_or_path = resolve_profile_name(profile)
    gpu_max_threads = gpu.attributes()["MaxThreadsPerBlock"] if has_gpu else None
    prof = load_profile(name_or_path, gpu_max_threads=gpu_max_threads)
    chapters = catalog.select(list(opts.only) or list(opts.measuring) or _chapters_for(submission))
    notes = []
    missing = [c for c in declarations.offering_ceilings() if c not in {ch.id for ch in chapters}]
    if submission is not None and mode == "measure" and missing:
        # a student's kernels are judged by this build's ceilings, as the lab's are
        chapters = catalog.select([*missing, *(c.id for c in chapters)])
        notes.append(f"--kernels measures {', '.join(missing)} too: your kernels are judged by its ceilings")
    elif record and chapters and missing:
        # Later chapters judge their kernels by the ceilings chapter 00 measures in the same run
        # (lab.ceilings; the chapters that offer them declare so): a recording without it would
        # keep fractions of no ceiling.
        chapters = catalog.select([*missing, *(c.id for c in chapters)])
        notes.append(
            f"--record measures {', '.join(missing)} too: the chapters recorded with it are judged by its ceilings"
        )
    out = (out or BUILD_DIR / (f"yours-{prof.name}" if submission else f"report-{prof.name}")).resolve()
    yaml_file = Path(name_or_path).suffix in (".yaml", ".yml")
    source = str(Path(name_or_path).resolve()) if yaml_file else name_or_path
    request = _Request(prof, source, gpu_max_threads, mode, quick, chapters, out, notes)
    request.submission = submission
    request.limits = (opts.point_limit, opts.submission_limit)
    request.seed = opts.seed
    request.only = bool(opts.only)
    return request


def _submission(opts: BuildOptions, record: bool) -> StudentFiles | None:
    """``--kernels``: the student's folder checked as text (nothing compiled yet); a
    ``CudalabError`` where nothing in it can be measured, or with ``--record``."""
    if opts.kernels is None:
        return None
    if record:
        raise CudalabError(
            "--record keeps the lab's own kernels' measurements: a build with --kernels is never recorded"
        )
    sub = opts.kernels  # read and checked by the grading room, once (grading.submission.check)
    if not hasattr(sub, "stage"):
        raise CudalabError(
            f"a student's kernels reach a build checked: pass cudalab.grading.submission.check({sub!r}) "
            "as BuildOptions.kernels (build_report.py --kernels does so)"
        )
    if not sub.kernels:
        why = "; ".join(f"{r.name}: {r.reason}" for r in sub.refused)
        raise CudalabError(f"--kernels {sub.folder}: nothing to measure ({why})")
    return sub


def _chapters_for(submission: StudentFiles | None) -> list[str]:
    """The chapters a build runs where neither ``only`` nor ``measuring`` names any: all of them
    without a submission. With one, the chapters that measure its files are grading's to pick
    (``grading.plan.chapters_measuring``, from the points each chapter's ``yours`` declares), and the
    caller passes them as ``measuring``: one rule, never a second one here."""
    if submission is None:
        return []
    raise CudalabError(
        "a build with a student's kernels measures the chapters that launch its files: pass them as "
        "BuildOptions(measuring=cudalab.grading.plan.chapters_measuring(files)) or --only "
        "(build_report.py --kernels does so)"
    )


def _pick_recording(request: _Request, opts: BuildOptions) -> None:
    """Step 2, in a replay: the recording to read (``from_gpu`` picks one of several GPUs'); the
    chapters it holds, where the whole book was asked for; and the recorded grid (``--quick``
    changes only what is measured)."""
    if request.mode != "replay":
        return
    prof, chapters, results = request.prof, request.chapters, opts.results
    rec, request.why = recorded.find(prof.name, results, opts.from_gpu)
    request.recording_dir = rec.path.resolve()
    request.recording_name = f"{results.name}/{rec.gpu}/{rec.profile}/"
    held = [c for c in chapters if (request.recording_dir / c.id / PROVENANCE).is_file()]
    if (
        not (opts.only or opts.measuring) and held and len(held) < len(chapters)
    ):  # a profile recorded for some chapters only
        left_out = ", ".join(c.id for c in chapters if c not in held)
        request.notes.append(
            f"the recording of {prof.name} holds {len(held)} of {len(chapters)} chapters; "
            f"left out: {left_out} (measure them on a GPU, or --only names one to see why)"
        )
        request.chapters = held
    if request.quick:
        request.notes.append("--quick only changes what is measured; a replay shows the recorded grid")
        request.quick = False


def _plan_reuse(request: _Request, force: bool) -> _Plan:
    """Step 3: the output folder checked (ours, or new), each chapter's inputs, the chapters the
    previous build there finished with the same inputs (kept unless ``force``), and those it
    finished that this build does not run (``_carried``)."""
    previous = outdir.check(request.out)
    key = request.submission_key
    inputs = {
        c.id: _inputs(c, request.prof, request.mode, request.quick, request.recording_dir, key)
        for c in request.chapters
    }
    reuse = {} if force else _reusable(request.out, previous, inputs)
    return _Plan(previous, inputs, reuse, _carried(request, previous))


def _carried(request: _Request, previous: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The chapters an earlier build of the same kind in this folder finished (the same profile,
    mode, grid and recording, or GPU, and the same student's files or none) that this build was
    not asked for: a ``--only`` build replaces its own chapters and leaves the others, whose files
    must all still be there. A chapter measured with another submission's files is never kept
    beside this one's."""
    asked = {c.id for c in request.chapters}
    same = (
        previous.get("profile") == request.prof.name
        and previous.get("mode") == request.mode
        and bool(previous.get("quick")) == request.quick
        and (request.mode != "replay" or previous.get("recording") == request.why)
    )
    if not same:
        return {}
    here = gpu.gpu_name() if request.mode == "measure" else None
    key = request.submission_key
    return {
        cid: c
        for cid, c in _finished(request.out, previous).items()
        if cid not in asked
        and (here is None or (c.get("provenance") or {}).get("gpu_name") == here)
        and _submission_of(previous, c) == key
    }


def _prepare_out(request: _Request, plan: _Plan, pdf: bool, log: Log) -> Path:
    """Step 4: the previous build's files that this build replaces removed (not the chapters it
    keeps or carries, nor a PDF a build without one leaves), the chapters it runs again set aside
    where they were measured with the same files (an interrupt puts them back; another
    submission's are removed), the folder's manifest rewritten to claim only what is kept until
    this build writes its own (a build killed half-way leaves no chapter of its own files under
    the earlier build's name), and the resolved profile written for the notebooks. Returns the
    resolved profile's path."""
    outdir.put_back_all(request.out)
    asked = {c.id for c in request.chapters}
    key = request.submission_key
    plan.earlier = {
        cid: c
        for cid, c in _finished(request.out, plan.previous).items()
        if cid in asked
        and cid not in plan.reuse
        and cid not in plan.carried
        and _submission_of(plan.previous, c) == key
    }
    other = [
        cid
        for cid, c in _finished(request.out, plan.previous).items()
        if cid in asked and cid not in plan.earlier and _submission_of(plan.previous, c) != key
    ]
    if other:
        log(
            f"note: the earlier build's {', '.join(other)} showed other kernel files than this build's: "
            "replaced, never kept (not even if this build is interrupted)"
        )
    outdir.set_aside(request.out, [f for cid in plan.earlier for f in _chapter_files(plan.previous, cid)])
    keep = {f for cid in [*plan.reuse, *plan.carried] for f in _chapter_files(plan.previous, cid)}
    if not pdf and "report.pdf" in plan.previous.get("files", []):
        keep.add("report.pdf")
        log("note: report.pdf is the earlier build's: this one writes no PDF (--format html)")
    removed = outdir.remove_previous(request.out, plan.previous, keep=keep)
    claimed = {*plan.reuse, *plan.carried, *plan.earlier}
    outdir.write_in_progress(request.out, plan.previous, claimed, removed)
    for sub in ("notebooks", "data"):
        (request.out / sub).mkdir(parents=True, exist_ok=True)
    if request.submission is not None:
        _write_submission(request, log)
    return write_resolved(
        request.prof, request.out / RESOLVED, source=request.source, gpu_max_threads=request.gpu_max_threads
    )


def _write_submission(request: _Request, log: Log) -> None:
    """A student's build: the accepted files copied into ``submission/`` of the output folder (where
    they compile; the student's folder and kernels_cu/ are only read) and ``submission.json``, which
    each chapter's cell tagged ``yours`` and the first page read."""
    sub = request.submission
    staged = sub.stage(request.out / SUBMISSION_DIR)
    record = {
        "folder": sub.folder.name,
        "files": sub.sha256,
        "kernels": sorted(sub.kernels),
        "refused": [{"name": r.name, "reason": r.reason} for r in sub.refused],
        "staged": SUBMISSION_DIR,
        "limits": {"point_s": request.limits[0], "submission_s": request.limits[1]},
        # every timed and check input of the student's points is drawn from it (grading.trials)
        "seed": request.seed if request.seed is not None else secrets.randbits(63),
    }
    atomic_write_text(request.out / SUBMISSION_JSON, json.dumps(record, indent=2))
    request.extra = [SUBMISSION_JSON, *(f"{SUBMISSION_DIR}/{p.name}" for p in staged.iterdir())]
    log(f"your kernels: {', '.join(sorted(sub.kernels))} from {sub.folder} (staged in {staged})")
    log(f"check inputs drawn with seed {record['seed']} (--seed {record['seed']} replays them)")


@dataclass
class ChapterJob:
    """One chapter to run: where its notebook goes and the parameters papermill passes it."""

    index: int  # 1-based, of ``total``
    total: int
    chapter: catalog.ChapterInfo
    notebook: Path
    params: dict[str, Any]


def _jobs(request: _Request, plan: _Plan, profile_file: Path, point_time_limit: float) -> list[ChapterJob]:
    """The chapters to run (those not kept from the last build), with their parameters."""
    jobs = []
    for i, chapter in enumerate(request.chapters, 1):
        if chapter.id in plan.reuse:
            continue
        params = {
            "profile": str(profile_file),
            "mode": request.mode,
            "data_dir": str(request.out / "data"),
            "recorded_dir": str(request.recording_dir) if request.mode == "replay" else "",
            "progress": False,
            "point_time_limit_s": float(point_time_limit),
            **request.prof.chapter_params(chapter.id, request.quick),
        }
        jobs.append(
            ChapterJob(i, len(request.chapters), chapter, request.out / "notebooks" / chapter.path.name, params)
        )
    return jobs


def _run_chapters(
    request: _Request, plan: _Plan, profile_file: Path, opts: BuildOptions, log: Log, pool: Any = None
) -> _Ran:
    """Step 5: the build announced, then each chapter kept from the last build, or run by papermill
    with the resolved profile and its parameters: one after another here, or as tasks on the Dask
    ``pool`` (``report.cluster``). Ctrl-C or SIGTERM from the announcement on keeps the finished
    chapters (and the report, marked incomplete, is still written)."""
    out, chapters, mode = request.out, request.chapters, request.mode
    ran = _Ran([])
    try:
        where = f"measuring on {gpu.gpu_name()}" if mode == "measure" else f"replaying {request.why}"
        if pool is not None:
            where += f"; on Dask: {pool.description}"
        log(f"cudalab: profile {request.prof.name}, {where}; {len(chapters)} chapter(s) -> {out}")
        for note in request.notes:
            log(f"note: {note}")
        if plan.carried:
            log(f"kept from the earlier build in {out} (not asked for): {', '.join(plan.carried)}")
        why = KEPT_ONLY if request.only else KEPT_NOT_ASKED
        plan.kept_why.update({cid: why for cid in plan.carried})
        ran.outcomes += [_kept(out, cid, old, why) for cid, old in plan.carried.items()]
        for i, chapter in enumerate(chapters, 1):
            if chapter.id in plan.reuse:
                old = plan.reuse[chapter.id]
                notebook = out / "notebooks" / chapter.path.name
                ran.outcomes.append(
                    ChapterOutcome(
                        chapter.id, chapter.title, notebook, True, "", old["seconds"], old["provenance"], reused=True
                    )
                )
                log(
                    f"[{i}/{len(chapters)}] {chapter.id}: unchanged since the last build here, kept "
                    f"(--force runs it again)"
                )
        jobs = _jobs(request, plan, profile_file, opts.point_time_limit)
        if mode == "replay":
            for job in jobs:
                for line in recorded.not_shown(
                    request.recording_dir / job.chapter.id, request.prof.chapter_params(job.chapter.id)
                ):
                    log(f"note: {job.chapter.id}: {line}; the replay shows the recording")
        if pool is not None:
            pool.run_chapters(
                jobs,
                out,
                ran,
                cell_timeout=opts.cell_timeout,
                fail_fast=opts.fail_fast,
                log=log,
                seconds=order.recorded_seconds(request.prof.name, opts.results),
            )
            request.notes += _ceilings_elsewhere(ran.outcomes) if mode == "measure" else []
        else:
            _run_serially(
                jobs,
                out,
                ran,
                cell_timeout=opts.cell_timeout,
                progress_bar=opts.progress_bar,
                fail_fast=opts.fail_fast,
                log=log,
            )
    except KeyboardInterrupt:
        ran.interrupted = True
        _put_back_earlier(request, plan, ran, log)
    outdir.drop_set_aside(out)
    in_order = [c.id for c in catalog.discover()]
    ran.outcomes.sort(key=lambda o: in_order.index(o.id) if o.id in in_order else len(in_order))
    return ran


KEPT_ONLY = "only"  # not asked for by this build's --only
KEPT_NOT_ASKED = "not asked"  # not asked for by a build that named no --only (a student's runs its files' chapters)
KEPT_INTERRUPTED = "interrupted"  # this build was interrupted before it ran the chapter again


def _kept(out: Path, chapter_id: str, old: dict[str, Any], why: str) -> ChapterOutcome:
    """An earlier build's complete chapter left in ``out`` as it was (its build.json entry ``old``),
    and why (``KEPT_ONLY``, ``KEPT_NOT_ASKED``, ``KEPT_INTERRUPTED``)."""
    info = catalog.chapter(chapter_id)
    notebook = out / "notebooks" / info.path.name
    outcome = ChapterOutcome(chapter_id, info.title, notebook, True, "", old["seconds"], old["provenance"], True, True)
    outcome.kept_why = why
    return outcome


def _put_back_earlier(request: _Request, plan: _Plan, ran: _Ran, log: Log) -> None:
    """After an interrupt: each chapter that did not finish this time and that the earlier build
    had complete, with the same student's files or none (``_prepare_out`` set only those aside),
    gets its earlier files back, kept and marked interrupted."""
    done = set(ran.done)
    for cid, old in plan.earlier.items():
        if cid in done:
            continue
        files = _chapter_files(plan.previous, cid)
        if sorted(outdir.put_back(request.out, files)) != sorted(files):
            continue
        plan.carried[cid] = old
        plan.kept_why[cid] = KEPT_INTERRUPTED
        ran.outcomes.append(_kept(request.out, cid, old, KEPT_INTERRUPTED))
        log(f"{cid}: not finished this time; the earlier build's complete chapter is kept")


def _ceilings_elsewhere(outcomes: list[ChapterOutcome]) -> list[str]:
    """On Dask, chapters measured on a GPU model other than chapter 00's: their fractions of the
    ceiling divide by ceilings chapter 00 measured on that other model, and the report says so."""
    by_id = {o.id: o.provenance.get("gpu_name") for o in outcomes if o.provenance}
    notes = []
    for offering in declarations.offering_ceilings():
        ceilings_gpu = by_id.get(offering)
        other = [cid for cid, name in by_id.items() if ceilings_gpu and name and name != ceilings_gpu]
        if other:
            notes.append(
                f"{', '.join(other)} ran on another GPU model than {offering} ({ceilings_gpu}), whose ceilings "
                f"their rooflines and fractions of the ceiling use"
            )
    return notes


def _run_serially(
    jobs: list[ChapterJob], out: Path, ran: _Ran, *, cell_timeout: int, progress_bar: bool, fail_fast: bool, log: Log
) -> None:
    """The chapters one after another in this process, each appended to ``ran`` as it ends."""
    for job in jobs:
        chapter, tag = job.chapter, f"[{job.index}/{job.total}] {job.chapter.id}"
        log(f"{tag} ...")
        t0 = time.time()
        try:
            ok, error = _run_chapter(chapter, job.notebook, job.params, cell_timeout, progress_bar)
        except KeyboardInterrupt:  # no partial chapter stays: its notebook and tables so far go
            _discard_partial(out, job)
            raise
        prov_path = out / "data" / chapter.id / PROVENANCE
        provenance = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
        ran.outcomes.append(
            ChapterOutcome(chapter.id, chapter.title, job.notebook, ok, error, time.time() - t0, provenance)
        )
        log(f"{tag}: {'ok' if ok else 'FAILED: ' + error.splitlines()[0][:300]} ({time.time() - t0:.0f} s)")
        if not ok and fail_fast:
            ran.stopped = True
            break


def _discard_partial(out: Path, job: ChapterJob) -> None:
    """An interrupted chapter's files removed: its executed notebook so far and its data folder
    (tables and provenance of the points it reached), which this build created."""
    import shutil

    job.notebook.unlink(missing_ok=True)
    shutil.rmtree(out / "data" / job.chapter.id, ignore_errors=True)


def _incomplete(request: _Request, ran: _Ran, log: Log) -> str:
    """Step 6: the cover page's sentence on chapters not run (interrupted or --fail-fast), or ""."""
    chapters = request.chapters
    asked = {c.id for c in chapters}
    done = [o.id for o in ran.outcomes if o.id in asked and not o.kept]  # not the chapters carried over
    earlier = [o.id for o in ran.outcomes if o.id in asked and o.kept]  # put back after an interrupt
    not_run = [c.id for c in chapters if c.id not in done]
    kept = f" (the earlier build's complete {', '.join(earlier)} kept)" if earlier else ""
    if ran.interrupted:
        log(
            f"interrupted: {len(done)} of {len(chapters)} chapters complete ({', '.join(done) or 'none'}); "
            f"not run: {', '.join(not_run)}{kept}; writing a report marked incomplete"
        )
    if not ((ran.interrupted or ran.stopped) and not_run):
        return ""
    return (
        f"The build was {'interrupted' if ran.interrupted else 'stopped at the first failure (--fail-fast)'} "
        f"after {len(done)} of {len(chapters)} chapters; not run: {', '.join(not_run)}{kept}."
    )


def _lab_gpu(prof: Profile) -> str:
    """The profile's lab GPU as the cover page and the handouts name it."""
    if not prof.device:
        return "none (no lab GPU in this profile)"
    return prof.device.name if prof.device.lab else f"{prof.device.name} (its specification: no lab ran on it)"


def _render_report(request: _Request, ran: _Ran, incomplete: str, command: str, pdf: bool, log: Log) -> _Report:
    """Step 7: the executed chapters stitched behind the cover page and followed by the references,
    rendered as HTML and, where asked and Chromium prints it, PDF."""
    prof, quick, outcomes = request.prof, request.quick, ran.outcomes
    report = _Report(dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), _lab_gpu(prof), Path())
    title = f"cudalab lab report: {prof.name}" + (" (quick grid)" if quick else "")
    book = stitch(
        outcomes,
        cover_cell(
            title=title,
            profile=prof.name,
            lab_gpu=report.lab_gpu,
            mode=request.mode,
            built_utc=report.built_utc,
            command=command,
            outcomes=outcomes,
            recording=request.recording_name,
            incomplete=incomplete,
            notes=tuple(request.notes),
            findings=_findings(request.out, outcomes),
            scorecards=_scorecards(request.out, outcomes),
            submission=json.loads((request.out / SUBMISSION_JSON).read_text()) if request.submission else None,
            verdicts=_your_verdicts(request.out, outcomes) if request.submission else None,
        ),
    )
    book.cells.append(references_cell(prof, [(o.id, o.title) for o in outcomes]))
    report.html = render_html(book, request.out / "report.html", title)
    log(f"report: {report.html}")
    if pdf and not ran.interrupted:
        report.pdf, why_not = render_pdf(report.html, request.out / "report.pdf")
        log(f"report: {report.pdf}" if report.pdf else f"note: {why_not}")
        if not report.pdf:
            report.notes.append(why_not)
    report.extra = ["report.html", "report.pdf", RESOLVED, outdir.BUILD_JSON, *request.extra]
    return report


def _write_handouts(
    request: _Request, ran: _Ran, report: _Report, kinds: list[handouts.Kind], pdf: bool, log: Log
) -> None:
    """Step 8: the student handout and the instructor's answer key, where asked, from the chapters
    that finished; their files join the report's."""
    source = {c.id: c.path for c in catalog.discover()}
    finished = [(o.id, o.title, source[o.id]) for o in ran.outcomes if o.ok and o.id in source]
    if ran.interrupted or not finished:
        return
    for kind in kinds:
        report.extra += handouts.write(
            kind,
            request.out,
            finished,
            profile=request.prof.name,
            lab_gpu=report.lab_gpu,
            measured_on=handouts.measured_on([o.provenance for o in ran.outcomes]),
            pdf=pdf,
            log=log,
        )


def _summarise(
    request: _Request, plan: _Plan, ran: _Ran, report: _Report, command: str, started: float
) -> BuildSummary:
    """Step 9: the build's summary, written as build.json with every file this build wrote."""
    summary = BuildSummary(
        profile=request.prof.name,
        mode=request.mode,
        quick=request.quick,
        built_utc=report.built_utc,
        command=command,
        wall_s=round(time.time() - started, 1),
        ok=all(o.ok for o in ran.outcomes) and not ran.interrupted,
        out=str(request.out),
        recording=request.why,
        report_html=str(report.html),
        report_pdf=str(report.pdf or ""),
        notes=request.notes + report.notes,
        interrupted=ran.interrupted,
        chapters={
            o.id: {
                "ok": o.ok,
                "error": o.error,
                "seconds": round(o.seconds, 1),
                "provenance": o.provenance,
                # a chapter kept from the earlier build keeps the inputs it was built with (one put
                # back after an interrupt was not rebuilt with this build's)
                "inputs": plan.carried[o.id].get("inputs") if o.id in plan.carried else plan.inputs.get(o.id),
                "reused": o.id in plan.reuse or o.id in plan.carried,
                "submission": request.submission_key,
                **({"kept": True, "kept_why": plan.kept_why.get(o.id, "")} if o.id in plan.carried else {}),
                **({"worker": o.worker} if o.worker else {}),
            }
            for o in ran.outcomes
        },
        files=outdir.written_files(request.out, ran.done, report.extra),
    )
    atomic_write_text(request.out / outdir.BUILD_JSON, json.dumps(asdict(summary), indent=2, default=str))
    return summary


def _record(summary: BuildSummary, request: _Request, results: Path, log: Log) -> None:
    """Step 10, with --record: the successful chapters copied into results/<gpu>/<profile>/ for replay."""
    dest = recordings.record(summary, request.out / "data", results, gpu.gpu_name() or "unknown GPU")
    summary.recorded_to = str(dest)
    log(f"recorded: {dest}")


def run(
    profile: str = "auto",
    options: BuildOptions | None = None,
    *,
    out: Path | None = None,
    command: str = "python build_report.py",
    log: Log = lambda msg: None,
    pool: Any = None,
    **changes: Any,
) -> BuildSummary:
    """Build the report for ``profile`` (a name in params/, a YAML path, or ``auto``) with
    ``options`` (``report.options.BuildOptions``; keyword ``changes`` adjust a few, as
    ``run("gtx680", force=True)``) into ``out``; see the module docstring. ``log`` receives a
    line per step.

    Resuming: a chapter that the previous build in ``out`` finished, with the same inputs (mode,
    GPU or recording, parameters, and the fingerprint of kernels, package, notebook and profile),
    is kept, not run again; ``force`` runs every chapter.

    On Dask (``workers`` or ``scheduler``) the chapters run as tasks (``report.cluster``, imported
    only then); an unreachable scheduler raises ``CudalabError`` before anything is written.
    ``pool``: a ``cluster.Pool`` already open (several profiles' builds share one,
    ``report.multi``); the build uses it and leaves it open."""
    opts = options_from(options, changes)
    require_checkout()
    started = time.time()
    request = _resolve_request(profile, opts, out)
    _pick_recording(request, opts)
    plan = _plan_reuse(request, opts.force or request.submission is not None)  # a student's build runs afresh
    with dask_pool(opts, request.mode, log, given=pool) as chapters_pool:
        with outdir.Lock(request.out), _stop_on_sigterm():
            profile_file = _prepare_out(request, plan, opts.pdf, log)
            ran = _run_chapters(request, plan, profile_file, opts, log, pool=chapters_pool)
            if chapters_pool is not None and pool is None:  # our workers are done with this folder
                chapters_pool.close()  # before the report reads it
            incomplete = _incomplete(request, ran, log)
            report = _render_report(request, ran, incomplete, command, opts.pdf, log)
            wanted = ((opts.handout, handouts.HANDOUT), (opts.answers, handouts.ANSWER_KEY))
            _write_handouts(request, ran, report, [kind for asked, kind in wanted if asked], opts.pdf, log)
            summary = _summarise(request, plan, ran, report, command, started)
    if opts.record and not ran.interrupted:
        _record(summary, request, opts.results, log)
    return summary
