// Lab 004 step b: the centre update moves from the host to the device, as two kernels.
// Changed from the classic code's host update: the membership no longer travels to the host and
// the new centres no longer travel back; each object's coordinates are added to its cluster's
// sum with global atomics, then one thread per coordinate averages.
// Objects are transposed, objects[d * n + i]; sums [k][d] and sizes [k] start at zero.

// Launch: grid ceil(n / threads), block threads.
extern "C" __global__ void update_clusters_sum(const float* objects, const int* membership, float* sums,
                                               int* sizes, int n, int d)
{
    int obj = blockIdx.x * blockDim.x + threadIdx.x;
    if (obj >= n) return;
    int c = membership[obj];
    atomicAdd(&sizes[c], 1);
    for (int x = 0; x < d; x++) atomicAdd(&sums[c * d + x], objects[(size_t)x * n + obj]);
}

// New centre = sum / size; an empty cluster keeps its centre. (The host zeroes sums and sizes
// before each update_clusters_sum.) Launch: grid ceil(k * d / threads), block threads.
extern "C" __global__ void update_clusters_average(float* centres, const float* sums, const int* sizes, int k, int d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= k * d) return;
    int size = sizes[i / d];
    if (size > 0) centres[i] = sums[i] / size;
}
