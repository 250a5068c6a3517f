// The int32 add+min ceiling: how many relaxations min(a + b, c) per second the GPU can issue when
// nothing else limits it (no memory traffic, many independent chains in registers). Chapter 04
// measures its blocked kernels against this number. Every thread runs CHAINS independent chains
// acc = min(acc + x, y) for `iters` steps; x and y come in as arguments, so the compiler can neither
// fold the chain nor hoist it, and the sum of the chains is stored so that none is dead code.

#ifndef CHAINS
#define CHAINS 16
#endif

// The baseline: a separate add and min per relaxation, as the ladder kernels issue them.
extern "C" __global__ void add_min_plain(int* out, int x, int y, int iters)
{
    int acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x + c;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = min(acc[c] + x, y + c);
    int sum = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Changes from add_min_plain: the DPX intrinsic __viaddmin_s32 (one VIADDMNMX instruction on
// compute capability 9.0; the CUDA headers emulate it with add and min elsewhere).
extern "C" __global__ void add_min_dpx(int* out, int x, int y, int iters)
{
    int acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x + c;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = __viaddmin_s32(acc[c], x, y + c);
    int sum = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
