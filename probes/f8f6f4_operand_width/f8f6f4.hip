// f8f6f4-operand-width: the five runtime-format matrix builtins of gfx1250 (WMMA) and gfx950
// (scaled MFMA), one kernel per case. A, B, C and the scales are loaded from memory; the
// format arguments are literals (the builtins require constants). The builtins take A and B
// through their widest vector type (WMMA <16 x i32>, MFMA <8 x i32>) whatever the format,
// which is how the over-wide source of seeds/003 arises from plain clang.
#define __global__ __attribute__((global))
typedef int v16i __attribute__((ext_vector_type(16)));
typedef int v8i __attribute__((ext_vector_type(8)));
typedef float v4f __attribute__((ext_vector_type(4)));
typedef float v8f __attribute__((ext_vector_type(8)));
typedef float v16f __attribute__((ext_vector_type(16)));

#define WMMA_KERNEL(n, c_t, call)                                                   \
  extern "C" __global__ void case_##n(const v16i* a, const v16i* b, c_t* c,          \
                                      const int* s, const long* l) { c[0] = call; }
#define MFMA_KERNEL(n, c_t, call)                                                   \
  extern "C" __global__ void case_##n(const v8i* a, const v8i* b, c_t* c,            \
                                      const int* s) { c[0] = call; }

// (case, A format, B format); formats 0..4: FP8, BF8, FP6, BF6, FP4 (WMMA's MATRIX_FMT_*,
// MFMA's cbsz/blgp)
#define WMMA(n, fa, fb) WMMA_KERNEL(n, v8f,                                          \
  __builtin_amdgcn_wmma_f32_16x16x128_f8f6f4(fa, a[0], fb, b[0], (short)0, c[0]))
#define WMMA_SCALE(n, fa, fb) WMMA_KERNEL(n, v8f,                                    \
  __builtin_amdgcn_wmma_scale_f32_16x16x128_f8f6f4(fa, a[0], fb, b[0], (short)0, c[0], \
                                                   0, 0, s[0], 0, 0, s[1], false, false))
#define WMMA_SCALE16(n, fa, fb) WMMA_KERNEL(n, v8f,                                  \
  __builtin_amdgcn_wmma_scale16_f32_16x16x128_f8f6f4(fa, a[0], fb, b[0], (short)0,   \
                                                     c[0], 0, 0, l[0], 0, 0, l[1],   \
                                                     false, false))
#define MFMA_16(n, fa, fb) MFMA_KERNEL(n, v4f,                                       \
  __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a[0], b[0], c[0], fa, fb, 0, s[0], \
                                                   0, s[1]))
#define MFMA_32(n, fa, fb) MFMA_KERNEL(n, v16f,                                      \
  __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a[0], b[0], c[0], fa, fb, 0, s[0], \
                                                  0, s[1]))

// `probelab asm`: one kernel, case_0, of the builtin INTRINSIC with formats FA, FB
#ifdef INTRINSIC
#if INTRINSIC == 0
WMMA(0, FA, FB)
#elif INTRINSIC == 1
WMMA_SCALE(0, FA, FB)
#elif INTRINSIC == 2
WMMA_SCALE16(0, FA, FB)
#elif INTRINSIC == 3
MFMA_16(0, FA, FB)
#elif INTRINSIC == 4
MFMA_32(0, FA, FB)
#endif
#endif
