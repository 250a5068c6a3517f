// Blocked Floyd-Warshall with phases 2 and 3 as min-plus products, the project's step past
// fw_blocked_registers.cu. With non-negative weights, once the pivot block P = (r, r) is closed
// (phase 1), every other cell of round r is a product with no dependency along k:
//   phase 3, tile (i, j):       C = min(C, A (x) B),  A = strip (i, r), B = strip (r, j), both final;
//   phase 2, pivot row (r, j):  C = min(C, P (x) C),  P closed: a path from row r leaves the
//                               pivot block from its last pivot vertex k, so P[i][k] + C[k][j];
//   phase 2, pivot column (i, r): C = min(C, C (x) P), by the same argument from the other end,
// where (A (x) B)[i][j] = min over k of A[i][k] + B[k][j]. So one tile kernel, a register-tiled
// min-plus GEMM with K = BF, serves both phases, and phase 2 loses its barrier per k.
//
// Two sizes: BF, the depth of a round (its pivot block's side: 64, 128, 256 or 512), and TILE = 64,
// the side of the output tile a block of 64 threads computes (8 x 8 cells each). Changed from the
// first version of this kernel, where a block's tile was BF x BF:
//   1. The output tile stays 64 x 64 whatever BF is, so a deeper round costs no registers: at
//      BF 128 the first version needed 256 threads of 8 x 8 cells with two blocks per SM, and
//      spilled. Each tile of a round reads and writes its own cells once (8 B per cell) for BF
//      relaxations per cell: BF / 8 relaxations per DRAM byte, 32 at BF 256, and a block's fixed
//      costs (its first chunk, its C tile, its stores) are spread over BF / 16 chunks.
//   2. C's tile is copied into shared memory beside chunk 1's operands and folded in at the end
//      (the accumulators start at INT_MAX), so its DRAM latency overlaps chunk 0's relaxations
//      instead of delaying the first one.
//   3. Phase 2's strips are cut into TILE-wide pieces too. A piece of the pivot row reads the
//      whole strip (BF rows) as its B operand while other blocks write their rows of it. That race
//      is benign: every value read lies between the strip's old and final values, and
//      min(C', P (x) C') is the final strip for any such C' (P closed, with a zero diagonal).
//   4. A thread's sources of the next chunk are pointers kept from chunk to chunk, advanced by one
//      chunk per trip (A's four loads from two of them: loads 2 and 3 read the rows of 0 and 1, two
//      k-quads on), and its places in a stage are computed once. Rebuilt from the chunk number at
//      each trip, the 64-bit addresses took 33 integer instructions a chunk beside the 1,024
//      VIADDMNMX, which issue at half rate on the same unit; now 12 (docs/tuning-log.md).
//   5. A thread's four copies of B's chunk are four pieces of one row (row tid / 4, pieces 16 ints
//      apart), so one pointer and one stage offset serve them all (the pieces at immediate
//      offsets), advanced by one 64-bit add a chunk instead of four: 8 integer ALU instructions a
//      chunk, 139 registers against 153. B's staged rows are 16 ints longer than a tile row, so
//      that the eight rows a warp's copy writes fall two to a bank-wide line, without conflict.
//      On an H100, 0.931 / 0.955 of the add+min ceiling (8192 / 16384) against 0.927 / 0.949 in
//      the same run (docs/tuning-log.md).
// Phase 1 runs here for BF 64 and 128 (BF^3 relaxations on one SM); at BF 256 and 512 the host
// closes the pivot block as a blocked solve of four rounds of its own, with the BF 64 (BF 128)
// build of these kernels pointed at the block's first cell (labs.fw.blocked.kernels.minplus_closing_bf).
// BF 512 costs no more registers or shared memory than 256: a block relaxes twice as deep per
// tile it loads and stores, and a solve has half the rounds, each ending in a drain of phase 3's
// last blocks; the first round's serial phases 1 and 2 are twice as long.
//
// Per k a thread reads 8 + 8 operands in four 16-byte shared loads for 64 relaxations. The
// operands are staged in chunks of KC = 16 k through two shared-memory buffers, so that the next
// chunk is in flight while this one is used: B's rows by cp.async (compute capability 8.0 and
// later; a plain copy before), A's block through registers, stored transposed so that a thread's
// eight d[i][k] are two 16-byte loads. Each thread's cells are rows and columns in two groups of
// four, TILE / 2 apart, so that a warp's 16-byte shared loads are contiguous.
// Distances use the NTHU convention (1073741823 = unreachable, so a + b never overflows int32);
// n must be a multiple of BF. Launch, for R = n / BF rounds and S = BF / TILE: phase 1 grid (1, 1)
// block (32, 32); phase 2 grid (R S, 2 S), phase 3 grid (R S, R S) (or see its `part`), block
// (8, 8), dynamic shared memory two stages of a chunk and C's tile (STAGE_INTS and TILE^2 ints).

