"""What a command line (a face: ``python -m cudalab.apsp``, ``python -m cudalab.kmeans``) prints
when it stops: one line and an exit status, never a traceback for a request it cannot serve."""

from __future__ import annotations

import sys
from collections.abc import Callable

from cudalab.core.errors import CudalabError


def exit_status(run: Callable[[], int]) -> int:
    """A command line's exit status: ``run()``'s, or 2 with one line on stderr where it stops on a
    ``CudalabError`` (its message) or an ``OSError`` (the path and the reason: a missing file, a
    folder, no permission, a disk full). Anything else escaping is a bug, and shows as one."""
    try:
        return run()
    except CudalabError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    return 2
