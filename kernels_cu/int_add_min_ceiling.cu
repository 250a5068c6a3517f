// The int32 add+min ceiling: how many relaxations min(a + b, c) per second the GPU can issue when
// nothing else limits it (no memory traffic, many independent chains in registers). Chapter 04
// measures its blocked kernels against this number. Every thread runs CHAINS independent chains
// acc = min(acc + x, y) for `iters` steps; x and y come in as arguments, so the compiler can neither
// fold the chain nor hoist it, and the sum of the chains is stored so that none is dead code.
// Both kernels relax with add_min.cuh, the very code of the kernels they are a ceiling for.

#include "add_min.cuh"

#ifndef CHAINS
#define CHAINS 16
#endif

// The baseline: a separate add and min per relaxation (add_then_min), as the ladder kernels write it
// and as an Ampere build (sm_80) issues it: an add (IADD3 or IMAD) and an IMNMX, kept apart on
// compute capability 9.0 too, where ptxas would fuse a plain min(a + b, c) (add_min.cuh).
extern "C" __global__ void add_min_plain(int* out, int x, int y, int iters)
{
    int acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x + c;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = add_then_min(acc[c], x, y + c);
    int sum = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Changes from add_min_plain: add_min, the register-tiled kernels' relaxation: the DPX intrinsic
// __viaddmin_s32 (one VIADDMNMX instruction) on compute capability 9.0; elsewhere add_then_min,
// which is also how the CUDA headers emulate the intrinsic there.
extern "C" __global__ void add_min_dpx(int* out, int x, int y, int iters)
{
    int acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x + c;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = add_min(acc[c], x, y + c);
    int sum = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
