"""tools/mutation_scores.py's reading of mutmut's results, and BENCHMARKS.md's section of them (on CPU)."""

from __future__ import annotations

import importlib.util
import json

from cudalab.core.paths import ROOT
from cudalab.report.benchmarks import mutation_scores, render


def _tool():
    spec = importlib.util.spec_from_file_location("mutation_scores", ROOT / "tools" / "mutation_scores.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# `mutmut results --all true` as mutmut 3.8 prints it: four spaces, the mutant's name, its status.
SAMPLE = """\
    cudalab.core.check.x_compare__mutmut_1: killed
    cudalab.core.check.x_compare__mutmut_2: timeout
    cudalab.core.check.x_compare__mutmut_10: survived
    cudalab.core.check.x_compare_close__mutmut_1: not checked
    cudalab.grading.submission.x_check__mutmut_18: survived
    cudalab.grading.submission.x_check__mutmut_3: killed
    cudalab.grading.submission.x_stage__mutmut_1: no tests
    cudalab.grading.directives.xǁLexerǁnext__mutmut_4: killed
    cudalab.grading.grade.x_scoreboard__mutmut_53: survived
    cudalab.grading.grade.x_scoreboard__mutmut_1: killed
    cudalab.grading.grade.x_fully_correct__mutmut_2: killed
    cudalab.grading.grade.x_grade_class__mutmut_7: survived
    cudalab.grading.grade.x_scoreboard__mutmut_9: not checked
⠋ Running stats
some other line: of no mutant
"""


def test_the_parser_reads_each_mutants_name_and_status_and_nothing_else():
    got = _tool().parse(SAMPLE)
    assert len(got) == 13
    assert got["cudalab.core.check.x_compare__mutmut_2"] == "timeout"
    assert got["cudalab.core.check.x_compare_close__mutmut_1"] == "not checked"
    assert got["cudalab.grading.submission.x_stage__mutmut_1"] == "no tests"
    assert got["cudalab.grading.directives.xǁLexerǁnext__mutmut_4"] == "killed", "a method's mutant"
    assert "some other line" not in got


def test_scores_count_timeouts_as_killed_leave_out_unchecked_and_take_only_the_ranking_of_grade():
    tool = _tool()
    got = tool.scores(tool.parse(SAMPLE))
    check = got["cudalab.core.check"]
    assert (check["killed"], check["timeout"], check["survived"], check["total"]) == (2, 1, 1, 3)
    assert check["score"] == round(2 / 3, 4) and check["functions"] is None
    assert check["survivors"] == ["cudalab.core.check.x_compare__mutmut_10"]
    sub = got["cudalab.grading.submission"]
    assert (sub["killed"], sub["survived"], sub["total"]) == (1, 1, 3), "no tests: counted, not killed"
    assert sub["other"] == {"cudalab.grading.submission.x_stage__mutmut_1": "no tests"}
    assert got["cudalab.grading.directives"]["killed"] == 1
    grade = got["cudalab.grading.grade"]
    assert grade["functions"] == ["scoreboard", "fully_correct"]
    assert (grade["killed"], grade["survived"], grade["total"]) == (2, 1, 3), "grade_class is not of the ranking"
    assert grade["survivors"] == ["cudalab.grading.grade.x_scoreboard__mutmut_53"]
    assert got["cudalab.grading.isolate"]["total"] == 0 and got["cudalab.grading.isolate"]["score"] is None
    assert list(got) == [
        "cudalab.core.check",
        "cudalab.grading.submission",
        "cudalab.grading.directives",
        "cudalab.grading.results",
        "cudalab.grading.isolate",
        "cudalab.grading.grade",
    ]


def test_a_record_carries_the_totals_and_the_provenance(monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "commit_state", lambda: {"git_commit": "c" * 40, "git_dirty": True, "commit_from": "git"})
    rec = tool.record(tool.parse(SAMPLE), "3.8.0")
    assert (rec["killed"], rec["total"]) == (6, 10)
    assert rec["git_commit"] == "c" * 40 and rec["git_dirty"] is True
    assert rec["mutmut"] == "3.8.0" and rec["cpu_count"] >= 1


def _fixture(results, date="2026-11-30 10:00", commit="a" * 40, killed=77):
    tool = _tool()
    statuses = {f"cudalab.core.check.x_compare__mutmut_{i}": "killed" for i in range(1, killed + 1)}
    statuses |= {
        "cudalab.grading.submission.x_check__mutmut_18": "survived",
        "cudalab.grading.submission.x_check__mutmut_3": "killed",
        "cudalab.grading.grade.x_scoreboard__mutmut_1": "killed",
        "cudalab.grading.isolate.x__hand_over__mutmut_1": "no tests",
    }
    modules = tool.scores(statuses)
    record = {
        "date_utc": date,
        "git_commit": commit,
        "git_dirty": False,
        "mutmut": "3.8.1",
        "cpu_count": 2,
        "killed": killed + 2,
        "total": killed + 4,
        "modules": modules,
    }
    (results / "mutation").mkdir(exist_ok=True)
    (results / "mutation" / f"{date[:10]}.json").write_text(json.dumps(record))


def test_the_section_renders_the_newest_record_per_module_after_the_grading_section(tmp_path):
    _fixture(tmp_path, date="2026-11-01 09:00", commit="b" * 40, killed=70)
    _fixture(tmp_path)
    lines = mutation_scores(tmp_path)
    text = "\n".join(lines)
    assert lines[0] == "## Mutation testing of the grader"
    assert "| module | killed | of | score |" in text
    assert "| `core/check.py` | 77 | 77 | 100.0% |" in text
    assert "| `grading/submission.py` | 1 | 2 | 50.0% |" in text
    assert "| `grading/grade.py` (`scoreboard`, `fully_correct`) | 1 | 1 | 100.0% |" in text
    assert "| `grading/isolate.py` | 0 | 1 | 0.0% |" in text
    assert "| all | 79 | 81 | 97.5% |" in text
    assert "| `grading/results.py`" not in text, "a module of which no mutant ran has no row"
    assert "counted in *of* as not killed: `grading/isolate.py`: 1 no tests (*no tests*:" in text
    assert "1 mutant survived" in text
    assert "2026-11-30 10:00" in text and f"`{'a' * 10}`" in text and "b" * 10 not in text, "the newest record"
    assert "mutmut 3.8.1" in text and "2 CPU cores" in text
    assert "docs/mutation-testing.md" in text
    (tmp_path / "grading").mkdir()
    for path in sorted((ROOT / "results" / "grading").glob("*.json"))[:1]:
        (tmp_path / "grading" / path.name).write_text(path.read_text())
    rendered = render(tmp_path)
    assert rendered.rstrip().endswith(lines[-2])
    if any((tmp_path / "grading").iterdir()):
        assert rendered.index("## Grading a class") < rendered.index("## Mutation testing of the grader")


def test_no_record_no_section(tmp_path):
    assert mutation_scores(tmp_path) == []
    (tmp_path / "mutation").mkdir()
    assert mutation_scores(tmp_path) == []
    assert "Mutation testing" not in render(tmp_path)
