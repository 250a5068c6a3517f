// The project's k-means iteration with the scores on the tensor cores: the distance work is a
// small matrix product, (objects x D) x (D x K), so the tensor cores compute it, in TF32 split
// three ways (3xTF32) so that a score keeps about float32's precision.
// Changed from kmeans_dot (each thread's objects in registers, one float multiply-add per object,
// centre and coordinate on the FP32 units: about 134 M warp FFMA at N = 4 Mi, D = K = 32, so the
// pass was bound by instruction issue, not by reading the points):
//   1. A warp takes 32 objects per step as two m16n8k8 row tiles of 16 objects. Lane (g, t)
//      (g = lane / 4, t = lane % 4) loads objects first .. first + 3 (first = base + 4 g) of
//      coordinates 8 s + t and 8 s + t + 4 as one float4 each (coalesced: the warp reads four
//      rows of 128 bytes per load) and so already holds its A fragments: tile m's rows g and
//      g + 8 are objects first + 2 m and first + 2 m + 1. No shared-memory staging, no barrier.
//   2. Each score |c|^2 + sum_j x_j (-2 c_j) is mma.sync.m16n8k8 in TF32, three products per
//      fragment: x = x_hi + x_lo and (-2 c) = c_hi + c_lo (each part rounded to TF32, 10-bit
//      mantissa), score += x_lo c_hi + x_hi c_lo + x_hi c_hi (the small terms first; x_lo c_lo,
//      below float32's last bit, dropped). The accumulator starts at |c|^2. The centres' split
//      fragments are built once per block in shared memory, one uint4 per lane and tile
//      (b0 hi, b1 hi, b0 lo, b1 lo), so each is one conflict-free 16-byte load per step.
//      The scores are not kmeans_fixed's bits (the tensor cores add in their own order); they
//      differ from float32's by a few of its last bits, so an object within that of a tie may
//      pick the other centre (the chapter's agreement table counts them).
//   3. Nearest: each lane holds, per object, the scores of the centres 8 n + 2 t and 8 n + 2 t + 1
//      of every column tile n; its best in index order (strict <), then the best of the quad's
//      four lanes, the lower index winning a tie: ties go to the lowest index, as in the classic
//      code. Centres past K (the last tile's pad) score +inf and never win. The quad's exchange
//      halves the objects each round (lane t keeps two objects against lane t ^ 2, then object t
//      against lane t ^ 1): 6 shuffles where a butterfly per object took 16, then 4 more hand
//      each lane all four nearest centres for its sums. The minimum of (score, index) pairs is
//      the same in any order: the same bits as the butterfly, in less time (docs/tuning-log.md).
//   4. Sums in 64-bit fixed point, as kmeans_dot's (x * SCALE rounded, SCALE = 2^s from the host;
//      integer sums: any order gives the same bits, the bits of kmeans_fixed). Lane (g, t) adds
//      its own coordinates of its four objects, straight from the A registers, to the block's
//      sums, each sum a low and a high word, as two 32-bit shared atomics that return nothing
//      (split_add, fixed_point_add.cuh): the low word takes v's low SPLIT bits, the high word
//      v >> SPLIT. No add carries into the other word, so no atomic waits for another's result;
//      the host picks SPLIT and the grid so that neither word's sum can leave 32 bits
//      (gpu.tensor_split: at most so many objects add to one word). kmeans_dot's fixed_add
//      (the low word's old value tells the carry) waited on every low atomic's result, and
//      short-scoreboard waits were the pass's largest stall (Nsight Compute, N = 4 Mi, D = K =
//      32, an H100). Where no SPLIT fits (the scale gives values up to about 2^61 / N, so below
//      a few hundred objects, or a few thousand with one copy), SPLIT = 0: fixed_add.
//   5. (COPIES = 8, K <= 32) each quad g adds to its own copy of the sums: two quads of a warp
//      often add to the same word, or to one bank, in one instruction, and the atomics
//      serialize. Each copy's rows are 32 words apart and the copies 4 words off a multiple of
//      32, so lane (g, t) always lands in bank 4 g + t + const: no conflict at all. The block
//      merges its copies once, at the end (integers: the same bits). With one copy (K > 32,
//      where eight would not fit beside a second block) the rows are D + 1 words apart, so the
//      lanes of one add spread over the banks.
//   6. Whole steps of 32 objects, every step but the data's last, run without a bound check,
//      and the float4 or float path is chosen once, outside the loop: with a check per load
//      and per object, each was its own basic block, and nvcc could not interleave them.
//   7. TF32 rounding to nearest (cvt.rn, one instruction on sm_90) where the GPU has it; on
//      sm_80 and sm_89 cvt.rna (ties away, four instructions). Either way x - hi is exact, and lo
//      keeps its leading bits: what the score drops is within float32's last bits.
//   8. No finalize launch: the last block to finish (a counter of finished blocks, each block's
//      atomics made visible first by __threadfence) turns the sums into the next centres and
//      table itself (fixed_update, fixed_point_update.cuh: km_05's finalize, the same bits). That
//      launch was mostly one block's chain of memory latencies, so fixed_update reads each
//      thread's sums at once and sums the norms from shared memory.
//   9. (K > 32) a step's mma go term by term (x_lo c_hi over all 2 x KT accumulators, then
//      x_hi c_lo, then x_hi c_hi), so 2 x KT independent mma separate two on one accumulator; up
//      to K = 32 a tile's three go back to back. Each accumulator adds the same terms in the same
//      order either way: the same bits. Faster at K = 64, slower at K = 32, where there are fewer
//      accumulators and the three fragments of each tile live longer (docs/tuning-log.md).
//  10. A membership is written only where it changed: once most points have settled, the pass
//      writes a few of the N memberships instead of all (16 MiB a pass at N = 4 Mi): less time
//      at K = 8 and K = 32 (docs/tuning-log.md).
//  11. The run's loop on the device. With max_loop >= 0 the last block also applies the classic
//      code's test, changed / n > threshold in float32 and fewer than max_loop further iterations:
//      it counts the iteration in loop_state[0], or ends the run in loop_state[1], and mirrors
//      both to changed_out[1] and [2] in the host's memory. A launch that finds the run ended
//      returns at once, so the host enqueues iterations ahead and looks once per batch
//      (gpu.Runner.run_on_device): no sync, no host test between two iterations. The same
//      iterations in the same order: the same bits as the host's loop. With max_loop < 0 (timed
//      iterations) nothing is tested and every launch iterates.
//  12. The sums carried from pass to pass: a pass adds only the objects that moved, x to the new
//      cluster's sums and -x to the old one's (an object's first cluster: from -1, only the add).
//      The sums are integers, so what they hold is exactly the sums over each cluster's objects
//      that adding every object from zero makes: the same bits. Once few objects move, a pass
//      skips nearly all of the sums' atomics and conversions, which were the largest share of its
//      instructions after the mma. An object that moved costs two adds, so where more than
//      n / REBUILD_ABOVE moved, the last block zeroes the sums and sizes and the next pass adds
//      every object (done[1] tells it), as the first pass does. A pass's own moves are not known
//      before it runs, so the pass before stands in for them; moves fall fast from pass to pass,
//      so only a pass after one where many moved (on blobs, the second, after the first's n)
//      rebuilds; below a quarter, the next pass cost less carried (docs/tuning-log.md).
//      CARRY_SUMS 0 rebuilds every pass.
// Compile-time constants: K (<= 64: 2 x ceil(K / 8) x 4 scores per lane in registers), D (<= 32:
// D floats per lane in registers), THREADS (a multiple of 32), COPIES (1 or 8), MIN_WARPS (warps
// per SM the compiler must leave registers for), CARRY_SUMS and REBUILD_ABOVE (item 12; 1 and 4,
// and REBUILD_ABOVE 0 never rebuilds). Tensor-core TF32 needs compute
// capability 8.0; older GPUs are refused by the host (gpu.refusal) and this kernel traps there.
// Inputs: objects transposed, objects[d * n + i]; table = [K x D] -2 x centre, then [K] |centre|^2
// (the last block writes the next one over it); split = SPLIT (0: fixed_add); centres, the
// change count's destination (host memory, 3 ints with the device loop) and 1 / SCALE for the
// last block; done, two words: [0] zero before the launch (the last block zeroes it again, and the
// count), [1] nonzero where the sums and sizes are zero, so the pass adds every object (1 before
// the first pass; the last block sets it, item 12); loop_state (2 ints, zero before a run), threshold and max_loop (item 11).
// Dynamic shared memory, in bytes: the split centre fragments KT x KS x 32 x 16, their norms
// KT x 8 x 4, the block's sums' low and high words 2 x COPIES x CS x 4. Launch: grid
// (gpu.tensor_split: a few blocks per SM, persistent, or more where N needs them), block THREADS.

