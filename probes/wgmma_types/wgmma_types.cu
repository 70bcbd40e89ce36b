// wgmma-types probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
// wgmma.mma_async m64n8k{8,16,32} with A from registers and B K-major from a 1 KiB shared
// tile without swizzle (core matrices of 8 rows x 16 bytes, the next 16 bytes of k LBO =
// 128 on, SBO = 256), fenced, committed and waited for, one kernel per element type.
// Thread t of wave w reads its four A registers a[w][t][0..4), its B values b[w][t][0..SB)
// and its accumulators c[w][t][0..SC), and writes D to d[w][t][0..SC). B's value v of
// thread t is element v * 128 + t of the tile (byte (v * 128 + t) * element size), so the
// lane-id decode names tile bytes. params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers
typedef unsigned long long uint64_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    uint32_t r;
    asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }"
                 : "=r"(r) : "l"(p));
    return r;
}

// PTX's matrix descriptor, no swizzle: start address, LBO 128, SBO 256 (each >> 4)
__device__ __forceinline__ uint64_t descriptor(uint32_t address) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)(128 >> 4) << 16) |
           ((uint64_t)(256 >> 4) << 32);
}

// B's 1 KiB tile from this thread's values, ELEM bytes each (registers of 32 / ELEM bits)
#define TILE(T, PER)                                                                      \
    __shared__ __align__(1024) T sb[1024 / sizeof(T)];                                    \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \
    if (w >= params[0]) return;                                                           \
    const uint32_t* pa = a + (w * 128 + t) * 4;                                           \
    const uint32_t* pb = b + (w * 128 + t) * (1024 / sizeof(T) / 128 / (PER));            \
    _Pragma("unroll") for (int v = 0; v < 1024 / (int)sizeof(T) / 128; ++v)               \
        sb[v * 128 + t] = (T)(pb[v / (PER)] >> (8 * sizeof(T) * (v % (PER))));            \
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \
    __syncthreads();                                                                      \
    const uint64_t db = descriptor(shared_address(sb));

// four accumulator registers (f32, s32) or two (.f16x2)
#define WGMMA4(NAME, T, PER, FORM, TAIL)                                                  \
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \
    TILE(T, PER)                                                                          \
    const uint32_t* pc = c + (w * 128 + t) * 4;                                           \
    uint32_t* pd = d + (w * 128 + t) * 4;                                                 \
    uint32_t r0 = pc[0], r1 = pc[1], r2 = pc[2], r3 = pc[3];                              \
    asm volatile("wgmma.fence.sync.aligned;\n"                                            \
                 "wgmma.mma_async.sync.aligned." FORM " {%0, %1, %2, %3}, "               \
                 "{%4, %5, %6, %7}, %8, 1" TAIL ";\n"                                     \
                 "wgmma.commit_group.sync.aligned;\n"                                     \
                 "wgmma.wait_group.sync.aligned 0;"                                       \
                 : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3)                                 \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \
    pd[0] = r0; pd[1] = r1; pd[2] = r2; pd[3] = r3;                                       \
}

extern "C" __global__ void __launch_bounds__(128) probe_f16_f16_m64n8k16(ARGS) {
    TILE(uint16_t, 2)
    const uint32_t* pc = c + (w * 128 + t) * 2;
    uint32_t* pd = d + (w * 128 + t) * 2;
    uint32_t r0 = pc[0], r1 = pc[1];
    asm volatile("wgmma.fence.sync.aligned;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, "
                 "{%2, %3, %4, %5}, %6, 1, 1, 1, 0;\n"
                 "wgmma.commit_group.sync.aligned;\n"
                 "wgmma.wait_group.sync.aligned 0;"
                 : "+r"(r0), "+r"(r1)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");
    pd[0] = r0; pd[1] = r1;
}

// immediates after scale-d: scale-a, scale-b, and for 16-bit types trans-b
WGMMA4(probe_bf16_f32_m64n8k16, uint16_t, 2, "m64n8k16.f32.bf16.bf16", ", 1, 1, 0")
WGMMA4(probe_tf32_f32_m64n8k8, uint32_t, 1, "m64n8k8.f32.tf32.tf32", ", 1, 1")
WGMMA4(probe_e4m3_f32_m64n8k32, uint8_t, 4, "m64n8k32.f32.e4m3.e4m3", ", 1, 1")
WGMMA4(probe_e5m2_f32_m64n8k32, uint8_t, 4, "m64n8k32.f32.e5m2.e5m2", ", 1, 1")
WGMMA4(probe_s8_s32_m64n8k32, uint8_t, 4, "m64n8k32.s32.s8.s8", "")