// add_min(a, b, c) = min(a + b, c), one relaxation: one DPX instruction (VIADDMNMX) on compute
// capability 9.0, the add and the min elsewhere or built with -DNO_DPX; the ceiling runs this code.
#include "add_min.cuh"

#ifndef BF
#define BF 64
#endif
#if BF != 64 && BF != 128 && BF != 256 && BF != 512
#error "BF must be 64, 128, 256 or 512"
#endif
#define TILE 64                      // a block's output tile: TILE x TILE cells
#define S (BF / TILE)                // tiles per side of a round's pivot block
#define KC 16                        // k per staged chunk
#define AT_STRIDE (TILE + 4)         // a row of the transposed A chunk, padded: 16-byte aligned, stores spread banks
#define HALF (TILE / 2)
#define NT (TILE / 8)                // threads per side of a block (8 x 8 cells each)
#define THREADS (NT * NT)
#define BS_STRIDE (TILE + 16)        // a staged row of B, padded: item 5's copies spread banks
#define STAGE_INTS (KC * AT_STRIDE + KC * BS_STRIDE)
#define A_LOADS (TILE * KC / 4 / THREADS)  // 16-byte loads of A per thread per chunk (4)
// dynamic shared memory of phases 2 and 3: 4 * (2 * STAGE_INTS + TILE * TILE) bytes

__device__ __forceinline__ void copy16(int* smem, const int* gmem)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
#else
    *reinterpret_cast<int4*>(smem) = *reinterpret_cast<const int4*>(gmem);
#endif
}

__device__ __forceinline__ void copies_issued()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int PENDING>
__device__ __forceinline__ void wait_copies()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

// A chunk of the operands, k = c*KC .. c*KC + KC - 1. B's KC rows go straight into shared memory
// by asynchronous copies. A's TILE x KC block is read into registers (a thread takes 32 contiguous
// bytes of a row, so each load is one whole sector) and stored transposed by store_a, so that the
// eight d[i][k] a thread needs per k are two 16-byte loads; the pairs of k-quads a warp stores
// land 16 banks apart.
struct AChunk { int4 v[A_LOADS]; };

// A's chunk into a stage, transposed: load p's four k at place[p], place[p] + AT_STRIDE, ...
__device__ __forceinline__ void store_a(int* buf, const AChunk& a, const int (&place)[A_LOADS])
{
#pragma unroll
    for (int p = 0; p < A_LOADS; ++p) {
        buf[place[p]] = a.v[p].x;
        buf[place[p] + AT_STRIDE] = a.v[p].y;
        buf[place[p] + 2 * AT_STRIDE] = a.v[p].z;
        buf[place[p] + 3 * AT_STRIDE] = a.v[p].w;
    }
}

__device__ __forceinline__ int patch_offset(int p) { return p < 4 ? p : HALF + p - 4; }

// C = min(C, A (x) B) for one TILE x TILE tile with K = BF (A is TILE x BF, B is BF x TILE); A, B
// and C point at their first cells in a row-major matrix with n columns. C may lie in B (phase 2):
// every read of this block's own cells is staged before its one write at the end.
__device__ __forceinline__ void minplus_tile(const int* A, const int* B, int* C, int n)
{
    static_assert(THREADS == 64 && TILE == 64 && A_LOADS == 4, "A's two row pointers below");
    extern __shared__ __align__(16) int smem[];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * NT + tx;
    // Item 4: each thread's sources of the next chunk, kept as pointers and advanced by one chunk
    // per trip, and its places in a stage, computed once. A's loads 2 and 3 read the rows of loads
    // 0 and 1 two k-quads on, so two pointers serve A's four loads.
    const int4* a_rows[2];
    // Item 5: B's copies are row tid / 4 of the chunk, pieces tid % 4 + 4 p (16 p ints on).
    static_assert(KC * 4 == THREADS, "four threads a row of B's chunk");
    const int* b_next = &B[(size_t)(tid / 4) * n + 4 * (tid % 4)];
    const int b_dst = KC * AT_STRIDE + (tid / 4) * BS_STRIDE + 4 * (tid % 4);
    int a_dst[A_LOADS];
    AChunk first;
    const size_t b_chunk = (size_t)KC * n;
#pragma unroll
    for (int p = 0; p < A_LOADS; ++p) {
        int idx = tid + p * THREADS;
        int i = (idx / 2) % TILE, kq = idx % 2 + 2 * (idx / (2 * TILE));
        const int4* a = reinterpret_cast<const int4*>(&A[(size_t)i * n + 4 * kq]);
        first.v[p] = *a;
        if (p < 2) a_rows[p] = a + KC / 4;
        a_dst[p] = 4 * kq * AT_STRIDE + i;
        copy16(smem + b_dst + 16 * p, b_next + 16 * p);
    }
    b_next += b_chunk;
    copies_issued();

    int acc[8][8];
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int b = 0; b < 8; ++b) acc[a][b] = 0x7fffffff;  // min(a + b, INT_MAX) = a + b: no overflow
    int* Cs = smem + 2 * STAGE_INTS;  // TILE x TILE, row-major
    // C's tile, issued after chunk 0's group is committed: it joins chunk 1's group, waited for at
    // the top of iteration 1, so its DRAM latency overlaps chunk 0's relaxations.
