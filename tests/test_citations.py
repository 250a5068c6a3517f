"""Published numbers as cited data: every lab figure in a profile traces to the lab's own words."""

import json
import re

import pytest

from cudalab.chapter.profiles import ProfileError, available_profiles, load_profile
from cudalab.core.paths import NOTEBOOKS_DIR, ROOT

LABS = ROOT.parent / "shared" / "labs"
PROFILES = {name: load_profile(name) for name in available_profiles()}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _digits(value) -> str:
    """The significant digits of a number as a lab would print them: 41100.0 -> '411', 6113.4 -> '61134'."""
    text = f"{value:.10g}" if isinstance(value, (int, float)) else str(value)
    return re.sub(r"\D", "", text.split("e")[0]).strip("0") or "0"


def _published(profile):
    for chapter_id, cfg in profile.chapters.items():
        tables = cfg.published if isinstance(cfg.published, dict) else {"": cfg.published} if cfg.published else {}
        for name, table in tables.items():
            yield f"{profile.name}/{chapter_id}/{name}", table


def _cases():
    """One case per published table or device spec: (lab, [(what, quote, value), ...])."""
    for profile in PROFILES.values():
        for where, table in _published(profile):
            yield pytest.param(
                table.lab,
                [(f"{c['column']}={c['value']}", c["quote"], c["value"]) for c in table.citations()],
                id=where,
            )
        if profile.device and profile.device.cite:
            yield pytest.param(
                profile.device.lab,
                [(field, quote, getattr(profile.device, field)) for field, quote in profile.device.cite.items()],
                id=f"{profile.name}/device",
            )


@pytest.mark.parametrize("lab,cited", list(_cases()))
def test_every_quote_holds_its_value(lab, cited):
    wrong = [f"{what}: {quote!r}" for what, quote, value in cited if _digits(value) not in re.sub(r"\D", "", quote)]
    assert not wrong, "values missing from their own quotes: " + "; ".join(wrong)


@pytest.mark.skipif(not LABS.is_dir(), reason=f"the lab reports are not beside the checkout ({LABS})")
@pytest.mark.parametrize("lab,cited", list(_cases()))
def test_every_quote_is_the_labs_own_words(lab, cited):
    text = _flat((LABS / PROFILES["gtx680"].references[lab].file).read_text())
    missing = [f"{what}: {quote!r}" for what, quote, _ in cited if _flat(quote) not in text]
    assert not missing, f"not in lab {lab}'s report: " + "; ".join(missing)


def test_every_cited_lab_has_a_reference_entry():
    for profile in PROFILES.values():
        labs = {t.lab for _, t in _published(profile)} | (
            {profile.device.lab} if profile.device and profile.device.lab else set()
        )
        assert labs <= set(profile.references), (
            f"{profile.name}: no references entry for {labs - set(profile.references)}"
        )


def _profile(tmp_path, rows: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\nextends: gtx680\nchapters:\n  01_block_size:\n    published:\n"
        "      source: s\n      gpu: g\n      lab: '000'\n      where: w\n      coordinates: [n, block_edge]\n"
        f"      rows:\n{rows}"
    )
    return str(path)


def test_the_validator_refuses_a_published_value_without_a_citation(tmp_path):
    with pytest.raises(ProfileError, match=r"rows\[0\]: speedup_vs_cpu without a citation"):
        load_profile(_profile(tmp_path, "        - {n: 5000, block_edge: 8, speedup_vs_cpu: 17.3}\n"))
    with pytest.raises(ProfileError, match=r"rows\[0\]: time_ms without a citation"):
        load_profile(
            _profile(
                tmp_path,
                "        - {n: 5000, block_edge: 8, speedup_vs_cpu: 17.3, time_ms: 1.0,\n"
                "           cite: {speedup_vs_cpu: 'q'}}\n",
            )
        )
    with pytest.raises(ProfileError, match=r"rows\[0\]: no block_edge \(every row gives each coordinate"):
        load_profile(_profile(tmp_path, "        - {n: 5000, speedup_vs_cpu: 17.3, cite: q}\n"))
    with pytest.raises(ProfileError, match=r"inferred: gpu_clock is not a coordinate"):
        load_profile(
            _profile(
                tmp_path,
                "        - {n: 5000, block_edge: 8, speedup_vs_cpu: 17.3, cite: q,\n"
                "           inferred: {gpu_clock: guess}}\n",
            )
        )
    ok = load_profile(
        _profile(
            tmp_path,
            "        - {n: 5000, block_edge: 8, speedup_vs_cpu: 17.3, cite: q,\n"
            "           inferred: {n: 'for large N'}}\n",
        )
    )
    cited = ok.chapter("01_block_size").published.citations()
    assert cited == [
        {
            "column": "speedup_vs_cpu",
            "value": 17.3,
            "coordinates": {"n": 5000, "block_edge": 8},
            "quote": "q",
            "inferred": {"n": "for large N"},
            "lab": "000",
            "where": "w",
        }
    ]


