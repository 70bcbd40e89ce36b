// dmma-f64 probe, NVIDIA side: one warp = one wave = one mma.sync on f64 fragments.
// Lane l of wave w reads its fragment registers from a[w][l][0..RA), b[w][l][0..RB),
// c[w][l][0..RC) (buffers use the widest shape's strides: 8, 4 and 4 doubles) and writes
// d[w][l][0..4); registers past the shape's RC are written as 0.0 so no cell is unwritten.
// Operands come straight from global memory so the evidence gate can see the loads.
// params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define STRIDE_A 8
#define STRIDE_B 4
#define STRIDE_D 4

#define WAVE_PROLOGUE                                                        \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const double* pa = a + (w * 32 + lane) * STRIDE_A;                       \
    const double* pb = b + (w * 32 + lane) * STRIDE_B;                       \
    const double* pc = c + (w * 32 + lane) * STRIDE_D;                       \
    double* pd = d + (w * 32 + lane) * STRIDE_D;

extern "C" __global__ void probe_m8n8k4(const uint32_t* params, const double* a,
                                        const double* b, const double* c, double* d) {
    WAVE_PROLOGUE
    double d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                 "{%4, %5};"
                 : "=d"(d0), "=d"(d1) : "d"(pa[0]), "d"(pb[0]), "d"(pc[0]), "d"(pc[1]));
    pd[0] = d0; pd[1] = d1; pd[2] = 0.0; pd[3] = 0.0;
}

extern "C" __global__ void probe_m16n8k4(const uint32_t* params, const double* a,
                                         const double* b, const double* c, double* d) {
    WAVE_PROLOGUE
    double d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=d"(d0), "=d"(d1), "=d"(d2), "=d"(d3)
                 : "d"(pa[0]), "d"(pa[1]), "d"(pb[0]),
                   "d"(pc[0]), "d"(pc[1]), "d"(pc[2]), "d"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}

extern "C" __global__ void probe_m16n8k8(const uint32_t* params, const double* a,
                                         const double* b, const double* c, double* d) {
    WAVE_PROLOGUE
    double d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=d"(d0), "=d"(d1), "=d"(d2), "=d"(d3)
                 : "d"(pa[0]), "d"(pa[1]), "d"(pa[2]), "d"(pa[3]), "d"(pb[0]), "d"(pb[1]),
                   "d"(pc[0]), "d"(pc[1]), "d"(pc[2]), "d"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}

extern "C" __global__ void probe_m16n8k16(const uint32_t* params, const double* a,
                                          const double* b, const double* c, double* d) {
    WAVE_PROLOGUE
    double d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, "
                 "{%16, %17, %18, %19};"
                 : "=d"(d0), "=d"(d1), "=d"(d2), "=d"(d3)
                 : "d"(pa[0]), "d"(pa[1]), "d"(pa[2]), "d"(pa[3]),
                   "d"(pa[4]), "d"(pa[5]), "d"(pa[6]), "d"(pa[7]),
                   "d"(pb[0]), "d"(pb[1]), "d"(pb[2]), "d"(pb[3]),
                   "d"(pc[0]), "d"(pc[1]), "d"(pc[2]), "d"(pc[3]));
    pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;
}
