"""Teaching handouts and answer keys, made from the same run as the report.

A **handout** (``build_report.py --handout``) gives a student, per chapter: the aim (the
notebook's opening cell), the kernel listings, the launch configurations (the profile's
parameters with what each means), what to measure and how, an empty results table to fill in,
and the discussion questions (the notebook's cell tagged ``questions``) with space for answers.
It holds no measured result.

An **answer key** (``--answers``) is the same, plus this run's results (the chapter's summary
row and headlines) and, under each question, the model answer that the notebook wrote from this
run's data (``Chapter.answer`` into ``answers.json``): a key built from an H100 recording quotes
the H100's numbers.

Both come as one document for the whole lab and one per chapter, in HTML (self-contained) and,
where Chromium is installed, PDF.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter import catalog, declarations
from cudalab.chapter.recorded import ANSWERS, PROVENANCE, SCORECARD, SUMMARY
from cudalab.core.files import atomic_write_text
from cudalab.report.stitch import render_pdf

# The parameters every chapter has for the machinery, not the experiment.
MACHINERY = {"profile", "mode", "data_dir", "recorded_dir", "progress", "point_time_limit_s"}
# Columns of a recorded table that are bookkeeping or spread, not a figure a student writes down.
_NOT_A_RESULT = re.compile(
    r"(^status$|_q1$|_q3$|_min$|_max$|^repeats$|^warmup|_source$|^reason$|^error|^note|^host_behind|^baseline_check$)"
)
# The result columns a student fills in, most telling first.
_PREFERRED = ("time_ms", "time_s", "bandwidth_GBps", "gflop_per_s", "relaxations_per_s", "speedup")
ANSWER_LINES = 6


@dataclass
class Kind:
    """What a document shows: ``answers`` adds the run's results and the model answers."""

    name: str
    title: str
    answers: bool


HANDOUT = Kind("handout", "Student handout", False)
ANSWER_KEY = Kind("answers", "Instructor's answer key", True)


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def _inline(text: str) -> str:
    """Markdown of one paragraph, without the paragraph tags (to follow a question's number)."""
    body = _markdown(text).strip()
    return body[3:-4] if body.startswith("<p>") and body.endswith("</p>") else body


def questions(nb: dict) -> list[str]:
    """The discussion questions: the numbered items of the notebook's cell tagged ``questions``."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and "questions" in cell.get("metadata", {}).get("tags", []):
            text = "".join(cell["source"])
            items = re.split(r"(?m)^\s*\d+\.\s+", text)[1:]
            return [re.sub(r"\s+", " ", item).strip() for item in items]
    return []


def _aim(nb: dict) -> str:
    """The chapter's opening cell: what we test, why, what we expect."""
    first = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    return _markdown("".join(first["source"])) if first else ""


_LISTED_FILE = re.compile(r"<summary>Listing: <code>kernels_cu/([^<]+)</code>")


def _listings(executed: dict, kernels: tuple[str, ...] = ()) -> list[str]:
    """The kernel listings the chapter shows (its ``source_markdown`` outputs), opened for print:
    every one, or with ``kernels`` (the files the student works on) those in full and the others
    named by file in one closing line."""
    found: list[str] = []
    named: list[str] = []
    for cell in executed["cells"]:
        if catalog.interactive_only(cell):
            continue
        for out in cell.get("outputs", []):
            body = out.get("data", {}).get("text/html")
            body = "".join(body) if isinstance(body, list) else body
            if body and "cudalab-listing" in body:
                m = _LISTED_FILE.search(body)
                if kernels and m and m.group(1) not in kernels:
                    named.append(m.group(1))
                    continue
                found.append(
                    body.replace('<details class="cudalab-listing">', '<details class="cudalab-listing" open>')
                )
    if named:
        files = ", ".join(f"<code>kernels_cu/{html.escape(f)}</code>" for f in named)
        found.append(f"<p>The chapter also measures {files}: read them in the report or in the folder.</p>")
    return found


