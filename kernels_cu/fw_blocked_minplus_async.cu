// Blocked Floyd-Warshall, phases 2 and 3 as min-plus products with both operands staged by
// asynchronous copies: the step past fw_blocked_minplus.cu (whose phase 1 the plan keeps; see
// that file for why phases 2 and 3 are products C = min(C, A (x) B) of BF x BF tiles).
//
// What changes relative to fw_blocked_minplus.cu's tile product:
// - A's chunk is no longer read into registers and stored transposed (16 registers held across
//   the whole chunk's arithmetic, 16 scalar shared stores and their index math per chunk): it is
//   copied row-major by cp.async like B, and a thread reads its eight d[i][k] four k at a time,
//   one 16-byte load per row (eight loads per four k: the same two loads per k as before). The
//   16-byte columns of each row are XOR-swizzled by (row / 4) so that the four rows a warp reads
//   at once fall in different banks.
// - __launch_bounds__(THREADS, MIN_BLOCKS): 6 blocks (12 warps) per SM at BF 64, as the
//   predecessor ran (168 registers, no spills; asking for 7 or 8 caps the registers at 128 and
//   ptxas spills the C and operand addresses it keeps across the loop), and 1 block of 256
//   threads at BF 128 (under 200 registers, no spills), where the predecessor's cap of 128 spilled.
// - STAGES (2, 3 or 4) buffers of a KC = BF / 4 chunk each, one barrier per chunk instead of two:
//   chunk c + STAGES - 1 is issued right after the barrier that ends everyone's use of chunk
//   c - 1's buffer, so up to STAGES - 1 chunks are in flight while chunk c is relaxed.
//
// Build options: -DBF=64 (default) or 128; -DSTAGES=2|3|4 (default 3); -DMIN_BLOCKS (default 6
// at BF 64, 1 at BF 128); -DNO_DPX (add_min.cuh). Launch: phase 2 grid (R, 2), phase 3 grid
// (R, R) or (R, 2) for its look-ahead part (as fw_blocked_minplus.cu), block (BF / 8, BF / 8),
// dynamic shared memory STAGES * 2 * BF * KC * 4 bytes. n must be a multiple of BF (the plan pads).
// Distances use the NTHU convention (1073741823 = unreachable, so a + b never overflows int32).

#include "add_min.cuh"

#ifndef BF
#define BF 64
#endif
#if BF != 64 && BF != 128
#error "BF must be 64 or 128"
#endif
#ifndef STAGES
#define STAGES 3
#endif
#if STAGES < 2 || STAGES > 4
#error "STAGES must be 2, 3 or 4"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS (BF == 64 ? 6 : 1)
#endif
#define KC (BF / 4)                       // k per staged chunk
#define CHUNKS (BF / KC)                  // four chunks per product
#define QC (KC / 4)                       // 16-byte columns in a row of A's chunk (4 or 8)
#define HALF (BF / 2)
#define NT (BF / 8)                       // threads per side of the block
#define THREADS (NT * NT)
#define STAGE_INTS (2 * BF * KC)          // A's BF x KC chunk, then B's KC x BF chunk
#define COPIES (BF * KC / 4 / THREADS)    // 16-byte copies per thread per operand per chunk (4)

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

// Where 16-byte column q of row i of A's chunk lives: rows 4t .. 4t + 3 swizzle their columns
// by t, so the rows 4 ty + a that a warp's threads read together never share a bank.
__device__ __forceinline__ int a_slot(int i, int q) { return i * KC + 4 * (q ^ ((i >> 2) & (QC - 1))); }

