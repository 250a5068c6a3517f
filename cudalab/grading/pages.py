"""What a grading run writes: ``students.csv`` (the verdict, one row per student), ``scoreboard.csv``
(the tidy scoreboard, a row per student, file and point or case), ``scoreboard.html`` (both,
readable: the verdicts first, then a table per chapter, failures in words) and one page per student
(``students/<name>.html``: the files and their sha256, what was refused, their results beside the
reference, and what the compiler made of their kernels beside the reference's).

The output folder is the run's own: a folder that holds anything else is refused, and a run
replaces only what an earlier grading run wrote there (marked ``.cudalab-grade``).
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write, atomic_write_text
from cudalab.core.paths import ROOT
from cudalab.grading import results as R
from cudalab.grading.grade import Graded

MARK = ".cudalab-grade"

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em;display:block;overflow-x:auto;max-width:100%}
@media print{table{display:table;font-size:0.75em}}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.ok td{background:#f3fbf3}tr.bad td{background:#fdf0f0}tr.other td{background:#fbf8ee}
code{font-size:0.9em}.note{color:#555}
"""


def prepare(out: Path) -> Path:
    """``out`` made ready for a grading run: created, or one an earlier run made (its staged copies,
    pages and scoreboard replaced); a ``CudalabError`` for the checkout's folders or a non-empty
    folder that is not a grading run's."""
    out = Path(out)
    resolved, root = out.resolve(), ROOT.resolve()
    sources = [root / d for d in ("cudalab", "kernels_cu", "notebooks", "params", "results", "tests", "tools")]
    if (
        resolved == root
        or root in resolved.parents
        and any(s == resolved or s in resolved.parents for s in sources)
        or resolved in root.parents
    ):
        raise CudalabError(f"--out {out}: a folder of the checkout itself; choose a folder under build/ or elsewhere")
    if out.exists() and any(out.iterdir()) and not (out / MARK).is_file():
        raise CudalabError(f"--out {out} is not empty and no grading run made it: choose an empty or new folder")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARK).write_text("written by build_report.py --grade; a later run replaces its files\n")
    for made in ("staged", "students", "answers"):
        if (out / made).is_dir():
            shutil.rmtree(out / made)
    return out


def _num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e4 else f"{value:.3e}"
    return html.escape(str(value))


_HEAD = {
    "time_ms": "time (ms)",
    "reference_time_ms": "reference (ms)",
    "speed_vs_reference": "speed vs reference (x)",
    "rate_per_s": "rate (/s)",
    "fraction_of_ceiling": "fraction of ceiling",
    "speed_vs_reference_geomean": "speed vs reference (geomean, x)",
    "best_fraction_of_ceiling": "best fraction of ceiling",
}


