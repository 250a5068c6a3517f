"""BENCHMARKS.md, rendered from the recordings: never typed, never recomputed.

Every chapter notebook records its headline numbers in ``summary.json`` (``Chapter.headline``);
this module lays them out, recording by recording, with the provenance of each chapter. It has
no per-chapter code: a new chapter's headlines appear here by being recorded.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from cudalab.chapter import catalog
from cudalab.chapter.profiles import profile_for_gpu
from cudalab.chapter.recorded import PROVENANCE, SUMMARY, Recording, all_recordings
from cudalab.chapter.staleness import stale_recordings
from cudalab.core.paths import RESULTS_DIR
from cudalab.report.compare.points import fmt_value, headlines, where_of
from cudalab.report.compare.sources import common_chapters, recording_source


def _title(chapter_id: str) -> str:
    try:
        return catalog.chapter(chapter_id).title
    except Exception:  # a recording of a chapter whose notebook is gone still renders
        return chapter_id


BASELINE_CHECK = "baseline_check.csv"


def _commit(record: dict, commit: str | None = None) -> str:
    """A recorded commit as the tables show it: its first ten digits, and "(uncommitted changes)"
    where the tree that ran differed from it (``git_dirty``, derived where it ran)."""
    commit = record.get("git_commit") if commit is None else commit
    return f"`{str(commit)[:10]}`" + (" (uncommitted changes)" if record.get("git_dirty") else "")


def stale_chapters(results: Path = RESULTS_DIR) -> dict[str, str]:
    """``gpu/profile/chapter`` -> why its recording is stale (``make check-recordings``'s finding:
    "recorded before kernels_cu/x.cu changed"), for each recorded chapter whose sources changed
    since or whose profile now asks for other parameters: its numbers are the earlier code's, and
    every table here says so beside them until it is re-recorded."""
    return {
        s.where: s.staleness.sentence()
        or "recorded with other parameters than its profile now gives"
        + (f" ({'; '.join(s.staleness.parameters)})" if s.staleness.parameters else "")
        for s in stale_recordings(results)
    }


def stale_line(why: str) -> str:
    """The bullet a stale chapter's headlines carry in BENCHMARKS.md."""
    return (
        f"- **Stale:** {why}; these are the earlier code's numbers until the chapter is re-recorded on this GPU "
        "(`make check-recordings` lists every such chapter)"
    )


def baseline_lines(path: Path) -> list[str]:
    """The recorded verdict of a chapter's baseline check (``core.baseline``), one line per row;
    none where the recording has no check."""
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    lines = []
    for r in rows:
        where = ", ".join(f"{c} = {r[c]}" for c in ("n", "d", "k") if r.get(c))
        verdict = "**FLAGGED**" if r.get("status") == "flagged" else r.get("status", "")
        lines.append(
            f"- Baseline check: {r.get('baseline')} at {where}: {verdict} (sweep median "
            f"{float(r['sweep_time_ms']):.4g} ms, {r.get('back_to_back_calls')} back-to-back calls "
            f"{float(r['back_to_back_time_ms']):.4g} ms per call) (table `baseline_check`)"
        )
    return lines


