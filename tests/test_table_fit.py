"""The printed report's tables: which keep whole header words, judged from their text (no browser;
the browser test in test_build_report.py lays a real report out and checks the result)."""

import re

import pytest
from bs4 import BeautifulSoup

from cudalab.report import table_fit


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{cls}"' if cls else ""
    return f'<table id="T_1"{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _classes(html: str) -> list[str]:
    return BeautifulSoup(html, "html.parser").find("table").get("class") or []


def test_a_narrow_table_keeps_whole_header_words():
    html = _table(["kernel", "status", "time_ms"], [["mm_00_naive", "ok", "1.234"]])
    assert _classes(table_fit.fit_tables(html)) == ["cudalab-words"]


def test_a_table_that_fits_only_in_small_print_gets_it():
    # nine columns of ten-letter words: past the page at 7 pt, within it at 6.2 pt
    words = ["abcdefghij"] * 9
    html = _table(words, [words])
    assert table_fit.narrowest_width(BeautifulSoup(html, "html.parser").table, 7 * 4 / 3, 8) > 703 * table_fit.SPARE
    assert _classes(table_fit.fit_tables(html)) == ["cudalab-wide"]


def test_a_table_too_wide_for_whole_words_breaks_its_headers_after_underscores_where_that_fits():
    headers = [f"speedup_vs_previous_step_{i}" for i in range(10)]
    html = _table(headers, [["1.0"] * 10])
    out = table_fit.fit_tables(html)
    table = BeautifulSoup(out, "html.parser").table
    assert set(table.get("class")) & table_fit.MARKED
    first = table.find("th")
    assert first.get_text() == "speedup_vs_previous_step_0", "a reader copies the same text"
    assert len(first.find_all("wbr")) == 4, "a break after each _"


def test_a_table_that_fits_no_way_keeps_breaking_anywhere_and_is_left_as_it_was():
    headers = ["x" * 40] * 12  # one long word per column, no _ to break at
    html = _table(headers, [["1"] * 12])
    assert table_fit.fit_tables(html) == html


def test_a_table_already_marked_is_left_as_it_was():
    html = _table(["a", "b"], [["1", "2"]], cls="cudalab-wide")
    assert table_fit.fit_tables(html) == html


def test_the_rest_of_the_document_is_left_byte_for_byte():
    figure = '<img src="data:image/png;base64,iVBORw0KGgo=" alt="x"/><p>a &amp; b <br> c</p>'
    html = f"<html><body>{figure}{_table(['n', 'ms'], [['1', '2']])}<p>after</p>{figure}</body></html>"
    out = table_fit.fit_tables(html)
    assert out.startswith(f"<html><body>{figure}<table") and out.endswith(f"<p>after</p>{figure}</body></html>")
    assert re.search(r'<table id="T_1" class="cudalab-words">', out)


@pytest.mark.parametrize("span", [2, 3])
def test_a_header_spanning_columns_does_not_count_as_one_column(span):
    html = (
        f'<table><thead><tr><th colspan="{span}">a header across columns</th></tr>'
        + "<tr>"
        + "<th>n</th>" * span
        + "</tr></thead><tbody><tr>"
        + "<td>1</td>" * span
        + "</tr></tbody></table>"
    )
    table = BeautifulSoup(html, "html.parser").table
    assert len(table_fit._columns(table)) == span
    assert _classes(table_fit.fit_tables(html)) == ["cudalab-words"]


def test_an_index_cell_counts_whole_as_it_does_not_wrap():
    # in print the index's cells do not wrap: their whole text sets the column's width
    html = "<table><tbody><tr><th>a long index label with many words</th><td>1</td></tr></tbody></table>"
    table = BeautifulSoup(html, "html.parser").table
    at_7pt = table_fit.narrowest_width(table, 7 * 4 / 3, 8)
    assert at_7pt > len("a long index label with many words") * table_fit.CELL_EM * 7 * 4 / 3
