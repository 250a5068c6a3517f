// Adding to a 64-bit fixed-point sum with 32-bit shared-memory atomics: the only definitions, shared
// by the k-means passes whose blocks keep their sums as a low and a high word (km_06_dot_assign.cu,
// km_07_tensor_scores.cu). Two ways: fixed_add carries from the low word into the high word (exact
// however many add), split_add keeps the words apart (exact while the caller bounds the adds). A
// 64-bit shared atomic add is a compare-and-swap loop on the GPU (ATOMS.CAST.SPIN.64 on sm_90);
// two native 32-bit atomics are not.
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

// Add v to the sum held as a low word of v's low `bits` bits (1..31), unsigned, and a high word of
// v >> bits: two atomics that return nothing and no carry between them, so no thread waits on an
// atomic's result. Exact while neither word's true sum leaves 32 bits: at most A adds to one pair
// with A x (2^bits - 1) < 2^32 and A x (max|v| / 2^bits + 1) < 2^31 (the caller's bound).
__device__ __forceinline__ void split_add(unsigned* low, int* high, long long v, int bits)
{
    atomicAdd(low, static_cast<unsigned>(v) & ((1u << bits) - 1u));
    atomicAdd(high, static_cast<int>(v >> bits));
}

// The 64-bit sum a low and a high word hold: split_add's (high x 2^bits + low), or with bits = 0
// fixed_add's (high x 2^32 + low).
__device__ __forceinline__ long long fixed_value(unsigned low, int high, int bits)
{
    if (bits) return static_cast<long long>(high) * (1ll << bits) + low;
    return static_cast<long long>(static_cast<unsigned long long>(high) << 32 | low);
}

#endif
