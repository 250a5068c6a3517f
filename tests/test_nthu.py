"""The NTHU test-case format: round trips, every malformed case, and the CPU solution."""

import numpy as np
import pytest

from cudalab.labs.fw.nthu import (
    UNREACHABLE,
    CaseFormatError,
    generate_case,
    parse_case,
    read_case,
    read_output,
    solve_cpu,
    solve_numpy,
    to_matrix,
    write_case,
    write_output,
)
from cudalab.labs.fw.reference import floyd_warshall_numpy


def raw(*ints):
    return np.array(ints, dtype="<i4").tobytes()


def test_round_trip(tmp_path):
    edges = generate_case(50, 0.1, seed=3)
    write_case(tmp_path / "c.in", 50, edges)
    v, back = read_case(tmp_path / "c.in")
    assert v == 50 and np.array_equal(back, edges)
    dist = solve_cpu(v, back)
    write_output(tmp_path / "c.out", dist)
    assert np.array_equal(read_output(tmp_path / "c.out", v), dist)


def test_generated_cases_are_distinct_edges_without_self_loops():
    edges = generate_case(200, 0.05, seed=1)
    assert abs(len(edges) - 0.05 * 200 * 199) <= 1
    assert len({(s, d) for s, d, _ in edges}) == len(edges)
    assert (edges[:, 0] != edges[:, 1]).all() and edges[:, 2].min() >= 0 and edges[:, 2].max() <= 1000
    assert len(generate_case(10, 0.0, seed=1)) == 0 and len(generate_case(1, 1.0, seed=1)) == 0


def test_a_large_sparse_case_spreads_its_edges_over_every_source():
    """Past 50 M pairs the generator draws with a margin instead of permuting all pairs; the edges
    it keeps are a uniform choice, not the smallest indices (which left the last sources bare)."""
    v = 7100  # 50.4 M pairs: the drawing path
    edges = generate_case(v, 0.002, seed=5)
    assert len(edges) == round(0.002 * v * (v - 1))
    assert len(np.unique(edges[:, 0].astype(np.int64) * v + edges[:, 1])) == len(edges)
    assert (edges[:, 0] != edges[:, 1]).all()
    top = (edges[:, 0] >= 0.9 * v).mean()  # the last tenth of the sources: a tenth of the edges
    assert abs(top - 0.1) < 0.01, f"the last tenth of the sources hold {top:.1%} of the edges"


def test_drawing_distinct_pairs_draws_again_until_it_has_enough():
    from cudalab.labs.fw.nthu import _sparse_pairs

    for m in (1, 250, 900, 1000):  # up to every pair: the draws repeat often
        got = _sparse_pairs(np.random.default_rng(m), 1000, m)
        assert len(got) == m and len(np.unique(got)) == m and (np.diff(got) > 0).all()
        assert got.min() >= 0 and got.max() < 1000


def test_solution_by_hand():
    # 0 -> 1 (5), 1 -> 2 (2), 0 -> 2 (9), a repeated edge 1 -> 2 (7): the shorter one counts
    dist = solve_cpu(4, np.array([[0, 1, 5], [1, 2, 2], [0, 2, 9], [1, 2, 7]], dtype=np.int32))
    u = UNREACHABLE
    assert dist.tolist() == [[0, 5, 7, u], [u, 0, 2, u], [u, u, 0, u], [u, u, u, 0]]


def test_single_vertex_and_no_edges():
    assert solve_cpu(1, np.empty((0, 3), np.int32)).tolist() == [[0]]
    d = solve_cpu(3, np.empty((0, 3), np.int32))
    assert (np.diag(d) == 0).all() and (d[~np.eye(3, dtype=bool)] == UNREACHABLE).all()


def test_to_matrix_fills_a_padded_matrix_with_unreachable_padding():
    edges = np.array([[0, 1, 7], [0, 1, 3], [2, 0, 5]], dtype=np.int32)
    padded = to_matrix(3, edges, out=np.full((8, 8), -9, dtype=np.int32))
    assert padded.shape == (8, 8) and (np.diag(padded) == 0).all()
    np.testing.assert_array_equal(padded[:3, :3], to_matrix(3, edges))
    assert padded[0, 1] == 3 and padded[2, 0] == 5
    assert (padded[3:, :3] == UNREACHABLE).all() and (padded[:3, 3:] == UNREACHABLE).all()


