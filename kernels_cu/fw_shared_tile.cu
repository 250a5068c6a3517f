// Floyd-Warshall with shared-memory tiles (lab 000 §2.4). Compile with -DTILE=8, 16 or 32: the
// block is TILE x TILE threads, as in the lab, where TILE_WIDTH = TILE_HEIGHT was a #define.

#ifndef TILE
#define TILE 16
#endif
#define TILE_WIDTH TILE
#define TILE_HEIGHT TILE

__device__ int Min(int a, int b) { return a < b ? a : b; }

// Changes from fw_basic_2d: the tile's slices d[i][k] and d[k][j] are fetched once into shared
// memory by the tile's first row and column of threads, then read by all TILE x TILE threads.
// As published: __syncthreads() sits inside the bounds check, so when N is not a multiple of TILE
// the edge blocks' barrier is reached by only some threads (undefined behaviour).
extern "C" __global__ void fw_shared_tile_published(int* mat, int k, int N)
{
    __shared__ int dist_i_k[TILE_HEIGHT];
    __shared__ int dist_k_j[TILE_WIDTH];
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    if (i < N && j < N) {
        int dist_i_j = mat[i * N + j];
        if (i % TILE_HEIGHT == 0) {
            dist_k_j[j % TILE_WIDTH] = mat[k * N + j];
        }
        if (j % TILE_WIDTH == 0) {
            dist_i_k[i % TILE_HEIGHT] = mat[i * N + k];
        }
        __syncthreads();
        if (dist_i_k[i % TILE_HEIGHT] != -1 && dist_k_j[j % TILE_WIDTH] != -1) {
            int new_dist = dist_i_k[i % TILE_HEIGHT] + dist_k_j[j % TILE_WIDTH];
            if (dist_i_j != -1) {
                new_dist = Min(new_dist, dist_i_j);
            }
            mat[i * N + j] = new_dist;
        }
    }
}

// Changes from fw_shared_tile_published: the barrier moves out of the bounds check, so every
// thread of the block reaches it; loads and updates keep their bounds checks. Same idea, any N.
extern "C" __global__ void fw_shared_tile(int* mat, int k, int N)
{
    __shared__ int dist_i_k[TILE_HEIGHT];
    __shared__ int dist_k_j[TILE_WIDTH];
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    bool inside = i < N && j < N;
    int dist_i_j = inside ? mat[i * N + j] : -1;
    if (inside && i % TILE_HEIGHT == 0) dist_k_j[j % TILE_WIDTH] = mat[k * N + j];
    if (inside && j % TILE_WIDTH == 0) dist_i_k[i % TILE_HEIGHT] = mat[i * N + k];
    __syncthreads();
    if (inside && dist_i_k[i % TILE_HEIGHT] != -1 && dist_k_j[j % TILE_WIDTH] != -1) {
        int new_dist = dist_i_k[i % TILE_HEIGHT] + dist_k_j[j % TILE_WIDTH];
        if (dist_i_j != -1) {
            new_dist = Min(new_dist, dist_i_j);
        }
        mat[i * N + j] = new_dist;
    }
}