def render(results: Path = RESULTS_DIR) -> str:
    """The whole BENCHMARKS.md for every recording under ``results``."""
    out = [
        "# Benchmarks",
        "",
        "Written by `python tools/write_benchmarks.py` (`make benchmarks`) from the recordings under `results/`, "
        "which `build_report.py --record` wrote on a real GPU. Every number below is a chapter's own recorded "
        "headline (`summary.json`); nothing here is typed or recomputed.",
        "",
        "A chapter that sets its kernels beside a library baseline (cuBLAS, `cupy.max`, the CuPy k-means "
        "iteration) times both the same way and checks the baseline at one size against 50 back-to-back calls "
        "in the same run; its verdict follows the chapter's headlines as *Baseline check*. A chapter with a "
        "baseline but no such line was recorded before the check existed, with one synchronized call per "
        "sample, which can time a library call's host dispatch.",
        "",
    ]
    stale = stale_chapters(results)
    out += side_by_side(results, stale)
    for rec in all_recordings(results):
        log = json.loads((rec.path / "recordings.json").read_text())
        chapters = log.get("chapters", {})
        if not chapters:
            continue
        first = json.loads((rec.path / next(iter(chapters)) / PROVENANCE).read_text())
        out += [
            f"## Profile `{rec.profile}` on {rec.gpu_name}",
            "",
            f"`results/{rec.gpu}/{rec.profile}/`. Driver {first.get('driver_version')}, CUDA runtime "
            f"{first.get('cuda_runtime')}, CuPy {first.get('cupy')}.",
            "",
            "| chapter | recorded (UTC) | commit | source fingerprint | chapter run time (s) | recorded by | "
            "its wall time (s) |",
            "|---|---|---|---|---:|---|---:|",
        ]
        for cid, c in chapters.items():
            p = json.loads((rec.path / cid / PROVENANCE).read_text())
            fp = (p.get("source_fingerprint") or {}).get("sha256", "")
            commit = _commit(p, c["git_commit"])
            out.append(
                f"| {cid} | {p['date_utc']} | {commit} | `{fp[:12] or 'not recorded'}` | {c['seconds']:.0f} | "
                f"`{c['build']['command']}` | {c['build']['wall_s']:.0f} |"
            )
        out.append("")
        for cid in chapters:
            path = rec.path / cid / SUMMARY
            entries = json.loads(path.read_text()) if path.is_file() else []
            out += [f"**{_title(cid)}**", ""]
            why = stale.get(f"{rec.gpu}/{rec.profile}/{cid}")
            out += [stale_line(why)] if why else []
            out += [f"- {e['text']}" + (f" (table `{e['table']}`)" if e.get("table") else "") for e in entries] or [
                "- no headline summary recorded"
            ]
            out += baseline_lines(rec.path / cid / BASELINE_CHECK)
            out.append("")
    out += build_times(results)
    out += grading_times(results)
    out += mutation_scores(results)
    return "\n".join(out).rstrip() + "\n"


def native_recordings(results: Path = RESULTS_DIR) -> list[Recording]:
    """Each GPU's recording of its own profile (the one whose ``match`` names it: h100 on an H100,
    h200 on an H200), in the order of the results folder: what the GPUs measured on the grids
    sized for them, as ``build_report.py --gpu auto`` would measure it there."""
    return [r for r in all_recordings(results) if profile_for_gpu(r.gpu_name) == r.profile]


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "not recorded"
    where = where_of(entry.get("rows") or {})
    return f"**{fmt_value(entry['value'], entry['unit'])}**" + (f" ({where})" if where else "")


def side_by_side(results: Path = RESULTS_DIR, stale: dict[str, str] | None = None) -> list[str]:
    """The GPUs side by side: each chapter's headlines as recorded by every GPU on its own profile,
    each later GPU's ratio to the first labelled same / faster / slower by the recorded spread,
    as ``build_report.py --compare`` labels them, and below a chapter's table each GPU whose
    recording of it is stale (``stale_chapters``). None where fewer than two GPUs are recorded so."""
    stale = stale_chapters(results) if stale is None else stale
    recs = native_recordings(results)
    if len(recs) < 2:
        return []
    sources = [recording_source(r.path) for r in recs]
    first = sources[0]
    out = [
        "## The GPUs side by side",
        "",
        "Each GPU on its own profile (the grid sized for it), from the recordings below; "
        f"`python build_report.py --compare {' '.join(f'{r.gpu}/{r.profile}' for r in recs)}` draws the same as a report "
        "with figures. A ratio is the later GPU's value over the first's; *same* means within the smaller "
        "recorded spread of the two (at least 1%). Where the two grids differ, the sizes are named.",
        "",
    ]
    for chapter in common_chapters(sources):
        rows = headlines(sources, chapter)
        if not rows:
            continue
        out += [
            f"**{_title(chapter)}**",
            "",
            "| headline | "
            + " | ".join(s.label for s in sources)
            + " | "
            + " | ".join(f"{s.label} against {first.label}" for s in sources[1:])
            + " |",
            "|---|" + "---|" * (2 * len(sources) - 1),
        ]
        for row in rows:
            verdicts = [row.verdicts.get(s.label) or "not in both" for s in sources[1:]]
            cells = [_cell(row.cells.get(s.label)) for s in sources]
            out.append(f"| {row.key} ({row.unit}) | " + " | ".join(cells + verdicts).replace("\n", " ") + " |")
        out.append("")
        for rec in recs:
            why = stale.get(f"{rec.gpu}/{rec.profile}/{chapter}")
            if why:
                out += [
                    f"*Stale:* {rec.gpu_name} ({rec.profile}) above: {why}; its numbers are the earlier code's.",
                    "",
                ]
    return out


