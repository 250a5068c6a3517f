"""A replayed chapter kept by the digest of its inputs, for a run that replays the same chapters
over and over (the test suite builds the same recordings some sixty times).

A replay is a function of what it reads: the chapter's notebook, the package and kernels, the
parameters and resolved profile it is given, the recording it replays, a student's staged files,
and the ``CUDALAB_*`` settings of its environment. Where the environment variable
``CUDALAB_REPLAY_CACHE`` names a folder, a replayed chapter that ran to its end is kept there under
the digest of all of that: the files it wrote into the build's folder, its executed notebook
among them. A later replay with the same digest copies them into its own folder instead of
starting a kernel, with the build's folder named as its own wherever the kept files name a
folder.

Builds side by side that replay the same inputs take turns (a lock beside the entry): the first
runs the chapter, the others wait and copy it.

Nothing measured is kept (a measurement runs every time), nor a chapter that failed, nor one
whose data names the folder it was built in (its copy would point elsewhere). No build sets the
variable on its own: ``make test`` sets it for one run, in a folder of that run.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from cudalab.chapter import catalog
from cudalab.core.provenance import source_fingerprint
from cudalab.report.options import SUBMISSION_DIR, SUBMISSION_JSON

ENV = "CUDALAB_REPLAY_CACHE"
PLACEHOLDER = "@@cudalab-build-folder@@"  # the build's folder, in a kept file that names it
NOTEBOOK = "notebook.ipynb"  # the executed notebook, in a kept entry
WROTE = "wrote"  # the files the chapter wrote into the build's folder, by their path there

RunNotebook = Callable[[catalog.ChapterInfo, Path, dict, int, bool], tuple[bool, str]]


def cached(run: RunNotebook) -> RunNotebook:
    """``run`` (``execute.run_notebook``), keeping and reusing replayed chapters where
    ``CUDALAB_REPLAY_CACHE`` names a folder; ``run`` itself where it names none."""

    @functools.wraps(run)
    def run_or_reuse(
        chapter: catalog.ChapterInfo, out_nb: Path, params: dict, cell_timeout: int, progress_bar: bool
    ) -> tuple[bool, str]:
        folder = os.environ.get(ENV)
        if not folder or params.get("mode") != "replay" or not params.get("data_dir"):
            return run(chapter, out_nb, params, cell_timeout, progress_bar)
        out = Path(params["data_dir"]).parent
        entry = Path(folder) / inputs_digest(chapter, out, params)
        with _alone(entry):  # a build beside this one replaying the same inputs: wait, then copy its
            if entry.is_dir():
                restore(entry, out, out_nb)
                return True, ""
            before = _snapshot(out)
            ok, error = run(chapter, out_nb, params, cell_timeout, progress_bar)
            if ok:
                keep(entry, out, out_nb, before)
            return ok, error

    return run_or_reuse


@contextlib.contextmanager
def _alone(entry: Path) -> Iterator[None]:
    """Hold ``entry``'s lock: one replay of the same inputs at a time, so that builds running side by
    side (the test suite's two workers) run a chapter once and the other copies it. The lock goes
    with the process that holds it, however it ends."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.with_name(entry.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def inputs_digest(chapter: catalog.ChapterInfo, out: Path, params: dict) -> str:
    """The digest of everything a replayed chapter reads (see the module docstring), with the
    build's folder ``out`` written as a placeholder, so that two folders of the same inputs share it."""
    recorded = Path(params.get("recorded_dir") or "")
    profile = Path(params.get("profile") or "")
    key = {
        "chapter": chapter.id,
        "source": source_fingerprint(chapter.path, None)["sha256"],
        "params": json.dumps(params, sort_keys=True, default=str).replace(str(out), PLACEHOLDER),
        "profile": profile.read_text() if profile.is_file() else "",
        "recording": _tree_digest(recorded) if params.get("recorded_dir") else "",
        "submission": _tree_digest(out / SUBMISSION_DIR),
        "submission_json": (out / SUBMISSION_JSON).read_text() if (out / SUBMISSION_JSON).is_file() else "",
        "env": {k: v for k, v in os.environ.items() if k.startswith("CUDALAB_") and k != ENV},
        "path": os.environ.get("PATH", ""),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _files(folder: Path) -> list[Path]:
    """Every file under ``folder``, in a fixed order (none where it is not a folder)."""
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def _tree_digest(folder: Path) -> str:
    """sha256 over each file under ``folder``: its path there and its bytes."""
    h = hashlib.sha256()
    for p in _files(folder):
        h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _stamp(p: Path) -> tuple[int, int]:
    """What tells a file written since a snapshot: its size and modification time (ns)."""
    st = p.stat()
    return (st.st_size, st.st_mtime_ns)


def _snapshot(out: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``out`` by its path there, with its ``_stamp``."""
    return {str(p.relative_to(out)): _stamp(p) for p in _files(out)}


def keep(entry: Path, out: Path, out_nb: Path, before: dict[str, tuple[int, int]]) -> None:
    """The files the chapter wrote into ``out`` (new or changed since ``before``) kept as ``entry``,
    its notebook with ``out`` as the placeholder; nothing is kept where a data file names ``out``.
    Written aside and renamed into place, so that a run beside this one never reads half an entry."""
    wrote = [p for p in _files(out) if p != out_nb and _stamp(p) != before.get(str(p.relative_to(out)))]
    if not out_nb.is_file() or any(str(out).encode() in p.read_bytes() for p in wrote):
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".keeping-"))
    try:
        (aside / NOTEBOOK).write_text(out_nb.read_text(encoding="utf-8").replace(str(out), PLACEHOLDER))
        for p in wrote:
            target = aside / WROTE / p.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)
        os.rename(aside, entry)
    except OSError:  # another run kept the same entry first, or the cache's disk is full: no harm
        shutil.rmtree(aside, ignore_errors=True)


def restore(entry: Path, out: Path, out_nb: Path) -> None:
    """A kept chapter written into ``out``: its files where it wrote them, its notebook at
    ``out_nb`` naming ``out``."""
    for p in _files(entry / WROTE):
        target = out / p.relative_to(entry / WROTE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    out_nb.parent.mkdir(parents=True, exist_ok=True)
    out_nb.write_text((entry / NOTEBOOK).read_text(encoding="utf-8").replace(PLACEHOLDER, str(out)))
