"""Every .cu file compiles with nvcc (no GPU needed); errors name the file and line."""

import shutil

import pytest

from cudalab.core.kernels import KernelCompileError, first_error
from cudalab.core.paths import KERNELS_DIR
from cudalab.toolchain.nvcc import cuda_tool, nvcc_check, parse_ptxas

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
KERNEL_FILES = sorted(KERNELS_DIR.glob("*.cu"))


def test_there_are_kernels():
    assert KERNEL_FILES


# The second architecture (sm_75, Turing: the oldest CUDA 13 builds for) is in make test-full; make
# test compiles every file and shape at sm_90.
ARCHS = [pytest.param("sm_75", marks=pytest.mark.full), "sm_90"]


@needs_nvcc
@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("arch", ARCHS)
def test_kernel_file_compiles_and_reports_resources(path, arch, kernel_resources_report):
    usages = nvcc_check(path, arch=arch)
    assert usages, f"{path.name} defines no kernel"
    for u in usages:
        kernel_resources_report.append((path.name, u))
        assert u.arch == arch and u.registers > 0
        assert u.spill_store_bytes == 0, f"{u.kernel} spills registers"


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(
    "d,ppt,threads,cpair,prefetch",
    [
        (32, 2, 128, 2, 0),
        (32, 1, 128, 2, 0),
        (32, 4, 128, 2, 0),
        (32, 4, 256, 2, 0),
        (32, 2, 256, 1, 0),
        (32, 4, 128, 1, 0),
        (32, 2, 128, 2, 1),
        (32, 1, 256, 1, 1),
        (64, 1, 128, 2, 1),
        (12, 8, 128, 2, 0),
        (6, 8, 128, 2, 1),
        (8, 8, 256, 1, 0),
        (7, 2, 128, 2, 0),
        (33, 2, 128, 2, 0),
        (64, 2, 128, 2, 0),
        (3, 1, 128, 2, 0),
        (128, 1, 128, 2, 0),
    ],
)
def test_the_register_kmeans_kernel_compiles_without_spills_at_its_shapes(arch, d, ppt, threads, cpair, prefetch):
    """km_06 keeps D x PPT coordinates in registers: every plan dot_shape makes (PPT = 2 to D = 64,
    1 to 128), the tuning run's PPT = 4 at D = 32 (128 or 256 threads, one or two centres a step)
    PPT = 8 to D = 12 and the prefetching builds (2 x D x PPT to 128) compile, with no spills."""
    options = (f"-DD={d}", f"-DPPT={ppt}", f"-DTHREADS={threads}", f"-DCPAIR={cpair}", f"-DPREFETCH={prefetch}")
    (usage,) = nvcc_check("km_06_dot_assign.cu", arch=arch, options=options)
    assert usage.kernel == "kmeans_dot" and usage.spill_store_bytes == 0 and usage.spill_load_bytes == 0
    if arch == "sm_90" and (d, ppt, threads, prefetch) == (32, 2, 128, 0):
        assert usage.registers <= 128  # at least four 128-thread blocks' registers per SM


@needs_nvcc
def test_compile_error_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.cu"
    bad.write_text('extern "C" __global__ void k(int* a)\n{\n    a[0] = undefined_name;\n}\n')
    with pytest.raises(KernelCompileError) as err:
        nvcc_check(bad)
    assert err.value.line == 3
    assert str(err.value).startswith(f"{bad}:3: "), "the file by its full path, and the line"
    assert "undefined_name" in str(err.value)
    assert "compiler log" in str(err.value)


def test_first_error_reads_nvrtc_logs():
    log = (
        '/repo/kernels_cu/fw_basic_2d.cu(7): warning #177-D: variable "x" was declared but never referenced\n'
        '/repo/kernels_cu/fw_basic_2d.cu(12): error: identifier "Mn" is undefined\n'
        '1 error detected in the compilation of "fw_basic_2d.cu".\n'
    )
    assert first_error(log) == ("/repo/kernels_cu/fw_basic_2d.cu", 12, 'identifier "Mn" is undefined')


