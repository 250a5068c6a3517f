"""Stitching executed chapter notebooks into one self-contained HTML (and PDF) report.

The chapters are concatenated into a single notebook behind a cover page
(GPU, profile, date, where the data came from) and a table of contents, then
rendered once by nbconvert with the lab template: figures are embedded, code
is folded behind "Show code", and a failed chapter is shown, not dropped.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from cudalab.chapter import catalog, declarations
from cudalab.core.files import atomic_write_text
from cudalab.report.table_fit import fit_tables

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class ChapterOutcome:
    id: str
    title: str
    notebook: Path
    ok: bool
    error: str = ""
    seconds: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)
    reused: bool = False  # kept from the last build into the same folder: same inputs, not run again
    kept: bool = False  # the earlier build's chapter in this folder, left as it was (why: ``kept_why``)
    worker: str = ""  # on Dask: the worker that ran it (address, and a retry after a worker died)
    # why a kept chapter was not run by this build: "only" (--only left it out), "interrupted"
    # (the build stopped before it ran it again), anything else: this build was not asked for it
    kept_why: str = ""


def kept_status(why: str) -> str:
    """A kept chapter's status in the contents, with the real reason it was not rebuilt."""
    if why == "only":
        return "ok, kept from the earlier build in this folder (not rebuilt: --only)"
    if why == "interrupted":
        return "ok, kept from the earlier build in this folder (not rebuilt: this build was interrupted)"
    return "ok, kept from the earlier build of another run in this folder (this build was not asked for it)"


def gpu_label(provenance: dict[str, Any]) -> str:
    """The GPU one chapter measured on, as the report names it: its name and UUID."""
    name = provenance.get("gpu_name") or "?"
    return f"{name} ({provenance['gpu_uuid']})" if provenance.get("gpu_uuid") else name


def gpu_models(outcomes: list[ChapterOutcome]) -> list[str]:
    """The GPU models the chapters' numbers come from, each once."""
    return sorted({o.provenance.get("gpu_name") or "?" for o in outcomes if o.provenance})


def _anchor(chapter_id: str) -> str:
    return f"chapter-{chapter_id}"


def _commits(outcomes: list[ChapterOutcome]) -> str:
    """The commits that made the chapters' numbers, in words ("one commit", "5 commits"); the ids
    themselves are in the details block and in each chapter's provenance.json."""
    commits = {str(o.provenance.get("git_commit", "?"))[:10] for o in outcomes if o.provenance}
    return "one commit" if len(commits) == 1 else f"{len(commits)} commits"


def _sources_match(outcomes: list[ChapterOutcome], scorecards: dict[str, dict[str, Any]]) -> str:
    """A replay's word on its recordings against today's sources: all match, or which do not."""
    stale = [o.id for o in outcomes if (scorecards.get(o.id) or {}).get("stale")]
    if not stale:
        return "Every recording matches today's sources."
    which = "every chapter" if len(stale) == len([o for o in outcomes if o.provenance]) else ", ".join(stale)
    others = "" if which == "every chapter" else "; the others match"
    return f"The recordings of {which} predate changes to today's sources (the summary names the files){others}."


def _data_source(
    mode: str, outcomes: list[ChapterOutcome], recording: str = "", scorecards: dict[str, dict[str, Any]] | None = None
) -> str:
    recorded = [o.provenance for o in outcomes if o.provenance]
    gpus = gpu_models(outcomes)
    dates = sorted({str(p.get("date_utc", "?"))[:10] for p in recorded})
    if len(gpus) > 1:  # never presented as one GPU's report
        return (
            f"<div class='cudalab-chapter-failed'><b>{'Measured now' if mode == 'measure' else 'Replayed'} on "
            f"{len(gpus)} different GPU models: {html.escape(', '.join(gpus))}.</b> The chapters of this "
            f"report ran on different GPUs, so numbers from two chapters are not one GPU's; the contents "
            f"below and each chapter's first lines name its GPU ({', '.join(dates)}, {_commits(outcomes)}).</div>"
        )
    if mode == "measure":
        return f"<b>Measured now</b> on {', '.join(gpus) or 'this GPU'}, {', '.join(dates)}, by {_commits(outcomes)}."
    return (
        f"<div class='cudalab-replayed'><b>Replayed, not measured here.</b> No CUDA device was present when "
        f"this report was built, so every measured number in it was recorded by this pipeline on "
        f"<b>{', '.join(gpus) or 'a GPU'}</b> on {', '.join(dates) or '?'} ({_commits(outcomes)}) "
        f"and read back from <code>{html.escape(recording or 'results/')}</code>. "
        f"{_sources_match(outcomes, scorecards or {})}</div>"
    )


