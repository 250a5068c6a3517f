// The project's k-means iteration with each thread's points in registers: kmeans_fixed's scores
// and fixed-point sums, with no staged tile, no block barrier in the loop and the centres read by
// broadcast.
// Changed from kmeans_fixed (a block stages a tile of objects in shared memory with cp.async, G
// lanes share an object group and split the centres, a barrier per tile; per coordinate a
// thread loads its objects and its centres from shared memory):
//   1. Each thread loads its PPT objects straight from global memory into registers (D x PPT
//      floats: one float2 or float4 per coordinate where n is a multiple of PPT, coalesced across
//      the warp in the transposed layout) and scores them against every centre in turn: per
//      centre, one broadcast float4 shared load (every lane the same address) of four of its
//      -2 x coordinates feeds 4 x PPT multiply-adds. The score is |c|^2 + sum_j x_j (-2 c_j),
//      summed in coordinate order from the norm exactly as kmeans_fixed sums it, so the two
//      kernels choose the same centres, bit for bit (the argmin of |x - c|^2 is the argmin of
//      |c|^2 - 2 x.c: one multiply-add per point, centre and coordinate). K is a loop bound at
//      run time; the nearest is the first of the lowest score (strict <, centres in index order):
//      ties go to the lowest index, as in the classic code.
//   2. Warps never wait for one another while the grid strides over the objects: each warp takes
//      32 x PPT objects per step. Its sums: the warp writes one object per lane (x, as float4
//      pieces) into its own staging rows in shared memory, then takes the 32 objects one at a
//      time with the lanes across the coordinates (lane l adds coordinate l, l + 32, ...) into the
//      block's sums of that object's cluster with shared atomics: 32 lanes, 32 different words
//      of one row, no bank conflicts. The block's sums are int64, each kept as a low and a high
//      32-bit word (fixed_add of fixed_point_add.cuh: two native 32-bit atomics per coordinate,
//      the low one's old value giving the carry) rather than a 64-bit shared atomic, which the GPU runs as a compare-and-swap loop.
//   3. The fixed point is kmeans_fixed's: x * SCALE rounded to int64 (SCALE = 2^s from the host),
//      the block's sums added once to the global int64 sums, and kmeans_fixed_finalize of
//      km_05_fixed_point.cu makes the centres and the next table from them. The sums are integers:
//      any order, same bits, and the same bits as kmeans_fixed's.
//   4. (Tunable, CPAIR = 2, the default) the centres are scored two at a time: each point value
//      loaded from registers feeds two independent multiply-add chains (one per centre), so the
//      loop step has twice the independent FMAs per broadcast load pair; the running best is
//      kept with selects, not branches. Each score is still summed from its norm in coordinate
//      order and the pair compared in index order (c, then c + 1, strict <), so the choice is
//      the same bits as CPAIR = 1 and as kmeans_fixed.
//   5. (Tunable, PREFETCH = 1; off by default) software pipelining: a thread loads its next
//      step's objects into a second set of registers before scoring this step's, so the global
//      loads overlap the multiply-adds (2 x D x PPT coordinates in registers; only where that
//      fits: dot_shape refuses it past DOT_MAX_D). The arithmetic is untouched: same bits.
// Compile-time constants: D, PPT (objects per thread: 1, 2, 4 or 8; 8 is two float4 loads per
// coordinate), THREADS (a multiple of 32), CPAIR (centres per loop step: 1 or 2), PREFETCH (0 or
// 1); K is the argument k. Inputs: objects transposed, objects[d * n + i]; table = [k x D] -2 x centre,
// then [k] |centre|^2. Dynamic shared memory, in floats, each region rounded up to a multiple of
// 4: the centres k x DP (DP = D rounded up to 4), their norms k, the block's sums' low words
// k x D and high words k x D, the block's cluster sizes k, then each warp's staging rows 32 x SP. Launch:
// grid (a few blocks per SM, persistent), block THREADS.
#include "fixed_point_add.cuh"

#ifndef D
#define D 32
#endif
#ifndef PPT
#define PPT 2
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef CPAIR
#define CPAIR 2
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

#define ROUND4(floats) (((floats) + 3) / 4 * 4)  // each region of shared memory starts 16-byte aligned
#define DP ROUND4(D)                              // a centre's row: float4 pieces
#define D4 (D / 4)                                // whole float4 pieces of a point
#define SP (DP % 8 == 0 ? DP + 4 : DP)            // staging pitch: row p's float4 at bank 4p + j (mod 32)
#define WARPS (THREADS / 32)

static_assert(THREADS % 32 == 0, "whole warps");
static_assert(PPT == 1 || PPT == 2 || PPT == 4 || PPT == 8, "PPT is 1, 2, 4 or 8");
static_assert(CPAIR == 1 || CPAIR == 2, "CPAIR is 1 or 2");
static_assert(PREFETCH == 0 || PREFETCH == 1, "PREFETCH is 0 or 1");

