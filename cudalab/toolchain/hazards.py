"""What compute-sanitizer says of a graded kernel: shared-memory data races (``racecheck``) and
barrier misuse (``synccheck``), which no output check can see: a race that gives the right answer
on this GPU today, or a ``__syncthreads()`` that only some threads reach, is still undefined
behaviour.

The launch itself is a child Python process (a target module and its arguments, named by the
caller) run under ``compute-sanitizer --tool TOOL``. ``run_tool`` runs one tool (``run_tools``
several side by side) and returns what
it reported as ``Hazard`` rows (tool, kernel, file, line, what), parsed from the tool's log
(``parse``): racecheck's analysis lines ("Race reported between Write access at ... in
FILE:LINE and Read access at ... [N hazards]"), its hazard lines ("Potential RAW hazard detected
at __shared__ ... Write Thread (...) at ... in FILE:LINE"), and synccheck's errors ("Barrier error
detected. Divergent thread(s) in block ... at ... in FILE:LINE"). A kernel is placed at a file
and line only where it was built with line information (NVRTC and nvcc ``-lineinfo``).

``toolchain.sanitizer.synccheck`` is the older one-call form that chapter 03's barrier table uses,
kept apart so that a change here decides no recorded number.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudalab.core.limits import kill_group
from cudalab.core.paths import ROOT
from cudalab.toolchain.nvcc import cuda_tool

TOOLS = ("racecheck", "synccheck")
# racecheck's analysis report: one line per pair of instructions that race, with a count (at most 100
# reports are printed; the summary counts them all)
TOOL_OPTIONS = {"racecheck": ("--racecheck-report", "analysis"), "synccheck": ()}


@dataclass(frozen=True)
class Hazard:
    """One thing a tool reported: ``tool``, the ``kernel`` it happened in ("" where the tool did not
    say), the ``file`` and ``line`` it names (as the tool printed them: a path; "" and None where
    the kernel carries no line information), ``what`` (a sentence, file names only), ``severity``
    ("error", "warning", "info") and ``count`` (the hazards the line stands for)."""

    tool: str
    kernel: str
    file: str
    line: int | None
    what: str
    severity: str = "error"
    count: int = 1

    @property
    def name(self) -> str:
        """The file's name, never its path ("" where unplaced)."""
        return _name(self.file)

    @property
    def where(self) -> str:
        """``fw_blocked.cu:49`` (the file's name only), or the kernel where there is no line."""
        if self.file:
            return f"{self.name}:{self.line}" if self.line is not None else self.name
        return self.kernel or "an unplaced kernel"


@dataclass
class ToolRun:
    """One tool's run: ``hazards`` found, ``ran`` (the tool ran the target to its end and printed
    its summary), ``reason`` (why not, where it did not), ``reported`` (the summary's count of
    hazards or errors, None where there was none), ``log`` (the tool's log) and ``returncode``."""

    tool: str
    hazards: list[Hazard] = field(default_factory=list)
    ran: bool = False
    reason: str = ""
    reported: int | None = None
    log: str = ""
    returncode: int | None = None
    seconds: float = 0.0


def _name(path: str) -> str:
    return re.split(r"[/\\]", path.strip())[-1] if path else ""


# ------------------------------------------------------------------------------ parsing