def _details(outcomes: list[ChapterOutcome]) -> str:
    """A folded block for whoever needs them: each chapter's card (UUID), commit and date (a list,
    not a table: folded, it prints as its one summary line)."""
    items = "".join(
        f"<li>{html.escape(o.id)}: {html.escape(gpu_label(o.provenance))}, commit "
        f"<code>{html.escape(str(o.provenance.get('git_commit', '?'))[:10])}</code>, "
        f"{html.escape(str(o.provenance.get('date_utc', '?')))}</li>"
        for o in outcomes
        if o.provenance
    )
    if not items:
        return ""
    return (
        "<details><summary>Provenance: each chapter's GPU card, commit and date (all of it in "
        f"<code>data/&lt;chapter&gt;/provenance.json</code>)</summary><ul>{items}</ul></details>"
    )


FINDINGS_PER_CHAPTER = 2


def _findings(outcomes: list[ChapterOutcome], findings: dict[str, list[str]]) -> str:
    """'What this run found': a row per chapter with its first recorded headlines."""
    rows = [
        f"<tr><td><a href='#{_anchor(o.id)}'>{html.escape(o.title.split(':')[0])}</a></td><td><ul>"
        + "".join(f"<li>{html.escape(t)}</li>" for t in findings[o.id][:FINDINGS_PER_CHAPTER])
        + "</ul></td></tr>"
        for o in outcomes
        if o.ok and findings.get(o.id)
    ]
    if not rows:
        return ""
    return (
        "<h2>What this run found</h2><table class='cudalab-findings'><tr><th>chapter</th><th>headline results "
        "(each chapter's summary.json)</th></tr>" + "".join(rows) + "</table>"
    )


def _summary(outcomes: list[ChapterOutcome], scorecards: dict[str, dict[str, Any]], reference: bool = False) -> str:
    """The summary page: a row per chapter from its recorded scorecard (best configuration, its
    speedup over the lab's baseline kernel, its fraction of the chapter's ceiling, the lab's own
    figure). A figure a chapter has no measure for says so rather than leaving a gap. In a
    student's build (``reference``) it is titled as the chapters' own kernels, never the student's."""
    rows = []
    for o in outcomes:
        card = scorecards.get(o.id)
        if not o.ok or not card:
            continue
        speedup = (
            f"<b>{card['speedup_x']:,.1f}x</b> over {html.escape(card['baseline'])}"
            if card.get("speedup_x") is not None
            else "no baseline kernel in this chapter"
        )
        # every row names its ceiling: the fraction of it, or why there is none (a ceiling a
        # recording lacks is named, never replaced by one that does not bound the kernel)
        if card.get("fraction_of_ceiling") is not None:
            fraction = f"<b>{card['fraction_of_ceiling']:.0%}</b> of {html.escape(card['ceiling'])}"
        elif card.get("ceiling"):
            fraction = f"no fraction: {html.escape(card['ceiling'])}"
        else:
            fraction = "no ceiling measured in this chapter"
        lab = html.escape(card["lab"]) if card.get("lab") else "not published"
        # a replay of a recording older than today's sources says so in its row, naming the files
        # paths may break after a slash (<wbr>), never inside a file's name, in the narrow column
        stale_text = html.escape(card.get("stale") or "").replace("/", "/<wbr>")
        stale = f"<br><span class='cudalab-stale'>({stale_text})</span>" if stale_text else ""
        rows.append(
            f"<tr><td><a href='#{_anchor(o.id)}'>{html.escape(o.title.split(':')[0])}</a></td>"
            f"<td>{html.escape(card['best'])}{stale}</td><td>{speedup}</td><td>{fraction}</td><td>{lab}</td></tr>"
        )
    if not rows:
        return ""
    title = (
        "<h2>The chapters' own kernels (the reference, not yours)</h2><p>What the project's kernels reach in "
        "each chapter of this build; your files are judged in <i>Your results</i> above.</p>"
        if reference
        else "<h2>Summary</h2>"
    )
    return (
        title + "<table class='cudalab-summary'><tr><th>chapter</th><th>best in this run</th>"
        "<th>speedup over the lab's baseline</th><th>fraction of the ceiling (same run)</th>"
        "<th>the lab's published figure</th></tr>" + "".join(rows) + "</table>"
    )


