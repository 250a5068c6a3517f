// Floyd-Warshall, "fully optimized" (lab 000 §2.5): a block is one row segment, 1 x segment_size
// threads; the row's d[i][k] is fetched once into shared memory and every thread reads its own
// d[i][j] and d[k][j], consecutive along the row (coalesced).

__device__ int Min(int a, int b) { return a < b ? a : b; }

// Changes from fw_shared_tile: share only what a whole block reuses, one d[i][k] per row segment,
// and lay the block along a row so that its warps read consecutive words (coalescing + sharing).
// As published: __syncthreads() inside the bounds check (undefined when N % segment_size != 0).
extern "C" __global__ void fw_shared_row_published(int* mat, int k, int N)
{
    __shared__ int dist_i_k;
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    if (i < N && j < N) {
        int dist_i_j = mat[i * N + j];
        int dist_k_j = mat[k * N + j];
        if (threadIdx.y == 0) {
            dist_i_k = mat[i * N + k];
        }
        __syncthreads();
        if (dist_i_k != -1 && dist_k_j != -1) {
            int new_dist = dist_i_k + dist_k_j;
            if (dist_i_j != -1) {
                new_dist = Min(new_dist, dist_i_j);
            }
            mat[i * N + j] = new_dist;
        }
    }
}

// Changes from fw_shared_row_published: the barrier moves out of the bounds check; same idea, any N.
extern "C" __global__ void fw_shared_row(int* mat, int k, int N)
{
    __shared__ int dist_i_k;
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    bool inside = i < N && j < N;
    if (inside && threadIdx.y == 0) dist_i_k = mat[i * N + k];
    __syncthreads();
    if (inside) {
        int dist_i_j = mat[i * N + j];
        int dist_k_j = mat[k * N + j];
        if (dist_i_k != -1 && dist_k_j != -1) {
            int new_dist = dist_i_k + dist_k_j;
            if (dist_i_j != -1) {
                new_dist = Min(new_dist, dist_i_j);
            }
            mat[i * N + j] = new_dist;
        }
    }
}
