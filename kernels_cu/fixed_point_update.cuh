// The centres from 64-bit fixed-point sums: the only definition, shared by kmeans_fixed_finalize
// (km_05_fixed_point.cu, its own launch after the pass) and the tensor pass's last block
// (km_07_tensor_scores.cu, inside the pass). Uses the including file's compile-time K and D.
//
// Included as "fixed_point_update.cuh" (kernels_cu/ is on every kernel file's include path).

#ifndef CUDALAB_FIXED_POINT_UPDATE_CUH
#define CUDALAB_FIXED_POINT_UPDATE_CUH

// Run by threads thread .. of `threads` (one block, with __syncthreads between its phases). Each
// centre becomes sum / SCALE / size in float64, rounded once to float32 (an empty cluster keeps
// its centre); then the next table into `next` ([K * D] -2 x centre, then [K] |centre|^2, each
// norm summed in coordinate order), the change count into *changed_out, the count zeroed, and
// the sums and sizes too unless `zero` is false (the tensor pass carries them to the next pass
// where few objects moved: km_07 item 12).
// One block does it, so it is a chain of memory latencies, not of work: each thread reads all
// its sums at once, and the norms add from a copy of the centres in shared memory (rows D + 1
// words apart: no bank conflict). The sums, sizes and count are read through L2 (__ldcg): other
// blocks of the same launch may have written them with atomics, and L1 must not answer for them.
// Returns the change count on thread 0 (0 on the others).
__device__ __forceinline__ int fixed_update(float* centres, long long* sums, int* sizes, float* next, int* changed,
                                             int* changed_out, double inverse_scale, int thread, int threads,
                                             bool zero = true)
{
    constexpr int BATCH = 4;  // sums a thread reads before it waits for the first
    __shared__ float s_centres[K * (D + 1)];
    int moved = thread == 0 ? __ldcg(changed) : 0;
    for (int first = thread; first < K * D; first += BATCH * threads) {
        long long sum[BATCH];
        int size[BATCH];
#pragma unroll
        for (int r = 0; r < BATCH; r++) {
            int i = first + r * threads;
            if (i < K * D) {
                sum[r] = __ldcg(sums + i);
                size[r] = __ldcg(sizes + i / D);
            }
        }
#pragma unroll
        for (int r = 0; r < BATCH; r++) {
            int i = first + r * threads;
            if (i < K * D) {
                float v = size[r] > 0 ? static_cast<float>(static_cast<double>(sum[r]) * inverse_scale / size[r])
                                      : centres[i];
                centres[i] = v;
                next[i] = -2.0f * v;
                s_centres[i / D * (D + 1) + i % D] = v;
                if (zero) sums[i] = 0;
            }
        }
    }
    __syncthreads();
    for (int c = thread; c < K; c += threads) {
        float s = 0.0f;
        for (int j = 0; j < D; j++) s = fmaf(s_centres[c * (D + 1) + j], s_centres[c * (D + 1) + j], s);
        next[K * D + c] = s;
        if (zero) sizes[c] = 0;
    }
    if (thread == 0) {
        *changed_out = moved;
        *changed = 0;
    }
    return moved;
}

#endif
