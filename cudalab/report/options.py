"""What a build is asked to do, written once: ``BuildOptions``, and the Dask pool a build runs on.

``build_report.py`` parses the command line into one ``BuildOptions``; ``report.build.run`` (one
profile), ``report.multi.run`` (``--gpu a,b``) and ``report.compare.report.run`` (``--compare``)
take it as it is. Each option is named here only: a caller changes a few with keywords
(``run("gtx680", force=True)``), which ``with_changes`` checks against these fields.

``dask_pool`` is the one place that opens a Dask pool for a build (``--workers``/``--scheduler``)
and closes it however the build ends; ``report.cluster`` (and Dask) is imported only then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Protocol

from cudalab.core.errors import CudalabError
from cudalab.core.limits import POINT_LIMIT_S, SUBMISSION_LIMIT_S
from cudalab.core.paths import RESULTS_DIR

Log = Callable[[str], None]


# A student's build: its staged copy and its record, in the build's output folder.
SUBMISSION_DIR = "submission"
SUBMISSION_JSON = "submission.json"
# each chapter's verdict on each of the student's files it measured, which the first page leads with
YOURS_VERDICTS = "yours_verdicts.json"  # in data/<chapter>/ (written by grading.file_verdicts' caller)


class Refused(Protocol):
    name: str
    reason: str


class StudentFiles(Protocol):
    """What a build takes of a student's folder, as ``grading.submission.check`` read it (the
    grading room reads and judges it; a build only stages and reports it): ``folder``, ``kernels``
    (each ``.cu`` file's name -> the project file it stands in for), ``sha256`` (every accepted
    file's), ``refused`` (each refused file and why) and ``stage(dest)``, which writes the bytes
    that were checked into ``dest``."""

    folder: Path
    kernels: Mapping[str, Path]
    sha256: Mapping[str, str]
    refused: Sequence[Refused]

    def stage(self, dest: Path) -> Path: ...


@dataclass(frozen=True)
class BuildOptions:
    """Every option of a build, as the command line gives them (``build_report.py --help``).

    What runs: ``only`` (chapters by number or name; all when empty), ``quick`` (the profile's
    smoke-run grid), ``force`` (run chapters the last build into the folder could keep),
    ``fail_fast`` (stop at the first failed chapter). Where the numbers come from: ``replay``
    (the recording even where a GPU is present), ``results`` (where recordings live),
    ``from_gpu`` (which GPU's recording, where several recorded the profile), ``record`` (keep
    this measurement for replay). Limits: ``cell_timeout`` (seconds per notebook cell),
    ``point_time_limit`` (seconds per sweep point's call; 0: none). What comes out: ``pdf``,
    ``handout``, ``answers``; ``progress_bar`` (a terminal's bar per chapter). Where it runs:
    ``workers`` (a local Dask cluster of that many) or ``scheduler`` (a running one's address).
    A student's kernels: ``kernels`` (a student's folder as ``grading.submission.check`` read it,
    its files named as the ``kernels_cu`` files they replace: the bytes checked are what is staged,
    measured beside the reference in the chapters that launch them; never recorded),
    ``measuring`` (the chapters whose declared points launch one of its files, as
    ``grading.plan.chapters_measuring`` reads them from the chapters' point recipes: run where
    ``only`` names none, so that ``only`` is always what the command line asked for; a build with
    ``kernels`` needs one of the two), ``point_limit`` and ``submission_limit`` (seconds
    before their process is stopped)."""

    only: tuple[str, ...] = ()
    quick: bool = False
    record: bool = False
    replay: bool = False
    results: Path = RESULTS_DIR
    from_gpu: str | None = None
    pdf: bool = True
    cell_timeout: int = 1800
    progress_bar: bool = False
    force: bool = False
    fail_fast: bool = False
    point_time_limit: float = 120.0
    handout: bool = False
    answers: bool = False
    workers: int | None = None
    scheduler: str | None = None
    kernels: StudentFiles | None = None
    measuring: tuple[str, ...] = ()
    point_limit: float = POINT_LIMIT_S
    submission_limit: float = SUBMISSION_LIMIT_S
    seed: int | None = None  # --kernels: the check inputs' seed (None: a fresh one, recorded)

    def __post_init__(self) -> None:
        object.__setattr__(self, "only", tuple(self.only or ()))
        object.__setattr__(self, "measuring", tuple(self.measuring or ()))
        object.__setattr__(self, "results", Path(self.results))

    @property
    def dask(self) -> bool:
        """Whether the chapters run as Dask tasks (``workers`` or ``scheduler`` given)."""
        return bool(self.workers or self.scheduler)

    def with_changes(self, **changes: Any) -> BuildOptions:
        """These options with ``changes`` applied; a name that is no option is an error that names them."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise CudalabError(f"no build option {', '.join(unknown)}; options: {', '.join(sorted(known))}")
        return replace(self, **changes) if changes else self


def options_from(options: BuildOptions | None, changes: dict[str, Any]) -> BuildOptions:
    """``options`` (default ``BuildOptions()``) with a caller's keyword ``changes``."""
    return (options or BuildOptions()).with_changes(**changes)


@contextmanager
def dask_pool(options: BuildOptions, mode: str, log: Log, given: Any = None) -> Iterator[Any]:
    """The pool a build submits its chapters to: ``given`` (a pool already open, left open), else
    one opened here where ``options`` ask for Dask and closed on the way out (error and Ctrl-C
    included), else None (the chapters run in this process). An unreachable scheduler raises
    ``CudalabError`` here, before the build writes anything."""
    if given is not None or not options.dask:
        yield given
        return
    from cudalab.report import cluster  # Dask only where asked for: a plain build never imports it

    pool = cluster.open_pool(workers=options.workers, scheduler=options.scheduler, mode=mode, log=log)
    try:
        yield pool
    finally:
        pool.close()  # idempotent: a build may close it earlier, once its workers are done
