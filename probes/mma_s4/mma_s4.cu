// mma-s4 probes, NVIDIA side: one warp = one wave = one dense 4-bit integer mma.sync into
// s32. Lane l of wave w reads its fragment registers from a[w][l][0..4), b[w][l][0..2),
// c[w][l][0..4) (the widest shape's strides: m16n8k64) and writes d[w][l][0..4), eight 4-bit
// elements per A/B register (element i in bits [4 (i % 8), +4) of register i / 8), one s32
// per C/D register; m8n8k32's D has two registers, the other two are written 0 so no cell
// is left unwritten. Operands come straight from global memory (the evidence gate traces
// them). params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define WAVE                                                                 \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const uint32_t* pa = a + (w * 32 + lane) * 4;                            \
    const uint32_t* pb = b + (w * 32 + lane) * 2;                            \
    const uint32_t* pc = c + (w * 32 + lane) * 4;                            \
    uint32_t* pd = d + (w * 32 + lane) * 4;

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

#define M8N8K32(NAME, TYPES)                                                         \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE                                                                             \
    uint32_t d0, d1;                                                                 \
    asm volatile("mma.sync.aligned.m8n8k32.row.col.s32." TYPES ".s32 "               \
                 "{%0, %1}, {%2}, {%3}, {%4, %5};"                                   \
                 : "=r"(d0), "=r"(d1) : "r"(pa[0]), "r"(pb[0]), "r"(pc[0]), "r"(pc[1])); \
    pd[0] = d0; pd[1] = d1; pd[2] = 0; pd[3] = 0;                                    \
}

#define M16N8K32(NAME, TYPES)                                                        \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE                                                                             \
    uint32_t d0, d1, d2, d3;                                                         \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." TYPES ".s32 "              \
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"              \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                            \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pb[0]),                               \
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));                  \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                  \
}

#define M16N8K64(NAME, TYPES)                                                        \
extern "C" __global__ void NAME(ARGS) {                                              \
    WAVE                                                                             \
    uint32_t d0, d1, d2, d3;                                                         \
    asm volatile("mma.sync.aligned.m16n8k64.row.col.s32." TYPES ".s32 "              \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                            \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]), "r"(pb[1]), \
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));                  \
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;                                  \
}

#define FAMILY(KIND, TYPES)                       \
    M8N8K32(probe_##KIND##_m8n8k32, TYPES)        \
    M16N8K32(probe_##KIND##_m16n8k32, TYPES)      \
    M16N8K64(probe_##KIND##_m16n8k64, TYPES)

FAMILY(s4s4, "s4.s4")
FAMILY(u4u4, "u4.u4")
FAMILY(s4u4, "s4.u4")
FAMILY(u4s4, "u4.s4")
