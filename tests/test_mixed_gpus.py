"""A report whose chapters ran on different GPUs (Dask workers) names each chapter's GPU and is never
presented as one GPU's; the GPU's UUID is formatted as nvidia-smi prints it."""

import json

import nbformat

from cudalab.core.provenance import _uuid_text
from cudalab.report.stitch import ChapterOutcome, cover_cell, stitch

H100 = {"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": "GPU-11111111-2222-3333-4444-555555555555"}
H100_B = {"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": "GPU-aaaaaaaa-2222-3333-4444-555555555555"}
H200 = {"gpu_name": "NVIDIA H200", "gpu_uuid": "GPU-99999999-2222-3333-4444-555555555555"}


def _outcomes(tmp_path, *provenances):
    outcomes = []
    for i, prov in enumerate(provenances):
        nb = tmp_path / f"0{i}.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# chapter {i}")]), nb)
        outcomes.append(ChapterOutcome(f"0{i}_c", f"0{i} Chapter {i}", nb, True, "", 1.0, dict(prov, date_utc="2026")))
    return outcomes


def _cover(outcomes):
    return cover_cell(
        title="t", profile="h100", lab_gpu="GTX 680", mode="measure", built_utc="now", command="c", outcomes=outcomes
    ).source


def test_one_gpu_is_named_with_its_uuid_and_no_mixed_warning(tmp_path):
    cover = _cover(_outcomes(tmp_path, H100, H100))
    assert H100["gpu_uuid"] in cover and "different GPU models" not in cover and "<th>GPU</th>" not in cover


def test_two_cards_of_one_model_read_as_one_model_with_the_cards_in_the_details(tmp_path):
    """The first page speaks to people: the model and how many of its cards; the UUIDs are in the
    folded provenance block, not in the contents."""
    cover = _cover(_outcomes(tmp_path, H100, H100_B))
    assert "NVIDIA H100 80GB HBM3, 2 cards of it (each chapter ran on one)" in cover and "<th>GPU</th>" not in cover
    details = cover[cover.index("<details>") :]
    assert H100["gpu_uuid"] in details and H100_B["gpu_uuid"] in details
    assert H100["gpu_uuid"] not in cover[: cover.index("<details>")]


def test_chapters_on_different_models_are_never_shown_as_one_gpus_report(tmp_path):
    outcomes = _outcomes(tmp_path, H100, H200)
    cover = _cover(outcomes)
    assert "2 different GPU models" in cover and "<th>GPU</th>" in cover
    assert "NVIDIA H200" in cover and "NVIDIA H100 80GB HBM3" in cover
    book = json.dumps(stitch(outcomes, nbformat.v4.new_markdown_cell(cover)))
    assert f"<b>This chapter's numbers come from NVIDIA H200 ({H200['gpu_uuid']})</b>" in book
    assert f"numbers come from NVIDIA H100 80GB HBM3 ({H100['gpu_uuid']})" in book


def test_uuid_bytes_are_formatted_as_nvidia_smi_prints_them():
    raw = bytes.fromhex("0123456789abcdef0123456789abcdef")
    assert _uuid_text(raw) == "GPU-01234567-89ab-cdef-0123-456789abcdef"
    assert _uuid_text(b"short") is None and _uuid_text(None) is None


def test_chapters_on_another_model_than_chapter_00_are_told_whose_ceilings_they_use(tmp_path):
    from cudalab.report.build import _ceilings_elsewhere

    outcomes = _outcomes(tmp_path, H100, H200, H100_B)
    outcomes[0].id = "00_gpu_capabilities"
    notes = _ceilings_elsewhere(outcomes)
    assert len(notes) == 1 and notes[0].startswith("01_c ran on another GPU model") and "02_c" not in notes[0]
    assert _ceilings_elsewhere(_outcomes(tmp_path, H100, H100_B)) == []
