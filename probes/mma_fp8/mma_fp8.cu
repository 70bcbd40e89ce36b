// mma-fp8 probes, NVIDIA side: one warp = one wave = one dense fp8 mma.sync m16n8k32.
// Lane l of wave w reads its fragment registers from a[w][l][0..4), b[w][l][0..2),
// c[w][l][0..SC) and writes d[w][l][0..SC): four fp8 elements per A/B register (element i in
// bits [8 (i % 4), +8) of register i / 4), one f32 (SC = 4) or two f16 (SC = 2) per C/D
// register. Operands come straight from global memory (the evidence gate traces them).
// params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define WAVE(SC)                                                             \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const uint32_t* pa = a + (w * 32 + lane) * 4;                            \
    const uint32_t* pb = b + (w * 32 + lane) * 2;                            \
    const uint32_t* pc = c + (w * 32 + lane) * (SC);                         \
    uint32_t* pd = d + (w * 32 + lane) * (SC);

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

#define F32(NAME, TYPES)                                                             \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE(4)                                                                          \
    uint32_t d0, d1, d2, d3;                                                         \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TYPES ".f32 "              \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                            \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]), "r"(pb[1]), \
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));                  \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                  \
}

#define F16(NAME, TYPES)                                                             \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE(2)                                                                          \
    uint32_t d0, d1;                                                                 \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f16." TYPES ".f16 "              \
                 "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"                   \
                 : "=r"(d0), "=r"(d1)                                                \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]), "r"(pb[1]), \
                   "r"(pc[0]), "r"(pc[1]));                                          \
    pd[0] = d0; pd[1] = d1;                                                          \
}

F32(probe_e4m3_f32_m16n8k32, "e4m3.e4m3")
F32(probe_e5m2_f32_m16n8k32, "e5m2.e5m2")
F16(probe_e4m3_f16_m16n8k32, "e4m3.e4m3")
F16(probe_e5m2_f16_m16n8k32, "e5m2.e5m2")
