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
//   5. COPIES copies of the shared sums (-DCOPIES=4 by default), lane l adding into copy l % COPIES:
//      lanes of a warp that picked the same cluster collide on one shared address and serialize,
//      and with K = 32 random clusters over 32 lanes a few always do; four copies cut that by about
//      four. Copies are offset by one word so that the same cluster in two copies uses two banks.
//   6. -DSUMS_BY_WARP=1: shared float atomics are compare-and-swap loops (ATOMS.CAST.SPIN in the
//      SASS), and lanes that picked the same cluster retry against each other. Instead the block
//      stages its tile of objects in shared memory, and each warp adds whole objects into its own
//      copy of the sums, one object per step, lane j adding coordinate j: plain loads and stores,
//      32 different addresses in 32 different banks, no atomics. Dynamic shared memory holds the
//      tile, D x (threads + 1) floats, and one K x (D + 1) copy of the sums per warp.
//   7. Two knobs that did not pay on the H100 in our probe runs, kept for other GPUs: with
//      -DCENTRES_IN_SHARED=1 the centres come from shared memory (broadcast loads) instead of
//      constant memory; -DPOINTS=2 gives each thread two objects per step (lane-atomics path).
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
#ifndef COPIES
#define COPIES 4
#endif
#define PADDED (D + 1)                       // shared sums padded: clusters fall in different banks
#define COPY_STRIDE (K * PADDED + 1)         // one copy of the sums, offset by a word from the next
#ifndef CENTRES_IN_SHARED
#define CENTRES_IN_SHARED 0
#endif
#ifndef POINTS
#define POINTS 1
#endif
#ifndef FINALIZE_ONLY
#define FINALIZE_ONLY 0
#endif
#ifndef SUMS_BY_WARP
#define SUMS_BY_WARP 0
#endif
#ifndef CENTRE_UNROLL
#define CENTRE_UNROLL K  // centres unrolled at a time; less keeps the compiler from hoisting them all
#endif
#define PRAGMA(text) _Pragma(#text)
#define UNROLL_BY(factor) PRAGMA(unroll factor)
#if CENTRES_IN_SHARED
#define TABLE s_table
#else
#define TABLE c_centres
#endif
#define SCALED(c, j) TABLE[(c) * D + (j)]  // -2 x centre c, coordinate j
#define NORM(c) TABLE[K * D + (c)]          // |centre c|^2

#if !FINALIZE_ONLY  // -DFINALIZE_ONLY=1: only kmeans_finalize (the tiled pass of km_04_tiled.cu uses it)
__constant__ float c_centres[K * D + K];

