"""A scratch copy of a chapter's kernel, to edit in JupyterLab and measure beside the original.

``scratch_kernel("fw_basic_2d.cu")`` copies ``kernels_cu/fw_basic_2d.cu`` and the local headers
it includes (``add_min.cuh``) to ``notebooks/scratch/``, where the copy compiles on its own: every
compiler here puts the kernel's own folder on the include path. The originals are only read; a
scratch copy that exists already (a student's edits) is never overwritten unless asked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cudalab.core.errors import CudalabError
from cudalab.core.kernels import included_headers
from cudalab.core.paths import KERNELS_DIR, SCRATCH_DIR


def shown(path: str | Path) -> str:
    """A kernel file as a message names it: its folder and name ("scratch/fw_basic_2d.cu",
    "kernels_cu/add_min.cuh")."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def scratch_kernel(kernel_file: str, dest_dir: Path | None = None, *, overwrite: bool = False) -> Path:
    """Copy ``kernels_cu/<kernel_file>`` and the local headers it includes to ``dest_dir`` (default
    ``notebooks/scratch``) and return the copy's path, to edit and pass as ``kernel_file`` to
    ``explore.measure.measure_now``.

    Refuses (``CudalabError``) to overwrite an existing copy unless ``overwrite``: it may hold
    edits. A header already in ``dest_dir`` is kept for the same reason (another copy brought it)
    unless ``overwrite``. ``kernels_cu`` itself is never written."""
    source = KERNELS_DIR / Path(kernel_file).name
    if not kernel_file or not source.is_file():
        known = ", ".join(sorted(p.name for p in KERNELS_DIR.glob("*.cu")))
        raise CudalabError(f"no kernel file {kernel_file!r} in kernels_cu/ to copy; the kernels: {known}")
    folder = Path(dest_dir) if dest_dir is not None else SCRATCH_DIR
    if folder.resolve() == KERNELS_DIR.resolve():
        raise CudalabError("a scratch copy goes beside the notebook, never into kernels_cu/ (the originals)")
    dest = folder / source.name
    if dest.exists() and not overwrite:
        raise CudalabError(
            f"{shown(dest)} exists already and may hold your edits: open it and edit it, or call "
            f"scratch_kernel({kernel_file!r}, overwrite=True) to start again from kernels_cu/{source.name}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for header in included_headers(source):
        try:
            target = folder / header.relative_to(KERNELS_DIR.resolve())
        except ValueError:  # a header outside kernels_cu: the compiler finds it where it is
            continue
        if overwrite or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(header, target)
    shutil.copyfile(source, dest)
    return dest
