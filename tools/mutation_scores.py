#!/usr/bin/env python3
"""The mutation scores of the grader (``make mutants``), per module, from mutmut's results.

    python tools/mutation_scores.py [--record]

Reads ``mutmut results --all true`` (run in the repository root, where ``make mutants`` left its
``mutants/`` folder): one ``name: status`` line per mutant, a name such as
``cudalab.core.check.x_compare__mutmut_3``. Counts the mutants of ``MUTANTS`` (the Makefile's
selection: every function of five modules, and of ``grading/grade.py`` the ranking only,
``scoreboard`` and ``fully_correct``) per module: killed (mutmut's ``killed``, and ``timeout``: the
edit made the tests run past mutmut's limit, as an endless loop does), survived, and any other
status (``no tests``, ``suspicious``, ``segfault``, ...) counted in the total but not as killed, as
the Makefile's summary counts them. A mutant "not checked" (not run: outside the run's selection,
or the run was stopped) is not counted at all. The score is killed over total.

Without ``--record`` prints the record; ``--record`` keeps it, with the date, the commit (and
whether the tree differed from it) derived by the code, mutmut's version and the host's CPU
count, in ``results/mutation/scores.json``; ``make benchmarks`` renders it into BENCHMARKS.md.
Why each survivor changes nothing is in docs/mutation-testing.md.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.core.files import atomic_write_text  # noqa: E402
from cudalab.core.paths import RESULTS_DIR, ROOT  # noqa: E402
from cudalab.core.provenance import commit_state  # noqa: E402

# The Makefile's MUTANTS (its default selection): what `make mutants` runs.
MUTANTS = (
    "cudalab.core.check.*",
    "cudalab.grading.submission.*",
    "cudalab.grading.directives.*",
    "cudalab.grading.results.*",
    "cudalab.grading.isolate.*",
    "cudalab.grading.grade.x_scoreboard__*",
    "cudalab.grading.grade.x_fully_correct__*",
)
KILLED = ("killed", "timeout")
NOT_CHECKED = "not checked"
_LINE = re.compile(r"^\s*(?P<name>\S+?)\s*:\s*(?P<status>[a-z][a-z ]*?)\s*$")
# a mutant of a function (x_name) or of a method (xǁClassǁname), numbered
_NAME = re.compile(r"^(?P<module>.+)\.(?P<function>x[^.]*?)__mutmut_(?P<number>\d+)$")


def parse(text: str) -> dict[str, str]:
    """``mutmut results``'s lines as mutant name -> status; any other line is ignored."""
    found = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and _NAME.match(m["name"]):
            found[m["name"]] = m["status"]
    return found


def _functions(module: str, patterns: tuple[str, ...]) -> list[str] | None:
    """The functions of ``module`` the selection names one by one (``x_scoreboard__*``), or None
    where it takes the whole module."""
    if f"{module}.*" in patterns:
        return None
    names = [p[len(module) + 1 :].removesuffix("__*") for p in patterns if p.startswith(module + ".x")]
    return [n.removeprefix("x_") for n in names]


def scores(statuses: dict[str, str], patterns: tuple[str, ...] = MUTANTS) -> dict[str, dict]:
    """Per module (dotted name), in the order of ``patterns``: the mutants counted (of the
    selection, checked), killed (timeouts included), survived, other statuses, the score and
    the survivors' names."""
    modules: dict[str, dict] = {}
    for p in patterns:
        module = p.removesuffix(".*") if p.endswith(".*") and "__" not in p else p.rsplit(".", 1)[0]
        modules.setdefault(
            module,
            {
                "functions": _functions(module, patterns),
                "killed": 0,
                "timeout": 0,
                "survived": 0,
                "other": {},
                "total": 0,
                "survivors": [],
            },
        )
    for name, status in sorted(statuses.items(), key=lambda kv: _order(kv[0])):
        m = _NAME.match(name)
        if not m or status == NOT_CHECKED or not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        entry = modules.get(m["module"])
        if entry is None:
            continue
        entry["total"] += 1
        if status in KILLED:
            entry["killed"] += 1
            entry["timeout"] += status == "timeout"
        elif status == "survived":
            entry["survived"] += 1
            entry["survivors"].append(name)
        else:
            entry["other"][name] = status
    for entry in modules.values():
        entry["score"] = round(entry["killed"] / entry["total"], 4) if entry["total"] else None
    return modules


def _order(name: str) -> tuple[str, int]:
    m = _NAME.match(name)
    return (f"{m['module']}.{m['function']}", int(m["number"])) if m else (name, 0)


def _mutmut() -> list[str]:
    """mutmut's command: the one beside this Python (the venv's), else on the PATH."""
    beside = Path(sys.executable).parent / "mutmut"
    return [str(beside)] if beside.is_file() else [shutil.which("mutmut") or "mutmut"]


def record(statuses: dict[str, str], mutmut_version: str) -> dict:
    """The record ``--record`` keeps: the scores, overall and per module, with their provenance
    (the mutmut that produced them is passed in: it is installed only where mutants are made)."""
    modules = scores(statuses)
    killed = sum(e["killed"] for e in modules.values())
    total = sum(e["total"] for e in modules.values())
    state = commit_state()
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "git_commit": state.get("git_commit", ""),
        "git_dirty": state.get("git_dirty"),
        "commit_from": state.get("commit_from"),
        "mutmut": mutmut_version,
        "cpu_count": os.cpu_count(),
        "selection": list(MUTANTS),
        "counted": "mutants of the selection that ran: killed (a timeout counts as killed) of all that ran; "
        "mutants not checked are not counted",
        "killed": killed,
        "total": total,
        "score": round(killed / total, 4) if total else None,
        "modules": modules,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help="keep the scores in results/mutation/scores.json")
    args = parser.parse_args()
    if not (ROOT / "mutants").is_dir():
        print("no mutants/ here: run `make mutants` first", file=sys.stderr)
        return 2
    proc = subprocess.run([*_mutmut(), "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    statuses = parse(proc.stdout)
    rec = record(statuses, importlib.metadata.version("mutmut"))
    if not rec["total"]:
        print("mutmut has no checked mutant of the selection: run `make mutants`", file=sys.stderr)
        return 2
    print(json.dumps(rec, indent=2))
    if args.record:
        target = RESULTS_DIR / "mutation" / "scores.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(rec, indent=2) + "\n")
        print(f"recorded {target.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