_PREFIX = re.compile(r"^\s*=+\s?")
_SEVERITY = (
    r"(?P<severity>error|warning|info)\s*:\s*(?:\((?P<category>[^)]*)\)\s*)?"  # "Warning: (Warp Level Programming) ..."
)
_RACE = re.compile(_SEVERITY + r"race reported between (?P<access>\w+) access at (?P<at>.*)$", re.I)
_RACE_AND = re.compile(r"\band (?P<access>\w+) access at (?P<at>.*?)\s*(?:\[(?P<count>\d+) hazards?\])?\s*$", re.I)
_HAZARD = re.compile(
    _SEVERITY + r"potential (?P<kind>\w+) hazard detected at (?P<space>__\w+__)\s*(?P<address>\S+)"
    r"(?: in block \((?P<block>[^)]*)\))?",
    re.I,
)
_THREAD = re.compile(r"\b(?P<access>read|write)\s+thread\s*\((?P<thread>[^)]*)\)\s*at (?P<at>.*)$", re.I)
_VALUES = re.compile(r"current value\s*:\s*(?P<current>\S+?),\s*incoming value\s*:\s*(?P<incoming>\S+)", re.I)
_SYNC = re.compile(r"(?P<what>(?:barrier|synchronization|sync)\s+error detected\.?.*?)\s*$", re.I)
_SYNC_AT = re.compile(r"^\s*at (?P<at>.*)$", re.I)
_SYNC_BY = re.compile(r"^\s*by thread\s*\((?P<thread>[^)]*)\)(?: in block \((?P<block>[^)]*)\))?", re.I)
_RACE_SUMMARY = re.compile(r"racecheck summary:\s*(?P<count>\d+) hazards?", re.I)
_ERROR_SUMMARY = re.compile(r"error summary:\s*(?P<count>\d+) errors?", re.I)
# a location: "fw_blocked_phase1+0x1f0 in /x/fw_blocked.cu:49", "0x1f0 in /x/fw_blocked.cu:49:fw_blocked_phase1(int*, int, int)",
# or without line information "fw_blocked_phase1+0x1f0" / "0x1f0 in fw_blocked_phase1"
_FILE_LINE = re.compile(r"\bin (?P<file>.+?\.(?:cuh?|h|hpp|cpp|cc|c)):(?P<line>\d+)(?::(?P<after>.*))?$")
_KERNEL_PLUS = re.compile(r"^(?P<kernel>[A-Za-z_][\w:<>~, ]*?)(?:\(.*?\))?\+0x[0-9a-fA-F]+")
_KERNEL_IN = re.compile(r"^0x[0-9a-fA-F]+ in (?P<kernel>[A-Za-z_][\w:<>~]*)")


def _kernel_name(text: str) -> str:
    name = text.strip()
    name = name.split("(", 1)[0].strip()
    return name


def location(at: str) -> tuple[str, str, int | None]:
    """(kernel, file, line) of a location the tool printed after "at"; "" and None for what it
    did not say."""
    text = at.strip()
    kernel, file, line = "", "", None
    m = _FILE_LINE.search(text)
    if m:
        file, line = m.group("file").strip(), int(m.group("line"))
        if m.group("after"):
            kernel = _kernel_name(m.group("after"))
        text = text[: m.start()].strip()
    if not kernel:
        k = _KERNEL_PLUS.match(text) or _KERNEL_IN.match(text)
        if k:
            kernel = _kernel_name(k.group("kernel"))
    return kernel, file, line


def _place(a: tuple[str, str, int | None], b: tuple[str, str, int | None] | None) -> tuple[str, str, int | None]:
    """The location a hazard is filed under: the first access's where it has a file, else the second's."""
    if a[1] or b is None or not b[1]:
        return a if a[0] or b is None else (b[0], a[1], a[2])
    return (a[0] or b[0], b[1], b[2])


def _at(loc: tuple[str, str, int | None]) -> str:
    _, file, line = loc
    if not file:
        return "a place without line information"
    return f"{_name(file)}:{line}" if line is not None else _name(file)


def parse(log: str, tool: str) -> list[Hazard]:
    """Every hazard (racecheck) or error (synccheck) in a compute-sanitizer ``log``, in order."""
    hazards: list[tuple[Hazard, tuple]] = []
    open_: dict[str, Any] | None = None

    def close() -> None:
        nonlocal open_
        if open_ is not None:
            hazards.append(_finish(open_, tool))
        open_ = None

    for raw in log.splitlines():
        line = _PREFIX.sub("", raw, count=1)
        if m := _RACE.search(line):
            close()
            open_ = {"kind": "race", "severity": m["severity"].lower(), "a": (m["access"], location(m["at"]))}
            tail = _RACE_AND.search(m["at"])  # both accesses on one line
            if tail:
                open_["a"] = (m["access"], location(m["at"][: tail.start()]))
                open_["b"], open_["count"] = (tail["access"], location(tail["at"])), int(tail["count"] or 1)
                close()
        elif m := _HAZARD.search(line):
            close()
            open_ = {
                "kind": "hazard",
                "severity": m["severity"].lower(),
                "hazard": m["kind"].upper(),
                "block": m["block"],
                "threads": [],
            }
        elif m := _SYNC.search(line):
            close()
            open_ = {"kind": "sync", "severity": "error", "what": m["what"], "at": None, "by": None}
        elif open_ is None:
            continue
        elif open_["kind"] == "race" and (m := _RACE_AND.search(line)):
            open_["b"], open_["count"] = (m["access"], location(m["at"])), int(m["count"] or 1)
            close()
        elif open_["kind"] == "hazard" and (m := _THREAD.search(line)):
            open_["threads"].append((m["access"], m["thread"], location(m["at"])))
        elif open_["kind"] == "hazard" and (m := _VALUES.search(line)):
            open_["values"] = (m["current"], m["incoming"])
            close()
        elif open_["kind"] == "sync" and (m := _SYNC_AT.search(line)) and open_["at"] is None:
            open_["at"] = location(m["at"])
        elif open_["kind"] == "sync" and (m := _SYNC_BY.search(line)):
            open_["by"] = (m["thread"], m["block"])
            close()
    close()
    return _merged(hazards)


