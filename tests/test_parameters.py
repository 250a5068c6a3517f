"""Chapter parameters: checked against their declared types before any work, with one message each."""

import json

import pytest

from cudalab.chapter import catalog, parameters
from cudalab.chapter.handle import checked_parameters
from cudalab.core.errors import ParameterError
from cudalab.core.gpu import gpu_available
from cudalab.core.paths import NOTEBOOKS_DIR

CHAPTER = "01_block_size"
DECLARED = catalog.chapter(CHAPTER).parameters()
PAPERMILL_HINT = 'with papermill pass a list as YAML, -y "sizes: [256, 512, 1024]", or as Python, -r sizes'


def namespace(**given):
    """A notebook's globals after its parameters cell ran (the declared defaults), then ``given``."""
    import ast

    ns = {name: ast.literal_eval(d.default) for name, d in DECLARED.items()}
    ns.update(given)
    return ns


def problem(**given) -> str:
    with pytest.raises(ParameterError) as err:
        checked_parameters(CHAPTER, namespace(**given))
    return str(err.value)


def test_the_declarations_come_from_the_parameters_cell():
    assert DECLARED["sizes"] == parameters.Declared("sizes", "list[int]", "[256, 512, 1024]")
    assert DECLARED["point_time_limit_s"].type_name == "float" and DECLARED["progress"].type_name == "bool"


@pytest.mark.parametrize("chapter", [c.id for c in catalog.discover()])
def test_every_chapter_declares_what_papermill_reads(chapter):
    """Our reading of a parameters cell (Python's parser, ``parameters.declared_in``) gives each
    chapter's names, types and default values as papermill's ``inspect_notebook`` does."""
    import ast

    import papermill

    def value(text: str):
        return ast.literal_eval(text) if text else None

    theirs = papermill.inspect_notebook(str(catalog.chapter(chapter).path))
    ours = catalog.chapter(chapter).parameters()
    assert list(ours) == list(theirs)
    for name, d in ours.items():
        assert d.type_name == theirs[name]["inferred_type_name"], name
        assert value(d.default) == value(theirs[name]["default"] or ""), name


def test_a_parameters_cell_read_by_pythons_parser():
    cell = (
        "# a comment\n"
        'profile: str = "auto"  # with its help\n'
        "sizes: list[int] = [\n    256,  # the first\n    512,\n]\n"
        "plain = 3\n"
        'quoted: "float" = 1.5\n'
        "limit: float = 60.0 if True else 0.0\n"
        'eq: str = "a=b"\n'
        "import math\n"
        "a = b = 2\n"
    )
    declared = parameters.declared_in(cell)
    assert [d for d in declared] == ["profile", "sizes", "plain", "quoted", "limit", "eq"]
    assert declared["profile"] == parameters.Declared("profile", "str", '"auto"')
    assert declared["sizes"] == parameters.Declared("sizes", "list[int]", "[256, 512]")
    assert declared["plain"].type_name == "None" and declared["plain"].default == "3"
    assert declared["quoted"].type_name == "float"
    assert declared["limit"].default == "60.0 if True else 0.0"
    assert declared["eq"].default == '"a=b"'