// Chunk c (k = c * KC .. c * KC + KC - 1) of both operands into one stage, by asynchronous
// copies only: A's rows (a thread takes one 16-byte column of a row; consecutive threads walk
// along the row) and B's rows. The group is committed even when empty (c past the last chunk),
// so that every iteration waits for the same count.
__device__ __forceinline__ void stage_chunk(int* stage, const int* A, const int* B, int n, int c, int tid)
{
    if (c < CHUNKS) {
        int* As = stage;
        int* Bs = stage + BF * KC;
#pragma unroll
        for (int p = 0; p < COPIES; ++p) {
            int idx = tid + p * THREADS;
            int i = idx / QC, q = idx % QC;
            copy16(&As[a_slot(i, q)], &A[(size_t)i * n + c * KC + 4 * q]);
            int k = idx / (BF / 4), j = idx % (BF / 4);
            copy16(&Bs[k * BF + 4 * j], &B[(size_t)(c * KC + k) * n + 4 * j]);
        }
    }
    copies_issued();
}

__device__ __forceinline__ int patch_offset(int p) { return p < 4 ? p : HALF + p - 4; }

// C = min(C, A (x) B) for one BF x BF tile (A, B, C: first cells of their tiles in a row-major
// matrix of n columns). C may be A or B (phase 2): every read of the tile is staged before the
// single write at the end, and no other block touches it.
__device__ __forceinline__ void minplus_tile(const int* A, const int* B, int* C, int n)
{
    extern __shared__ __align__(16) int smem[];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * NT + tx;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) stage_chunk(smem + s * STAGE_INTS, A, B, n, s, tid);

    int acc[8][8];
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int4 v = *reinterpret_cast<const int4*>(&C[(size_t)(4 * ty + patch_offset(a)) * n + h * HALF + 4 * tx]);
            acc[a][4 * h] = v.x; acc[a][4 * h + 1] = v.y; acc[a][4 * h + 2] = v.z; acc[a][4 * h + 3] = v.w;
        }

#pragma unroll 1
    for (int c = 0; c < CHUNKS; ++c) {
        wait_copies<STAGES - 2>();  // chunk c has landed (later chunks may still be in flight)
        __syncthreads();            // ... for every thread, and chunk c - 1's buffer is free
        stage_chunk(smem + ((c + STAGES - 1) % STAGES) * STAGE_INTS, A, B, n, c + STAGES - 1, tid);
        const int* As = smem + (c % STAGES) * STAGE_INTS;
        const int* Bs = As + BF * KC;
#pragma unroll
        for (int kq = 0; kq < QC; ++kq) {  // four k at a time: one 16-byte load per row
            int4 av[8];
#pragma unroll
            for (int a = 0; a < 8; ++a)
                av[a] = *reinterpret_cast<const int4*>(&As[a_slot(4 * ty + patch_offset(a), kq)]);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                int k = 4 * kq + kk;
                int4 b0 = *reinterpret_cast<const int4*>(&Bs[k * BF + 4 * tx]);
                int4 b1 = *reinterpret_cast<const int4*>(&Bs[k * BF + HALF + 4 * tx]);
                int dkj[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int a = 0; a < 8; ++a) {
                    int dik = kk == 0 ? av[a].x : kk == 1 ? av[a].y : kk == 2 ? av[a].z : av[a].w;
#pragma unroll
                    for (int b = 0; b < 8; ++b) acc[a][b] = add_min(dik, dkj[b], acc[a][b]);
                }
            }
        }
    }

#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            *reinterpret_cast<int4*>(&C[(size_t)(4 * ty + patch_offset(a)) * n + h * HALF + 4 * tx]) =
                make_int4(acc[a][4 * h], acc[a][4 * h + 1], acc[a][4 * h + 2], acc[a][4 * h + 3]);
}

// Phase 2 (after fw_blocked_minplus.cu's phase 1 closed the pivot tile): the pivot row's tiles
// (blockIdx.y == 0) as P (x) C, the pivot column's (blockIdx.y == 1) as C (x) P. Changes from
// fw_minplus_phase2: the tile product above.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) fw_async_phase2(int* d, int n, int r)
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
// fw_minplus_phase3: the tile product above. `part` as there: 0 the whole round, 1 only the
// tiles of row and column r + 1 (grid (R, 2)), 2 every other tile (labs.fw.blocked.LookaheadPlan).
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) fw_async_phase3(int* d, int n, int r, int part)
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
