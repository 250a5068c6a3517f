"""The worker's folder where the grader is root and the worker an unprivileged account
(``grading.isolate``: ``_hand_over``, ``_copy_back``, ``_account_for``, ``_own_caches``), and the
words for how a worker ended (``_ended``). Each test names the bug it catches. The account is
``nobody``; the tests that hand files to it need root (as CI and the GPU host run) and skip
elsewhere."""

from __future__ import annotations

import os
import pwd
import signal
from pathlib import Path

import pytest

from cudalab.core import limits as L
from cudalab.grading import isolate


@pytest.fixture
def nobody() -> L.Account:
    """The account files are handed to (skipped where this process cannot hand files over: not root).
    A skip in the fixture, not a ``skipif`` mark: ``make mutants`` leaves out the tests marked so."""
    if os.geteuid() != 0:
        pytest.skip("handing files to another account needs root")
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no account 'nobody' here")
    return L.Account("nobody", entry.pw_uid, entry.pw_gid)


@pytest.fixture
def open_dir():
    """A folder every account may pass and read (pytest's own temporary folders are closed to
    others), removed after the test."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="cudalab-open-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _owners(folder: Path) -> set[int]:
    return {p.lstat().st_uid for p in [folder, *folder.rglob("*")]}


def test_hand_over_copies_the_submission_in_and_rewrites_only_the_copy(open_dir, nobody):
    """Bugs: the worker writing its answers straight into the grader's folder (answers not
    redirected), a case closed to the worker handed over by its path (unreadable there) or an open
    one copied for nothing, a case's answer lost (not in the list copied back), the grader's own
    request rewritten, or a folder left the grader's (the worker cannot write it)."""
    tmp_path = open_dir
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "fw_blocked.cu").write_text("// the student's file\n")
    answers = tmp_path / "answers"
    answers.mkdir()
    closed_dir = tmp_path / "closed"
    closed_dir.mkdir(mode=0o700)
    closed_case = closed_dir / "hidden.in"
    closed_case.write_bytes(b"\x03\x00\x00\x00")
    open_case = tmp_path / "open.in"
    open_case.write_bytes(b"\x04\x00\x00\x00")
    open_case.chmod(0o644)
    closed_too = closed_dir / "hidden2.in"
    closed_too.write_bytes(b"\x05\x00\x00\x00")
    request = {
        "points": [[{}, "fw_blocked.cu"]],
        "folder": str(staged),
        "answers": str(answers),
        "cases": [
            [str(closed_case), str(answers / "cases" / "0.out")],
            [str(open_case), str(tmp_path / "1.out")],
            [str(closed_too), str(tmp_path / "2.out")],
        ],
    }
    before = {k: (list(map(list, v)) if k == "cases" else v) for k, v in request.items()}
    home = tmp_path / "home"
    home.mkdir()

    handed = isolate._hand_over(request, home, nobody)

    req = handed.request
    assert request == before, "the grader's request is the grader's"
    assert req["folder"] == str(home / "submission")
    assert (home / "submission" / "fw_blocked.cu").read_text() == "// the student's file\n"
    assert req["answers"] == str(home / "answers") and (home / "answers").is_dir()
    (closed_in, closed_answer), (open_in, open_answer), (closed_too_in, closed_too_answer) = req["cases"]
    assert closed_too_in == str(home / "cases" / "2-hidden2.in"), "a second closed case beside the first"
    assert closed_too_answer == str(home / "case-answers" / "2-2.out"), "a second answer beside the first"
    assert closed_in == str(home / "cases" / "0-hidden.in") and Path(closed_in).read_bytes() == b"\x03\x00\x00\x00"
    assert open_in == str(open_case), "a case the worker can read is read where it is"
    assert closed_answer == str(home / "answers" / "cases" / "0.out"), "an answer under the answers folder"
    assert open_answer == str(home / "case-answers" / "1-1.out")
    assert handed.back == [
        (home / "answers", answers),
        (home / "case-answers" / "1-1.out", tmp_path / "1.out"),
        (home / "case-answers" / "2-2.out", tmp_path / "2.out"),
    ]
    assert sorted(p.name for p in home.iterdir()) == ["answers", "case-answers", "cases", "submission"]
    assert _owners(home) == {nobody.uid}, "every folder and file of the worker's is the worker's"
    assert req["points"] == request["points"]


