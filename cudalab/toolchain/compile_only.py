"""A submission compiled without a GPU: each of its kernel files beside the project's file it
stands in for, built with nvcc for the profile's architecture (issue 43, item 2).

Per kernel function: registers, shared memory, stack and spills (``ptxas -v``), and the number of
machine instructions (``cuobjdump -sass``), the student's and the reference's side by side. A file
that does not compile is one row saying so, with the file name and line of the compiler's first
error, the submission's own file name and never a path of the machine. Timings need a GPU; this
says what the compiler made of the code.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pandas as pd

from cudalab.core.errors import KernelCompileError, ToolUnavailable
from cudalab.core.kernels import compile_error, include_options, source_digest
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.submission import Submission
from cudalab.toolchain.nvcc import cuda_tool, parse_ptxas
from cudalab.toolchain.sass import parse_sass

YOURS, REFERENCE = "yours", "reference"
# A student's file is untrusted: a template that never ends compiling must not hold the grader.
COMPILE_LIMIT_S = 120.0
TIMINGS_NEED_A_GPU = "compiled only: its timings need a GPU (run the same command on a GPU host)"


def _where(error: KernelCompileError, folder: Path) -> str:
    """The compiler's first error as the student reads it: 'fw_blocked.cu:12: expected a ";"'."""
    name = error.path.name if error.path.resolve().parent in (folder.resolve(), KERNELS_DIR.resolve()) else "?"
    return f"{name}:{error.line}: {error.message}" if error.line else f"{name}: {error.message}"


def _nvcc(path: Path, args: list[str]) -> str:
    """Run nvcc on ``path`` (``args`` before the file) in a process group of its own, stopped with
    its children (cicc, ptxas) after ``COMPILE_LIMIT_S``; its log, or ``KernelCompileError``."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here: a submission cannot be compiled")
    proc = subprocess.Popen(
        [nvcc, *args, str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        log, _ = proc.communicate(timeout=COMPILE_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise KernelCompileError(
            path, None, f"the compiler ran past {COMPILE_LIMIT_S:g} s and was stopped", ""
        ) from None
    if proc.returncode != 0:
        raise compile_error(path, log)
    return log


def _build(path: Path, arch: str, includes: tuple[str, ...]) -> list[dict]:
    """One kernel file's functions: resources and SASS instruction counts (ToolUnavailable where
    nvcc is missing; a missing cuobjdump leaves the instruction count out)."""
    cuobjdump = cuda_tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        args = ["-cubin", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", *includes, *include_options(path)]
        log = _nvcc(path, [*args, "-o", str(cubin)])
        sass = (
            parse_sass(subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout)
            if cuobjdump
            else {}
        )
    return [
        {
            "kernel": u.kernel,
            "registers_per_thread": u.registers,
            "shared_bytes": u.shared_bytes,
            "stack_bytes": u.stack_bytes,
            "spill_bytes": u.spill_store_bytes + u.spill_load_bytes,
            **({"sass_instructions": sum(sass.get(u.kernel, {}).values())} if sass else {}),
        }
        for u in parse_ptxas(log)
    ]


_ENTRY = re.compile(r"\.entry\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(?P<type>\w+)")


def entry_signatures(path: Path, arch: str, includes: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Each kernel a file defines, as the GPU launches it: name -> the PTX types of its parameters
    (``u64`` a pointer or 64-bit integer, ``u32`` an int, ``f32`` a float). Read from the compiled
    PTX, so macros in a parameter list and launch bounds are what the compiler made of them."""
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        _nvcc(path, ["-ptx", f"-arch={arch}", "-std=c++17", f"-I{path.parent}", *includes, "-o", str(ptx)])
        text = ptx.read_text()
    return {m["name"]: tuple(_PARAM.findall(m["params"])) for m in _ENTRY.finditer(text)}


def _declaration(path: Path, name: str) -> str:
    """The reference's own declaration of a kernel, as a student reads it (its source text)."""
    text = path.read_text(errors="replace")
    at = text.find(f"{name}(")
    if at < 0:
        return name
    start = text.rfind("extern", 0, at)
    end, depth = at + len(name), 0
    for i in range(end, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            end = i + 1
            break
    return " ".join(text[start if start >= 0 else at : end].split())


@cache
def _reference_signatures(path: str, digest: str, arch: str) -> dict[str, tuple[str, ...]]:
    """``entry_signatures`` of a project kernel file, once per version (``digest``) and architecture:
    a class of thirty is checked against the same reference."""
    return entry_signatures(Path(path), arch)


@cache
def _reference_build(path: str, digest: str, arch: str) -> tuple[dict, ...]:
    """``_build`` of a project kernel file, once per version and architecture."""
    return tuple(_build(Path(path), arch, ()))


def signature_problems(reference: Path, yours: Path, arch: str, includes: tuple[str, ...]) -> list[str]:
    """Each kernel the reference file defines (what its chapter launches by name) that ``yours``
    lacks or defines with other parameters: one message naming the expected signature."""
    want = _reference_signatures(str(reference), source_digest(reference), arch)
    have = entry_signatures(yours, arch, includes)
    problems = []
    for name, params in want.items():
        expected = _declaration(reference, name)
        if name not in have:
            problems.append(f"{yours.name} defines no kernel {name}: the chapter launches {expected}")
        elif have[name] != params:
            problems.append(
                f"{yours.name}: {name} takes {len(have[name])} parameters of other types than the chapter's launch "
                f"passes; it expects {expected}"
            )
    return problems


def beside_reference(sub: Submission, arch: str) -> pd.DataFrame:
    """Every kernel file of ``sub`` and its reference, compiled for ``arch`` (``sm_90``): one row
    per (file, source, kernel function), ``status`` ok or "does not compile" with ``reason``."""
    if cuda_tool("nvcc") is None:
        raise ToolUnavailable("nvcc is not installed here: a submission cannot be compiled")
    rows = []
    own = (f"-I{sub.folder.resolve()}", f"-I{KERNELS_DIR}")
    for name, reference in sub.kernels.items():
        for source, path, includes in ((REFERENCE, reference, ()), (YOURS, sub.folder / name, own)):
            base = {"file": name, "source": source}
            try:
                built = (
                    list(_reference_build(str(path), source_digest(path), arch))
                    if source == REFERENCE
                    else _build(path, arch, includes)
                )
                misfits = signature_problems(reference, path, arch, includes) if source == YOURS else []
            except KernelCompileError as exc:
                rows.append({**base, "status": "does not compile", "reason": _where(exc, sub.folder)})
                continue
            if misfits:
                rows.append({**base, "status": "does not fit the launch", "reason": "; ".join(misfits)})
                continue
            rows += [{**base, **b, "status": "ok", "reason": ""} for b in built]
    frame = pd.DataFrame(rows)
    counts = [c for c in frame.columns if c.endswith(("_per_thread", "_bytes", "_instructions"))]
    return frame.astype({c: "Int64" for c in counts})  # whole numbers, a file that failed has none
