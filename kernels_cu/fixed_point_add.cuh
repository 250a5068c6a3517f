// Adding to a 64-bit fixed-point sum with 32-bit shared-memory atomics: the only definition, shared
// by the k-means passes whose blocks keep their sums as a low and a high word (km_06_dot_assign.cu,
// km_07_tensor_scores.cu). A 64-bit shared atomic add is a compare-and-swap loop on the GPU
// (ATOMS.CAST.SPIN.64 on sm_90); two native 32-bit atomics are not.
//
// Included as "fixed_point_add.cuh" (kernels_cu/ is on every kernel file's include path).

#ifndef CUDALAB_FIXED_POINT_ADD_CUH
#define CUDALAB_FIXED_POINT_ADD_CUH

// Add v to the 64-bit integer held as a low and a high word: the low word's old value tells
// whether this add carried into the high word. Every carry is counted once, so the pair ends exact
// in any order; the high word stays within int32 because every partial sum is below 2^62.
__device__ __forceinline__ void fixed_add(unsigned* low, int* high, long long v)
{
    unsigned part = static_cast<unsigned>(v);
    unsigned old = atomicAdd(low, part);
    int carry = old + part < old;
    atomicAdd(high, static_cast<int>(v >> 32) + carry);
}

#endif
