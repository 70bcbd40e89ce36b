// swmmac-iu4 probe, device side: the raw gfx12 sparse iu4 instructions, one WAVE per
// stimulus cell, wave32, no library code in the binary.
//
//   t = global thread id, w = t / 32 (the cell), lane = t % 32; params[0] = number of waves.
//   Buffers use K=64 strides for BOTH kernels (one set of buffers serves both):
//     A   2 dwords per lane at a[t*2 + j]      K=32 reads dword 0 (int), K=64 dwords 0-1
//     B   4 dwords per lane at b[t*4 + j]      K=32 reads dwords 0-1,     K=64 dwords 0-3
//     C   8 dwords per lane at c[t*8 + j]      the starting accumulator
//     idx 1 dword  per lane at idx[t]          the sparse index word
//     D   8 dwords per lane at d[t*8 + j]      every lane stores all 8
//   D = swmmac(A, B, C, idx), A and B SIGNED (neg_lo:[1,1,0]), no clamp.
//
// Two routes, on purpose:
// - K=32: the builtin __builtin_amdgcn_swmmac_i32_16x16x32_iu4_w32. clang 19 types its index
//   as i16, which is all the K=32 form reads with index_key:0 (16 bits per lane).
// - K=64: inline asm. clang 19 also types the K=64 builtin's index as i16 (the IR is
//   `trunc i32 %x to i16` feeding @llvm.amdgcn.swmmac.i32.16x16x64.iu4...i16), but the K=64
//   instruction reads all 32 bits. Whatever the register holds above bit 15 is then not
//   defined by the builtin's contract, even when the loaded word happens to be there. The asm
//   hands the instruction the loaded 32-bit word itself. `asm volatile` with its output
//   stored keeps it from being removed or merged; its inputs come from loads the compiler
//   must complete first (it inserts s_wait_loadcnt before the asm, as for any use).
//
// Every operand comes from global memory, loaded at full width, so nothing can be folded or
// narrowed; the evidence gate checks that in the disassembly.
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

#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32
#error "swmmac_iu4.hip is wave32 only (the _w32 builtins and the per-lane layout)"
#endif

typedef int probe_i2 __attribute__((ext_vector_type(2)));
typedef int probe_i4 __attribute__((ext_vector_type(4)));
typedef int probe_i8 __attribute__((ext_vector_type(8)));

// The global thread id, and whether its wave is past the last cell. The wave index is taken
// from the first active lane (v_readfirstlane), so the bound is a scalar compare and branch:
// a wave returns as a whole and EXEC is never narrowed on the way to the instruction.
static __device__ __attribute__((always_inline)) uint32_t probe_thread() {
    return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
           + __builtin_amdgcn_workitem_id_x();
}

static __device__ __attribute__((always_inline)) bool probe_past_end(const uint32_t* params,
                                                                 uint32_t t) {
    return __builtin_amdgcn_readfirstlane(t) / 32u >= params[0];
}

extern "C" __global__ void probe_swmmac_k32(const uint32_t* params, const uint32_t* a,
                                            const uint32_t* b, const uint32_t* c,
                                            const uint32_t* idx, uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    const int a1 = (int)a[t * 2];                               // A dword 0
    const probe_i2 b2 = ((const probe_i2*)b)[t * 2];            // B dwords 0-1
    const probe_i8 c8 = ((const probe_i8*)c)[t];                // C dwords 0-7
    ((probe_i8*)d)[t] = __builtin_amdgcn_swmmac_i32_16x16x32_iu4_w32(
        true, a1, true, b2, c8, (int)idx[t], false);
}

extern "C" __global__ void probe_swmmac_k64(const uint32_t* params, const uint32_t* a,
                                            const uint32_t* b, const uint32_t* c,
                                            const uint32_t* idx, uint32_t* d) {
    const uint32_t t = probe_thread();
    if (probe_past_end(params, t)) return;
    const probe_i2 a2 = ((const probe_i2*)a)[t];                // A dwords 0-1
    const probe_i4 b4 = ((const probe_i4*)b)[t];                // B dwords 0-3
    const uint32_t index = idx[t];                              // all 32 bits
    probe_i8 acc = ((const probe_i8*)c)[t];                     // C, tied to D
    asm volatile("v_swmmac_i32_16x16x64_iu4 %0, %1, %2, %3 neg_lo:[1,1,0]"
                 : "+v"(acc) : "v"(a2), "v"(b4), "v"(index));
    ((probe_i8*)d)[t] = acc;
}