def test_a_device_number_without_a_citation_is_refused(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("name: d\ndevice: {name: X, source: s, lab: '000', multiprocessors: 8}\n")
    with pytest.raises(ProfileError, match="no citation .* for multiprocessors"):
        load_profile(str(path))


# ---- prose never types a lab's number


def _published_values():
    values = set()
    for profile in PROFILES.values():
        for _, table in _published(profile):
            values |= {c["value"] for c in table.citations() if isinstance(c["value"], (int, float))}
    return values


def _renderings(v: float) -> set[str]:
    """How prose would type a published number: as given, to 1-3 significant digits, ms as s."""
    out = set()
    for x in (v, v / 1e3):
        for digits in (2, 3, 4):
            out.add(f"{x:.{digits}g}")
        for decimals in (1, 2, 3):
            out.add(f"{x:.{decimals}f}")
        if x >= 10:
            out.add(f"{x:.0f}")
    return {r for r in out if r.strip("0.") and len(r.replace(".", "").lstrip("0")) >= 2}


@pytest.mark.parametrize("path", sorted(NOTEBOOKS_DIR.glob("*.ipynb")), ids=lambda p: p.name)
def test_no_notebook_markdown_types_a_published_figure(path):
    typed = {r for v in _published_values() for r in _renderings(v)}
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        # a number with the unit a lab figure carries: 21.1x, 2.18 s, 0.364 s, 6113.4 MB/s, 740 GOPS
        for m in re.finditer(r"(?<![\w.§-])(\d+(?:\.\d+)?)\s?(?:x|s|ms|GB/s|MB/s|GOPS)(?![\w/])", text):
            if m.group(1) in typed:
                found.append(text[max(0, m.start() - 40) : m.end() + 10].replace("\n", " "))
    assert not found, "render lab figures from the profile (lab.cited(...)), not as typed text: " + " | ".join(found)


# ---- nor does a code cell's text, nor a number beside the lab's name


LAB_NAME = re.compile(r"\b(?:lab \d{3}|the lab)\b", re.IGNORECASE)
# a figure: a number with a lab figure's unit (21.1x, 2.18 s, 740 GOPS, 85%)
# (not a shape, "80 x 128", nor a lab's own number, "lab 004")
FIGURE = re.compile(r"(?<![\w.§{-])(?<!lab )(\d+(?:\.\d+)?)\s?(x|s|ms|GB/s|MB/s|GOPS|%)(?![\w/}])(?!\s*\d)")
# the lab's results listed after its name: "lab 001: BF 16, 32 and 64"
LISTED = re.compile(r"\b(?:lab \d{3}|the lab)\s*:\s*[A-Za-z]{0,4}\s*\d", re.IGNORECASE)
NEAR = 30  # characters between a figure and the lab's name that make it the lab's


def _code_text(source: str) -> list[str]:
    """The text a code cell puts in prose: its string literals, f-strings' literal parts included."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def typed_lab_figures(cell: dict, typed: set[str]) -> list[str]:
    """Where a notebook cell types a lab's figure, in Markdown or in a code cell's string
    literals: a figure equal to a published value, a figure within a few words of the lab's name
    ("1.43x in lab 001"), or results listed after it ("lab 001: BF 16, 32 and 64")."""
    source = "".join(cell["source"])
    texts = [source] if cell["cell_type"] == "markdown" else _code_text(source)
    found = []
    for text in texts:
        for m in FIGURE.finditer(text):
            near = text[max(0, m.start() - NEAR) : m.end() + NEAR]
            if m.group(1) in typed or (m.group(2) != "%" and LAB_NAME.search(near)):
                found.append(near.replace("\n", " "))
        found += [text[m.start() : m.end() + 20].replace("\n", " ") for m in LISTED.finditer(text)]
    return found


@pytest.mark.parametrize("path", sorted(NOTEBOOKS_DIR.glob("*.ipynb")), ids=lambda p: p.name)
def test_no_notebook_types_a_lab_figure_in_prose_or_code_text(path):
    typed = {r for v in _published_values() for r in _renderings(v)}
    found = [hit for cell in json.loads(path.read_text())["cells"] for hit in typed_lab_figures(cell, typed)]
    assert not found, "render lab figures from the profile (lab.cited(...)), not as typed text: " + " | ".join(found)


@pytest.mark.parametrize(
    "cell",
    [
        {
            "cell_type": "code",
            "source": ["text = f\"gained {step5:.2f}x here{' against 1.43x in lab 001' if pub else ''}\""],
        },
        {"cell_type": "code", "source": ['line = f"peaks at BF {peak} (lab 001: BF 16, 32 and 64)"']},
        {"cell_type": "markdown", "source": ["Step 5 gained 1.43x in lab 001."]},
        {"cell_type": "markdown", "source": ["the lab reached 2431 GOPS"]},
        {"cell_type": "code", "source": ['display(Markdown("lab 001 took 2.18 s at step 7"))']},
    ],
)
def test_a_typed_lab_figure_is_caught(cell):
    """The old chapter 04 typed "1.43x in lab 001" and "(lab 001: BF 16, 32 and 64)" into its
    f-strings: the check above must catch both, in code text as in Markdown."""
    typed = {r for v in _published_values() for r in _renderings(v)}
    assert typed_lab_figures(cell, typed)


def test_a_cited_figure_and_a_lab_reference_pass():
    typed = {r for v in _published_values() for r in _renderings(v)}
    fine = [
        {"cell_type": "markdown", "source": ["Lab 000 §2.1 explains it; lab 001's step 5 replaced a select."]},
        {"cell_type": "code", "source": ["f\"in lab 001: {lab.cited('time_s', table='lab001_ladder', step=4)} s\""]},
    ]
    assert not [hit for cell in fine for hit in typed_lab_figures(cell, typed)]
