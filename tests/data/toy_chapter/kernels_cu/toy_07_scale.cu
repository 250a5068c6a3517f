// A toy chapter's kernel (tests/test_new_chapter.py): y = a x, one element per thread.
// The smallest kernel family a chapter can have; nothing in the project runs it but that test.
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
