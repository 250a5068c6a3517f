"""One chapter notebook through papermill: the call a serial build makes in its own process and a
Dask task makes in its worker (``report.cluster``), kept apart from both so neither imports the other."""

from __future__ import annotations

import os
from pathlib import Path

from cudalab.chapter import catalog
from cudalab.core.paths import NOTEBOOKS_DIR

# A kernel may start slowly on a loaded node (several chapters starting at once on Dask workers).
KERNEL_START_TIMEOUT_S = 120


def run_notebook(
    chapter: catalog.ChapterInfo, out_nb: Path, params: dict, cell_timeout: int, progress_bar: bool
) -> tuple[bool, str]:
    """One notebook through papermill, synchronously (nbclient refuses to run inside a running
    event loop, so a Dask task calls this from its worker thread too); (ok, the error if not)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    # The kernel inherits this process's environment: a batch run, where explorers show nothing.
    previous = os.environ.get(catalog.BATCH_ENV)
    os.environ[catalog.BATCH_ENV] = "1"
    try:
        # The kernel's own log stays quiet below errors: its "running over TCP" warning (a local kernel
        # on loopback, started and stopped by this build) would otherwise print once per chapter.
        papermill.execute_notebook(
            str(chapter.path),
            str(out_nb),
            parameters=params,
            kernel_name="python3",
            cwd=str(NOTEBOOKS_DIR),
            progress_bar=progress_bar,
            execution_timeout=cell_timeout,
            start_timeout=KERNEL_START_TIMEOUT_S,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
        return True, ""
    except PapermillExecutionError as exc:
        return False, f"{exc.ename}: {exc.evalue}"
    except Exception as exc:  # the kernel died, timed out, or could not start: the chapter failed
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        if previous is None:
            os.environ.pop(catalog.BATCH_ENV, None)
        else:
            os.environ[catalog.BATCH_ENV] = previous
