"""The explorer in JupyterLab: controls over a chapter's tables, a figure, the selected rows, a
control that measures one new point, and one that measures a student's folder over the chapter's
whole sweep (``explore.series``: a job in a process of its own, with a progress bar and a cancel).

``explore(lab, "block_sweep", point=BLOCK_SIZE)`` (the recipe from ``labs.fw.points``) is each chapter's "Explore"
cell. The controls are apart from the output (ipywidgets' ``interactive_output`` pattern): a change
redraws from the frames in memory (``data.load`` once per table), never re-running the chapter.
In a batch build (``build_report.py`` sets ``CUDALAB_BATCH=1`` for its kernels) it shows nothing,
so the report stays static. ipywidgets is imported only here, inside the functions.
"""

from __future__ import annotations

import html
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter.catalog import BATCH_ENV
from cudalab.explore import data as explore_data
from cudalab.explore import figure

NOT_AVAILABLE = "measuring a point is not available in this build"
MAX_SELECT_OPTIONS = 16  # a numeric axis with more values gets a range slider
WIDE = {"description_width": "110px"}


def in_batch() -> bool:
    """A batch build (papermill under build_report.py): explorers show nothing."""
    return os.environ.get(BATCH_ENV, "") not in ("", "0")


def explore(lab, table: str | None = None, *, point=None) -> Explorer | None:
    """The explorer on ``lab``'s chapter, opened on ``table`` (by default the table of the view the
    chapter declares, ``explore`` in its ``notebooks/NN_name.yaml``, else this run's first explorable
    table), with ``point`` (the chapter's ``PointRecipe``) for measuring one new point. Shown as
    the cell's result; None (nothing shown) in a batch build."""
    if in_batch():
        return None
    return Explorer(lab, table, point=point)


def _declared_view(lab):
    """The explorer view ``lab``'s chapter declares, or None (no declarations, or none readable)."""
    from cudalab.chapter import declarations
    from cudalab.core.errors import CudalabError

    try:
        return declarations.of(lab.id).explore
    except (CudalabError, AttributeError):
        return None


def _measure_module():
    """``cudalab.explore.measure`` where this build has it, else None."""
    try:
        from cudalab.explore import measure
    except ImportError:
        return None
    return measure


def _yours(lab, table: str) -> pd.DataFrame | None:
    """The points measured from the explorer for ``table``, where this build records them."""
    try:
        from cudalab.explore import yours
    except ImportError:
        return None
    try:
        return yours.load(lab, table)
    except Exception:  # a damaged "your measurements" file never stops the explorer
        return None


