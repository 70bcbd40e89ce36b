// byte-perm probe, NVIDIA side. Cell i of the grid runs on thread i:
//   operand pair op = i / n_sel, selector se = i % n_sel,
//   out[i] = f(x[op], y[op], sel[se]).
// Every operand comes from global memory so nothing can be constant-folded; the
// evidence gate checks that in the SASS of the object that runs.
// params[0] = n_sel, params[1] = number of cells.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define PROBE_CELL                                             \
    const uint32_t n_sel = params[0];                          \
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  \
    if (i >= params[1]) return;                                \
    const uint32_t op = i / n_sel, se = i % n_sel;

// CUDA's intrinsic, whatever the toolchain lowers it to.
extern "C" __global__ void probe_byte_perm(const uint32_t* params, const uint32_t* x,
                                           const uint32_t* y, const uint32_t* sel,
                                           uint32_t* out) {
    PROBE_CELL
    out[i] = __byte_perm(x[op], y[op], sel[se]);
}

// The raw PTX instruction in its default mode (no .f4e/.b4e/... suffix).
extern "C" __global__ void probe_prmt(const uint32_t* params, const uint32_t* x,
                                      const uint32_t* y, const uint32_t* sel,
                                      uint32_t* out) {
    PROBE_CELL
    uint32_t r;
    asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x[op]), "r"(y[op]), "r"(sel[se]));
    out[i] = r;
}