#ifndef K
#define K 32
#endif
#ifndef D
#define D 32
#endif
#include "fixed_point_add.cuh"
#include "fixed_point_update.cuh"
#ifndef THREADS
#define THREADS 128
#endif

#define WARPS (THREADS / 32)
#define KT ((K + 7) / 8)  // column tiles of 8 centres
#define KS ((D + 7) / 8)  // steps of 8 coordinates
#ifndef COPIES
#define COPIES 1
#endif
#ifndef MIN_WARPS
#define MIN_WARPS WARPS
#endif
#ifndef CARRY_SUMS
#define CARRY_SUMS 1
#endif
#ifndef REBUILD_ABOVE
#define REBUILD_ABOVE 4  // the next pass adds every object where more than n / REBUILD_ABOVE moved (item 12)
#endif
// (K > 32) the three products of a step go term by term over all 2 x KT accumulators (item 9)
#define TERM_ORDER (KT > 4)
#define SP (COPIES == 1 ? D + 1 : 32)                 // words between two clusters' sums
#define CS (COPIES == 1 ? K * SP : K * SP + 4)        // words between two copies of the sums

static_assert(THREADS % 32 == 0, "whole warps");
static_assert(K <= 64 && D <= 32, "K <= 64 and D <= 32 (scores and coordinates in registers)");
static_assert(COPIES == 1 || COPIES == 8, "one copy of the sums, or one per quad");

