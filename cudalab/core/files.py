"""Writing files so that a killed process never leaves half of one: a temporary name, then rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``
    (atomic on one filesystem). A failure or interrupt leaves ``path`` as it was. The file gets
    the permissions ``path`` had, or a new file's under the umask."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        # mkstemp makes the file private (0600); give it the mode a plain open() would, so that a
        # report, a handout or a result meant for others (a web server, a shared lab folder) can
        # be read like any other file the user writes
        os.chmod(tmp, _plain_mode(path))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _plain_mode(path: Path) -> int:
    """The permission bits ``path`` has if it exists, else those of a new file under the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
