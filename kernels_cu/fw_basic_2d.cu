// Floyd-Warshall, the basic 2D kernel (lab 000 §2.1; team 5's lab 003 §7.2 is the same design).
// The host launches it once per k on a 2D grid of 2D blocks; thread (x, y) owns d[i][j] with
// i = x and j = y, and relaxes it through vertex k. -1 means "no edge".
//
// The lab's starting point: no predecessor. Note the mapping: i follows threadIdx.x, so the
// threads of a warp walk down a column (stride N) - the block shape decides how many distinct
// rows, and so memory segments, one warp touches. Chapter 01 sweeps exactly that.

__device__ int Min(int a, int b) { return a < b ? a : b; }

extern "C" __global__ void fw_basic_2d(int* mat, int k, int N)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int j = threadIdx.y + blockIdx.y * blockDim.y;
    if (i < N && j < N) {
        if (mat[i * N + k] != -1 && mat[k * N + j] != -1) {
            if (mat[i * N + j] == -1) {
                mat[i * N + j] = mat[i * N + k] + mat[k * N + j];
            } else {
                mat[i * N + j] = Min(mat[i * N + k] + mat[k * N + j], mat[i * N + j]);
            }
        }
    }
}