// Launch: grid (a few blocks per SM), block threads (a multiple of 32).
#if SUMS_BY_WARP
// The SUMS_BY_WARP pass (see 6 above): one object per thread per tile, the loop uniform across the
// block so that it can synchronize. Launch: block threads (a multiple of 32, at most 1024),
// dynamic shared memory D * (threads + 1) + (threads / 32) * K * (D + 1) floats.
extern "C" __global__ void kmeans_fused(const float* __restrict__ objects, int* __restrict__ membership,
                                        float* __restrict__ sums, int* __restrict__ sizes, int* __restrict__ changed,
                                        const float* __restrict__ table, int n)
{
    extern __shared__ float s_x[];                  // [D][blockDim.x + 1]: the tile, transposed
    float* s_sums = s_x + D * (blockDim.x + 1);     // [warps][K][D + 1]: each warp's own sums
    __shared__ int s_sizes[K];
    __shared__ int s_idx[1024];
    __shared__ int s_changed;
    int tile = blockDim.x, pitch = blockDim.x + 1;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int i = threadIdx.x; i < warps * K * PADDED; i += blockDim.x) s_sums[i] = 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x) s_sizes[i] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    __syncthreads();

    float* my_sums = s_sums + warp * K * PADDED;
    int moved = 0;
    for (int base = blockIdx.x * tile; base < n; base += gridDim.x * tile) {
        int obj = base + threadIdx.x;
        int index = -1;
        if (obj < n) {
            float x[D];
#pragma unroll
            for (int j = 0; j < D; j++) x[j] = objects[(size_t)j * n + obj];
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
            for (int j = 0; j < D; j++) s_x[j * pitch + threadIdx.x] = x[j];
        }
        s_idx[threadIdx.x] = index;
        __syncthreads();
        for (int p = warp; p < tile; p += warps) {
            int c = s_idx[p];
            if (c < 0) continue;
            for (int j = lane; j < D; j += 32) my_sums[c * PADDED + j] += s_x[j * pitch + p];
        }
        __syncthreads();
    }
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    if (lane == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();
    for (int i = threadIdx.x; i < K * D; i += blockDim.x) {
        float v = 0.0f;
        for (int w = 0; w < warps; w++) v += s_sums[w * K * PADDED + (i / D) * PADDED + i % D];
        if (v != 0.0f) atomicAdd(&sums[i], v);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        if (s_sizes[i]) atomicAdd(&sizes[i], s_sizes[i]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}
#else
extern "C" __global__ void kmeans_fused(const float* __restrict__ objects, int* __restrict__ membership,
                                        float* __restrict__ sums, int* __restrict__ sizes, int* __restrict__ changed,
                                        const float* __restrict__ table, int n)
{
    __shared__ float s_sums[COPIES * COPY_STRIDE];
    __shared__ int s_sizes[COPIES * K];
    __shared__ int s_changed;
#if CENTRES_IN_SHARED
    __shared__ __align__(16) float s_table[K * D + K];
    for (int i = threadIdx.x; i < K * D + K; i += blockDim.x) s_table[i] = table[i];
#endif
    for (int i = threadIdx.x; i < COPIES * COPY_STRIDE; i += blockDim.x) s_sums[i] = 0.0f;
    for (int i = threadIdx.x; i < COPIES * K; i += blockDim.x) s_sizes[i] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    __syncthreads();

    int copy = (threadIdx.x % 32) % COPIES;
    float* my_sums = s_sums + copy * COPY_STRIDE;
    int* my_sizes = s_sizes + copy * K;
    int moved = 0;
    int stride = gridDim.x * blockDim.x;
    for (int first = blockIdx.x * blockDim.x + threadIdx.x; first < n; first += POINTS * stride) {
        float x[POINTS][D];
#pragma unroll
        for (int p = 0; p < POINTS; p++) {
            int obj = min(first + p * stride, n - 1);  // past the end: a duplicate, computed, not counted
#pragma unroll
            for (int j = 0; j < D; j++) x[p][j] = objects[(size_t)j * n + obj];
        }
        int index[POINTS] = {};
        float best[POINTS];
        UNROLL_BY(CENTRE_UNROLL)
        for (int c = 0; c < K; c++) {
            float score[POINTS];
#pragma unroll
            for (int p = 0; p < POINTS; p++) score[p] = NORM(c);
#pragma unroll
            for (int j = 0; j < D; j++) {
                float w = SCALED(c, j);
#pragma unroll
                for (int p = 0; p < POINTS; p++) score[p] = fmaf(x[p][j], w, score[p]);
            }
#pragma unroll
            for (int p = 0; p < POINTS; p++)
                if (c == 0 || score[p] < best[p]) {
                    best[p] = score[p];
                    index[p] = c;
                }
        }
#pragma unroll
        for (int p = 0; p < POINTS; p++) {
            int obj = first + p * stride;
            if (obj >= n) break;
            moved += membership[obj] != index[p];
            membership[obj] = index[p];
            atomicAdd(&my_sizes[index[p]], 1);
#pragma unroll
            for (int j = 0; j < D; j++) atomicAdd(&my_sums[index[p] * PADDED + j], x[p][j]);
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    if (threadIdx.x % 32 == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();

    for (int i = threadIdx.x; i < K * D; i += blockDim.x) {
        float v = 0.0f;
#pragma unroll
        for (int c = 0; c < COPIES; c++) v += s_sums[c * COPY_STRIDE + (i / D) * PADDED + i % D];
        if (v != 0.0f) atomicAdd(&sums[i], v);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
        int size = 0;
#pragma unroll
        for (int c = 0; c < COPIES; c++) size += s_sizes[c * K + i];
        if (size) atomicAdd(&sizes[i], size);
    }
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}
#endif
#endif  // !FINALIZE_ONLY

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
