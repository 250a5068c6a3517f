"""A submission's measurement in a process of its own: started with a scrubbed environment,
watched with a wall-clock limit per point (its compile, launches and check) and per submission,
and killed, with its whole process group, where it runs past either.

What comes back is one result per point, always: measured, or ``timed out``/``crashed``/``not
run`` with the reason. A kernel that never returns or faults costs its own process only.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudalab.grading import results as R

# What a worker keeps of the grader's environment: enough to find Python, the CUDA toolkit and the
# GPU it was given; nothing else (no tokens, no home, no proxies). Its HOME is a folder of its own.
KEPT = (
    "PATH",
    "PYTHONPATH",  # the grader's own package and libraries (an offline node's wheelhouse)
    "LD_LIBRARY_PATH",
    "CUDA_PATH",
    "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "CUPY_CACHE_DIR",
    "CUDALAB_CACHE",
    "LANG",
    "LC_ALL",
    "NVIDIA_VISIBLE_DEVICES",
)


@dataclass(frozen=True)
class Limits:
    """Wall-clock limits in seconds: ``point`` (one point: compile, warm-up, repeats and check)
    and ``submission`` (all of one submission's points in one chapter)."""

    point: float = 60.0
    submission: float = 300.0


def scrubbed_env(home: Path) -> dict[str, str]:
    """The worker's environment: ``KEPT`` variables only, with HOME and TMPDIR in ``home``, and the
    grader's compile caches named (CuPy's kernels and the compiler's reports): a worker with an
    empty cache would compile CuPy's own reductions again, seconds per submission."""
    from cudalab.core.paths import cache_dir

    env = {k: os.environ[k] for k in KEPT if k in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.setdefault("CUPY_CACHE_DIR", str(Path.home() / ".cupy" / "kernel_cache"))
    env.setdefault("CUDALAB_CACHE", str(cache_dir().parent))
    env.update(HOME=str(home), TMPDIR=str(home), PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"the process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the process was killed by signal {-code}"
    return f"the process ended with status {code}"


WORKER = ("-m", "cudalab.grading._worker_target")
EVENTS_ENV = "CUDALAB_EVENTS_FD"  # the file descriptor of the worker's event pipe


def run(
    request: dict[str, Any],
    limits: Limits = Limits(),
    env: dict[str, str] | None = None,
    worker: tuple[str, ...] = WORKER,
) -> dict[str, Any]:
    """Run one worker request (``grading._worker_target``) in its own process group and return
    ``{"ceiling": value or None, "points": [result per point, in order], "wall_s": seconds}``.

    Each point must finish within ``limits.point`` of its start and all within
    ``limits.submission``; past either, the process group is killed and the point is ``timed
    out``, the rest ``not run``. A process that dies (a fault, a signal) leaves its point
    ``crashed`` and the rest ``not run``. ``worker``: the Python arguments that start it (a test's
    stand-in)."""
    n = len(request["points"]) + len(request.get("cases") or ())
    found: dict[int, dict[str, Any]] = {}
    ceiling: dict[str, Any] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cudalab-worker-") as home:
        events_r, events_w = os.pipe()  # the worker's events: a pipe of its own, not stdout (a kernel's printf)
        environment = {**(env if env is not None else scrubbed_env(Path(home))), EVENTS_ENV: str(events_w)}
        proc = subprocess.Popen(
            [sys.executable, *worker],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # a kernel's printf: never read, never shown
            stderr=subprocess.DEVNULL,  # a traceback may name the machine's paths: never shown
            cwd=home,
            env=environment,
            text=True,
            start_new_session=True,
            pass_fds=(events_w,),
        )
        os.close(events_w)
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        lines: queue.Queue = queue.Queue()
        events = os.fdopen(events_r, "r")
        threading.Thread(target=_reader, args=(events, lines), daemon=True).start()
        point_start, stop = time.monotonic(), None
        while True:
            now = time.monotonic()
            deadline = min(point_start + limits.point, started + limits.submission)
            try:
                line = lines.get(timeout=max(0.05, deadline - now))
            except queue.Empty:
                which = "point" if point_start + limits.point <= started + limits.submission else "submission"
                limit = limits.point if which == "point" else limits.submission
                stop = {"status": R.TIMED_OUT, "reason": f"stopped after {limit:g} s, the limit per {which}"}
                _kill(proc)
                break
            if line is None:
                proc.wait()
                break
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # not an event (the pipe holds only the worker's own lines)
            kind = event.pop("event", "")
            if kind == "start":
                point_start = time.monotonic()
            elif kind == "point":
                found[int(event.pop("index"))] = event
                point_start = time.monotonic()
            elif kind == "ceiling":
                ceiling = event
            elif kind == "error":
                stop = {"status": "failed", "reason": event.get("reason", "")}
        if stop is None and len(found) < n:
            reported = any(r.get("status") == R.CRASHED for r in found.values())  # the worker said why it stopped
            stop = (
                {"status": R.NOT_RUN, "reason": "an earlier point of this submission crashed its process"}
                if reported
                else {"status": R.CRASHED, "reason": _ended(proc.returncode)}
            )
    points, first_missing = [], True
    for i in range(n):
        if i in found:
            points.append(found[i])
        elif first_missing:  # the point it stopped in (points run in order)
            points.append(dict(stop or {"status": R.NOT_RUN, "reason": "the worker stopped"}))
            first_missing = False
        else:
            points.append({"status": R.NOT_RUN, "reason": "an earlier point of this submission stopped its process"})
    return {"ceiling": ceiling.get("value"), "points": points, "wall_s": time.monotonic() - started}
