"""The whole pipeline without a GPU: build_report.py replays recorded results into one report."""

import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cudalab.chapter import catalog, recorded
from cudalab.core.gpu import gpu_available
from cudalab.core.paths import ROOT

GTX680 = recorded.find("gtx680")[0].path

pytestmark = pytest.mark.slow


def build(*args, env=None):
    return subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )


def test_help_explains():
    proc = build("--help")
    assert proc.returncode == 0
    for word in ("--gpu", "--only", "--out", "--quick", "--record", "replay", "gtx680", "h100"):
        assert word in proc.stdout
    said = " ".join(proc.stdout.split())
    # --gpu means one thing per job, and its help says which
    assert "With --grade, one profile" in said and "With --compare, one profile" in said


def test_unknown_profile_is_a_clear_error(tmp_path):
    proc = build("--gpu", "gtx9999", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "unknown profile 'gtx9999'" in proc.stderr and "gtx680" in proc.stderr
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("value", ["-5", "1.5", "soon"])
def test_a_cell_timeout_that_is_no_whole_number_of_seconds_is_refused_before_any_work(tmp_path, value):
    proc = build("--cell-timeout", value, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "--cell-timeout" in proc.stderr and "whole number of seconds" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_quick_run_is_never_recorded(tmp_path):
    proc = build("--quick", "--record", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--record with --quick" in proc.stderr


def test_unknown_chapter_is_a_clear_error(tmp_path):
    proc = build("--only", "77", "--out", str(tmp_path))
    assert proc.returncode == 2 and "unknown chapter '77'" in proc.stderr


def test_invalid_profile_file_is_reported_before_any_work(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nchapters:\n  01_block_size:\n    params: {block_sizes: [8, 'x']}\n")
    proc = build("--gpu", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "block_sizes" in proc.stderr


@pytest.mark.skipif(gpu_available(), reason="replay of a missing recording is a no-GPU path")
def test_replay_without_recording_names_what_exists(tmp_path):
    proc = build("--gpu", "generic", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "no recorded results for profile 'generic'" in proc.stderr


def pdf_tools() -> bool:
    """Chromium prints the PDF and poppler's pdftotext reads it back. CI installs both (.ci/run sets
    CUDALAB_REQUIRE_PDF=1, so there a missing tool fails the test rather than skipping it)."""
    from cudalab.report.stitch import find_browser

    found = find_browser() is not None and shutil.which("pdftotext") is not None
    if not found and os.environ.get("CUDALAB_REQUIRE_PDF") == "1":
        raise AssertionError("CUDALAB_REQUIRE_PDF=1 but Chromium or pdftotext is missing")
    return found


@pytest.fixture(scope="module")
def replay_report(tmp_path_factory):
    from tests.shared_builds import as_proc, replay_gtx680

    out, result = replay_gtx680(tmp_path_factory, pdf=pdf_tools())
    return out, as_proc(result)


def test_replay_report_holds_both_chapters_figures_and_no_errors(replay_report):
    out, proc = replay_report
    html = (out / "report.html").read_text()
    assert "Replayed, not measured here" in html
    first_page = html[html.index("<body") : html.index('id="chapter-00_gpu_capabilities"')]
    assert "Replayed" in first_page and re.search(r"recorded by this pipeline on\s*<b>NVIDIA", first_page)
    # commits and cards are in the folded provenance block, not in the sentences (issue 42, item 10)
    words = first_page[: first_page.index("<details>")]
    assert not re.search(r"\b[0-9a-f]{10}\b", words) and "GPU-" not in words
    # which of the two sentences depends on the recording replayed: stale chapters in it, or none
    from cudalab.chapter.staleness import stale_recordings

    folder = re.search(r"\(results/([^,)]+)", json.loads((out / "build.json").read_text())["recording"])[1]
    stale = [s for s in stale_recordings() if s.where.startswith(folder + "/")]
    if stale:
        assert "predate changes to today's sources" in words and "Every recording matches" not in words
    else:
        assert "Every recording matches today's sources." in words and "predate changes" not in words
    # one GPU by name, or (a recording whose chapters were measured on two cards of one model) the model
    assert re.search(r"Measured on</th><td>NVIDIA", first_page), "the first page names the GPU that measured it"
    headline = json.loads((out / "data" / "01_block_size" / "summary.json").read_text())[0]["text"]
    assert "What this run found" in first_page and html_lib.escape(headline) in first_page, (
        "the first page sums up the run from the chapters' recorded headlines"
    )
    assert re.search(r"results/nvidia-[a-z0-9-]+/gtx680", proc.stderr), "the build says which recording it replays"
    assert "WARNING" not in proc.stderr, "no third-party warnings in a normal build"
    chapters = catalog.discover()
    assert len(chapters) >= 4
    for chapter in chapters:  # every chapter replayed: 00 capabilities .. 03 shared memory and on
        assert chapter.title.split(":")[0] in html, chapter.id
    figures = re.findall(r'<img[^>]+src="data:image/png;base64,', html)
    assert len(figures) >= 2 * len(chapters), f"expected the chapters' figures embedded, found {len(figures)}"
    assert "Show code" in html and "<details" in html
    assert "<script" not in html, "the report must read offline: no scripts from a CDN"
    assert "Traceback" not in html and "jp-RenderedText" in html
    assert 'data-mime-type="application/vnd.jupyter.stderr"' not in html, "a chapter wrote to stderr"
    for nb in (out / "notebooks").glob("*.ipynb"):
        outputs = [o for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", [])]
        assert not [o for o in outputs if o["output_type"] == "error"], nb.name
    summary = json.loads((out / "build.json").read_text())
    assert summary["mode"] == "replay" and summary["ok"]
    assert set(summary["chapters"]) == {c.id for c in chapters}


def test_the_summary_page_has_a_row_per_chapter_from_its_scorecard(replay_report):
    """The first page: each chapter's best configuration, speedup over the lab's baseline, fraction
    of its ceiling and the lab's figure, rendered from the scorecard the notebook recorded."""
    out, _ = replay_report
    html = (out / "report.html").read_text()
    summary = html[html.index("<h2>Summary</h2>") : html.index("<h2>Contents</h2>")]
    for chapter in catalog.discover():
        card = json.loads((out / "data" / chapter.id / "scorecard.json").read_text())
        assert card["best"] and html_lib.escape(card["best"]) in summary, chapter.id
        if card["speedup_x"] is not None:
            assert f"{card['speedup_x']:,.1f}x" in summary, chapter.id
        if card["fraction_of_ceiling"] is not None:
            assert f"{card['fraction_of_ceiling']:.0%}" in summary, chapter.id
    assert summary.count("<tr>") == len(catalog.discover()) + 1
    for row in re.findall(r"<tr><td><a href.*?</tr>", summary):
        fraction_cell = re.findall(r"<td>(.*?)</td>", row)[3]
        # vecMax's cell names the kernel where it ran at chapter 00's ceiling (labs.vecmax.against_read_ceiling)
        assert re.match(r"<b>\d+%</b> of \w|no fraction: (the|vecMax at the) \w|no ceiling measured", fraction_cell), (
            fraction_cell
        )
    # whole words: a stale recording's files (provenance.py) may hold the letters
    assert not re.search(r"\b(None|nan|NaN)\b", summary), re.search(r".{60}\b(None|nan|NaN)\b.{20}", summary)


def test_summary_rows_agree_with_their_chapters_headlines(replay_report):
    """Issue 26 (4): no fraction of a ceiling above 100%, every row names its ceiling, and chapter
    04's row quotes the fastest kernel at the largest N measured, as its headline does."""
    out, _ = replay_report
    for chapter in catalog.discover():
        card = json.loads((out / "data" / chapter.id / "scorecard.json").read_text())
        assert card["fraction_of_ceiling"] is None or card["fraction_of_ceiling"] <= 1.0, (chapter.id, card)
        assert card["fraction_of_ceiling"] is None or card["ceiling"], chapter.id
    heads = json.loads((out / "data" / "04_blocking_factor" / "summary.json").read_text())
    by_n = {int(h["key"].rsplit("_n", 1)[1]): h for h in heads if h["key"].startswith("best_fraction_of_ceiling_n")}
    card = json.loads((out / "data" / "04_blocking_factor" / "scorecard.json").read_text())
    assert by_n, "chapter 04 records its fastest kernel at each N of the sweep"
    largest = by_n[max(by_n)]
    assert f"N = {max(by_n):,}" in card["best"] and largest["rows"]["variant"] in card["best"], card["best"]
    assert card["fraction_of_ceiling"] == pytest.approx(largest["value"])
    card02 = json.loads((out / "data" / "02_coalescing" / "scorecard.json").read_text())
    assert "read-only" in card02["ceiling"] and "copy bandwidth (vecMax)" not in card02["ceiling"]


def _flat(text: str) -> str:
    return re.sub(r"[\s\-\u00ad]+", "", text)


def test_the_pdf_holds_every_chapter_and_every_table_header(replay_report):
    """The PDF has the HTML's content: every chapter's title and the text of every table header
    (a column cut at the right margin would lose its header), page numbers, no printed UI."""
    if not pdf_tools():
        pytest.skip("Chromium or pdftotext is not installed (Debian: apt-get install chromium poppler-utils)")
    out, _ = replay_report
    pdf = out / "report.pdf"
    assert pdf.is_file(), "Chromium is installed, so --format html,pdf must write report.pdf"
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = _flat(text)
    page = (out / "report.html").read_text()
    for chapter in catalog.discover():
        assert _flat(chapter.title.split(":")[0]) in flat, chapter.id
    heads = {
        html_lib.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", page, re.S)
    }
    heads = {h for h in heads if len(h) >= 3 and not h.replace(".", "").isdigit()}
    assert len(heads) > 50, "the report's tables were found"
    # A header wrapped over two lines beside another wrapped header comes out of pdftotext
    # interleaved ("speedup over the lab's fraction of the ceiling ... baseline (same run)"): its
    # first line stays whole, its first three words at least. A column cut at the margin loses all.
    missing = sorted(h for h in heads if _flat(h) not in flat and _flat(" ".join(h.split()[:3])) not in flat)
    assert not missing, f"{len(missing)} of {len(heads)} table headers are not in the PDF, e.g. {missing[:5]}"
    pages = int(
        re.search(
            r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
        ).group(1)
    )
    assert f"page 1 of {pages}" in text and f"page {pages} of {pages}" in text, "every page is numbered"
    assert "open_chapter(" not in text and "lab.table(" not in text, "folded code is not printed"
    cells = re.findall(r"<t[dh][^>]*>\s*(nan|NaN|None|<NA>|&lt;NA&gt;)\s*</t[dh]>", page)
    assert not cells, f"{len(cells)} table cells show a missing value as {cells[0]!r}, not 'not published' or '–'"


# What a widget leaves in a static document, and the explorer's own cells: none belongs in a report.
WIDGET_TRACES = ("Loading widget", "could not be displayed", "cudalab-explore", "explore(lab", "Measure this point")


def test_the_report_is_static_with_no_explorer_left_in_it(replay_report):
    out, _ = replay_report
    texts = {"report.html": (out / "report.html").read_text()}
    if (out / "report.pdf").is_file() and shutil.which("pdftotext"):
        texts["report.pdf"] = subprocess.run(
            ["pdftotext", str(out / "report.pdf"), "-"], capture_output=True, text=True, check=True
        ).stdout
    for name, text in texts.items():
        found = [t for t in WIDGET_TRACES if t in text]
        assert not found, f"{name} shows {found}"
    for nb in (out / "notebooks").glob("*.ipynb"):  # the batch kernels showed no explorer
        outputs = [o for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", [])]
        assert not [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})], nb.name


def test_replayed_tables_are_the_recorded_ones_with_provenance(replay_report):
    out, _ = replay_report
    for chapter in [c.id for c in catalog.discover()]:
        recording = GTX680 / chapter
        prov = json.loads((recording / "provenance.json").read_text())
        for key in ("gpu_name", "driver_version", "cuda_runtime", "cupy", "date_utc", "git_commit", "parameters"):
            assert prov.get(key), f"{chapter} provenance lacks {key}"
        for csv in recording.glob("*.csv"):
            assert (out / "data" / chapter / csv.name).read_bytes() == csv.read_bytes()


def test_a_failing_chapter_is_shown_and_the_rest_still_comes_out(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(GTX680, results / "some-gpu" / "gtx680")
    for csv in (results / "some-gpu" / "gtx680" / "01_block_size").glob("block_sweep.csv"):
        csv.unlink()
    # the chapters before and after the failing one are enough to show the rest comes out
    only = ("--only", "00", "01", "02")
    proc = build(
        "--gpu", "gtx680", "--replay", "--no-pdf", *only, "--results", str(results), "--out", str(tmp_path / "out")
    )
    assert proc.returncode == 1
    assert "FAILED chapters: 01_block_size" in proc.stderr
    html = (tmp_path / "out" / "report.html").read_text()
    assert "This chapter failed" in html and "NoRecordedResults" in html
    assert "00 GPU capabilities" in html and "Copy bandwidth" in html
    summary = json.loads((tmp_path / "out" / "build.json").read_text())["chapters"]
    assert summary["00_gpu_capabilities"]["ok"] and not summary["01_block_size"]["ok"]
    assert summary["02_coalescing"]["ok"], "the chapter after the failing one still comes out"


def _sections(html: str) -> dict[str, str]:
    parts = re.split(r"<div class=.cudalab-chapter-start. id=.(chapter-[\w]+|references).></div>", html)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _headings_and_captions(html: str, occupancy: bool = True) -> str:
    """The text of the headings and table captions; without the occupancy tables' captions,
    which name the GPU each table is computed for (the profile's device among them)."""
    found = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>|<caption[^>]*>(.*?)</caption>", html, re.S)
    return " ".join(
        " ".join(m) for m in found if occupancy or not m[1].strip().startswith("theoretical occupancy per SM")
    )


@pytest.mark.full  # make test-full: every chapter of a second profile replayed
def test_maxwell_team5_headings_and_captions_name_only_its_own_lab_gpus(tmp_path):
    """Each chapter's headings and table captions may name the lab GPUs of that chapter's own
    published tables (and the profile's device: in chapter 00, and in the caption of the occupancy
    table computed for it), never another lab's GPU."""
    from cudalab.chapter.profiles import load_profile

    prof = load_profile("maxwell_team5")
    proc = build("--gpu", "maxwell_team5", "--replay", "--no-pdf", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    sections = _sections((tmp_path / "report.html").read_text())
    all_gpus = {
        t.gpu
        for c in prof.chapters.values()
        if c.published
        for t in (c.published.values() if isinstance(c.published, dict) else [c.published])
    }
    markers = {
        "GeForce GTX 680": "GTX 680",
        "team 5's GPU (compute capability 5.x)": "team 5",
        "CS475 lab GPU (not named)": "CS475",
        "NTHU course cluster GPU (not named)": "NTHU",
    }
    checked = 0
    for chapter_id, cfg in prof.chapters.items():
        own = (
            {t.gpu for t in (cfg.published.values() if isinstance(cfg.published, dict) else [cfg.published])}
            if cfg.published
            else set()
        )
        if chapter_id.startswith("00"):
            own |= {"team 5's GPU (compute capability 5.x)"}
        text = sections.get(f"chapter-{chapter_id}", "")
        labels = _headings_and_captions(text)
        device_free = _headings_and_captions(text, occupancy=False)
        for gpu in all_gpus - own:
            seen = device_free if gpu == "team 5's GPU (compute capability 5.x)" else labels
            assert markers.get(gpu, gpu) not in seen, f"{chapter_id}: a heading or caption names {gpu}"
            checked += 1
    assert checked, "the check compared something"
    assert "References" in sections.get("references", "") and "shared/labs/003_" in sections["references"]


# Put first on a build's PYTHONPATH, this runs at the start of every Python process of the build (the
# build itself and each chapter's papermill kernel) and logs each profile load and YAML read there.
_COUNT_PROFILE_LOADS = """
import os

if os.environ.get("CUDALAB_COUNT_LOADS"):
    import cudalab.chapter.profiles as profiles

    def _counted(what, function):
        def counted(*args, **kwargs):
            with open(os.environ["CUDALAB_COUNT_LOADS"], "a") as log:
                log.write(f"{os.getpid()} {what}\\n")
            return function(*args, **kwargs)

        return counted

    profiles.load_profile = _counted("load_profile", profiles.load_profile)
    profiles._read_yaml = _counted("read_yaml", profiles._read_yaml)
"""


def test_a_build_loads_and_validates_its_profile_once(tmp_path):
    """The build resolves the profile and every notebook reads that resolved file: one load and
    validation per build, none in the chapters' kernels."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_COUNT_PROFILE_LOADS)
    counts = tmp_path / "loads.txt"
    path = os.pathsep.join(p for p in (str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    out = tmp_path / "out"
    proc = build(
        "--gpu", "gtx680", "--replay", "--only", "00", "01", "--no-pdf", "--out", str(out),
        env={"PYTHONPATH": path, "CUDALAB_COUNT_LOADS": str(counts)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line.split() for line in counts.read_text().splitlines()]
    assert [what for _, what in lines].count("load_profile") == 1, lines
    assert len({pid for pid, _ in lines}) == 1, f"a chapter's kernel read the profile's YAML: {lines}"
    summary = json.loads((out / "build.json").read_text())
    assert set(summary["chapters"]) == {"00_gpu_capabilities", "01_block_size"} and summary["ok"]
    for chapter in summary["chapters"]:
        provenance = json.loads((out / "data" / chapter / "provenance.json").read_text())
        assert provenance["profile"] == "gtx680", "the provenance names the profile, not the file"
    assert "profile.json" in summary["files"], "the resolved profile is the build's, removed with it"


# The printed page's text width (A4, 12 mm side margins) in CSS pixels, for a print-media layout.
PRINT_WIDTH_PX = 703


@pytest.mark.browser
def test_printed_tables_fit_the_page_and_narrow_tables_keep_their_header_words(replay_report):
    """In Chromium's print layout of the replayed report, no table runs past the page's text
    width (a cut table loses columns); in tables of five columns or fewer no header word is split
    across lines: they have the room ("iterations", never "iteration" + "s"); and in every table
    the report judged to fit whole words (report/table_fit.py: cudalab-words, cudalab-wide), none
    is split either, but after an _ where the report allowed it ("cuBLAS", never "cuBLA" + "S")."""
    from test_browser_explorer import _chromium, _missing  # tests/ is on the path: its Chromium lookup

    missing = _missing()
    if missing:
        if os.environ.get("CUDALAB_REQUIRE_BROWSER"):
            pytest.fail(f"CUDALAB_REQUIRE_BROWSER is set but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    out, _ = replay_report
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": PRINT_WIDTH_PX, "height": 1000})
            page.emulate_media(media="print")
            page.goto((out / "report.html").resolve().as_uri())
            found = page.evaluate(
                """() => {
                  const right = document.body.getBoundingClientRect().right, over = [], split = [];
                  let marked = 0;
                  for (const t of document.querySelectorAll('.jp-RenderedHTMLCommon table')) {
                    const heads = [...t.querySelectorAll('thead tr:first-child > *')];
                    const name = heads.map(h => h.textContent.trim()).join(' | ');
                    if (t.getBoundingClientRect().right > right + 1) over.push(name);
                    const fits = t.classList.contains('cudalab-words') || t.classList.contains('cudalab-wide');
                    marked += fits;
                    if (heads.length > 5 && !fits) continue;
                    for (const th of t.querySelectorAll('thead th')) {
                      // where the report put <wbr> after each _, a line may end there
                      const at = th.querySelector('wbr') ? /\\s+|(?<=_)/ : /\\s+/;
                      const words = th.textContent.trim().split(at).filter(Boolean);
                      if (!words.length) continue;  // the index's empty corner
                      const range = document.createRange();
                      range.selectNodeContents(th);
                      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                      if (lines.size > words.length) split.push(th.textContent.trim());
                    }
                  }
                  const tables = document.querySelectorAll('.jp-RenderedHTMLCommon table').length;
                  return {over, split, tables, marked};
                }"""
            )
        finally:
            browser.close()
    assert found["tables"] > 20, found  # the chapters' tables were laid out
    assert found["over"] == [], f"tables wider than the printed page: {found['over']}"
    assert found["split"] == [], f"header words split in tables with the room: {found['split']}"
    assert found["marked"] > found["tables"] // 2, "most of the chapters' tables keep whole header words"


# ---- one list of build options


def test_the_command_line_gives_every_build_option_once_and_its_defaults_are_the_options_defaults():
    """``BuildOptions`` is the one list: the face maps its arguments onto it, and with no argument
    the result is ``BuildOptions()`` (the terminal's progress bar aside)."""
    import dataclasses

    sys.path.insert(0, str(ROOT))
    import build_report
    from cudalab.report.options import BuildOptions

    parsed = build_report.options(build_report.parse_args([]))
    assert dataclasses.replace(parsed, progress_bar=False) == BuildOptions()
    chosen = build_report.options(
        build_report.parse_args(["--only", "01", "--quick", "--format", "html", "--workers", "2", "--handout"])
    )
    assert chosen.only == ("01",) and chosen.quick and not chosen.pdf and chosen.workers == 2 and chosen.handout


def test_an_option_that_does_not_exist_is_a_clear_error():
    from cudalab.core.errors import CudalabError
    from cudalab.report.options import BuildOptions

    assert BuildOptions().with_changes(only=["01"]).only == ("01",)
    with pytest.raises(CudalabError, match="no build option onyl; options: answers, cell_timeout"):
        BuildOptions().with_changes(onyl=["01"])


# ---- relative paths (issue 65, item 7)


def test_the_face_makes_every_folder_it_is_given_absolute_before_any_work(tmp_path, monkeypatch):
    """The bug: ``--cases ../cases`` reached the submissions' processes as it was typed, and each of
    them runs in a temporary home of its own (grading/isolate.py), where it named nothing. The
    face makes each folder absolute once, against the folder it was started in."""
    sys.path.insert(0, str(ROOT))
    import build_report

    here = tmp_path / "work" / "here"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    args = build_report.parse_args(
        ["--grade", "../class", "--cases", "../cases", "--kernels", "mine", "--results", "../../rec"]
    )
    build_report._absolute(args)
    assert args.grade == tmp_path / "work" / "class" and args.cases == tmp_path / "work" / "cases"
    assert args.kernels == here / "mine" and args.results == tmp_path / "rec"
    assert args.out == here / "build" / "grade-class", "--grade's default --out, from where it was started"
    assert build_report.options(args).kernels == here / "mine"


def test_a_class_graded_with_relative_paths_reaches_its_cases(tmp_path, monkeypatch):
    """The bug: ``--grade class --cases ../cases --out out`` failed every case of every submission,
    the reference's included (``FileNotFoundError: ... '..c01.in'``): the cases, the staged copies
    and the answers' folder were handed to each submission's process as relative paths, and that
    process runs in a folder of its own. Here a stand-in for that process (no GPU needed) reads
    each case it is given and writes the right answer where it is told, from its own folder."""
    from dataclasses import replace

    from cudalab.chapter import declarations
    from cudalab.grading import cases, grade
    from cudalab.labs.fw import nthu

    sys.path.insert(0, str(ROOT))
    import build_report

    work = tmp_path / "work"
    (work / "class" / "a").mkdir(parents=True)
    (work / "class" / "a" / "fw_blocked.cu").write_text((ROOT / "kernels_cu" / "fw_blocked.cu").read_text())
    (work / "cases").mkdir()
    (work / "expected").mkdir()
    kind = cases.kind_of(declarations.of("04_blocking_factor").yours[0].cases.kind)
    for name, v in (("c01.in", 12), ("c02.in", 20)):
        nthu.write_case(work / "cases" / name, v, nthu.generate_case(v, 0.3, seed=v))
        (work / "expected" / f"{name}.out").write_bytes(kind.expected(work / "cases" / name))
    worker = tmp_path / "stand_in_worker.py"
    worker.write_text(
        "import json, os, shutil, sys\n"
        "events = os.fdopen(int(os.environ['CUDALAB_EVENTS_FD']), 'w', buffering=1)\n"
        "request = json.loads(sys.stdin.read())\n"
        "def say(**event):\n"
        "    print(json.dumps(event), file=events, flush=True)\n"
        "if request.get('ceiling'):\n"
        "    say(event='ceiling', name=request['ceiling'], value=4.0e12)\n"
        "for i, _ in enumerate(request['points']):\n"
        "    say(event='start', index=i)\n"
        "    folder = request.get('folder')\n"
        "    if folder and not os.path.isdir(folder):\n"
        "        say(event='point', index=i, status='failed', reason=f'no staged folder {folder}')\n"
        "    else:\n"
        "        say(event='point', index=i, status='measured', time_ms=10.0, last_timed=0)\n"
        "for j, (case, answer) in enumerate(request.get('cases') or []):\n"
        "    index = len(request['points']) + j\n"
        "    say(event='start', index=index)\n"
        "    try:\n"
        "        open(case, 'rb').read()\n"
        f"        shutil.copyfile(os.path.join({str(work / 'expected')!r}, os.path.basename(case) + '.out'), answer)\n"
        "        say(event='point', index=index, status='solved', reason='', time_ms=1.0)\n"
        "    except OSError as exc:\n"
        "        say(event='point', index=index, status='failed', reason=f'{type(exc).__name__}: {exc}')\n"
    )
    seen = {}
    real = grade.grade

    def stand_in(options, log):
        seen["options"] = options
        graded = real(replace(options, measure=True, worker=(str(worker),)), log)
        seen["board"] = graded.scoreboard
        return graded

    def every_measured_point_right(task, result, run_seed, folder, expected):  # the judging: tests/test_verdicts.py
        for p in result["points"]:
            if p.get("status") == "measured":
                p.update(status="ok", reason="")
                p.pop("last_timed", None)

    monkeypatch.setattr(grade, "grade", stand_in)
    monkeypatch.setattr(grade.trials, "judge_task", every_measured_point_right)
    here = work / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    status = build_report.main(["--grade", "../class", "--cases", "../cases", "--only", "04", "--out", "out"])
    assert status == 0
    options = seen["options"]
    assert options.submissions.is_absolute() and options.cases.is_absolute() and options.out.is_absolute()
    board = seen["board"]
    solved = board[board["point"].astype(str).str.contains("c0")]
    assert len(solved) == 2, board[["student", "point", "status", "reason"]]
    assert list(solved["status"]) == ["ok", "ok"], solved[["point", "status", "reason"]].to_string()
    assert not board["reason"].astype(str).str.contains("FileNotFoundError|no staged folder").any()
    assert (here / "out" / "scoreboard.csv").is_file()
