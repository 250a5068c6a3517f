"""Keeping a build's measurements for replay: ``results/<gpu-slug>/<profile>/``.

Each successful chapter's folder (tables, provenance, summary) is copied whole; a chapter that
failed keeps its earlier recording. ``recordings.json`` logs, per chapter, the build that
recorded it last (command, date, wall time, the chapter's own run time, commit and GPU).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cudalab.chapter.recorded import RECORDINGS, gpu_slug
from cudalab.core.files import atomic_write_text


def merge_recordings(previous: dict[str, Any], build: dict[str, Any], gpu_name: str = "") -> dict[str, Any]:
    """The recording log of a profile on one GPU: for each chapter, the build that recorded it
    last. Chapters that failed in ``build`` keep their earlier recording."""
    chapters = dict(previous.get("chapters", {}))
    for chapter_id, c in build["chapters"].items():
        if c["ok"]:
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
        if c["ok"]:  # copied beside, then swapped in: an interrupted copy never replaces a recording
            staging = dest / f".{chapter_id}.incoming"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(data / chapter_id, staging)
            shutil.rmtree(dest / chapter_id, ignore_errors=True)
            staging.rename(dest / chapter_id)
    log = dest / RECORDINGS
    previous = json.loads(log.read_text()) if log.is_file() else {}
    atomic_write_text(log, json.dumps(merge_recordings(previous, build, gpu_name), indent=2, default=str) + "\n")
    return dest
