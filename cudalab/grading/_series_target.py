"""The process of one series job (``grading.series_job``): ``python -m cudalab.grading._series_target``
with the ``SeriesJob`` as JSON on standard input and its events, one JSON object a line, on standard
output. ``SIGTERM`` (or Ctrl-C) cancels it: the ``KeyboardInterrupt`` it raises unwinds the wait on the running worker,
which kills that worker's process group (``grading.isolate.run``), and the job says "cancelled".
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

from cudalab.core.errors import CudalabError
from cudalab.grading.series_job import SeriesJob, run


def main() -> int:
    def say(event: dict[str, Any]) -> None:
        print(json.dumps(event, default=str), flush=True)

    # a cancel is an interrupt: KeyboardInterrupt, which no handler of an error catches
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        path = run(SeriesJob.from_json(sys.stdin.read()), say)
    except KeyboardInterrupt:
        say({"event": "cancelled"})
        return 130
    except (CudalabError, OSError, TypeError, ValueError) as exc:
        say({"event": "error", "reason": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})
        return 1
    say({"event": "done", "path": str(path)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
