// mma-b1 probes, NVIDIA side: one warp = one wave = one single-bit mma.sync with
// .and.popc into s32. Lane l of wave w reads its fragment registers from a[w][l][0..SA),
// b[w][l][0..SB), c[w][l][0..4) and writes d[w][l][0..4): 32 one-bit elements per A/B
// register (element i in bit i % 32 of register i / 32), one s32 per C/D register;
// m8n8k128's D has two registers, the other two are written 0 so no cell is left unwritten.
// SA/SB are the strides of the probe's widest shape (the kernels of one probe share their
// buffers): 2/1 for mma-b1-and (m8n8k128, m16n8k128), 4/2 for mma-b1-and-k256. Operands
// come straight from global memory (the evidence gate traces them). params[0] = waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define WAVE(SA, SB)                                                         \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const uint32_t* pa = a + (w * 32 + lane) * SA;                           \
    const uint32_t* pb = b + (w * 32 + lane) * SB;                           \
    const uint32_t* pc = c + (w * 32 + lane) * 4;                            \
    uint32_t* pd = d + (w * 32 + lane) * 4;

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

extern "C" __global__ void probe_b1_and_m8n8k128(ARGS) {
    WAVE(2, 1)
    uint32_t d0, d1;
    asm volatile("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1}, {%2}, {%3}, {%4, %5};"
                 : "=r"(d0), "=r"(d1) : "r"(pa[0]), "r"(pb[0]), "r"(pc[0]), "r"(pc[1]));
    pd[0] = d0; pd[1] = d1; pd[2] = 0; pd[3] = 0;
}

extern "C" __global__ void probe_b1_and_m16n8k128(ARGS) {
    WAVE(2, 1)
    uint32_t d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pb[0]),
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}

extern "C" __global__ void probe_b1_and_m16n8k256(ARGS) {
    WAVE(4, 2)
    uint32_t d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]), "r"(pb[1]),
                   "r"(pc[0]), "r"(pc[1]), "r"(pc[2]), "r"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}