class Explorer:
    """The widgets, the data in memory, and the redraw that ties them together."""

    def __init__(self, lab, table: str | None = None, *, point=None):
        import ipywidgets as w

        from cudalab.core import plots

        plots.setup()
        self.lab, self.point = lab, point
        self.view = _declared_view(lab)
        self._cache: dict[str, explore_data.TableData] = {}
        self._building = False
        self.last_redraw_s = 0.0
        self.last_figure = None  # the Figure the image shows
        tables = explore_data.explorable_tables(lab)
        if table is None and self.view is not None and self.view.table in tables:
            table = self.view.table
        if table is not None and table not in tables:
            tables = [table, *tables]
        self.table = self._control(w.Dropdown(options=tables, value=table or tables[0], description="table"), "table")
        self.metric = self._control(w.Dropdown(description="y (metric)"), "metric")
        # the baseline of a "speedup over a <axis>" metric, shown only beside one
        self.baseline = self._control(w.Dropdown(description="speedup over"), "baseline")
        self.x = self._control(w.Dropdown(description="x"), "x")
        self.colour = self._control(w.Dropdown(description="colour"), "colour")
        self.facet = self._control(w.Dropdown(description="facet"), "facet")
        self.logx = self._control(w.Checkbox(description="log x", indent=False), "logx")
        self.logy = self._control(w.Checkbox(description="log y", indent=False), "logy")
        self.overlay = self._control(
            w.SelectMultiple(description="beside", rows=4, layout=w.Layout(width="520px")), "overlay"
        )
        self.filters: dict[str, Any] = {}
        self._ranges: set[str] = set()
        self.filter_box = w.VBox()
        self.image = w.Image(format="png")
        self.figure_box = w.Box([self.image])
        self.figure_box.add_class("cudalab-explore-figure")
        self.rows = w.HTML()
        self.rows.add_class("cudalab-explore-rows")
        # what like-with-like did to the selection (faceted, points left out), in words under the figure
        self.caption = w.HTML()
        self.caption.add_class("cudalab-explore-caption")
        self.message = w.HTML()
        for control in (self.baseline, self.x, self.colour, self.facet, self.logx, self.logy, self.overlay):
            control.observe(self._redraw, names="value")
        self.metric.observe(self._metric_changed, names="value")
        self.table.observe(self._table_changed, names="value")
        controls = w.VBox(
            [
                w.HBox([self.table, self.metric, self.baseline]),
                w.HBox([self.x, self.colour, self.facet]),
                w.HBox([self.logx, self.logy]),
                self.overlay,
                w.HTML("<b>Filters</b> (every axis; ctrl/shift-click to pick several)"),
                self.filter_box,
            ]
        )
        parts = [controls, self.figure_box, self.caption, self.message, self.rows]
        self.measure_box = self._measure_controls(w) if point is not None else None
        if self.measure_box is not None:
            parts.insert(2, self.measure_box)
        self.series_run = None  # the job measuring a student's folder (explore.series.SeriesRun)
        self.series_box = self._series_controls(w) if point is not None else None
        if self.series_box is not None:
            parts.insert(3 if self.measure_box is not None else 2, self.series_box)
        self.box = w.VBox(parts)
        self.box.add_class("cudalab-explorer")
        self._table_changed()

    # ---- display

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    @staticmethod
    def _control(widget, name: str):
        widget.add_class(f"cudalab-explore-{name}")
        if hasattr(widget, "style") and hasattr(widget.style, "description_width"):
            widget.style.description_width = WIDE["description_width"]
        return widget

    # ---- the data of the chosen table

    @property
    def data(self) -> explore_data.TableData:
        name = self.table.value
        if name not in self._cache:
            self._cache[name] = explore_data.load(self.lab, name, extra=self._series_sources(name))
        return self._cache[name]

    def _series_sources(self, table: str) -> list:
        """The student series kept for this chapter, where ``table`` is the one its recipe measures."""
        if self.point is None or table != self.point.table:
            return []
        try:
            from cudalab.explore import series

            return series.sources(self.lab, table, explore_data.run_tables(self.lab.provenance).get(table, []))
        except Exception:  # a damaged series file never stops the explorer
            return []

    def _table_changed(self, change=None) -> None:
        """A new table: its metrics, axes, filters and overlays, then one redraw."""
        import ipywidgets as w

        d = self.data
        first = figure.default_selection(d, self.view)
        choosable = d.choosable()
        self._building = True
        try:
            self.metric.options = [(label, col) for col, label in d.offered_metrics().items()]
            self.metric.value = first.metric
            self._metric_changed()
            self.x.options = choosable
            self.x.value = first.x
            choices = [("(none)", figure.NONE), ("source", figure.SOURCE)] + [(a, a) for a in choosable]
            self.colour.options = choices
            self.colour.value = first.colour
            self.facet.options = choices
            self.facet.value = first.facet
            self.logx.value, self.logy.value = bool(first.logx), bool(first.logy)
            self.overlay.options = d.overlays
            self.overlay.value = tuple(first.overlays)
            self.filters, self._ranges = {}, set()
            for axis in choosable:
                values = d.values(axis)
                chosen = tuple(first.filters.get(axis, values))
                if d.is_numeric(axis) and len(values) > MAX_SELECT_OPTIONS:
                    control = w.SelectionRangeSlider(
                        options=values, index=(0, len(values) - 1), description=axis, layout=w.Layout(width="520px")
                    )
                    self._ranges.add(axis)
                else:
                    control = w.SelectMultiple(options=values, value=chosen, description=axis, rows=min(6, len(values)))
                control.add_class("cudalab-explore-filter")
                control.add_class(f"cudalab-explore-filter-{axis}")
                control.style.description_width = WIDE["description_width"]
                control.observe(self._redraw, names="value")
                self.filters[axis] = control
            self.filter_box.children = list(self.filters.values())
        finally:
            self._building = False
        self._redraw()

    def _metric_changed(self, change=None) -> None:
        """A speedup over a baseline: its baselines beside the metric (the default first), then a redraw."""
        family = self.data.baseline_family(self.metric.value) if self.metric.value else None
        building, self._building = self._building, True
        try:
            columns = self.data.baselines.get(family, {}) if family else {}
            self.baseline.options = [(str(value), column) for value, column in columns.items()]
            if columns:
                self.baseline.value = self.metric.value
            self.baseline.layout.display = "" if columns else "none"
        finally:
            self._building = building
        self._redraw()

    # ---- the selection, drawn

    def chosen_metric(self) -> str:
        """The column drawn: the metric, or for a speedup over a baseline, the chosen baseline's."""
        if self.baseline.options and self.data.baseline_family(self.metric.value):
            return self.baseline.value
        return self.metric.value

    def selection(self) -> figure.Selection:
        """The controls' values as a ``figure.Selection``."""
        filters = {}
        for axis, control in self.filters.items():
            value = control.value
            filters[axis] = tuple(value) if axis in self._ranges else list(value)
        return figure.Selection(
            metric=self.chosen_metric(),
            x=self.x.value,
            colour=self.colour.value,
            facet=self.facet.value,
            filters=filters,
            overlays=list(self.overlay.value),
            logx=self.logx.value,
            logy=self.logy.value,
        )

    def _redraw(self, change=None) -> None:
        if self._building:
            return
        start = time.perf_counter()
        d, sel = self.data, self.selection()
        mine = _yours(self.lab, d.table)
        chosen, shown = figure.selected(d, sel)  # aligned once, for the figure and the rows
        fig = figure.draw(d, sel, points=mine, aligned=shown)
        self.last_figure = fig  # what the image shows, for a test to read
        self.image.value = figure.png(fig)
        self.rows.value = self._rows_html(shown.rows, sel.metric, len(chosen) - len(shown.rows))
        self.caption.value = f"<small><b>Like with like:</b> {html.escape(shown.note)}</small>" if shown.note else ""
        self.last_redraw_s = time.perf_counter() - start

    def _rows_html(self, chosen: pd.DataFrame, metric: str, left_out: int = 0) -> str:
        shown = explore_data.rows_table(chosen, self.data, metric)
        more = f" (the first {len(shown)} shown)" if len(chosen) > len(shown) else ""
        not_ok = int((~chosen["status"].eq(explore_data.OK)).sum())
        note = f"; {not_ok} wrong or skipped (never drawn as a time)" if not_ok else ""
        if left_out:
            note += f"; {left_out} left out, measured where the other series were not (see the title)"
        return (
            f"<details><summary>{len(chosen)} selected rows{more}{note}</summary>"
            f"<div style='max-height: 320px; overflow: auto'>{shown.to_html(index=False, border=0)}</div></details>"
        )

    # ---- measuring one point

    def _measure_controls(self, w):
        """Inputs for the recipe's axes, the "Measure this point" button and the scratch copy;
        disabled with the reason where a point cannot be measured here."""
        point = self.point
        self.point_inputs = {}
        for name, kind in point.axes.items():
            default = point.defaults.get(name)
            if kind is bool:
                control = w.Checkbox(value=bool(default), description=name)
            elif kind is int:
                control = w.IntText(value=int(default or 0), description=name)
            elif kind is float:
                control = w.FloatText(value=float(default or 0.0), description=name)
            else:
                control = w.Text(value="" if default is None else str(default), description=name)
            self.point_inputs[name] = control
        self.use_scratch = w.Checkbox(description="use my scratch copy", indent=False)
        self.use_scratch.add_class("cudalab-explore-scratch")
        self.scratch_path = w.Text(description="scratch .cu", disabled=True, layout=w.Layout(width="520px"))
        self.use_scratch.observe(self._scratch_toggled, names="value")
        self.measure_button = w.Button(
            description="Measure this point", icon="play", button_style="primary", layout=w.Layout(width="190px")
        )
        self.measure_button.add_class("cudalab-explore-measure")
        self.measure_status = w.HTML()
        _disable_without_gpu(self.measure_button, self.measure_status)
        self.measure_button.on_click(self._measure_clicked)
        return w.VBox(
            [
                w.HTML(f"<b>Measure one point</b> of <code>{point.table}</code> ({point.chapter})"),
                w.HBox(list(self.point_inputs.values())),
                w.HBox([self.use_scratch, self.scratch_path]),
                w.HBox([self.measure_button, self.measure_status]),
            ]
        )

    def _scratch_toggled(self, change=None) -> None:
        """Checked: the scratch copy of the recipe's kernel (made now if there is none yet)."""
        if not self.use_scratch.value:
            self.scratch_path.value = ""
            return
        try:
            from cudalab.explore import scratch

            self.scratch_path.value = str(_scratch_copy(scratch, self._point_kernel_file()))
            self.scratch_path.disabled = False
        except ImportError:
            self.measure_status.value = f"<i>{NOT_AVAILABLE}</i>"
            self.use_scratch.value = False
        except Exception as exc:  # the package's own message, no traceback
            self.measure_status.value = f"<i>{exc}</i>"
            self.use_scratch.value = False

    def _point_kernel_file(self) -> str:
        """The kernels_cu file the chosen point runs (in some chapters the kernel chosen decides it)."""
        chooser = getattr(self.point, "kernel_file_for", None)
        if chooser is None:
            return self.point.kernel_file
        try:
            return chooser(self.point_values())
        except Exception:  # an incomplete point: the recipe's first file
            return self.point.kernel_file

    def point_values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.point_inputs.items()}

    def measure(self) -> list:
        """Measure the point the inputs hold (and, with the scratch box checked, the scratch copy
        beside the original), then redraw with it marked. Returns the ``MeasuredPoint``s."""
        module = _measure_module()
        if module is None:
            self.measure_status.value = f"<i>{NOT_AVAILABLE}</i>"
            return []
        kernels: list[Path | None] = [None]
        if self.use_scratch.value and self.scratch_path.value:
            kernels.append(Path(self.scratch_path.value))
        results, lines = [], []
        for kernel in kernels:
            try:
                result = module.measure_now(self.lab, self.point, self.point_values(), kernel_file=kernel)
            except Exception as exc:  # a refusal from the package: its sentence, no traceback
                lines.append(f"{'scratch copy' if kernel else 'original'}: {exc}")
                continue
            results.append(result)
            lines.append(f"{'scratch copy' if kernel else 'original'}: {result.status}: {result.message}")
        self.measure_status.value = "<br>".join(_escape(line) for line in lines)
        if self.point.table != self.table.value and self.point.table in self.table.options:
            self.table.value = self.point.table  # its change redraws
        else:
            self._redraw()
        return results

    def _measure_clicked(self, button=None) -> None:
        self.measure_button.disabled = True
        self.measure_status.value = "<i>measuring…</i>"
        try:
            self.measure()
        finally:
            self.measure_button.disabled = False

    # ---- a student's folder over the whole sweep

    def _series_controls(self, w):
        """The student's folder, "Measure my series", its progress bar and "Cancel"; the button is
        disabled with the reason where nothing can be measured here (the series already kept are
        drawn all the same). None where the chapter measures no student's file."""
        try:
            from cudalab.explore import series

            files = series.kernel_files(self.lab.id)
        except Exception:  # no grading room in this build, or no declaration: no control
            return None
        if not files:
            return None
        listed = ", ".join(files)
        self.series_folder = w.Text(
            description="your folder",
            placeholder=f"a folder holding your copy of {listed}",
            layout=w.Layout(width="520px"),
        )
        self.series_folder.add_class("cudalab-explore-series-folder")
        self.series_folder.style.description_width = WIDE["description_width"]
        self.series_button = w.Button(
            description="Measure my series", icon="play", button_style="primary", layout=w.Layout(width="190px")
        )
        self.series_button.add_class("cudalab-explore-series-measure")
        self.series_cancel = w.Button(description="Cancel", icon="stop", layout=w.Layout(width="110px", display="none"))
        self.series_cancel.add_class("cudalab-explore-series-cancel")
        self.series_progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="300px", display="none"))
        self.series_progress.add_class("cudalab-explore-series-progress")
        self.series_status = w.HTML()
        self.series_status.add_class("cudalab-explore-series-status")
        _disable_without_gpu(self.series_button, self.series_status)
        earlier = series.running_for(self.lab.out_dir)
        if earlier is not None:  # the cell was run again while a job of its earlier explorer runs
            self.series_run = earlier
            self.series_cancel.layout.display = ""
            self.series_status.value = "<i>a series started earlier is being measured for this chapter</i>"
        self.series_button.on_click(lambda _b: self.measure_series(self.series_folder.value))
        self.series_cancel.on_click(lambda _b: self.cancel_series())
        return w.VBox(
            [
                w.HTML(
                    f"<b>Your kernel across the sweep</b>: a folder with your copy of {_escape(listed)}"
                    f"{' (any of them)' if len(files) > 1 else ''}, measured at every point of "
                    f"<code>{self.point.table}</code> it builds for, each checked against the reference and "
                    "drawn beside it as &ldquo;yours&rdquo; and the file&rsquo;s first 8 sha256 digits"
                ),
                self.series_folder,
                w.HBox([self.series_button, self.series_cancel, self.series_progress]),
                self.series_status,
            ]
        )

    def measure_series(self, folder: str):
        """Start measuring ``folder`` over the chapter's sweep (``explore.series.SeriesRun``) and
        return the run (``.wait()`` for its end); the figure is redrawn with the series when it is
        done. None, with the reason shown, where it cannot start."""
        from cudalab.explore import series

        running = series.running_for(self.lab.out_dir)
        if running is not None:
            self.series_run = running  # perhaps an earlier explorer's: Cancel reaches it all the same
            self.series_cancel.layout.display, self.series_cancel.disabled = "", False
            self.series_status.value = "<i>a series is being measured for this chapter: wait for it, or cancel it</i>"
            return None
        where = series.folder_problem(folder)
        if where:
            self.series_status.value = f"<i>{_escape(where)}</i>"
            return None
        job, log = series.job_for(self.lab, folder, getattr(self.point, "table", None))
        self.series_progress.value, self.series_progress.max = 0, 1
        self.series_progress.layout.display = ""
        self.series_cancel.layout.display = ""
        self.series_cancel.disabled = False
        self.series_button.disabled = True
        self.series_status.value = "<i>starting…</i>"
        self.series_run = series.SeriesRun(job, lambda event: _on_main(self._series_event, event), log=log)
        return self.series_run

    def cancel_series(self) -> None:
        """Cancel the series being measured: its job and everything it started are stopped (at
        once; the job is killed where it has not ended after ``explore.series.CANCEL_GRACE_S``)."""
        if self.series_run is not None and self.series_run.running:
            self.series_cancel.disabled = True
            self.series_status.value = "<i>cancelling…</i>"
            self.series_run.cancel()

    def _series_event(self, event: dict[str, Any]) -> None:
        """One event of the job (handed to the kernel's loop by its reader thread): the progress
        bar, the status, and at the end the series drawn."""
        kind = event.get("event")
        if kind == "plan":
            self.series_progress.max = max(1, int(event.get("total") or 1))
            refused = f"; refused: {event['refused']}" if event.get("refused") else ""
            self.series_status.value = _escape(
                f"measuring {', '.join(event.get('files') or [])} and the reference, check inputs drawn with "
                f"seed {event.get('seed')}{refused}"
            )
            self._series_seed = event.get("seed")
        elif kind == "tick":
            self.series_progress.value = min(int(event.get("done") or 0), self.series_progress.max)
            self.series_status.value = _escape(f"{event.get('done')} of {event.get('total')}: {event.get('what', '')}")
        elif kind in ("done", "error", "cancelled"):
            self.series_cancel.layout.display = "none"
            self.series_button.disabled = False
            if kind == "done":
                from cudalab.explore import series

                self.series_progress.value = self.series_progress.max
                axes = explore_data.run_tables(self.lab.provenance).get(self.point.table, [])
                said = series.summary(Path(event["path"]), self.lab, self.point.table, axes)
                self.series_status.value = _escape(
                    f"done: {said}; kept in {event.get('path')} (check inputs drawn with seed "
                    f"{getattr(self, '_series_seed', '?')}: build_report.py --kernels --seed replays them)"
                )
                self._cache.pop(self.point.table, None)
                if self.table.value == self.point.table:
                    self._table_changed()
                elif self.point.table in self.table.options:
                    self.table.value = self.point.table
            else:
                self.series_progress.layout.display = "none"
                self.series_status.value = (
                    "<i>cancelled: nothing kept</i>"
                    if kind == "cancelled"
                    else f"<b>not measured</b>: {_escape(str(event.get('reason', '')))}"
                )


def _on_main(function, *args) -> None:
    """``function(*args)`` on the kernel's own loop, where the widgets' other changes happen (a job's
    events arrive on a thread of their own); called at once where there is no kernel (a script)."""
    try:
        from IPython import get_ipython

        loop = get_ipython().kernel.io_loop
    except Exception:  # noqa: BLE001 - no IPython kernel here
        loop = None
    if loop is None:
        function(*args)
    else:
        loop.add_callback(function, *args)


def _disable_without_gpu(button, status) -> None:
    """Where nothing can be measured here, ``button`` disabled with the reason as its tooltip and
    in ``status``."""
    module = _measure_module()
    reason = NOT_AVAILABLE if module is None else module.why_no_gpu()
    if reason:
        button.disabled = True
        button.tooltip = reason
        status.value = f"<i>{_escape(reason)}</i>"


def _scratch_copy(scratch, kernel_file: str) -> Path:
    """The student's scratch copy: kept where it exists (their edits), else made now."""
    from cudalab.core.paths import SCRATCH_DIR

    existing = SCRATCH_DIR / Path(kernel_file).name
    return existing if existing.is_file() else scratch.scratch_kernel(kernel_file)


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)
