// The chapter's final step: mm_register_blocked's register footprint, fed by asynchronous copies
// through a ring of shared buffers, with the block's threads grouped by warp tiles.
// A block of THREADS threads computes a BM x BN patch of C. Its warps tile the patch, each warp a
// WM x WN sub-tile; the 32 lanes of a warp form an LM x LN grid (LM = WM / TM, LN = WN / TN,
// LM * LN = 32), each lane a TM x TN footprint in registers, split into 4 x 4 sub-patches placed
// 4 LM rows and 4 LN columns apart, so that every shared-memory read is one float4.
// Changed from mm_register_blocked:
//   1. Warp tiles (-DWM -DWN): the warp, not the block, decides which rows of A and columns of B
//      its lanes read, so a tile shape no longer fixes the lanes' layout: 4 x 8 or 8 x 4 lanes,
//      and every float4 read of shared memory is a broadcast or 8 distinct contiguous float4s:
//      no bank conflict.
//   2. cp.async (sm_80+): tiles go from global to shared memory without passing through
//      registers, STAGES deep (-DSTAGES=2..4): while the block multiplies tile t, tiles t+1 ..
//      t+STAGES-1 are in flight. No staging registers, so the footprint keeps them (mm_03 held a
//      tile in registers between its load and its store).
//   3. One __syncthreads per tile, at its last k step, and each step reads the next step's
//      operands from shared memory while it multiplies (two sets in registers): the last step
//      reads tile t+1's first, so after the barrier a warp has a whole step of multiply-adds to
//      issue while its next reads are in flight. With the barrier at the top of the tile instead,
//      every warp waited out a shared-memory read after each barrier: two warps per scheduler
//      left it idle (an H100 at n = 4096: 0.78 instructions issued per scheduler-cycle against
//      cuBLAS's 0.90, and 0.91-0.92 of cuBLAS's time; 0.95-0.97 with this order).
//   4. A is stored transposed (As[k][m], rows padded by 4 floats): each element is its own 4-byte
//      copy, placed so that a warp's 32 copies hit 32 different banks when BK = 8, and the TM
//      values of one k are contiguous. B is copied 16 bytes at a time (float4) where n % 4 == 0,
//      4 bytes at a time otherwise (its rows are then not 16-byte aligned).
//   5. Edges: a copy past the matrix is zero-filled by the copy itself (cp.async with a source
//      size of 0), so the loop has no edge case; stores are guarded, float4 where aligned. The
//      aligned case pays one uniform branch per tile for the choice of copy width.
//   6. Dynamic shared memory: STAGES x BK x (BM + 4 + BN) floats may exceed the 48 KiB of a
//      static array (the launch opts in, up to the GPU's limit; over it, it is refused).
//   7. (-DSPLIT_WAVE=G, optional) Stream-K for the last waves. With one tile per block, n = 1000
//      makes 32 tiles of 128 x 256 for 132 SMs, and n = 1600 91: one partial wave, most SMs idle
//      (0.61 and 0.75 of cuBLAS on an H100). Here the grid is one dimension of work items: first
//      the tiles of the full waves, whole, one per block (data-parallel); then the last tiles (all
//      of them where there are fewer than a wave, else the partial wave and one full wave before
//      it, so that every block gets at least one tile's work) as one run of k steps, cut into G
//      equal ranges, one per block (at least SK_MIN k tiles each). A range may start or end
//      inside a tile: such a segment stores its partial sums in a slot of its own (split_partials)
//      and counts itself in the tile's counter; the segment that arrives last sums every slot of
//      the tile in k order (so the result has the same bits whichever arrives last) and writes C.
//      No block waits for another, so no order of starting blocks can deadlock. Blocks take
//      their item from a counter (not blockIdx), so the whole tiles start first. The counter and
//      the per-tile counts reset themselves for the next launch.
//   8. (-DINWARD_EDGES=1, optional) Every tile copies without bound checks. Where n % 4 == 0 and
//      n >= BM, BN, a tile that would cross the matrix's edge computes the BM x BN block that ends
//      at the edge instead, overlapping its neighbour, and writes only its own cells; so every
//      tile lies inside the matrix, and each copy is one address product from the tile's bases,
//      with no predicate or select (only a partial last k tile takes the checked copies of item 5).
//      At the small-n patch (64x128x16) the checked copies were about 230 instructions a tile and
//      thread beside its 1,024 FFMA; unchecked, about 52. In a one-wave launch (n = 1000: 128
//      tiles of 64 x 128 for 264 places), the edge tiles no longer run slower than the rest.
//      On an H100 with stream-K it took n = 1000 from 0.895 to 0.907 of cuBLAS in one run, and
//      1024 / 1600 from 0.99 / 1.07 to 1.01 / 1.10. The larger finalists keep the checked copies:
//      the branch costs their registers (230 -> 242 at 128x256x32), and at n = 4095, where it is
//      never taken, 128x256x16 fell from 0.923 to 0.882 (docs/tuning-log.md).
// Without cp.async (below sm_80: the rtx2080 profile's Turing) the same copies are plain loads
// and stores, in the same ring: correct, with less latency hidden.
// Tuning: -DBM -DBN -DBK -DWM -DWN -DTM -DTN -DSTAGES (-DMIN_BLOCKS: blocks per SM the compiler
// must leave registers for; -DINWARD_EDGES); the chapter's search picks them for the present GPU.
// Launch: grid (ceil(n / BN), ceil(n / BM)), block (THREADS), STAGES * BK * (BM + 4 + BN) * 4
// bytes of dynamic shared memory; with SPLIT_WAVE, grid (whole tiles + stream-K blocks) (matmul.split_plan).

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 64
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef INWARD_EDGES
#define INWARD_EDGES 0     // item 8
#endif