@pytest.mark.parametrize("v,density", [(2, 0.5), (37, 0.02), (64, 0.3)])
def test_cpu_solution_matches_an_independent_one(v, density):
    edges = generate_case(v, density, seed=v)
    m = to_matrix(v, edges)
    independent = floyd_warshall_numpy(np.where(m == UNREACHABLE, -1, m))
    assert np.array_equal(solve_cpu(v, edges), np.where(independent < 0, UNREACHABLE, independent))
    assert np.array_equal(solve_numpy(v, edges), solve_cpu(v, edges))


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\x01\x00\x00", r"truncated header: 3 bytes"),
        (raw(0, 0), r"V = 0 at offset 0 must be positive"),
        (raw(-4, 0), r"V = -4 at offset 0"),
        (raw(3, -1), r"E = -1 at offset 4 must not be negative"),
        (raw(2, 5), r"E = 5 at offset 4 exceeds V\*V = 4"),
        (
            raw(3, 2, 0, 1, 5, 1, 2),
            r"truncated: E = 2 needs 32 bytes, the file has 28; edge 1 at offset 20 is incomplete",
        ),
        (raw(3, 1, 0, 1, 5, 9), r"4 unexpected bytes after the last edge, at offset 20"),
        (raw(3, 2, 0, 1, 5, 1, 3, 2), r"edge 1 at offset 20: dst 3 is not a vertex of \[0, 3\)"),
        (raw(3, 1, -1, 1, 5), r"edge 0 at offset 8: src -1 is not a vertex"),
        (raw(3, 2, 0, 1, 5, 1, 2, -7), r"edge 1 at offset 20: negative weight -7"),
    ],
)
def test_malformed_files_name_problem_and_offset(data, message):
    with pytest.raises(CaseFormatError, match=message):
        parse_case(data, "case.in")


def test_output_of_the_wrong_size(tmp_path):
    (tmp_path / "o").write_bytes(raw(0, 1, 2))
    with pytest.raises(CaseFormatError, match="an output for V = 2 has 16 bytes, this file 12"):
        read_output(tmp_path / "o", 2)


def test_cli_generate_solve_verify(tmp_path, capsys):
    from cudalab.apsp import main

    case, out = tmp_path / "c.in", tmp_path / "c.out"
    assert main(["generate", "40", "0.1", str(case), "--seed", "7"]) == 0
    assert main(["solve", str(case), str(out), "--check"]) == 0
    assert main(["verify", str(case), str(out)]) == 0
    dist = read_output(out, 40)
    dist[3, 5] += 1
    write_output(out, dist)
    assert main(["verify", str(case), str(out)]) == 1
    assert "WRONG: 1 of 1600 distances differ; first at (3, 5)" in capsys.readouterr().out


def test_cli_reports_a_malformed_file(tmp_path, capsys):
    from cudalab.apsp import main

    (tmp_path / "bad.in").write_bytes(raw(3, 1, 0, 7, 1))
    assert main(["solve", str(tmp_path / "bad.in"), str(tmp_path / "o")]) == 2
    assert "edge 0 at offset 8: dst 7 is not a vertex" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ---- every input gets an answer, no answer is wrong (issue 9, item 6)


@pytest.mark.parametrize("weight", [UNREACHABLE, 2147483647])
def test_a_weight_the_format_cannot_represent_is_refused(weight):
    with pytest.raises(CaseFormatError, match=f"edge 1 at offset 20: weight {weight} is not below {UNREACHABLE}"):
        parse_case(raw(3, 2, 0, 1, 5, 1, 2, weight))


def test_weights_whose_paths_could_reach_unreachable_are_refused():
    w = UNREACHABLE // 2 + 1  # two of them in a row reach the marker
    with pytest.raises(CaseFormatError, match="a shortest path could weigh up to"):
        parse_case(raw(3, 2, 0, 1, w, 1, 2, w))
    v, edges = parse_case(raw(3, 2, 0, 1, w, 2, 1, 7))  # one heavy edge: every distance fits
    assert solve_cpu(v, edges)[0, 1] == w


def test_generate_refuses_what_solve_would_refuse(tmp_path):
    from cudalab.labs.fw.nthu import max_weight_for

    with pytest.raises(CaseFormatError, match="max weight 3000000000 is outside"):
        generate_case(10, 0.5, seed=1, max_weight=3_000_000_000)
    with pytest.raises(CaseFormatError, match="outside"):
        generate_case(10, 0.5, seed=1, max_weight=-1)
    edges = generate_case(10, 1.0, seed=1, max_weight=max_weight_for(10))
    write_case(tmp_path / "c.in", 10, edges)
    assert read_case(tmp_path / "c.in")[0] == 10, "the largest allowed weight gives a file that parses"