README_BEGIN = "<!-- side by side: written by make benchmarks from results/, never typed -->"
README_END = "<!-- end of side by side -->"


def _pct(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, (int, float)) else "-"


def readme_table(results: Path = RESULTS_DIR) -> list[str]:
    """The README's short form of ``side_by_side``: per chapter, each GPU's summary row (its best
    configuration and its fraction of the chapter's ceiling, from ``scorecard.json``)."""
    recs = native_recordings(results)
    if len(recs) < 2:
        return ["Only one GPU is recorded on its own profile; `make benchmarks` lists what is."]
    sources = [recording_source(r.path) for r in recs]
    stale = stale_chapters(results)
    out = [
        "| chapter | " + " | ".join(f"{s.label}: best | of its ceiling" for s in sources) + " |",
        "|---|" + "---|---:|" * len(sources),
    ]
    for chapter in common_chapters(sources):
        cells = []
        for rec, s in zip(recs, sources, strict=True):
            card = s.scorecard(chapter)
            mark = " (stale)" if f"{rec.gpu}/{rec.profile}/{chapter}" in stale else ""
            cells += [(card.get("best") or "-") + mark, _pct(card.get("fraction_of_ceiling"))]
        out.append(f"| {_title(chapter)} | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return out + [
        "",
        "A dash: the chapter names no ceiling, or its ceiling did not bound that run (the summary row of "
        "the report says which). *(stale)*: recorded before the chapter's code last changed, so the earlier "
        "code's numbers (`make check-recordings` lists each, BENCHMARKS.md says what changed).",
    ]


def with_readme_table(readme: str, results: Path = RESULTS_DIR) -> str:
    """``readme`` with the text between its side-by-side markers replaced by ``readme_table``;
    unchanged where the markers are missing (a README without the section is left alone)."""
    if README_BEGIN not in readme or README_END not in readme:
        return readme
    head, rest = readme.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return head + README_BEGIN + "\n" + "\n".join(readme_table(results)) + "\n" + README_END + tail


def _records(results: Path, kind: str) -> list[Path]:
    """The timing records of one kind under ``results/<kind>/``, by name."""
    return sorted((results / kind).glob("*.json")) if (results / kind).is_dir() else []


def build_times(results: Path = RESULTS_DIR) -> list[str]:
    """The section of the build times that ``tools/bench_build.py --record`` (``make bench``)
    measured: cold, cached and replayed builds, each beside its goal."""
    files = _records(results, "build_times")
    if not files:
        return []
    out = [
        "## Build times",
        "",
        "Measured by `make bench` (`tools/bench_build.py --record`): the wall time of `build_report.py`, cold "
        "(every chapter measured, fresh CuPy kernel cache), cached (the same build again: unchanged chapters "
        "kept) and replayed (from `results/`, no GPU used). `--yours DIR`: the chapters that measure a student's "
        "files, plain and then with `--kernels DIR` (each student's series over the chapter's sweep), both cold.",
        "",
        "| profile | machine | date (UTC) | commit | build | seconds | goal (s) | meets it |",
        "|---|---|---|---|---|---:|---:|---|",
    ]
    for path in files:
        r = json.loads(path.read_text())
        m = r["machine"]
        where = (f"{m['gpu_name']}" if m["gpu_name"] != "none" else "no GPU") + f", {m['cpu_count']} CPU cores"
        if "compiler_report_cache_files" in r and "replay" in r["builds"]:
            where += f" ({r['compiler_report_cache_files']} compiler reports cached before the replay)"
        yours = r.get("yours")  # bench_build --yours: the chapters plain, then with a student's files
        for label, t in r["builds"].items():
            if yours:
                # the chapters the build measured (chapter 00 besides: its ceilings judge a student)
                chapters = " ".join(c.split("_")[0] for c in (t.get("chapter_seconds") or yours["chapters"]))
                label = f"{label}, chapters {chapters}" + (
                    f" with {', '.join(yours['files'])} (goal {t['goal_s'] / r['builds']['plain']['seconds']:.0f}x plain)"
                    if label == "yours" and "plain" in r["builds"]
                    else ""
                )
            out.append(
                f"| `{r['profile']}` | {where} | {t.get('date_utc', r['date_utc'])} | {_commit(r)} | {label} | "
                f"{t['seconds']:.0f} | "
                + (f"{t['goal_s']:.0f} | {'yes' if t['meets_goal'] else 'no'} |" if t["goal_s"] else "— | — |")
            )
    spent = _where_the_time_went(files)
    return out + ([""] + spent if spent else []) + [""] + several_gpus(files)


