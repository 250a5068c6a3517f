// Lab 002's footprint (matmultKernel01): the same BLOCK x BLOCK threads compute a larger
// FOOT x FOOT patch of C, R x R results per thread (R = FOOT / BLOCK; the lab's 16 x 16 threads
// and 32 x 32 footprint give 4), spaced BLOCK apart as in the lab.
// Changed from mm_shared_tile: each value a thread reads from shared memory now feeds R
// multiply-adds instead of one (R loads of A and R of B per k for R * R results), and each
// element staged from global memory is used FOOT times instead of TILE.
// -DBLOCK, -DFOOT (a multiple of BLOCK) and -DKTILE, the depth of the shared tiles along k
// (default FOOT, as in the lab; the lab's "wider shared_A, taller shared_B" variant makes it
// larger, so there are fewer synchronizations). The lab's copy fills the shared tiles in
// BLOCK-wide segments, each thread its R x R strided cells; -DALIGNED_COPY instead numbers the
// threads linearly and copies whole rows in order, so a warp reads 32 consecutive floats (the
// lab's "aligned copy" variant). Edges are zero-filled, so any n works.
// Launch: grid (ceil(n / FOOT), ceil(n / FOOT)), block (BLOCK, BLOCK).

#ifndef BLOCK
#define BLOCK 16
#endif
#ifndef FOOT
#define FOOT 32
#endif
#ifndef KTILE
#define KTILE FOOT
#endif
#define R (FOOT / BLOCK)
#define THREADS (BLOCK * BLOCK)

#if FOOT % BLOCK != 0
#error "FOOT must be a multiple of BLOCK"
#endif

extern "C" __global__ void __launch_bounds__(THREADS) mm_footprint(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[FOOT][KTILE];   // rows of this block's patch, KTILE columns of A
    __shared__ float Bs[KTILE][FOOT];   // KTILE rows of B, columns of this block's patch
    int tx = threadIdx.x, ty = threadIdx.y;
    int row0 = blockIdx.y * FOOT, col0 = blockIdx.x * FOOT;
    float sum[R][R] = {};
    for (int k0 = 0; k0 < n; k0 += KTILE) {
#ifdef ALIGNED_COPY
        int tid = ty * BLOCK + tx;
        for (int idx = tid; idx < FOOT * KTILE; idx += THREADS) {
            int r = idx / KTILE, c = idx % KTILE;
            As[r][c] = (row0 + r < n && k0 + c < n) ? A[(size_t)(row0 + r) * n + k0 + c] : 0.0f;
        }
        for (int idx = tid; idx < KTILE * FOOT; idx += THREADS) {
            int r = idx / FOOT, c = idx % FOOT;
            Bs[r][c] = (k0 + r < n && col0 + c < n) ? B[(size_t)(k0 + r) * n + col0 + c] : 0.0f;
        }
#else
        for (int r = ty; r < FOOT; r += BLOCK)
            for (int c = tx; c < KTILE; c += BLOCK)
                As[r][c] = (row0 + r < n && k0 + c < n) ? A[(size_t)(row0 + r) * n + k0 + c] : 0.0f;
        for (int r = ty; r < KTILE; r += BLOCK)
            for (int c = tx; c < FOOT; c += BLOCK)
                Bs[r][c] = (k0 + r < n && col0 + c < n) ? B[(size_t)(k0 + r) * n + col0 + c] : 0.0f;
#endif
        __syncthreads();
        for (int k = 0; k < KTILE; k++) {
            float a[R], b[R];
#pragma unroll
            for (int i = 0; i < R; i++) a[i] = As[ty + i * BLOCK][k];
#pragma unroll
            for (int j = 0; j < R; j++) b[j] = Bs[k][tx + j * BLOCK];
#pragma unroll
            for (int i = 0; i < R; i++)
#pragma unroll
                for (int j = 0; j < R; j++)
                    sum[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int j = 0; j < R; j++) {
            int row = row0 + ty + i * BLOCK, col = col0 + tx + j * BLOCK;
            if (row < n && col < n) C[(size_t)row * n + col] = sum[i][j];
        }
}
