"""What a child process that handles a student's code may take, see and be: the compiler (nvcc on a
submitted file) and the grader's worker (where a submitted kernel runs) alike.

- **Resources** (``ProcessLimits``, defaults ``COMPILER`` and ``WORKER``, the one place they are
  written): CPU seconds, memory, the largest file it may write, processes, no core dump. They are set
  with ``setrlimit`` by a small trampoline (``python -I -S -c``) that then ``exec``s the real
  program, so that nothing runs Python code between ``fork`` and ``exec`` in a grader that starts
  children from several threads at once (``preexec_fn`` is not safe there). Each limit holds per
  process and is inherited: nvcc's cicc and ptxas each get the compiler's. A wall-clock limit is the
  parent's to watch (``wall_s``); it kills the child's process group.
- **Environment** (``scrubbed_env``): the ``KEPT`` variables only, with HOME and TMPDIR in a folder
  of the child's own.
- **User** (``sandbox_account``): where the grader runs as root, the children run as an
  unprivileged user (``nobody``, or ``$CUDALAB_SANDBOX_USER``); where that is impossible, the reason
  is said once (``say_once``) and they run as the grader.

What this is not: no namespaces, no seccomp, no cgroup; the GPU and its driver are shared with the
grader and every other process on the host. README.md (*What a submission's processes may take*)
says so for the instructor.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class ProcessLimits:
    """The resource limits of one child process; None leaves one as the grader has it.

    ``wall_s``: wall-clock seconds, watched by the parent (which kills the process group);
    ``cpu_s``: CPU seconds (``RLIMIT_CPU``: SIGXCPU at the limit, SIGKILL ``CPU_GRACE_S`` later);
    ``address_space_bytes``: virtual memory (``RLIMIT_AS``; never for a process that initialises
    CUDA, whose driver reserves host address space of about twice the GPU's memory);
    ``data_bytes``: heap and private writable mappings (``RLIMIT_DATA``: what CUDA tolerates, the
    driver's reservations are not writable private memory);
    ``file_bytes``: the largest file it may write (``RLIMIT_FSIZE``);
    ``processes``: processes and threads it may add to those its user already runs
    (``RLIMIT_NPROC`` counts every task of the user, so the limit is set at the user's count when
    the child starts plus this);
    ``core_bytes``: a core dump's size (``RLIMIT_CORE``; 0: none)."""

    wall_s: float | None = None
    cpu_s: float | None = None
    address_space_bytes: int | None = None
    data_bytes: int | None = None
    file_bytes: int | None = None
    processes: int | None = None
    core_bytes: int | None = 0


CPU_GRACE_S = 5  # between SIGXCPU (which a process may catch) and SIGKILL

# The wall-clock limits on a student's code, each defaulted here and only here (the command line's
# --point-limit and --submission-limit, report.options.BuildOptions and grading.isolate.Limits
# read them): one point (its compile, launches and checks in the submission's process), one
# submission's points in one chapter, and one compile of a submitted file (COMPILER.wall_s).
POINT_LIMIT_S = 30.0
SUBMISSION_LIMIT_S = 300.0
COMPILE_LIMIT_S = 120.0

# nvcc on one submitted file. The project's heaviest kernel file compiles in 3 s of CPU within 256 MiB
# of address space per process; a file seen to take 2.8 GB and 120 s is a bomb, and graded eight at
# a time the class must still be graded: each compiler process stops at 2 GiB and 120 s.
COMPILER = ProcessLimits(
    wall_s=COMPILE_LIMIT_S,
    cpu_s=120.0,
    address_space_bytes=2 * GiB,
    file_bytes=256 * MiB,  # a cubin, PTX or a preprocessed file; the project's are under 10 MiB
    processes=64,  # nvcc runs gcc, cudafe++, cicc, ptxas and fatbinary, a few at a time
    core_bytes=0,
)

# The worker (``grading._worker_target``), where a submitted kernel runs: no address-space limit
# (CUDA), memory capped by RLIMIT_DATA at half the host's (``data_bytes`` None: see
# ``host_memory_share``), CPU time at twice its wall-clock limit per submission (``cpu_s`` None: the
# caller's; its host thread spins while it waits for the GPU), answers up to 8 GiB (an NTHU case's
# output of V = 46,000 vertices), and threads for CUDA, CuPy and a BLAS pool on every core.
WORKER = ProcessLimits(
    wall_s=None,  # grading.isolate.Limits: per point and per submission
    cpu_s=None,
    address_space_bytes=None,
    data_bytes=None,
    file_bytes=8 * GiB,
    processes=1024,
    core_bytes=0,
)


def host_memory_share(fraction: float = 0.5) -> int | None:
    """``fraction`` of the host's physical memory in bytes, or None where it cannot be read."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * fraction)
    except (ValueError, OSError, AttributeError):
        return None


def worker_limits(submission_wall_s: float, base: ProcessLimits = WORKER) -> ProcessLimits:
    """``base`` with what it leaves to the run filled in: CPU time at twice ``submission_wall_s`` and
    a minute, memory at half the host's."""
    return replace(
        base,
        cpu_s=base.cpu_s if base.cpu_s is not None else 2 * submission_wall_s + 60,
        data_bytes=base.data_bytes if base.data_bytes is not None else host_memory_share(),
    )


def size_words(n: int) -> str:
    """A size as the limits' messages give it: ``2 GiB``, ``256 MiB``, ``64 KiB``."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (1024, "KiB")):
        if n >= unit:
            return f"{n / unit:g} {name}"
    return f"{n} bytes"


# ---- the limits applied in the child, between fork and exec of the real program

_RESOURCES = {
    "cpu_s": "RLIMIT_CPU",
    "address_space_bytes": "RLIMIT_AS",
    "data_bytes": "RLIMIT_DATA",
    "file_bytes": "RLIMIT_FSIZE",
    "processes": "RLIMIT_NPROC",
    "core_bytes": "RLIMIT_CORE",
}

# Run as ``python -I -S -c _TRAMPOLINE SPEC PROGRAM ARGS...``: lowers each limit (never above the
# hard limit it inherited), finds PROGRAM on PATH, gives up the grader's user for SPEC's (where given:
# groups, group, then user, so that none can be taken back), then becomes PROGRAM. Nothing of the
# project is imported, and it imports everything before it drops the user: its interpreter need not
# be open to the unprivileged one.
_TRAMPOLINE = """\
import json, os, resource, shutil, sys
spec = json.loads(sys.argv[1])
program = shutil.which(sys.argv[2]) or sys.argv[2]  # found on PATH while the interpreter's files are open
for name, soft, hard in spec["limits"]:
    which = getattr(resource, name)
    ceiling = resource.getrlimit(which)[1]
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(hard, ceiling)
    resource.setrlimit(which, (soft, hard))
if spec.get("uid") is not None:
    os.setgroups([])
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])
os.execv(program, sys.argv[2:])
"""


def tasks_of(uid: int, proc: Path = Path("/proc")) -> int:
    """The processes and threads the user ``uid`` runs now (what ``RLIMIT_NPROC`` counts), from
    ``/proc``; 0 where it cannot be read."""
    count = 0
    try:
        entries = list(proc.iterdir())
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields.get("Threads", "1").strip() or 1)
        except (OSError, KeyError, ValueError):
            continue  # a process that ended while being read
    return count


def rlimits(limits: ProcessLimits, uid: int) -> list[tuple[str, int, int]]:
    """``(resource name, soft, hard)`` for each limit set: CPU time with ``CPU_GRACE_S`` between its
    soft and hard limit, processes counted from the tasks ``uid`` runs now."""
    out = []
    for field, name in _RESOURCES.items():
        value = getattr(limits, field)
        if value is None:
            continue
        if field == "cpu_s":
            soft = max(1, int(value + 0.999))
            out.append((name, soft, soft + CPU_GRACE_S))
        elif field == "processes":
            total = tasks_of(uid) + int(value)
            out.append((name, total, total))
        else:
            out.append((name, int(value), int(value)))
    return out


def _interpreter() -> str:
    """The Python that runs the trampoline: the base interpreter (``-I -S``: no site, no project)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def limited(cmd: Sequence[str], limits: ProcessLimits, account: Account | None = None) -> list[str]:
    """``cmd`` as a command line that runs it under ``limits``, as ``account`` where given (else as
    this process's user)."""
    uid = account.uid if account is not None else os.getuid()
    spec = {
        "limits": rlimits(limits, uid),
        "uid": account.uid if account is not None else None,
        "gid": account.gid if account is not None else None,
    }
    return [_interpreter(), "-I", "-S", "-c", _TRAMPOLINE, json.dumps(spec), *cmd]


