// The project's k-means iteration with deterministic sums: kmeans_tiled's one pass, its sums
// kept in 64-bit fixed point, so that an iteration's centres do not depend on the order in which
// the GPU happens to add the points.
// Changed from kmeans_tiled (float sums per warp, merged into the global float sums with
// atomics, whose order changes from run to run and so may the last bits of every centre; over a
// whole run, a different rounding can lead to another local optimum):
//   1. Each coordinate is converted once, as it is added, to a 64-bit integer x * SCALE rounded
//      (SCALE = 2^s, passed in, chosen by the host from the data's largest |x| so that N x max|x|
//      x SCALE stays below 2^62: no sum can overflow). Integer addition is associative, so the
//      per-warp sums, their merge per block and the global atomics give the same bits in any
//      order, on any grid, on any GPU. Where s >= 23 - (the exponent of x) the conversion is exact,
//      so the sums are the exact sums of the float32 points, not a rounded float32 total.
//   2. Each warp's K x D sums are int64 (twice the shared memory of kmeans_tiled's floats; lane j
//      still owns coordinate j: plain 64-bit loads and stores, no atomics), merged per block and
//      added to the global int64 sums with one 64-bit integer atomic per cluster and coordinate.
//   3. kmeans_fixed_finalize turns the sums back into centres in float64 (sum / SCALE / size,
//      rounded once to float32), then writes the next table as kmeans_finalize does.
// The rest (the register-tiled scores, the two-step argmin with ties to the lowest index, the
// double-buffered tile, the persistent grid) is kmeans_tiled's, unchanged: memberships were
// already independent of the order of execution, each point's scores being summed in a fixed order.
// Compile-time constants: K, D, TP, TQ, G, THREADS as in km_04_tiled.cu.
// Inputs: objects transposed, objects[d * n + i]; table = [K x D] -2 x centre, then [K] |centre|^2.
// Dynamic shared memory, in floats: two tiles of D x PITCH, the centres D x KP and their norms KP
// (each rounded up to a multiple of 4), the tile's nearest centres T, then each warp's int64 sums
// WARPS x K x D (2 floats each). Launch: grid (a few blocks per SM, persistent), block THREADS.
#ifndef K
#define K 32
#endif
#ifndef D
#define D 32
#endif
#include "fixed_point_update.cuh"  // kmeans_fixed_finalize's body, shared with the tensor pass
#include "km_tile_staging.cuh"     // kmeans_tiled's other shape constants and tile staging, unchanged

