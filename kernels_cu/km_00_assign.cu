// K-means assignment as the classic CUDA code does it (Northwestern's cuda_kmeans, lab 004's
// starting point): one thread per object, the centres staged in shared memory, each object
// assigned to its nearest centre by squared Euclidean distance (ties to the lowest index).
// Objects are stored transposed, objects[d * n + i], so that a warp's loads coalesce.

// Each block also counts how many of its objects changed cluster and writes that count to
// intermediates[blockIdx.x]: a tree reduction in shared memory, blockDim.x a power of two.
// Launch: grid ceil(n / threads), block threads, dynamic shared memory
// (k * d) floats + threads ints.
extern "C" __global__ void find_nearest_cluster(const float* objects, const float* centres, int* membership,
                                                int* intermediates, int n, int d, int k)
{
    extern __shared__ float shared[];
    float* c = shared;                                  // centres, [k][d]
    int* changed = reinterpret_cast<int*>(shared + k * d);
    for (int i = threadIdx.x; i < k * d; i += blockDim.x) c[i] = centres[i];
    __syncthreads();

    int obj = blockIdx.x * blockDim.x + threadIdx.x;
    changed[threadIdx.x] = 0;
    if (obj < n) {
        int index = 0;
        float best = 0.0f;
        for (int j = 0; j < k; j++) {
            float dist = 0.0f;
            for (int x = 0; x < d; x++) {
                float diff = objects[(size_t)x * n + obj] - c[j * d + x];
                dist += diff * diff;
            }
            if (j == 0 || dist < best) {
                best = dist;
                index = j;
            }
        }
        changed[threadIdx.x] = membership[obj] != index;
        membership[obj] = index;
    }
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) changed[threadIdx.x] += changed[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) intermediates[blockIdx.x] = changed[0];
}

// compute_delta with lab 004's fix. The classic code summed the per-block counts with one block
// of nextPow2(blocks) threads, which is invalid beyond 1024 blocks; here one block of at most
// 1024 threads strides over any number of counts, then reduces in shared memory.
// Launch: grid 1, block threads (a power of two <= 1024), dynamic shared memory threads ints.
extern "C" __global__ void compute_delta(const int* intermediates, int count, int* delta)
{
    extern __shared__ int partial[];
    int sum = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) sum += intermediates[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *delta = partial[0];
}
