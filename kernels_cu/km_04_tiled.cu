// The project's k-means iteration tiled like a matrix multiply: one pass over the objects, as
// kmeans_fused, with the distance work blocked in registers and the next tile's objects on their
// way while this one is computed.
// Changed from kmeans_fused (one object per thread against every centre, centres in constant
// memory, which the compiler stages through uniform registers: about one extra instruction per
// two multiply-adds):
//   1. The scores of a tile of objects against all centres are a small matrix product,
//      (T x D) x (D x K). Each thread computes TP objects x TQ centres of it; G = K / TQ
//      neighbouring lanes share an object group and cover its centres between them. Per
//      coordinate a thread makes one shared-memory load of its TP objects and TQ / 4 of its
//      centres (float4), for TP x TQ multiply-adds: with TP = 4, TQ = 8, three loads for 32 flops
//      instead of one uniform load for two.
//   2. The nearest centre is found in two steps: each thread's best of its TQ centres, then the
//      best of the G lanes by shuffles, the lower index winning a tie, so the answer is the lowest
//      index among the nearest, as in the classic code.
//   3. The tile is staged transposed in shared memory with a pitch of T + 4 floats: rows stay
//      16-byte aligned for the float4 loads of step 1, and in the sums step lane j's float4 of
//      four objects of coordinate j falls in bank 4j: eight lanes per phase, no conflicts.
//   4. Two tile buffers: asynchronous copies (cp.async, compute capability 8.0 and later) bring
//      the next tile from DRAM into one while the block computes on the other, so no warp waits
//      for a load; the previous iteration's memberships are loaded before the distance work for
//      the same reason. Older GPUs load and store each tile in turn.
//   5. Sums as in kmeans_fused's SUMS_BY_WARP path (each warp its own copy of the K x D sums,
//      lane j adding coordinate j, no atomics), four objects per step from one float4 load. (Two
//      copies per warp, so that one object's read-add-write need not wait for the previous
//      object's, lost on the H100: the larger sums leave fewer blocks per SM.)
// Compile-time constants: K, D; TP (objects per thread: 1, 2 or 4), TQ (centres per thread),
// G (lanes per object group, a power of two <= 32, G x TQ >= K), THREADS (a multiple of 32 and
// of G). The tile holds T = THREADS / G x TP objects, a multiple of 4.
// Inputs: objects transposed, objects[d * n + i]; table = [K x D] -2 x centre, then [K] |centre|^2
// (kmeans_finalize of km_03_fused.cu writes it). Dynamic shared memory, in floats: two tiles of
// D x PITCH, the centres D x KP and their norms KP (each rounded up to a multiple of 4), the
// tile's nearest centres T, each warp's sums WARPS x K x D. Launch: grid (a few blocks per SM,
// persistent), block THREADS.

#include "km_tile_staging.cuh"  // the shape constants and the double-buffered tile staging, shared with kmeans_fixed

extern "C" __global__ void __launch_bounds__(THREADS) kmeans_tiled(
    const float* __restrict__ objects, int* __restrict__ membership, float* __restrict__ sums,
    int* __restrict__ sizes, int* __restrict__ changed, const float* __restrict__ table, int n)
{
    extern __shared__ __align__(16) float shared[];
    float* s_tiles = shared;                      // 2 x [D][PITCH]: two tiles, transposed
    float* s_c = s_tiles + 2 * D * PITCH;         // [D][KP]: -2 x centre, coordinate-major
    float* s_norm = s_c + ROUND4(D * KP);         // [KP]: |centre|^2, +inf for the pad
    int* s_idx = reinterpret_cast<int*>(s_norm + ROUND4(KP));  // [T]: each object's nearest centre, -1 past n
    float* s_sums = reinterpret_cast<float*>(s_idx + T); // [WARPS][K][D]
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
    for (int i = threadIdx.x; i < WARPS * K * D; i += THREADS) s_sums[i] = 0.0f;
    for (int c = threadIdx.x; c < K; c += THREADS) s_sizes[c] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    float* my_sums = s_sums + warp * K * D;
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

        // Sums: each warp adds four objects per step into its own copy, lane j coordinate j.
        for (int p = warp * 4; p < T; p += WARPS * 4) {
            int4 idx = *reinterpret_cast<const int4*>(&s_idx[p]);
            if (idx.x < 0) break;  // objects past n are at the end of the last tile
            bool whole = idx.w >= 0;
            for (int j = lane; j < D; j += 32) {
                float4 v = *reinterpret_cast<const float4*>(&s_x[j * PITCH + p]);
                my_sums[idx.x * D + j] += v.x;
                if (whole) {
                    my_sums[idx.y * D + j] += v.y;
                    my_sums[idx.z * D + j] += v.z;
                    my_sums[idx.w * D + j] += v.w;
                } else {
                    if (idx.y >= 0) my_sums[idx.y * D + j] += v.y;
                    if (idx.z >= 0) my_sums[idx.z * D + j] += v.z;
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
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) v += s_sums[w * K * D + i];
        if (v != 0.0f) atomicAdd(&sums[i], v);
    }
    for (int c = threadIdx.x; c < K; c += THREADS)
        if (s_sizes[c]) atomicAdd(&sizes[c], s_sizes[c]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);
}
