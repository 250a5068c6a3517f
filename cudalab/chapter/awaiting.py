"""A chapter that runs beside the chapter offering its ceilings (a Dask build: chapter 00 measures
on one GPU while the others start on theirs) waits for that chapter's tables where it reads them,
and only there (``ChapterHandle.ceilings``), rather than waiting for it to finish before starting.

The build marks each offering chapter that is still measuring with a file named after it in a
folder it names in ``AWAITING_ENV`` (``report.cluster``); it removes the file when that chapter
has ended, whole or failed, and removes the folder when the build stops. A serial build sets
nothing: chapter 00 has run before any other starts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

AWAITING_ENV = "CUDALAB_AWAITING"
WAIT_S = 1800.0  # at most (a chapter's cell timeout): then the chapter goes on without those ceilings
POLL_S = 0.5


def wait_for(chapter_id: str, timeout: float = WAIT_S, poll: float = POLL_S) -> float:
    """Wait while the build says ``chapter_id`` is still measuring, at most ``timeout`` seconds;
    returns the seconds waited (0 where nothing is awaited: a serial build, or that chapter has
    ended)."""
    root = os.environ.get(AWAITING_ENV)
    if not root:
        return 0.0
    marker = Path(root) / chapter_id
    started = time.monotonic()
    while marker.exists() and time.monotonic() - started < timeout:
        time.sleep(poll)
    return time.monotonic() - started