def _finish(found: dict[str, Any], tool: str) -> tuple[Hazard, tuple]:
    """The hazard a report block describes, and the key of its site (what two reports of the same
    mistake share: the places and the kind, not the threads)."""
    severity = found["severity"]
    if found["kind"] == "race":
        access_a, a = found["a"]
        access_b, b = found.get("b", ("", None))
        kernel, file, line = _place(a, b)
        other = f" races a shared-memory {access_b.lower()} at {_at(b)}" if b is not None else " races another access"
        what = _in(f"a shared-memory {access_a.lower()} at {_at(a)}{other}", kernel)
        return Hazard(tool, kernel, file, line, what, severity, int(found.get("count", 1))), (what,)
    if found["kind"] == "hazard":
        threads = found["threads"]
        first = threads[0][2] if threads else ("", "", None)
        second = threads[1][2] if len(threads) > 1 else None
        kernel, file, line = _place(first, second)
        parts = [f"{acc.lower()} by thread ({t}) at {_at(loc)}" for acc, t, loc in threads[:2]]
        what = f"a {found['hazard']} hazard on shared memory: " + (", ".join(parts) or "two threads")
        if found.get("block"):
            what += f", block ({found['block']})"
        site = (found["hazard"], *((acc.lower(), loc) for acc, _, loc in threads[:2]))
        return Hazard(tool, kernel, file, line, _in(what, kernel), severity), site
    kernel, file, line = found["at"] or ("", "", None)
    what = " ".join(found["what"].split()).rstrip(".")
    what = what[0].lower() + what[1:] if what else "a barrier error"
    site = (what,)
    if found.get("by"):
        thread, block = found["by"]
        what += f" (thread ({thread})" + (f", block ({block}))" if block else ")")
    return Hazard(tool, kernel, file, line, _in(what, kernel), severity), site


def _in(what: str, kernel: str) -> str:
    return f"{what} in {kernel}" if kernel else what


def _merged(hazards: list[tuple[Hazard, tuple]]) -> list[Hazard]:
    """Hazards of the same kind at the same places, one row each (the first's words, counts added),
    in first-seen order."""
    rows: dict[tuple, Hazard] = {}
    for h, site in hazards:
        key = (h.tool, h.kernel, h.file, h.line, h.severity, site)
        if key in rows:
            old = rows[key]
            rows[key] = Hazard(old.tool, old.kernel, old.file, old.line, old.what, old.severity, old.count + h.count)
        else:
            rows[key] = h
    return list(rows.values())


def summary_count(log: str, tool: str) -> int | None:
    """The count the tool's closing summary gives (racecheck: hazards; synccheck: errors), None
    where the log has no summary (the tool did not run the target to its end)."""
    pattern = _RACE_SUMMARY if tool == "racecheck" else _ERROR_SUMMARY
    counts = [int(m["count"]) for m in pattern.finditer(log)]
    if not counts and tool == "racecheck":
        counts = [int(m["count"]) for m in _ERROR_SUMMARY.finditer(log)]
    return max(counts) if counts else None


# ------------------------------------------------------------------------------ running