def test_first_error_without_location_keeps_the_message():
    assert first_error("nvcc fatal   : Unsupported gpu architecture 'sm_1'\n") == (
        None,
        None,
        "nvcc fatal   : Unsupported gpu architecture 'sm_1'",
    )


def test_parse_ptxas_reads_registers_shared_memory_and_spills():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'tiled' for 'sm_90'
ptxas info    : Function properties for tiled
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
"""
    tiled, plain = parse_ptxas(log)
    assert (tiled.kernel, tiled.registers, tiled.shared_bytes, tiled.stack_bytes, tiled.spill_store_bytes) == (
        "tiled",
        40,
        8192,
        8,
        4,
    )
    assert (plain.kernel, plain.registers, plain.shared_bytes) == ("plain", 12, 0)


# The compile-time variants the chapters (and chapter 04's blocking factors) build.
VARIANTS = (
    [("fw_shared_tile.cu", f"-DTILE={t}") for t in (8, 16, 32)]
    + [("fw_blocked.cu", f"-DBF={bf}") for bf in (8, 16, 32, 64)]
    + [("vecmax_coalescing.cu", "-DTRACE_ACCESS")]
)
# The registers kernels on add_min.cuh's plain path (-DNO_DPX), as chapter 04 builds them beside DPX.
VARIANTS += [("fw_blocked_registers.cu", "-DBF=64 -DNO_DPX"), ("fw_blocked_minplus.cu", "-DBF=64 -DNO_DPX")]
# The min-plus kernel at each depth of a round: tiles of 64 at every BF, so none may spill.
VARIANTS += [("fw_blocked_minplus.cu", f"-DBF={bf}") for bf in (64, 128, 256, 512)]
# Chapter 05's ladder and the shapes its profiles tune over that must not spill (16 x 16 results per
# thread spill by design: the tuning sweep shows that cliff).
VARIANTS += [("mm_01_shared_tile.cu", o) for o in ("-DTILE=16", "-DTILE=32", "-DTILE=32 -DUNROLL=16")]
VARIANTS += [("mm_02_footprint.cu", f"-DBLOCK={b} -DFOOT={f}") for b, f in ((16, 32), (16, 48), (16, 64), (32, 64))]
VARIANTS += [
    ("mm_02_footprint.cu", o) for o in ("-DBLOCK=16 -DFOOT=32 -DALIGNED_COPY=1", "-DBLOCK=16 -DFOOT=32 -DKTILE=64")
]
VARIANTS += [
    ("mm_03_register_blocked.cu", o)
    for o in (
        "-DDOUBLE_BUFFER=0",
        "-DBM=128 -DBN=256",
        "-DBM=128 -DBN=256 -DTN=16",
        "-DBM=256 -DBN=128 -DTM=16",
        "-DBM=64 -DBN=128 -DTM=4 -DBK=16",
        "-DBM=128 -DBN=64 -DTN=4 -DBK=16",
    )
]
# Chapter 05's final kernel with stream-K last waves (the counter, the partial sums, the k-order fixup).
VARIANTS += [
    ("mm_04_warptile_async.cu", "-DBM=128 -DBN=256 -DBK=16 -DWM=64 -DWN=64 -DTM=8 -DTN=16 -DSTAGES=3 -DSPLIT_WAVE=132"),
    # the small-n patch with inward edges (item 8), whole tiles and stream-K
    ("mm_04_warptile_async.cu", "-DBM=64 -DBN=128 -DBK=16 -DWM=32 -DWN=64 -DTM=8 -DTN=8 -DSTAGES=4 -DINWARD_EDGES=1"),
    (
        "mm_04_warptile_async.cu",
        "-DBM=64 -DBN=128 -DBK=16 -DWM=32 -DWN=64 -DTM=8 -DTN=8 -DSTAGES=4 -DMIN_BLOCKS=2 -DINWARD_EDGES=1 -DSPLIT_WAVE=264",
    ),
]
# Chapter 06's fused k-means pass in the shapes its grids use, on both of its paths.
VARIANTS += [
    ("km_03_fused.cu", o)
    for o in (
        "-DSUMS_BY_WARP=1",
        "-DSUMS_BY_WARP=1 -DK=32 -DD=64",
        "-DK=128 -DD=32 -DCOPIES=2",
        "-DK=8 -DD=2 -DSUMS_BY_WARP=1",
        "-DPOINTS=2 -DCENTRE_UNROLL=4",
    )
]
# The tiled pass in the blockings gpu.tiled_shape picks for those grids (and an odd K, which loads
# its centres one by one).
VARIANTS += [
    ("km_04_tiled.cu", o)
    for o in (
        "",
        "-DK=8 -DD=2 -DG=1 -DTHREADS=64",
        "-DK=128 -DD=32 -DG=16",
        "-DK=32 -DD=64",
        "-DK=7 -DD=5 -DTQ=7 -DG=1 -DTHREADS=64",
    )
]

# The tensor-core pass at its limits (K = 64, D = 32), at padded D and K, and at the chapter's shapes.
VARIANTS += [
    ("km_07_tensor_scores.cu", o)
    for o in ("", "-DK=64 -DD=32", "-DK=7 -DD=5 -DCOPIES=8", "-DK=8 -DD=32 -DCOPIES=8 -DTHREADS=256", "-DK=32 -DD=8")
]


# ptxas takes 25 s over the first (K x D accumulators unrolled) and 9 s over the second: make test-full
HEAVY_VARIANTS = {("km_03_fused.cu", "-DK=128 -DD=32 -DCOPIES=2"), ("km_03_fused.cu", "-DSUMS_BY_WARP=1 -DK=32 -DD=64")}


@needs_nvcc
@pytest.mark.parametrize(
    "name,option",
    [pytest.param(n, o, marks=pytest.mark.full) if (n, o) in HEAVY_VARIANTS else (n, o) for n, o in VARIANTS],
    ids=[f"{n}{o}" for n, o in VARIANTS],
)
def test_compile_time_variants(name, option, kernel_resources_report):
    usages = nvcc_check(KERNELS_DIR / name, arch="sm_90", options=option.split())
    assert usages
    for u in usages:
        kernel_resources_report.append((f"{name} {option}", u))
        assert u.spill_store_bytes == 0, f"{u.kernel} {option} spills registers"


def test_parse_sass_counts_opcodes_per_kernel():
    from cudalab.toolchain.sass import parse_sass

    text = """
        Function : add_min_dpx
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
        /*0920*/                   VIADDMNMX R7, R7, R0.reuse, UR19, PT ;  /* 0x0000001307077e46 */
        /*0930*/                   VIADDMNMX R9, R9, R0, UR20, PT ;        /* 0x0000001409097e46 */
        /*0940*/              @!P0 BRA 0x920 ;                             /* 0x0000000000008947 */
        Function : plain
        /*0010*/                   LDS.128 R4, [R2] ;                      /* 0x0000000002047984 */
        /*0020*/                   IMNMX R3, R3, R4, PT ;                  /* 0x0000000403037217 */
    """
    assert parse_sass(text) == {"add_min_dpx": {"LDC": 1, "VIADDMNMX": 2, "BRA": 1}, "plain": {"LDS": 1, "IMNMX": 1}}


needs_cuobjdump = pytest.mark.skipif(
    cuda_tool("nvcc") is None or cuda_tool("cuobjdump") is None, reason="nvcc and cuobjdump are needed"
)


@needs_cuobjdump
def test_add_min_is_one_dpx_instruction_in_the_ceiling_and_the_minplus_product():
    """add_min.cuh's add_min is one VIADDMNMX on sm_90, in the ceiling's DPX kernel and in the
    min-plus product's inner loop alike: 8 x 8 cells per thread over KC = 16 unrolled k."""
    from cudalab.toolchain.sass import sass_opcodes

    ceiling = sass_opcodes("int_add_min_ceiling.cu", "sm_90", ("-DCHAINS=16",))
    assert ceiling["add_min_dpx"].get("VIADDMNMX", 0) >= 16 and "IMNMX" not in ceiling["add_min_dpx"]
    minplus = sass_opcodes("fw_blocked_minplus.cu", "sm_90", ("-DBF=64",))
    assert minplus["fw_minplus_phase3"].get("VIADDMNMX", 0) == 8 * 8 * 16