#if __CUDA_ARCH__ >= 800
#define TENSOR_TF32 1
#else
#define TENSOR_TF32 0
#endif

// x rounded to TF32 (10 mantissa bits, to nearest), in a 32-bit register as mma takes it.
__device__ __forceinline__ unsigned tf32(float x)
{
    unsigned r = __float_as_uint(x);
#if __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#elif TENSOR_TF32
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#endif
    return r;
}

// c += a b for one 16 x 8 tile: a the 16 x 8 TF32 row fragment, (b0, b1) the 8 x 8 column fragment.
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
#if TENSOR_TF32
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}


// (score, index) before (best, best_index): a lower score, or the same score and a lower index.
// A total order on the lanes' candidates (their scores are never NaN: a NaN never wins the
// strict < that picks them), so any order of the quad's comparisons gives the same nearest.
__device__ __forceinline__ bool nearer(float score, int index, float best, int best_index)
{
    return score < best || (score == best && index < best_index);
}

// A step of 32 objects: whole (no bound checks) or the data's last; read as float4 or not; its
// sums by split_add or by fixed_add. One instantiation per case, chosen once per launch.
template <bool WHOLE, bool VECTOR, bool SPLIT>
struct Step {
    static constexpr bool whole = WHOLE, vector = VECTOR, split = SPLIT;
};