#ifdef SPLIT_WAVE
#define SK_MIN 4           // k tiles a stream-K block takes at least (matmul.SK_MIN)
#define SPLIT_FLAGS 4096   // stream-K tiles a launch may have (at most 2 G)
__device__ unsigned split_next;                 // the next work item to hand out
__device__ unsigned split_arrived[SPLIT_FLAGS]; // per stream-K tile: segments stored so far (0 between launches)
// Two slots of partial sums per stream-K block: its first tile's and its last tile's.
__device__ float4 split_partials[2 * SPLIT_WAVE * (BM * BN / 4)];
#if 2 * SPLIT_WAVE > SPLIT_FLAGS
#error "SPLIT_WAVE larger than the counts kept"
#endif
#endif

#define LM (WM / TM)                     // lanes along m in a warp
#define LN (WN / TN)                     // lanes along n
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * WARPS_N * 32)
#define PAD 4
#define AS_LD (BM + PAD)                 // floats per k-row of the transposed A tile
#define AS_STAGE (BK * AS_LD)
#define BS_STAGE (BK * BN)

#if BM % WM || BN % WN || WM % TM || WN % TN || LM * LN != 32
#error "the block tile must split into warp tiles, each into 32 lane footprints"
#endif
#if TM % 4 || TN % 4 || BK % 4 || STAGES < 2
#error "TM, TN and BK must be multiples of 4 (float4 reads), and STAGES at least 2"
#endif
#if THREADS % BK || THREADS % BN || (BM * BK) % THREADS || (BK * BN / 4) % THREADS
#error "every thread must copy the same elements of each tile: whole rows of them, THREADS at a time"
#endif
#define A_STEP (THREADS / BK)            // rows of the A tile one pass of the threads copies
#define A_COPIES (BM * BK / THREADS)     // 4-byte copies of A per thread per tile
#define B_VEC_COPIES (BK * BN / 4 / THREADS)
#define B_COPIES (BK * BN / THREADS)

// One 4- or 16-byte copy from global to shared memory; `bytes` of it read from `src` and the
// rest zero-filled (0: all zeros, `src` is not read).
__device__ __forceinline__ void copy4(float* dst, const float* src, bool valid)
{
#if __CUDA_ARCH__ >= 800
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 4 : 0));
#else
    *dst = valid ? *src : 0.0f;
#endif
}

__device__ __forceinline__ void copy16(float* dst, const float* src, bool valid)
{
#if __CUDA_ARCH__ >= 800
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
#else
    *reinterpret_cast<float4*>(dst) = valid ? *reinterpret_cast<const float4*>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
#endif
}