#pragma unroll
    for (int p = 0; p < TILE * TILE / 4 / THREADS; ++p) {
        int idx = tid + p * THREADS, i = idx / (TILE / 4), q = idx % (TILE / 4);
        copy16(&Cs[i * TILE + 4 * q], &C[(size_t)i * n + 4 * q]);
    }
    store_a(smem, first, a_dst);

    int here = 0, there = STAGE_INTS;  // offsets of this chunk's stage and of the next one's
#pragma unroll 1
    for (int c = 0; c < BF / KC; ++c) {
        bool more = c + 1 < BF / KC;
        AChunk next;
        if (more) {
            next.v[0] = a_rows[0][0];
            next.v[1] = a_rows[1][0];
            next.v[2] = a_rows[0][2];
            next.v[3] = a_rows[1][2];
#pragma unroll
            for (int p = 0; p < A_LOADS; ++p) copy16(smem + there + b_dst + 16 * p, b_next + 16 * p);
            copies_issued();
            wait_copies<1>();
        } else {
            wait_copies<0>();
        }
        __syncthreads();
        const int* At = smem + here;
        const int* Bs = At + KC * AT_STRIDE;
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            int4 a0 = *reinterpret_cast<const int4*>(&At[k * AT_STRIDE + 4 * ty]);
            int4 a1 = *reinterpret_cast<const int4*>(&At[k * AT_STRIDE + HALF + 4 * ty]);
            int4 b0 = *reinterpret_cast<const int4*>(&Bs[k * BS_STRIDE + 4 * tx]);
            int4 b1 = *reinterpret_cast<const int4*>(&Bs[k * BS_STRIDE + HALF + 4 * tx]);
            int dik[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            int dkj[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int a = 0; a < 8; ++a)
#pragma unroll
                for (int b = 0; b < 8; ++b) acc[a][b] = add_min(dik[a], dkj[b], acc[a][b]);
        }
        if (more) store_a(smem + there, next, a_dst);
        __syncthreads();
        a_rows[0] += KC / 4;
        a_rows[1] += KC / 4;
        b_next += b_chunk;
        int stage = here;
        here = there;
        there = stage;
    }

#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int4 v = *reinterpret_cast<const int4*>(&Cs[(4 * ty + patch_offset(a)) * TILE + h * HALF + 4 * tx]);
            acc[a][4 * h] = min(acc[a][4 * h], v.x); acc[a][4 * h + 1] = min(acc[a][4 * h + 1], v.y);
            acc[a][4 * h + 2] = min(acc[a][4 * h + 2], v.z); acc[a][4 * h + 3] = min(acc[a][4 * h + 3], v.w);
        }
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            *reinterpret_cast<int4*>(&C[(size_t)(4 * ty + patch_offset(a)) * n + h * HALF + 4 * tx]) =
                make_int4(acc[a][4 * h], acc[a][4 * h + 1], acc[a][4 * h + 2], acc[a][4 * h + 3]);
}

