"""A CPU reference in C, built once with the system C compiler and loaded with ctypes.

The labs measured their GPUs against compiled sequential C, so their references run as C here
too. The shared library is cached under a name that hashes the source, the compiler and its
flags: editing the C source rebuilds it, and concurrent builds never see half a library.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
from functools import cache
from pathlib import Path

from cudalab.core.errors import ToolUnavailable
from cudalab.core.paths import cache_dir

# -ffp-contract=off keeps a * b + c two roundings, as the labs' compilers did, so float
# results match the published sequential codes bit for bit.
CFLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off")


def compiler() -> str:
    """The C compiler (``$CC``, else ``cc``); ``ToolUnavailable`` where there is none."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise ToolUnavailable(f"no C compiler {cc!r} on PATH (set CC) for the CPU reference")
    return cc


def build_description(source: Path) -> str:
    """How a reference is compiled, for the report."""
    return f"{compiler()} {' '.join(CFLAGS)} {source.name}"


@cache
def shared_library(source: Path) -> ctypes.CDLL:
    """``source`` compiled into a cached shared library and loaded (once per process)."""
    cc = compiler()
    digest = hashlib.sha256(source.read_bytes() + " ".join((cc, *CFLAGS)).encode()).hexdigest()[:16]
    lib = cache_dir() / f"{source.stem}-{digest}.so"
    if not lib.exists():
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        cmd = [cc, *CFLAGS, "-o", str(tmp), str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolUnavailable(f"building the CPU reference failed: {shlex.join(cmd)}\n{proc.stderr}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))