def _parameters(notebook: Path, provenance: dict) -> str:
    """The launch configurations and sizes of this run: each parameter, its value and its meaning."""
    import papermill

    declared = papermill.inspect_notebook(str(notebook))
    values = provenance.get("parameters", {})
    rows = []
    for name, p in declared.items():
        if name in MACHINERY:
            continue
        value = values.get(name, p.get("default"))
        rows.append(
            f"<tr><td><code>{html.escape(name)}</code></td><td>{html.escape(str(value))}</td>"
            f"<td>{html.escape(p.get('help') or '')}</td></tr>"
        )
    return (
        "<table class='cudalab-params'><tr><th>parameter</th><th>value in this profile</th><th>meaning</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _result_columns(frame: pd.DataFrame, axes: list[str]) -> list[str]:
    candidates = [
        c
        for c in frame.columns
        if c not in axes and not _NOT_A_RESULT.search(c) and pd.api.types.is_numeric_dtype(frame[c])
    ]
    ranked = sorted(candidates, key=lambda c: next((i for i, p in enumerate(_PREFERRED) if c.startswith(p)), 99))
    return ranked[:3]


def _cell(row: pd.Series, column: str, filled: bool) -> str:
    """One result cell: blank in a handout; in an answer key the run's value (a row that was not
    ok says so instead of a number)."""
    if not filled:
        return "<td class='cudalab-blank'></td>"
    status = str(row.get("status", "ok"))
    if status != "ok" and status != "nan":
        return f"<td class='cudalab-value'><i>{html.escape(status)}</i></td>"
    value = row.get(column)
    shown = "–" if value is None or pd.isna(value) else f"{value:,.4g}" if isinstance(value, float) else str(value)
    return f"<td class='cudalab-value'>{html.escape(shown)}</td>"


MAX_GRID_COLUMNS = 8  # a two-axis table with at most this many values on its shorter axis prints as a grid


def _form(data: Path, name: str, axes: list[str], filled: bool) -> str:
    """One recorded table as a form, whole: its configurations (the axes) and the result columns,
    blank in a handout (only the axis values are read), the run's values in an answer key. A table
    of two axes prints as a grid of its first result (a row per value of the longer axis), so that
    a sweep of dozens of points fits a page."""
    path = data / f"{name}.csv"
    if not path.is_file():
        return ""
    frame = pd.read_csv(path)
    axes = [a for a in axes if a in frame.columns]
    results = _result_columns(frame, axes)
    if not axes or not results:
        return ""
    frame = frame.drop_duplicates(subset=axes)
    what = (
        f"<p>Table <code>{html.escape(name)}</code>, all {len(frame)} configurations (what is varied: "
        f"{', '.join(f'<code>{html.escape(a)}</code>' for a in axes)})"
    )
    if len(axes) == 2:
        rows_axis, cols_axis = sorted(axes, key=lambda a: -frame[a].nunique())
        if frame[cols_axis].nunique() <= MAX_GRID_COLUMNS:
            result = results[0]
            columns = list(pd.unique(frame[cols_axis]))
            head = f"<th>{html.escape(rows_axis)} \\ {html.escape(cols_axis)}</th>" + "".join(
                f"<th>{html.escape(str(c))}</th>" for c in columns
            )
            body = []
            for value, group in frame.groupby(rows_axis, sort=False):
                at = {r[cols_axis]: r for _, r in group.iterrows()}
                cells = "".join(
                    _cell(at[c], result, filled) if c in at else "<td class='cudalab-none'>not run</td>"
                    for c in columns
                )
                body.append(f"<tr><td>{html.escape(str(value))}</td>{cells}</tr>")
            return (
                f"{what}; each cell: <code>{html.escape(result)}</code>.</p>"
                f"<table class='cudalab-form'><tr>{head}</tr>{''.join(body)}</table>"
            )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in axes + results)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(str(r[a]))}</td>" for a in axes)
        + "".join(_cell(r, c, filled) for c in results)
        + "</tr>"
        for _, r in frame.iterrows()
    )
    return f"{what}.</p><table class='cudalab-form'><tr>{head}</tr>{body}</table>"


MAX_TABLES = 2


def _forms(data: Path, provenance: dict, tables: tuple[str, ...], filled: bool) -> str:
    """The tables the chapter declares for its handout (``handout.tables``), else its first
    recorded ones (up to ``MAX_TABLES``), as whole forms."""
    axes_by_table = provenance.get("axes", {})
    names = list(tables) or provenance.get("tables", []) or list(axes_by_table)
    forms = [f for f in (_form(data, n, list(axes_by_table.get(n, [])), filled) for n in names) if f]
    return "".join(forms if tables else forms[:MAX_TABLES]) or (
        "<p>This chapter records no table with a configuration axis.</p>"
    )


