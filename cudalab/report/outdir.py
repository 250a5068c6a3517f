"""The output folder of a build: what it may touch, and what it leaves behind.

A build writes only inside its output folder and deletes only what an earlier cudalab build
wrote there, as listed in that build's ``build.json`` manifest. It refuses a folder that holds
other things and no cudalab manifest, a file, and anything that is or contains the checkout's
own sources. One build at a time: a lock file in the folder stops a second build into it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cudalab.core.errors import UnsafeOutput
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import ROOT

BUILD_JSON = "build.json"
LOCK = ".cudalab-build.lock"
EARLIER = ".cudalab-earlier"  # an earlier build's complete chapters, set aside while this build runs them again
MARKER = "cudalab build"
# The checkout's own folders: never an output folder, never inside one.
_SOURCES = ("cudalab", "kernels_cu", "notebooks", "params", "results", "tests", "tools", ".git", ".ci")


def check(out: Path) -> dict:
    """Refuse an unsafe output folder (``UnsafeOutput``, one sentence); return the previous
    cudalab build's manifest there ({} for a new or empty folder)."""
    out = out.resolve()
    root = ROOT.resolve()
    if out == root or root.is_relative_to(out):
        raise UnsafeOutput(
            f"--out {out} is or contains this checkout ({root}); choose a folder of its own, e.g. build/report-NAME"
        )
    for name in _SOURCES:
        if out.is_relative_to(root / name):
            raise UnsafeOutput(
                f"--out {out} is inside the checkout's {name}/; choose a folder of its own, e.g. build/report-NAME"
            )
    if out.exists() and not out.is_dir():
        raise UnsafeOutput(f"--out {out} is a file, not a folder")
    if not out.exists() or not any(p.name != LOCK for p in out.iterdir()):
        return {}
    manifest = out / BUILD_JSON
    try:
        previous = json.loads(manifest.read_text()) if manifest.is_file() else None
    except (OSError, ValueError):
        previous = None
    if not isinstance(previous, dict) or previous.get("made_by") != MARKER:
        raise UnsafeOutput(
            f"--out {out} is not empty and was not made by a cudalab build (no {BUILD_JSON} of ours); "
            f"cudalab writes only into a new, empty or earlier cudalab folder"
        )
    return previous


def remove_previous(out: Path, previous: dict, keep: set[str] = frozenset()) -> list[str]:
    """Delete the files that the previous build listed as its own (nothing else), except those in
    ``keep`` (chapters carried over unchanged), then the folders that this leaves empty; returns
    what was removed."""
    out = out.resolve()
    removed = []
    for rel in previous.get("files", []):
        if rel in keep:
            continue
        path = (out / rel).resolve()
        if path.is_relative_to(out) and path.is_file():
            path.unlink()
            removed.append(rel)
    for folder in sorted({(out / rel).resolve().parent for rel in removed}, key=lambda p: -len(p.parts)):
        while folder != out and folder.is_relative_to(out) and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    return removed


def write_in_progress(out: Path, previous: dict, claimed: set[str], removed: list[str]) -> None:
    """The manifest of a build that has begun: the previous build's (``previous``), claiming only
    the chapters this build keeps as they are or set aside (``claimed``) and the files still its
    own (all but ``removed``), until the build writes its own at the end. A build killed half-way
    (no Ctrl-C: SIGKILL, a power cut) thus leaves no chapter it was rewriting listed as the
    earlier build's finished one, whatever of its own files it left; and the folder stays ours."""
    chapters = {cid: c for cid, c in (previous.get("chapters") or {}).items() if cid in claimed}
    gone = set(removed)
    manifest = {
        **previous,
        "made_by": MARKER,
        "ok": False,
        "interrupted": True,  # until this build ends: one killed half-way was interrupted
        "chapters": chapters,
        "files": [f for f in previous.get("files", []) if f not in gone],
    }
    atomic_write_text(out / BUILD_JSON, json.dumps(manifest, indent=2, default=str))


def set_aside(out: Path, files: list[str]) -> None:
    """Move an earlier build's files (a complete chapter this build runs again) under ``EARLIER``,
    so that an interrupted run can put them back (``put_back``) instead of leaving nothing."""
    for rel in files:
        src, dst = out / rel, out / EARLIER / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)


def put_back(out: Path, files: list[str]) -> list[str]:
    """Move set-aside files back where this build left nothing of its own; returns those moved."""
    moved = []
    for rel in files:
        src, dst = out / EARLIER / rel, out / rel
        if src.is_file() and not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            moved.append(rel)
    return moved


def drop_set_aside(out: Path) -> None:
    """The set-aside files are no longer wanted (their chapters ran again, or were put back)."""
    import shutil

    shutil.rmtree(out / EARLIER, ignore_errors=True)


def put_back_all(out: Path) -> None:
    """Files a build that was killed (not interrupted) left set aside go back where nothing
    replaced them, before another build reads the folder."""
    stash = out / EARLIER
    if stash.is_dir():
        put_back(out, [str(p.relative_to(stash)) for p in stash.rglob("*") if p.is_file()])
        drop_set_aside(out)


def written_files(out: Path, chapter_ids: list[str], extra: list[str]) -> list[str]:
    """The files this build wrote: each chapter's executed notebook and data folder, and ``extra``."""
    out = out.resolve()
    files = [f"notebooks/{cid}.ipynb" for cid in chapter_ids if (out / "notebooks" / f"{cid}.ipynb").is_file()]
    for cid in chapter_ids:
        files += sorted(str(p.relative_to(out)) for p in (out / "data" / cid).rglob("*") if p.is_file())
    return files + [e for e in extra if (out / e).is_file()]


class Lock:
    """``with Lock(out):`` one build at a time per output folder; a second one stops with the
    first one's process id. A lock left by a process that no longer runs is taken over."""

    def __init__(self, out: Path):
        self.path = out / LOCK

    def __enter__(self) -> Lock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                holder = self.path.read_text().strip() or "?"
                if holder.isdigit() and not _running(int(holder)):
                    self.path.unlink(missing_ok=True)
                    continue
                raise UnsafeOutput(
                    f"another build (process {holder}) is writing into {self.path.parent}; "
                    f"wait for it, or choose another --out"
                ) from None
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            return self
        raise UnsafeOutput(f"could not lock {self.path.parent}")

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
