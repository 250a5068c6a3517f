"""A submission's accepted files copied where its kernels compile, for one build or grading run:
never into ``kernels_cu/`` and never back into the student's folder.

The copy holds the student's accepted ``.cu`` and ``.cuh`` files and the project's kernel headers
they include that the student did not bring (``add_min.cuh``); every compiler here puts a kernel
file's own folder on its include path, so the copy compiles on its own and reads nothing else of
the project.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cudalab.core.errors import CudalabError
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.submission import Submission


def stage(sub: Submission, dest: Path) -> Path:
    """Copy ``sub``'s accepted files, and the project headers they may include, to ``dest`` (created,
    and emptied of an earlier copy of this submission); return ``dest``."""
    dest = Path(dest)
    if dest.resolve() == KERNELS_DIR.resolve() or KERNELS_DIR.resolve() in dest.resolve().parents:
        raise CudalabError("a submission is staged outside kernels_cu/ (the reference files are never replaced)")
    if dest.exists():
        if not (dest / ".cudalab-staged").is_file():
            raise CudalabError(f"{dest} exists and was not staged by cudalab: choose another output folder")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / ".cudalab-staged").write_text("a copy of a submission, made by cudalab; rebuilt by each run\n")
    for name in sub.sha256:
        shutil.copyfile(sub.folder / name, dest / name)
    for header in KERNELS_DIR.glob("*.cuh"):
        if not (dest / header.name).exists():
            shutil.copyfile(header, dest / header.name)
    return dest
