// The project's own kernel: lab 002's footprint carried to where it meets the hardware's limits.
// A block of THREADS threads computes a BM x BN patch of C; each thread a TM x TN footprint held
// in registers, split into (TM/4) x (TN/4) sub-patches of 4 x 4 placed a quarter-tile apart.
// Changed from mm_footprint:
//   1. Each thread's footprint grows from 2 x 2 to TM x TN (8 x 8 by default): per k it reads
//      TM + TN values from shared memory for TM * TN multiply-adds (16 loads for 64 FMAs, where
//      the lab's footprint did 4 for 4), so shared-memory bandwidth stops being the limit.
//   2. Vector loads: global loads of A and B, and every shared-memory read, are 16-byte float4.
//      A's tile is stored transposed (As[k][m], padded by 4 to spread the banks) so that a
//      thread's TM values of one k are contiguous.
//   3. Warp tiling: a warp's 32 lanes form a 4 x 8 grid of footprints, so a warp reads 4
//      distinct float4 of A and 8 of B per k (the rest are broadcasts), and its 32 x 64 patch of
//      C stays in L1-friendly rows.
//   4. Double buffering (-DDOUBLE_BUFFER=1, default): the next BK-deep tiles are loaded from
//      global memory into registers while the current ones are multiplied, then stored to the
//      other shared buffer: one __syncthreads per tile, and the loads' latency hidden by math.
// Edges: tiles past the matrix are zero-filled and stores are guarded, so any n works; float4
// global accesses are used only when n % 4 == 0 (rows then stay 16-byte aligned).
// Tuning: -DBM -DBN -DBK -DTM -DTN; the chapter's autotuning sweep picks them for the present GPU.
// Launch: grid (ceil(n / BN), ceil(n / BM)), block (THREADS), static shared memory only.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif

#define THREADS_M (BM / TM)             // thread rows
#define THREADS_N (BN / TN)             // thread columns
#define THREADS (THREADS_M * THREADS_N)
#define PAD 4
#define A_QUADS (BM * BK / 4)            // float4s in a tile of A (and of B, below)
#define B_QUADS (BK * BN / 4)
#define A_LOADS ((A_QUADS + THREADS - 1) / THREADS)  // float4 loads of A per thread per tile
#define B_LOADS ((B_QUADS + THREADS - 1) / THREADS)
#define STAGES (DOUBLE_BUFFER ? 2 : 1)

#if TM % 4 || TN % 4 || BK % 4 || THREADS_M % 4 || THREADS_N % 8
#error "TM, TN and BK must be multiples of 4; the threads must tile as whole 4 x 8 warps"
#endif

struct Staged {
    float4 a[A_LOADS];
    float4 b[B_LOADS];
};

// Load one float4 of a row starting at column `col` of a row-major n x n matrix, zero past its
// edges; `vec` says n % 4 == 0, so an in-range float4 is aligned and one 16-byte load does.
__device__ __forceinline__ float4 load4(const float* M, int row, int col, int n, bool vec)
{
    if (vec && row < n && col + 3 < n)
        return *reinterpret_cast<const float4*>(&M[(size_t)row * n + col]);
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        v[i] = (row < n && col + i < n) ? M[(size_t)row * n + col + i] : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void load_tiles(Staged& s, const float* A, const float* B, int m0, int n0, int k0,
                                           int n, bool vec, int tid)
{
#pragma unroll
    for (int l = 0; l < A_LOADS; l++) {   // A tile: BM rows x BK columns, float4 along k
        int idx = tid + l * THREADS, r = idx / (BK / 4), c = 4 * (idx % (BK / 4));
        if (A_QUADS % THREADS == 0 || idx < A_QUADS) s.a[l] = load4(A, m0 + r, k0 + c, n, vec);
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; l++) {   // B tile: BK rows x BN columns, float4 along n
        int idx = tid + l * THREADS, r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
        if (B_QUADS % THREADS == 0 || idx < B_QUADS) s.b[l] = load4(B, k0 + r, n0 + c, n, vec);
    }
}

__device__ __forceinline__ void store_tiles(const Staged& s, float (*As)[BM + PAD], float (*Bs)[BN], int tid)
{
#pragma unroll
    for (int l = 0; l < A_LOADS; l++) {   // transposed: As[k][m]
        int idx = tid + l * THREADS, r = idx / (BK / 4), c = 4 * (idx % (BK / 4));
        if (A_QUADS % THREADS && idx >= A_QUADS) break;
        As[c + 0][r] = s.a[l].x;
        As[c + 1][r] = s.a[l].y;
        As[c + 2][r] = s.a[l].z;
        As[c + 3][r] = s.a[l].w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; l++) {
        int idx = tid + l * THREADS, r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
        if (B_QUADS % THREADS && idx >= B_QUADS) break;
        *reinterpret_cast<float4*>(&Bs[r][c]) = s.b[l];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) mm_register_blocked(const float* __restrict__ A,
                                                                          const float* __restrict__ B,
                                                                          float* __restrict__ C, int n)
{
    __shared__ __align__(16) float As[STAGES][BK][BM + PAD];
    __shared__ __align__(16) float Bs[STAGES][BK][BN];

    int tid = threadIdx.x;
    int warp = tid / 32, lane = tid % 32;
    // Warps tile the thread grid row-major; inside a warp, lanes form 4 rows x 8 columns.
    int ty = (warp / (THREADS_N / 8)) * 4 + lane / 8;
    int tx = (warp % (THREADS_N / 8)) * 8 + lane % 8;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    bool vec = (n & 3) == 0;

    float acc[TM][TN] = {};
    Staged staged;
    int tiles = (n + BK - 1) / BK;
    load_tiles(staged, A, B, m0, n0, 0, n, vec, tid);
    store_tiles(staged, As[0], Bs[0], tid);
    __syncthreads();

    for (int t = 0; t < tiles; t++) {
        int cur = DOUBLE_BUFFER ? t % 2 : 0;
        if (DOUBLE_BUFFER && t + 1 < tiles)   // next tile's global loads fly during this tile's math
            load_tiles(staged, A, B, m0, n0, (t + 1) * BK, n, vec, tid);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[TM], b[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; g++)
                *reinterpret_cast<float4*>(&a[4 * g]) =
                    *reinterpret_cast<const float4*>(&As[cur][k][g * (BM / (TM / 4)) + 4 * ty]);
#pragma unroll
            for (int g = 0; g < TN / 4; g++)
                *reinterpret_cast<float4*>(&b[4 * g]) =
                    *reinterpret_cast<const float4*>(&Bs[cur][k][g * (BN / (TN / 4)) + 4 * tx]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < tiles) {
            if (DOUBLE_BUFFER) {
                store_tiles(staged, As[1 - cur], Bs[1 - cur], tid);   // the buffer read one tile ago
            } else {
                __syncthreads();                                      // everyone is done reading
                load_tiles(staged, A, B, m0, n0, (t + 1) * BK, n, vec, tid);
                store_tiles(staged, As[0], Bs[0], tid);
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = m0 + (i / 4) * (BM / (TM / 4)) + 4 * ty + i % 4;
        if (row >= n) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; g++) {
            int col = n0 + g * (BN / (TN / 4)) + 4 * tx;
            float* out = &C[(size_t)row * n + col];
            if (vec && col + 3 < n) {
                *reinterpret_cast<float4*>(out) =
                    make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (col + j < n) out[j] = acc[i][4 * g + j];
            }
        }
    }
}
