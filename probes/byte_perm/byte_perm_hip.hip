// byte-perm probe, AMD side: HIP's __byte_perm, the library function ported CUDA code calls.
// Same cell indexing as byte_perm.cu (thread i: op = i / n_sel, se = i % n_sel), same
// argument order as CUDA (bytes 0-3 from x, 4-7 from y), so its dataset lines up with the
// NVIDIA `byte_perm` kernel cell for cell.
// __byte_perm lives in HIP's headers (clr amd_device_functions.h), so this file is built on
// the device by hiprtc, never offline; whatever it compiles to is recorded, not claimed.
// params[0] = n_sel, params[1] = number of cells.
#include <hip/hip_runtime.h>

extern "C" __global__ void probe_byte_perm(const uint32_t* params, const uint32_t* x,
                                           const uint32_t* y, const uint32_t* sel,
                                           uint32_t* out) {
    const uint32_t n_sel = params[0];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params[1]) return;
    const uint32_t op = i / n_sel, se = i % n_sel;
    out[i] = __byte_perm(x[op], y[op], sel[se]);
}