template <int N> struct Vec;
template <> struct Vec<1> { typedef float type; };
template <> struct Vec<2> { typedef float2 type; };
template <> struct Vec<4> { typedef float4 type; };
struct __align__(16) float8 { float4 a, b; };
template <> struct Vec<8> { typedef float8 type; };

__device__ __forceinline__ void unpack(float v, float* out) { out[0] = v; }
__device__ __forceinline__ void unpack(float2 v, float* out) { out[0] = v.x; out[1] = v.y; }
__device__ __forceinline__ void unpack(float4 v, float* out) { out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w; }
__device__ __forceinline__ void unpack(float8 v, float* out) { unpack(v.a, out); unpack(v.b, out + 4); }

// Streaming loads of a point group's coordinate (PPT = 8: two float4 loads, 32 bytes).
__device__ __forceinline__ float load(const float* p) { return __ldcs(p); }
__device__ __forceinline__ float2 load(const float2* p) { return __ldcs(p); }
__device__ __forceinline__ float4 load(const float4* p) { return __ldcs(p); }
__device__ __forceinline__ float8 load(const float8* p)
{
    const float4* q = reinterpret_cast<const float4*>(p);
    float8 v;
    v.a = __ldcs(q);
    v.b = __ldcs(q + 1);
    return v;
}

// This thread's PPT objects first, first + 1, ... into registers (zeros past n): one float2,
// float4 or two float4 loads per coordinate where every group starts PPT-aligned, else scalars.
__device__ __forceinline__ void load_points(const float* __restrict__ objects, int n, int first, bool vector,
                                            float (&x)[PPT][D])
{
    if (vector && first < n) {
        const float* from = objects + first;
#pragma unroll
        for (int j = 0; j < D; j++) {
            float v[PPT];
            unpack(load(reinterpret_cast<const typename Vec<PPT>::type*>(from + (size_t)j * n)), v);
#pragma unroll
            for (int p = 0; p < PPT; p++) x[p][j] = v[p];
        }
    } else {
#pragma unroll
        for (int j = 0; j < D; j++)
#pragma unroll
            for (int p = 0; p < PPT; p++) x[p][j] = first + p < n ? __ldcs(objects + (size_t)j * n + first + p) : 0.0f;
    }
}

