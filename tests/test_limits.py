"""What a submission's processes may take (issue 65, item 11): the compiler and the grader's worker
run under resource limits (``core.limits``), with a scrubbed environment, and, where the grader is
root, as an unprivileged user. Each test names the bug it catches; the limits are checked in real
child processes that try to exceed them."""

from __future__ import annotations

import json
import os
import pwd
import resource
import shutil
import signal
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cudalab.core import limits as L
from cudalab.core.errors import KernelCompileError
from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import isolate
from cudalab.grading import results as R
from cudalab.toolchain import compile_only
from cudalab.toolchain.nvcc import cuda_tool

needs_nvcc = pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")
PY = sys.executable


def _child(code: str, limits: L.ProcessLimits, account: L.Account | None = None, python: str = PY, timeout=60):
    """Run ``python -c code`` under ``limits``: (exit status, stdout, stderr)."""
    proc = L.popen([python, "-c", code], limits, account, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # a limit that did not hold: the test fails, the child never outlives it
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out, err


# ---- the limits, applied in a real child


def test_a_child_past_its_memory_limit_fails_alone():
    """Bug: the limits never reach the child (a child that allocates 1 GiB is left to take the host)."""
    code, _, err = _child("x = bytearray(1 << 30); print(len(x))", L.ProcessLimits(data_bytes=256 * L.MiB))
    assert code != 0 and "MemoryError" in err, (code, err[-300:])
    code, _, err = _child("x = bytearray(1 << 30)", L.ProcessLimits(address_space_bytes=512 * L.MiB))
    assert code != 0 and "MemoryError" in err, (code, err[-300:])


def test_a_child_that_spins_is_stopped_at_its_cpu_time():
    """Bug: no CPU-time limit (an endless loop runs until a wall-clock watchdog, if any, notices)."""
    code, _, _ = _child("while True: pass", L.ProcessLimits(cpu_s=1), timeout=30)
    assert code in (-signal.SIGXCPU, -signal.SIGKILL), code


def test_a_child_cannot_write_a_file_past_its_size_limit(tmp_path):
    """Bug: no file-size limit (a child fills the disk). Python ignores SIGXFSZ: the write fails."""
    target = tmp_path / "big"
    code, _, err = _child(f"open({str(target)!r}, 'wb').write(b'x' * (4 << 20))", L.ProcessLimits(file_bytes=1 * L.MiB))
    assert code != 0 and "File too large" in err, err[-300:]
    assert target.stat().st_size <= L.MiB


def test_a_child_cannot_start_processes_past_its_limit():
    """Bug: no process limit (a fork bomb takes the host). RLIMIT_NPROC counts every task of the
    user, so the limit is the user's count plus the allowance: a child may start a few, not forty."""
    account = L.sandbox_account()  # root is exempt from RLIMIT_NPROC: the limit holds for a user
    if os.geteuid() == 0 and (account is None or L.closed_to(Path("/usr/bin/python3"), account) is not None):
        pytest.skip("as root, RLIMIT_NPROC holds only for an unprivileged user that can run /usr/bin/python3")
    python = "/usr/bin/python3" if account is not None else PY
    code, out, err = _child(
        "import subprocess\n"
        "kids = []\n"
        "try:\n"
        "    for _ in range(40): kids.append(subprocess.Popen(['sleep', '5']))\n"
        "except OSError as exc: print('refused', type(exc).__name__)\n"
        "print('started', len(kids))\n"
        "for k in kids: k.kill()\n",
        L.ProcessLimits(processes=8),
        account,
        python,
    )
    assert "refused" in out, (out, err[-300:])
    assert int(out.split("started")[1]) < 40  # about 8: the user's other tasks come and go meanwhile


def test_a_child_leaves_no_core_dump():
    """Bug: a crashing compiler or worker leaves a core file of gigabytes in its folder."""
    code, out, _ = _child(
        "import resource; print(resource.getrlimit(resource.RLIMIT_CORE))", L.ProcessLimits(core_bytes=0)
    )
    assert code == 0 and out.strip() == "(0, 0)"


def test_the_limits_never_rise_above_what_the_grader_was_given():
    """Bug: a limit above the hard limit the grader inherited makes setrlimit fail, and the child
    never starts (an unprivileged process may not raise a hard limit). A trampoline under a hard
    core-size limit of 4 KiB starts another that asks for 1 TiB: it gets 4 KiB and runs."""
    account = L.sandbox_account()
    python = PY if account is None else _python_for(account)
    if python is None:
        pytest.skip("no Python that the unprivileged user can run")
    inner = [python, *L.limited(["true"], L.ProcessLimits(core_bytes=1 << 40))[1:]]
    proc = L.popen(inner, L.ProcessLimits(core_bytes=4096), account, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-300:]


def test_processes_are_counted_from_what_the_user_runs_now():
    """Bug: RLIMIT_NPROC set to the allowance alone, under a user that already runs more tasks: the
    child could not start a thread."""
    mine = L.tasks_of(os.getuid())
    assert mine >= 1
    (spec,) = [
        s for s in L.rlimits(L.ProcessLimits(processes=10, core_bytes=None), os.getuid()) if s[0] == "RLIMIT_NPROC"
    ]
    assert spec[1] >= mine + 10 - 2, (spec, mine)  # tasks may end between the two counts


# ---- the compiler: a bomb is stopped and reported, the rest of the class is graded

_CPU_BOMB = """
#define R1(x) x x x x
#define R2(x) R1(R1(x))
#define R4(x) R2(R2(x))
#define R8(x) R4(R4(x))
extern "C" __global__ void bomb(float* a) {
  float s = 0.f; int i = threadIdx.x;
  R8(s = s * a[i & 1023] + a[(i * 7) & 1023]; i += 3;)
  a[0] = s;
}
"""


@needs_nvcc
def test_a_compile_bomb_is_stopped_at_its_cpu_time_and_said(tmp_path, monkeypatch):
    """Bug: nvcc without a CPU-time limit (this file compiles for minutes). 65,536 unrolled
    statements: cicc is stopped at 2 s of CPU and the row says which limit it ran past."""
    bomb = tmp_path / "bomb.cu"
    bomb.write_text(_CPU_BOMB)
    monkeypatch.setattr(compile_only, "LIMITS", replace(L.COMPILER, cpu_s=2))
    with pytest.raises(KernelCompileError) as caught:
        compile_only.entry_signatures(bomb, "sm_90")
    assert caught.value.message == "the compiler ran past its limit (CPU time: 2 s)", caught.value.message


@needs_nvcc
def test_a_compile_past_its_memory_is_stopped_and_said(monkeypatch):
    """Bug: nvcc without a memory limit; or its out-of-memory error read as a compile error at a line
    of the toolkit's headers. 128 MiB of address space is too little for any kernel file."""
    monkeypatch.setattr(compile_only, "LIMITS", replace(L.COMPILER, address_space_bytes=128 * L.MiB))
    with pytest.raises(KernelCompileError) as caught:
        compile_only.entry_signatures(KERNELS_DIR / "fw_basic_2d.cu", "sm_90")
    assert caught.value.message == "the compiler ran past its limit (memory: 128 MiB of address space)"
    assert caught.value.line is None


@needs_nvcc
def test_a_compile_past_its_file_size_is_stopped_and_said(monkeypatch):
    """Bug: nvcc without a file-size limit (a constant table of gigabytes fills the disk)."""
    monkeypatch.setattr(compile_only, "LIMITS", replace(L.COMPILER, file_bytes=64 * 1024))
    with pytest.raises(KernelCompileError) as caught:
        compile_only.entry_signatures(KERNELS_DIR / "km_07_tensor_scores.cu", "sm_90")
    assert caught.value.message == "the compiler ran past its limit (file size: files up to 64 KiB)"


@needs_nvcc
def test_a_class_with_a_compile_bomb_is_graded_and_the_bomb_says_why(tmp_path, monkeypatch):
    """Bug: one student's compile bomb holds or takes down the grader. Graded without a GPU, the
    bomb's row is "does not compile: the compiler ran past its limit (CPU time ...)" and the other
    student is compiled as usual."""
    from cudalab.grading import grade, pages

    monkeypatch.setattr(compile_only, "LIMITS", replace(L.COMPILER, cpu_s=3))
    klass = tmp_path / "class"
    good = (KERNELS_DIR / "fw_basic_2d.cu").read_text()
    for name, text in (("a_fine", good), ("b_bomb", good + _CPU_BOMB)):
        (klass / name).mkdir(parents=True)
        (klass / name / "fw_basic_2d.cu").write_text(text)
    graded = grade.grade(
        grade.GradeOptions(klass, pages.prepare(tmp_path / "out"), arch="sm_90", measure=False, only=("01",)),
        log=lambda _: None,
    )
    board = graded.scoreboard
    bomb = board[board["student"].eq("b_bomb")]
    assert set(bomb["status"]) == {R.DOES_NOT_COMPILE}, bomb.to_string()
    assert bomb["reason"].iloc[0] == "fw_basic_2d.cu: the compiler ran past its limit (CPU time: 3 s)"
    assert set(board[board["student"].eq("a_fine")]["status"]) == {R.COMPILED_ONLY}


@needs_nvcc
def test_the_compiler_gets_the_workers_scrubbed_environment(tmp_path, monkeypatch):
    """Bug: nvcc inherits the grader's environment (its tokens, its HOME) while compiling a
    student's file. A stand-in nvcc prints what it sees."""
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "s3cret")
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\nenv\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(compile_only, "cuda_tool", lambda name: str(fake) if name == "nvcc" else None)
    monkeypatch.setattr(compile_only, "_compiler_account", lambda: None)
    with pytest.raises(KernelCompileError) as caught:
        compile_only.entry_signatures(KERNELS_DIR / "fw_basic_2d.cu", "sm_90")
    seen = dict(line.split("=", 1) for line in caught.value.log.splitlines() if "=" in line)
    assert "GRADER_SECRET_TOKEN" not in seen
    assert set(seen) <= set(L.KEPT) | {
        "HOME",
        "TMPDIR",
        "PYTHONNOUSERSITE",
        "PYTHONDONTWRITEBYTECODE",
        "PWD",
        "SHLVL",
        "_",
    }
    assert seen["HOME"] == seen["TMPDIR"] and "cudalab-nvcc-" in seen["HOME"], "a folder of its own"


