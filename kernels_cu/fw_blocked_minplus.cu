// Blocked Floyd-Warshall with phases 2 and 3 as min-plus products, the project's step past
// fw_blocked_registers.cu. With non-negative weights, once the pivot tile P = (r, r) is closed
// (phase 1), every other tile of round r is a product with no dependency along k:
//   phase 3, tile (i, j):       C = min(C, A (x) B),  A = tile (i, r), B = tile (r, j), both final;
//   phase 2, pivot row (r, j):  C = min(C, P (x) C),  P closed: a path from row r leaves the
//                               pivot block from its last pivot vertex k, so P[i][k] + C[k][j];
//   phase 2, pivot column (i, r): C = min(C, C (x) P), by the same argument from the other end,
// where (A (x) B)[i][j] = min over k of A[i][k] + B[k][j]. So one tile kernel, a register-tiled
// min-plus GEMM with K = BF, serves both phases, and phase 2 loses its barrier per k.
//
// BF (-DBF=64, the default, or 128): each tile of a round reads and writes its own BF x BF cells
// once (8 B per cell) for BF relaxations per cell, BF / 8 relaxations per DRAM byte: 8 at BF 64,
// above the 4.8 an H100 needs to feed its add-min pipe from HBM (16 T relaxations/s over
// 3.35 TB/s), 16 at BF 128. BF 128 halves the traffic but measures slower on the H100: its 256
// threads of 8 x 8 cells need more than the 128 registers two blocks per SM leave them, so they
// spill, and its phase 1 (BF^3 relaxations on one SM) is eight times longer. The pivot operands
// come from L2.
// Each thread owns an 8 x 8 patch of results (rows and columns in two groups of four, BF / 2
// apart, so that a warp's 16-byte shared loads are contiguous), 64 accumulators in registers.
// Per k it reads 8 + 8 operands in four 16-byte shared loads for 64 relaxations.
// The operands are staged in four chunks of KC = BF / 4 k through two shared-memory buffers, so
// that the next chunk is in flight while this one is used: B's rows by cp.async (compute
// capability 8.0 and later; a plain copy before), A's block through registers, stored transposed
// so that a thread's eight d[i][k] are two 16-byte loads.
// Distances use the NTHU convention (1073741823 = unreachable, so a + b never overflows int32);
// n must be a multiple of BF. Launch: phase 1 grid (1, 1) block (32, 32); phase 2 grid (R, 2) and
// phase 3 grid (R, R) (or see its `part`), block (BF / 8, BF / 8), dynamic shared memory two
// stages (see STAGE_INTS below).

// add_min(a, b, c) = min(a + b, c), one relaxation: one DPX instruction (VIADDMNMX) on compute
// capability 9.0, the add and the min elsewhere or built with -DNO_DPX; the ceiling runs this code.
#include "add_min.cuh"

#ifndef BF
#define BF 64
#endif
#if BF != 64 && BF != 128
#error "BF must be 64 or 128"
#endif
#define KC (BF / 4)                   // k per staged chunk: four chunks per product
#define AT_STRIDE (BF + 4)           // a row of the transposed A chunk, padded: 16-byte aligned, stores spread banks
#define HALF (BF / 2)
#define NT (BF / 8)                  // threads per side of the product's block
#define THREADS (NT * NT)
#define STAGE_INTS (KC * AT_STRIDE + KC * BF)
#define A_LOADS (BF * KC / 4 / THREADS)  // 16-byte loads of A per thread per chunk (4)
// dynamic shared memory of phases 2 and 3: two stages, 2 * 4 * STAGE_INTS bytes

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

// Chunk c of the operands, k = c*KC .. c*KC + KC - 1. B's KC rows go straight into shared memory
// by asynchronous copies. A's BF x KC block is read into registers (a thread takes 32 contiguous
// bytes of a row, so each load is one whole sector) and stored transposed by store_a, so that the
// eight d[i][k] a thread needs per k are two 16-byte loads; the pairs of k-quads a warp stores
// land 16 banks apart.
struct AChunk { int4 v[A_LOADS]; };

__device__ __forceinline__ AChunk load_a(const int* A, int n, int c, int tid)
{
    AChunk out;
#pragma unroll
    for (int p = 0; p < A_LOADS; ++p) {
        int idx = tid + p * THREADS;
        int i = (idx / 2) % BF, kq = idx % 2 + 2 * (idx / (2 * BF));
        out.v[p] = *reinterpret_cast<const int4*>(&A[(size_t)i * n + c * KC + 4 * kq]);
    }
    return out;
}

__device__ __forceinline__ void store_a(int* buf, const AChunk& a, int tid)
{
#pragma unroll
    for (int p = 0; p < A_LOADS; ++p) {
        int idx = tid + p * THREADS;
        int i = (idx / 2) % BF, kq = idx % 2 + 2 * (idx / (2 * BF));
        buf[(4 * kq + 0) * AT_STRIDE + i] = a.v[p].x;
        buf[(4 * kq + 1) * AT_STRIDE + i] = a.v[p].y;
        buf[(4 * kq + 2) * AT_STRIDE + i] = a.v[p].z;
        buf[(4 * kq + 3) * AT_STRIDE + i] = a.v[p].w;
    }
}

__device__ __forceinline__ void copy_b(int* buf, const int* B, int n, int c, int tid)
{
    int* Bs = buf + KC * AT_STRIDE;
#pragma unroll
    for (int p = 0; p < A_LOADS; ++p) {  // B's chunk is as large as A's
        int idx = tid + p * THREADS;
        int k = idx / (BF / 4), q = idx % (BF / 4);
        copy16(&Bs[k * BF + 4 * q], &B[(size_t)(c * KC + k) * n + 4 * q]);
    }
    copies_issued();
}