extern "C" __global__ void __launch_bounds__(THREADS, (MIN_WARPS + WARPS - 1) / WARPS) kmeans_tensor(
    const float* __restrict__ objects, int* __restrict__ membership, unsigned long long* __restrict__ sums,
    int* __restrict__ sizes, int* __restrict__ changed, float* table, int n, float scale, int split,
    float* __restrict__ centres, int* __restrict__ changed_out, double inverse_scale, unsigned* __restrict__ done,
    int* loop_state, float threshold, int max_loop)
{
    // The run has ended (item 11): this launch does nothing. Every thread reads the same word.
    if (max_loop >= 0 && *reinterpret_cast<volatile int*>(loop_state + 1)) return;
    // Every object adds to the sums, or only those that moved (item 12). Read before this block
    // counts itself done, so the last block's write below is for the next launch.
    const bool every = !CARRY_SUMS || reinterpret_cast<volatile unsigned*>(done)[1] != 0;

    extern __shared__ __align__(16) unsigned char shared[];
    uint4* s_b = reinterpret_cast<uint4*>(shared);                   // [KT][KS][32 lanes]: split fragments
    float* s_norm = reinterpret_cast<float*>(s_b + KT * KS * 32);    // [KT x 8]: |centre|^2, +inf past K
    unsigned* s_low = reinterpret_cast<unsigned*>(s_norm + KT * 8);  // [COPIES][CS]: the sums' low words
    int* s_high = reinterpret_cast<int*>(s_low + COPIES * CS);       // [COPIES][CS]: and their high words
    __shared__ int s_sizes[K];
    __shared__ int s_changed;

    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int g = lane / 4, t = lane % 4;
    unsigned* my_low = s_low + g % COPIES * CS;  // this quad's copy of the sums
    int* my_high = s_high + g % COPIES * CS;
    // Lane l's fragment of column tile n, step s: b0 = B[8 s + l % 4][8 n + l / 4], b1 four rows
    // down, B[j][c] = -2 x centre c's coordinate j (zero past D and past K).
    for (int i = threadIdx.x; i < KT * KS * 32; i += THREADS) {
        int l = i % 32, s = i / 32 % KS, nt = i / 32 / KS;
        int c = 8 * nt + l / 4, j0 = 8 * s + l % 4, j1 = j0 + 4;
        float v0 = c < K && j0 < D ? table[c * D + j0] : 0.0f;
        float v1 = c < K && j1 < D ? table[c * D + j1] : 0.0f;
        unsigned h0 = tf32(v0), h1 = tf32(v1);
        s_b[i] = make_uint4(h0, h1, tf32(v0 - __uint_as_float(h0)), tf32(v1 - __uint_as_float(h1)));
    }
    for (int c = threadIdx.x; c < KT * 8; c += THREADS)
        s_norm[c] = c < K ? table[K * D + c] : __int_as_float(0x7f800000);
    for (int i = threadIdx.x; i < COPIES * CS; i += THREADS) s_low[i] = s_high[i] = 0;
    for (int c = threadIdx.x; c < K; c += THREADS) s_sizes[c] = 0;
    if (threadIdx.x == 0) s_changed = 0;
    __syncthreads();

    int moved = 0;
    const int stride = gridDim.x * WARPS * 32;

    // x[s][h][o]: coordinate 8 s + t + 4 h of object first + o (zero past D and past n).
    auto load = [&](float (&x)[KS][2][4], int first, auto step) {
        constexpr bool WHOLE = decltype(step)::whole, VECTOR = decltype(step)::vector;
#pragma unroll
        for (int s = 0; s < KS; s++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int j = 8 * s + t + 4 * h;
                const float* row = objects + (size_t)j * n + first;
                if (j >= D) {
#pragma unroll
                    for (int o = 0; o < 4; o++) x[s][h][o] = 0.0f;
                } else if (VECTOR && (WHOLE || first + 3 < n)) {
                    float4 v = __ldcs(reinterpret_cast<const float4*>(row));
                    x[s][h][0] = v.x;
                    x[s][h][1] = v.y;
                    x[s][h][2] = v.z;
                    x[s][h][3] = v.w;
                } else {
#pragma unroll
                    for (int o = 0; o < 4; o++) x[s][h][o] = WHOLE || first + o < n ? __ldcs(row + o) : 0.0f;
                }
            }
    };

    // A step's scores, each object's nearest centre (nearest[o]), the one before (olds[o]) and its membership.
    auto assign = [&](const float (&x)[KS][2][4], int base, int (&nearest)[4], int (&olds)[4], auto step) {
        constexpr bool WHOLE = decltype(step)::whole;
        int first = base + 4 * g;  // this lane's objects: first .. first + 3
        int old = WHOLE || first + t < n ? membership[first + t] : -1;

        // Scores: tile m's rows g, g + 8 are objects 2 m, 2 m + 1; acc[m][nt] the C fragment
        // (rows g, g + 8; columns 8 nt + 2 t, + 1), starting from the centres' norms.
        float acc[2][KT][4];
#pragma unroll
        for (int nt = 0; nt < KT; nt++) {
            float n0 = s_norm[8 * nt + 2 * t], n1 = s_norm[8 * nt + 2 * t + 1];
#pragma unroll
            for (int m = 0; m < 2; m++) {
                acc[m][nt][0] = acc[m][nt][2] = n0;
                acc[m][nt][1] = acc[m][nt][3] = n1;
            }
        }
#pragma unroll
        for (int s = 0; s < KS; s++) {
            unsigned hi[2][4], lo[2][4];
#pragma unroll
            for (int m = 0; m < 2; m++) {
                // a0 (row g, col t), a1 (row g + 8, col t), a2 (row g, col t + 4), a3 (row g + 8, col t + 4)
                float a[4] = {x[s][0][2 * m], x[s][0][2 * m + 1], x[s][1][2 * m], x[s][1][2 * m + 1]};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    hi[m][e] = tf32(a[e]);
                    lo[m][e] = tf32(a[e] - __uint_as_float(hi[m][e]));
                }
            }
#if TERM_ORDER
            uint4 b[KT];
#pragma unroll
            for (int nt = 0; nt < KT; nt++) b[nt] = s_b[(nt * KS + s) * 32 + lane];
#pragma unroll
            for (int nt = 0; nt < KT; nt++)
#pragma unroll
                for (int m = 0; m < 2; m++) mma(acc[m][nt], lo[m], b[nt].x, b[nt].y);
#pragma unroll
            for (int nt = 0; nt < KT; nt++)
#pragma unroll
                for (int m = 0; m < 2; m++) mma(acc[m][nt], hi[m], b[nt].z, b[nt].w);
#pragma unroll
            for (int nt = 0; nt < KT; nt++)
#pragma unroll
                for (int m = 0; m < 2; m++) mma(acc[m][nt], hi[m], b[nt].x, b[nt].y);
#else
#pragma unroll
            for (int nt = 0; nt < KT; nt++) {
                uint4 b = s_b[(nt * KS + s) * 32 + lane];
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    mma(acc[m][nt], lo[m], b.x, b.y);
                    mma(acc[m][nt], hi[m], b.z, b.w);
                    mma(acc[m][nt], hi[m], b.x, b.y);
                }
            }
#endif
        }

        // Nearest of object o (tile o / 2, row half o % 2): first this lane's centres in index
        // order, then the quad's four lanes, the lower index winning a tie (item 3).
        float best[4];
        int index[4];