HOW_TO_MEASURE = (
    "<p>Time the GPU's work with CUDA events around the launches (not the host's clock around a "
    "call), after a warm-up run; repeat each configuration and report the median with its spread "
    "(the interquartile range). Check every result against the reference before timing it: a wrong "
    "result is not a speedup. Write the figure in the unit of the column's name "
    "(<code>time_ms</code>: milliseconds, <code>bandwidth_GBps</code>: 10<sup>9</sup> bytes per second).</p>"
    "<p>Run the chapter yourself with <code>python build_report.py --only {id}</code>, or open "
    "<code>notebooks/{id}.ipynb</code> in JupyterLab (<code>make lab</code>).</p>"
)


def _results(data: Path) -> str:
    """This run's figures for the answer key: the summary row and the chapter's headlines."""
    parts = []
    card_path = data / SCORECARD
    if card_path.is_file():
        card = json.loads(card_path.read_text())
        parts.append(
            f"<p><b>Best in this run:</b> {html.escape(card['best'])}"
            + (
                f"; <b>{card['speedup_x']:,.1f}x</b> over {html.escape(card['baseline'])}"
                if card.get("speedup_x") is not None
                else ""
            )
            + (
                f"; <b>{card['fraction_of_ceiling']:.0%}</b> of {html.escape(card['ceiling'])}"
                if card.get("fraction_of_ceiling") is not None
                else ""
            )
            + (f". The lab: {html.escape(card['lab'])}" if card.get("lab") else "")
            + ".</p>"
        )
    summary = json.loads((data / SUMMARY).read_text()) if (data / SUMMARY).is_file() else []
    if summary:
        parts.append("<ul>" + "".join(f"<li>{html.escape(h['text'])}</li>" for h in summary) + "</ul>")
    return "".join(parts) or "<p>No results recorded for this chapter.</p>"


def _your_kernel(chapter_id: str, kernels: tuple[str, ...]) -> str:
    """How a student measures their own version of the chapter's kernel files, beside the reference."""
    if not kernels:
        return ""
    files = ", ".join(f"<code>kernels_cu/{html.escape(k)}</code>" for k in kernels)
    return (
        f"<p class='cudalab-yours'><b>Your kernel, measured.</b> Copy {files} into a folder of your own, keeping "
        "the file name, write your kernel there, and run <code>python build_report.py --kernels YOUR_FOLDER --only "
        f"{html.escape(chapter_id[:2])}</code>. Your file is measured beside the reference at the chapter's points, "
        "checked as the reference is, in a report whose first page names your files (and their sha256). Without a "
        "GPU it is compiled beside the reference (registers, spills, the compiler's errors by line).</p>"
    )


def chapter_section(chapter_id: str, title: str, notebook: Path, executed: Path, data: Path, kind: Kind) -> str:
    """One chapter of a handout or answer key, as HTML."""
    source = json.loads(notebook.read_text())
    run = json.loads(executed.read_text()) if executed.is_file() else {"cells": []}
    provenance = json.loads((data / PROVENANCE).read_text()) if (data / PROVENANCE).is_file() else {}
    answers = json.loads((data / ANSWERS).read_text()) if (data / ANSWERS).is_file() else {}
    declared = declarations.of(chapter_id).handout
    parts = [
        f"<section class='cudalab-chapter' id='{html.escape(chapter_id)}'>",
        _aim(source),
        "<h2>The kernels</h2>",
        "".join(_listings(run, declared.kernels)) or "<p>This chapter has no kernel listing.</p>",
        _your_kernel(chapter_id, declared.kernels),
        "<h2>Launch configurations and sizes</h2>",
        _parameters(notebook, provenance),
        "<h2>What to measure, and how</h2>",
        HOW_TO_MEASURE.format(id=html.escape(chapter_id)),
        "<h2>This run's results</h2>" if kind.answers else "<h2>Your results</h2>",
        _forms(data, provenance, declared.tables, kind.answers),
    ]
    if kind.answers:
        parts += ["<h2>This run's headlines</h2>", _results(data)]
    qs = questions(source)
    parts.append("<h2>Discussion questions</h2>")
    if not qs:
        parts.append("<p>This chapter has no discussion questions.</p>")
    for i, q in enumerate(qs, 1):
        parts.append(f"<div class='cudalab-question'><p><b>{i}.</b> {_inline(q)}</p>")
        if kind.answers:
            text = answers.get(str(i))
            parts.append(
                f"<div class='cudalab-answer'><b>Model answer (from this run's data).</b> "
                f"{_markdown(text) if text else '<i>The notebook wrote no answer to this question.</i>'}</div>"
            )
        else:
            parts.append("<div class='cudalab-space'>" + "<div class='cudalab-line'></div>" * ANSWER_LINES + "</div>")
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 10.5pt; line-height: 1.45; max-width: 52em;
       margin: 2em auto; color: #111; }