def several_gpus(files: list[Path]) -> list[str]:
    """The several-GPU builds (``bench_build --workers N``) beside the serial cold build of the same
    run: wall time against issue 45's goal, and each chapter's seconds both ways, as a ratio."""
    rows = []
    for path in files:
        r = json.loads(path.read_text())
        serial = (r["builds"].get("cold") or {}).get("chapter_seconds") or {}
        for label, t in r["builds"].items():
            if not label.startswith("workers") or not serial:
                continue
            ratios = t.get("chapter_ratio") or {}
            each = ", ".join(
                f"{name.split('_')[0]} {serial[name]:.0f} → {sec:.0f} s ({ratios.get(name, sec / serial[name]):.2f}x)"
                for name, sec in t["chapter_seconds"].items()
                if serial.get(name)
            )
            worst = max(ratios.values(), default=float("nan"))
            rows.append(
                f"| `{r['profile']}` | {r['machine']['gpu_name']}, {r['machine'].get('cpu_count')} CPU cores | "
                f"{t.get('date_utc', r['date_utc'])} | {_commit(r)} | {t['gpus']} | {t['serial_seconds']:.0f} | "
                f"{t['seconds']:.0f} | {t['goal_s']:.0f} | {'yes' if t['meets_goal'] else 'no'} | "
                f"{worst:.2f}x (goal {t.get('per_chapter_goal', 1.1):.2f}x) | {each} |"
            )
    if not rows:
        return []
    return [
        "### On several GPUs",
        "",
        "`tools/bench_build.py --workers N --record` on one host: the serial cold build, then the same build "
        "through Dask on N GPUs (`build_report.py --workers N`), cold again with caches of its own, in the same "
        "run. The goal (issue 45): on 2 GPUs at most 0.60x the serial build; on more, at most 1.15x chapter 00 "
        "plus the slowest chapter (serial). A chapter's seconds are its run on its worker, not its time queued.",
        "",
        "| profile | machine | date (UTC) | commit | GPUs | serial (s) | on the GPUs (s) | goal (s) | meets it "
        "| slowest chapter against serial | each chapter, serial → on the GPUs |",
        "|---|---|---|---|---:|---:|---:|---:|---|---|---|",
        *rows,
        "",
    ]


def _where_the_time_went(files: list[Path]) -> list[str]:
    """One line per build that recorded its chapters' seconds (``bench_build``'s ``chapter_seconds``):
    which chapters a build's time went to, and what the rest (start-up, the report) took."""
    lines = []
    for path in files:
        r = json.loads(path.read_text())
        for label, t in r["builds"].items():
            chapters = t.get("chapter_seconds") or {}
            if not chapters or label.startswith("workers"):  # side by side, in their own table
                continue
            parts = ", ".join(f"{name.split('_')[0]} {sec:.0f} s" for name, sec in chapters.items())
            rest = t["seconds"] - sum(chapters.values())
            cores = r["machine"].get("cpu_count")  # two hosts of one GPU model differ in their CPUs
            host = f"{r['machine']['gpu_name']}" + (f", {cores} CPU cores" if cores else "")
            lines.append(
                f"- `{r['profile']}` {label} build on {host}: chapters {parts}; "
                f"the rest (start-up, the report) {rest:.0f} s."
            )
    return ["Where the time went:", ""] + lines if lines else []


def _cases_of(record: dict) -> str:
    """The hidden cases a grading run included, by name, or "none" (a run from before
    ``bench_grading`` gave cases has no such field: it gave none)."""
    return ", ".join(f"`{c}`" for c in record.get("cases", [])) or "none"


def _races_of(record: dict) -> str:
    """Whether the grading run checked races under compute-sanitizer (goal 8 minutes, not 5); a
    run from before the grader had race checks has no such field."""
    if "race_checks" not in record:
        return "none (before them)"
    return "racecheck, synccheck" if record["race_checks"] else "none (no compute-sanitizer)"


