"""Handouts and answer keys: what a student gets holds no measured number; the key does, and its
model answers are written from the run's own data."""

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudalab.chapter import catalog
from cudalab.core.paths import ROOT
from cudalab.report.handout import questions

CHAPTERS = ("00", "01", "06")  # 06: the longest kernel listings, whose headers once logged times


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from tests.shared_builds import built_once

    return built_once(tmp_path_factory, "handout-gtx680", _build_handouts)[0]


def _build_handouts(out: Path) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "build_report.py"),
            "--gpu",
            "gtx680",
            "--replay",
            "--format",
            "html",
            "--handout",
            "--answers",
            "--only",
            *CHAPTERS,
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {}


def _text(path):
    page = path.read_text()
    page = re.sub(r"<(style|script)[^>]*>.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _measured_figures(out, chapter_id):
    """The numbers with units in the chapter's recorded headlines: what this run measured."""
    figures = set()
    for h in json.loads((out / "data" / chapter_id / "summary.json").read_text()):
        figures |= set(re.findall(r"\d[\d,]*\.\d+ ?(?:GB/s|T relaxations/s|ms|s|x)\b", h["text"]))
    return figures


@pytest.mark.slow
def test_the_handout_holds_no_measured_number_and_the_key_does(built):
    for chapter in catalog.select(list(CHAPTERS)):
        handout = _text(built / "handout" / f"{chapter.id}.html")
        key = _text(built / "answers" / f"{chapter.id}.html")
        figures = _measured_figures(built, chapter.id)
        assert figures, f"{chapter.id}: the test found measured figures to look for"
        leaked = sorted(f for f in figures if f in handout)
        assert not leaked, f"{chapter.id}: the handout shows measured results {leaked[:5]}"
        assert sum(f in key for f in figures) >= len(figures) // 2, (
            f"{chapter.id}: the answer key lacks this run's results"
        )
        qs = questions(json.loads(chapter.path.read_text()))
        answers = json.loads((built / "data" / chapter.id / "answers.json").read_text())
        assert sorted(answers, key=int) == [str(i) for i in range(1, len(qs) + 1)], "one model answer per question"
        for text in answers.values():
            assert text[:60].split(" (")[0] in key  # every model answer is in the key ...
            assert text[:60].split(" (")[0] not in handout  # ... and none in the handout
        assert (
            handout.count("Discussion questions") == 1
            and "cudalab-blank" in (built / "handout" / f"{chapter.id}.html").read_text()
        )
        assert "Listing: kernels_cu/" in handout or chapter.id.startswith("00"), "the kernels are listed"
    whole = _text(built / "handout" / "handout.html")
    assert all(c.title.split(":")[0] in whole for c in catalog.select(list(CHAPTERS)))
    files = json.loads((built / "build.json").read_text())["files"]
    assert "handout/handout.html" in files and "answers/answers.html" in files, "the build lists what it wrote"


# A number with a unit of time or rate, as a measurement states it ("0.387 ms", "2,965 GB/s").
MEASURED = re.compile(
    r"\b\d[\d,]*(?:\.\d+)?\s*(?:ms|us|µs|ns|seconds?|GB/s|TB/s|MB/s|GFLOP/s|TFLOP/s|GFLOPS|TFLOPS|T/s|"
    r"relaxations/s|points/s)(?![\w/])"
)


@pytest.mark.slow
def test_a_students_handout_states_no_time_or_rate_at_all(built):
    """Not this run's numbers only: no number with a unit of time or rate anywhere in a handout,
    kernel listings included (a header's measurement log would hand over an answer)."""
    for path in sorted((built / "handout").glob("*.html")):
        found = sorted(set(MEASURED.findall(_text(path))))
        assert not found, f"{path.name} states {found[:8]}"


