// Lab 004 step c: per-block cluster buffers in shared memory.
// Changed from update_clusters_sum: a block first adds its objects into its own copy of the sums
// and sizes in shared memory (shared atomics, cheap and close), then merges that copy into the
// global sums once, so global atomics drop from n * d to blocks * k * d. The shared sums are
// padded to d + 1 floats per cluster so that objects of different clusters fall in different
// banks. Objects are transposed, objects[d * n + i]; sums and sizes start at zero.
// Launch: grid ceil(n / threads), block threads, dynamic shared memory k * (d + 1) floats + k ints.
extern "C" __global__ void update_clusters_sum_shared(const float* objects, const int* membership, float* sums,
                                                      int* sizes, int n, int d, int k)
{
    extern __shared__ float buffer[];
    float* s_sums = buffer;                                     // [k][d + 1]
    int* s_sizes = reinterpret_cast<int*>(buffer + k * (d + 1));
    for (int i = threadIdx.x; i < k * (d + 1); i += blockDim.x) s_sums[i] = 0.0f;
    for (int i = threadIdx.x; i < k; i += blockDim.x) s_sizes[i] = 0;
    __syncthreads();
    int obj = blockIdx.x * blockDim.x + threadIdx.x;
    if (obj < n) {
        int c = membership[obj];
        atomicAdd(&s_sizes[c], 1);
        for (int x = 0; x < d; x++) atomicAdd(&s_sums[c * (d + 1) + x], objects[(size_t)x * n + obj]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < k * d; i += blockDim.x) {
        float v = s_sums[(i / d) * (d + 1) + i % d];
        if (v != 0.0f) atomicAdd(&sums[i], v);
    }
    for (int i = threadIdx.x; i < k; i += blockDim.x)
        if (s_sizes[i]) atomicAdd(&sizes[i], s_sizes[i]);
}