def _measured_on(outcomes: list[ChapterOutcome], first: dict[str, Any]) -> str:
    """The cover's "Measured on", in words a reader takes in: one GPU by name, or one model and how
    many of its cards, or how many models (the contents name each chapter's); the UUIDs are in
    the details block."""
    if not first:
        return "?"
    models = gpu_models(outcomes)
    cards = {gpu_label(o.provenance) for o in outcomes if o.provenance}
    if len(models) == 1:
        many = f", {len(cards)} cards of it (each chapter ran on one)" if len(cards) > 1 else ""
        return html.escape(models[0]) + many
    return (
        f"<b>{len(models)} different GPU models</b> ({html.escape(', '.join(models))}); each chapter's in the contents"
    )


def cover_cell(
    *,
    title: str,
    profile: str,
    lab_gpu: str,
    mode: str,
    built_utc: str,
    command: str,
    outcomes: list[ChapterOutcome],
    recording: str = "",
    incomplete: str = "",
    notes: tuple[str, ...] = (),
    findings: dict[str, list[str]] | None = None,
    scorecards: dict[str, dict[str, Any]] | None = None,
    submission: dict[str, Any] | None = None,
    verdicts: list[dict[str, Any]] | None = None,
) -> nbformat.NotebookNode:
    """The first page: measured or replayed (and from which recording), on which GPU, the contents;
    ``incomplete`` (why this report lacks chapters) is shown above everything else, and the build's
    ``notes`` (a request that could not take effect, chapters a recording lacks) under the contents,
    then ``findings``: each chapter's first headlines (its ``summary.json``), the run in brief.
    ``submission`` (a student's build, ``submission.json``) names the student's files and their
    sha256, and what was refused; the page then leads with ``verdicts``, the student's results per
    file and chapter, and the chapters' own summary follows, titled as the reference's."""
    rows = []
    several = len(gpu_models(outcomes)) > 1  # the contents name each chapter's model where they differ
    for o in outcomes:
        model = o.provenance.get("gpu_name") if o.provenance else None
        gpu_cell = f"<td>{html.escape(model or '-')}</td>" if several else ""
        status = (
            (
                kept_status(o.kept_why)
                if o.kept
                else "ok, from cache (unchanged since the last build)"
                if o.reused
                else "ok"
            )
            if o.ok
            else "<b style='color:#c00'>FAILED</b>"
        )
        rows.append(
            f"<tr><td><a href='#{_anchor(o.id)}'>{html.escape(o.title)}</a></td><td>{status}</td>"
            f"<td>{o.seconds:.0f} s</td>{gpu_cell}</tr>"
        )
    first = next((o.provenance for o in outcomes if o.provenance), {})
    env = ", ".join(
        f"{label} {first[k]}"
        for k, label in (("driver_version", "driver"), ("cuda_runtime", "CUDA"), ("cupy", "CuPy"))
        if first.get(k)
    )
    body = f"""<div class="cudalab-cover">
<h1>{html.escape(title)}</h1>
{f"<div class='cudalab-chapter-failed'><b>Incomplete report.</b> {html.escape(incomplete)}</div>" if incomplete else ""}
{_your_results(verdicts) if submission else ""}
<p>{_data_source(mode, outcomes, recording, scorecards)}</p>
{_submission(submission)}
<table>
<tr><th style="text-align:left">GPU profile</th><td><code>{html.escape(profile)}</code></td></tr>
<tr><th style="text-align:left">Lab GPU (published numbers)</th><td>{html.escape(lab_gpu)}</td></tr>
<tr><th style="text-align:left">Measured on</th><td>{_measured_on(outcomes, first)}
 ({html.escape(env or "versions not recorded")})</td></tr>
<tr><th style="text-align:left">Report built</th><td>{html.escape(built_utc)}</td></tr>
<tr><th style="text-align:left">Command</th><td><code>{html.escape(command)}</code></td></tr>
</table>
{_summary(outcomes, scorecards or {}, reference=bool(submission))}
<h2>Contents</h2>
<table><tr><th>chapter</th><th>status</th><th>run time</th>{"<th>GPU</th>" if several else ""}</tr>
{"".join(rows)}
</table>
{"".join(f"<p><b>Note.</b> {html.escape(n)}.</p>" for n in notes)}
{_findings(outcomes, findings or {})}
{_details(outcomes)}
<p>Code is folded under <i>Show code</i> in every chapter; each chapter's tidy tables and provenance
(<code>data/&lt;chapter&gt;/</code>) and executed notebook (<code>notebooks/</code>) sit beside this file.</p>
</div>"""
    return nbformat.v4.new_markdown_cell(body)


