// mfma-f64 probe, device side: one WAVE (64 lanes) = one v_mfma_f64_16x16x4(_)f64, no
// library code in the binary.
//
//   t = global thread id, w = t / 64 (the wave), lane = t % 64; params[0] = number of waves.
//   A 1 double per lane at a[t], B 1 double at b[t], C 4 doubles at c[t*4 + j],
//   D 4 doubles at d[t*4 + j]. D = A.B + C with cbsz = abid = blgp = 0 (for f64, blgp is
//   negation, not a lane-group pattern: seeds/001, and the builtin-modifiers probe).
//
// The guard is the exact set of targets with an FP64 matrix core. gfx908 (CDNA1) has none;
// a broad `__gfx9__` guard would build a fallback that quietly returns zeros (seeds/001), so
// any other target is a compile error, never a kernel.
//
// No headers: built offline with clang -nogpuinc -nogpulib; every definition below is
// guarded or identical to HIP's, so hiprtc builds it unchanged too.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, so a redeclaration is legal

#if !(defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__))
#error "mfma-f64: this target has no f64 matrix instruction (only gfx90a, gfx942, gfx950 do)"
#endif
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 64
#error "mfma-f64 is wave64 only"
#endif

typedef double probe_d4 __attribute__((ext_vector_type(4)));

extern "C" __global__ void probe_mfma_f64_16x16x4(const uint32_t* params, const double* a,
                                                  const double* b, const double* c,
                                                  double* d) {
    const uint32_t t = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
                       + __builtin_amdgcn_workitem_id_x();
    // The wave index from the first active lane: a scalar bound, so a wave returns whole
    // and EXEC is never narrowed on the way to the instruction.
    if (__builtin_amdgcn_readfirstlane(t) / 64u >= params[0]) return;
    const probe_d4 acc = ((const probe_d4*)c)[t];
    ((probe_d4*)d)[t] = __builtin_amdgcn_mfma_f64_16x16x4f64(a[t], b[t], acc, 0, 0, 0);
}
