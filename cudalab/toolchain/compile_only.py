"""A submission compiled without a GPU: each of its kernel files beside the project's file it
stands in for, built with nvcc for the profile's architecture (issue 43, item 2), at each point a
chapter grades, with that point's own build options (``-DBF=32`` at chapter 04's BF 32 point, not
the file's default BF 64; issue 65, item 10).

Per point and kernel function: registers, shared memory, stack and spills (``ptxas -v``), and the
number of machine instructions (``cuobjdump -sass``: the toolkit's, else the one NVIDIA's
``nvidia-cuda-cuobjdump`` wheel installs; ``sass_unavailable`` says why where there is none), the
student's and the reference's side by side. A file that does not compile is one row saying so, with
the file name and line of the compiler's first error, the submission's own file name and never a
path of the machine; one whose compiler runs past its limits (``core.limits.COMPILER``: CPU time,
memory, file size, processes, wall-clock time) is stopped and says which. A kernel whose parameters
are declared with other types than the chapter's launch passes (``float*`` where it passes
``int*``) does not fit the launch. Timings need a GPU; this says what the compiler made of the code.

nvcc runs on a student's file: under the limits, with a scrubbed environment (``core.limits``), and,
where the grader is root, as an unprivileged user.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Protocol

import pandas as pd

from cudalab.core import limits as L
from cudalab.core.errors import KernelCompileError, ToolUnavailable
from cudalab.core.kernels import compile_error, include_options, source_digest
from cudalab.core.launch import Launch
from cudalab.core.paths import KERNELS_DIR
from cudalab.toolchain.nvcc import cuda_tool, kernel_base_name, parse_ptxas
from cudalab.toolchain.sass import parse_sass

YOURS, REFERENCE = "yours", "reference"
LIMITS = L.COMPILER  # what one compiler process may take (core/limits.py: the defaults, documented)
# The wall-clock limit (core.limits.COMPILE_LIMIT_S), the one a caller may lower alone: a student's
# file is untrusted, a template that never ends compiling must not hold the grader.
COMPILE_LIMIT_S = L.COMPILE_LIMIT_S
TIMINGS_NEED_A_GPU = "compiled only: its timings need a GPU (run the same command on a GPU host)"


def _where(error: KernelCompileError, folder: Path) -> str:
    """The compiler's first error as the student reads it: 'fw_blocked.cu:12: expected a ";"'."""
    name = error.path.name if error.path.resolve().parent in (folder.resolve(), KERNELS_DIR.resolve()) else "?"
    return f"{name}:{error.line}: {error.message}" if error.line else f"{name}: {error.message}"


# ---- nvcc under limits, as an unprivileged user where the grader is root


def _said_as_grader(why: str) -> None:
    L.say_once(f"the compiler runs as this process's user, not as an unprivileged one: {why}")


@cache
def _compiler_account() -> L.Account | None:
    """The unprivileged account nvcc runs as (``core.limits.sandbox_account``), where it can: the
    project's kernels open to it and nvcc running as it; None (said once) where not."""
    account = L.sandbox_account()
    nvcc = cuda_tool("nvcc")
    if account is None or nvcc is None:
        return None
    closed = L.closed_to(KERNELS_DIR, account)
    if closed is not None:
        _said_as_grader(f"{closed} is closed to {account.name}")
        return None
    why = L.fails_as([nvcc, "--version"], account, L.scrubbed_env(Path("/"), {}))
    if why:
        _said_as_grader(why)
        return None
    return account


def _include_folders(args: Sequence[str]) -> list[Path]:
    return [Path(a[2:]) for a in args if a.startswith("-I") and len(a) > 2]


@contextmanager
def _workdir(reads: Sequence[Path]) -> Iterator[tuple[Path, L.Account | None]]:
    """A folder of the compiler's own (its output, HOME and TMPDIR) and the account it runs as:
    the unprivileged one where every file it ``reads`` is open to it, else this process's user."""
    account = _compiler_account()
    with tempfile.TemporaryDirectory(prefix="cudalab-nvcc-") as tmp:
        if account is not None:
            closed = next((c for p in reads if (c := L.closed_to(p, account)) is not None), None)
            if closed is None:
                os.chown(tmp, account.uid, account.gid)
                closed = L.closed_to(Path(tmp), account, write=True)
            if closed is not None:
                _said_as_grader(f"{closed} is closed to {account.name}")
                account = None
        yield Path(tmp), account


