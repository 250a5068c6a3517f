// The register-tiled k-means pass's shared setup: its compile-time shape (defaults, derived
// sizes, the checks that the shape tiles a warp) and the double-buffered staging of a tile of
// transposed objects in shared memory (cp.async from compute capability 8.0, a load and a store
// before). One definition for kmeans_tiled (km_04_tiled.cu), which it was written for, and
// kmeans_fixed (km_05_fixed_point.cu), which changes only the sums.
//
// Included as "km_tile_staging.cuh" (kernels_cu/ is on every kernel file's include path), before
// any code that uses K, D, TP, TQ, G or THREADS; a -D option overrides each default.

#ifndef CUDALAB_KM_TILE_STAGING_CUH
#define CUDALAB_KM_TILE_STAGING_CUH

#ifndef K
#define K 32
#endif
#ifndef D
#define D 32
#endif
#ifndef TP
#define TP 4
#endif
#ifndef TQ
#define TQ 8
#endif
#ifndef G
#define G 4
#endif

#ifndef THREADS
#define THREADS 128
#endif
#define KP (G * TQ)                     // centres padded to the lanes' share; the pad never wins
#define T (THREADS / G * TP)            // objects per tile
#define PITCH (T + 4)                   // floats per coordinate row of the staged tile
#define ROUND4(floats) (((floats) + 3) / 4 * 4)  // each region of shared memory starts 16-byte aligned
#define WARPS (THREADS / 32)
#define VECTOR_C (TQ % 4 == 0)
#define OWNED ((TP + G - 1) / G)          // objects whose results a lane writes

static_assert(THREADS % 32 == 0 && THREADS % G == 0 && 32 % G == 0, "G lanes must tile a warp");
static_assert(TP == 1 || TP == 2 || TP == 4, "TP is 1, 2 or 4");
static_assert(T % 4 == 0, "the tile is read four objects at a time");
static_assert(KP >= K, "G x TQ must cover the K centres");


template <int N> struct Vec;
template <> struct Vec<1> { typedef float type; };
template <> struct Vec<2> { typedef float2 type; };
template <> struct Vec<4> { typedef float4 type; };

__device__ __forceinline__ void unpack(float v, float* out) { out[0] = v; }
__device__ __forceinline__ void unpack(float2 v, float* out) { out[0] = v.x; out[1] = v.y; }
__device__ __forceinline__ void unpack(float4 v, float* out) { out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w; }

#if __CUDA_ARCH__ >= 800
#define ASYNC_COPIES 1
#else
#define ASYNC_COPIES 0
#endif

// Copy W floats (4, 8 or 16 bytes) from global to shared memory without passing through
// registers; where !valid, write zeros and read nothing. Older GPUs: a load and a store.
template <int W>
__device__ __forceinline__ void copy(float* dst, const float* src, bool valid)
{
#if ASYNC_COPIES
    unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(to), "l"(src), "n"(4 * W),
                 "r"(valid ? 4 * W : 0));
#else
    typedef typename Vec<W>::type piece;
    *reinterpret_cast<piece*>(dst) = valid ? *reinterpret_cast<const piece*>(src) : piece{};
#endif
}
__device__ __forceinline__ void copies_issued()
{
#if ASYNC_COPIES
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int PENDING>
__device__ __forceinline__ void copies_wait()  // until at most PENDING groups are in flight
{
#if ASYNC_COPIES
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

// Stage one tile: coordinate rows of the transposed objects into s_x (zeros past n), W floats
// per copy (W = 4 where n is a multiple of 4, so that every row starts 16-byte aligned). Pass i
// of a thread copies one W-wide piece: where a row has more pieces than the block has threads it
// takes several passes, else one pass covers several rows.
template <int W>
__device__ __forceinline__ void stage(float* s_x, const float* __restrict__ objects, int n, int base)
{
    constexpr int WIDE = T / W;                                   // pieces per row
    constexpr int PASSES_PER_ROW = WIDE >= THREADS ? WIDE / THREADS : 1;
    constexpr int ROWS_PER_PASS = WIDE >= THREADS ? 1 : THREADS / WIDE;
    int left = n - base;
    int row = WIDE >= THREADS ? 0 : threadIdx.x / WIDE;
    int column = W * (WIDE >= THREADS ? threadIdx.x : threadIdx.x % WIDE);
    const float* from = objects + (size_t)row * n + base + column;
    float* to = s_x + row * PITCH + column;
    if (WIDE >= THREADS) {  // each row in PASSES_PER_ROW pieces per thread, THREADS x W floats apart
#pragma unroll 4
        for (int j = 0; j < D; j++, from += n, to += PITCH)
#pragma unroll
            for (int r = 0; r < PASSES_PER_ROW; r++) {
                bool valid = column + r * THREADS * W < left;
                copy<W>(to + r * THREADS * W, valid ? from + r * THREADS * W : objects, valid);
            }
    } else {                // ROWS_PER_PASS rows per pass
        bool valid = column < left;
        size_t down = (size_t)ROWS_PER_PASS * n;
#pragma unroll 8
        for (int j = row; j < D; j += ROWS_PER_PASS, from += down, to += ROWS_PER_PASS * PITCH)
            copy<W>(to, valid ? from : objects, valid);
    }
}

__device__ __forceinline__ void stage_tile(float* s_x, const float* __restrict__ objects, int n, int base)
{
    if (base < n) {
        if (n % 4 == 0) stage<4>(s_x, objects, n, base);
        else stage<1>(s_x, objects, n, base);
    }
    copies_issued();  // a group per tile, empty past the last, so that the waits count alike
}

#endif  // CUDALAB_KM_TILE_STAGING_CUH
