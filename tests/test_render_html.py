"""The report's HTML is nbconvert's, less two costly passes done another way (``stitch.render_html``):
what a reader gets must be what nbconvert's own HTMLExporter gives, element for element."""

import base64

import nbformat
from bs4 import BeautifulSoup

from cudalab.report import stitch

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")).decode()


def _book() -> nbformat.NotebookNode:
    """A notebook with every kind of cell and output a chapter shows, and code whose highlighting
    holds what must be escaped (``<``, ``&``, quotes)."""
    code = nbformat.v4.new_code_cell('x = a < b & c  # "quoted" \'too\'\nprint(f"{x!r}")')
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="1 < 2 & 3\n"),
        nbformat.v4.new_output("stream", name="stderr", text="warning\n"),
        nbformat.v4.new_output(
            "display_data", data={"text/html": "<table><tr><th>n</th><td>1</td></tr></table>", "text/plain": "t"}
        ),
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1),
        nbformat.v4.new_output("error", ename="ValueError", evalue="bad <n>", traceback=["ValueError: bad <n>"]),
    ]
    book = nbformat.v4.new_notebook()
    book.cells = [
        nbformat.v4.new_markdown_cell("# Title\n\nText with <b>markup</b> and an image: <img src='x.png'>"),
        code,
        nbformat.v4.new_code_cell("pass"),
    ]
    book.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    return book


def _nbconverts(book: nbformat.NotebookNode) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="cudalab", extra_template_basedirs=[str(stitch.TEMPLATES)])
    exporter.embed_images = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(book, resources={"metadata": {"name": "t"}})
    return body


def _parsed(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_the_report_html_is_nbconverts_element_for_element(tmp_path):
    book = _book()
    ours = _parsed(stitch.render_html(book, tmp_path / "r.html", "t").read_text())
    theirs = _parsed(stitch.fit_tables(_nbconverts(book)))
    assert len(ours.select("div[tabindex='0']")) == len(theirs.select("div[tabindex='0']")) >= 8
    assert [i.get("alt") for i in ours.select("img")] == [i.get("alt") for i in theirs.select("img")]
    assert ours.select("img")[-1]["alt"] == stitch.NO_ALT_TEXT
    assert ours.select_one("pre").get_text() == theirs.select_one("pre").get_text()
    assert str(ours) == str(theirs)


def test_each_figure_says_which_it_is_by_its_section_and_chapter(tmp_path):
    """A figure's alt text names the section it is drawn in and its chapter; one drawn before any
    heading names the chapter; an alt text the notebook gave is kept."""
    chapter = nbformat.v4.new_notebook()
    early, late, given = (nbformat.v4.new_code_cell("plot()") for _ in range(3))
    early.outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG})]
    late.outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG})]
    given.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG}, metadata={"image/png": {"alt": "own <words>"}})
    ]
    chapter.cells = [early, nbformat.v4.new_markdown_cell("Text\n\n## Where the time goes\n\nMore"), late, given]
    nbformat.write(chapter, tmp_path / "ch.ipynb")
    outcome = stitch.ChapterOutcome(id="09_x", title="09 A chapter", notebook=tmp_path / "ch.ipynb", ok=True)
    book = stitch.stitch([outcome], nbformat.v4.new_markdown_cell("cover"))
    page = _parsed(stitch.render_html(book, tmp_path / "r.html", "t").read_text())
    assert [i["alt"] for i in page.select("img")] == [
        "Figure: 09 A chapter",
        "Figure: Where the time goes, in 09 A chapter",
        "own <words>",
    ]