#pragma unroll
        for (int o = 0; o < 4; o++) {
            best[o] = __int_as_float(0x7f800000);
            index[o] = 0;
#pragma unroll
            for (int nt = 0; nt < KT; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float score = acc[o / 2][nt][2 * (o % 2) + e];
                    if (score < best[o]) {
                        best[o] = score;
                        index[o] = 8 * nt + 2 * t + e;
                    }
                }
        }
        // Across the quad, halving the objects each round: with lane t ^ 2, lane t keeps objects
        // (t & 2) and (t & 2) + 1 and hands over the other two; with lane t ^ 1 it keeps object t.
        // Lane t then holds object t's nearest, the one it writes.
        bool upper = t & 2, odd = t & 1;
        float kept[2];
        int kept_index[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            kept[i] = upper ? best[2 + i] : best[i];
            kept_index[i] = upper ? index[2 + i] : index[i];
            float other = __shfl_xor_sync(0xffffffffu, upper ? best[i] : best[2 + i], 2);
            int other_index = __shfl_xor_sync(0xffffffffu, upper ? index[i] : index[2 + i], 2);
            if (nearer(other, other_index, kept[i], kept_index[i])) {
                kept[i] = other;
                kept_index[i] = other_index;
            }
        }
        float other = __shfl_xor_sync(0xffffffffu, odd ? kept[0] : kept[1], 1);
        int other_index = __shfl_xor_sync(0xffffffffu, odd ? kept_index[0] : kept_index[1], 1);
        int mine = nearer(other, other_index, odd ? kept[1] : kept[0], odd ? kept_index[1] : kept_index[0])
                       ? other_index
                       : (odd ? kept_index[1] : kept_index[0]);
        // Every lane of the quad adds all four objects' coordinates: each object's nearest from its lane.