def test_a_limit_the_compiler_ran_into_is_told_from_its_exit_and_log():
    """Bug: a compiler killed at a limit reported as an ordinary compile error at some line."""
    lim = L.COMPILER
    assert L.size_words(2 * L.GiB) == "2 GiB"
    assert compile_only.limit_reached(152, "CPU time limit exceeded\n", lim) == "CPU time: 120 s"
    assert compile_only.limit_reached(1, "nvcc error : 'cicc' died due to signal 24\n", lim) == "CPU time: 120 s"
    assert compile_only.limit_reached(1, "x.cu(6): catastrophic error: out of memory\n", lim).startswith("memory")
    assert compile_only.limit_reached(-11, "", lim) == "memory: 2 GiB of address space"
    assert compile_only.limit_reached(4, "File size limit exceeded signal terminated program cc1plus", lim).startswith(
        "file size"
    )
    assert compile_only.limit_reached(1, 'x.cu(3): error: expected a ";"\n', lim) is None


# ---- the worker: the limits CUDA tolerates


def _fake(tmp_path: Path, body: str) -> tuple[str, ...]:
    script = tmp_path / "fake_worker.py"
    script.write_text(
        "import json, sys, os, time, resource\n"
        "events = os.fdopen(int(os.environ['CUDALAB_EVENTS_FD']), 'w', buffering=1)\n"
        "request = json.loads(sys.stdin.read())\n" + body
    )
    return (str(script),)


