// dot8-iu4 probe, device side: the gfx12 dense 4-bit dot products, one case per thread.
//
//   t = global thread id, w = t / 32 its wave; params[0] = number of waves.
//   d[t] = dot8(a[t], b[t], c[t])    every operand one 32-bit word, no clamp
//
// No lane reads another lane's data, so every thread is a case of its own. One kernel per
// signedness the builtins reach; the sign flags become v_dot8_i32_iu4's neg_lo bits:
//   probe_dot8_iu4_ss  sudot8(true,  a, true,  b, c, false)   neg_lo:[1,1,0]
//   probe_dot8_iu4_su  sudot8(true,  a, false, b, c, false)   neg_lo:[1,0,0]
//   probe_dot8_iu4_us  sudot8(false, a, true,  b, c, false)   neg_lo:[0,1,0]
//   probe_dot8_iu4_uu  sudot8(false, a, false, b, c, false)   no neg_lo
//   probe_dot8_u4      udot8(a, b, c, false)                  v_dot8_u32_u4
// Every operand comes from global memory, so nothing can be folded; the evidence gate
// checks that in the disassembly.
//
// No headers: built offline with clang -nogpuinc -nogpulib; every definition below is
// guarded or identical to HIP's, so hiprtc builds it unchanged too.
#if !(defined(__gfx1200__) || defined(__gfx1201__))
#error "dot8_iu4.hip is for gfx1200 and gfx1201 (RDNA4) only"
#endif
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, so a redeclaration is legal

static __device__ __attribute__((always_inline)) uint32_t probe_thread() {
    return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
           + __builtin_amdgcn_workitem_id_x();
}

// The wave index is taken from the first active lane (v_readfirstlane), so the bound is a
// scalar compare and branch: a wave returns as a whole and EXEC is never narrowed.
static __device__ __attribute__((always_inline)) bool probe_past_end(const uint32_t* params,
                                                                 uint32_t t) {
    return __builtin_amdgcn_readfirstlane(t) / 32u >= params[0];
}

extern "C" __global__ void probe_dot8_iu4_ss(const uint32_t* params, const uint32_t* a,
                                             const uint32_t* b, const uint32_t* c,
                                             uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    d[t] = (uint32_t)__builtin_amdgcn_sudot8(true, (int)a[t], true, (int)b[t], (int)c[t], false);
}

extern "C" __global__ void probe_dot8_iu4_su(const uint32_t* params, const uint32_t* a,
                                             const uint32_t* b, const uint32_t* c,
                                             uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    d[t] = (uint32_t)__builtin_amdgcn_sudot8(true, (int)a[t], false, (int)b[t], (int)c[t], false);
}

extern "C" __global__ void probe_dot8_iu4_us(const uint32_t* params, const uint32_t* a,
                                             const uint32_t* b, const uint32_t* c,
                                             uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    d[t] = (uint32_t)__builtin_amdgcn_sudot8(false, (int)a[t], true, (int)b[t], (int)c[t], false);
}

extern "C" __global__ void probe_dot8_iu4_uu(const uint32_t* params, const uint32_t* a,
                                             const uint32_t* b, const uint32_t* c,
                                             uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    d[t] = (uint32_t)__builtin_amdgcn_sudot8(false, (int)a[t], false, (int)b[t], (int)c[t], false);
}

extern "C" __global__ void probe_dot8_u4(const uint32_t* params, const uint32_t* a,
                                         const uint32_t* b, const uint32_t* c, uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    d[t] = __builtin_amdgcn_udot8(a[t], b[t], c[t], false);
}