#pragma unroll
        for (int o = 0; o < 4; o++) {
            nearest[o] = __shfl_sync(0xffffffffu, mine, o, 4);
            olds[o] = __shfl_sync(0xffffffffu, old, o, 4);
        }
        // Lane t of the quad writes object first + t: the warp's 32 results, coalesced.
        if (WHOLE || first + t < n) {
            moved += old != mine;
            if (old != mine) membership[first + t] = mine;  // item 10
            if (every) {
                atomicAdd(&s_sizes[mine], 1);
            } else if (old != mine) {  // item 12
                atomicAdd(&s_sizes[mine], 1);
                if (old >= 0) atomicAdd(&s_sizes[old], -1);
            }
        }
    };

    // v to the block's sum at word `at` of this quad's copy.
    auto add = [&](int at, long long v, auto step) {
        if (decltype(step)::split) split_add(my_low + at, my_high + at, v, split);
        else fixed_add(my_low + at, my_high + at, v);
    };

    // A step's sums: this lane's coordinates of its four objects, in fixed point, to the block's
    // sums: every object's to its nearest centre's, or (item 12) only a moved object's, also
    // taken from its old centre's.
    auto add_sums = [&](const float (&x)[KS][2][4], int base, const int (&nearest)[4], const int (&olds)[4],
                        auto step) {
        constexpr bool WHOLE = decltype(step)::whole;
        int first = base + 4 * g;
        if (every) {
#pragma unroll
            for (int o = 0; o < 4; o++)
                if (WHOLE || first + o < n)
#pragma unroll
                    for (int s = 0; s < KS; s++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            int j = 8 * s + t + 4 * h;
                            if (j < D) add(nearest[o] * SP + j, __float2ll_rn(x[s][h][o] * scale), step);
                        }
        } else {
#pragma unroll
            for (int o = 0; o < 4; o++)
                if ((WHOLE || first + o < n) && olds[o] != nearest[o])
#pragma unroll
                    for (int s = 0; s < KS; s++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            int j = 8 * s + t + 4 * h;
                            if (j >= D) continue;
                            long long v = __float2ll_rn(x[s][h][o] * scale);
                            add(nearest[o] * SP + j, v, step);
                            if (olds[o] >= 0) add(olds[o] * SP + j, -v, step);
                        }
        }
    };

    // One step: the scores, each object's nearest centre, its membership, its coordinates to the sums.
    auto run = [&](int base, auto step) {
        float x[KS][2][4];
        load(x, base + 4 * g, step);
        int nearest[4], olds[4];
        assign(x, base, nearest, olds, step);
        add_sums(x, base, nearest, olds, step);
    };

    int base = (blockIdx.x * WARPS + warp) * 32;
    auto whole_steps = [&](auto step) {
        for (; base + 32 <= n; base += stride) run(base, step);
    };
    const bool vector = n % 4 == 0;  // every row's float4 at first is 16-byte aligned
    if (split) {
        if (vector) whole_steps(Step<true, true, true>{});
        else whole_steps(Step<true, false, true>{});
        if (base < n) run(base, Step<false, false, true>{});   // the data's last objects, fewer than 32
    } else {
        if (vector) whole_steps(Step<true, true, false>{});
        else whole_steps(Step<true, false, false>{});
        if (base < n) run(base, Step<false, false, false>{});
    }
    for (int offset = 16; offset > 0; offset /= 2) moved += __shfl_down_sync(0xffffffffu, moved, offset);
    if (lane == 0 && moved) atomicAdd(&s_changed, moved);
    __syncthreads();
    for (int i = threadIdx.x; i < K * D; i += THREADS) {
        int c = i / D, j = i % D;
        long long v = 0;
#pragma unroll
        for (int q = 0; q < COPIES; q++)
            v += fixed_value(s_low[q * CS + c * SP + j], s_high[q * CS + c * SP + j], split);
        if (v != 0) atomicAdd(&sums[i], static_cast<unsigned long long>(v));  // two's complement: a signed add
    }
    for (int c = threadIdx.x; c < K; c += THREADS)
        if (s_sizes[c]) atomicAdd(&sizes[c], s_sizes[c]);
    if (threadIdx.x == 0 && s_changed) atomicAdd(changed, s_changed);

    // The last block to finish turns the sums into the next centres and table (item 8). Each
    // block's atomics are visible before it counts itself done; the last one reads them from L2.
    __shared__ bool s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    // The next pass adds every object where this one moved many (item 12): then the sums start from zero.
    const bool rebuild =
        !CARRY_SUMS || (REBUILD_ABOVE > 0 && static_cast<long long>(__ldcg(changed)) * REBUILD_ABOVE > n);
    int count = fixed_update(centres, reinterpret_cast<long long*>(sums), sizes, table, changed, changed_out,
                             inverse_scale, threadIdx.x, THREADS, rebuild);
    if (threadIdx.x == 0) done[1] = rebuild;
    if (threadIdx.x != 0) return;
    done[0] = 0;  // ready for the next launch
    if (max_loop < 0) return;
    // The classic loop's test (item 11), in its float32 arithmetic: another iteration, or the end.
    int loop = loop_state[0];
    bool more = static_cast<float>(count) / static_cast<float>(n) > threshold && loop < max_loop;
    if (more) loop_state[0] = loop + 1;
    else loop_state[1] = 1;
    changed_out[1] = more ? loop + 1 : loop;
    changed_out[2] = more ? 0 : 1;
}
