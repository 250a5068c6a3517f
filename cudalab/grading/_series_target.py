"""The process of one series job (``grading.series_job``): ``python -m cudalab.grading._series_target``
with the ``SeriesJob`` as JSON on standard input and its events, one JSON object a line, on standard
output.

``SIGTERM`` (or Ctrl-C) cancels it. Everything the job started is killed first, whatever session
it runs in (``core.limits.kill_tree``: a worker running the student's kernel, an nvcc of the
signature check, compute-sanitizer and its target); the ``KeyboardInterrupt`` then unwinds the job,
whose temporary folders (the staged copy, the answers) go with it, and the job says "cancelled".
An error of any kind is one line, ``error``, never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from cudalab.core.errors import CudalabError
from cudalab.core.limits import kill_tree
from cudalab.grading.series_job import SeriesJob, run


def _cancel(signum, frame) -> None:
    kill_tree(os.getpid())
    raise KeyboardInterrupt  # no handler of an error catches it


def main() -> int:
    def say(event: dict[str, Any]) -> None:
        print(json.dumps(event, default=str), flush=True)

    signal.signal(signal.SIGTERM, _cancel)
    signal.signal(signal.SIGINT, _cancel)
    try:
        path = run(SeriesJob.from_json(sys.stdin.read()), say)
    except KeyboardInterrupt:
        say({"event": "cancelled"})
        return 130
    except Exception as exc:  # noqa: BLE001 - said in one line, the job's only way to report
        text = str(exc).splitlines()[0] if str(exc) else ""
        reason = text if isinstance(exc, CudalabError) else f"{type(exc).__name__}: {text}".rstrip(": ")
        say({"event": "error", "reason": reason})
        return 1
    say({"event": "done", "path": str(path)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