# ---- what a child sees

# What a child keeps of the grader's environment: enough to find Python, the CUDA toolkit and the
# GPU it was given; nothing else (no tokens, no home, no proxies). Its HOME is a folder of its own.
KEPT = (
    "PATH",
    "PYTHONPATH",  # the grader's own package and libraries (an offline node's wheelhouse)
    "LD_LIBRARY_PATH",
    "CUDA_PATH",
    "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "CUPY_CACHE_DIR",
    "CUDALAB_CACHE",
    "LANG",
    "LC_ALL",
    "NVIDIA_VISIBLE_DEVICES",
)


def scrubbed_env(home: Path, caches: dict[str, str] | None = None) -> dict[str, str]:
    """A child's environment: ``KEPT`` variables only, HOME and TMPDIR in ``home``, and the compile
    caches it uses (``caches``: CUPY_CACHE_DIR, CUDALAB_CACHE; default: the grader's, so that a
    child does not compile CuPy's own kernels again)."""
    from cudalab.core.paths import cache_dir

    env = {k: os.environ[k] for k in KEPT if k in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.setdefault("CUPY_CACHE_DIR", str(Path.home() / ".cupy" / "kernel_cache"))
    env.setdefault("CUDALAB_CACHE", str(cache_dir().parent))
    env.update(caches or {})
    env.update(HOME=str(home), TMPDIR=str(home), PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


# ---- who a child runs as

USER_ENV = "CUDALAB_SANDBOX_USER"  # the unprivileged user children run as where the grader is root
DEFAULT_USER = "nobody"


@dataclass(frozen=True)
class Account:
    """An unprivileged user a child runs as."""

    name: str
    uid: int
    gid: int


def choose_account(
    euid: int, wanted: str | None, lookup: Callable[[str], pwd.struct_passwd] = pwd.getpwnam
) -> tuple[Account | None, str]:
    """Whom children run as, and why not drop where root cannot: ``(None, "")`` where the grader is
    not root (it has nothing to give up), ``(Account, "")`` for the user ``wanted`` (default
    ``nobody``), ``(None, reason)`` where there is no such user or it is root too."""
    if euid != 0:
        return None, ""
    name = wanted or DEFAULT_USER
    try:
        entry = lookup(name)
    except KeyError:
        return None, f"there is no user {name!r} to run students' code as (set {USER_ENV} to one)"
    if entry.pw_uid == 0:
        return None, f"the user {name!r} is root"
    return Account(name, entry.pw_uid, entry.pw_gid), ""


def sandbox_account() -> Account | None:
    """The account children run as (``choose_account`` for this process); where the grader is root
    and cannot drop its privileges, the reason is said once."""
    account, why = choose_account(os.geteuid(), os.environ.get(USER_ENV))
    if why:
        say_once(f"students' code runs as root: {why}")
    return account


_SAID: set[str] = set()


def say_once(message: str) -> None:
    """Print ``message`` to stderr, the first time only (a grader says why it could not drop its
    privileges once, not once per submission)."""
    if message not in _SAID:
        _SAID.add(message)
        print(f"cudalab: {message}", file=sys.stderr, flush=True)


def _allows(st: os.stat_result, account: Account, groups: Iterable[int], bits: int) -> bool:
    """Whether ``account`` has the permission ``bits`` (r=4, w=2, x=1) on a file of status ``st``."""
    if st.st_uid == account.uid:
        return (st.st_mode >> 6) & bits == bits
    if st.st_gid == account.gid or st.st_gid in groups:
        return (st.st_mode >> 3) & bits == bits
    return st.st_mode & bits == bits


@cache
def _groups(name: str, gid: int) -> frozenset[int]:
    import grp

    try:
        return frozenset({gid, *(g.gr_gid for g in grp.getgrall() if name in g.gr_mem)})
    except OSError:
        return frozenset({gid})


def closed_to(path: Path, account: Account, write: bool = False) -> Path | None:
    """The first folder on the way to ``path`` that ``account`` cannot pass, or ``path`` itself where
    it cannot read (or write) it; None where it can. Read from the permission bits (no ACLs)."""
    groups = _groups(account.name, account.gid)
    path = Path(path).resolve()
    for folder in reversed(path.parents):
        try:
            if not _allows(folder.stat(), account, groups, 1):
                return folder
        except OSError:
            return folder
    try:
        st = path.stat()
    except OSError:
        return path
    bits = (4 | (2 if write else 0)) | (1 if stat.S_ISDIR(st.st_mode) else 0)
    return None if _allows(st, account, groups, bits) else path


def hand_over(path: Path, account: Account) -> None:
    """Make ``path`` (a folder this process made for a child) and what it holds the account's."""
    os.chown(path, account.uid, account.gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), account.uid, account.gid, follow_symlinks=False)


def link_cache(source: Path, target: Path) -> int:
    """Fill ``target`` with hard links to the files of the cache ``source`` that others may read
    (a child's own copy of a compile cache: it reads what the grader compiled, and what it writes
    lands in its own folder, never in the grader's); the number linked. Files that cannot be linked
    (another file system, closed to others) are left out: the child compiles them again."""
    linked = 0
    if not source.is_dir():
        return 0
    for root, _dirs, files in os.walk(source):
        here = Path(root)
        for name in files:
            src = here / name
            try:
                st = src.lstat()
                if not stat.S_ISREG(st.st_mode) or not st.st_mode & stat.S_IROTH:
                    continue
                dst = target / src.relative_to(source)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.link(src, dst)
                linked += 1
            except OSError:
                continue
    return linked


def copy_back(source: Path, target: Path, owner: int | None = None) -> None:
    """Bring the regular files under ``source`` (a folder a child wrote, the child now gone) into
    ``target``: links, special files and, where ``owner`` is given, files of another owner (a hard
    link to a file of the machine) left out, so that a child never makes the grader read or write
    elsewhere. Each is moved where it can be (the same file system: a 1 GiB answer is not copied
    again) and then made the grader's own, read and written by it alone; copied where it cannot."""
    for root, _dirs, files in os.walk(source):
        here = Path(root)
        for name in files:
            src = here / name
            st = src.lstat()
            if stat.S_ISREG(st.st_mode) and (owner is None or st.st_uid == owner):
                dst = target / src.relative_to(source)
                dst.parent.mkdir(parents=True, exist_ok=True)
                _take(src, dst, st)


def _take(src: Path, dst: Path, st: os.stat_result) -> None:
    """``src`` at ``dst``, the grader's file: renamed and handed to this user (its other names, a
    hard link the child kept, then closed to the child), else copied."""
    try:
        os.replace(src, dst)
    except OSError:  # another file system
        shutil.copyfile(src, dst, follow_symlinks=False)
        return
    try:
        if st.st_uid != os.geteuid():
            os.chown(dst, os.geteuid(), os.getegid())
        os.chmod(dst, 0o600)  # a regular file this user just moved here
    except OSError:  # not ours to hand over: a copy of our own instead
        spare = dst.with_name(dst.name + ".taken")
        shutil.copyfile(dst, spare, follow_symlinks=False)
        os.replace(spare, dst)


def popen(
    cmd: Sequence[str],
    limits: ProcessLimits,
    account: Account | None = None,
    **kwargs,
) -> subprocess.Popen:
    """Start ``cmd`` under ``limits`` in a process group of its own, as ``account`` where given
    (``limited``: the limits and the user are set between fork and exec by the trampoline, never by
    Python code in a forked copy of this process)."""
    return subprocess.Popen(limited(cmd, limits, account), start_new_session=True, **kwargs)


def fails_as(cmd: Sequence[str], account: Account, env: dict[str, str], timeout_s: float = 120.0) -> str:
    """Why ``cmd`` cannot run as ``account`` (through the same trampoline, under no limits), in a
    few words; "" where it exits 0. The probe a grader makes once before it hands a child over."""
    try:
        proc = subprocess.run(
            limited(cmd, ProcessLimits(), account),
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            cwd="/",
            timeout=timeout_s,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{Path(cmd[0]).name} did not start as {account.name} ({exc})"
    if proc.returncode == 0:
        return ""
    last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return f"{Path(cmd[0]).name} fails as {account.name}: {last}"


def kill_group(proc: subprocess.Popen) -> None:
    """End ``proc`` and every process it started (its process group: it must have been started in a
    session of its own), then reap it; a group already gone, or not ours to signal, is left."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every process started, directly or not, by ``pid`` and still running (read from ``/proc``;
    empty where it cannot be read), the nearest first. A child in a session of its own (a worker,
    a compiler, compute-sanitizer) is found all the same: this follows parents, not groups."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in proc.iterdir() if e.name.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while being read
        children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], list(children.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue += children.get(child, [])
    return found


def kill_tree(pid: int) -> int:
    """``SIGKILL`` to every descendant of ``pid`` (``descendants``) and to the process group each
    leads, ``pid`` itself left alone; how many were signalled. What a cancelled job does before it
    exits, so that nothing it started (a worker running a student's kernel, a compiler, a
    sanitizer and its target, each in a session of its own) outlives it."""
    import signal

    signalled = 0
    for child in descendants(pid):
        for kill in (lambda c: os.killpg(c, signal.SIGKILL), lambda c: os.kill(c, signal.SIGKILL)):
            try:
                kill(child)
                signalled += 1
                break
            except (ProcessLookupError, PermissionError):
                continue
    return signalled