@needs_cuobjdump
@pytest.mark.parametrize(
    ("file", "options", "kernel", "relaxations"),
    [
        ("fw_blocked_minplus.cu", ("-DBF=64",), "fw_minplus_phase3", 8 * 8 * 16),
        ("fw_blocked_registers.cu", ("-DBF=64",), "fw_blocked_registers_phase3", 4 * 4 * 8),
    ],
)
def test_a_build_without_dpx_issues_on_sm_90_what_the_sm_80_build_issues(file, options, kernel, relaxations):
    """-DNO_DPX is a build without DPX: on sm_90 its phase 3 has no VIADDMNMX (ptxas would fuse a
    plain min(a + b, c) into one), and its adds and mins are the sm_80 build's: an IMAD and a min
    per relaxation, where the DPX build has one VIADDMNMX."""
    from cudalab.toolchain.sass import sass_opcodes

    dpx = sass_opcodes(file, "sm_90", options)[kernel]
    plain = sass_opcodes(file, "sm_90", (*options, "-DNO_DPX"))[kernel]
    ampere = sass_opcodes(file, "sm_80", options)[kernel]
    assert dpx.get("VIADDMNMX", 0) >= relaxations
    assert "VIADDMNMX" not in plain and "VIADDMNMX" not in ampere
    # every relaxation a min of its own and an IMAD for its add (sm_80 writes it IMAD.IADD)
    assert plain.get("VIMNMX", 0) >= relaxations and ampere.get("IMNMX", 0) == plain["VIMNMX"]
    assert plain.get("IMAD", 0) - dpx.get("IMAD", 0) >= 0.95 * relaxations  # ptxas may share one
    assert abs(plain["IMAD"] - ampere.get("IMAD", 0)) <= 0.05 * relaxations


