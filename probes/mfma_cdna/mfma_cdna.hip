// mfma-cdna probes, device side: one WAVE (64 lanes) = one CDNA MFMA, no library code in
// the binary.
//
//   t = global thread id, wave w = t / 64, lane = t % 64; params[0] = number of waves.
//   Lane l of wave w reads A and B (one 64-bit vector each: 4 halves or 8 bytes) at a[t],
//   b[t], C at c[t] and writes D at d[t]. The f16 probe's C and D are strided for
//   32x32x8's 16 floats; its 16x16x16 kernel reads the first 4 and writes the other 12 as
//   zeros, so no cell of D is left unwritten. cbsz = abid = blgp = 0 throughout.
//
// The guards are the exact targets: f16 and bf16 on gfx90a, gfx942, gfx950; i8 (16x16x32)
// and fp8 on gfx942 and gfx950 only. Anything else is a compile error, never a kernel (a
// broad __gfx9__ guard would build gfx908's missing forms as zeros: seeds/001).
// No headers: built offline with clang -nogpuinc -nogpulib; hiprtc builds the same file.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, so a redeclaration is legal

#if !(defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__))
#error "mfma-cdna: only gfx90a, gfx942 and gfx950 are targets"
#endif
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 64
#error "mfma-cdna is wave64 only"
#endif

typedef _Float16 h4 __attribute__((ext_vector_type(4)));
typedef short s4 __attribute__((ext_vector_type(4)));  // bf16 travels as shorts (bf16_1k)
typedef float f4 __attribute__((ext_vector_type(4)));
typedef float f16v __attribute__((ext_vector_type(16)));
typedef int i4 __attribute__((ext_vector_type(4)));

// The wave index from the first active lane: a scalar bound, so a wave returns whole and
// EXEC is never narrowed on the way to the instruction.
#define THREAD                                                                         \
    const uint32_t t = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() \
                       + __builtin_amdgcn_workitem_id_x();                            \
    if (__builtin_amdgcn_readfirstlane(t) / 64u >= params[0]) return;

extern "C" __global__ void probe_mfma_f32_16x16x16_f16(const uint32_t* params, const h4* a,
                                                      const h4* b, const f16v* c, f16v* d) {
    THREAD
    const f4 r = __builtin_amdgcn_mfma_f32_16x16x16f16(a[t], b[t], c[t].lo.lo, 0, 0, 0);
    f16v out = {};
    out.lo.lo = r;
    d[t] = out;
}

extern "C" __global__ void probe_mfma_f32_32x32x8_f16(const uint32_t* params, const h4* a,
                                                     const h4* b, const f16v* c, f16v* d) {
    THREAD
    d[t] = __builtin_amdgcn_mfma_f32_32x32x8f16(a[t], b[t], c[t], 0, 0, 0);
}

extern "C" __global__ void probe_mfma_f32_16x16x16_bf16(const uint32_t* params, const s4* a,
                                                       const s4* b, const f4* c, f4* d) {
    THREAD
    d[t] = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a[t], b[t], c[t], 0, 0, 0);
}

#if defined(__gfx942__) || defined(__gfx950__)
extern "C" __global__ void probe_mfma_i32_16x16x32_i8(const uint32_t* params, const long* a,
                                                     const long* b, const i4* c, i4* d) {
    THREAD
    d[t] = __builtin_amdgcn_mfma_i32_16x16x32_i8(a[t], b[t], c[t], 0, 0, 0);
}

extern "C" __global__ void probe_mfma_f32_16x16x32_fp8_fp8(const uint32_t* params,
                                                          const long* a, const long* b,
                                                          const f4* c, f4* d) {
    THREAD
    d[t] = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a[t], b[t], c[t], 0, 0, 0);
}
#endif
