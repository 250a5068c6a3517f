"""The chapter notebooks: committed clean, parameterized, and discoverable in order."""

import json

import pytest

from cudalab.chapter import catalog
from cudalab.core.paths import NOTEBOOKS_DIR

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
REQUIRED = ["00_gpu_capabilities", "01_block_size"]


def test_chapters_in_order():
    ids = [c.id for c in catalog.discover()]
    assert ids == sorted(ids)
    assert ids[: len(REQUIRED)] == REQUIRED
    assert catalog.discover()[1].title.startswith("01 Block size")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs_and_with_parameters(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code), "strip the outputs"
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    params = catalog.ChapterInfo(path.stem, path.stem[:2], "", path).parameter_types()
    assert {"profile", "mode", "data_dir", "recorded_dir"} <= set(params)
    assert all(t != "None" for t in params.values()), f"annotate every parameter with its type: {params}"


def test_select_by_number_name_and_prefix():
    assert [c.id for c in catalog.select(["1"])] == ["01_block_size"]
    assert [c.id for c in catalog.select(["01_block_size", "00"])] == ["00_gpu_capabilities", "01_block_size"]
    assert len(catalog.select(None)) == len(NOTEBOOKS)
    with pytest.raises(ValueError, match="unknown chapter '42'"):
        catalog.select(["42"])


@pytest.mark.slow
@pytest.mark.skipif(
    __import__("cudalab.core.gpu", fromlist=["x"]).gpu_available(), reason="replays; a GPU would measure"
)
def test_a_notebook_runs_top_to_bottom_with_its_defaults(tmp_path):
    """As in JupyterLab: no parameters injected; without a GPU it replays the default profile's recording."""
    import papermill

    out = tmp_path / "01.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOKS_DIR / "01_block_size.ipynb"),
        str(out),
        kernel_name="python3",
        cwd=str(NOTEBOOKS_DIR),
        progress_bar=False,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    text = out.read_text()
    assert "Data: replayed." in text and "What the lab measured." in text
    # nobody set a parameter: the banner complains of none (issue 42, item 8)
    assert "Not shown as requested" not in text