def test_opening_a_chapter_imports_no_json_schema_checker():
    """A chapter's first cell reads its declarations without papermill, whose import brings
    nbformat, jsonschema and rfc3987-syntax's grammars: seconds on every kernel's start."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from cudalab.chapter import catalog\n"
        f"assert catalog.chapter({CHAPTER!r}).parameters()\n"
        "print(sorted(m for m in ('papermill', 'nbformat', 'jsonschema') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "name,text,value",
    [
        ("sizes", "[256, 2048]", [256, 2048]),
        ("sizes", "(256, 2048)", [256, 2048]),
        ("point_time_limit_s", "60", 60.0),
        ("point_time_limit_s", 60, 60.0),
        ("cpu_max_n", "256", 256),
        ("progress", "false", False),
        ("seed", 0, 0),
    ],
)
def test_text_that_parses_as_the_declared_type_is_converted(name, text, value):
    ns = namespace(**{name: text})
    checked_parameters(CHAPTER, ns)
    assert ns[name] == value and type(ns[name]) is type(value), "the cells that follow see the declared type"


def test_a_wrong_type_names_the_parameter_the_value_the_type_and_how_to_pass_a_list():
    message = problem(sizes="abc")
    assert message.startswith("sizes: got 'abc' (str), expected list[int]: a non-empty list of positive integers")
    assert PAPERMILL_HINT in message
    assert "\n" not in message, "one problem, one line"


@pytest.mark.parametrize(
    "given,expected",
    [
        ({"sizes": []}, "sizes: got [] (an empty list sweeps nothing), expected list[int]"),
        ({"sizes": "[]"}, "sizes: got [] (an empty list sweeps nothing)"),
        ({"sizes": [256, -1]}, "sizes: got [256, -1] (-1 is not positive)"),
        ({"block_sizes": [0]}, "block_sizes: got [0] (0 is not positive)"),
        ({"point_time_limit_s": -1.0}, "point_time_limit_s: got -1.0 (it is negative), expected float: a number >= 0"),
        ({"cpu_max_n": 0}, "cpu_max_n: got 0 (it is not positive), expected int: a positive integer"),
        ({"cpu_max_n": True}, "cpu_max_n: got True (bool), expected int"),
        ({"cpu_max_n": 2.5}, "cpu_max_n: got 2.5 (float), expected int"),
        ({"seed": -1}, "seed: got -1 (it is negative), expected int: an integer >= 0"),
        ({"mode": "fast"}, "mode: got 'fast' (no such mode), expected one of 'auto', 'measure', 'replay'"),
    ],
)
def test_wrong_values_each_get_one_message(given, expected):
    assert expected in problem(**given)


def test_scalars_are_hinted_with_p():
    assert problem(point_time_limit_s=-1.0).endswith("with papermill: -p point_time_limit_s 120.0")


def test_an_unknown_profile_names_the_profiles():
    message = problem(profile="gtx9999")
    assert message.startswith("profile: got 'gtx9999', expected 'auto', a profile name (")
    assert "gtx680" in message and "h100" in message and message.endswith("-p profile gtx680")


def test_a_name_papermill_injected_that_the_notebook_does_not_declare():
    injected = '# Parameters\nsizes = "[256, 2048]"\nsizse = [256]\n'
    ns = namespace(sizse=[256], In=["", "# Parameters: the notebook's own cell\nsizes: list[int] = [1]\n", injected])
    with pytest.raises(ParameterError) as err:
        checked_parameters(CHAPTER, ns)
    assert str(err.value).startswith(
        f"sizse: got [256] (list), but there is no such parameter of chapter {CHAPTER}; its parameters: profile,"
    )
    assert parameters.injected_names(ns) == ["sizes", "sizse"]


def test_every_problem_is_reported_at_once():
    lines = problem(sizes="abc", seed=-1).splitlines()
    assert [line.split(":")[0] for line in lines] == ["sizes", "seed"]


def test_a_parameter_error_shows_in_a_notebook_as_its_message_alone():
    err = ParameterError("sizes: got 'abc' (str), expected list[int]")
    assert err._render_traceback_() == ["\x1b[0;31mParameterError\x1b[0m: sizes: got 'abc' (str), expected list[int]"]


def test_profiles_follow_the_same_rules(tmp_path):
    """A profile's YAML gets the notebook's messages, with a YAML hint; text is stored as the type."""
    from cudalab.chapter.profiles import ProfileError, load_profile

    path = tmp_path / "p.yaml"
    path.write_text("name: x\nchapters:\n  01_block_size:\n    params: {sizes: abc}\n")
    with pytest.raises(ProfileError) as err:
        load_profile(str(path), notebooks={CHAPTER: DECLARED})
    assert (
        "chapters.01_block_size.params.sizes: got 'abc' (str), expected list[int]: a non-empty list of positive "
        "integers; in the profile's YAML write it as `sizes: [256, 512, 1024]`"
    ) in str(err.value)
    path.write_text("name: x\nchapters:\n  01_block_size:\n    params: {sizes: '[256, 2048]'}\n")
    assert load_profile(str(path), notebooks={CHAPTER: DECLARED}).chapter_params(CHAPTER)["sizes"] == [256, 2048]


# ---- through papermill, as a user runs a chapter


def _papermill(tmp_path, *args):
    import subprocess
    import sys

    out = tmp_path / "out.ipynb"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(NOTEBOOKS_DIR / f"{CHAPTER}.ipynb"),
            str(out),
            "--cwd",
            str(NOTEBOOKS_DIR),
        ]
        + ["-p", "data_dir", str(tmp_path / "data"), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return run, json.loads(out.read_text())


def _errors(nb):
    return [
        o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []) if o["output_type"] == "error"
    ]


@pytest.mark.slow
@pytest.mark.skipif(gpu_available(), reason="replays; a GPU would measure")
def test_papermill_p_with_a_list_as_text_runs_the_chapter(tmp_path):
    run, nb = _papermill(tmp_path, "-p", "sizes", "[256, 512]")
    assert run.returncode == 0, run.stderr[-3000:]
    assert not _errors(nb)
    text = json.dumps(nb)
    assert "Data: replayed." in text and "sizes = [256, 512] requested" in text, "the request was read as a list"


@pytest.mark.slow
def test_papermill_p_with_a_wrong_list_fails_with_one_line(tmp_path):
    run, nb = _papermill(tmp_path, "-p", "sizes", "oops")
    assert run.returncode != 0
    (error,) = _errors(nb)
    assert error["ename"] == "ParameterError"
    assert (
        error["evalue"].startswith("sizes: got 'oops' (str), expected list[int]") and PAPERMILL_HINT in error["evalue"]
    )
    assert len(error["traceback"]) == 1, "the message alone, no traceback"
    assert "ParameterError: sizes: got 'oops'" in run.stderr
