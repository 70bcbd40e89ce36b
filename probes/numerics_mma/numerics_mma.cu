// numerics-mma probes, NVIDIA: one wave = one MMA. mma.sync: one warp, m16n8k16 on f16 or
// bf16 (into f32 or f16), m16n8k8 on tf32, m16n8k32 on e4m3/e5m2, m8n8k4 and m16n8k16 on
// f64 (wgmma: numerics_wgmma.cu). Lane l of wave w reads its fragment registers from
// a[w][l][..], b[w][l][..], c[w][l][..] (32-bit words; several elements to a word, or two
// words to an f64, low word first) and writes its D registers to d[w][l][..]. Operands come
// straight from global memory so the evidence gate sees the loads. params[0] = waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d
// what every kernel begins with: its wave and lane, and the lane's slots of a, b, c and d
// as registers of type T (uint32_t, or double), AW, BW and CW (C and D alike) of them
#define FRAGMENTS(T, AW, BW, CW)                                                         \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;                    \
    const uint32_t lane = threadIdx.x % 32;                                             \
    if (w >= params[0]) return;                                                         \
    const T* pa = (const T*)a + (w * 32 + lane) * (AW);                                 \
    const T* pb = (const T*)b + (w * 32 + lane) * (BW);                                 \
    const T* pc = (const T*)c + (w * 32 + lane) * (CW);                                 \
    T* pd = (T*)d + (w * 32 + lane) * (CW);

#define MMA_F32(NAME, SHAPE, TYPES)                                                      \
extern "C" __global__ void NAME(ARGS) {                                                \
    FRAGMENTS(uint32_t, 4, 2, 4)                                                       \
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

// f16 accumulators: C and D two registers of two f16 each
#define MMA_F16(NAME, SHAPE, TYPES)                                                      \
extern "C" __global__ void NAME(ARGS) {                                                \
    FRAGMENTS(uint32_t, 4, 2, 2)                                                       \
    uint32_t d0, d1;                                                                    \
    asm volatile("mma.sync.aligned." SHAPE ".row.col.f16." TYPES ".f16 "                \
                 "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"                      \
                 : "=r"(d0), "=r"(d1)                                                   \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "r"(pb[0]),          \
                   "r"(pb[1]), "r"(pc[0]), "r"(pc[1]));                                 \
    pd[0] = d0; pd[1] = d1;                                                             \
}

MMA_F16(probe_f16_f16_m16n8k16, "m16n8k16", "f16.f16")
MMA_F32(probe_e4m3_f32_m16n8k32, "m16n8k32", "e4m3.e4m3")
MMA_F32(probe_e5m2_f32_m16n8k32, "m16n8k32", "e5m2.e5m2")

// f64: one double per A, B element, C and D element
extern "C" __global__ void probe_f64_m8n8k4(ARGS) {
    FRAGMENTS(double, 1, 1, 2)
    double d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                 "{%4, %5};"
                 : "=d"(d0), "=d"(d1) : "d"(pa[0]), "d"(pb[0]), "d"(pc[0]), "d"(pc[1]));
    pd[0] = d0; pd[1] = d1;
}

extern "C" __global__ void probe_f64_m16n8k16(ARGS) {
    FRAGMENTS(double, 8, 4, 4)
    double d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, "
                 "{%16, %17, %18, %19};"
                 : "=d"(d0), "=d"(d1), "=d"(d2), "=d"(d3)
                 : "d"(pa[0]), "d"(pa[1]), "d"(pa[2]), "d"(pa[3]), "d"(pa[4]), "d"(pa[5]),
                   "d"(pa[6]), "d"(pa[7]), "d"(pb[0]), "d"(pb[1]), "d"(pb[2]), "d"(pb[3]),
                   "d"(pc[0]), "d"(pc[1]), "d"(pc[2]), "d"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}