def _your_results(verdicts: list[dict[str, Any]] | None) -> str:
    """The first thing a student reads: each file in each chapter that measured it, its verdict
    (``grading.file_verdicts``), its best point with its fraction of the ceiling, the geometric mean
    of its speed beside the reference and its slowest point; compiled only, the registers and
    occupancy of the graded points' builds. A verdict that is not correct is in red and counts no speed."""
    if not verdicts:
        return (
            "<div class='cudalab-yours'><h2>Your results</h2><p>No chapter of this build judged your files "
            "(the contents say which chapters ran).</p></div>"
        )
    timed = not all(v.get("compiled") or not v.get("correct") for v in verdicts)
    rows = []
    for v in verdicts:
        said = html.escape(v.get("said", ""))
        verdict = said if v.get("correct") else f"<b style='color:#c00'>{said}</b>"
        if timed:
            mean = f"{v['geomean_x']:.2f}x" if v.get("geomean_x") else "-"
            details = (
                f"<td>{html.escape(v.get('best') or '-')}</td><td>{mean}</td>"
                f"<td>{html.escape(v.get('slowest') or '-')}</td>"
            )
        else:
            details = f"<td>{html.escape(v.get('compiled') or '-')}</td>"
        rows.append(
            f"<tr><td><code>{html.escape(v.get('file') or '-')}</code></td>"
            f"<td><a href='#{_anchor(v['chapter'])}'>{html.escape(v['chapter'][:2])}</a></td>"
            f"<td>{verdict}</td>{details}</tr>"
        )
    heads = (
        "<th>best point (of the ceiling)</th><th>speed vs reference (geometric mean)</th>"
        "<th>slowest point vs reference</th>"
        if timed
        else "<th style='width:50%'>registers and theoretical occupancy at the graded points (the reference's in brackets)</th>"
    )
    return (
        "<div class='cudalab-yours'><h2>Your results</h2><table class='cudalab-summary'><tr><th>your file</th>"
        f"<th>chapter</th><th>verdict</th>{heads}</tr>" + "".join(rows) + "</table></div>"
    )


