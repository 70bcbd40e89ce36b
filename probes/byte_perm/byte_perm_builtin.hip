// byte-perm probe, AMD side: the raw instruction. Cell i of the grid runs on thread i, as in
// byte_perm.cu:
//   operand pair op = i / n_sel, selector se = i % n_sel,
//   out[i] = __builtin_amdgcn_perm(x[op], y[op], sel[se])   (v_perm_b32 src0, src1, src2).
// v_perm_b32 takes source bytes 0-3 from its SECOND operand (y) and 4-7 from the first (x),
// and reads one selector BYTE per output byte. Every operand comes from global memory so
// nothing can be constant-folded; the evidence gate checks that in the disassembly.
// params[0] = n_sel, params[1] = number of cells.
//
// No headers: built offline with clang -nogpuinc -nogpulib, so this file defines what HIP
// would. hiprtc (which has HIP's headers) compiles it unchanged: every definition below is
// guarded or identical to HIP's.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, so a redeclaration is legal

extern "C" __global__ void probe_v_perm(const uint32_t* params, const uint32_t* x,
                                        const uint32_t* y, const uint32_t* sel,
                                        uint32_t* out) {
    const uint32_t n_sel = params[0];
    const uint32_t i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
                       + __builtin_amdgcn_workitem_id_x();
    if (i >= params[1]) return;
    const uint32_t op = i / n_sel, se = i % n_sel;
    out[i] = __builtin_amdgcn_perm(x[op], y[op], sel[se]);
}