def run_tool(
    tool: str,
    target: Sequence[str],
    *,
    timeout_s: float = 300,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: str | None = None,
) -> ToolRun:
    """``python TARGET...`` under ``compute-sanitizer --tool TOOL`` (racecheck or synccheck), in a
    process group of its own, killed after ``timeout_s``; ``stdin`` is written to it. The tool's
    report goes to a log file of its own (never mixed with what the target prints: a kernel's
    printf cannot forge or hide a hazard)."""
    (run,) = run_tools([(tool, stdin)], target, timeout_s=timeout_s, env=env, cwd=cwd)
    return run


def run_tools(
    runs: Sequence[tuple[str, str | None]],
    target: Sequence[str],
    *,
    timeout_s: float = 300,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> list[ToolRun]:
    """``run_tool`` for each ``(tool, stdin)`` of ``runs``, all at once: each in a process group of
    its own, started together and each killed past the same ``timeout_s``. The tools instrument
    the target's accesses and barriers; none of them times anything, so running them side by side
    on one GPU changes nothing they report, and a grader waits for the slower, not for the sum. An
    interrupt (a cancelled job, Ctrl-C) or an error kills every tool and its target."""
    import time

    for tool, _ in runs:
        if tool not in TOOLS:
            raise ValueError(f"unknown compute-sanitizer tool {tool!r} (one of {', '.join(TOOLS)})")
    sanitizer = cuda_tool("compute-sanitizer")
    if sanitizer is None:
        return [ToolRun(tool, reason="compute-sanitizer not found") for tool, _ in runs]
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="cudalab-sanitizer-") as scratch:
        started = time.monotonic()
        procs: list[tuple[str, subprocess.Popen, Path, Path]] = []
        try:
            for i, (tool, stdin) in enumerate(runs):
                base = Path(scratch) / f"{i}-{tool}"
                log_path, err_path, in_path = (
                    base.with_suffix(".log"),
                    base.with_suffix(".stderr"),
                    base.with_suffix(".in"),
                )
                in_path.write_text(stdin or "")
                cmd = [sanitizer, "--tool", tool, *TOOL_OPTIONS[tool], "--log-file", str(log_path)]
                # files, not pipes: no write waits on a target that does not read, no tool on a full pipe
                with open(in_path) as given, open(err_path, "w") as err:
                    proc = subprocess.Popen(
                        [*cmd, sys.executable, *target],
                        stdin=given if stdin is not None else subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,  # the target's and its kernels' output: never read
                        stderr=err,
                        cwd=str(cwd) if cwd is not None else None,
                        env=environment,
                        text=True,
                        start_new_session=True,
                    )
                procs.append((tool, proc, log_path, err_path))
            out = []
            for tool, proc, log_path, err_path in procs:
                try:
                    proc.wait(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
                except subprocess.TimeoutExpired:
                    kill_group(proc)
                    log = log_path.read_text(errors="replace") if log_path.is_file() else ""
                    out.append(
                        ToolRun(
                            tool,
                            parse(log, tool),
                            reason=f"{tool} did not finish within {timeout_s:g} s",
                            log=log,
                            seconds=time.monotonic() - started,
                        )
                    )
                    continue
                out.append(_finished(tool, proc, log_path, err_path, time.monotonic() - started))
        except BaseException:
            for _, proc, _, _ in procs:  # an interrupt or an error: the tools and their targets go with it
                if proc.returncode is None:  # (one already reaped has no group left to kill)
                    kill_group(proc)
            raise
    return out


def _finished(tool: str, proc: subprocess.Popen, log_path: Path, err_path: Path, seconds: float) -> ToolRun:
    """A tool's run that ended by itself: its hazards, and why there is no verdict where the log has
    no summary (the tool did not run the target to its end)."""
    log = log_path.read_text(errors="replace") if log_path.is_file() else ""
    hazards = parse(log, tool)
    reported = summary_count(log, tool)
    run = ToolRun(tool, hazards, reported is not None, "", reported, log, proc.returncode, seconds)
    if reported is None:
        err = err_path.read_text(errors="replace") if err_path.is_file() else ""
        tail = (log.strip() or err.strip())[-300:]
        run.reason = f"{tool} gave no summary (exit status {proc.returncode})" + (f": {tail}" if tail else "")
    return run
