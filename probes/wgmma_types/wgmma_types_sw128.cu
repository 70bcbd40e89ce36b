// wgmma-<type>-sw128 probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave
// = one wgmma.mma_async m64n8k{8,32} with A from registers and B K-major from a 1 KiB shared
// tile under the 128-byte swizzle (8 rows n of 128 bytes, SBO 1024, LBO unused), fenced,
// committed and waited for, one kernel per element type (4-byte tf32, 1-byte fp8 and s8:
// a 16-byte chunk holds 4 or 16 of them).
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

// PTX's matrix descriptor, 128-byte swizzle (mode 1 in bits 62-63): start address, LBO 16
// (unused), SBO 1024 (each >> 4)
__device__ __forceinline__ uint64_t descriptor(uint32_t address) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)(16 >> 4) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
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

// immediates after scale-d: scale-a, scale-b, and for 16-bit types trans-b
WGMMA4(probe_tf32_f32_sw128_m64n8k8, uint32_t, 1, "m64n8k8.f32.tf32.tf32", ", 1, 1")
WGMMA4(probe_e4m3_f32_sw128_m64n8k32, uint8_t, 4, "m64n8k32.f32.e4m3.e4m3", ", 1, 1")
WGMMA4(probe_s8_s32_sw128_m64n8k32, uint8_t, 4, "m64n8k32.s32.s8.s8", "")
