// The read-only streaming ceiling: how fast a kernel can read DRAM when it writes (almost) nothing.
// Chapter 00 measures it for the read-only kernels of later chapters (chapter 02's vecMax), which a
// device-to-device copy (read + write) does not bound: DRAM turns around between reads and writes,
// so a pure read streams faster than half of a copy's bytes.
//
// No predecessor: the kernel reads the whole array in the way vecmax02 does (grid stride, 16-byte
// loads, four loads in flight per thread and iteration) but combines the words with XOR, an exact,
// order-free operation, so the result checks bit for bit against a host XOR of the same array. Each
// thread stores one word (its partial XOR), as vecmax02 stores its partial max: the bytes written
// are blocks x threads x 4, negligible beside the bytes read. Needs n % 4 == 0 and a 16-byte-aligned
// array (n counts 32-bit words).

extern "C" __global__ void read_stream_xor(const unsigned int* a, unsigned int* partial, long long n)
{
    const uint4* a4 = reinterpret_cast<const uint4*>(a);
    long long n4 = n / 4;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int x0 = 0, x1 = 0, x2 = 0, x3 = 0;
    long long i = t;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        uint4 v0 = a4[i], v1 = a4[i + stride], v2 = a4[i + 2 * stride], v3 = a4[i + 3 * stride];
        x0 ^= v0.x ^ v0.y ^ v0.z ^ v0.w;
        x1 ^= v1.x ^ v1.y ^ v1.z ^ v1.w;
        x2 ^= v2.x ^ v2.y ^ v2.z ^ v2.w;
        x3 ^= v3.x ^ v3.y ^ v3.z ^ v3.w;
    }
    for (; i < n4; i += stride) {
        uint4 v = a4[i];
        x0 ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    partial[t] = x0 ^ x1 ^ x2 ^ x3;
}