__device__ __forceinline__ int patch_offset(int p) { return p < 4 ? p : HALF + p - 4; }

// C = min(C, A (x) B) for one BF x BF tile; A, B and C point at their tiles' first cells in a
// row-major matrix with n columns. C may be A or B (phase 2): every read of the tile is staged
// before the one write at the end, and no other block touches it.
__device__ __forceinline__ void minplus_tile(const int* A, const int* B, int* C, int n)
{
    extern __shared__ __align__(16) int smem[];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * NT + tx;
    AChunk next = load_a(A, n, 0, tid);
    copy_b(smem, B, n, 0, tid);

    int acc[8][8];
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int4 v = *reinterpret_cast<const int4*>(&C[(size_t)(4 * ty + patch_offset(a)) * n + h * HALF + 4 * tx]);
            acc[a][4 * h] = v.x; acc[a][4 * h + 1] = v.y; acc[a][4 * h + 2] = v.z; acc[a][4 * h + 3] = v.w;
        }
    store_a(smem, next, tid);

#pragma unroll 1
    for (int c = 0; c < BF / KC; ++c) {
        int* stage = smem + (c & 1) * STAGE_INTS;
        int* following = smem + ((c + 1) & 1) * STAGE_INTS;
        bool more = c + 1 < BF / KC;
        if (more) {
            next = load_a(A, n, c + 1, tid);  // in flight while chunk c is used
            copy_b(following, B, n, c + 1, tid);
            wait_copies<1>();                 // chunk c's B has landed, c + 1's may still be in flight
        } else {
            wait_copies<0>();
        }
        __syncthreads();
        const int* At = stage;
        const int* Bs = stage + KC * AT_STRIDE;
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            int4 a0 = *reinterpret_cast<const int4*>(&At[k * AT_STRIDE + 4 * ty]);
            int4 a1 = *reinterpret_cast<const int4*>(&At[k * AT_STRIDE + HALF + 4 * ty]);
            int4 b0 = *reinterpret_cast<const int4*>(&Bs[k * BF + 4 * tx]);
            int4 b1 = *reinterpret_cast<const int4*>(&Bs[k * BF + HALF + 4 * tx]);
            int dik[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            int dkj[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int a = 0; a < 8; ++a)
#pragma unroll
                for (int b = 0; b < 8; ++b) acc[a][b] = add_min(dik[a], dkj[b], acc[a][b]);
        }
        if (more) store_a(following, next, tid);
        __syncthreads();  // chunk c's buffer is refilled at the top of the next iteration
    }

#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            *reinterpret_cast<int4*>(&C[(size_t)(4 * ty + patch_offset(a)) * n + h * HALF + 4 * tx]) =
                make_int4(acc[a][4 * h], acc[a][4 * h + 1], acc[a][4 * h + 2], acc[a][4 * h + 3]);
}

// Phase 1, the pivot tile's own Floyd-Warshall. Changes from fw_blocked_phase1: the cells stay in
// registers (32 x 32 threads, (BF/32)^2 cells each, strided by 32) and only row k and column k go
// through shared memory, published by their owners into one of two buffers: one barrier per k.
#define P1_CELLS (BF / 32)
extern "C" __global__ void __launch_bounds__(1024) fw_minplus_phase1(int* d, int n, int r)
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
            int buf = kk & 1;  // 32 is even, so k & 1 == kk & 1
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

// Phase 2: the pivot row's tiles (blockIdx.y == 0) as P (x) C, the pivot column's (blockIdx.y == 1)
// as C (x) P. Changes from fw_blocked_phase2: no barrier per k, the same product as phase 3.
extern "C" __global__ void __launch_bounds__(THREADS, 2) fw_minplus_phase2(int* d, int n, int r)
{
    int t = blockIdx.x;
    if (t == r) return;  // phase 1's tile (uniform across the block)
    const int* pivot = d + (size_t)r * BF * n + r * BF;
    if (blockIdx.y == 0) {
        int* own = d + (size_t)r * BF * n + t * BF;
        minplus_tile(pivot, own, own, n);
    } else {
        int* own = d + (size_t)t * BF * n + r * BF;
        minplus_tile(own, pivot, own, n);
    }
}

// Phase 3: every tile off the pivot row and column, C = min(C, A (x) B). Changes from
// fw_blocked_registers_phase3: 8 x 8 results per thread, operands staged in chunks by
// asynchronous copies instead of all at once, A read along k rather than transposed.
// `part` splits the round for a look-ahead (labs.fw.blocked.LookaheadPlan): 1 relaxes only the
// tiles of row and column r + 1 (grid (R, 2)), which round r + 1's phases 1 and 2 read, so that
// those phases can run beside part 2, every other tile (grid (R, R)); 0 is the whole round.
extern "C" __global__ void __launch_bounds__(THREADS, 2) fw_minplus_phase3(int* d, int n, int r, int part)
{
    int ti, tj;
    if (part == 1) {
        int t = blockIdx.x, q = r + 1;
        if (t == r || (blockIdx.y == 1 && t == q)) return;  // phase 2's tiles; (q, q) once
        ti = blockIdx.y == 0 ? q : t;
        tj = blockIdx.y == 0 ? t : q;
    } else {
        ti = blockIdx.y;
        tj = blockIdx.x;
        if (ti == r || tj == r) return;  // uniform across the block: those tiles were phase 2's
        if (part == 2 && (ti == r + 1 || tj == r + 1)) return;
    }
    minplus_tile(d + (size_t)ti * BF * n + r * BF, d + (size_t)r * BF * n + tj * BF,
                 d + (size_t)ti * BF * n + tj * BF, n);
}
