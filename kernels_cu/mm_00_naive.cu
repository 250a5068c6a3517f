// Matrix multiply C = A B of square n x n row-major float32 matrices, as lab 004's ladder starts
// it (CMU 18-646 mini-project 2, §1.2 a-c). One thread per element of C, no data reuse: every
// thread reads a row of A and a column of B straight from global memory.

// Step a, the provided kernel with the lab's fix: a bounds check, so any n works (the provided
// code assumed n a multiple of the block). The sum accumulates in C itself, in global memory,
// so C must be zero before the launch. The lab launched it with 2 x 2 threads per block; step b
// is the same kernel with 32 x 32 threads, a launch change only.
// Launch: grid (ceil(n / bx), ceil(n / by)), block (bx, by).
extern "C" __global__ void mm_naive_global(const float* A, const float* B, float* C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n)
        for (int k = 0; k < n; k++)
            C[(size_t)row * n + col] += A[(size_t)row * n + k] * B[(size_t)k * n + col];
}

// Step c, changed from step a: the sum lives in a register and C is written once, so each k
// costs two global loads instead of two loads, a load of C and a store of C.
extern "C" __global__ void mm_naive_register(const float* A, const float* B, float* C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; k++)
        sum += A[(size_t)row * n + k] * B[(size_t)k * n + col];
    C[(size_t)row * n + col] = sum;
}
