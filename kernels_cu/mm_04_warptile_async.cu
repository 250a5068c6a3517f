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
//   7. (-DSPLIT_WAVE=G, optional) the last partial wave split along k. With one tile per block, n
//      = 3000 makes 288 tiles of 128 x 256: two full waves of 132 on an H100, then 24 tiles while
//      108 SMs idle (0.79 of cuBLAS). Here the grid is one dimension of work items: the first
//      T - R tiles (R = T mod G, G = blocks in a wave) whole, then each of the last R tiles as P =
//      min(G / R, MAX_SPLIT) segments of its k range, so the last wave is P times shorter. A
//      segment's partial sums go to C in segment order: segment 0 stores them, segment s waits
//      until segment s - 1 has stored, then adds its own (C = (P0 + P1) + P2 ...), so the result
//      has the same bits every run. Blocks take their item from a counter (not blockIdx), so an
//      item waited on was taken by a block already running: no deadlock whatever order the
//      GPU starts blocks in. The counter and the per-tile flags reset themselves for the next launch.
// Without cp.async (below sm_80: the rtx2080 profile's Turing) the same copies are plain loads
// and stores, in the same ring: correct, with less latency hidden.
// Tuning: -DBM -DBN -DBK -DWM -DWN -DTM -DTN -DSTAGES (-DMIN_BLOCKS: blocks per SM the compiler
// must leave registers for); the chapter's search picks them for the present GPU.
// Launch: grid (ceil(n / BN), ceil(n / BM)), block (THREADS), STAGES * BK * (BM + 4 + BN) * 4
// bytes of dynamic shared memory; with SPLIT_WAVE, grid (T - R + R x P) (matmul.split_plan).

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

#ifdef SPLIT_WAVE
#define MAX_SPLIT 8        // segments per split tile, at most: each adds one read-add-write of the tile to C
#define SPLIT_FLAGS 4096   // split tiles a launch may have (R < G)
__device__ unsigned split_next;                // the next work item to hand out
__device__ unsigned split_done[SPLIT_FLAGS];   // per split tile: segments stored so far (0 between launches)
#if SPLIT_WAVE > SPLIT_FLAGS
#error "SPLIT_WAVE larger than the flags kept"
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

    int tid = threadIdx.x;
    int warp = tid / 32, lane = tid % 32;
    int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;   // the warp's tile in the block's patch
    int ly = lane / LN, lx = lane % LN;                             // the lane's place in the warp
    const int ktiles = (n + BK - 1) / BK;
#ifdef SPLIT_WAVE
    // Which work item: a whole tile, or segment `seg` of `parts` of one of the last R tiles.
    __shared__ unsigned s_item;
    if (tid == 0) {
        unsigned id = atomicAdd(&split_next, 1u);
        if (id == gridDim.x - 1) split_next = 0;   // every block has its item: ready for the next launch
        s_item = id;
    }
    __syncthreads();
    const int item = s_item, tiles_n = (n + BN - 1) / BN, tiles = tiles_n * ((n + BM - 1) / BM);
    int split = tiles % SPLIT_WAVE, parts = split ? min(min(SPLIT_WAVE / split, MAX_SPLIT), ktiles) : 1;
    if (parts < 2) split = 0, parts = 1;
    const int whole = tiles - split;
    const int tile = item < whole ? item : whole + (item - whole) / parts;
    const int seg = item < whole ? 0 : (item - whole) % parts;
    if (tile >= tiles) return;
    int m0 = tile / tiles_n * BM, n0 = tile % tiles_n * BN;
    const int pieces = item < whole ? 1 : parts;   // a whole tile: all of k
    const int t_begin = seg * ktiles / pieces, t_end = (seg + 1) * ktiles / pieces;
#else
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int t_begin = 0, t_end = ktiles;
#endif
    bool vec = (n & 3) == 0;

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

    auto load_tile = [&](int stage, int t) {
        int k0 = t * BK;
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
    const int count = t_end - t_begin;   // k tiles of this block: all of them but in a split tile
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
    // A later segment adds to C only once the one before it has stored (acquire: the flag, then a fence).
    const bool add_to_c = seg > 0;
    if (add_to_c) {
        if (tid == 0) {
            while (atomicAdd(&split_done[tile - whole], 0u) != static_cast<unsigned>(seg)) __nanosleep(64);
            __threadfence();
        }
        __syncthreads();
    }
#else
    const bool add_to_c = false;
#endif
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = m0 + wm0 + (i / 4) * 4 * LM + 4 * ly + i % 4;
        if (row >= n) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; g++) {
            int col = n0 + wn0 + g * 4 * LN + 4 * lx;
            float* out = &C[(size_t)row * n + col];
            if (vec && col + 3 < n) {
                float4 v = make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
                if (add_to_c) {   // the earlier segments' sum first, then this one's: a fixed order
                    float4 c = __ldcg(reinterpret_cast<const float4*>(out));
                    v = make_float4(c.x + v.x, c.y + v.y, c.z + v.z, c.w + v.w);
                }
                *reinterpret_cast<float4*>(out) = v;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (col + j < n) out[j] = add_to_c ? __ldcg(out + j) + acc[i][4 * g + j] : acc[i][4 * g + j];
            }
        }
    }
#ifdef SPLIT_WAVE
    if (pieces > 1) {   // a split tile's segment releases: the stores, a fence, then the flag (0 after the last segment)
        __threadfence();
        __syncthreads();
        if (tid == 0) atomicExch(&split_done[tile - whole], seg + 1 == parts ? 0u : static_cast<unsigned>(seg + 1));
    }
#endif
}