def grading_times(results: Path = RESULTS_DIR) -> list[str]:
    """The section of the grading runs that ``tools/bench_grading.py --record`` measured: a class
    graded through ``build_report.py --grade``, its wall time beside the goal, and what became of
    its submissions."""
    files = _records(results, "grading")
    if not files:
        return []
    out = [
        "## Grading a class",
        "",
        "Measured by `tools/bench_grading.py --record`: `build_report.py --grade` on a class of submissions of one "
        "chapter's kernel file (the fixture class of the tests: a correct and a slower kernel, a wrong result, a "
        "compile error, a signature mismatch, an endless loop, an out-of-bounds write, forbidden files; the rest "
        "correct), each in a process of its own, with the grader's default limits, timed from the outside. Where the "
        "host has compute-sanitizer, every submission's graded kernels also run under racecheck and synccheck, and "
        "the goal is 8 minutes on one GPU rather than 5.",
        "",
        "| machine | GPUs | date (UTC) | commit | chapter | students | hidden cases | race checks | seconds "
        "| goal (s) | meets it | scoreboard rows |",
        "|---|---:|---|---|---|---:|---|---|---:|---:|---|---|",
    ]
    for path in files:
        r = json.loads(path.read_text())
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(r["statuses"].items(), key=lambda x: -x[1]))
        out.append(
            f"| {r['gpu_name']} | {r['gpus']} | {r['date_utc']} | {_commit(r)} | {r['chapter']} "
            f"(`{r['kernel_file']}`) | {r['students']} | {_cases_of(r)} | {_races_of(r)} | {r['wall_s']:.0f} | {r['goal_s']:.0f} | "
            f"{'yes' if r['meets_goal'] else 'no'} | {statuses} |"
        )
    return out + [""]


def _module_label(module: str, functions: list[str] | None) -> str:
    """``cudalab.grading.grade`` and its mutated functions as the table names them:
    ``grading/grade.py`` (``scoreboard``, ``fully_correct``)."""
    path = "/".join(module.split(".")[1:]) + ".py"
    return f"`{path}`" + (f" ({', '.join(f'`{f}`' for f in functions)})" if functions else "")


def _score(killed: int, total: int) -> str:
    return f"{100 * killed / total:.1f}%" if total else "-"


def mutation_scores(results: Path = RESULTS_DIR) -> list[str]:
    """The section of the grader's mutation scores that ``tools/mutation_scores.py --record``
    (run by ``make mutants``) kept from mutmut's results: per module, the mutants killed of those
    run; the newest record only, none where there is none."""
    files = _records(results, "mutation")
    if not files:
        return []
    r = max((json.loads(p.read_text()) for p in files), key=lambda rec: rec.get("date_utc", ""))
    out = [
        "## Mutation testing of the grader",
        "",
        f"Measured by `make mutants` (mutmut {r['mutmut']}, on {r['cpu_count']} CPU cores; kept by "
        "`tools/mutation_scores.py --record`): each mutant is one small edit of a module that decides a verdict, "
        "run against the fast CPU tests that reach it; a mutant is killed where a test fails (or runs past "
        "mutmut's time limit). Mutants not run are not counted.",
        "",
        "| module | killed | of | score |",
        "|---|---:|---:|---:|",
    ]
    survivors, others = 0, []
    for module, m in r["modules"].items():
        if not m["total"]:
            continue
        survivors += m["survived"]
        out.append(
            f"| {_module_label(module, m.get('functions'))} | {m['killed']} | {m['total']} | "
            f"{_score(m['killed'], m['total'])} |"
        )
        counts: dict[str, int] = {}
        for status in (m.get("other") or {}).values():
            counts[status] = counts.get(status, 0) + 1
        others += [f"{_module_label(module, None)}: {n} {status}" for status, n in sorted(counts.items())]
    out += [f"| all | {r['killed']} | {r['total']} | {_score(r['killed'], r['total'])} |", ""]
    if others:
        untested = any("no tests" in (m.get("other") or {}).values() for m in r["modules"].values())
        why = " (*no tests*: no selected test reaches the mutated function)" if untested else ""
        out += [f"Neither killed nor survived, counted in *of* as not killed: {'; '.join(others)}{why}.", ""]
    out += [
        f"Recorded {r['date_utc']} (UTC) at commit {_commit(r)}. "
        + (
            f"{survivors} mutant{'s' if survivors != 1 else ''} survived, each named in `results/mutation/scores.json`; "
            "`docs/mutation-testing.md` reads the survivors and says, for each it has read, why its edit changes "
            "nothing (an equivalent mutant)."
            if survivors
            else "No mutant survived."
        ),
        "",
    ]
    return out