def test_cli_refuses_bad_output_paths_before_solving(tmp_path, capsys):
    from cudalab.apsp import main

    case = tmp_path / "c.in"
    assert main(["generate", "20", "0.2", str(case)]) == 0
    original = case.read_bytes()
    assert main(["solve", str(case), str(case)]) == 2
    assert "is the input file" in capsys.readouterr().err and case.read_bytes() == original
    assert main(["solve", str(case), str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["solve", str(case), str(tmp_path / "nowhere" / "c.out")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_says_which_input_it_cannot_read_with_exit_status_2(tmp_path, capsys):
    """A folder or a missing file given as an input: the path and why, never a traceback, and the
    status of bad arguments (2), not of a wrong answer (1)."""
    from cudalab.apsp import main

    case = tmp_path / "c.in"
    assert main(["generate", "20", "0.2", str(case)]) == 0
    for argv in (
        ["solve", str(tmp_path), str(tmp_path / "c.out")],
        ["solve", str(tmp_path / "missing.in"), str(tmp_path / "c.out")],
        ["verify", str(case), str(tmp_path)],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"error: {tmp_path}") and "Traceback" not in err, err


def test_cli_check_on_the_cpu_uses_an_independent_reference(tmp_path, capsys):
    from cudalab.apsp import main

    case, out = tmp_path / "c.in", tmp_path / "c.out"
    assert main(["generate", "60", "0.1", str(case)]) == 0
    assert main(["solve", str(case), str(out), "--cpu", "--check"]) == 0
    assert "match a NumPy Floyd-Warshall" in capsys.readouterr().out


def test_a_huge_v_is_refused_with_the_memory_it_needs(tmp_path, capsys):
    from cudalab.apsp import main

    case = tmp_path / "huge.in"
    case.write_bytes(raw(2_000_000, 0))
    assert main(["solve", str(case), str(tmp_path / "o"), "--cpu"]) == 2
    err = capsys.readouterr().err
    assert "GiB of host memory" in err and "V = 2,000,000" in err and "Traceback" not in err


def test_fuzzed_files_get_a_clean_error_or_a_correct_parse(rng):
    """Random, truncated and bit-flipped files: CaseFormatError, or a parse that round-trips. Both
    outcomes are counted: a parser that refused every file (the bug this catches, with one that
    accepted an edge out of range) would pass the loop alone."""
    v, edges = 40, generate_case(40, 0.1, seed=2)
    good = raw(v, len(edges)) + np.asarray(edges, dtype="<i4").tobytes()
    cases = [bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8)) for _ in range(200)]
    cases += [good[: int(rng.integers(0, len(good)))] for _ in range(200)]
    for _ in range(400):
        flipped = bytearray(good)
        i = int(rng.integers(0, len(flipped)))
        flipped[i] ^= 1 << int(rng.integers(0, 8))
        cases.append(bytes(flipped))
    assert parse_case(good)[0] == v
    accepted = refused = 0
    for data in cases:
        try:
            pv, pe = parse_case(data)
        except CaseFormatError:
            refused += 1
            continue
        accepted += 1
        assert raw(pv, len(pe)) + np.asarray(pe, dtype="<i4").tobytes() == data, "a parse must be the file, exactly"
        assert (
            (pe[:, :2] >= 0).all()
            and (pe[:, :2] < pv).all()
            and (pe[:, 2] >= 0).all()
            and (pe[:, 2] < UNREACHABLE).all()
        )
    assert accepted >= 100 and refused >= 300, (accepted, refused)


def test_fuzzed_outputs_get_a_clean_error_or_the_right_size(tmp_path, rng):
    for n in range(60):
        path = tmp_path / f"o{n}"
        path.write_bytes(bytes(rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8)))
        try:
            out = read_output(path, 4)
        except CaseFormatError:
            continue
        assert out.shape == (4, 4)


class _Kernel:
    """A stand-in for a blocked KernelSpec: its text, and how many times its plan was built."""

    def __init__(self, text: str) -> None:
        self.text, self.built = text, 0

    def as_text(self) -> str:
        return self.text

    def plan(self) -> str:
        self.built += 1
        return f"plan of {self.text}"


def test_time_split_solves_each_case_with_its_own_kernel_built_once(tmp_path, monkeypatch):
    """The plumbing of chapter 04's time split without a GPU: the solve is the C reference written
    to the output file, so what is checked is which kernel each case asked for, how often each was
    built, and that the table names it per case (the GPU test times real solves)."""
    from cudalab.labs.fw import nthu_gpu

    solved_with = []

    def solve_file(input_path, output_path, plan):
        solved_with.append(plan)
        v, edges = read_case(input_path)
        write_output(output_path, solve_cpu(v, edges))
        return dict.fromkeys(nthu_gpu.STAGES, 1.0), v

    monkeypatch.setattr(nthu_gpu, "solve_file", solve_file)
    shallow, deep = _Kernel("minplus:64"), _Kernel("minplus:256")
    kernel_for = {60: shallow, 90: deep, 120: shallow}.__getitem__
    split = nthu_gpu.time_split([60, 90, 120], 0.1, seed=3, workdir=tmp_path, repeats=2, kernel_for=kernel_for)
    assert split.groupby("v")["kernel"].agg(set).to_dict() == {
        60: {"minplus:64"},
        90: {"minplus:256"},
        120: {"minplus:64"},
    }
    assert (shallow.built, deep.built) == (1, 1)  # a kernel two cases use is built once
    assert solved_with == ["plan of minplus:64"] * 2 + ["plan of minplus:256"] * 2 + ["plan of minplus:64"] * 2
    assert split["status"].eq("ok").all() and set(split["checked_against"]) == {"cpu"}
