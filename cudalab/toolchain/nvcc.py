"""nvcc as a child process: compile-check a ``.cu`` file and read its resource usage (``ptxas -v``).

Works without a GPU (CI compiles every kernel for sm_75 and sm_90); a compile error names the
``.cu`` file and line, like a load through NVRTC does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache, lru_cache
from pathlib import Path

from cudalab.core.errors import ProfileError, ToolUnavailable
from cudalab.core.kernels import compile_error, include_options, kernel_path, source_digest
from cudalab.core.occupancy import cc_key, sm_limits


@dataclass(frozen=True)
class PtxasUsage:
    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?")


def parse_ptxas(log: str) -> list[PtxasUsage]:
    """Per-kernel registers, shared memory and spills from ``ptxas -v`` output."""
    usages, current = [], None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = {"kernel": m["name"], "arch": m["arch"], "stack": 0, "st": 0, "ld": 0}
        elif current and (m := _FRAME.search(line)):
            current.update(stack=int(m["stack"]), st=int(m["st"]), ld=int(m["ld"]))
        elif current and (m := _USED.search(line)):
            usages.append(
                PtxasUsage(
                    current["kernel"],
                    current["arch"],
                    int(m["regs"]),
                    int(m["smem"] or 0),
                    current["stack"],
                    current["st"],
                    current["ld"],
                )
            )
            current = None
    return usages


CUDA_BIN = Path("/usr/local/cuda/bin")


def cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program from PATH or /usr/local/cuda/bin, or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = CUDA_BIN / name
    return str(candidate) if candidate.is_file() else None


def nvcc_cubin(path: Path, arch: str, options: Iterable[str], out: str, extra: tuple[str, ...] = ()) -> str:
    """Compile a kernel file to a cubin with nvcc; its log, or ``KernelCompileError`` naming file and line
    (the included header's where the error is in one)."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here (not on PATH, nor in /usr/local/cuda/bin)")
    cmd = [
        nvcc,
        "-cubin",
        f"-arch={arch}",
        "-std=c++17",
        *extra,
        *include_options(path),
        "-o",
        out,
        *options,
        str(path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise compile_error(path, log)
    return log


def nvcc_check(filename: str | Path, arch: str = "sm_90", options: Iterable[str] = ()) -> list[PtxasUsage]:
    """Compile a ``.cu`` file to a cubin with nvcc (no GPU needed) and report resources.

    Raises ``KernelCompileError`` naming the file and line when it does not compile.
    """
    return parse_ptxas(nvcc_cubin(kernel_path(filename), arch, options, "/dev/null", ("-Xptxas", "-v")))


# ---- resources per kernel for a given architecture (the occupancy tables)


@cache
def nvcc_version() -> str:
    """The installed nvcc's release, e.g. ``"13.0"``; ``ToolUnavailable`` where there is none."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here (not on PATH, nor in /usr/local/cuda/bin)")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m[1] if m else "unknown"


@cache
def supported_archs() -> tuple[int, ...]:
    """The real architectures the installed nvcc compiles for, as ``10 * major + minor``, oldest first
    (``nvcc --list-gpu-code``: CUDA 13.0 starts at sm_75)."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here (not on PATH, nor in /usr/local/cuda/bin)")
    out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True).stdout
    return tuple(sorted({int(m[1]) for m in re.finditer(r"\bsm_(\d+)\b", out)}))


def _cc_number(cc: str | tuple) -> int:
    if isinstance(cc, tuple):
        major, minor = (int(p) for p in cc)
    else:
        text = str(cc).strip().lower()
        if text.startswith(("sm_", "compute_")):
            return int(text.split("_", 1)[1].rstrip("af"))
        major_text, _, minor_text = text.partition(".")
        if not (major_text.isdigit() and minor_text.isdigit()):
            raise ProfileError(f'compute capability {cc!r}: give major.minor (e.g. "5.2", not "5.x")')
        major, minor = int(major_text), int(minor_text)
    return 10 * major + minor


def compile_arch(cc: str | tuple, supported: Sequence[int] | None = None) -> tuple[str, str]:
    """The architecture to take a kernel's registers and shared memory from for a GPU of compute
    capability ``cc``, and a note for the report ("" when nvcc compiles for ``cc`` itself).

    nvcc compiles for a fixed set of real architectures (``supported``, default: the installed
    nvcc's, ``nvcc --list-gpu-code``); CUDA 13 starts at sm_75, so a GPU older than that gets the
    oldest one, and one between two supported architectures the nearest older one. ``ptxas`` may
    allocate registers differently for the GPU itself: the note says which architecture was used."""
    archs = tuple(sorted(supported if supported is not None else supported_archs()))
    if not archs:
        raise ToolUnavailable("nvcc lists no architecture it can compile for")
    want = _cc_number(cc)
    named = f"{want // 10}.{want % 10}"
    if want in archs:
        return f"sm_{want}", ""
    cuda = "this nvcc" if supported is not None else f"CUDA {nvcc_version()}"
    if want < archs[0]:
        return f"sm_{archs[0]}", (
            f"registers and shared memory from sm_{archs[0]}, the oldest architecture "
            f"{cuda} compiles for (the GPU is compute capability {named})"
        )
    older = max(a for a in archs if a < want)
    return f"sm_{older}", (
        f"registers and shared memory from sm_{older}, the nearest architecture {cuda} "
        f"compiles for below compute capability {named}"
    )


_MANGLED_NAME = re.compile(r"(\d+)")


def kernel_base_name(symbol: str) -> str:
    """The name a kernel was declared with: ``extern "C"`` kernels keep it; an Itanium-mangled one
    (``_Z3fooPi``, ``_ZN2ns3fooEv``, ``_Z3fooILi3EEvPi``) gives its (qualified) name, without
    parameters or template arguments."""
    if not symbol.startswith("_Z"):
        return symbol
    rest, nested, parts = symbol[2:], False, []
    if rest.startswith("N"):
        rest, nested = rest[1:], True
    while rest and rest[0].isdigit():
        length = int(_MANGLED_NAME.match(rest)[1])
        start = len(str(length))
        parts.append(rest[start : start + length])
        rest = rest[start + length :]
        if not nested:
            break
    return "::".join(parts) or symbol


def cache_dir() -> Path:
    """Where compiler resource reports are kept between builds: ``$CUDALAB_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/cudalab`` or ``~/.cache/cudalab`` (as CuPy keeps its kernel cache)."""
    root = (
        os.environ.get("CUDALAB_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cudalab"
    )
    return Path(root) / "ptxas"


def _report_file(path: str | Path, arch: str, options: Iterable[str]) -> Path:
    key = hashlib.sha256(json.dumps([source_digest(path), arch, list(options), nvcc_version()]).encode()).hexdigest()
    return cache_dir() / f"{key}.json"


def remember_resources(path: str | Path, arch: str, options: Iterable[str], usages: Sequence[PtxasUsage]) -> None:
    """Keep a build's ``ptxas -v`` report in the disk cache, for a compile made for another reason
    (the SASS table's) to spare the occupancy table its own."""
    cached = _report_file(path, arch, options)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps([asdict(u) for u in usages]))
        tmp.replace(cached)
    except OSError:  # a read-only home: no cache, same answer
        pass


@lru_cache(maxsize=256)
def _resources(path: str, digest: str, arch: str, options: tuple[str, ...]) -> tuple[PtxasUsage, ...]:
    """``ptxas -v`` of one build (``digest``: its ``source_digest``, the file and its headers), from
    the disk cache when the same source, headers, options, architecture and nvcc produced it before
    (a report is a pure function of those)."""
    try:
        return tuple(PtxasUsage(**u) for u in json.loads(_report_file(path, arch, options).read_text()))
    except (OSError, ValueError, TypeError):
        pass
    usages = tuple(nvcc_check(path, arch, options))
    remember_resources(path, arch, options, usages)
    return usages


def kernel_resources_for(
    filename: str | Path, arch: str = "sm_90", options: Iterable[str] = ()
) -> dict[str, PtxasUsage]:
    """Each kernel of a ``.cu`` file with its registers and static shared memory on ``arch``
    (``ptxas -v``; compiled once per version of the file and its headers, architecture and
    options), by the name it was declared with (``kernel_base_name``; the mangled name where two
    overloads share one)."""
    path = kernel_path(filename)
    usages = _resources(str(path), source_digest(path), arch, tuple(options))
    names = [kernel_base_name(u.kernel) for u in usages]
    return {(name if names.count(name) == 1 else u.kernel): u for name, u in zip(names, usages)}


def kernel_resources_for_cc(
    filename: str | Path, cc: str | tuple, options: Iterable[str] = ()
) -> tuple[dict[str, PtxasUsage], str]:
    """``kernel_resources_for`` on the architecture ``compile_arch(cc)`` picks, and the note that says
    where the numbers come from ("" when nvcc compiles for ``cc`` itself).

    A kernel compiled for a newer architecture may use more registers per thread than the GPU of
    ``cc`` allows (63 on cc 3.0): its compiler would have capped them and spilt the rest to local
    memory, so the count is capped at that limit here, and the note says so (``-maxrregcount``
    cannot do it: a kernel's ``__launch_bounds__`` override it)."""
    arch, note = compile_arch(cc)
    cap = sm_limits(cc).max_registers_per_thread
    usages = kernel_resources_for(filename, arch, options)
    capped = sorted(name for name, u in usages.items() if u.registers > cap)
    if capped:
        usages = {name: replace(u, registers=min(u.registers, cap)) for name, u in usages.items()}
        note = "; ".join(
            filter(
                None,
                [
                    note,
                    f"{', '.join(capped)} capped at the {cap} registers per thread that "
                    f"compute capability {cc_key(cc)} allows (its compiler "
                    f"spills the rest)",
                ],
            )
        )
    return usages, note