_REPORT_LIMITS = (
    "names = ['RLIMIT_AS', 'RLIMIT_DATA', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_CORE']\n"
    "seen = {n: resource.getrlimit(getattr(resource, n)) for n in names}\n"
    "print(json.dumps({'event': 'point', 'index': 0, 'status': 'ok', 'reason': json.dumps(seen)}), file=events)\n"
)


def test_the_worker_runs_under_the_limits_cuda_tolerates(tmp_path):
    """Bug: the worker under no limits, or under an address-space limit (the CUDA driver reserves
    host address space of about twice the GPU's memory: it would not start)."""
    result = isolate.run(
        {"points": [[{}, "f.cu"]]}, isolate.Limits(point=30, submission=100), worker=_fake(tmp_path, _REPORT_LIMITS)
    )
    seen = {k: tuple(v) for k, v in json.loads(result["points"][0]["reason"]).items()}
    infinity = resource.RLIM_INFINITY
    assert seen["RLIMIT_AS"][0] == infinity, "never an address-space limit where CUDA runs"
    assert seen["RLIMIT_CPU"][0] == 2 * 100 + 60
    assert seen["RLIMIT_DATA"][0] == L.host_memory_share() != infinity
    assert seen["RLIMIT_FSIZE"][0] == L.WORKER.file_bytes
    assert seen["RLIMIT_NPROC"][0] != infinity and seen["RLIMIT_CORE"] == (0, 0)


