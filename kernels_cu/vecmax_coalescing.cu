// Partial max reduction (Colorado State CS475 PA4, lab 002): each thread reduces its share of the
// array to one value in `reductions`; a second pass (cupy.max) reduces those. `per_thread` is the
// number of elements per thread (ceil(n / threads)); indices past n are skipped.
// With TRACE_ACCESS defined, each kernel also writes which global thread read each element, so the
// access-pattern figure is drawn from the kernel's own index arithmetic.

#define NEG_INF __int_as_float(0xff800000)  // -infinity, the identity of max (NVRTC has no math.h)

#ifdef TRACE_ACCESS
#define TRACE(i) owner[i] = blockIdx.x * blockDim.x + threadIdx.x
#define TRACE_PARAM , int* owner
#else
#define TRACE(i)
#define TRACE_PARAM
#endif

// The lab's kernel 00 (no predecessor): every block owns a contiguous chunk, and every thread a
// contiguous segment of per_thread elements inside it, so a warp's 32 loads are per_thread apart.
extern "C" __global__ void vecmax00(const float* a, float* reductions, long long n, int per_thread TRACE_PARAM)
{
    long long start = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
    long long end = min(start + per_thread, n);
    float m = NEG_INF;
    for (long long i = start; i < end; ++i) {
        TRACE(i);
        m = fmaxf(m, a[i]);
    }
    reductions[blockIdx.x * blockDim.x + threadIdx.x] = m;
}

// Changes from vecmax00: inside the block's chunk the threads interleave (stride blockDim.x), so a
// warp's 32 loads are consecutive floats: one 128-byte transaction per warp load (lab's kernel 01).
extern "C" __global__ void vecmax01(const float* a, float* reductions, long long n, int per_thread TRACE_PARAM)
{
    long long block_start = (long long)blockIdx.x * blockDim.x * per_thread;
    long long block_end = min(block_start + (long long)blockDim.x * per_thread, n);
    float m = NEG_INF;
    for (long long i = block_start + threadIdx.x; i < block_end; i += blockDim.x) {
        TRACE(i);
        m = fmaxf(m, a[i]);
    }
    reductions[blockIdx.x * blockDim.x + threadIdx.x] = m;
}

// Changes from vecmax01 (this project's step, not the lab's): the whole grid interleaves (grid
// stride), each thread loads float4 (16 bytes) and keeps four loads in flight per iteration, the
// way library reductions (CUB) reach the DRAM ceiling. Needs n % 4 == 0 and a 16-byte-aligned a.
extern "C" __global__ void vecmax02(const float* a, float* reductions, long long n, int per_thread TRACE_PARAM)
{
    const float4* a4 = reinterpret_cast<const float4*>(a);
    long long n4 = n / 4;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float m0 = NEG_INF, m1 = NEG_INF, m2 = NEG_INF, m3 = NEG_INF;
    long long i = t;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 v0 = a4[i], v1 = a4[i + stride], v2 = a4[i + 2 * stride], v3 = a4[i + 3 * stride];
#ifdef TRACE_ACCESS
        for (int q = 0; q < 4; ++q) {
            TRACE(4 * i + q); TRACE(4 * (i + stride) + q); TRACE(4 * (i + 2 * stride) + q); TRACE(4 * (i + 3 * stride) + q);
        }
#endif
        m0 = fmaxf(m0, fmaxf(fmaxf(v0.x, v0.y), fmaxf(v0.z, v0.w)));
        m1 = fmaxf(m1, fmaxf(fmaxf(v1.x, v1.y), fmaxf(v1.z, v1.w)));
        m2 = fmaxf(m2, fmaxf(fmaxf(v2.x, v2.y), fmaxf(v2.z, v2.w)));
        m3 = fmaxf(m3, fmaxf(fmaxf(v3.x, v3.y), fmaxf(v3.z, v3.w)));
    }
    for (; i < n4; i += stride) {
        float4 v = a4[i];
#ifdef TRACE_ACCESS
        for (int q = 0; q < 4; ++q) TRACE(4 * i + q);
#endif
        m0 = fmaxf(m0, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    reductions[t] = fmaxf(fmaxf(m0, m1), fmaxf(m2, m3));
}
