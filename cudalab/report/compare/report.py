"""The comparison report: one HTML (and PDF) setting recordings of GPUs side by side.

``build_report.py --compare A B [C ...]`` (see ``compare.sources`` for what A, B, C may be).
Per chapter the sources share: what changed in the lesson (sentences computed from each
source's headlines and the lab's published tables), the headline numbers side by side with each
later source's ratio to the first labelled same / faster / slower by the recorded spread, the
chapter's main figures with the sources overlaid (one colour per source throughout), and every
timed table joined on the axis points the sources share, listing the points only some have.
Nothing runs: it reads recordings, so it builds in seconds on a laptop.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd

from cudalab.chapter import catalog, declarations
from cudalab.chapter.recorded import gpu_slug
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import BUILD_DIR, require_checkout
from cudalab.report import outdir
from cudalab.report.compare import figures as compare_figures
from cudalab.report.compare import hardware
from cudalab.report.compare.pairwise import TIME
from cudalab.report.compare.points import (
    CHOICE_AXES,
    SIZE_AXES,
    HeadlineRow,
    Joined,
    config_of,
    fmt_int,
    fmt_value,
    geomean,
    headlines,
    joined_tables,
    ratio_of,
    size_of,
    where_of,
)
from cudalab.report.compare.sources import Source, common_chapters, resolve
from cudalab.report.options import BuildOptions, dask_pool, options_from
from cudalab.report.stitch import render_html, render_pdf

Log = Callable[[str], None]
MAX_POINTS_SHOWN = 12  # a joined table longer than this shows its largest size; the CSV beside holds all
MAX_ONLY_CHARS = 600  # the points only some sources have: spelled out up to this long, else counted


@dataclass
class CompareSummary:
    """What a comparison build wrote: ``build.json`` beside the report."""

    sources: list[dict[str, str]]
    chapters: list[str]
    built_utc: str
    command: str
    out: str
    wall_s: float = 0.0
    report_html: str = ""
    report_pdf: str = ""
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # chapters whose comparison failed on Dask
    made_by: str = outdir.MARKER
    kind: str = "comparison"
    files: list[str] = field(default_factory=list)


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _words(key: str) -> str:
    """A headline key as words: 'best_block_time_ms' -> 'best block time'."""
    parts = key.split("_")
    while len(parts) > 1 and parts[-1] in {"ms", "s", "GBps", "x", "TFLOPs", "GB", "per"}:
        parts.pop()
    return " ".join(parts)


def _chip(label: str, colours: dict[str, tuple]) -> str:
    colour = compare_figures.hex_colour(colours[label])
    return f"<span style='color:{colour}'>&#9632;</span>&nbsp;{_esc(label)}"


# ------------------------------------------------------------------ what changed in the lesson


def headline_label(row: HeadlineRow) -> str:
    """A headline as a reader names it: its recorded sentence up to the colon ("int32 add+min
    ceiling", "fastest correct kernel at N = 8192"), else its key in words."""
    for entry in row.cells.values():
        text = (entry or {}).get("text") or ""
        name = text.split(":", 1)[0].strip()
        chosen = [str(v) for k, v in ((entry or {}).get("rows") or {}).items() if k in CHOICE_AXES]
        if ":" in text and not any(c and c in name for c in chosen):  # "8x8 at N = 3072" names a winner, not a quantity
            return name
    return _words(row.key)


def _followed(sources: list[Source], rows: list[HeadlineRow], chapter: str) -> list[str]:
    """For each later recording: the hardware that differs (chapter 00's ceilings), then which
    headlines followed which ceiling (their speed ratio beside the ceilings' ratios)."""
    recs = [s for s in sources if not s.is_lab]
    out = []
    for later in recs[1:]:
        hw = hardware.compare(recs[0], later)
        if hw is None:
            continue
        out.append(hw.sentence())
        groups: dict[str, list[str]] = {"memory": [], "compute": [], "": []}
        for row in rows:
            ea, eb = row.cells.get(recs[0].label), row.cells.get(later.label)
            if not ea or not eb:
                continue
            speed = ratio_of(recs[0], later, ea, eb, chapter).speed(row.unit)
            if speed is not None:
                groups[hw.follows(speed)].append(f"{headline_label(row)} {speed:.2f}x")
        m, c = hw.ratios.get(hardware.MEMORY), hw.ratios.get(hardware.COMPUTE)
        if groups["memory"] and m is not None:
            out.append(
                f"Gained as the memory bandwidth did ({m:.2f}x), so bound by memory: "
                + "; ".join(groups["memory"])
                + "."
            )
        if groups["compute"] and c is not None:
            out.append(
                f"Moved as the integer arithmetic rate did ({c:.2f}x), not as the bandwidth, so not bound by DRAM: "
                + "; ".join(groups["compute"])
                + "."
            )
        if groups[""]:
            out.append(
                "Moved as neither ceiling did (bound by something else, or by both in turn: launches, caches, "
                "the host): " + "; ".join(groups[""]) + "."
            )
    return out


def lesson(sources: list[Source], rows: list[HeadlineRow], chapter: str) -> list[str]:
    """What changed in the lesson, in sentences a student reads: what differs in the hardware
    (chapter 00's ceilings in each recording), which kernels followed which ceiling, where the
    winning configuration changed or stayed (each headline by its name), and the lab's own best."""
    out = _followed(sources, rows, chapter)
    recs = [s for s in sources if not s.is_lab]
    changed, kept = [], []
    for row in rows:
        cells = [(s, row.cells[s.label]) for s in recs if row.cells.get(s.label)]
        if not any(set(e.get("rows") or {}) & set(CHOICE_AXES) for _, e in cells):
            continue  # a headline about a fixed quantity (a copy direction), not a winner
        configs = [(s, config_of(e.get("rows") or {}), size_of(e.get("rows") or {})) for s, e in cells]
        if len(configs) < 2 or not all(c for _, c, _ in configs):
            continue
        name = headline_label(row)
        if len({c for _, c, _ in configs}) > 1:
            changed.append(
                f"{name}: " + " and ".join(f"{c}{f' ({z})' if z else ''} on {s.label}" for s, c, z in configs)
            )
        elif not configs[0][1].startswith(("DPX", "add")):  # which instruction a ceiling used is no winner
            kept.append(f"{name}: {configs[0][1]}")
    if len(recs) == 1 or any(s.is_lab for s in sources):  # the winner of each recording, beside the lab's
        for s in recs:
            e = next(
                (
                    row.cells[s.label]
                    for row in rows
                    if row.cells.get(s.label) and set(row.cells[s.label].get("rows") or {}) & set(CHOICE_AXES)
                ),
                None,
            )
            if e is not None:
                size = size_of(e["rows"])
                out.append(f"On {s.label}, {e.get('text') or config_of(e['rows'])}{f' ({size})' if size else ''}.")
    if changed:
        out.append("The winner changed: " + "; ".join(changed[:3]) + ".")
    if kept:
        out.append("The winner stayed: " + "; ".join(kept[:2]) + " on every recording.")
    for lab in (s for s in sources if s.is_lab):
        for name, pub in lab.published(chapter).items():
            best = _published_best(pub, declarations.of(chapter).published_best)
            if best:
                out.append(f"{lab.label}, {pub.attrs.get('where', name)}: {best}.")
                break
    if not out:
        out.append("No headline of this chapter names a configuration in more than one source.")
    return out


def _published_best(pub: pd.DataFrame, declared: dict[str, str] | None = None) -> str:
    """The lab's best published row of a table, in words ('fastest: block_edge 16 at n = 5000'): by
    its time, else by the columns its chapter declares (``published_best``: a speedup, the highest)."""
    coords = [c for c in pub.attrs.get("coordinates", []) if c in pub]
    ways = [("time_ms", True), *((c, way == "min") for c, way in (declared or {}).items())]
    for value, lower in ways:
        if value in pub and pub[value].notna().sum() >= 2:
            f = pub.dropna(subset=[value])
            r = f.loc[f[value].idxmin() if lower else f[value].idxmax()]
            where = ", ".join(f"{c} {fmt_int(r[c])}" for c in coords if pd.notna(r[c]))
            return f"its best published {value.replace('_', ' ')} is at {where}, for comparison"
    return ""


# ------------------------------------------------------------------ HTML pieces


def _headline_table(sources: list[Source], rows: list[HeadlineRow], colours: dict[str, tuple]) -> str:
    later = [s for s in sources[1:]]
    head = "<tr><th>headline</th>" + "".join(f"<th>{_chip(s.label, colours)}</th>" for s in sources)
    head += "".join(f"<th>{_esc(s.label)} against {_esc(sources[0].label)}</th>" for s in later) + "</tr>"
    body = []
    for row in rows:
        cells = []
        for s in sources:
            e = row.cells.get(s.label)
            if e is None:
                cells.append(f"<td><i>{'not published' if s.is_lab else 'not recorded'}</i></td>")
                continue
            where = where_of(e.get("rows") or {})
            cells.append(
                f"<td><b>{_esc(fmt_value(e['value'], e['unit']))}</b>{f'<br><small>{_esc(where)}</small>' if where else ''}</td>"
            )
        for s in later:
            v = row.verdicts.get(s.label)
            if v is None:
                ref = row.cells.get(sources[0].label)
                v = "not in both" if ref is None or row.cells.get(s.label) is None else "-"
            cells.append(f"<td>{_esc(v)}</td>")
        body.append(f"<tr><td>{_esc(headline_label(row))} <small>({_esc(row.unit)})</small></td>{''.join(cells)}</tr>")
    return f"<table class='cudalab-compare'>{head}{''.join(body)}</table>"


def _fmt_cell(column: str, value: Any) -> str:
    if isinstance(value, float):
        if column.startswith("ratio"):
            return f"{value:.3f}"
        if column.startswith("time_ms"):
            return f"{value:,.4g}"
        return f"{value:g}"
    return str(value)


def _td(text: str) -> str:
    """A cell; a short one (a number, a kernel's name) never breaks inside."""
    return f"<td class='cudalab-nw'>{_esc(text)}</td>" if len(text) <= 13 else f"<td>{_esc(text)}</td>"


def _points_table(j: Joined, colours: dict[str, tuple]) -> tuple[str, str]:
    """The joined points as HTML (all, or those at the largest shared size), and a sentence."""
    pts = j.points
    labels = [c for c in pts.columns if c.startswith("label | ")]
    counts = []
    for col in labels:
        vc = pts[col].value_counts()
        ratio = geomean(pts[col.replace("label", "ratio")])
        counts.append(
            f"{_esc(col.split(' | ', 1)[1])} against {_esc(j.sources[0])}: "
            + ", ".join(f"{int(vc.get(k, 0))} {k}" for k in ("faster", "same", "slower"))
            + (f" (geometric mean of the time ratios {ratio:.3g})" if ratio == ratio else "")
        )
    shown = pts
    note = ""
    size = next((a for a in j.axes if a in SIZE_AXES), None)
    if len(pts) > MAX_POINTS_SHOWN and size:
        top = pd.to_numeric(pts[size], errors="coerce").max()
        shown = pts[pd.to_numeric(pts[size], errors="coerce").eq(top)]
        note = (
            f" Shown: the {len(shown)} points at {size} = {top:,.0f}; all {len(pts)} are in the CSV beside the report."
        )
    if len(shown) > MAX_POINTS_SHOWN:
        shown = shown.iloc[:MAX_POINTS_SHOWN]
        note = f" Shown: the first {len(shown)} of {len(pts)} points; all are in the CSV beside the report."
    # one column per source's time, then one per later source: its ratio to the first and the label
    times = [c for c in shown.columns if c.startswith(f"{TIME} | ")]
    # the point's axis values in one column, so that a table of many axes and sources still fits a page
    header = f"<th>{_esc(', '.join(a.replace('_', ' ') for a in j.axes))}</th>"
    header += "".join(f"<th>time (ms)<br>{_chip(c.split(' | ', 1)[1], colours)}</th>" for c in times)
    header += "".join(f"<th>{_chip(c.split(' | ', 1)[1], colours)}<br>against the first</th>" for c in labels)
    body = "".join(
        "<tr>"
        + f"<td>{_esc(', '.join(fmt_int(r[a]) for a in j.axes))}</td>"
        + "".join(_td(_fmt_cell(c, r[c])) for c in times)
        + "".join(f"<td>{r[c.replace('label', 'ratio')]:.3f}x {_esc(r[c])}</td>" for c in labels)
        + "</tr>"
        for _, r in shown.iterrows()
    )
    sentence = f"{len(pts)} point{'s' if len(pts) != 1 else ''} in common. " + "; ".join(counts) + "." + note
    return f"<table class='cudalab-compare'><tr>{header}</tr>{body}</table>", sentence


def _only_text(j: Joined) -> str:
    """The points only some sources have, listed (grouped by their first axes), never dropped."""
    unpublished = (
        f"<p><small>{j.not_published} recorded points have no published counterpart (the lab published "
        f"{len(j.points) + sum(len(v) for v in j.only.values())} points of this table).</small></p>"
        if j.not_published
        else ""
    )
    if not j.only:
        return unpublished or "<p><small>Every point is in all the sources.</small></p>"
    parts = []
    for have, points in j.only.items():
        groups: dict[str, list[str]] = {}
        for p in points:
            items = list(p.items())
            head = ", ".join(f"{k} = {v}" for k, v in items[:-1])
            groups.setdefault(head, []).append(f"{items[-1][1]}")
        last = j.axes[-1]
        listing = "; ".join(f"{h}: {last} {', '.join(v)}" if h else f"{last} {', '.join(v)}" for h, v in groups.items())
        if len(listing) > MAX_ONLY_CHARS:  # many axes: counted by the first axis's value, not spelled out
            first = j.axes[0]
            counts: dict[str, int] = {}
            for p in points:
                counts[f"{first} = {p.get(first)}"] = counts.get(f"{first} = {p.get(first)}", 0) + 1
            listing = "; ".join(f"{k}: {v} point{'s' if v != 1 else ''}" for k, v in counts.items())
            listing += " (each in the CSV of the source that has it)"
        parts.append(
            f"<li>only in (or correct only in) <b>{_esc(have)}</b>, {len(points)} points: {_esc(listing)}</li>"
        )
    return (
        unpublished + f"<p><small>Points not in every source:</small></p><ul class='cudalab-only'>{''.join(parts)}</ul>"
    )


def _for_chapter(sources: list[Source], chapter: str, colours: dict) -> tuple[list[Source], dict]:
    """The sources as the chapter's pages name them: the lab by the chapter's own lab and GPU
    (``Source.shown``), in its colour."""
    out, cols = [], dict(colours)
    for s in sources:
        shown = s.shown(chapter)
        if shown != s.label:
            cols[shown] = colours[s.label]
            s = replace(s, label=shown)
        out.append(s)
    return out, cols


def _chapter_html(sources, chapter, title, colours) -> tuple[str, dict[str, pd.DataFrame]]:
    sources, colours = _for_chapter(sources, chapter, colours)
    rows = headlines(sources, chapter)
    parts = [
        f"<div class='cudalab-chapter-start' id='chapter-{chapter}'></div><h1>{_esc(title)}</h1>",
        "<h2>What changed in the lesson</h2><ul class='cudalab-lesson'>"
        + "".join(f"<li>{_esc(t)}</li>" for t in lesson(sources, rows, chapter))
        + "</ul>",
    ]
    if rows:
        parts.append(
            "<h2>Headline numbers</h2><p><small>Each source's recorded headlines (summary.json) and its summary "
            "row's speedup; the ratio is the later source's value over the first's, labelled by the recorded "
            "spread (interquartile range over median, the smaller side's; at least 1%) as "
            "tools/compare_recordings.py labels points.</small></p>" + _headline_table(sources, rows, colours)
        )
    figures = [compare_figures.draw(spec, sources, chapter, colours) for spec in declarations.of(chapter).figures]
    if any(figures):
        parts.append("<h2>Main figures</h2>")
        for fig in filter(None, figures):
            png, caption = fig
            parts.append(
                f"<figure><img src='data:image/png;base64,{png}' style='max-width:100%'>"
                f"<figcaption><small>{_esc(caption)}</small></figcaption></figure>"
            )
    csvs = {}
    joined = joined_tables(sources, chapter)
    if joined:
        parts.append("<h2>Point by point</h2>")
    for j in joined:
        table_html, sentence = _points_table(j, colours) if len(j.points) else ("", "No point in common.")
        against = f" against the published numbers: {_esc(j.against)}" if j.against else ""
        parts.append(
            f"<h3>{_esc(j.table)}{against}</h3><p><small>Joined on {_esc(', '.join(j.axes))}. {sentence}</small></p>"
            + table_html
            + _only_text(j)
        )
        csvs[f"{j.table}{'-published' if j.against else ''}"] = j.points
    return "\n".join(parts), csvs


def _cover(sources, chapters, colours, command, built_utc, notes) -> str:
    rows = "".join(
        f"<tr><td>{_chip(s.label, colours)}</td><td>{_esc(s.profile)}</td><td>"
        + (_esc(f"results/{s.path.parent.name}/{s.path.name}") if s.path else "the profile's published numbers")
        + f"</td><td>{_esc(s.gpu_name or 'the lab GPU')}</td></tr>"
        for s in sources
    )
    titles = {c.id: c.title for c in catalog.discover()}
    contents = "".join(f"<li><a href='#chapter-{c}'>{_esc(titles.get(c, c))}</a></li>" for c in chapters)
    return f"""<div class="cudalab-cover"><h1>cudalab comparison: {" / ".join(_esc(s.label) for s in sources)}</h1>
<div class='cudalab-replayed'><b>Replayed from recordings, not measured here.</b> Every number below was
recorded by this pipeline (or published by a lab, where a source says so) and is read back from
<code>results/</code>; ratios are each later source against the first, <b>{_esc(sources[0].label)}</b>.</div>
<table><tr><th>source (its colour in every figure)</th><th>profile</th><th>recording</th><th>GPU</th></tr>{rows}</table>
<table><tr><th style="text-align:left">Report built</th><td>{_esc(built_utc)}</td></tr>
<tr><th style="text-align:left">Command</th><td><code>{_esc(command)}</code></td></tr></table>
{"".join(f"<p><b>Note.</b> {_esc(n)}.</p>" for n in notes)}
<h2>Chapters in common</h2><ul>{contents}</ul></div>"""


CSS = """<style>
table.cudalab-compare { table-layout: auto; width: 100%; }
.jp-RenderedHTMLCommon table.cudalab-compare td, .jp-RenderedHTMLCommon table.cudalab-compare th {
  vertical-align: top; text-align: left; white-space: normal; word-break: normal; }
.jp-RenderedHTMLCommon table.cudalab-compare th { overflow-wrap: break-word; }
.jp-RenderedHTMLCommon table.cudalab-compare td { overflow-wrap: anywhere; }
.jp-RenderedHTMLCommon table.cudalab-compare td.cudalab-nw { white-space: nowrap; }
ul.cudalab-only li { font-size: 0.8em; overflow-wrap: anywhere; }
</style>"""


# ------------------------------------------------------------------ the build


def _failed_html(chapter: str, title: str, reason: str) -> str:
    return (
        f"<div class='cudalab-chapter-start' id='chapter-{chapter}'></div><h1>{_esc(title)}</h1>"
        f"<p><b>This chapter's comparison failed:</b> {_esc(reason)}</p>"
    )


def _sections(sources, chapters, titles, colours, opts: BuildOptions, log, failed: list[str]):
    """Each chapter's (HTML, joined CSVs), in order: computed here, or as one Dask task per chapter
    (retried once where its worker dies) when ``opts`` ask for Dask. A chapter that fails (a
    recorded table that cannot be read, a task that failed twice) shows its reason in its place
    and is appended to ``failed``; the others are compared. The pool is opened (an unreachable
    scheduler: ``CudalabError``) before the output folder is touched."""
    with dask_pool(opts, "replay", log) as pool:
        if pool is not None:
            log(f"cudalab: on Dask: {pool.description}; one task per chapter")
            futures = [
                pool.client.submit(
                    _chapter_html, sources, c, titles.get(c, c), colours, key=f"compare-{c}-{i}", retries=1
                )
                for i, c in enumerate(chapters)
            ]
            pool.submitted.extend(futures)
        try:
            for i, chapter in enumerate(chapters):
                title = titles.get(chapter, chapter)
                try:
                    yield futures[i].result() if pool else _chapter_html(sources, chapter, title, colours)
                except Exception as exc:
                    where = " on Dask" if pool else ""
                    log(f"{chapter}: FAILED{where}: {type(exc).__name__}: {exc}")
                    failed.append(chapter)
                    yield _failed_html(chapter, title, f"{type(exc).__name__}: {exc}"), {}
        finally:
            if pool is not None:
                pool.stop()  # what is still queued (Ctrl-C, an error here) is cancelled before the close


def default_out(sources: list[Source]) -> Path:
    slug = "-vs-".join(gpu_slug(f"{s.path.parent.name}-{s.profile}" if s.path else f"lab-{s.profile}") for s in sources)
    return BUILD_DIR / f"compare-{slug}"[:120]


def run(
    names: list[str],
    options: BuildOptions | None = None,
    *,
    profile: str | None = None,
    out: Path | None = None,
    command: str = "python build_report.py --compare",
    log: Log = lambda msg: None,
    **changes: Any,
) -> CompareSummary:
    """Build the comparison report of ``names``, with the build ``options`` it uses (``results``,
    ``pdf``, ``workers``, ``scheduler``; keyword ``changes`` adjust them); every argument is
    checked (``CudalabError``, one sentence) before the output folder is created or anything is
    written.

    On Dask (``workers`` or ``scheduler``) each chapter's comparison (its tables joined, its
    figures drawn) is a task (``report.cluster``), as the chapters of a build are; without them
    Dask is not imported. A chapter whose task fails shows its reason in its place, and the report
    still builds (``failed`` names it; build_report.py exits 1)."""
    opts = options_from(options, changes)
    results, pdf = opts.results, opts.pdf
    require_checkout()
    started = time.time()
    sources = resolve(names, results, profile)
    chapters = common_chapters(sources)
    out = (out or default_out(sources)).resolve()
    previous = outdir.check(out)
    notes = []
    only_some = sorted({c for s in sources for c in s.chapters()} - set(chapters))
    if only_some:
        notes.append(f"chapters not in every source, left out: {', '.join(only_some)}")
    colours = compare_figures.source_colours(sources)
    built_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    log(f"cudalab: comparing {' / '.join(s.label for s in sources)}; {len(chapters)} chapter(s) -> {out}")
    titles = {c.id: c.title for c in catalog.discover()}
    # every chapter computed before the output folder is touched: Ctrl-C or a failure leaves it as it was
    failed: list[str] = []
    sections = list(_sections(sources, chapters, titles, colours, opts, log=log, failed=failed))
    with outdir.Lock(out):
        outdir.remove_previous(out, previous)
        written: list[str] = []
        book = nbformat.v4.new_notebook()
        book.cells.append(
            nbformat.v4.new_markdown_cell(CSS + _cover(sources, chapters, colours, command, built_utc, notes))
        )
        for i, (chapter, (body, csvs)) in enumerate(zip(chapters, sections), 1):
            book.cells.append(nbformat.v4.new_markdown_cell(body))
            for name, frame in csvs.items():
                rel = f"data/{chapter}/{name}.csv"
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                frame.to_csv(out / rel, index=False)
                written.append(rel)
            log(f"[{i}/{len(chapters)}] {chapter}")
        title = "cudalab comparison"
        html_path = render_html(book, out / "report.html", title)
        log(f"report: {html_path}")
        summary = CompareSummary(
            sources=[
                {"label": s.label, "kind": s.kind, "profile": s.profile, "path": str(s.path or "")} for s in sources
            ],
            chapters=chapters,
            built_utc=built_utc,
            command=command,
            out=str(out),
            report_html=str(html_path),
            notes=notes,
            failed=failed,
        )
        if pdf:
            pdf_path, why_not = render_pdf(html_path, out / "report.pdf")
            log(f"report: {pdf_path}" if pdf_path else f"note: {why_not}")
            summary.report_pdf = str(pdf_path or "")
            if not pdf_path:
                summary.notes.append(why_not)
        summary.wall_s = round(time.time() - started, 1)
        summary.files = written + [f for f in ("report.html", "report.pdf", outdir.BUILD_JSON)]
        summary.files = [f for f in summary.files if f == outdir.BUILD_JSON or (out / f).is_file()]
        atomic_write_text(out / outdir.BUILD_JSON, json.dumps(summary.__dict__, indent=2, default=str))
    return summary