def _signal_of(returncode: int, log: str) -> int | None:
    """The signal that stopped the compiler or one of its steps: from its exit status (negative, or
    128 + N as a shell reports it) or nvcc's "died due to signal N"."""
    if m := re.search(r"died due to signal (\d+)", log):
        return int(m[1])
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode < 160 else None


def limit_reached(returncode: int, log: str, limits: L.ProcessLimits) -> str | None:
    """Which of ``limits`` a failed compile ran into, in words ("CPU time: 120 s"), from its exit
    status and log; None for an ordinary compile error. A crash under an address-space limit counts
    as memory: cicc and ptxas die that way when an allocation fails."""
    text, sig = log.lower(), _signal_of(returncode, log)
    too_large = any(w in text for w in ("file size limit exceeded", "file too large"))
    if limits.file_bytes is not None and (too_large or sig == signal.SIGXFSZ):
        return f"file size: files up to {L.size_words(limits.file_bytes)}"
    if limits.cpu_s is not None and ("cpu time limit exceeded" in text or sig in (signal.SIGXCPU, signal.SIGKILL)):
        return f"CPU time: {limits.cpu_s:g} s"
    memory = limits.address_space_bytes or limits.data_bytes
    if memory is not None and (
        any(w in text for w in ("out of memory", "bad_alloc", "cannot allocate memory", "memory exhausted"))
        or sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT)
    ):
        kind = "address space" if limits.address_space_bytes else "memory"
        return f"memory: {L.size_words(memory)} of {kind}"
    if limits.processes is not None and any(
        w in text for w in ("resource temporarily unavailable", "cannot fork", "fork failed")
    ):
        return f"processes: {limits.processes} more than its user runs"
    return None


def _run_limited(cmd: list[str], workdir: Path, account: L.Account | None, limits: L.ProcessLimits, env=None):
    """Run ``cmd`` under ``limits`` in a process group of its own: (exit status, its output), or
    None where it ran past ``limits.wall_s`` (then it is killed with its children)."""
    proc = L.popen(
        cmd,
        limits,
        account,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        cwd=workdir,
        env=env or L.scrubbed_env(workdir, {}),
    )
    try:
        log, _ = proc.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.communicate()
        return None
    except BaseException:  # an interrupt (a cancelled job): the compiler goes with the wait
        L.kill_group(proc)
        raise
    return proc.returncode, log


def _nvcc(path: Path, args: list[str], workdir: Path, account: L.Account | None = None) -> str:
    """Run nvcc on ``path`` (``args`` before the file) in ``workdir`` under ``LIMITS`` (wall-clock:
    ``COMPILE_LIMIT_S``), as ``account`` where given; its log, or ``KernelCompileError`` (the
    compiler's first error, or the limit it ran past)."""
    nvcc = cuda_tool("nvcc")
    if nvcc is None:
        raise ToolUnavailable("nvcc is not installed here: a submission cannot be compiled")
    limits = replace(LIMITS, wall_s=COMPILE_LIMIT_S)
    done = _run_limited([nvcc, *args, str(path)], workdir, account, limits)
    if done is None:
        message = f"the compiler ran past its limit (wall-clock time: ran past {limits.wall_s:g} s and was stopped)"
        raise KernelCompileError(path, None, message, "")
    code, log = done
    if code != 0:
        reached = limit_reached(code, log, limits)
        if reached is not None:
            raise KernelCompileError(path, None, f"the compiler ran past its limit ({reached})", log)
        raise compile_error(path, log)
    return log


# ---- SASS: cuobjdump, the toolkit's or the one NVIDIA's wheel installs


def _wheel_tool(name: str) -> Path | None:
    """``name`` as NVIDIA's CUDA wheels install it (``site-packages/nvidia/cu13/bin/cuobjdump``)."""
    try:
        import nvidia  # the namespace package of NVIDIA's wheels
    except ImportError:
        return None
    for root in map(Path, getattr(nvidia, "__path__", [])):
        for found in sorted(root.glob(f"*/bin/{name}"), reverse=True):  # cu13 before cu12
            if found.is_file() and os.access(found, os.X_OK):
                return found
    return None


@cache
def sass_tool() -> str | None:
    """cuobjdump: the toolkit's (PATH, /usr/local/cuda/bin), else the wheel's; None where neither."""
    found = cuda_tool("cuobjdump")
    if found:
        return found
    wheel = _wheel_tool("cuobjdump")
    return str(wheel) if wheel else None