def test_hand_over_without_cases_or_answers_adds_none(tmp_path, nobody):
    """Bug: a request that named no cases given an empty list of them, or an answers folder made
    where none was asked for."""
    home = tmp_path / "home"
    home.mkdir()
    handed = isolate._hand_over({"points": []}, home, nobody)
    assert handed.request == {"points": []} and handed.back == []
    assert list(home.iterdir()) == [] and home.stat().st_uid == nobody.uid


def test_copy_back_brings_only_the_workers_regular_files(tmp_path, nobody):
    """Bugs: a link the worker made (to a file of the machine) followed into the grader's folder, a
    file of another owner (a hard link to the grader's) copied, or a case's answer file dropped."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    (mine / "sub").mkdir(parents=True)
    (mine / "sub" / "a.npz").write_bytes(b"answer")
    os.symlink("/etc/passwd", mine / "link")
    (mine / "planted").write_bytes(b"the grader's")
    single, single_back = tmp_path / "case.out", tmp_path / "graded" / "case.out"
    single.write_bytes(b"case answer")
    link_back = tmp_path / "graded" / "link.out"
    os.symlink(single, tmp_path / "link.out")
    foreign, foreign_back = tmp_path / "foreign.out", tmp_path / "graded" / "foreign.out"
    foreign.write_bytes(b"not the worker's")
    for path in (mine, mine / "sub", mine / "sub" / "a.npz", single):
        os.chown(path, nobody.uid, nobody.gid, follow_symlinks=False)
    os.chown(mine / "link", nobody.uid, nobody.gid, follow_symlinks=False)
    handed = isolate._HandedOver(
        {}, [(mine, theirs), (single, single_back), (tmp_path / "link.out", link_back), (foreign, foreign_back)]
    )
    isolate._copy_back(handed, nobody)
    assert sorted(p.relative_to(theirs).as_posix() for p in theirs.rglob("*") if p.is_file()) == ["sub/a.npz"]
    assert (theirs / "sub" / "a.npz").read_bytes() == b"answer"
    assert single_back.read_bytes() == b"case answer"
    assert not link_back.exists() and not foreign_back.exists()


def test_copy_back_as_the_graders_own_user_takes_every_regular_file(tmp_path):
    """Without an account (the worker ran as the grader's user), its files are its own: all copied."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    (mine / "a.npz").write_bytes(b"answer")
    single, back = tmp_path / "case.out", tmp_path / "graded" / "case.out"
    single.write_bytes(b"case answer")
    isolate._copy_back(isolate._HandedOver({}, [(mine, theirs), (single, back)]), None)
    assert (theirs / "a.npz").read_bytes() == b"answer" and back.read_bytes() == b"case answer"


def test_a_worker_command_names_the_files_it_runs(tmp_path, monkeypatch):
    """Bug: an option or a module name taken for a file the account must read (even where a file of
    that name sits in the working folder), or a script missed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-u").write_text("")
    script = tmp_path / "stand_in.py"
    script.write_text("")
    assert isolate._named_files(("-m", "cudalab.grading._worker_target")) == []
    assert isolate._named_files(("-u", str(script), "-c", str(tmp_path))) == [script]


def test_a_worker_runs_as_the_account_only_where_what_it_runs_is_open_to_it(open_dir, monkeypatch, nobody, capsys):
    """Bugs: a worker started as an account that cannot read its own script (it fails, and the
    student is marked crashed), or its folder left the account's after falling back to root."""
    monkeypatch.setattr(isolate, "_worker_account", lambda: nobody)
    tmp_path = open_dir
    open_script = tmp_path / "open.py"
    open_script.write_text("")
    open_script.chmod(0o644)
    home = tmp_path / "home"
    home.mkdir()
    assert isolate._account_for(("-u", str(open_script)), home) == nobody
    assert home.stat().st_uid == nobody.uid

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed_script = closed / "stand_in.py"
    closed_script.write_text("")
    home2 = tmp_path / "home2"
    home2.mkdir()
    assert isolate._account_for(("-u", str(closed_script)), home2) is None
    said = capsys.readouterr().err
    assert (
        f"the grader's worker runs as this process's user, not as an unprivileged one: {closed} is closed to nobody"
        in said
    )
    assert home2.stat().st_uid == os.getuid(), "the folder is the grader's again, for a worker run as the grader"
    monkeypatch.setattr(isolate, "_worker_account", lambda: None)
    assert isolate._account_for(("-u", str(open_script)), tmp_path / "home3") is None


def test_the_workers_caches_link_the_graders_and_are_its_own(tmp_path, monkeypatch, nobody):
    """Bugs: the worker given the grader's cache folders (a submission could plant a kernel the
    grader or the next submission loads), the grader's compiled kernels not linked (every worker
    compiles CuPy's reductions again), or the folders left the grader's (the worker cannot write)."""
    cupy_cache, our_cache = tmp_path / "cupy", tmp_path / "ours"
    (cupy_cache / "sub").mkdir(parents=True)
    (cupy_cache / "sub" / "kernel.cubin").write_bytes(b"cubin")
    (cupy_cache / "sub" / "kernel.cubin").chmod(0o644)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(cupy_cache))
    monkeypatch.setenv("CUDALAB_CACHE", str(our_cache))
    (our_cache / "cudalab").mkdir(parents=True)
    (our_cache / "cudalab" / "ref.so").write_bytes(b"so")
    (our_cache / "cudalab" / "ref.so").chmod(0o644)
    home = tmp_path / "home"
    home.mkdir()
    caches = isolate._own_caches(home, nobody)
    assert caches == {"CUPY_CACHE_DIR": str(home / "cupy"), "CUDALAB_CACHE": str(home / "cache")}
    linked = home / "cupy" / "sub" / "kernel.cubin"
    assert (
        linked.read_bytes() == b"cubin" and linked.stat().st_ino == (cupy_cache / "sub" / "kernel.cubin").stat().st_ino
    )
    assert (home / "cache" / "cudalab" / "ref.so").read_bytes() == b"so"
    assert [p.name for p in (home / "cache").iterdir()] == ["cudalab"], "where the worker's cudalab looks"
    folders = [home, *(p for p in home.rglob("*") if p.is_dir())]
    assert {p.stat().st_uid for p in folders} == {nobody.uid}, "the folders are the worker's"
    assert linked.stat().st_uid == 0, "the linked files stay the grader's (read-only to the worker)"


@pytest.mark.parametrize(
    "code, limits, says",
    [
        (
            -signal.SIGXCPU,
            L.ProcessLimits(cpu_s=7.0),
            "the process ran past its limit of 7 s of CPU time and was stopped",
        ),
        (-signal.SIGXCPU, L.ProcessLimits(), "the process was killed by SIGXCPU"),
        (
            -signal.SIGXFSZ,
            L.ProcessLimits(file_bytes=8 * L.GiB),
            f"the process wrote a file past its limit of {L.size_words(8 * L.GiB)} and was stopped",
        ),
        (-signal.SIGXFSZ, None, "the process was killed by SIGXFSZ"),
        (-signal.SIGSEGV, L.ProcessLimits(cpu_s=7.0), "the process was killed by SIGSEGV"),
        (-200, None, "the process was killed by signal 200"),
        (3, None, "the process ended with status 3"),
        (None, None, "the process ended with status None"),
    ],
)
def test_how_a_worker_ended_in_words(code, limits, says):
    """Bug: a limit named where another ended the worker (a fault said as CPU time), or a signal
    number that is no signal raising instead of being said."""
    assert isolate._ended(code, limits) == says