def test_a_worker_past_its_cpu_time_is_crashed_and_says_which_limit(tmp_path):
    """Bug: a worker that spins on the CPU past its limit reported without the reason (or never
    stopped where the wall-clock limit is generous)."""
    body = "print(json.dumps({'event': 'start', 'index': 0}), file=events)\nwhile True: pass\n"
    limits = isolate.Limits(point=60, submission=60, process=replace(L.WORKER, cpu_s=1))
    result = isolate.run({"points": [[{}, "f.cu"]] * 2}, limits, worker=_fake(tmp_path, body))
    assert [p["status"] for p in result["points"]] == [R.CRASHED, R.NOT_RUN]
    assert result["points"][0]["reason"] == "the process ran past its limit of 1 s of CPU time and was stopped"
    assert result["wall_s"] < 30


# ---- the user children run as


@pytest.fixture
def open_tmp():
    """A folder others may pass (pytest's own are closed to them: mode 700)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="cudalab-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _entry(uid: int) -> pwd.struct_passwd:
    return pwd.struct_passwd(("someone", "x", uid, uid, "", "/", "/bin/sh"))


@pytest.mark.parametrize(
    "euid, wanted, table, expected, why",
    [
        (1000, None, {"nobody": 65534}, None, ""),
        (0, None, {"nobody": 65534}, ("nobody", 65534), ""),
        (0, "grader", {"grader": 1234}, ("grader", 1234), ""),
        (0, None, {}, None, "no user 'nobody'"),
        (0, "toor", {"toor": 0}, None, "is root"),
    ],
)
def test_who_a_child_runs_as(euid, wanted, table, expected, why):
    """Bug: children of a root grader run as root (or an unprivileged user is looked for, and
    failed on, where the grader is not root)."""

    def lookup(name):
        if name not in table:
            raise KeyError(name)
        return _entry(table[name])

    account, reason = L.choose_account(euid, wanted, lookup)
    assert (None if account is None else (account.name, account.uid)) == expected
    assert why in reason and (why or reason == "")


def test_a_folder_closed_to_the_account_is_found_on_the_way(open_tmp):
    """Bug: a child dropped to a user that cannot read its submission (the grader's output folder
    closed to others) fails every point instead of running as the grader, said once."""
    someone = L.Account("someone", 54321, 54321)
    outer = open_tmp / "out"
    (outer / "staged").mkdir(parents=True)
    (outer / "staged" / "f.cu").write_text("x")
    for p in (outer, outer / "staged"):
        p.chmod(0o755)
    (outer / "staged" / "f.cu").chmod(0o644)
    assert L.closed_to(outer / "staged" / "f.cu", someone) is None
    assert L.closed_to(outer / "staged", someone, write=True) == outer / "staged", "others may not write it"
    outer.chmod(0o700)
    assert L.closed_to(outer / "staged" / "f.cu", someone) == outer


def test_copy_back_never_follows_a_childs_link(tmp_path):
    """Bug: a worker links its answer to a file of the machine (a symbolic link, or a hard link: a
    file it does not own) and the grader copies (reads) it."""
    mine, theirs, elsewhere = tmp_path / "mine", tmp_path / "theirs", tmp_path / "elsewhere"
    mine.mkdir()
    (mine / "0.out").write_text("answer")
    (mine / "leak.out").symlink_to("/etc/passwd")
    L.copy_back(mine, theirs, owner=os.getuid())
    assert sorted(p.name for p in theirs.iterdir()) == ["0.out"]
    L.copy_back(mine, elsewhere, owner=os.getuid() + 1)  # every file here is another user's
    assert not elsewhere.exists()


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or L.sandbox_account() is None, reason="needs a root grader and a user to drop to"
)


@needs_root
def test_a_root_grader_runs_its_children_as_the_unprivileged_user():
    """Bug: the user switch asked for and never made (a child of a root grader runs as root)."""
    account = L.sandbox_account()
    proc = L.popen(["id", "-u"], L.COMPILER, account, stdout=subprocess.PIPE, text=True)
    assert int(proc.communicate(timeout=30)[0]) == account.uid


@needs_root
def test_a_workers_caches_are_its_own_and_the_graders_stay_the_graders(tmp_path, monkeypatch):
    """Bug: a worker run as another user handed the grader's cache files (a chown through a hard
    link) or the grader's cache folder itself: a submission could plant a kernel the next one, or
    the grader, loads."""
    account = L.sandbox_account()
    grader_cache = tmp_path / "grader-cupy"
    grader_cache.mkdir()
    (grader_cache / "k.cubin").write_bytes(b"compiled")
    (grader_cache / "k.cubin").chmod(0o644)
    (grader_cache / "private.cubin").write_bytes(b"closed")
    (grader_cache / "private.cubin").chmod(0o600)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(grader_cache))
    home = tmp_path / "home"
    home.mkdir()
    caches = isolate._own_caches(home, account)
    mine = Path(caches["CUPY_CACHE_DIR"])
    assert mine.is_relative_to(home) and mine.stat().st_uid == account.uid
    assert sorted(p.name for p in mine.iterdir()) == ["k.cubin"], "only what others may read"
    assert (grader_cache / "k.cubin").stat().st_uid == os.getuid(), "the grader's file stays the grader's"
    assert (mine / "k.cubin").stat().st_ino == (grader_cache / "k.cubin").stat().st_ino


def _python_for(account: L.Account) -> str | None:
    """A Python the account can run (the grader's may live in root's home)."""
    for python in (PY, shutil.which("python3") or "", "/usr/bin/python3"):
        if (
            python
            and Path(python).is_file()
            and not L.fails_as([python, "-c", "pass"], account, {"PATH": "/usr/bin:/bin"})
        ):
            return python
    return None


@needs_root
def test_a_dropped_worker_touches_only_its_own_folder_and_its_answers_come_back(open_tmp, monkeypatch):
    """Bug: a worker run as the unprivileged user cannot read its staged submission or write its
    answers (the grader's folders), or its answers never reach the grader; or a link it leaves among
    them makes the grader read a file of the machine."""
    account = L.sandbox_account()
    python = _python_for(account)
    if python is None:
        pytest.skip(f"no Python that {account.name} can run")
    base = open_tmp
    staged, answers = base / "staged", base / "answers"
    staged.mkdir()
    answers.mkdir()
    (staged / "fw_blocked.cu").write_text("x")
    for p in (staged, answers, staged / "fw_blocked.cu"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    body = (
        "open(os.path.join(request['answers'], '0.out'), 'w').write('answer')\n"
        "os.symlink('/etc/passwd', os.path.join(request['answers'], 'leak.out'))\n"
        "seen = {'uid': os.getuid(), 'files': os.listdir(request['folder']), 'home': os.environ['HOME']}\n"
        "print(json.dumps({'event': 'point', 'index': 0, 'status': 'ok', 'reason': json.dumps(seen)}), file=events)\n"
    )
    worker = _fake(base, body)
    Path(worker[0]).chmod(0o644)
    monkeypatch.setattr(isolate, "_worker_account", lambda: account)
    monkeypatch.setattr(sys, "executable", python)
    request = {"points": [[{}, "fw_blocked.cu"]], "folder": str(staged), "answers": str(answers)}
    result = isolate.run(request, worker=worker)
    seen = json.loads(result["points"][0]["reason"])
    assert seen["uid"] == account.uid and seen["files"] == ["fw_blocked.cu"]
    assert (answers / "0.out").read_text() == "answer" and not (answers / "leak.out").exists()
    assert (answers / "0.out").stat().st_uid == os.getuid(), "the grader's copy, not the worker's file"


def test_every_limit_is_defaulted_in_one_place():
    """The per-point, per-submission and compile limits: the command line, BuildOptions, the
    isolated worker's Limits and the compiler all take core.limits's defaults (three different
    per-point defaults, 30, 30 and 60 s, lived in three files before)."""
    import build_report
    from cudalab.core import limits
    from cudalab.grading.isolate import Limits
    from cudalab.report.options import BuildOptions
    from cudalab.toolchain import compile_only

    args = build_report.parse_args([])
    assert (args.point_limit, args.submission_limit) == (limits.POINT_LIMIT_S, limits.SUBMISSION_LIMIT_S)
    options = BuildOptions()
    assert (options.point_limit, options.submission_limit) == (limits.POINT_LIMIT_S, limits.SUBMISSION_LIMIT_S)
    assert (Limits().point, Limits().submission) == (limits.POINT_LIMIT_S, limits.SUBMISSION_LIMIT_S)
    assert compile_only.COMPILE_LIMIT_S == limits.COMPILER.wall_s == limits.COMPILE_LIMIT_S


def test_copy_back_hands_the_grader_a_file_of_its_own(tmp_path):
    """A moved answer stays readable by the grader alone, and a name the child kept for it (a hard
    link in its own folder) no longer reaches the grader's copy's bytes through a write."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    (mine / "0.npy").write_bytes(b"answer")
    os.chmod(mine / "0.npy", 0o666)
    L.copy_back(mine, theirs, owner=os.getuid())
    taken = theirs / "0.npy"
    assert taken.read_bytes() == b"answer" and not (mine / "0.npy").exists()
    assert stat.S_IMODE(taken.stat().st_mode) == 0o600 and taken.stat().st_uid == os.geteuid()