def test_a_handout_lists_the_students_kernels_and_whole_tables_and_the_key_fills_them(built):
    """Issue 42: the kernels the chapter declares for the student in full, the others named by
    file; every configuration of each declared table (no "first 12 of"); the answer key's cells
    hold the run's values where the handout's are blank."""
    import pandas as pd

    from cudalab.chapter import declarations

    for chapter in catalog.select(list(CHAPTERS)):
        declared = declarations.of(chapter).handout
        handout = _text(built / "handout" / f"{chapter.id}.html")
        key_html = (built / "answers" / f"{chapter.id}.html").read_text()
        for kernel in declared.kernels:
            assert f"Listing: kernels_cu/{kernel}" in handout, (chapter.id, kernel)
        listed = set(re.findall(r"Listing: kernels_cu/(\S+)", handout))
        assert listed <= set(declared.kernels) or not declared.kernels, (chapter.id, listed)
        assert "first 12 of" not in handout and "configurations; the profile's grid" not in handout
        axes = json.loads((built / "data" / chapter.id / "provenance.json").read_text())["axes"]
        for table in declared.tables:
            frame = pd.read_csv(built / "data" / chapter.id / f"{table}.csv")
            configs = len(frame[axes[table]].drop_duplicates())
            assert re.search(rf"Table {table} ?, all {configs} configurations", handout), (chapter.id, table)
        assert "class='cudalab-blank'" not in key_html and "class='cudalab-value'" in key_html, chapter.id
    chapter_06 = _text(built / "handout" / "06_kmeans_device_update.html")
    assert "km_07_tensor_scores.cu" in chapter_06 and "Listing: kernels_cu/km_07" not in chapter_06


@pytest.mark.slow
@pytest.mark.full  # make test-full: every chapter's handout printed by Chromium
def test_every_chapter_handout_prints_on_six_a4_pages_at_most(tmp_path_factory):
    """A teacher prints a chapter: six A4 pages at most, every chapter (PDF, where Chromium is here)."""
    import shutil

    from cudalab.report.stitch import find_browser

    if not shutil.which("pdfinfo"):
        pytest.skip("poppler-utils is not installed")
    if find_browser() is None:  # asked before the minute-long build, not after it
        pytest.skip("Chromium is not installed: no PDF to count")
    from tests.shared_builds import replay_gtx680

    out, result = replay_gtx680(tmp_path_factory, pdf=True)  # the report's tests read the same build
    pdfs = sorted((out / "handout").glob("[0-9]*.pdf"))
    assert len(pdfs) == len(catalog.discover()), result["stderr"][-3000:]
    for pdf in pdfs:
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
        pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
        assert pages <= 6, f"{pdf.name}: {pages} pages"


def test_handouts_and_keys_hold_no_explorer(built):
    for path in [*(built / "handout").glob("*.html"), *(built / "answers").glob("*.html")]:
        page = path.read_text()
        found = [t for t in ("Loading widget", "could not be displayed", "cudalab-explore", "explore(lab") if t in page]
        assert not found, f"{path.name} shows {found}"


@pytest.mark.parametrize("chapter", catalog.discover(), ids=lambda c: c.id)
def test_every_chapter_asks_three_to_five_questions_and_answers_each_from_data(chapter):
    nb = json.loads(chapter.path.read_text())
    qs = questions(nb)
    assert 3 <= len(qs) <= 5, f"{chapter.id}: {len(qs)} discussion questions"
    code = "".join("".join(c["source"]) for c in nb["cells"] if "answers" in c.get("metadata", {}).get("tags", []))
    numbers = {int(n) for n in re.findall(r"lab\.answer\(\s*(\d+),", code)}
    assert numbers == set(range(1, len(qs) + 1)), f"{chapter.id}: answers for {sorted(numbers)} of {len(qs)} questions"
    assert "{" in code, "model answers quote the run's data (f-strings), not typed text"


def test_questions_are_the_numbered_items_of_the_tagged_cell():
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {"tags": ["questions"]},
                "source": ["## Q\n", "\n", "1. Why is\n", "   it slow?\n", "2. What binds?\n"],
            },
            {"cell_type": "markdown", "metadata": {}, "source": ["1. not a question\n"]},
        ]
    }
    assert questions(nb) == ["Why is it slow?", "What binds?"]