def sass_unavailable() -> str:
    """Why SASS instruction counts are absent, in one sentence; "" where cuobjdump is here."""
    if sass_tool() is not None:
        return ""
    return (
        "SASS instruction counts are left out: cuobjdump is not installed here (neither the CUDA "
        "toolkit's nor the nvidia-cuda-cuobjdump wheel's; pip install nvidia-cuda-cuobjdump-cu13)"
    )


def _sass(cubin: Path, workdir: Path, account: L.Account | None) -> dict[str, dict[str, int]]:
    """Opcode counts per kernel of a compiled ``cubin``; empty where cuobjdump is missing or fails.
    The tool's own folder goes first on PATH: cuobjdump runs nvdisasm from there."""
    tool = sass_tool()
    if tool is None:
        return {}
    env = L.scrubbed_env(workdir, {})
    env["PATH"] = os.pathsep.join([str(Path(tool).parent), env.get("PATH", "")])
    if account is not None and L.closed_to(Path(tool), account) is not None:
        account = None  # a wheel in a home closed to others: our own tool on the compiler's output
    done = _run_limited([tool, "-sass", str(cubin)], workdir, account, LIMITS, env)
    return parse_sass(done[1]) if done is not None and done[0] == 0 else {}


# ---- one build: resources and SASS


def _build(path: Path, arch: str, includes: tuple[str, ...], options: tuple[str, ...] = ()) -> list[dict]:
    """One kernel file's functions built with ``options``: resources and SASS instruction counts
    (ToolUnavailable where nvcc is missing; a missing cuobjdump leaves the instruction count out)."""
    base = include_options(path)
    with _workdir([path, *_include_folders([*includes, *base])]) as (tmp, account):
        cubin = tmp / "k.cubin"
        args = ["-cubin", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", *includes, *base, *options]
        log = _nvcc(path, [*args, "-o", str(cubin)], tmp, account)
        sass = _sass(cubin, tmp, account)
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


# ---- signatures: as the GPU launches them (PTX), and as they are declared (C++ types)

_ENTRY = re.compile(r"\.entry\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(?P<type>\w+)")
_PROBE = "cudalab_declared_type"  # the template whose instances carry each kernel's declared type


def _ptx(
    source: Path, arch: str, includes: Sequence[str], options: Sequence[str], reads: Sequence[Path], probe: str = ""
) -> str:
    """``source`` compiled to PTX (with the ``probe`` text after it, where given); the PTX text."""
    with _workdir(list(reads)) as (tmp, account):
        ptx = tmp / "k.ptx"
        compiled = source
        if probe:
            compiled = tmp / "probe.cu"
            compiled.write_text(f'#include "{source}"\n{probe}')
            if account is not None:
                os.chown(compiled, account.uid, account.gid)
        # -O0 in cicc: the entries' parameters are the ABI's whatever the optimizer does, and the
        # PTX comes in about half the time (fw_blocked.cu at BF 64: 0.7 s, not 1.6 s)
        args = ["-ptx", f"-arch={arch}", "-std=c++17", "-Xcicc", "-O0", f"-I{source.parent}", *includes, *options]
        args += ["-o", str(ptx)]
        _nvcc(compiled, args, tmp, account)
        return ptx.read_text()


def _entries(ptx: str) -> dict[str, tuple[str, ...]]:
    """Each kernel of a PTX text (the probe's instances left out) -> its parameters' PTX types."""
    return {m["name"]: tuple(_PARAM.findall(m["params"])) for m in _ENTRY.finditer(ptx) if _PROBE not in m["name"]}


def entry_signatures(
    path: Path, arch: str, includes: tuple[str, ...] = (), options: tuple[str, ...] = ()
) -> dict[str, tuple[str, ...]]:
    """Each kernel a file defines, as the GPU launches it: name -> the PTX types of its parameters
    (``u64`` a pointer or 64-bit integer, ``u32`` an int, ``f32`` a float). Read from the compiled
    PTX, so macros in a parameter list and launch bounds are what the compiler made of them."""
    return _entries(_ptx(path, arch, includes, options, [path, *_include_folders(includes)]))


def _probe_text(names: Sequence[str]) -> str:
    """C++ that instantiates a kernel template once per kernel of ``names``, each with the kernel's
    function type as its template argument: its mangled name spells the declared parameter types."""
    lines = [f"template <int cudalab_index_, typename cudalab_type_> __global__ void {_PROBE}() {{}}"]
    lines += [f"template __global__ void {_PROBE}<{i}, decltype({n})>();" for i, n in enumerate(names)]
    return "\n".join(lines) + "\n"


@cache
def _demangler():
    """``__cxa_demangle`` of the C++ runtime (ctypes), or None where it cannot be loaded."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None
    fn = lib.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]
    return fn, libc.free


def demangled(symbol: str) -> str | None:
    """An Itanium-mangled symbol in C++ words (``_Z3fooPi`` -> ``foo(int*)``); None where it cannot be."""
    found = _demangler()
    if found is None:
        return None
    fn, free = found
    status = ctypes.c_int()
    at = fn(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not at:
        return None
    try:
        return ctypes.string_at(at).decode(errors="replace")
    finally:
        free(at)


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets: ``int*, foo<a, b>, int`` -> three parts."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"<": 1, "(": 1, "[": 1, ">": -1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail or parts else []


_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict)\b")


def _plain(kind: str) -> str:
    """A parameter's type without the qualifiers that change nothing a launch passes (const,
    volatile, restrict): ``float const*`` and ``float*`` take the same pointer."""
    return " ".join(_QUALIFIERS.sub(" ", kind).split()).replace(" *", "*")


def declared_types(ptx: str, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each of ``names`` -> its parameters' declared C++ types, read from the probe's instances in
    ``ptx`` (``_probe_text``); a name whose instance cannot be read is left out."""
    found = {}
    for m in _ENTRY.finditer(ptx):
        if _PROBE not in m["name"]:
            continue
        text = demangled(m["name"]) or ""
        if not (at := re.search(rf"{_PROBE}<(\d+), void \((.*)\)>\(\)$", text)):
            continue
        index = int(at[1])
        if index < len(names):
            found[names[index]] = tuple(_split_top(at[2]))
    return found


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


