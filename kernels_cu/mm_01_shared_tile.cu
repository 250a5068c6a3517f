// Shared-memory tiles, one result per thread: lab 002's matmultKernel00 (16 x 16 threads per
// 16 x 16 tile of C; 32 x 32 in its variant) and lab 004's steps d and e (32 x 32 tiles, then
// the inner loop unrolled 16 times).
// Changed from mm_naive_register: the block stages a TILE x TILE tile of A and one of B in
// shared memory, so each element loaded from global memory is used TILE times; each k of the
// inner loop then costs two shared loads per multiply-add instead of two global loads.
// Tiles past the edge of the matrix are filled with zeros, so any n works (the labs' kernels
// assumed n a multiple of the tile; lab 004's bounds fix, carried into the tiled kernel).
// -DTILE=16 or 32 sets the tile edge; -DUNROLL sets how far the inner loop is unrolled: 1 (the
// default) keeps it a loop, as the lab's step d ran, 16 is lab 004's step e.
// Launch: grid (ceil(n / TILE), ceil(n / TILE)), block (TILE, TILE).

#ifndef TILE
#define TILE 16
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define PRAGMA(text) _Pragma(#text)
#define UNROLL_BY(factor) PRAGMA(unroll factor)

extern "C" __global__ void __launch_bounds__(TILE * TILE) mm_shared_tile(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty][tx] = (row < n && k0 + tx < n) ? A[(size_t)row * n + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < n && col < n) ? B[(size_t)(k0 + ty) * n + col] : 0.0f;
        __syncthreads();
        UNROLL_BY(UNROLL)
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        C[(size_t)row * n + col] = sum;
}