// Score PPT points against one centre: its norm, then + x_j (-2 c_j) in coordinate order (the
// order kmeans_fixed sums in), with broadcast float4 loads of the centre's row.
template <int C>
__device__ __forceinline__ void score_centres(const float (&x)[PPT][D], const float* s_c, const float* s_norm, int c,
                                              float (&score)[C][PPT])
{
#pragma unroll
    for (int q = 0; q < C; q++) {
        float norm = s_norm[c + q];
#pragma unroll
        for (int p = 0; p < PPT; p++) score[q][p] = norm;
    }
#pragma unroll
    for (int j4 = 0; j4 < DP / 4; j4++) {
        float cw[C][4];
#pragma unroll
        for (int q = 0; q < C; q++) {
            float4 w = reinterpret_cast<const float4*>(s_c + (c + q) * DP)[j4];
            cw[q][0] = w.x;
            cw[q][1] = w.y;
            cw[q][2] = w.z;
            cw[q][3] = w.w;
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (4 * j4 + u < D)
#pragma unroll
                for (int p = 0; p < PPT; p++)
#pragma unroll
                    for (int q = 0; q < C; q++) score[q][p] = fmaf(x[p][4 * j4 + u], cw[q][u], score[q][p]);
    }
}

// A point's coordinate as kmeans_fixed converts it: x * SCALE, rounded to the nearest int64.
__device__ __forceinline__ long long to_fixed(float x, float scale) { return __float2ll_rn(x * scale); }


extern "C" __global__ void __launch_bounds__(THREADS) kmeans_dot(
    const float* __restrict__ objects, int* __restrict__ membership, unsigned long long* __restrict__ sums,
    int* __restrict__ sizes, int* __restrict__ changed, const float* __restrict__ table, int n, int k, float scale)
{
    extern __shared__ __align__(16) float shared[];
    float* s_c = shared;                                                   // [k][DP]: -2 x centre, zero-padded
    float* s_norm = s_c + k * DP;                                          // [k]: |centre|^2
    unsigned* s_low = reinterpret_cast<unsigned*>(s_norm + ROUND4(k));    // [k][D]: the sums' low words
    int* s_high = reinterpret_cast<int*>(s_low + ROUND4(k * D));           // [k][D]: and their high words
    int* s_sizes = s_high + ROUND4(k * D);                                 // [k]
    float* s_stage = reinterpret_cast<float*>(s_sizes + ROUND4(k));        // [WARPS][32][SP]
    __shared__ int s_changed;

    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int i = threadIdx.x; i < k * DP; i += THREADS) {
        int c = i / DP, j = i % DP;
        s_c[i] = j < D ? table[c * D + j] : 0.0f;
    }
    for (int c = threadIdx.x; c < k; c += THREADS) s_norm[c] = table[k * D + c];
    for (int i = threadIdx.x; i < k * D; i += THREADS) s_low[i] = s_high[i] = 0;
    for (int c = threadIdx.x; c < k; c += THREADS) s_sizes[c] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    __syncthreads();
    float* my_stage = s_stage + warp * 32 * SP;
    int moved = 0;
    const bool vector = n % PPT == 0;  // every point group starts PPT-aligned in each row

    const int span = 32 * PPT;  // objects per warp and step
    const int stride = gridDim.x * WARPS * span;
    int base = (blockIdx.x * WARPS + warp) * span;
    float x[PPT][D];
#if PREFETCH
    load_points(objects, n, base + lane * PPT, vector, x);
#endif
    for (; base < n; base += stride) {
        // This thread's objects: base + lane x PPT + p (coalesced: the warp reads span floats per row).
        int first = base + lane * PPT;
#if PREFETCH
        // The next step's objects, loaded now so that their loads overlap this step's scores.
        float next[PPT][D];
        if (base + stride < n) load_points(objects, n, first + stride, vector, next);
#else
        load_points(objects, n, first, vector, x);
#endif
        int old[PPT];
#pragma unroll
        for (int p = 0; p < PPT; p++) old[p] = first + p < n ? membership[first + p] : -1;

        // Scores, CPAIR centres per step: their coordinates by broadcast float4 loads. The best so
        // far by selects, the centres compared in index order (strict <: ties keep the lower).
        float best[PPT];
        int index[PPT];
#pragma unroll
        for (int p = 0; p < PPT; p++) {
            best[p] = __int_as_float(0x7f800000);
            index[p] = 0;
        }
        int c = 0;
#pragma unroll 2
        for (; c + CPAIR <= k; c += CPAIR) {
            float score[CPAIR][PPT];
            score_centres<CPAIR>(x, s_c, s_norm, c, score);
#pragma unroll
            for (int q = 0; q < CPAIR; q++)
#pragma unroll
                for (int p = 0; p < PPT; p++) {
                    bool lower = score[q][p] < best[p];
                    best[p] = lower ? score[q][p] : best[p];
                    index[p] = lower ? c + q : index[p];
                }
        }
        if (CPAIR > 1 && c < k) {  // K odd: the last centre alone
            float score[1][PPT];
            score_centres<1>(x, s_c, s_norm, c, score);
#pragma unroll
            for (int p = 0; p < PPT; p++) {
                bool lower = score[0][p] < best[p];
                best[p] = lower ? score[0][p] : best[p];
                index[p] = lower ? c : index[p];
            }
        }
#pragma unroll
        for (int p = 0; p < PPT; p++)
            if (first + p < n) {
                moved += old[p] != index[p];
                membership[first + p] = index[p];
                atomicAdd(&s_sizes[index[p]], 1);
            }

        // Sums: one object per lane into the warp's staging rows, then the warp across its coordinates.
#pragma unroll
        for (int p = 0; p < PPT; p++) {
            float* mine = my_stage + lane * SP;
#pragma unroll
            for (int j4 = 0; j4 < D4; j4++)
                *reinterpret_cast<float4*>(mine + 4 * j4) =
                    make_float4(x[p][4 * j4], x[p][4 * j4 + 1], x[p][4 * j4 + 2], x[p][4 * j4 + 3]);
#pragma unroll
            for (int j = 4 * D4; j < D; j++) mine[j] = x[p][j];
            __syncwarp();
            int left = (n - base - p + PPT - 1) / PPT;  // lanes whose object p exists (objects base + l PPT + p < n)
            int objects_here = left < 32 ? left : 32;
#pragma unroll 4
            for (int l = 0; l < objects_here; l++) {
                int c = __shfl_sync(0xffffffffu, index[p], l);
                const float* row = my_stage + l * SP;
#pragma unroll
                for (int j = lane; j < D; j += 32) fixed_add(s_low + c * D + j, s_high + c * D + j, to_fixed(row[j], scale));
            }
            __syncwarp();  // the rows are read before the next object overwrites them
        }
#if PREFETCH
#pragma unroll
        for (int p = 0; p < PPT; p++)
#pragma unroll
            for (int j = 0; j < D; j++) x[p][j] = next[p][j];
#endif
    }
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    if (lane == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();
    for (int i = threadIdx.x; i < k * D; i += THREADS) {
        long long v = static_cast<long long>(static_cast<unsigned long long>(s_high[i]) << 32 | s_low[i]);
        if (v != 0) atomicAdd(&sums[i], static_cast<unsigned long long>(v));  // two's complement: a signed add
    }
    for (int c = threadIdx.x; c < k; c += THREADS)
        if (s_sizes[c]) atomicAdd(&sizes[c], s_sizes[c]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}
