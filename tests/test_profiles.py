import json

import pytest
import yaml

from cudalab.chapter.profiles import (
    RESOLVED,
    ProfileError,
    available_profiles,
    load_profile,
    open_profile,
    profile_for_gpu,
    write_resolved,
)
from cudalab.core.paths import PARAMS_DIR

NOTEBOOKS = {
    "01_block_size": {
        "profile": "str",
        "sizes": "list[int]",
        "block_sizes": "list[int]",
        "cpu_max_n": "int",
        "seed": "int",
    }
}


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", available_profiles())
def test_every_shipped_profile_is_valid(name):
    profile = load_profile(name)
    assert profile.name == name
    assert profile.chapter_params("01_block_size")["block_sizes"]


def test_the_required_profiles_exist():
    assert {"gtx680", "h100", "generic"} <= set(available_profiles())


def test_gtx680_carries_the_labs_published_numbers():
    pub = load_profile("gtx680").chapter("01_block_size").published
    rows = {r["block_edge"]: r for r in pub.rows}
    assert rows[16]["speedup_vs_cpu"] == 21.1 and rows[16]["cpu_time_ms"] == 867700.0
    assert "§3.2" in pub.source and pub.gpu == "GeForce GTX 680"
    assert load_profile("gtx680").device.multiprocessors == 8


def test_extends_inherits_lab_data_but_not_gpu_matching():
    h100 = load_profile("h100")
    assert h100.device.name == "GeForce GTX 680"
    assert h100.chapter("01_block_size").published is not None
    assert h100.chapter_params("01_block_size")["sizes"][:3] == [256, 512, 1024]  # its own grid, not the lab's
    assert load_profile("gtx680").chapter_params("01_block_size")["sizes"][:3] == [250, 500, 1000]
    assert load_profile("generic").match == []


def test_quick_overrides_params():
    p = load_profile("gtx680")
    assert max(p.chapter_params("01_block_size", quick=True)["sizes"]) < max(p.chapter_params("01_block_size")["sizes"])


def test_unknown_profile_lists_available():
    with pytest.raises(ProfileError) as err:
        load_profile("gtx9999")
    assert "unknown profile 'gtx9999'" in str(err.value)
    for name in available_profiles():
        assert name in str(err.value)


def test_missing_file_path(tmp_path):
    with pytest.raises(ProfileError, match="not found"):
        load_profile(str(tmp_path / "nope.yaml"))


def test_malformed_yaml(tmp_path):
    with pytest.raises(ProfileError, match="not valid YAML"):
        load_profile(str(write(tmp_path, "name: [unclosed\n")), notebooks=NOTEBOOKS)


def test_top_level_must_be_mapping(tmp_path):
    with pytest.raises(ProfileError, match="mapping"):
        load_profile(str(write(tmp_path, "- a\n- b\n")), notebooks=NOTEBOOKS)


def test_unknown_top_level_key(tmp_path):
    with pytest.raises(
        ProfileError, match=r"devcie: unknown key \(the keys here: name, description, match, extends, device"
    ):
        load_profile(str(write(tmp_path, "name: x\ndevcie: {}\n")), notebooks=NOTEBOOKS)


@pytest.mark.parametrize(
    "text, says",
    [
        ("device: {name: G, source: s, sms: 8}\n", "device.sms: unknown key (the keys here: name, source, lab,"),
        (
            "chapters:\n  01_block_size:\n    parms: {}\n",
            "01_block_size.parms: unknown key (the keys here: params, quick, published)",
        ),
        (
            "references:\n  '000': {file: f, course: c, title: t, gpu: g, year: 2016}\n",
            "references.000.year: unknown key (the keys here: file, course, title, gpu)",
        ),
    ],
)
def test_an_unknown_nested_key_is_named_with_the_keys_that_place_takes(tmp_path, text, says):
    with pytest.raises(ProfileError) as err:
        load_profile(str(write(tmp_path, "name: x\n" + text)), notebooks=NOTEBOOKS)
    assert says in str(err.value)