@needs_cuobjdump
def test_the_plain_ceiling_is_two_instructions_per_relaxation_on_sm_90():
    """The ceiling's add_min_plain measures the pair (IMAD and VIMNMX) in its loop, the DPX kernel one
    VIADDMNMX: their ratio on one GPU is what the fused instruction is worth."""
    from cudalab.toolchain.sass import sass_opcodes

    ceiling = sass_opcodes("int_add_min_ceiling.cu", "sm_90", ("-DCHAINS=16",))
    plain, dpx = ceiling["add_min_plain"], ceiling["add_min_dpx"]
    assert plain.get("VIMNMX", 0) >= 2 * 16 and plain.get("IMAD", 0) >= 2 * 16
    assert plain.get("VIADDMNMX", 0) < plain["VIMNMX"] / 2  # only outside the unrolled loop
    assert dpx.get("VIADDMNMX", 0) >= 2 * 16 and "VIMNMX" not in dpx


@needs_cuobjdump
def test_a_sass_table_compiles_each_build_for_its_own_architecture_where_it_names_one():
    from cudalab.toolchain.sass import sass_table

    table = sass_table(
        [("here", "fw_blocked_minplus.cu", ("-DBF=64",)), ("ampere", "fw_blocked_minplus.cu", ("-DBF=64",), "sm_80")],
        "sm_90",
    )
    arch = table.groupby("build")["arch"].first()
    assert arch["here"] == "sm_90" and arch["ampere"] == "sm_80"
    opcodes = table.groupby("build")["opcode"].agg(set)
    assert "VIADDMNMX" in opcodes["here"] and "VIADDMNMX" not in opcodes["ampere"] and "IMNMX" in opcodes["ampere"]