def _submission(submission: dict[str, Any] | None) -> str:
    """The first page's account of a student's kernels: each file and its sha256, what was refused."""
    if not submission:
        return ""
    files = "".join(
        f"<tr><td><code>{html.escape(name)}</code></td><td><code>{html.escape(sha)}</code></td></tr>"
        for name, sha in submission.get("files", {}).items()
    )
    refused = "".join(
        f"<li><code>{html.escape(r['name'])}</code>: {html.escape(r['reason'])}</li>"
        for r in submission.get("refused", [])
    )
    return (
        f"<div class='cudalab-yours'><h2>Your kernels</h2><p>From the folder <code>{html.escape(submission.get('folder', ''))}"
        "</code>: each file below stands in for the project's file of the same name in this build only, measured "
        "beside the reference in each chapter whose points launch it (its section <i>Your kernels beside the "
        "reference</i>), in a process of its own, and checked as the reference is.</p>"
        f"<table><tr><th>file</th><th>sha256</th></tr>{files}</table>"
        + (f"<p><b>Refused</b> (not compiled):</p><ul>{refused}</ul>" if refused else "")
        + "</div>"
    )


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _figures_described(cells: list[nbformat.NotebookNode], chapter_title: str) -> list[nbformat.NotebookNode]:
    """``cells`` with each figure (a PNG output) given an alt text where it has none: the section it
    is drawn in and the chapter, so that a screen reader or a PDF's text says which figure it is
    (nbconvert would otherwise write "No description has been provided for this image")."""
    section = ""
    for cell in cells:
        if cell.cell_type == "markdown":
            headings = _HEADING.findall(cell.source)
            section = headings[-1] if headings else section
            continue
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                described = output.setdefault("metadata", {}).setdefault("image/png", {})
                where = f"{section}, in {chapter_title}" if section and section != chapter_title else chapter_title
                described.setdefault("alt", f"Figure: {where}")
    return cells


