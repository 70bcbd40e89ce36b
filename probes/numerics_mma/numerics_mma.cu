// numerics-mma probes, NVIDIA: one warp = one wave = one mma.sync into f32, m16n8k16 on
// f16 or bf16, m16n8k8 on tf32 (the same operand counts). Lane l of wave w reads its
// fragment registers from a[w][l][0..4), b[w][l][0..2), c[w][l][0..4) (two 16-bit elements
// per A/B register, element i in bits [16 (i % 2), +16) of register i / 2, or one tf32; one
// f32 per C register) and writes its four f32 of D to d[w][l][0..4). Operands come straight from global memory so the evidence gate sees the
// loads. params[0] = waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define MMA_F32(NAME, SHAPE, TYPES)                                                      \
extern "C" __global__ void NAME(const uint32_t* params, const uint32_t* a,              \
                                const uint32_t* b, const uint32_t* c, uint32_t* d) {    \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;                    \
    const uint32_t lane = threadIdx.x % 32;                                             \
    if (w >= params[0]) return;                                                         \
    const uint32_t* pa = a + (w * 32 + lane) * 4;                                       \
    const uint32_t* pb = b + (w * 32 + lane) * 2;                                       \
    const uint32_t* pc = c + (w * 32 + lane) * 4;                                       \
    uint32_t* pd = d + (w * 32 + lane) * 4;                                             \
    uint32_t d0, d1, d2, d3;                                                            \
    asm volatile("mma.sync.aligned." SHAPE ".row.col.f32." TYPES ".f32 "                \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"  \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                               \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]),          \
                   "r"(pb[1]), "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));         \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                     \
}

MMA_F32(probe_f16_f32_m16n8k16, "m16n8k16", "f16.f16")
MMA_F32(probe_bf16_f32_m16n8k16, "m16n8k16", "bf16.bf16")
MMA_F32(probe_tf32_f32_m16n8k8, "m16n8k8", "tf32.tf32")
