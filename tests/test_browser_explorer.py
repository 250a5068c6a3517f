"""The explorer in a real JupyterLab, in a real browser: what a student does, end to end.

The test starts ``jupyter lab`` from this environment (a free port, a random token, its own config,
runtime and root folders), opens a copy of chapter 01 in Debian's Chromium through Playwright,
runs all cells, checks that no cell shows an error or an unrendered widget, then changes the
explorer's metric, a filter and an overlaid recording and checks that the figure changed each
time. Screenshots of every step are kept in ``build/browser-artifacts/`` (a CI artifact).

Why the ceremony: a JupyterLab that a developer's machine runs by luck fails on a 2-core runner.
"Run All" before the kernel's websocket is up loses the widgets' comm messages ("Loading
widget..." forever), so the kernel is waited for and one cell is run first; JupyterLab 4 does
not render cells off screen, so notebook windowing is turned off; the news toast is pre-set.
No browser is ever downloaded (``playwright install`` fails on these machines): the test uses
the system's Chromium and skips, with the reason, where it or Playwright is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from cudalab.core.paths import BUILD_DIR, NOTEBOOKS_DIR, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.full]  # make test-full

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
NOTEBOOK = "01_block_size.ipynb"
# Issue 42: chapter 04 beside a recording on another grid (like with like), and the labs' own numbers
# beside chapter 04's ladder (lab 001) and chapter 06's whole runs (lab 004)
LIKE_WITH_LIKE = ("04_blocking_factor.ipynb", "06_kmeans_device_update.ipynb")
ARTIFACTS = BUILD_DIR / "browser-artifacts"
# chapter 04's series of a copy of fw_blocked.cu that is wrong at BF 16, measured on an H200 from the
# explorer over the gtx680 recording's grid (tests/data/yours_series/README.md)
STUDENT_SERIES = Path(__file__).parent / "data" / "yours_series" / "04_blocking_factor_gtx680_wrong_at_bf16.csv"
STUDENT_LABEL = "yours 32b39b1c"
# Generous: a 2-core CI runner starts JupyterLab in ~10 s and replays chapter 01 in 10-20 s.
SERVER_START_S = 120
KERNEL_START_S = 120
RUN_ALL_S = 300
REDRAW_S = 60

# JupyterLab settings the test runs under (user settings, one file per plugin).
LAB_SETTINGS = {
    # Render every cell, not only those on screen: outputs below the fold exist in the DOM.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # No "would you like to receive news?" toast over the notebook, no update check.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or next((c for c in CHROMIUM_CANDIDATES if Path(c).is_file()), None)


def _missing() -> str | None:
    """Why the test cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return "JupyterLab is not installed (pip install -e '.[test]')"
    if _chromium() is None:
        return "Chromium is not installed (Debian: apt-get install chromium); browsers are never downloaded"
    return None


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def api(self, path: str):
        with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=10) as r:
            return json.loads(r.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook_copy(src: Path, dest: Path, data_dir: Path) -> None:
    """A chapter as a student opens it, writing its tables to a temporary folder.

    A copy, so the committed notebook never gains outputs; its parameters cell gains
    ``data_dir`` (the run's tables go to tmp, not build/lab/); a first code cell answers
    before "Run All" is pressed (the kernel's channels are up).
    """
    nb = nbformat.read(src, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source += f"\ndata_dir = {str(data_dir)!r}  # the browser test's own folder\n"
    ready = nbformat.v4.new_code_cell('"kernel ready"')
    ready.metadata["tags"] = ["browser-test-ready"]
    nb.cells.insert(0, ready)
    nbformat.write(nb, dest)


@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory) -> Iterator[Lab]:
    """A JupyterLab of its own: free port, random token, folders under tmp; stopped by process group."""
    missing = _missing()
    if missing:
        if os.environ.get("CUDALAB_REQUIRE_BROWSER"):
            pytest.fail(f"CUDALAB_REQUIRE_BROWSER is set but {missing}")
        pytest.skip(missing)
    base = tmp_path_factory.mktemp("jupyterlab")
    root, settings, data = base / "root", base / "settings", base / "data"
    root.mkdir()
    for plugin, values in LAB_SETTINGS.items():
        package, name = plugin.rsplit("/", 1)
        folder = settings / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    for name in (NOTEBOOK, *LIKE_WITH_LIKE):
        _notebook_copy(NOTEBOOKS_DIR / name, root / name, data)
    # a student's series recorded on a GPU, kept where the explorer keeps one it measured (issue 67)
    kept = data / Path(LIKE_WITH_LIKE[0]).stem / "yours_series"
    kept.mkdir(parents=True)
    shutil.copyfile(STUDENT_SERIES, kept / "32b39b1c.csv")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_DATA_DIR": str(base / "jupyter-data"),  # no user kernelspec can replace this venv's
        "JUPYTER_PLATFORM_DIRS": "1",
        "IPYTHONDIR": str(base / "ipython"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    env.pop("JUPYTER_PATH", None)
    args = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--LabApp.news_url=",
        "--ServerApp.terminals_enabled=False",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        args.append("--allow-root")
    log = base / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    lab = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, log=log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                lab.api("/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer in {SERVER_START_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield lab
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, ARTIFACTS / "jupyterlab.log")


@pytest.fixture(scope="module")
def browser_page(jupyter_lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        # tall enough that the explorer (controls, a filter per axis, the figure) is shot whole:
        # the notebook panel scrolls, and clips what lies below its edge
        context = browser.new_context(viewport={"width": 1400, "height": 1800})
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        try:
            yield page
        finally:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "console.log").write_text("\n".join(console) + "\n")
            context.close()
            browser.close()


class Steps:
    """Screenshots, numbered in the order taken, in build/browser-artifacts/."""

    def __init__(self, page, folder: Path = ARTIFACTS):
        self.page, self.n, self.folder = page, 0, folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)

    def shot(self, name: str, locator=None) -> Path:
        self.n += 1
        path = self.folder / f"{self.n:02d}-{name}.png"
        (locator or self.page).screenshot(path=str(path))
        return path


def _kernel_idle(lab: Lab) -> bool:
    """Every kernel of the server is idle. A kernel still starting is "not yet", also where the
    server answers 500: jupyter_server lists a kernel whose start has not set ``last_activity``
    and its model raises (a race of the server's own, seen in CI), which a poll retries."""
    try:
        kernels = lab.api("/api/kernels")
    except urllib.error.HTTPError as error:
        if error.code >= 500:
            return False
        raise
    return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


def _wait(predicate, timeout_s: float, what: str, interval_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def _busy_prompts(page) -> int:
    """Cells queued or running: their prompt reads [*]."""
    return page.locator(".jp-InputPrompt", has_text="*").count()


def _wait_for_all_cells(page, lab: Lab, timeout_s: float) -> None:
    """Until the kernel is idle and no cell waits, twice in a row (a queue can drain between polls)."""
    settled = []

    def idle():
        settled.append(_busy_prompts(page) == 0 and _kernel_idle(lab))
        return len(settled) >= 2 and settled[-1] and settled[-2]

    _wait(idle, timeout_s, "all cells to run", interval_s=1.0)


# What a cell must never show: an exception, or a widget the page could not render.
UNRENDERED = ("Loading widget", "Error displaying widget", "could not be displayed", "model not found")


def _shown_problems(page) -> list[str]:
    """The text of every error output and unrendered widget in the notebook (empty: none)."""
    errors = page.locator(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"],'
        ' .jp-OutputArea-output[data-mime-type*="error"]'
    )
    found = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    text = page.locator(".jp-Notebook:visible").first.inner_text()  # the notebook on screen, where several are open
    found += [f"{marker!r} is shown" for marker in UNRENDERED if marker in text]
    return found


# The bytes behind each <img> of the figure: an ipywidgets Image shows a fresh blob: URL at every
# redraw, even of the same picture, so its src alone would say "changed" when nothing did.
# A src revoked by a redraw in between reads as "" (not yet drawn): the test asks again.
FIGURE_BYTES_JS = """async (images) => Promise.all(images.map(async (img) => {
    try {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let text = ""; for (const b of bytes) text += String.fromCharCode(b);
        return btoa(text);
    } catch (e) { return ""; }
}))"""


def _figure_hash(page) -> str | None:
    """The hash of the explorer's figure (the PNG bytes its <img> shows), None while it has none."""
    images = page.locator(".cudalab-explore-figure img")
    if images.count() == 0 or not all(s for s in images.evaluate_all("els => els.map(e => e.src)")):
        return None
    pictures = images.evaluate_all(FIGURE_BYTES_JS)
    return hashlib.sha256("\n".join(pictures).encode()).hexdigest() if all(pictures) else None


def _pick_other(select, prefer: tuple[str, ...] = ()) -> str:
    """Choose, in a single-choice <select>, an option other than the current one (a preferred one first)."""
    current = select.input_value()
    options = [o for o in select.locator("option").all() if o.get_attribute("value") != current]
    assert options, "the control has only one choice"
    labels = [" ".join(o.inner_text().split()) for o in options]  # ipywidgets shows spaces as no-break spaces
    print(f"choices other than {current!r}: {labels}")
    chosen = next((i for p in prefer for i, t in enumerate(labels) if p in t), 0)
    select.select_option(value=options[chosen].get_attribute("value"))
    return labels[chosen]


def _change_choices(control, *, narrow: bool, prefer: tuple[str, ...] = (), add: str = "") -> str:
    """Narrow (keep fewer) or widen (add one) the choices of a multiple-choice control.

    The explorer may show the choices as a multiple <select>, as check boxes or as toggle buttons;
    the test uses whichever it finds, as a student would; a multiple <select> is narrowed to the
    ``prefer``red values where it has some, and widened by the first option whose text holds
    ``add``. Returns what it did, for the log.
    """
    multiple = control.locator("select[multiple]")
    if multiple.count():
        options = multiple.first.locator("option").all()
        values = [o.get_attribute("value") for o in options]
        texts = [" ".join(o.inner_text().split()) for o in options]
        chosen = multiple.first.evaluate("s => Array.from(s.selectedOptions).map(o => o.value)")
        preferred = [v for v in values if v in chosen and v in prefer]
        if narrow and 0 < len(preferred) < len(chosen):
            keep = preferred
        elif narrow:
            keep = [v for v in values if v in chosen][: max(1, len(chosen) // 2)] or values[:1]
        else:
            adding = [v for v, t in zip(values, texts, strict=True) if v not in chosen and add in t]
            assert adding, f"no option to add holds {add!r}: {texts}"
            keep = chosen + adding[:1]
        multiple.first.select_option(value=keep)
        return f"selected {keep}" + (f" (added the one of {add!r})" if add and not narrow else "")
    boxes = control.locator("input[type=checkbox]")
    if boxes.count():
        states = [boxes.nth(i).is_checked() for i in range(boxes.count())]
        i = states.index(True) if narrow else states.index(False)
        boxes.nth(i).click()
        return f"toggled check box {i}"
    buttons = control.locator("button")
    if buttons.count():
        pressed = [("mod-active" in (buttons.nth(i).get_attribute("class") or "")) for i in range(buttons.count())]
        i = pressed.index(True) if narrow and any(pressed) else pressed.index(False) if False in pressed else 0
        buttons.nth(i).click()
        return f"clicked button {i}"
    raise AssertionError(f"no choices found in {control}: {control.inner_html()[:500]}")


def _redraws(page, before: str | None, what: str, timings: dict[str, float]) -> str:
    """Wait until the figure differs from ``before``; return its new hash (the wait is logged in ``timings``)."""
    started = time.monotonic()
    after = _wait(lambda: (h := _figure_hash(page)) != before and h, REDRAW_S, f"the figure to change ({what})", 0.05)
    timings[what] = round(time.monotonic() - started, 3)
    print(f"{what}: the figure changed in {timings[what]:.2f} s")
    return after


def _measure_control_says_why(explorer) -> None:
    """Without a GPU the "measure now" control is disabled and says why (where the explorer has one)."""
    try:
        from cudalab.explore.measure import why_no_gpu
    except ImportError:
        return
    reason = why_no_gpu()
    control = explorer.locator(".cudalab-explore-measure")
    if reason is None or not control.count():
        return
    control = control.first
    button = control if control.evaluate("e => e.tagName") == "BUTTON" else control.locator("button").first
    assert button.is_disabled(), f"the measure control is enabled, but no point can be measured here: {reason}"
    shown = explorer.inner_text() + " " + (button.get_attribute("title") or "")
    assert reason in shown, f"the disabled measure control does not say why ({reason!r})"


KERNEL_STATUS = re.compile(r"\|\s*(Idle|Busy)")  # the status bar once the page's kernel connection is up


def _client_connected(page, tries: int = 2) -> None:
    """Until the page itself is connected to its kernel (its status bar reads "| Idle"): the server
    may see an idle kernel while the page's websocket still says "Connecting", and a cell run then
    is lost. A page that stays "Connecting" is reloaded, once."""
    status = page.locator(".jp-StatusBar-Widget", has_text=KERNEL_STATUS)
    for attempt in range(tries):
        try:
            status.first.wait_for(timeout=KERNEL_START_S * 1000 // tries)
            return
        except Exception:
            if attempt == tries - 1:
                raise
            page.reload()
            page.wait_for_selector(".jp-Notebook:visible .jp-Cell", timeout=SERVER_START_S * 1000)


def run_all_cells(page, lab: Lab) -> float:
    """Run the open notebook as a student does: its first cell, and its reply (the kernel's channels
    are up before "Run All"), then Run > Run All Cells, until every cell ran. Returns the seconds."""
    _client_connected(page)
    ready = page.locator(".jp-Notebook:visible .jp-CodeCell").first
    ready.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    ready.locator(".jp-OutputArea-output", has_text="kernel ready").wait_for(timeout=KERNEL_START_S * 1000)
    started = time.monotonic()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()  # not "Restart ... and Run All"
    page.wait_for_timeout(1000)
    _wait_for_all_cells(page, lab, RUN_ALL_S)
    return round(time.monotonic() - started, 1)


def test_the_explorer_in_jupyterlab(jupyter_lab, browser_page):
    page, lab = browser_page, jupyter_lab
    steps = Steps(page)
    timings: dict[str, float] = {}
    page.set_default_timeout(60_000)
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=SERVER_START_S * 1000)
    _wait(lambda: _kernel_idle(lab), KERNEL_START_S, "the kernel to start")
    steps.shot("opened")

    timings["run all cells"] = run_all_cells(page, lab)
    steps.shot("ran-all")

    problems = _shown_problems(page)
    assert not problems, "cells show errors or unrendered widgets:\n" + "\n---\n".join(problems)

    # the cell tagged yours tells a student how to measure their own kernel here (issue 43)
    hint = page.locator(".jp-Notebook:visible .jp-OutputArea-output", has_text="Your own kernel here.")
    hint.scroll_into_view_if_needed()
    assert "build_report.py --kernels YOUR_FOLDER --only 01" in hint.inner_text()
    steps.shot("yours-hint", hint)

    explorer = page.locator(".cudalab-explorer").first
    explorer.wait_for(timeout=REDRAW_S * 1000)
    explorer.scroll_into_view_if_needed()
    figure = _wait(lambda: _figure_hash(page), REDRAW_S, "the explorer's first figure")
    steps.shot("explorer", explorer)

    # The metric (the y axis): another one than the default, speedup where the table has one.
    metric = explorer.locator(".cudalab-explore-metric select").first
    chosen = _pick_other(metric, prefer=("speedup", "/s"))
    figure = _redraws(page, figure, f"metric {chosen}", timings)
    steps.shot("metric", explorer)

    # A filter on a category: block shapes 8x8 and 16x16 only (chapter 01's "variant"; any multiple choice elsewhere).
    choices = explorer.locator(".cudalab-explore-filter", has=page.locator("select[multiple]"))
    shapes = explorer.locator(".cudalab-explore-filter-variant")
    did = _change_choices((shapes if shapes.count() else choices).first, narrow=True, prefer=("8x8", "16x16"))
    figure = _redraws(page, figure, f"filter: {did}", timings)
    steps.shot("filter", explorer)

    # A filter on a range: a smaller largest N (the range slider's upper handle, moved by keyboard).
    ranges = explorer.locator(".cudalab-explore-filter .noUi-handle-upper")
    if ranges.count():
        ranges.first.focus()
        for _ in range(2):
            page.keyboard.press("ArrowLeft")
        figure = _redraws(page, figure, "filter: a smaller range", timings)
        steps.shot("range", explorer)

    # An overlaid recording: another GPU or profile that recorded the same table.
    did = _change_choices(explorer.locator(".cudalab-explore-overlay").first, narrow=False)
    figure = _redraws(page, figure, f"overlay: {did}", timings)
    steps.shot("overlay", explorer)
    # Back to the first metric (a time), for the picture the README shows: fewer shapes, beside other GPUs.
    metric.select_option(index=0)
    figure = _redraws(page, figure, "metric back to the first", timings)
    shutil.copyfile(steps.shot("explorer-final", explorer), ARTIFACTS / "explorer.png")
    (ARTIFACTS / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    _measure_control_says_why(explorer)

    problems = _shown_problems(page)
    assert not problems, "after the changes, cells show errors or unrendered widgets:\n" + "\n---\n".join(problems)
