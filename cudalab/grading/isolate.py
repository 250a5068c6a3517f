"""A submission's measurement in a process of its own: started with a scrubbed environment, under
the resource limits CUDA tolerates (``core.limits.WORKER``: CPU time, memory by RLIMIT_DATA, file
size, processes; never an address-space limit), as an unprivileged user where the grader is root,
watched with a wall-clock limit per point (its compile, launches and check) and per submission,
and killed, with its whole process group, where it runs past either.

What comes back is one result per point, always: measured, or ``timed out``/``crashed``/``not
run`` with the reason. A kernel that never returns or faults costs its own process only.

Run as another user (``core.limits.sandbox_account``), the worker touches only its own folder: the
staged submission is copied there, its answers are written there and copied back (regular files
only) for the grader to judge, and its compile caches are its own, linked read-only from the
grader's. Where the account cannot run the worker (the Python environment or the GPU's device files
closed to it, a file the command names), the reason is said once and it runs as the grader.
"""

from __future__ import annotations

import glob
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from cudalab.core import limits as L
from cudalab.grading import results as R

KEPT = L.KEPT  # what a worker keeps of the grader's environment (core.limits)


@dataclass(frozen=True)
class Limits:
    """Wall-clock limits in seconds: ``point`` (one point: compile, warm-up, repeats and check)
    and ``submission`` (all of one submission's points in one chapter); ``process``: the worker's
    resource limits (``core.limits.WORKER``; its CPU time, where unset, twice ``submission`` and a
    minute, its memory half the host's)."""

    point: float = L.POINT_LIMIT_S
    submission: float = L.SUBMISSION_LIMIT_S
    process: L.ProcessLimits = field(default=L.WORKER)

    def resources(self) -> L.ProcessLimits:
        """The worker's resource limits, with what they leave to the run filled in."""
        return L.worker_limits(self.submission, self.process)