__device__ __forceinline__ void copies_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int PENDING>
__device__ __forceinline__ void copies_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) mm_warptile_async(const float* __restrict__ A,
                                                                                    const float* __restrict__ B,
                                                                                    float* __restrict__ C, int n)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                            // [STAGES][BK][AS_LD]
    float* Bs = smem + STAGES * AS_STAGE;        // [STAGES][BK][BN]

    const int tid = threadIdx.x;
    const int ktiles = (n + BK - 1) / BK;
#ifdef SPLIT_WAVE
    const int tiles_n = (n + BN - 1) / BN;
    // Which work item: a whole tile, or stream-K block sk's range of the last tiles' k steps
    // (matmul.split_plan computes the same plan). Thread 0 plans; the plan waits in shared memory
    // through the k loop, where registers are scarce.
    __shared__ unsigned s_item, s_whole, s_blocks, s_steps, s_it, s_end;
    __shared__ int s_last;
    if (tid == 0) {
        unsigned id = atomicAdd(&split_next, 1u);
        if (id == gridDim.x - 1) split_next = 0;   // every block has its item: ready for the next launch
        const int tiles = tiles_n * ((n + BM - 1) / BM), rest = tiles % SPLIT_WAVE;
        int shared_tiles = rest == 0 ? 0 : tiles < SPLIT_WAVE ? tiles : rest + SPLIT_WAVE;
        int sk_blocks = min(SPLIT_WAVE, shared_tiles * ktiles / SK_MIN);
        if (shared_tiles >= sk_blocks * ((shared_tiles + SPLIT_WAVE - 1) / SPLIT_WAVE))   // no gain: none shared
            shared_tiles = sk_blocks = 0;
        const unsigned whole = tiles - shared_tiles;
        // Positions in k tiles: a whole tile's own, or the stream-K region's (its last
        // shared_tiles tiles); 32 bits: the products below stay under 2^32 for n < 46341 and
        // SPLIT_WAVE < 400. This block's range is [s_it, s_end).
        const unsigned steps = shared_tiles * ktiles;
        s_item = id, s_whole = whole, s_blocks = sk_blocks, s_steps = steps;
        s_it = id < whole ? 0u : id - whole < sk_blocks ? (id - whole) * steps / sk_blocks : 0u;
        s_end = id < whole ? ktiles : id - whole < sk_blocks ? (id - whole + 1) * steps / sk_blocks : 0u;
    }
    __syncthreads();
    while (s_it < s_end) {   // a segment: one tile's k tiles [t_begin, t_end)
        const int st = s_it / ktiles, tile = s_item < s_whole ? s_item : s_whole + st;
        const int t_begin = s_it - st * ktiles, t_end = min(ktiles, static_cast<int>(s_end - st * ktiles));
        const int m_lo = tile / tiles_n * BM, n_lo = tile % tiles_n * BN;   // the first cell it writes
#else
    {
        const int m_lo = blockIdx.y * BM, n_lo = blockIdx.x * BN;
        const int t_begin = 0, t_end = ktiles;
#endif
#if INWARD_EDGES
        // Item 8: the block computed, (m0, n0), ends at the matrix's edge; every copy is inside.
        const bool inward = (n & 3) == 0 && n >= BM && n >= BN;
        const int m0 = inward ? min(m_lo, n - BM) : m_lo, n0 = inward ? min(n_lo, n - BN) : n_lo;
#else
        const int m0 = m_lo, n0 = n_lo;
#endif
        const int warp = tid / 32, lane = tid % 32;
        const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;   // the warp's tile in the block's patch
        const int ly = lane / LN, lx = lane % LN;                             // the lane's place in the warp
        const bool vec = (n & 3) == 0;

        // Each thread's copies, fixed but for the tile: A by 4 bytes, consecutive lanes along k (a
        // warp reads whole 32-byte sectors and writes 32 banks of the transposed tile); B by 16
        // bytes (or 4 where n % 4 != 0) along n. Addresses advance by one tile per tile.
        const int a_r = tid / BK, a_c = tid % BK;
        const float* a_src = A + (size_t)(m0 + a_r) * n + a_c;
        float* a_dst = As + a_c * AS_LD + a_r;
        const int b_per_row = vec ? BN / 4 : BN;
        const int b_r = tid / b_per_row, b_c = (vec ? 4 : 1) * (tid % b_per_row), b_step = THREADS / b_per_row;
        const float* b_src = B + (size_t)b_r * n + n0 + b_c;
        float* b_dst = Bs + b_r * BN + b_c;
        const bool b_col_ok = n0 + b_c < n;   // n % 4 == 0 on the float4 path: a float4 is all in or all out

#if INWARD_EDGES
        const size_t a_rows = (size_t)A_STEP * n, b_rows = (size_t)b_step * n;   // one step of each copy
#endif
        auto load_tile = [&](int stage, int t) {
            int k0 = t * BK;
#if INWARD_EDGES
            if (inward && k0 + BK <= n) {   // uniform: every tile but for a partial last k tile
                const float* pa = a_src + k0;
                const float* pb = b_src + (size_t)k0 * n;
#pragma unroll
                for (int l = 0; l < A_COPIES; l++) copy4(a_dst + stage * AS_STAGE + l * A_STEP, pa + l * a_rows, true);
#pragma unroll
                for (int l = 0; l < B_VEC_COPIES; l++)
                    copy16(b_dst + stage * BS_STAGE + l * b_step * BN, pb + l * b_rows, true);
                return;
            }
#endif
            const float* pa = a_src + k0;
            bool a_col_ok = k0 + a_c < n;
#pragma unroll
            for (int l = 0; l < A_COPIES; l++) {
                bool ok = a_col_ok && m0 + a_r + l * A_STEP < n;
                copy4(a_dst + stage * AS_STAGE + l * A_STEP, ok ? pa + l * A_STEP * n : A, ok);
            }
            const float* pb = b_src + (size_t)k0 * n;
            if (vec) {
#pragma unroll
                for (int l = 0; l < B_VEC_COPIES; l++) {
                    bool ok = b_col_ok && k0 + b_r + l * b_step < n;
                    copy16(b_dst + stage * BS_STAGE + l * b_step * BN, ok ? pb + l * b_step * n : B, ok);
                }
            } else {
#pragma unroll
                for (int l = 0; l < B_COPIES; l++) {
                    bool ok = b_col_ok && k0 + b_r + l * b_step < n;
                    copy4(b_dst + stage * BS_STAGE + l * b_step * BN, ok ? pb + l * b_step * n : B, ok);
                }
            }
        };

        float acc[TM][TN] = {};
        const int count = t_end - t_begin;   // k tiles of this segment: all of them but in stream-K
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {   // fill the ring but one stage
            if (s < count) load_tile(s, t_begin + s);
            copies_commit();
        }
        copies_wait<STAGES - 2>();   // tile 0 has landed
        __syncthreads();

        float a[2][TM], b[2][TN];   // step k's operands, and step k + 1's being read
        const float* as0 = As + wm0 + 4 * ly;
        const float* bs0 = Bs + wn0 + 4 * lx;
        auto load_operands = [&](int buf, int stage, int k) {
#pragma unroll
            for (int g = 0; g < TM / 4; g++)
                *reinterpret_cast<float4*>(&a[buf][4 * g]) = *reinterpret_cast<const float4*>(&as0[stage * AS_STAGE + k * AS_LD + g * 4 * LM]);
#pragma unroll
            for (int g = 0; g < TN / 4; g++)
                *reinterpret_cast<float4*>(&b[buf][4 * g]) = *reinterpret_cast<const float4*>(&bs0[stage * BS_STAGE + k * BN + g * 4 * LN]);
        };
        load_operands(0, 0, 0);
        int read_stage = 0, write_stage = STAGES - 1;
        for (int u = 0; u < count; u++) {
#pragma unroll
            for (int k = 0; k < BK; k++) {
                if (k == BK - 1) {   // tile u + 1 has landed, and every warp has read the last of tile u (refilled next)
                    copies_wait<STAGES - 2>();
                    __syncthreads();
                    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
                }
                load_operands((k + 1) % 2, read_stage, (k + 1) % BK);   // the next step's, maybe the next tile's
                if (k == 0) {   // refill the stage tile u - 1 used
                    int next = u + STAGES - 1;
                    if (next < count) load_tile(write_stage, t_begin + next);
                    copies_commit();
                    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
                }
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        acc[i][j] = fmaf(a[k % 2][i], b[k % 2][j], acc[i][j]);
            }
        }

#ifdef SPLIT_WAVE
        copies_wait<0>();   // no copy of this segment still in flight into the ring the next one fills
        __syncthreads();
        if (s_item >= s_whole) {   // a stream-K tile: shared with other blocks unless this one holds all of it
            // The blocks whose ranges meet this tile's k steps [st K, (st + 1) K), K = ktiles: from
            // the last whose range starts at or before st K to the last that starts before its end.
            const unsigned steps = s_steps, sk_blocks = s_blocks, st = s_it / ktiles;
            const int sk = s_item - s_whole;
            const int b_first = ((st * ktiles + 1u) * sk_blocks - 1) / steps;
            const int b_last = ((st + 1u) * ktiles * sk_blocks - 1) / steps;
            if (b_first != b_last) {
                // Store this segment's sums in its slot (0 for the block's first tile, 1 for its last),
                // one float4 per thread per step, consecutive across the block's threads.
                float4* mine = split_partials + (size_t)(2 * sk + (st == sk * steps / sk_blocks / ktiles ? 0 : 1)) * (BM * BN / 4) + tid;
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int g = 0; g < TN / 4; g++)
                        __stcg(mine + (i * (TN / 4) + g) * THREADS,
                               make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]));
                __threadfence();   // release: the sums, then the count
                __syncthreads();
                if (tid == 0) {
                    const unsigned arrived = atomicAdd(&split_arrived[st], 1u) + 1;
                    s_last = arrived == static_cast<unsigned>(b_last - b_first + 1);
                    if (s_last) split_arrived[st] = 0;   // ready for the next launch
                }
                __syncthreads();
                if (!s_last) goto next_segment;   // another segment of this tile still computes: it writes C
                __threadfence();   // acquire: the count, then every slot
                // The tile's sums in k order, block b_first's first: the same bits whoever sums them.
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int jj = 0; jj < TN; jj++) acc[i][jj] = 0.0f;
                for (int bb = b_first; bb <= b_last; bb++) {
                    const int slot = bb * steps / sk_blocks / ktiles == st ? 0 : 1;   // the tile is bb's first, or its last
                    const float4* part = split_partials + (size_t)(2 * bb + slot) * (BM * BN / 4) + tid;
#pragma unroll
                    for (int i = 0; i < TM; i++) {
#pragma unroll
                        for (int g = 0; g < TN / 4; g++) {
                            float4 p = __ldcg(part + (i * (TN / 4) + g) * THREADS);
                            acc[i][4 * g] += p.x;
                            acc[i][4 * g + 1] += p.y;
                            acc[i][4 * g + 2] += p.z;
                            acc[i][4 * g + 3] += p.w;
                        }
                        // half the rows' loads in flight at a time: all of them at once would
                        // need as many registers again as the sums, and spill. One row at a time
                        // measured the same (n = 1000 on an H100: 0.812 of cuBLAS, against 0.817
                        // with half the rows, within the run-to-run spread)
                        if (i % (TM / 2) == TM / 2 - 1) asm volatile("" ::: "memory");
                    }
                }
            }
        }
#endif
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int row = m0 + wm0 + (i / 4) * 4 * LM + 4 * ly + i % 4;
            if (row >= n) continue;
#if INWARD_EDGES
            if (row < m_lo) continue;   // the neighbour's row (item 8)
#endif
#pragma unroll
            for (int g = 0; g < TN / 4; g++) {
                int col = n0 + wn0 + g * 4 * LN + 4 * lx;
#if INWARD_EDGES
                if (col < n_lo) continue;   // the neighbour's columns: all four, n_lo being a multiple of 4
#endif
                float* out = &C[(size_t)row * n + col];
                if (vec && col + 3 < n) {
                    *reinterpret_cast<float4*>(out) =
                        make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
                } else {
#pragma unroll
                    for (int jj = 0; jj < 4; jj++)
                        if (col + jj < n) out[jj] = acc[i][4 * g + jj];
                }
            }
        }
#ifdef SPLIT_WAVE
    next_segment:   // every thread has read s_it for this segment; thread 0 moves it on
        __syncthreads();
        if (tid == 0) s_it = (s_it / ktiles + 1) * ktiles < s_end ? (s_it / ktiles + 1) * ktiles : s_end;
        __syncthreads();
#endif
    }
}