def test_a_mistake_in_a_published_table_is_one_error_not_one_per_key(tmp_path):
    """``published`` is one table or several by name; a table's typo is reported against the table
    (with its keys), not also as every key of it failing to be a table of the other form."""
    text = (
        "name: x\nchapters:\n  01_block_size:\n    published:\n      source: s\n      gpu: G\n      lab: '000'\n"
        "      where: w\n      coordinates: [n]\n      rowz: []\n"
    )
    with pytest.raises(ProfileError) as err:
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)
    lines = str(err.value).splitlines()[1:]
    assert lines == [
        "  chapters.01_block_size.published.(one table).rowz: unknown key (the keys here: source, gpu, lab, where, "
        "coordinates, note, inferred, beside, measures, rows)"
    ], lines


def test_a_profile_that_is_not_text_or_a_folder_says_so(tmp_path):
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00name")
    with pytest.raises(ProfileError, match="not UTF-8 text"):
        load_profile(str(binary), notebooks=NOTEBOOKS)
    with pytest.raises(ProfileError, match="is a folder"):
        load_profile(str(tmp_path), notebooks=NOTEBOOKS)


def test_wrong_type_in_device(tmp_path):
    text = "name: x\ndevice: {name: G, source: s, multiprocessors: many}\n"
    with pytest.raises(ProfileError, match=r"device.multiprocessors: .*integer"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_unknown_chapter_param_names_accepted_ones(tmp_path):
    text = "name: x\nchapters:\n  01_block_size:\n    params: {sizez: [1]}\n"
    with pytest.raises(ProfileError) as err:
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)
    assert "chapters.01_block_size.params.sizez: got [1] (list), but there is no such parameter" in str(err.value)
    assert "block_sizes" in str(err.value)


