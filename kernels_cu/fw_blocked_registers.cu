// Phase 3 of blocked Floyd-Warshall as a register-tiled min-plus product, the project's own step
// past lab 001's ladder. Phases 1 and 2 stay those of fw_blocked.cu at the same BF; phase 3, which
// does all but a 2/R share of the work, is where the time goes.
// Tiles are BF x BF (-DBF=64 or 128); each thread owns a TILE x TILE patch of cells in registers
// (-DTILE=4, the default, or 8), so per k it loads 2 * TILE operands (TILE / 2 16-byte shared loads)
// for TILE^2 relaxations: 4 x 4 makes 8 relaxations per shared load, 8 x 8 makes 16.
// Distances use the NTHU convention (1073741823 = unreachable); n must be a multiple of BF.
// Launch: grid (R, R), block (BF/TILE, BF/TILE), dynamic shared memory ((BF + 4) + BF) * BF ints.

// add_min(a, b, c) = min(a + b, c), one relaxation: one DPX instruction (VIADDMNMX) on compute
// capability 9.0, the add and the min elsewhere or built with -DNO_DPX; the ceiling runs this code.
#include "add_min.cuh"

#ifndef BF
#define BF 64
#endif
#ifndef TILE
#define TILE 4
#endif
#if TILE % 4 != 0 || BF % TILE != 0
#error "TILE must be a multiple of 4 that divides BF"
#endif
#define TM TILE
#define TN TILE
constexpr int K_UNROLL = TILE == 4 ? 8 : 2;  // k steps unrolled: enough loads in flight, code that fits
#define COL_STRIDE (BF + 4)  // padded so a row of colT stays 16-byte aligned and stores spread banks
#define THREADS ((BF / TM) * (BF / TN))

// Changes from fw_blocked_phase3 at BF 64 (ladder step 6-7): each thread's cells form a 4 x 4
// patch read with 16-byte loads, and the pivot column tile is stored transposed so that the four
// d[i][k] a thread needs per k are one 16-byte shared load as well; add and min fuse into one DPX.
extern "C" __global__ void __launch_bounds__(THREADS) fw_blocked_registers_phase3(int* d, int n, int r)
{
    extern __shared__ __align__(16) int s[];
    int* colT = s;                    // colT[k * COL_STRIDE + i] = d[ti*BF + i][r*BF + k]
    int* row = s + BF * COL_STRIDE;   // row[k * BF + j]          = d[r*BF + k][tj*BF + j]
    int ti = blockIdx.y, tj = blockIdx.x;
    if (ti == r || tj == r) return;   // uniform across the block: those tiles were phase 2's
    int tid = threadIdx.y * blockDim.x + threadIdx.x;

    // Stage the two finished tiles. Row tile: consecutive threads take consecutive 16-byte chunks
    // of a row. Column tile: consecutive threads take consecutive rows i, so that their transposed
    // stores land in consecutive banks.
    for (int idx = tid; idx < BF * BF / 4; idx += THREADS) {
        int k = idx / (BF / 4), c = idx % (BF / 4);
        *reinterpret_cast<int4*>(&row[k * BF + 4 * c]) =
            *reinterpret_cast<const int4*>(&d[(size_t)(r * BF + k) * n + tj * BF + 4 * c]);
        int i = idx % BF, kq = idx / BF;
        int4 v = *reinterpret_cast<const int4*>(&d[(size_t)(ti * BF + i) * n + r * BF + 4 * kq]);
        colT[(4 * kq + 0) * COL_STRIDE + i] = v.x;
        colT[(4 * kq + 1) * COL_STRIDE + i] = v.y;
        colT[(4 * kq + 2) * COL_STRIDE + i] = v.z;
        colT[(4 * kq + 3) * COL_STRIDE + i] = v.w;
    }
    int i0 = threadIdx.y * TM, j0 = threadIdx.x * TN;
    int* own = &d[(size_t)(ti * BF + i0) * n + tj * BF + j0];
    int acc[TM][TN];
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            int4 v = *reinterpret_cast<const int4*>(&own[(size_t)a * n + 4 * q]);
            acc[a][4 * q] = v.x; acc[a][4 * q + 1] = v.y; acc[a][4 * q + 2] = v.z; acc[a][4 * q + 3] = v.w;
        }
    __syncthreads();

    // Changes from the 4 x 4 build (-DTILE=8): twice the operands per k, four times the
    // relaxations, so half the shared loads and loop overhead per relaxation; 64 independent
    // accumulators per thread keep the add-min pipe busy with fewer warps.
#pragma unroll K_UNROLL
    for (int k = 0; k < BF; ++k) {
        int dik[TM], dkj[TN];
#pragma unroll
        for (int q = 0; q < TM / 4; ++q) {
            int4 ik = *reinterpret_cast<const int4*>(&colT[k * COL_STRIDE + i0 + 4 * q]);
            dik[4 * q] = ik.x; dik[4 * q + 1] = ik.y; dik[4 * q + 2] = ik.z; dik[4 * q + 3] = ik.w;
        }
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            int4 kj = *reinterpret_cast<const int4*>(&row[k * BF + j0 + 4 * q]);
            dkj[4 * q] = kj.x; dkj[4 * q + 1] = kj.y; dkj[4 * q + 2] = kj.z; dkj[4 * q + 3] = kj.w;
        }
#pragma unroll
        for (int a = 0; a < TM; ++a)
#pragma unroll
            for (int b = 0; b < TN; ++b)
                acc[a][b] = add_min(dik[a], dkj[b], acc[a][b]);
    }

#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int q = 0; q < TN / 4; ++q)
            *reinterpret_cast<int4*>(&own[(size_t)a * n + 4 * q]) =
                make_int4(acc[a][4 * q], acc[a][4 * q + 1], acc[a][4 * q + 2], acc[a][4 * q + 3]);
}