def stitch(outcomes: list[ChapterOutcome], cover: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """One notebook: the cover, then every chapter's executed cells behind an anchor."""
    book = nbformat.v4.new_notebook()
    book.cells.append(cover)
    mixed = len(gpu_models(outcomes)) > 1
    for o in outcomes:
        start = f"<div class='cudalab-chapter-start' id='{_anchor(o.id)}'></div>"
        if mixed and o.provenance:  # a report of several GPU models names each chapter's
            start += (
                f"\n<div class='cudalab-replayed'><b>This chapter's numbers come from "
                f"{html.escape(gpu_label(o.provenance))}</b>; other chapters of this report ran on other "
                f"GPU models.</div>"
            )
        if not o.ok:
            start += (
                f"\n<div class='cudalab-chapter-failed'><b>This chapter failed</b> and its results "
                f"are incomplete: <pre>{html.escape(o.error.strip()[:4000])}</pre></div>"
            )
        book.cells.append(nbformat.v4.new_markdown_cell(start))
        try:
            nb = nbformat.read(o.notebook, as_version=4)
        except Exception as exc:  # a notebook too broken to read is still reported
            book.cells.append(nbformat.v4.new_markdown_cell(f"*(executed notebook unreadable: {exc})*"))
            continue
        # explorers are for JupyterLab: a static report shows no widget, nor its "Explore" cells
        book.cells.extend(_figures_described([c for c in nb.cells if not catalog.interactive_only(c)], o.title))
        for key in ("kernelspec", "language_info"):
            if key in nb.metadata:
                book.metadata.setdefault(key, nb.metadata[key])
    return book


# What nbconvert's HTMLExporter adds after rendering, by a BeautifulSoup pass over the whole page
# (a third of a replayed build's CPU time): alt text on an image that has none, and a tab stop on
# each cell's input and output. The report's markup is the template's, so a pattern does the same.
_NO_ALT = re.compile(r"<img(?![^>]*\balt=)")
_FOCUSABLE = re.compile(
    r'<div( id="[^"]*")? class="((?:[^"]* )?(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?: [^"]*)?)"'
)
NO_ALT_TEXT = "No description has been provided for this image"  # nbconvert's own words


def _accessible(body: str) -> str:
    """``body`` with nbconvert's alt texts and tab stops (see ``_NO_ALT``)."""
    body = _NO_ALT.sub(f'<img alt="{NO_ALT_TEXT}"', body)
    return _FOCUSABLE.sub(lambda m: f'<div{m.group(1) or ""} class="{m.group(2)}" tabindex="0"', body)


def render_html(book: nbformat.NotebookNode, path: Path, title: str) -> Path:
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    exporter = HTMLExporter(template_name="cudalab", extra_template_basedirs=[str(TEMPLATES)])
    exporter.embed_images = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    # HTMLExporter.from_notebook_node less its page-wide BeautifulSoup pass (``_accessible`` does it)
    lexer = book.metadata.get("language_info", {}).get("pygments_lexer", "ipython3")
    resources = exporter._init_resources({"metadata": {"name": title}})
    exporter.register_filter("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=exporter))
    exporter.register_filter(
        "filter_data_type",
        WidgetsDataTypeFilter(notebook_metadata=exporter._nb_metadata, parent=exporter, resources=resources),
    )
    body, _ = TemplateExporter.from_notebook_node(exporter, book, resources)
    return atomic_write_text(path, fit_tables(_accessible(body)))


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def render_pdf(html_path: Path, pdf_path: Path, timeout_s: int = 180) -> tuple[Path | None, str]:
    """Print the HTML report to PDF with headless Chromium; (path, '') or (None, why not)."""
    browser = find_browser()
    if browser is None:
        return None, "no Chromium found (Debian: apt-get install chromium); PDF skipped"
    tmp = pdf_path.with_name(f".{pdf_path.name}.tmp")
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--no-pdf-header-footer",
        "--virtual-time-budget=10000",
        f"--print-to-pdf={tmp}",
        html_path.resolve().as_uri(),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        return None, f"Chromium did not finish printing within {timeout_s} s"
    if proc.returncode != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        return None, f"Chromium failed to print the PDF: {proc.stderr.strip()[-500:]}"
    tmp.replace(pdf_path)
    return pdf_path, ""


def references_cell(profile: Any, chapters: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """The report's last section: each lab the included chapters cite (course, title, its GPU as
    the lab names it) and, per chapter, the published tables used, how many values each holds,
    and every coordinate we inferred rather than read, with the reason."""
    used: dict[str, list[str]] = {}
    per_chapter = []
    for chapter_id, title in chapters:
        cfg = profile.chapter(chapter_id)
        tables = cfg.published if isinstance(cfg.published, dict) else {"": cfg.published} if cfg.published else {}
        items = []
        for name, table in tables.items():
            cited = table.citations()
            used.setdefault(table.lab, []).append(chapter_id)
            inferred = sorted({f"{k}: {why}" for c in cited for k, why in c["inferred"].items()})
            items.append(
                f"<li>lab {html.escape(table.lab)}, {html.escape(table.where)}: {len(cited)} published values"
                + (f" (table <code>{html.escape(name)}</code>)" if name else "")
                + (
                    "; inferred by us: " + "; ".join(html.escape(i) for i in inferred)
                    if inferred
                    else "; every coordinate stated by the lab"
                )
                + "</li>"
            )
        if profile.device is not None and profile.device.lab and declarations.of(chapter_id).shows_lab_device:
            used.setdefault(profile.device.lab, []).append(chapter_id)
            items.append(
                f"<li>{html.escape(profile.device.source)}: "
                f"{len(profile.device.cite)} deviceQuery values of {html.escape(profile.device.name)}</li>"
            )
        per_chapter.append(
            f"<h3>{html.escape(title)}</h3>"
            + (f"<ul>{''.join(items)}</ul>" if items else "<p>No published numbers in this profile.</p>")
        )
    labs = []
    for lab_id in sorted(used):
        ref = profile.references.get(lab_id)
        if ref is None:
            labs.append(f"<li>[{html.escape(lab_id)}] (no reference entry in the profile)</li>")
            continue
        labs.append(
            f"<li>[{html.escape(lab_id)}] {html.escape(ref.course)}, <i>{html.escape(ref.title)}</i>; "
            f"GPU: {html.escape(ref.gpu)}. <code>shared/labs/{html.escape(ref.file)}</code></li>"
        )
    body = (
        f"<div class='cudalab-chapter-start' id='references'></div>\n<h1>References</h1>\n"
        f"<p>Every published number in this report is quoted from these lab reports. In the text, a lab's "
        f"number is underlined with dots; on screen, hovering over it shows the lab's own words and where "
        f"they stand. Profile <code>{html.escape(profile.name)}</code>.</p>"
        f"<ul>{''.join(labs) or '<li>none cited</li>'}</ul>\n<h2>Published values by chapter</h2>\n"
        + "\n".join(per_chapter)
    )
    return nbformat.v4.new_markdown_cell(body)
