// wmma-gfx12 probes, device side: one WAVE (32 lanes) = one dense gfx12 (RDNA4) WMMA, no
// library code in the binary.
//
//   t = global thread id, wave w = t / 32, lane = t % 32; params[0] = number of waves.
//   Lane l of wave w reads its A, B and C registers at a[t], b[t], c[t] (one vector per lane,
//   the probe's widest shape: the iu4 probe strides A and B by 2 dwords for K = 32, so its
//   K = 16 kernel reads dword 0 of each) and writes D at d[t]. Integer forms are signed
//   (a_sign = b_sign = true), clamp off.
//
// The guard is the exact set of gfx12 targets; any other target is a compile error, never a
// kernel (a gfx11 build would take these builtins' gfx11 spellings with other fragments).
// No headers: built offline with clang -nogpuinc -nogpulib; hiprtc builds the same file.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, so a redeclaration is legal

#if !(defined(__gfx1200__) || defined(__gfx1201__))
#error "wmma-gfx12: only gfx1200 and gfx1201 (RDNA4) are targets"
#endif
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32
#error "wmma-gfx12 is wave32 only"
#endif

typedef _Float16 h8 __attribute__((ext_vector_type(8)));
typedef short s8 __attribute__((ext_vector_type(8)));  // bf16 travels as shorts
typedef float f8 __attribute__((ext_vector_type(8)));
typedef int i2 __attribute__((ext_vector_type(2)));
typedef int i8 __attribute__((ext_vector_type(8)));

// The wave index from the first active lane: a scalar bound, so a wave returns whole and
// EXEC is never narrowed on the way to the instruction.
#define THREAD                                                                         \
    const uint32_t t = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() \
                       + __builtin_amdgcn_workitem_id_x();                            \
    if (__builtin_amdgcn_readfirstlane(t) / 32u >= params[0]) return;

#define FLOAT(NAME, AB, CD, BUILTIN)                                                  \
extern "C" __global__ void NAME(const uint32_t* params, const AB* a, const AB* b,      \
                                const CD* c, CD* d) {                                 \
    THREAD                                                                             \
    d[t] = BUILTIN(a[t], b[t], c[t]);                                                  \
}

FLOAT(probe_wmma_f32_16x16x16_f16, h8, f8, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12)
FLOAT(probe_wmma_f32_16x16x16_bf16, s8, f8, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12)
FLOAT(probe_wmma_f16_16x16x16_f16, h8, h8, __builtin_amdgcn_wmma_f16_16x16x16_f16_w32_gfx12)
FLOAT(probe_wmma_f32_16x16x16_fp8_fp8, i2, f8,
      __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12)
FLOAT(probe_wmma_f32_16x16x16_fp8_bf8, i2, f8,
      __builtin_amdgcn_wmma_f32_16x16x16_fp8_bf8_w32_gfx12)
FLOAT(probe_wmma_f32_16x16x16_bf8_fp8, i2, f8,
      __builtin_amdgcn_wmma_f32_16x16x16_bf8_fp8_w32_gfx12)
FLOAT(probe_wmma_f32_16x16x16_bf8_bf8, i2, f8,
      __builtin_amdgcn_wmma_f32_16x16x16_bf8_bf8_w32_gfx12)

extern "C" __global__ void probe_wmma_i32_16x16x16_iu8(const uint32_t* params, const i2* a,
                                                      const i2* b, const i8* c, i8* d) {
    THREAD
    d[t] = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a[t], true, b[t], c[t], false);
}

// The iu4 probe's buffers hold 2 dwords of A and B per lane (K = 32's); K = 16 reads the first.
extern "C" __global__ void probe_wmma_i32_16x16x16_iu4(const uint32_t* params, const i2* a,
                                                      const i2* b, const i8* c, i8* d) {
    THREAD
    d[t] = __builtin_amdgcn_wmma_i32_16x16x16_iu4_w32_gfx12(true, a[t].x, true, b[t].x, c[t],
                                                            false);
}

extern "C" __global__ void probe_wmma_i32_16x16x32_iu4(const uint32_t* params, const i2* a,
                                                      const i2* b, const i8* c, i8* d) {
    THREAD
    d[t] = __builtin_amdgcn_wmma_i32_16x16x32_iu4_w32_gfx12(true, a[t], true, b[t], c[t], false);
}
