"""Keeping measurements for replay: ``results/<gpu-slug>/<profile>/``.

``record``: each successful chapter of a measured build is copied whole (tables, provenance,
summary); a chapter that failed keeps its earlier recording. ``recordings.json`` logs, per
chapter, the build that recorded it last (command, date, wall time, the chapter's own run time,
commit and GPU).

``record_tables``: tables measured outside a build (another harness on a GPU host, a new
chapter's first data, a test's toy chapter) written as a recording that a replay reads as it
reads a build's, with the provenance derived here as a build derives it.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter import catalog, staleness
from cudalab.chapter.profiles import open_profile
from cudalab.chapter.recorded import PROVENANCE, RECORDINGS, SUMMARY, gpu_slug
from cudalab.core import provenance
from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write_text


def merge_recordings(previous: dict[str, Any], build: dict[str, Any], gpu_name: str = "") -> dict[str, Any]:
    """The recording log of a profile on one GPU: for each chapter, the build that recorded it
    last. Chapters that failed in ``build`` keep their earlier recording."""
    chapters = dict(previous.get("chapters", {}))
    for chapter_id, c in build["chapters"].items():
        if c["ok"] and not c.get("kept"):  # a chapter kept from an earlier build was not measured here
            chapters[chapter_id] = {
                "seconds": c["seconds"],
                "git_commit": c["provenance"].get("git_commit"),
                "gpu_name": c["provenance"].get("gpu_name"),
                "build": {
                    **{k: build[k] for k in ("command", "built_utc", "wall_s")},
                    "chapters_ok": {k: v["ok"] for k, v in build["chapters"].items()},
                },
            }
    return {
        "profile": build["profile"],
        "gpu_name": gpu_name or previous.get("gpu_name", ""),
        "chapters": dict(sorted(chapters.items())),
    }


def record(summary: Any, data: Path, results: Path, gpu_name: str) -> Path:
    """Copy the successful chapters of a measured build into ``results/<gpu>/<profile>/``."""
    build = asdict(summary) if not isinstance(summary, dict) else summary
    dest = results / gpu_slug(gpu_name) / build["profile"]
    dest.mkdir(parents=True, exist_ok=True)
    for chapter_id, c in build["chapters"].items():
        if c["ok"] and not c.get("kept"):  # copied beside, then swapped in: never half a recording
            staging = dest / f".{chapter_id}.incoming"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(data / chapter_id, staging)
            shutil.rmtree(dest / chapter_id, ignore_errors=True)
            staging.rename(dest / chapter_id)
    log = dest / RECORDINGS
    previous = json.loads(log.read_text()) if log.is_file() else {}
    atomic_write_text(log, json.dumps(merge_recordings(previous, build, gpu_name), indent=2, default=str) + "\n")
    return dest


def record_tables(
    results: Path,
    profile: str,
    chapter_id: str,
    tables: Mapping[str, tuple[pd.DataFrame, Sequence[str]]],
    *,
    gpu_name: str,
    how: str,
) -> Path:
    """Record ``tables`` (name: (frame, its axis columns)) of chapter ``chapter_id`` as measured on
    ``gpu_name`` for ``profile``, into ``results/<gpu>/<profile>/<chapter>/``, as a build's
    ``--record`` would: each table's CSV, ``provenance.json`` (its tables and axes; the profile's
    parameters for the chapter; the commit, date and each deciding file's digest, derived here, so
    a replay names what changed since) and the ``recordings.json`` entry. ``how`` says in words
    what measured the tables (it stands where a build's command would). Returns the chapter folder."""
    chapter = catalog.chapter(chapter_id)
    if not tables:
        raise CudalabError(f"no tables to record for {chapter_id}")
    for name, (frame, axes) in tables.items():
        missing = [a for a in axes if a not in frame.columns]
        if missing:
            raise CudalabError(f"table {name!r} has no axis column {', '.join(missing)}")
    prof = open_profile(profile)
    folder = results / gpu_slug(gpu_name) / prof.name / chapter_id
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, (frame, _) in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    info = {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **provenance.commit_state(),
        "gpu_name": gpu_name,
        "recorded_by": how,
        "profile": prof.name,
        "chapter": chapter_id,
        "parameters": prof.chapter_params(chapter_id),
        "source_fingerprint": provenance.source_fingerprint(chapter.path, prof.model_dump(mode="json")),
        **staleness.fingerprints(chapter.path),
        "tables": sorted(tables),
        "axes": {name: list(axes) for name, (_, axes) in tables.items()},
    }
    atomic_write_text(folder / PROVENANCE, json.dumps(info, indent=2, default=str))
    atomic_write_text(folder / SUMMARY, "[]\n")
    build = {
        "profile": prof.name,
        "command": how,
        "built_utc": info["date_utc"],
        "wall_s": 0.0,
        "chapters": {chapter_id: {"ok": True, "seconds": 0.0, "provenance": info}},
    }
    log = folder.parent / RECORDINGS
    previous = json.loads(log.read_text()) if log.is_file() else {}
    atomic_write_text(log, json.dumps(merge_recordings(previous, build, gpu_name), indent=2, default=str) + "\n")
    return folder