h1 { font-size: 1.7em; } h2 { font-size: 1.2em; margin-top: 1.4em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: left; vertical-align: top; }
table.cudalab-form td.cudalab-blank { min-width: 5em; height: 1.5em; }
table.cudalab-form td.cudalab-value { text-align: right; }
table.cudalab-form td.cudalab-none { color: #888; font-size: 0.85em; }
table.cudalab-form { break-inside: auto; } table.cudalab-form tr { break-inside: avoid; }
.cudalab-cover { border-bottom: 2px solid #444; margin-bottom: 1.5em; }
.cudalab-note { color: #555; font-size: 0.85em; }
.cudalab-question { break-inside: avoid; margin: 0.8em 0; }
.cudalab-line { border-bottom: 1px solid #bbb; height: 1.7em; }
.cudalab-answer { background: #eef6ee; border-left: 4px solid #393; padding: 0.4em 0.8em; }
details.cudalab-listing > summary { color: #345; }
.cudalab-listing-code pre { font-size: 0.78em; line-height: 1.25; white-space: pre-wrap; }
.cudalab-cited { border-bottom: 1px dotted #666; }
a.anchor-link { display: none; }
@page { size: A4; margin: 14mm 12mm 16mm 12mm;
        @bottom-center { content: "page " counter(page) " of " counter(pages); font-size: 8pt; color: #555; } }
@media print { section.cudalab-chapter { break-before: page; } body { margin: 0; max-width: none; }
  .cudalab-cover + section.cudalab-chapter { break-before: auto; } }
"""


def document(title: str, cover: str, sections: list[str]) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><div class='cudalab-cover'><h1>{html.escape(title)}</h1>{cover}</div>"
        + "\n".join(sections)
        + "</body></html>"
    )


def write(
    kind: Kind,
    out: Path,
    chapters: list[tuple[str, str, Path]],
    *,
    profile: str,
    lab_gpu: str,
    measured_on: str,
    pdf: bool,
    log: Callable[[str], None] = lambda m: None,
) -> list[str]:
    """Write ``<kind>/<kind>.html`` (the whole lab) and ``<kind>/<chapter>.html`` for each chapter
    (``chapters``: id, title, source notebook), with PDFs where Chromium prints them. Returns the
    written files, relative to ``out``."""
    folder = out / kind.name
    folder.mkdir(exist_ok=True)
    run_line = f"Profile <code>{html.escape(profile)}</code>; lab GPU: {html.escape(lab_gpu)}" + (
        f"; the results and model answers below were measured on <b>{html.escape(measured_on)}</b>."
        if kind.answers
        else "."
    )
    sections, written = [], []
    for chapter_id, title, notebook in chapters:
        section = chapter_section(
            chapter_id, title, notebook, out / "notebooks" / notebook.name, out / "data" / chapter_id, kind
        )
        sections.append(section)
        path = atomic_write_text(
            folder / f"{chapter_id}.html", document(f"{kind.title}: {title}", f"<p>{run_line}</p>", [section])
        )
        written.append(path)
    contents = (
        "<ol>" + "".join(f"<li><a href='#{html.escape(c)}'>{html.escape(t)}</a></li>" for c, t, _ in chapters) + "</ol>"
    )
    written.insert(
        0,
        atomic_write_text(
            folder / f"{kind.name}.html",
            document(
                f"{kind.title}: cudalab lab ({profile})", f"<p>{run_line}</p><h2>Contents</h2>{contents}", sections
            ),
        ),
    )
    if pdf:
        for path in list(written):
            pdf_path, why = render_pdf(path, path.with_suffix(".pdf"))
            if pdf_path is None:
                log(f"note: {kind.name} PDF not written: {why}")
                break
            written.append(pdf_path)
    log(f"{kind.name}: {folder / (kind.name + '.html')} and {len(chapters)} chapter files")
    return [str(Path(p).relative_to(out)) for p in written]


def measured_on(outcomes_provenance: list[dict[str, Any]]) -> str:
    names = sorted({p.get("gpu_name") or "?" for p in outcomes_provenance if p})
    return ", ".join(names) or "no GPU recorded"
