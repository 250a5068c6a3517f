"""Printed tables: which may keep whole header words, estimated from their text before printing.

In print, a table's header may break anywhere (CSS ``overflow-wrap: anywhere``), so that a wide
table keeps every column on the page. That also splits words where they would have fitted
("cuBLA" + "S"). Here each table of the report is sized from its text, as a browser sizes a table
at its narrowest: a column is as wide as its longest word (header or cell), or its whole text
where it may not wrap (the index). A table whose whole words fit the printed width at the
report's print size gets the class ``cudalab-words``; one that fits only in the smaller print,
``cudalab-wide``; one that fits only where its header words may also break after an _
(``speedup_vs_`` + ``previous``) gets those breaks too; the others keep breaking anywhere. The widths per character are a wide
sans-serif's, bold for headers, with room to spare: a table wrongly judged to fit would lose
columns at the margin, which is worse than a split word (the browser test lays the report out
and checks both).

A table already marked (``plots.styled(..., whole_header_words=True)``) is left as it is.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag

# The printed page's text width in CSS pixels (A4, 12 mm side margins), less room to spare.
PRINT_WIDTH_PX = 703
SPARE = 0.92
# The print sizes of the report's CSS (index.html.j2): 7 pt and the small print's 6.2 pt, in CSS
# pixels, with each size's horizontal padding per cell (at 7 pt a header's: the widest).
PRINT_SIZES = {"cudalab-words": (7 * 4 / 3, 14.0), "cudalab-wide": (6.2 * 4 / 3, 12.0)}
# Average advance of a character, in ems: bold headers, regular cells (DejaVu Sans is about 0.62
# and 0.68; Liberation Sans and Arial narrower).
HEADER_EM = 0.70
CELL_EM = 0.64
MARKED = {"cudalab-words", "cudalab-wide"}


_AFTER_UNDERSCORE = re.compile(r"(?<=_)(?=[^_\s])")


def _narrowest(cell: Tag, em: float, font_px: float, underscores: bool = False) -> float:
    """The narrowest a cell can be laid out: its longest word, or all of it where it may not wrap
    (the index's cells, ``white-space: nowrap`` in print); with ``underscores``, a header word may
    also break after each _ (``speedup_vs_`` + ``previous``)."""
    text = cell.get_text(" ", strip=True)
    if not text:
        return 0.0
    if cell.name == "th" and cell.find_parent("tbody") is not None:
        return len(text) * em * font_px
    words = text.split()
    if underscores and cell.find_parent("thead") is not None:
        words = [part for word in words for part in _AFTER_UNDERSCORE.split(word)]
    return max(len(word) for word in words) * em * font_px


def _columns(table: Tag) -> list[list[Tag]]:
    """Each column's cells (header and body), by position in their row; a cell spanning several
    columns is left out (its words spread over them)."""
    columns: list[list[Tag]] = []
    for row in table.find_all("tr"):
        at = 0
        for cell in row.find_all(["th", "td"], recursive=False):
            span = int(cell.get("colspan", 1) or 1)
            if span == 1:
                while len(columns) <= at:
                    columns.append([])
                columns[at].append(cell)
            at += span
    return columns


def narrowest_width(table: Tag, font_px: float, padding_px: float, underscores: bool = False) -> float:
    """The estimated narrowest width of ``table`` (CSS pixels) with whole words in every cell, at a
    font of ``font_px`` and ``padding_px`` of horizontal padding per cell (``underscores``: header
    words may break after an _)."""
    width = 0.0
    for cells in _columns(table):
        widest = max(
            _narrowest(c, HEADER_EM if c.find_parent("thead") is not None else CELL_EM, font_px, underscores)
            for c in cells
        )
        width += widest + padding_px
    return width


def fit_class(table: Tag, underscores: bool = False) -> str:
    """``cudalab-words`` where the table's whole words fit the printed page at the print size,
    ``cudalab-wide`` where they fit only in the small print, or '' (headers may break anywhere).
    ``underscores``: as if its header words could break after each _."""
    for name, (font_px, padding_px) in PRINT_SIZES.items():
        if narrowest_width(table, font_px, padding_px, underscores) <= PRINT_WIDTH_PX * SPARE:
            return name
    return ""


def _break_header_underscores(table: Tag) -> None:
    """Let ``table``'s header words break after each _ (``<wbr>``: nothing is added to the text a
    reader copies), as the report's cells already do for long kernel names."""
    soup = BeautifulSoup("", "html.parser")
    for cell in table.select("thead th"):
        for text in list(cell.find_all(string=True)):
            parts = _AFTER_UNDERSCORE.split(str(text))
            if len(parts) < 2:
                continue
            pieces = []
            for i, part in enumerate(parts):
                if i:
                    pieces.append(soup.new_tag("wbr"))
                pieces.append(NavigableString(part))
            text.replace_with(*pieces)


_TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.S)
_OPENING = re.compile(r"<table\b[^>]*>")
_CLASS = re.compile(r"""\bclass\s*=\s*(["'])(.*?)\1""", re.S)


def _with_class(opening: str, name: str) -> str:
    """A table's opening tag with the class ``name`` added."""
    found = _CLASS.search(opening)
    if found:
        return opening[: found.start(2)] + f"{found.group(2)} {name}".strip() + opening[found.end(2) :]
    return opening[: -len(">")].rstrip("/ ") + f' class="{name}">'


def fit_tables(html: str) -> str:
    """The report's HTML with each table not already marked classed by ``fit_class``. Only the
    tables change (their opening tags; and the headers of one that fits only with its header words
    broken at each _): each table is parsed on its own (the report's tables do not nest), and the
    rest of the document, embedded figures included, is left byte for byte."""

    def classed(match: re.Match[str]) -> str:
        text = match.group(0)
        table = BeautifulSoup(text, "html.parser").find("table")
        if table is None or MARKED & set(table.get("class") or []):
            return text
        name = fit_class(table)
        if not name:  # too wide for whole words: perhaps with its header words broken at each _
            name = fit_class(table, underscores=True)
            if not name:
                return text
            _break_header_underscores(table)
            table["class"] = [*(table.get("class") or []), name]
            return str(table)
        opening = _OPENING.match(text)
        assert opening is not None  # the pattern that found the table starts with it
        return _with_class(opening.group(0), name) + text[opening.end() :]

    return _TABLE.sub(classed, html)
