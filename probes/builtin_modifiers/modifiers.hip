// builtin-modifiers: which instruction modifiers each constant argument of a matrix builtin
// turns into. Compiled offline once per case with -D FAMILY, K, A1, A3, A7 (swmmac iu4,
// gfx12) or CBSZ, ABID, BLGP (f64 MFMA, gfx9); the constant arguments must be literals, so
// every case is its own code object. Operands come from memory so nothing folds away.
#ifndef __global__
#define __global__ __attribute__((global))
#endif

typedef int v2i __attribute__((ext_vector_type(2)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));
typedef double v4d __attribute__((ext_vector_type(4)));

#define LANE __builtin_amdgcn_workitem_id_x()

#if FAMILY == 0 && K == 32
extern "C" __global__ void probe_modifiers(const int* a, const v2i* b, const v8i* c,
                                           const int* idx, v8i* d) {
    d[LANE] = __builtin_amdgcn_swmmac_i32_16x16x32_iu4_w32(A1, a[LANE], A3, b[LANE], c[LANE],
                                                           idx[LANE], A7);
}
#elif FAMILY == 0 && K == 64
extern "C" __global__ void probe_modifiers(const v2i* a, const v4i* b, const v8i* c,
                                           const int* idx, v8i* d) {
    d[LANE] = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32(A1, a[LANE], A3, b[LANE], c[LANE],
                                                           idx[LANE], A7);
}
#elif FAMILY == 1
extern "C" __global__ void probe_modifiers(const double* a, const double* b, const v4d* c,
                                           v4d* d) {
    d[LANE] = __builtin_amdgcn_mfma_f64_16x16x4f64(a[LANE], b[LANE], c[LANE], CBSZ, ABID, BLGP);
}
#endif