def scrubbed_env(home: Path, caches: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment (``core.limits.scrubbed_env``): ``KEPT`` variables only, with HOME
    and TMPDIR in ``home``, and the compile caches it uses (default: the grader's, CuPy's kernels
    and the compiler's reports: a worker with an empty cache would compile CuPy's own reductions
    again, seconds per submission)."""
    return L.scrubbed_env(home, caches)


# ---- as an unprivileged user, where the grader is root

# What a worker imports before it runs anything: the account must read the Python environment and the
# package, and see the GPU where the grader sees one (exit status 3: it does not).
_PROBE = (
    "import sys, cudalab.grading._worker_target, cudalab.grading.trials, cudalab.core.gpu as g\n"
    "sys.exit(0 if g.gpu_available() or not int(sys.argv[1]) else 3)\n"
)


def _said_as_grader(why: str) -> None:
    L.say_once(f"the grader's worker runs as this process's user, not as an unprivileged one: {why}")


@cache
def _worker_account() -> L.Account | None:
    """The account workers run as (``core.limits.sandbox_account``) where it can run one, probed once
    per process: the GPU's device files open to it, and the worker's imports (and the GPU, where this
    process sees one) working as it. None, said once, where not."""
    account = L.sandbox_account()
    if account is None:
        return None
    for device in sorted(glob.glob("/dev/nvidia*")):
        closed = L.closed_to(Path(device), account, write=True)
        if closed is not None and not Path(device).is_dir():
            _said_as_grader(f"{device} is closed to {account.name}")
            return None
    from cudalab.core.gpu import gpu_available

    sees = int(gpu_available())
    with tempfile.TemporaryDirectory(prefix="cudalab-probe-") as home:
        os.chown(home, account.uid, account.gid)
        caches = _own_caches(Path(home), account)  # CuPy makes its cache folder when it is imported
        why = L.fails_as([sys.executable, "-c", _PROBE, str(sees)], account, scrubbed_env(Path(home), caches))
    if why:
        _said_as_grader(why)
        return None
    return account


def _named_files(worker: tuple[str, ...]) -> list[Path]:
    """The files a worker command names (a test's stand-in script): they must be open to its user."""
    return [Path(a) for a in worker if not a.startswith("-") and Path(a).is_file()]


def _account_for(worker: tuple[str, ...], home: Path) -> L.Account | None:
    """Whom this worker runs as: the unprivileged account where every file its command names and its
    own folder are open to it; else this process's user (said once)."""
    account = _worker_account()
    if account is None:
        return None
    os.chown(home, account.uid, account.gid)
    for path in [*_named_files(worker), home]:
        closed = L.closed_to(path, account, write=path == home)
        if closed is not None:
            _said_as_grader(f"{closed} is closed to {account.name}")
            os.chown(home, os.getuid(), os.getgid())
            return None
    return account


def _own_caches(home: Path, account: L.Account) -> dict[str, str]:
    """The worker's own compile caches in ``home``, filled with read-only links to the grader's (what
    the grader compiled is read, never recompiled; what the worker writes stays in its folder, so
    that no submission's process can change what the grader or the next submission loads)."""
    from cudalab.core.paths import cache_dir

    grader = L.scrubbed_env(home)
    cupy, mine = home / "cupy", home / "cache"
    for folder in (cupy, mine / "cudalab"):
        folder.mkdir(parents=True)
    L.link_cache(Path(grader["CUPY_CACHE_DIR"]), cupy)
    L.link_cache(cache_dir(), mine / "cudalab")
    for root, dirs, _files in os.walk(home):  # the folders are the worker's; the linked files stay the grader's
        for name in [".", *dirs]:
            os.chown(os.path.join(root, name), account.uid, account.gid)
    return {"CUPY_CACHE_DIR": str(cupy), "CUDALAB_CACHE": str(mine)}


@dataclass
class _HandedOver:
    """A request rewritten to touch only the worker's folder, and what to copy back after it."""

    request: dict[str, Any]
    back: list[tuple[Path, Path]] = field(default_factory=list)  # (in the worker's folder, the grader's)


def _hand_over(request: dict[str, Any], home: Path, account: L.Account) -> _HandedOver:
    """``request`` for a worker that runs as ``account`` in ``home``: the staged submission copied
    in; its answers (the folder, and each case's answer file) written in ``home`` and copied back
    after; a case file closed to the account copied in."""
    out = _HandedOver(dict(request))
    req = out.request
    if req.get("folder"):
        mine = home / "submission"
        shutil.copytree(req["folder"], mine)
        req["folder"] = str(mine)
    answers = Path(req["answers"]) if req.get("answers") else None
    if answers is not None:
        mine = home / "answers"
        mine.mkdir()
        out.back.append((mine, answers))
        req["answers"] = str(mine)
    cases = []
    for i, (case, answer) in enumerate(req.get("cases") or []):
        case, answer = Path(case), Path(answer)
        if L.closed_to(case, account) is not None:
            (home / "cases").mkdir(exist_ok=True)
            case = Path(shutil.copy(case, home / "cases" / f"{i}-{case.name}"))
        if answers is not None and answer.is_relative_to(answers):
            answer = home / "answers" / answer.relative_to(answers)
        else:
            (home / "case-answers").mkdir(exist_ok=True)
            mine = home / "case-answers" / f"{i}-{answer.name}"
            out.back.append((mine, answer))
            answer = mine
        cases.append([str(case), str(answer)])
    if "cases" in req:
        req["cases"] = cases
    L.hand_over(home, account)
    return out


def _copy_back(handed: _HandedOver, account: L.Account | None) -> None:
    """The worker's answers where the grader reads them: regular files the account wrote, nothing
    else (``core.limits.copy_back``)."""
    for mine, theirs in handed.back:
        if mine.is_dir():
            L.copy_back(mine, theirs, account.uid if account is not None else None)
        elif mine.is_file() and not mine.is_symlink() and (account is None or mine.stat().st_uid == account.uid):
            theirs.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mine, theirs)


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _ended(code: int | None, limits: L.ProcessLimits | None = None) -> str:
    """Why a worker ended, in words: the limit it ran past (CPU time, file size) or its signal."""
    if code is not None and code < 0:
        if limits is not None and -code == signal.SIGXCPU and limits.cpu_s is not None:
            return f"the process ran past its limit of {limits.cpu_s:g} s of CPU time and was stopped"
        if limits is not None and -code == signal.SIGXFSZ and limits.file_bytes is not None:
            return f"the process wrote a file past its limit of {L.size_words(limits.file_bytes)} and was stopped"
        try:
            return f"the process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the process was killed by signal {-code}"
    return f"the process ended with status {code}"


def _watch(
    proc: subprocess.Popen,
    lines: queue.Queue,
    limits: Limits,
    started: float,
    found: dict[int, dict[str, Any]],
    ceiling: dict[str, Any],
    on_point: Callable[[int, dict[str, Any]], None] | None,
) -> dict[str, Any] | None:
    """Read the worker's events until it ends or runs past a limit (then its group is killed):
    each point's result into ``found``, the ceiling's into ``ceiling``. Returns why it stopped
    early (a time-out, an error it reported), or None."""
    point_start, stop = time.monotonic(), None
    while True:
        now = time.monotonic()
        deadline = min(point_start + limits.point, started + limits.submission)
        try:
            line = lines.get(timeout=max(0.05, deadline - now))
        except queue.Empty:
            which = "point" if point_start + limits.point <= started + limits.submission else "submission"
            limit = limits.point if which == "point" else limits.submission
            L.kill_group(proc)
            return {"status": R.TIMED_OUT, "reason": f"stopped after {limit:g} s, the limit per {which}"}
        if line is None:
            proc.wait()
            return stop
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # not an event (the pipe holds only the worker's own lines)
        kind = event.pop("event", "")
        if kind == "start":
            point_start = time.monotonic()
        elif kind == "point":
            index = int(event.pop("index"))
            found[index] = event
            point_start = time.monotonic()
            if on_point is not None:
                on_point(index, event)
        elif kind == "ceiling":
            ceiling.update(event)
        elif kind == "error":
            stop = {"status": "failed", "reason": event.get("reason", "")}


WORKER = ("-m", "cudalab.grading._worker_target")
EVENTS_ENV = "CUDALAB_EVENTS_FD"  # the file descriptor of the worker's event pipe


def run(
    request: dict[str, Any],
    limits: Limits = Limits(),
    env: dict[str, str] | None = None,
    worker: tuple[str, ...] = WORKER,
    on_point: Callable[[int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run one worker request (``grading._worker_target``) in its own process group and return
    ``{"ceiling": value or None, "ceiling_spread": its spread, "points": [result per point, in
    order], "wall_s": seconds}``.

    Each point must finish within ``limits.point`` of its start and all within
    ``limits.submission``; past either, the process group is killed and the point is ``timed
    out``, the rest ``not run``. A process that dies (a fault, a signal) leaves its point
    ``crashed`` and the rest ``not run``. ``worker``: the Python arguments that start it (a test's
    stand-in); ``on_point(index, result)``: called as each point's result arrives (a progress bar).
    Whatever ends the wait (a limit, or an exception here: a cancelled job's ``SIGTERM``), the
    worker's process group does not outlive this call."""
    n = len(request["points"]) + len(request.get("cases") or ())
    found: dict[int, dict[str, Any]] = {}
    ceiling: dict[str, Any] = {}
    started = time.monotonic()
    resources = limits.resources()
    with tempfile.TemporaryDirectory(prefix="cudalab-worker-") as home:
        account = _account_for(worker, Path(home))
        handed = _hand_over(request, Path(home), account) if account is not None else _HandedOver(request)
        caches = _own_caches(Path(home), account) if account is not None else None
        events_r, events_w = os.pipe()  # the worker's events: a pipe of its own, not stdout (a kernel's printf)
        environment = {**(env if env is not None else scrubbed_env(Path(home), caches)), EVENTS_ENV: str(events_w)}
        proc = L.popen(
            [sys.executable, *worker],
            resources,
            account,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # a kernel's printf: never read, never shown
            stderr=subprocess.DEVNULL,  # a traceback may name the machine's paths: never shown
            cwd=home,
            env=environment,
            text=True,
            pass_fds=(events_w,),
        )
        os.close(events_w)
        try:
            proc.stdin.write(json.dumps(handed.request))
            proc.stdin.close()
        except BrokenPipeError:  # it died before reading its request: said below, as any early end
            pass
        lines: queue.Queue = queue.Queue()
        events = os.fdopen(events_r, "r")
        threading.Thread(target=_reader, args=(events, lines), daemon=True).start()
        try:
            stop = _watch(proc, lines, limits, started, found, ceiling, on_point)
        finally:
            if proc.poll() is None:  # an exception in the wait: the worker goes with it
                L.kill_group(proc)
        if stop is None and len(found) < n:
            reported = any(r.get("status") == R.CRASHED for r in found.values())  # the worker said why it stopped
            stop = (
                {"status": R.NOT_RUN, "reason": "an earlier point of this submission crashed its process"}
                if reported
                else {"status": R.CRASHED, "reason": _ended(proc.returncode, resources)}
            )
        _copy_back(handed, account)
    points, first_missing = [], True
    for i in range(n):
        if i in found:
            points.append(found[i])
        elif first_missing:  # the point it stopped in (points run in order)
            points.append(dict(stop or {"status": R.NOT_RUN, "reason": "the worker stopped"}))
            first_missing = False
        else:
            points.append({"status": R.NOT_RUN, "reason": "an earlier point of this submission stopped its process"})
    return {
        "ceiling": ceiling.get("value"),
        "ceiling_spread": float(ceiling.get("spread") or 0.0),  # its interquartile range over median
        "points": points,
        "wall_s": time.monotonic() - started,
    }
