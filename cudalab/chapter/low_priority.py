"""A chapter's bulk compiling at a lower CPU priority than its timing.

Under ``build_report.py --workers N`` several chapters share one host's CPUs. A chapter that
compiles dozens of builds at once (NVRTC threads, ``nvcc``/``ptxas`` processes: ``compile_ahead``)
takes those CPUs from a neighbour whose host thread is launching kernels and must keep ahead of its
GPU. On a host of 2 H100s and 32 cores (docs/tuning-log.md, issue 45), two chapters at a time,
chapter 00's bandwidth sweep (a reset, a launch and a sync per sample) grew from 9.9 to 12.2 s
beside chapter 04, which compiles all its builds in its first seconds.

On Linux a nice value belongs to a thread, and a thread or process inherits it from the thread
that starts it. So work run by ``at_low_priority`` (its pools' threads, the compilers they start)
yields the CPU to any thread at the default priority, its own chapter's and its neighbours' alike;
the caller's thread keeps its priority. Alone on a host it changes nothing but the order in which
a busy CPU serves them. Elsewhere (no per-thread priority) the work runs as it is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How much lower: nice 10 gets about a tenth of a CPU that a thread at nice 0 also wants (the
# kernel's weights 110 against 1024), and all of one that nobody else wants.
NICENESS = 10


def lower_this_thread(niceness: int = NICENESS) -> bool:
    """Raise the calling thread's nice value by ``niceness`` (capped at 19, the lowest priority), and
    say whether it could. Raising one's own nice value needs no privilege; nothing lowers it back,
    so call it on a thread of its own (``at_low_priority``)."""
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return False
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + niceness))
    except OSError:
        return False
    return True


def at_low_priority(work: Callable[[], T]) -> T:
    """``work()``, run on a thread of its own at ``NICENESS`` below the default priority, with the
    threads and processes it starts; its result or its exception, as if called here."""
    outcome: dict[str, object] = {}

    def run() -> None:
        lower_this_thread()
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="cudalab-compile", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
