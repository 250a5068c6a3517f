"""Issue 42 in a real JupyterLab and browser: chapter 04's explorer beside a recording on another
grid draws like with like (a panel per N, said under the figure), and the labs' own numbers sit
beside chapter 04's ladder (lab 001) and chapter 06's whole runs (lab 004). A JupyterLab and a
browser of its own (this module's fixtures), as ``test_browser_explorer`` starts them: a tab
that already ran a notebook does not connect a second one's kernel reliably."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browser_explorer import (  # noqa: F401 - the fixtures, a fresh server and browser per module
    ARTIFACTS,
    CHROMIUM_ARGS,
    KERNEL_START_S,
    LIKE_WITH_LIKE,
    REDRAW_S,
    RUN_ALL_S,
    SERVER_START_S,
    STUDENT_LABEL,
    Lab,
    Steps,
    _change_choices,
    _chromium,
    _figure_hash,
    _kernel_idle,
    _redraws,
    _shown_problems,
    _wait,
    browser_page,
    jupyter_lab,
    run_all_cells,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.full]  # make test-full


def _open_and_run_all(context, lab: Lab, name: str, steps: Steps, timings: dict[str, float]):
    """Open a notebook copy in a browser of its own (a browser that showed another notebook does not
    always connect a second one's kernel: its tab stays "Connecting"), wait for its kernel, run one
    cell and then all; return the tab and its explorer."""
    browser = context.browser.browser_type.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(60_000)
    steps.page = page
    # a workspace of its own, reset: only this notebook open, whatever another tab shows
    page.goto(f"{lab.url}/lab/workspaces/{Path(name).stem}/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-Notebook:visible .jp-Cell", timeout=SERVER_START_S * 1000)
    _wait(lambda: _kernel_idle(lab), KERNEL_START_S, "the kernel to start")
    timings[f"{name}: run all cells"] = run_all_cells(page, lab)
    problems = _shown_problems(page)
    assert not problems, f"{name}: cells show errors or unrendered widgets:\n" + "\n---\n".join(problems)
    explorer = page.locator(".jp-Notebook:visible .cudalab-explorer").first
    explorer.wait_for(timeout=REDRAW_S * 1000)
    explorer.scroll_into_view_if_needed()
    return page, explorer


def _select(explorer, control: str, label: str) -> None:
    """Choose the option of a single-choice control whose text contains ``label``."""
    select = explorer.locator(f".cudalab-explore-{control} select").first
    options = select.locator("option").all()
    texts = [" ".join(o.inner_text().split()) for o in options]
    match = next((i for i, t in enumerate(texts) if label in t), None)
    assert match is not None, f"{control}: no option {label!r} in {texts}"
    select.select_option(value=options[match].get_attribute("value"))


def _beside_the_lab(page, explorer, figure: str, table: str, lab_label: str, timings: dict[str, float]) -> str:
    """Open ``table`` in the explorer; its rows hold the lab's published numbers (``lab_label``)."""
    _select(explorer, "table", table)
    figure = _redraws(page, figure, f"table: {table}", timings)
    # the figure and the rows are two widgets, the rows set after the figure: the new figure can
    # show a moment before its rows do (and a table's change may redraw once more as its controls
    # reset), so wait for the rows rather than read them once
    rows = explorer.locator(".cudalab-explore-rows").first
    try:
        _wait(lambda: f"{lab_label} (published)" in (rows.text_content() or ""), REDRAW_S, f"{lab_label} in the rows")
    except AssertionError as exc:
        shown = " ".join((rows.text_content() or "").split())[:400]
        raise AssertionError(f"{table}: {exc}; they read {shown!r}") from None
    return figure


def _students_series_is_drawn(explorer, steps: Steps) -> None:
    """Issue 67: the series a student measured from the explorer (recorded on a GPU, kept in the
    chapter's data) is beside this run from the first view, its wrong point listed and never timed;
    without a GPU "Measure my series" is disabled and says why, with no progress bar or cancel."""
    from cudalab.explore.measure import why_no_gpu

    overlay = explorer.locator(".cudalab-explore-overlay select").first
    chosen = overlay.evaluate("s => Array.from(s.selectedOptions).map(o => o.textContent.trim())")
    chosen = [" ".join(c.split()) for c in chosen]  # the widget's options keep their spaces as &nbsp;
    assert STUDENT_LABEL in chosen, f"the student's series is not beside this run: {chosen}"
    rows = explorer.locator(".cudalab-explore-rows").first
    rows.locator("summary").first.click()  # the rows sit folded under their count
    text = " ".join((rows.text_content() or "").split())
    assert STUDENT_LABEL in text and "wrong" in text, f"the rows do not list the student's series: {text[:300]!r}"
    measure = explorer.locator(".cudalab-explore-series-measure").first
    button = measure if measure.evaluate("e => e.tagName") == "BUTTON" else measure.locator("button").first
    assert button.is_disabled(), "Measure my series is enabled without a GPU"
    reason = why_no_gpu()
    assert reason and reason in explorer.locator(".cudalab-explore-series-status").first.inner_text()
    assert not explorer.locator(".cudalab-explore-series-progress").first.is_visible()
    assert not explorer.locator(".cudalab-explore-series-cancel").first.is_visible()
    steps.shot("04-students-series", explorer)


def test_like_with_like_and_the_labs_numbers_in_jupyterlab(jupyter_lab, browser_page):  # noqa: F811
    """Chapter 04 opens on its declared view (x = block factor, a panel per N); with no facet and
    the h100 recording beside this run (other N), the explorer draws a panel per N and says so
    under the figure, never a median of different N; chapter 04's ladder and chapter 06's whole
    runs show the lab's own numbers (lab 001's NTHU GPU, lab 004's RTX 2080) in the rows."""
    lab, context = jupyter_lab, browser_page.context
    steps, timings = Steps(browser_page, ARTIFACTS / "like-with-like"), {}
    page, explorer = _open_and_run_all(context, lab, LIKE_WITH_LIKE[0], steps, timings)
    figure = _wait(lambda: _figure_hash(page), REDRAW_S, "chapter 04's first figure")
    x = explorer.locator(".cudalab-explore-x select").first.input_value()
    assert x == "block_factor", f"chapter 04 opens on x = {x}, not its declared block_factor"
    steps.shot("04-first-view", explorer)
    _students_series_is_drawn(explorer, steps)
    _select(explorer, "facet", "(none)")
    figure = _redraws(page, figure, "facet: none", timings)
    # the h100 profile's recording: another grid of N than this run's (the gtx680 profile's)
    _change_choices(explorer.locator(".cudalab-explore-overlay").first, narrow=False, add="· h100 (recorded)")
    figure = _redraws(page, figure, "overlay: a recording on another grid", timings)
    caption = explorer.locator(".cudalab-explore-caption").first
    _wait(lambda: "panels by n" in caption.inner_text(), REDRAW_S, "the caption to say it drew a panel per N")
    steps.shot("04-like-with-like", explorer)
    figure = _beside_the_lab(page, explorer, figure, "ladder", "lab 001, NTHU course cluster GPU (not named)", timings)
    steps.shot("04-ladder-beside-lab-001", explorer)

    page.context.browser.close()
    page, explorer = _open_and_run_all(context, lab, LIKE_WITH_LIKE[1], steps, timings)
    figure = _wait(lambda: _figure_hash(page), REDRAW_S, "chapter 06's first figure")
    steps.shot("06-first-view", explorer)
    _beside_the_lab(page, explorer, figure, "full_runs", "lab 004, GeForce RTX 2080", timings)
    steps.shot("06-full-runs-beside-lab-004", explorer)
    problems = _shown_problems(page)
    page.context.browser.close()
    assert not problems, "after the changes, cells show errors or unrendered widgets:\n" + "\n---\n".join(problems)
