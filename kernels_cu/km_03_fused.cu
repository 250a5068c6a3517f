// The project's own k-means iteration: assignment, the change count and per-block partial sums
// in one pass over the objects, with the centres in constant memory.
// Changed from find_nearest_cluster + update_clusters_sum_shared (two passes over the objects,
// the centres read from shared memory):
//   1. One pass: each object is read once per iteration, assigned, counted if it changed, and
//      added to the block's shared sums in the same loop, so the objects (the only large data)
//      cross DRAM once per iteration instead of twice.
//   2. Centres in __constant__ memory: a warp's lanes read the same centre coordinate at the
//      same time, which the constant cache broadcasts, and the multiply-add takes it as an
//      operand directly: no shared-memory load per flop.
//   3. Expanded distance: |x - c|^2 = |x|^2 - 2 x.c + |c|^2, and |x|^2 is the same for every
//      centre, so the nearest centre minimises |c|^2 - 2 x.c: one multiply-add per coordinate
//      instead of a subtraction and a multiply-add. In float32 this may pick differently from
//      the direct form only where two centres are within rounding of each other (the chapter
//      counts these near ties).
//   4. A persistent grid (a few blocks per SM striding over the objects), so the shared sums are
//      merged into the global ones a few hundred times per iteration, not once per 128 objects.
// K and D are compile-time constants (-DK=, -DD=): the loops unroll and every centre coordinate
// is a constant-bank operand. Objects are transposed, objects[d * n + i].
// kmeans_finalize then averages, hands the change count over, and writes the next iteration's
// constants (-2 x centre, then |centre|^2) to `next`, which the host copies into c_centres.

#ifndef K
#define K 32
#endif
#ifndef D
#define D 32
#endif
#define PADDED (D + 1)                       // shared sums padded: clusters fall in different banks
#define SCALED(c, j) c_centres[(c) * D + (j)]  // -2 x centre c, coordinate j
#define NORM(c) c_centres[K * D + (c)]          // |centre c|^2

__constant__ float c_centres[K * D + K];

// Launch: grid (a few blocks per SM), block threads (a multiple of 32).
extern "C" __global__ void kmeans_fused(const float* __restrict__ objects, int* __restrict__ membership,
                                        float* __restrict__ sums, int* __restrict__ sizes, int* __restrict__ changed,
                                        int n)
{
    __shared__ float s_sums[K * PADDED];
    __shared__ int s_sizes[K];
    __shared__ int s_changed;
    for (int i = threadIdx.x; i < K * PADDED; i += blockDim.x) s_sums[i] = 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x) s_sizes[i] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    __syncthreads();

    int moved = 0;
    for (int obj = blockIdx.x * blockDim.x + threadIdx.x; obj < n; obj += gridDim.x * blockDim.x) {
        float x[D];
#pragma unroll
        for (int j = 0; j < D; j++) x[j] = objects[(size_t)j * n + obj];
        int index = 0;
        float best = 0.0f;
#pragma unroll
        for (int c = 0; c < K; c++) {
            float score = NORM(c);
#pragma unroll
            for (int j = 0; j < D; j++) score = fmaf(x[j], SCALED(c, j), score);
            if (c == 0 || score < best) {
                best = score;
                index = c;
            }
        }
        moved += membership[obj] != index;
        membership[obj] = index;
        atomicAdd(&s_sizes[index], 1);
#pragma unroll
        for (int j = 0; j < D; j++) atomicAdd(&s_sums[index * PADDED + j], x[j]);
    }
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    if (threadIdx.x % 32 == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();

    for (int i = threadIdx.x; i < K * D; i += blockDim.x) {
        float v = s_sums[(i / D) * PADDED + i % D];
        if (v != 0.0f) atomicAdd(&sums[i], v);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        if (s_sizes[i]) atomicAdd(&sizes[i], s_sizes[i]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}

// New centres (an empty cluster keeps its centre), the next constants into `next` ([K * D]
// scaled centres, then [K] norms), the change count into *changed_out, accumulators zeroed.
// Launch: grid 1, block threads.
extern "C" __global__ void kmeans_finalize(float* centres, float* sums, int* sizes, float* next, int* changed,
                                           int* changed_out)
{
    for (int i = threadIdx.x; i < K * D; i += blockDim.x) {
        int size = sizes[i / D];
        float v = size > 0 ? sums[i] / size : centres[i];
        centres[i] = v;
        next[i] = -2.0f * v;
    }
    __syncthreads();
    for (int c = threadIdx.x; c < K; c += blockDim.x) {
        float s = 0.0f;
        for (int j = 0; j < D; j++) s = fmaf(centres[c * D + j], centres[c * D + j], s);
        next[K * D + c] = s;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < K * D; i += blockDim.x) sums[i] = 0.0f;
    for (int c = threadIdx.x; c < K; c += blockDim.x) sizes[c] = 0;
    if (threadIdx.x == 0) {
        *changed_out = *changed;
        *changed = 0;
    }
}
