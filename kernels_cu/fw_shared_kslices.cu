// Floyd-Warshall with the block's slices of row k and column k in shared memory (team 5's
// "optimized kernel", lab 003 §7.4), launched with tileWidth * sizeof(int) bytes of dynamic shared
// memory on the lab's grid of ceil(width/tileWidth) blocks per side, which C integer division floors.

// Changes from fw_basic_2d: the first row and column of threads load the block's slices of
// column k and row k into shared memory, then every thread reads them there.
// As published, and wrong in three ways: both `extern __shared__` arrays start at the same address
// (they alias); each slice is filled with one value (d[first row][k], d[k][first column]) instead
// of one per thread; and with no bounds check and a floored grid, edge rows are never computed.
extern "C" __global__ void fw_shared_kslices_published(int* g_idata, int k, int N)
{
    extern __shared__ int kRow[];
    extern __shared__ int kCol[];

    int mX = blockIdx.x * blockDim.x + threadIdx.x;
    int mY = blockIdx.y * blockDim.y + threadIdx.y;

    int i0 = mX * N + mY;
    int i1 = mX * N + k;
    int i2 = k * N + mY;

    if (threadIdx.x == 0)
        kRow[threadIdx.y] = g_idata[i1];

    if (threadIdx.y == 0)
        kCol[threadIdx.x] = g_idata[i2];

    __syncthreads();

    int curr_elmnt = g_idata[i0];
    if (kCol[threadIdx.x] != -1 && kRow[threadIdx.y] != -1) {
        int sum = (kCol[threadIdx.x] + kRow[threadIdx.y]);
        if (curr_elmnt == -1 || sum < curr_elmnt)
            g_idata[i0] = sum;
    }
}

// Changes from fw_shared_kslices_published: two slices at separate offsets of the dynamic shared
// memory ((blockDim.x + blockDim.y) ints), each indexed by the thread coordinate that runs along it,
// a ceil grid with bounds checks, and the barrier outside them. The team's idea, computing the answer.
extern "C" __global__ void fw_shared_kslices(int* g_idata, int k, int N)
{
    extern __shared__ int slices[];
    int* col_k = slices;               // d[mX][k] for the block's rows, by threadIdx.x
    int* row_k = slices + blockDim.x;  // d[k][mY] for the block's columns, by threadIdx.y

    int mX = blockIdx.x * blockDim.x + threadIdx.x;
    int mY = blockIdx.y * blockDim.y + threadIdx.y;
    if (threadIdx.y == 0 && mX < N) col_k[threadIdx.x] = g_idata[mX * N + k];
    if (threadIdx.x == 0 && mY < N) row_k[threadIdx.y] = g_idata[k * N + mY];
    __syncthreads();
    if (mX < N && mY < N) {
        int curr_elmnt = g_idata[mX * N + mY];
        if (col_k[threadIdx.x] != -1 && row_k[threadIdx.y] != -1) {
            int sum = col_k[threadIdx.x] + row_k[threadIdx.y];
            if (curr_elmnt == -1 || sum < curr_elmnt)
                g_idata[mX * N + mY] = sum;
        }
    }
}