@dataclass(frozen=True)
class Signatures:
    """A file's kernels as the GPU launches them (``ptx``: name -> PTX types) and as they are
    declared (``declared``: name -> C++ types, for the ``extern "C"`` kernels)."""

    ptx: dict[str, tuple[str, ...]]
    declared: dict[str, tuple[str, ...]]


def _unmangled(names: Sequence[str]) -> list[str]:
    return [n for n in names if not n.startswith("_Z")]  # a C++ name's mangling spells its types already


@cache
def _reference_signatures(path: str, digest: str, arch: str, options: tuple[str, ...] = ()) -> Signatures:
    """A project kernel file's ``Signatures``, once per version (``digest``), architecture and
    options: a class of thirty is checked against the same reference."""
    source = Path(path)
    ptx = entry_signatures(source, arch, (), options)
    names = _unmangled(list(ptx))
    declared = declared_types(_ptx(source, arch, (), options, [source], _probe_text(names)), names) if names else {}
    return Signatures(ptx, declared)


def _signatures(path: Path, arch: str, includes: tuple[str, ...], options: tuple[str, ...], names: list[str]):
    """``yours``'s ``Signatures``, its declared types read for the reference's ``names``: one
    compile where it defines them all, else a plain one (its own compile error, or the names it
    lacks)."""
    reads = [path, *_include_folders(includes)]
    if names:
        try:
            ptx = _ptx(path, arch, includes, options, reads, _probe_text(names))
            return Signatures(_entries(ptx), declared_types(ptx, names))
        except KernelCompileError:
            pass  # a name it lacks, or its own error: the plain build says which
    return Signatures(entry_signatures(path, arch, includes, options), {})


def signature_problems(
    reference: Path,
    yours: Path,
    arch: str,
    includes: tuple[str, ...],
    options: tuple[str, ...] = (),
    kernels: Sequence[str] | None = None,
) -> list[str]:
    """Each kernel the reference file defines (what its chapter launches by name; of ``kernels``
    only, where given) that ``yours`` lacks, or defines with parameters the launch does not pass:
    other PTX types (how many, how wide) or other declared C++ types (``float*`` for ``int*``;
    const, volatile and restrict aside). One message each, naming the expected signature. Both are
    built with ``options``, the point's."""
    want = _reference_signatures(str(reference), source_digest(reference), arch, tuple(options))
    named = [n for n in want.ptx if kernels is None or n in kernels or kernel_base_name(n) in kernels]
    have = _signatures(yours, arch, includes, tuple(options), [n for n in _unmangled(named) if n in want.declared])
    problems = []
    for name in named:
        expected = _declaration(reference, name)
        if name not in have.ptx:
            problems.append(f"{yours.name} defines no kernel {name}: the chapter launches {expected}")
        elif have.ptx[name] != want.ptx[name]:
            problems.append(
                f"{yours.name}: {name} takes {len(have.ptx[name])} parameters of other types than the chapter's "
                f"launch passes; it expects {expected}"
            )
        elif name in have.declared and [_plain(t) for t in have.declared[name]] != [
            _plain(t) for t in want.declared[name]
        ]:
            mine, theirs = ", ".join(have.declared[name]), ", ".join(want.declared[name])
            problems.append(
                f"{yours.name}: {name} takes ({mine}) where the chapter's launch passes ({theirs}): parameters "
                f"of other types than the chapter's launch passes; it expects {expected}"
            )
    return problems


