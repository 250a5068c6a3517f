// One relaxation of a shortest-path kernel, min(a + b, c): the only definition, shared by the
// kernels that relax in registers (fw_blocked_registers.cu, fw_blocked_minplus.cu) and by the
// int32 add+min ceiling that chapter 04 judges them against (int_add_min_ceiling.cu). Because the
// ceiling runs this very code, "fraction of the ceiling" compares a kernel with the instruction it
// issues, never with a copy that could drift from it.
//
// Two forms:
//   add_then_min(a, b, c)  the add and the min as two instructions, the pair an Ampere build
//                          (sm_80) issues for min(a + b, c): IMAD.IADD (a multiply-add by 1) and
//                          IMNMX. On compute capability 9.0 ptxas fuses a plain min(a + b, c) into
//                          the DPX instruction VIADDMNMX by itself, so there the add is a
//                          multiply-add by add_min_one, a __constant__ 1 that ptxas cannot prove
//                          is 1: the same IMAD, never fused. The ceiling's add_min_plain measures it.
//   add_min(a, b, c)       what the kernels use: the DPX intrinsic __viaddmin_s32, one VIADDMNMX
//                          instruction, on compute capability 9.0 and later; add_then_min elsewhere
//                          (where the CUDA headers' own emulation of the intrinsic is that same
//                          min(a + b, c)) or when built with -DNO_DPX. The ceiling's add_min_dpx
//                          kernel measures it (it is never built with -DNO_DPX).
// So a -DNO_DPX build on an H100 issues what the kernel's sm_80 build issues, and chapter 04 times
// the two builds on one GPU to find what the DPX instruction itself is worth (its SASS table shows
// the instructions of each build, and of the sm_80 build, from the compiler).
// Distances use the NTHU convention (1073741823 = unreachable), so a + b never overflows int32.
//
// Included as "add_min.cuh": cudalab compiles every kernel file with its own folder, kernels_cu/,
// on the include path (NVRTC and nvcc alike), and its caches cover the headers a file includes.

#ifndef CUDALAB_ADD_MIN_CUH
#define CUDALAB_ADD_MIN_CUH

__constant__ int add_min_one = 1;  // never written: 1 to the kernel, unknown to ptxas

__device__ __forceinline__ int add_then_min(int a, int b, int c)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return min(a * add_min_one + b, c);
#else
    return min(a + b, c);
#endif
}

__device__ __forceinline__ int add_min(int a, int b, int c)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(NO_DPX)
    return __viaddmin_s32(a, b, c);
#else
    return add_then_min(a, b, c);
#endif
}

#endif  // CUDALAB_ADD_MIN_CUH
