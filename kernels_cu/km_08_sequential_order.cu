// K-means on the GPU with the classic sequential code's arithmetic, bit for bit: the same
// memberships, centres and iteration count as seq_kmeans.c (cudalab/labs/kmeans/c), so that the
// GPU mode of `python -m cudalab.kmeans` answers exactly what the sequential mode answers.
//
// Why a kernel of its own: every faster variant rounds differently from the sequential code.
// The classic CUDA assignment (km_00) lets nvcc contract diff * diff + dist into one FMA; the
// one-pass kernels score |c|^2 - 2 x.c; and no parallel sum (float atomics in any order, or
// km_05's exact fixed-point sums) rounds as the sequential code's float32 running sum does. On
// real data at large K, k-means is chaotic enough that a last-bit difference in one centre can
// move a point, then a centre, and the run ends in another local optimum: on image features
// (about 19,000 points, K from 2 to 128) the fixed-point kernels agreed with the sequential
// mode on at least 99.9% of the points at most K, but on 65-80% at a few.
//
// Changed from the classic CUDA code (km_00_assign.cu, km_01_device_update.cu):
//   1. assign_in_order scores each centre as euclid_dist_2 does: (x - c) squared and added
//      over the coordinates in order, each operation rounded on its own (__fsub_rn, __fmul_rn,
//      __fadd_rn: never contracted into an FMA), the centres read from global memory (no
//      shared-memory limit on K x D), ties to the lowest index (a strict <). Each block writes
//      how many of its objects changed cluster, for km_00's compute_delta.
//   2. The update adds each cluster's members in object order, as the sequential loop does:
//      the host gives the objects sorted by cluster, stably (cupy.argsort), and where each
//      cluster's run starts; average_in_order gives one thread to each cluster and coordinate,
//      which adds that coordinate of the cluster's members one after another into a float32
//      from 0.0f (__fadd_rn), then divides by the member count (__fdiv_rn, the count rounded
//      to float32 as C converts it). An empty cluster keeps its centre.
// The price: each coordinate's sum is one thread's chain of N/K dependent adds. That is fine for
// data sets of tens of thousands of points, and slow for millions (chapter 06's fast kernels
// are for those; their centres agree to about 1e-5, not bit for bit).
// Objects are transposed, objects[d * n + i], as the classic CUDA code stores them.

// Launch: grid ceil(n / threads), block threads (at most 1024).
extern "C" __global__ void assign_in_order(const float* objects, const float* centres, int* membership,
                                           int* intermediates, int n, int d, int k)
{
    int obj = blockIdx.x * blockDim.x + threadIdx.x;
    int changed = 0;
    if (obj < n) {
        int index = 0;
        float best = 0.0f;
        for (int j = 0; j < k; j++) {
            float dist = 0.0f;
            for (int x = 0; x < d; x++) {
                float diff = __fsub_rn(objects[(size_t)x * n + obj], __ldg(&centres[(size_t)j * d + x]));
                dist = __fadd_rn(dist, __fmul_rn(diff, diff));
            }
            if (j == 0 || dist < best) {
                best = dist;
                index = j;
            }
        }
        changed = membership[obj] != index;
        membership[obj] = index;
    }
    changed = __syncthreads_count(changed);
    if (threadIdx.x == 0) intermediates[blockIdx.x] = changed;
}

#ifndef BATCH
#define BATCH 16
#endif

// order: the objects' indices sorted by cluster, stably (object order within a cluster);
// starts[c], sizes[c]: where cluster c's run begins in order, and its length.
// Launch: grid ceil(k * d / threads), block threads.
extern "C" __global__ void average_in_order(const float* objects, const long long* order, const int* starts,
                                            const int* sizes, float* centres, int n, int d, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= k * d) return;
    int c = i / d, x = i % d;
    int size = sizes[c];
    if (size == 0) return;
    const float* coordinate = objects + (size_t)x * n;
    const long long* members = order + starts[c];
    float sum = 0.0f;
    int m = 0;
    // BATCH members' loads are issued before their adds: the adds stay in order, one chain, but
    // the loads' latencies overlap instead of each add waiting for two loads of its own.
    for (; m + BATCH <= size; m += BATCH) {
        float value[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; u++) value[u] = coordinate[members[m + u]];
#pragma unroll
        for (int u = 0; u < BATCH; u++) sum = __fadd_rn(sum, value[u]);
    }
    for (; m < size; m++) sum = __fadd_rn(sum, coordinate[members[m]]);
    centres[i] = __fdiv_rn(sum, __int2float_rn(size));
}
