"""A build that several tests read, made once per test run, whichever xdist worker asks first.

``make test`` runs the suite on every core with work stealing, so the tests that read one module
fixture's report land on both workers, and a module fixture is made once per worker: each costly
replay build was made twice. ``built_once`` makes it in a folder that the run's workers share, under
a file lock: the first to ask builds, the others wait for it and read the same folder. The tests
that use it only read what it made."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent


def built_once(tmp_path_factory, name: str, make: Callable[[Path], dict]) -> tuple[Path, dict]:
    """``make(folder)`` run once per test run for ``name`` (its JSON result kept beside the folder);
    the folder and that result. A ``make`` that raises leaves nothing, and the next asker tries again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's, not the user's
    folder, result = root / f"shared-{name}", root / f"shared-{name}.json"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            made = make(folder)
            result.write_text(json.dumps(made))
        return folder, json.loads(result.read_text())


def as_result(proc: subprocess.CompletedProcess) -> dict:
    """What a test reads of a command that made a shared build."""
    return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def as_proc(result: dict) -> SimpleNamespace:
    """``as_result`` read back, with a CompletedProcess's attribute names."""
    return SimpleNamespace(**result)


def replay_gtx680(tmp_path_factory, pdf: bool) -> tuple[Path, dict]:
    """The gtx680 replay of every chapter with its handouts, in HTML and (``pdf``: Chromium and
    poppler are here) PDF: the report's tests (``test_build_report``) and the handouts' page count
    (``test_handout``) read the same build, made once per run."""

    def make(out: Path) -> dict:
        formats = "html,pdf" if pdf else "html"
        proc = subprocess.run(
            [sys.executable, str(ROOT / "build_report.py"), "--gpu", "gtx680", "--replay", "--handout",
             "--format", formats, "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        return as_result(proc)

    return built_once(tmp_path_factory, f"replay-gtx680-{'pdf' if pdf else 'html'}", make)
