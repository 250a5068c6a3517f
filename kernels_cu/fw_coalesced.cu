// Floyd-Warshall with coalesced access (lab 000 §2.2 and §2.3): a 1D grid walks the matrix in
// row-major order, so the 32 threads of a warp read 32 consecutive entries of one row.

__device__ int Min(int a, int b) { return a < b ? a : b; }

// Changes from fw_basic_2d: a 1D grid, thread idx owns d[idx / N][idx % N], so a warp's reads of
// d[i][j] and d[k][j] are consecutive words (one 128-byte transaction) instead of 32 rows apart.
extern "C" __global__ void fw_coalesced(int* mat, int k, int N)
{
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < N * N) {
        int i = idx / N;
        int j = idx - i * N;
        if (mat[i * N + k] != -1 && mat[k * N + j] != -1) {
            if (mat[idx] == -1) {
                mat[idx] = mat[i * N + k] + mat[k * N + j];
            } else {
                mat[idx] = Min(mat[i * N + k] + mat[k * N + j], mat[idx]);
            }
        }
    }
}

// Changes from fw_coalesced: each thread owns segment_size consecutive entries (the lab used 2),
// so fewer threads do more work each; the warp's accesses are now segment_size words apart per step.
extern "C" __global__ void fw_coalesced_segment(int* mat, int k, int N, int segment_size)
{
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (segment_size * idx < N * N) {
        for (int offset = 0; offset < segment_size && offset + segment_size * idx < N * N; ++offset) {
            int i = (segment_size * idx + offset) / N;
            int j = segment_size * idx + offset - i * N;
            if (mat[i * N + k] != -1 && mat[k * N + j] != -1) {
                if (mat[i * N + j] == -1) {
                    mat[i * N + j] = mat[i * N + k] + mat[k * N + j];
                } else {
                    mat[i * N + j] = Min(mat[i * N + k] + mat[k * N + j], mat[i * N + j]);
                }
            }
        }
    }
}
