// A deliberately wrong per-k Floyd-Warshall (it never updates the last row), for the tests:
// the harness must flag its results as wrong and never count them as a speedup.
extern "C" __global__ void fw_off_by_one(int* mat, int k, int N)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    if (i < N - 1 && j < N && mat[i * N + k] != -1 && mat[k * N + j] != -1) {
        int s = mat[i * N + k] + mat[k * N + j];
        if (mat[i * N + j] == -1 || s < mat[i * N + j]) mat[i * N + j] = s;
    }
}