def table_html(frame: pd.DataFrame, columns: list[str]) -> str:
    """``frame``'s ``columns`` as an HTML table, a row coloured by its status, no index, no NaN."""
    head = "".join(f"<th>{html.escape(_HEAD.get(c, c.replace('_', ' ')))}</th>" for c in columns)
    body = []
    for _, row in frame.iterrows():
        status = str(row.get("status", ""))
        kind = "ok" if status in (R.OK, "correct") else ("other" if status in (R.COMPILED_ONLY, R.NOT_RUN) else "bad")
        cells = "".join(
            f'<td class="num">{_num(row[c])}</td>'
            if isinstance(row[c], (int, float)) and not isinstance(row[c], bool)
            else f"<td>{_num(row[c])}</td>"
            for c in columns
        )
        body.append(f'<tr class="{kind}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _page(title: str, body: str) -> str:
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>"


def _shown(frame: pd.DataFrame) -> list[str]:
    """The scoreboard's columns worth a reader's eye: those with a value somewhere."""
    keep = [
        "student",
        "file",
        "point",
        "status",
        "rank",
        "time_ms",
        "reference_time_ms",
        "speed_vs_reference",
        "fraction_of_ceiling",
        "reason",
    ]
    return [c for c in keep if c in frame and (c in ("student", "status", "reason") or frame[c].notna().any())]


def _shown_verdicts(frame: pd.DataFrame) -> list[str]:
    """The verdict table's columns with a value somewhere (its status column is the verdict)."""
    keep = ["student", "status", "rank", "speed_vs_reference_geomean", "best_fraction_of_ceiling", "reason"]
    return [c for c in keep if c in ("student", "status") or (c in frame and frame[c].notna().any())]


def sweep_frame(task: Any, rows: pd.DataFrame, sha256: dict[str, str]) -> pd.DataFrame:
    """``--sweep``: a student's scoreboard ``rows`` of ``task``'s chapter as ``series.draw`` reads
    them: a row per point and source (the student's, labelled by the file's sha256, and the
    reference's time at that point in this run), with the point's axes as columns."""
    from cudalab.grading import plan, series

    by_label = {plan.point_label(p): p for p, _ in task.points}
    mine = rows[rows["chapter"].eq(task.chapter) & rows["point"].isin(list(by_label))]
    out = []
    for _, row in mine.iterrows():
        point = by_label[row["point"]]
        ref_ms = row["reference_time_ms"]
        out.append({**point, "series": series.label(sha256.get(row["file"], "")), "status": row["status"],
                    "time_ms": row["time_ms"], "rate_per_s": row["rate_per_s"]})  # fmt: skip
        if pd.notna(ref_ms) and ref_ms:
            out.append({**point, "series": R.REFERENCE, "status": R.OK, "time_ms": ref_ms,
                        "rate_per_s": R.rate_of(point, ref_ms, task.yours.rate)})  # fmt: skip
    return pd.DataFrame(out)


def sweep_figure(task: Any, rows: pd.DataFrame, sha256: dict[str, str]) -> str:
    """``--sweep``: the student's series over the chapter's sweep beside the reference's and the
    ceiling measured in this run, as the chapter's main figure of that table draws it (its x
    axis; the declared rate where the chapter declares one, else the time), an inline PNG."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cudalab.grading import plan, series

    frame = sweep_frame(task, rows, sha256)
    recipe = plan.recipe_of(task.yours.recipe)
    keys = [k for k in (*recipe.axes, *recipe.kernel_choices) if k in frame]
    if frame.empty or not keys:
        return ""
    specs = series.figures_of(task.chapter, recipe.table)
    spec = next((f for f in specs if f.x in keys), None)
    x = spec.x if spec is not None else keys[0]
    rated = frame["rate_per_s"].notna().any()
    y = "rate_per_s" if rated else "time_ms"
    unit = task.yours.rate_unit or "per s"
    ceilings = rows[rows["chapter"].eq(task.chapter)]["ceiling_per_s"].dropna()
    ceiling = (
        (float(ceilings.iloc[0]), f"the {task.yours.ceiling} ceiling, this run") if rated and len(ceilings) else None
    )
    what = spec.title if spec is not None else "the chapter's sweep"  # 04: its sweep and its ladder, apart
    title, ylabel = f"{task.chapter}: your file over {what}", unit if rated else "time (ms)"
    bars = spec is not None and spec.kind == "bar"
    if bars:  # a ladder: a bar per step and source
        order = recipe.kernel_choices.get(x)
        fig = series.draw_bars(frame, x, y, title=title, ylabel=ylabel, logy=not rated, by=keys, order=order)
    else:
        fig = series.draw(frame, x, y, title=title, ylabel=ylabel, logx=False, logy=not rated, by=keys, ceiling=ceiling)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    png = base64.b64encode(buffer.getvalue()).decode()
    points = frame[frame["series"].ne(R.REFERENCE)]
    wrong = int(points["status"].ne(R.OK).sum())
    return (
        f"<h2>{html.escape(task.chapter)}: {html.escape(what)}</h2><p class='note'>{len(points)} point(s) of the "
        "chapter's sweep that build from your file, each checked as a graded point is; "
        + ("hatched bars: yours, plain: the reference" if bars else "dashed: yours, solid: the reference")
        + " in this run"
        + (f"; a red cross: {wrong} point(s) not correct, with no time" if wrong else "")
        + ".</p>"
        f"<img alt='{html.escape(task.chapter)}: your series beside the reference' src='data:image/png;base64,{png}'>"
    )


def write(graded: Graded, out: Path, *, title: str, klass: str = "") -> dict[str, Path]:
    """Write the scoreboard (CSV and HTML) and each student's page into ``out``; return their paths.
    ``title`` heads the scoreboard; a student's page is headed by their name and ``klass``."""
    board = graded.scoreboard
    csv = out / "scoreboard.csv"
    atomic_write(csv, lambda tmp: board.to_csv(tmp, index=False))
    verdicts = graded.students
    atomic_write(out / "students.csv", lambda tmp: verdicts.to_csv(tmp, index=False))
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='note'>Measured on: {html.escape(graded.measured_on)}. "
        f"{len(verdicts)} student(s)."
        + (
            ""
            if graded.measured_on.startswith("no GPU")
            else f" Inputs drawn with seed {graded.seed} (<code>--seed {graded.seed}</code> replays them)."
        )
        + "</p>",
    ]
    if graded.failures:
        failed = "".join(f"<li>{html.escape(f)}</li>" for f in graded.failures)
        parts.append(
            "<h2>The grader failed</h2><p>The reference files were not right where the students were measured, "
            f"so no speed beside them means anything:</p><ul>{failed}</ul>"
        )
    if len(verdicts):
        parts.append(
            "<h2>Verdicts</h2><p class='note'>A student is ranked only when every point and every case is correct "
            "(checked on the timed inputs, on a fresh input and on the harsh inputs each chapter declares), by the "
            "geometric mean of their speed against the reference over their points (above 1: faster). A rate past "
            "the chapter's physical ceiling measured in this run is never a result.</p>"
            + table_html(verdicts.rename(columns={"verdict": "status"}), _shown_verdicts(verdicts))
        )
    parts.append(
        "<p class='note'>The details. Rank: 1 is the fastest at the point among the correct students. Speed vs "
        "reference: the reference file's time at the same point in this run over the student's. Reason: why a "
        "result is not ok, or, beside an ok answer to a hidden case, what its check noted (a k-means run's "
        "agreement with the sequential code).</p>"
    )
    for chapter, rows in board.groupby(board["chapter"].replace("", "Refused, or measured by no chapter"), sort=True):
        parts.append(f"<h2>{html.escape(chapter)}</h2>")
        ceiling = rows["ceiling_per_s"].dropna()
        if len(ceiling):
            unit = rows["rate_unit"].dropna().iloc[0]
            parts.append(
                f"<p class='note'>Ceiling measured in this run: {ceiling.iloc[0]:.4g} {html.escape(str(unit))}.</p>"
            )
        parts.append(table_html(rows, _shown(rows)))
    atomic_write_text(out / "scoreboard.html", _page(title, "".join(parts)))
    pages = {"scoreboard.csv": csv, "scoreboard.html": out / "scoreboard.html", "students.csv": out / "students.csv"}
    (out / "students").mkdir(exist_ok=True)
    for name, sub in graded.submissions.items():
        mine = board[board["student"].eq(name)]
        files = "".join(
            f"<tr><td><code>{html.escape(f)}</code></td><td><code>{h}</code></td></tr>" for f, h in sub.sha256.items()
        )
        heading = f"{name}, {klass}" if klass else name
        verdict = verdicts[verdicts["student"].eq(name)] if len(verdicts) else verdicts
        body = [
            f"<h1>{html.escape(heading)}</h1>",
            f"<p class='note'>Measured on: {html.escape(graded.measured_on)}."
            + ("" if graded.measured_on.startswith("no GPU") else f" Inputs drawn with seed {graded.seed}.")
            + "</p>",
        ]
        if len(verdict):
            body.append(
                "<h2>Verdict</h2>" + table_html(verdict.rename(columns={"verdict": "status"}), _shown_verdicts(verdict))
            )
        body += [
            f"<h2>Files</h2><table><thead><tr><th>file</th><th>sha256</th></tr></thead><tbody>{files}</tbody></table>",
        ]
        if sub.refused:
            refused = "".join(
                f"<li><code>{html.escape(r.name)}</code>: {html.escape(r.reason)}</li>" for r in sub.refused
            )
            body.append(f"<h2>Refused</h2><ul>{refused}</ul>")
        measured = mine[~mine["status"].eq(R.REFUSED)]
        for task in graded.swept.get(name, []):
            body.append(sweep_figure(task, measured, sub.sha256))
        if len(measured):
            body.append(
                "<h2>Results beside the reference</h2>" + table_html(measured, ["chapter", *_shown(measured)[1:]])
            )
        res = graded.resources.get(name)
        if res is not None and len(res):
            cols = [
                c
                for c in (
                    "file",
                    "point",
                    "options",
                    "source",
                    "kernel",
                    "registers_per_thread",
                    "shared_bytes",
                    "spill_bytes",
                    "stack_bytes",
                    "sass_instructions",
                    "status",
                    "reason",
                )
                if c in res
            ]
            body.append("<h2>What the compiler made of it, beside the reference</h2>" + table_html(res, cols))
        target = out / "students" / f"{name}.html"
        atomic_write_text(target, _page(heading, "".join(body)))
        pages[f"students/{name}.html"] = target
    return pages