def test_wrong_param_type(tmp_path):
    text = "name: x\nchapters:\n  01_block_size:\n    params: {sizes: 5000}\n"
    with pytest.raises(ProfileError, match=r"params.sizes: got 5000 \(int\), expected list\[int\]"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_wrong_list_item_type(tmp_path):
    text = "name: x\nchapters:\n  01_block_size:\n    quick: {sizes: [256, big]}\n"
    with pytest.raises(ProfileError, match=r"quick.sizes: got \[256, 'big'\] \(list\), expected list\[int\]"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_unknown_chapter(tmp_path):
    text = "name: x\nchapters:\n  09_nothing:\n    params: {}\n"
    with pytest.raises(ProfileError, match="09_nothing: no such chapter"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_block_over_the_profiles_device_limit(tmp_path):
    text = (
        "name: x\ndevice: {name: Old GPU, source: s, lab: '000', max_threads_per_block: 512,\n"
        "         cite: {max_threads_per_block: 'Maximum number of threads per block: 512'}}\n"
        "chapters:\n  01_block_size:\n    params: {block_sizes: [16, 32]}\n"
    )
    with pytest.raises(ProfileError) as err:
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)
    assert "32x32 threads = 1024 threads exceeds the profile's device (Old GPU)'s limit of 512" in str(err.value)
    assert "16x16" not in str(err.value)


def test_block_over_the_present_gpus_limit(tmp_path):
    text = "name: x\nchapters:\n  01_block_size:\n    params: {block_sizes: [64]}\n"
    path = str(write(tmp_path, text))
    load_profile(path, notebooks=NOTEBOOKS)  # no GPU limit known: accepted
    with pytest.raises(ProfileError, match="4096 threads exceeds the present GPU's limit of 1024"):
        load_profile(path, notebooks=NOTEBOOKS, gpu_max_threads=1024)


def test_non_positive_block(tmp_path):
    text = "name: x\nchapters:\n  01_block_size:\n    params: {block_sizes: [0]}\n"
    with pytest.raises(ProfileError, match=r"block_sizes: got \[0\] \(0 is not positive\)"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_extends_cycle(tmp_path):
    write(tmp_path, "name: a\nextends: b\n", "a.yaml")
    write(tmp_path, "name: b\nextends: a\n", "b.yaml")
    with pytest.raises(ProfileError, match="cycle"):
        load_profile("a", params_dir=tmp_path, notebooks=NOTEBOOKS)


def test_detected_gpu_picks_profile():
    assert profile_for_gpu("NVIDIA H100 80GB HBM3") == "h100"
    assert profile_for_gpu("NVIDIA GeForce GTX 680") == "gtx680"
    assert profile_for_gpu("NVIDIA RTX A4000") == "generic"


@pytest.mark.parametrize(
    "value,message",
    [
        ("[]", r"got \[\] \(an empty list sweeps nothing\)"),
        ("[512, -4]", r"got \[512, -4\] \(-4 is not positive\)"),
        ("[0]", r"got \[0\] \(0 is not positive\)"),
    ],
)
def test_empty_and_non_positive_sweeps(tmp_path, value, message):
    text = f"name: x\nchapters:\n  01_block_size:\n    params: {{sizes: {value}}}\n"
    with pytest.raises(ProfileError, match=f"chapters.01_block_size.params.sizes: {message}"):
        load_profile(str(write(tmp_path, text)), notebooks=NOTEBOOKS)


def test_a_user_profile_without_a_name_is_named_after_its_file(tmp_path):
    path = tmp_path / "my_gpu.yaml"
    path.write_text("extends: gtx680\nchapters:\n  01_block_size:\n    params: {sizes: [64]}\n")
    prof = load_profile(str(path))
    assert prof.name == "my_gpu", "never the parent's name, which would replay the parent's recording"
    assert prof.device.name == "GeForce GTX 680"
    path.write_text("name: mine\nextends: gtx680\n")
    assert load_profile(str(path)).name == "mine"


# ---- h200, and a user's own profile given by path (issue 13, item 7)


def test_h200_validates_against_the_notebooks_and_marks_its_device_as_not_a_labs():
    h200 = load_profile("h200", gpu_max_threads=1024)  # the notebooks' parameters cells, an H200's block limit
    assert h200.name == "h200" and profile_for_gpu("NVIDIA H200") == "h200"
    dev = h200.device
    assert dev.name == "NVIDIA H200" and dev.compute_capability == "9.0" and dev.multiprocessors == 132
    assert dev.lab is None and dev.cite == {}, "no lab ran on an H200: nothing may be cited from one"
    given = {
        k for k, v in dev.model_dump(exclude={"name", "source", "lab", "cite", "inferred"}).items() if v is not None
    }
    assert given == set(dev.inferred) and "NVIDIA" in dev.source
    # the numbers agree with NVIDIA's H200 datasheet: 67 TFLOP/s FP32, 4.8 TB/s, 141 GB
    assert 66_000 < dev.fp32_peak_GFLOPs() < 68_000
    assert 4.7e12 < 2 * dev.memory_clock_MHz * 1e6 * dev.memory_bus_width_bits / 8 < 4.9e12
    assert 139 * 2**10 < dev.global_memory_MiB <= 141 * 2**10, "usable memory, within the 141 GB (GiB) HBM3e"
    # the lab's published numbers come through h100 from gtx680; grids differ from h100's only in 00 and 06
    h100 = load_profile("h100")
    assert h200.chapter("01_block_size").published == h100.chapter("01_block_size").published
    for chapter in ("01_block_size", "02_coalescing", "03_shared_memory", "04_blocking_factor", "05_matmul_footprint"):
        assert h200.chapter_params(chapter) == h100.chapter_params(chapter), chapter
    assert max(h200.chapter_params("06_kmeans_device_update")["sizes"]) > max(
        h100.chapter_params("06_kmeans_device_update")["sizes"]
    )


def test_a_users_profile_outside_params_extends_a_shipped_one_and_its_values_are_used(tmp_path):
    base = write(
        tmp_path, "extends: h100\nchapters:\n  01_block_size:\n    params: {sizes: [256, 768]}\n", "lab_base.yaml"
    )
    mine = write(
        tmp_path,
        f"extends: {base}\nchapters:\n  06_kmeans_device_update:\n    params: {{sizes: [524288]}}\n",
        "my_gpu.yaml",
    )
    prof = load_profile(str(mine))  # validated against the real notebooks
    assert prof.name == "my_gpu"
    assert prof.chapter_params("06_kmeans_device_update")["sizes"] == [524288]
    h100_dims = yaml.safe_load((PARAMS_DIR / "h100.yaml").read_text())["chapters"]["06_kmeans_device_update"]["params"][
        "dims"
    ]
    assert prof.chapter_params("06_kmeans_device_update")["dims"] == h100_dims, "the rest of h100's grid is inherited"
    assert prof.chapter_params("01_block_size")["sizes"] == [256, 768], "extends by path, through another user file"
    assert prof.chapter_params("01_block_size", quick=True)["sizes"] == [256, 500, 1000], (
        "the parent's quick grid wins under --quick"
    )
    assert prof.chapter("01_block_size").published is not None and prof.match == []


@pytest.mark.parametrize(
    "chapters,names",
    [
        (
            "  06_kmeans_device_update:\n    params: {size: [524288]}\n",
            [
                "chapters.06_kmeans_device_update.params.size: got [524288] (list), but there is no such parameter",
                "sizes",
            ],
        ),
        (
            "  06_kmeans_device_update:\n    quick: {iterations: three}\n",
            ["chapters.06_kmeans_device_update.quick.iterations: got 'three' (str), expected int: a positive integer"],
        ),
        (
            "  05_matmul_footprint:\n    params: {tune_tiles: [128, -64]}\n",
            ["chapters.05_matmul_footprint.params.tune_tiles: got [128, -64] (-64 is not positive)"],
        ),
    ],
)
def test_a_malformed_users_profile_names_its_file_and_key(tmp_path, chapters, names):
    from cudalab.core.errors import CudalabError

    path = write(tmp_path, "extends: h100\nchapters:\n" + chapters, "my_gpu.yaml")
    with pytest.raises(CudalabError) as err:
        load_profile(str(path))  # against the real notebooks' parameters cells
    assert str(err.value).startswith(f"{path}: invalid profile")
    for name in names:
        assert name in str(err.value)


# ---- the resolved profile a build hands its notebooks (issue 23)


@pytest.mark.parametrize("name", available_profiles())
def test_a_resolved_profile_reads_back_as_the_profile_the_build_validated(tmp_path, name):
    prof = load_profile(name)
    path = write_resolved(prof, tmp_path / RESOLVED, source=name)
    back = open_profile(str(path))
    assert back == prof and back.model_dump(mode="json") == prof.model_dump(mode="json"), (
        "the same profile, so the same source fingerprint in the provenance"
    )
    assert back.name == name and json.loads(path.read_text())["name"] == name


def test_a_resolved_profile_changed_after_the_build_is_refused(tmp_path):
    path = write_resolved(load_profile("gtx680"), tmp_path / RESOLVED, source="gtx680")
    document = json.loads(path.read_text())
    document["profile"]["chapters"]["01_block_size"]["params"]["sizes"] = [64]
    path.write_text(json.dumps(document))
    with pytest.raises(ProfileError, match="changed since the build wrote it"):
        open_profile(str(path))


def test_a_resolved_profile_is_checked_against_a_gpu_it_was_not_checked_against(tmp_path):
    text = "name: big\nextends: gtx680\ndevice: null\nchapters:\n  01_block_size:\n    params: {block_sizes: [8, 64]}\n"
    path = write_resolved(load_profile(str(write(tmp_path, text))), tmp_path / RESOLVED, source="big")
    assert open_profile(str(path)).name == "big"  # no GPU limit known: accepted, as load_profile does
    with pytest.raises(ProfileError, match="64x64 threads = 4096 threads exceeds the present GPU's limit"):
        open_profile(str(path), gpu_max_threads=1024)


def test_open_profile_loads_a_name_or_a_yaml_file_as_load_profile_does(tmp_path):
    assert open_profile("gtx680") == load_profile("gtx680")
    mine = write(tmp_path, "extends: gtx680\n", "mine.json")  # a YAML profile, whatever its suffix
    assert open_profile(str(mine)).name == "mine"
