"""Several profiles in one build (``--gpu a,b``): one report per profile, each a normal cudalab
build folder ``<out>/<profile>/`` with its own ``build.json``, and ``<out>/index.html`` linking
them with their status.

Every profile is resolved (and its recording found, in a replay) before any work, so a bad name
writes nothing. Without Dask the profiles build one after another, as a single one does; a
profile that fails (a chapter, or its build) never costs the others. With ``--workers`` or
``--scheduler`` one cluster serves them all: each profile's build runs in a thread of its own and
submits its chapters to the shared pool (one task per profile and chapter), and stitches its
report when its own chapters are done. The parent folder follows ``outdir``'s rules: it is ours
(its ``build.json`` lists only the index), or new, or empty.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import BUILD_DIR, require_checkout
from cudalab.report import outdir
from cudalab.report.build import BuildSummary, _pick_recording, _resolve_request, _stop_on_sigterm
from cudalab.report.build import run as build_one
from cudalab.report.options import BuildOptions, dask_pool, options_from

Log = Callable[[str], None]
INDEX = "index.html"


@dataclass
class ProfileResult:
    """One profile's build as the index shows it: its summary, or the error that stopped it."""

    profile: str
    folder: str
    ok: bool = False
    failed: list[str] = field(default_factory=list)
    error: str = ""
    interrupted: bool = False
    mode: str = ""
    recording: str = ""


@dataclass
class MultiSummary:
    """What a several-profile build did: written as the parent's ``build.json``."""

    out: str
    built_utc: str
    command: str
    profiles: list[ProfileResult]
    made_by: str = outdir.MARKER
    files: list[str] = field(default_factory=lambda: [INDEX])

    @property
    def failed(self) -> list[str]:
        return [p.profile for p in self.profiles if not p.ok]

    @property
    def interrupted(self) -> bool:
        return any(p.interrupted for p in self.profiles)


def split_profiles(text: str) -> list[str]:
    """``--gpu a,b,c`` as a list of names (or YAML paths); one name is a list of one."""
    return [p.strip() for p in text.split(",") if p.strip()]


def _validate(profiles: list[str], out: Path | None, opts: BuildOptions) -> tuple[list[str], str, Path]:
    """Each profile resolved as its build will resolve it (``CudalabError`` for a bad one, before
    anything is written); returns the profiles' names, the mode they run in, and the parent folder."""
    names, mode = [], "replay"
    for given in profiles:
        request = _resolve_request(given, opts, None)
        _pick_recording(request, opts)
        if request.prof.name in ("", ".", "..") or Path(request.prof.name).name != request.prof.name:
            raise CudalabError(f"profile name {request.prof.name!r} (from {given}) cannot name a folder of --out")
        if request.prof.name in names:
            raise CudalabError(f"profile {request.prof.name!r} is named twice in --gpu")
        names.append(request.prof.name)
        mode = request.mode
    parent = (out or BUILD_DIR / f"report-{'+'.join(names)}").resolve()
    outdir.check(parent)
    for name in names:
        outdir.check(parent / name)
    return names, mode, parent


def _one(given: str, name: str, parent: Path, log: Log, pool: Any, opts: BuildOptions, command: str) -> ProfileResult:
    """One profile's build into ``parent/name``; any error is its own, kept for the index."""
    result = ProfileResult(name, name)
    try:
        summary: BuildSummary = build_one(
            given, opts, out=parent / name, command=command, log=lambda m: log(f"{name}: {m}"), pool=pool
        )
    except CudalabError as exc:
        result.error = str(exc)
    except Exception as exc:  # a bug in one profile's build: shown, and the others go on
        result.error = f"internal error: {type(exc).__name__}: {exc}"
    else:
        result.ok, result.failed, result.interrupted = summary.ok, summary.failed, summary.interrupted
        result.mode, result.recording = summary.mode, summary.recording
    if result.error:
        log(f"{name}: FAILED: {result.error}")
    return result


def run(
    profiles: list[str],
    options: BuildOptions | None = None,
    *,
    out: Path | None = None,
    command: str = "python build_report.py",
    log: Log = lambda msg: None,
    **changes: Any,
) -> MultiSummary:
    """Build one report per profile into ``out/<profile>/`` and the index, each with ``options``
    (``report.options.BuildOptions``, adjusted by keyword ``changes``). Raises ``CudalabError``
    for a request that cannot start (any bad profile, an unsafe folder, an unreachable
    scheduler), with nothing written."""
    opts = options_from(options, changes)
    require_checkout()
    names, mode, parent = _validate(profiles, out, opts)
    with dask_pool(opts, mode, log) as pool:
        with outdir.Lock(parent), _stop_on_sigterm():
            outdir.remove_previous(parent, outdir.check(parent))  # an earlier index (or single build)
            summary = MultiSummary(str(parent), dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), command, [])
            _write(parent, summary)  # ours from the start, so a build stopped half-way can be resumed here
            log(f"cudalab: {len(names)} profiles ({', '.join(names)}) -> {parent}")
            pairs = list(zip(profiles, names, strict=True))
            if pool is None:
                for given, name in pairs:
                    summary.profiles.append(_one(given, name, parent, log, None, opts, command))
                    if summary.interrupted:  # Ctrl-C stops the build, not just this profile
                        break
            else:
                with ThreadPoolExecutor(len(pairs)) as threads:
                    futures = [threads.submit(_one, g, n, parent, log, pool, opts, command) for g, n in pairs]
                    try:
                        wait(futures)
                    except KeyboardInterrupt:  # only this thread hears it: stop the builds in the others
                        pool.stop()
                    summary.profiles = [f.result() for f in futures]
            _write(parent, summary)
            log(f"index: {parent / INDEX}")
    return summary


def _write(parent: Path, summary: MultiSummary) -> None:
    """The index and the parent's ``build.json`` (which lists the index, not the profiles' files)."""
    atomic_write_text(parent / INDEX, index_html(summary))
    atomic_write_text(parent / outdir.BUILD_JSON, json.dumps(asdict(summary), indent=2, default=str))


def index_html(summary: MultiSummary) -> str:
    """A small page: one row per profile, its report linked, and its status."""
    rows = []
    for p in summary.profiles:
        if p.error:
            status = f"build failed: {p.error}"
        elif p.interrupted:
            status = "interrupted (incomplete)"
        elif p.failed:
            status = f"failed chapters: {', '.join(p.failed)}"
        else:
            status = "ok"
        link = f'<a href="{html.escape(p.folder)}/report.html">{html.escape(p.profile)}</a>'
        cell = link if (Path(summary.out) / p.folder / "report.html").is_file() else html.escape(p.profile)
        rows.append(
            f"<tr><td>{cell}</td><td>{html.escape(status)}</td><td>{html.escape(p.mode)}</td>"
            f"<td>{html.escape(p.recording)}</td></tr>"
        )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>cudalab lab reports</title></head><body>\n'
        f"<h1>cudalab lab reports</h1>\n<p>Built {html.escape(summary.built_utc)} by "
        f"<code>{html.escape(summary.command)}</code></p>\n"
        "<table><tr><th>profile</th><th>status</th><th>mode</th><th>recording</th></tr>\n"
        + "\n".join(rows)
        + "\n</table></body></html>\n"
    )