extern "C" __global__ void __launch_bounds__(THREADS) kmeans_fixed(
    const float* __restrict__ objects, int* __restrict__ membership, unsigned long long* __restrict__ sums,
    int* __restrict__ sizes, int* __restrict__ changed, const float* __restrict__ table, int n, float scale)
{
    extern __shared__ __align__(16) float shared[];
    float* s_tiles = shared;                      // 2 x [D][PITCH]: two tiles, transposed
    float* s_c = s_tiles + 2 * D * PITCH;         // [D][KP]: -2 x centre, coordinate-major
    float* s_norm = s_c + ROUND4(D * KP);         // [KP]: |centre|^2, +inf for the pad
    int* s_idx = reinterpret_cast<int*>(s_norm + ROUND4(KP));  // [T]: each object's nearest centre, -1 past n
    long long* s_sums = reinterpret_cast<long long*>(s_idx + T); // [WARPS][K][D], 8-byte aligned (T % 4 == 0)
    __shared__ int s_sizes[K];
    __shared__ int s_changed;

    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int q = threadIdx.x % G;                      // which TQ centres
    int group = threadIdx.x / G;                  // which TP objects of the tile
    for (int i = threadIdx.x; i < D * KP; i += THREADS) {
        int j = i / KP, c = i % KP;
        s_c[i] = c < K ? table[c * D + j] : 0.0f;
    }
    for (int c = threadIdx.x; c < KP; c += THREADS) s_norm[c] = c < K ? table[K * D + c] : __int_as_float(0x7f800000);
    for (int i = threadIdx.x; i < WARPS * K * D; i += THREADS) s_sums[i] = 0;
    for (int c = threadIdx.x; c < K; c += THREADS) s_sizes[c] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    long long* my_sums = s_sums + warp * K * D;
    int moved = 0;

    int step = gridDim.x * T;
    stage_tile(s_tiles, objects, n, blockIdx.x * T);
    for (int base = blockIdx.x * T, t = 0; base < n; base += step, t ^= 1) {
        float* s_x = s_tiles + t * D * PITCH;
        stage_tile(s_tiles + (t ^ 1) * D * PITCH, objects, n, base + step);  // the next tile, meanwhile
        copies_wait<1>();  // this tile's copies are done (the next tile's may still be in flight)
        __syncthreads();
        // The objects' memberships from the last iteration, loaded now so that the loads' latency
        // hides behind the distance work (read after it, each would stall the warp).
        // Lane q of a group owns its objects p = q, q + G, ...: it reads and writes their results.
        int old[OWNED], mine[OWNED];
#pragma unroll
        for (int s = 0; s < OWNED; s++) {
            int p = s * G + q, obj = base + group * TP + p;
            old[s] = p < TP && obj < n ? membership[obj] : -1;
        }

        // Scores: TP objects x TQ centres, one multiply-add per coordinate (expanded distance).
        float score[TP][TQ];
#pragma unroll
        for (int p = 0; p < TP; p++)
#pragma unroll
            for (int t = 0; t < TQ; t++) score[p][t] = s_norm[q * TQ + t];
#pragma unroll 8
        for (int j = 0; j < D; j++) {
            float x[TP], c[TQ];
            unpack(*reinterpret_cast<const typename Vec<TP>::type*>(&s_x[j * PITCH + group * TP]), x);
#if VECTOR_C
#pragma unroll
            for (int t = 0; t < TQ; t += 4) unpack(*reinterpret_cast<const float4*>(&s_c[j * KP + q * TQ + t]), c + t);
#else
#pragma unroll
            for (int t = 0; t < TQ; t++) c[t] = s_c[j * KP + q * TQ + t];
#endif
#pragma unroll
            for (int p = 0; p < TP; p++)
#pragma unroll
                for (int t = 0; t < TQ; t++) score[p][t] = fmaf(x[p], c[t], score[p][t]);
        }

        // Nearest: the thread's own TQ centres, then across the G lanes of the group.
#pragma unroll
        for (int p = 0; p < TP; p++) {
            float best = score[p][0];
            int index = q * TQ;
#pragma unroll
            for (int t = 1; t < TQ; t++)
                if (score[p][t] < best) {
                    best = score[p][t];
                    index = q * TQ + t;
                }
#pragma unroll
            for (int offset = 1; offset < G; offset *= 2) {
                float other = __shfl_xor_sync(0xffffffffu, best, offset);
                int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
                if (other < best || (other == best && other_index < index)) {
                    best = other;
                    index = other_index;
                }
            }
            if (q == p % G) mine[p / G] = index;
        }
#pragma unroll
        for (int s = 0; s < OWNED; s++) {
            int p = s * G + q, obj = base + group * TP + p;
            if (p < TP) {
                int result = -1;
                if (obj < n) {
                    moved += old[s] != mine[s];
                    membership[obj] = mine[s];
                    atomicAdd(&s_sizes[mine[s]], 1);
                    result = mine[s];
                }
                s_idx[group * TP + p] = result;
            }
        }
        __syncthreads();

        // Sums: each warp adds four objects per step into its own int64 copy, lane j coordinate j.
        for (int p = warp * 4; p < T; p += WARPS * 4) {
            int4 idx = *reinterpret_cast<const int4*>(&s_idx[p]);
            if (idx.x < 0) break;  // objects past n are at the end of the last tile
            bool whole = idx.w >= 0;
            for (int j = lane; j < D; j += 32) {
                float4 v = *reinterpret_cast<const float4*>(&s_x[j * PITCH + p]);
                my_sums[idx.x * D + j] += __float2ll_rn(v.x * scale);
                if (whole) {
                    my_sums[idx.y * D + j] += __float2ll_rn(v.y * scale);
                    my_sums[idx.z * D + j] += __float2ll_rn(v.z * scale);
                    my_sums[idx.w * D + j] += __float2ll_rn(v.w * scale);
                } else {
                    if (idx.y >= 0) my_sums[idx.y * D + j] += __float2ll_rn(v.y * scale);
                    if (idx.z >= 0) my_sums[idx.z * D + j] += __float2ll_rn(v.z * scale);
                }
            }
        }
        __syncthreads();  // done with this tile's buffer and s_idx: the next step may overwrite them
    }
    copies_wait<0>();
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    __syncthreads();
    if (lane == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();
    for (int i = threadIdx.x; i < K * D; i += THREADS) {
        long long v = 0;
#pragma unroll
        for (int w = 0; w < WARPS; w++) v += s_sums[w * K * D + i];
        if (v != 0) atomicAdd(&sums[i], static_cast<unsigned long long>(v));  // two's complement: a signed add
    }
    for (int c = threadIdx.x; c < K; c += THREADS)
        if (s_sizes[c]) atomicAdd(&sizes[c], s_sizes[c]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}

// New centres from the fixed-point sums (fixed_update, fixed_point_update.cuh: sum / SCALE / size
// in float64, rounded once to float32; then, as kmeans_finalize, the next table into `next`, the
// change count into *changed_out, the accumulators zeroed). Launch: grid 1, block threads.
extern "C" __global__ void kmeans_fixed_finalize(float* centres, long long* sums, int* sizes, float* next,
                                                 int* changed, int* changed_out, double inverse_scale)
{
    fixed_update(centres, sums, sizes, next, changed, changed_out, inverse_scale, threadIdx.x, blockDim.x);
}
