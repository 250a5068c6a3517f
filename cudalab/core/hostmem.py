"""How much host memory is there to take, so a too-large input is refused with numbers, not a MemoryError."""

from __future__ import annotations

import os

from cudalab.core.errors import NotEnoughMemory


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else free pages; None where neither can be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def require(nbytes: int, what: str, headroom: float = 0.9) -> None:
    """Raise ``NotEnoughMemory`` (with both sizes) unless ``nbytes`` fit in the available host memory."""
    have = available_bytes()
    if have is not None and nbytes > headroom * have:
        raise NotEnoughMemory(
            f"{what} needs {nbytes / 2**30:.2f} GiB of host memory; {have / 2**30:.2f} GiB are available"
        )