// Phase 1, the pivot block's own Floyd-Warshall, for BF 64 and 128 (at BF 256 and 512 the host
// runs a blocked solve of the block instead). Changes from fw_blocked_phase1: the cells stay in
// registers (32 x 32 threads, (BF/32)^2 cells each, strided by 32) and only row k and column k go
// through shared memory, published by their owners into one of two buffers: one barrier per k.
// At most 40 registers a thread (__maxnreg__, which excludes __launch_bounds__; a block of 1024
// threads needs at most 64): on the look-ahead lane this block must find room among phase 3's
// blocks (about 9 Ki registers each), and at BF 128 it took 56 a thread, 56 Ki, so it waited
// for an SM to empty. At 40 (39 used, no spill; 28 at BF 64, 27 before) it fits beside two. The
// BF 512 solve was 0.5% faster at 8192 and 0.13% at 16384 on an H200 (docs/tuning-log.md).
#if BF <= 128
#define P1_CELLS (BF / 32)
extern "C" __global__ void __maxnreg__(40) fw_minplus_phase1(int* d, int n, int r)
{
    __shared__ int rowk[2][BF], colk[2][BF];
    int tx = threadIdx.x, ty = threadIdx.y;
    int* tile = d + (size_t)r * BF * n + r * BF;
    int acc[P1_CELLS][P1_CELLS];
#pragma unroll
    for (int a = 0; a < P1_CELLS; ++a)
#pragma unroll
        for (int b = 0; b < P1_CELLS; ++b) acc[a][b] = tile[(size_t)(ty + 32 * a) * n + tx + 32 * b];
#pragma unroll
    for (int kb = 0; kb < P1_CELLS; ++kb)
        for (int kk = 0; kk < 32; ++kk) {
            int buf = kk & 1;
            if (ty == kk)
#pragma unroll
                for (int b = 0; b < P1_CELLS; ++b) rowk[buf][tx + 32 * b] = acc[kb][b];
            if (tx == kk)
#pragma unroll
                for (int a = 0; a < P1_CELLS; ++a) colk[buf][ty + 32 * a] = acc[a][kb];
            __syncthreads();
            int dkj[P1_CELLS], dik[P1_CELLS];
#pragma unroll
            for (int b = 0; b < P1_CELLS; ++b) dkj[b] = rowk[buf][tx + 32 * b];
#pragma unroll
            for (int a = 0; a < P1_CELLS; ++a) dik[a] = colk[buf][ty + 32 * a];
#pragma unroll
            for (int a = 0; a < P1_CELLS; ++a)
#pragma unroll
                for (int b = 0; b < P1_CELLS; ++b) acc[a][b] = add_min(dik[a], dkj[b], acc[a][b]);
        }
#pragma unroll
    for (int a = 0; a < P1_CELLS; ++a)
#pragma unroll
        for (int b = 0; b < P1_CELLS; ++b) tile[(size_t)(ty + 32 * a) * n + tx + 32 * b] = acc[a][b];
}

#endif

// Phase 2: grid (R S, 2 S). Changes from fw_blocked_phase2: no barrier per k, the same product as
// phase 3. blockIdx.y < S: piece y of the pivot row's strip at column tile x,
// as P[rows y] (x) strip; else piece y - S of the pivot column's strip at row tile x, as strip (x) P.
extern "C" __global__ void __launch_bounds__(THREADS, 2) fw_minplus_phase2(int* d, int n, int r)
{
    int t = blockIdx.x, y = blockIdx.y;
    if (t / S == r) return;  // phase 1's tile
    const int* pivot = d + (size_t)r * BF * n + r * BF;
    if (y < S) {
        int* own = d + (size_t)(r * BF + y * TILE) * n + t * TILE;
        minplus_tile(pivot + (size_t)y * TILE * n, d + (size_t)r * BF * n + t * TILE, own, n);
    } else {
        int s = y - S;
        int* own = d + (size_t)t * TILE * n + r * BF + s * TILE;
        minplus_tile(d + (size_t)t * TILE * n + r * BF, pivot + s * TILE, own, n);
    }
}

// Phase 3: every tile off the pivot row and column strips, C = min(C, A (x) B). Changes from
// fw_blocked_registers_phase3: 8 x 8 results per thread, operands staged in chunks by
// asynchronous copies instead of all at once, A read along k rather than transposed.
// `part` splits the round for a look-ahead (labs.fw.blocked.plans.LookaheadPlan): 1 relaxes only
// the tiles of strips r + 1 (grid (R S, 2 S)), which round r + 1's phases 1 and 2 read, so that
// those phases can run beside part 2, every other tile (grid (R S, R S)); 0 is the whole round.
extern "C" __global__ void __launch_bounds__(THREADS, 2) fw_minplus_phase3(int* d, int n, int r, int part)
{
    int ti, tj;
    if (part == 1) {
        int t = blockIdx.x, y = blockIdx.y, q = r + 1;
        if (t / S == r) return;
        if (y < S) {
            ti = q * S + y;
            tj = t;
        } else {
            if (t / S == q) return;  // the (q, q) tiles: done by the row pieces
            ti = t;
            tj = q * S + y - S;
        }
    } else {
        ti = blockIdx.y;
        tj = blockIdx.x;
        if (ti / S == r || tj / S == r) return;
        if (part == 2 && (ti / S == r + 1 || tj / S == r + 1)) return;
    }
    minplus_tile(d + (size_t)ti * TILE * n + r * BF, d + (size_t)r * BF * n + tj * TILE,
                 d + (size_t)ti * TILE * n + tj * TILE, n);
}