# ---- a submission beside the reference, point by point


@dataclass(frozen=True)
class PointBuild:
    """One graded point as the compiler sees it: its label (``n=3000, block_factor=32, ...``) and
    the launches it makes of the kernel file (each with its build options, block and dynamic shared
    memory); no launches: the file as it builds without options (its own defaults)."""

    point: str
    launches: tuple[Launch, ...] = ()

    def builds(self, file: str) -> list[tuple[tuple[str, ...], list[str] | None]]:
        """Each distinct set of build options the point compiles ``file`` with, and the kernels it
        launches from that build (None: every kernel, where the point lists no launch of it)."""
        mine = [x for x in self.launches if Path(x.file).name == file]
        if not mine:
            return [((), None)]
        by_options: dict[tuple[str, ...], list[str]] = {}
        for x in mine:
            kernels = by_options.setdefault(tuple(x.options), [])
            if x.kernel not in kernels:
                kernels.append(x.kernel)
        return list(by_options.items())


@cache
def _reference_build(path: str, digest: str, arch: str, options: tuple[str, ...] = ()) -> tuple[dict, ...]:
    """``_build`` of a project kernel file, once per version, architecture and options."""
    return tuple(_build(Path(path), arch, (), options))


def _launched(built: list[dict], kernels: list[str] | None) -> list[dict]:
    """The rows of ``built`` for the ``kernels`` a point launches (all where None, or where none of
    them is found: a name the compiler spells otherwise)."""
    if kernels is None:
        return built
    kept = [b for b in built if b["kernel"] in kernels or kernel_base_name(b["kernel"]) in kernels]
    return kept or built


def _compiled(
    source: str, reference: Path, path: Path, arch: str, includes: tuple[str, ...], build: tuple, memo: dict
) -> tuple[list[dict], list[str]]:
    """One source's build of a file at one point (``build``: its options and launched kernels): its
    rows and, for the student's, what does not fit the launch; memoised per options in ``memo``."""
    options, kernels = build
    key = (source, str(path), options, tuple(kernels or ()))
    if key not in memo:
        try:
            if source == REFERENCE:
                built = list(_reference_build(str(path), source_digest(path), arch, options))
                misfits = []
            else:
                built = _build(path, arch, includes, options)
                misfits = signature_problems(reference, path, arch, includes, options, kernels)
            memo[key] = (_launched(built, kernels), misfits)
        except KernelCompileError as exc:
            memo[key] = exc
    found = memo[key]
    if isinstance(found, KernelCompileError):
        raise found
    return found


class Files(Protocol):
    """A student's files as the grader read them: the folder they were staged in, and each kernel
    file's name -> the project file it stands in for (``grading.submission.Submission``)."""

    folder: Path
    kernels: Mapping[str, Path]


def beside_reference(sub: Files, arch: str, points: Mapping[str, Sequence[PointBuild]] | None = None) -> pd.DataFrame:
    """Every kernel file of ``sub`` and its reference, compiled for ``arch`` (``sm_90``): one row per
    (file, point, source, kernel function), ``status`` ok or "does not compile" / "does not fit the
    launch" with ``reason``. ``points``: per file, the points a chapter grades it at (each built with
    its own options, its launched kernels shown); a file without any is built with its defaults,
    ``point`` empty."""
    if cuda_tool("nvcc") is None:
        raise ToolUnavailable("nvcc is not installed here: a submission cannot be compiled")
    rows, memo = [], {}
    own = (f"-I{sub.folder.resolve()}", f"-I{KERNELS_DIR}")
    for name, reference in sub.kernels.items():
        for at in (points or {}).get(name) or [PointBuild("")]:
            for build in at.builds(name):
                options = " ".join(build[0])
                for source, path, includes in ((REFERENCE, reference, ()), (YOURS, sub.folder / name, own)):
                    base = {"file": name, "point": at.point, "source": source, "options": options}
                    try:
                        built, misfits = _compiled(source, reference, path, arch, includes, build, memo)
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
