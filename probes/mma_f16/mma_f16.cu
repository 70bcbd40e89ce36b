// mma-f16 probes, NVIDIA side: one warp = one wave = one dense mma.sync on 16-bit inputs.
// Lane l of wave w reads its fragment registers from a[w][l][0..SA), b[w][l][0..SB),
// c[w][l][0..SC) and writes d[w][l][0..SC): two 16-bit elements per A/B register (element i
// in bits [16 (i % 2), 16 (i % 2) + 16) of register i / 2), one f32 or two f16 per C/D
// register. Strides are the widest shape's (m16n8k16): A 4, B 2, C/D 4 (f32) or 2 (f16).
// Operands come straight from global memory so the evidence gate can see the loads.
// params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define SA 4
#define SB 2

#define WAVE(SC)                                                             \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const uint32_t* pa = a + (w * 32 + lane) * SA;                           \
    const uint32_t* pb = b + (w * 32 + lane) * SB;                           \
    const uint32_t* pc = c + (w * 32 + lane) * (SC);                         \
    uint32_t* pd = d + (w * 32 + lane) * (SC);

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

// f32 accumulators: D and C are four f32 registers
#define F32_K8(NAME, TYPES)                                                          \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE(4)                                                                          \
    uint32_t d0, d1, d2, d3;                                                         \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." TYPES ".f32 "               \
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"              \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                            \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pb[0]),                               \
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));                  \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                  \
}

#define F32_K16(NAME, TYPES)                                                         \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE(4)                                                                          \
    uint32_t d0, d1, d2, d3;                                                         \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPES ".f32 "              \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                            \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]),                   \
                   "r"(pb[0]), "r"(pb[1]),                                           \
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));                  \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                  \
}

F32_K8(probe_f16_f32_m16n8k8, "f16.f16")
F32_K16(probe_f16_f32_m16n8k16, "f16.f16")
F32_K8(probe_bf16_f32_m16n8k8, "bf16.bf16")
F32_K16(probe_bf16_f32_m16n8k16, "bf16.bf16")

// f16 accumulators: D and C are two .f16x2 registers
extern "C" __global__ void probe_f16_f16_m16n8k8(ARGS) {
    WAVE(2)
    uint32_t d0, d1;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 "
                 "{%0, %1}, {%2, %3}, {%4}, {%5, %6};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pb[0]), "r"(pc[0]), "r"(pc[1]));
    pd[0] = d0; pd[1] = d1;
}

extern "C" __global__ void probe_f16_f16_m16n8k16(ARGS) {
    WAVE(2)
    uint32_t d0, d1;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
                 "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]),
                   "r"(pb[0]), "r"(pb[1]), "r"(pc[0]), "r"(pc[1]));
    pd[0] = d0; pd[1] = d1;
}
