// wgmma-f16-ssa probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
// wgmma.mma_async m64n16k16 f16 x f16 -> f32 with A and B both from shared memory, fenced,
// committed and waited for: A under the wide swizzles (64B, 128B) and M-major
// (imm-trans-a = 1). Thread t of wave w reads its values from a[w][t][0..16), b[w][t][0..1)
// (two f16 per register, value i in bits [16 (i % 2), +16) of register i / 2),
// c[w][t][0..8), and writes its eight f32 accumulators to d[w][t][0..8).
// A's tile is 8 KiB (4,096 f16), B's 512 bytes (256), each 1 KiB aligned; value v of thread
// t is element v * 128 + t of its tile (byte 2 (v * 128 + t)), so the lane-id decode names
// tile bytes. Each kernel's descriptors are constants of its source; params[0] = waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers
typedef unsigned long long uint64_t;
typedef unsigned short uint16_t;

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    uint32_t r;
    asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }"
                 : "=r"(r) : "l"(p));
    return r;
}

// PTX's matrix descriptor: start address, leading and stride byte offsets (each >> 4, 14
// bits), swizzle mode in bits 62-63 (0 none, 1 128B, 2 64B, 3 32B); base offset 0
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t lbo, uint32_t sbo,
                                               uint64_t mode) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | (mode << 62);
}

// A (mode, LBO, SBO, imm-trans-a) and B (K-major, unswizzled: LBO 128, SBO 256)
#define SSA(NAME, AM, AL, AS, TA)                                                         \
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \
    __shared__ __align__(1024) uint16_t sa[4096];                                         \
    __shared__ __align__(1024) uint16_t sb[256];                                          \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \
    if (w >= params[0]) return;                                                           \
    const uint32_t* pa = a + (w * 128 + t) * 16;                                          \
    const uint32_t* pb = b + (w * 128 + t) * 1;                                           \
    const uint32_t* pc = c + (w * 128 + t) * 8;                                           \
    uint32_t* pd = d + (w * 128 + t) * 8;                                                 \
    _Pragma("unroll") for (int v = 0; v < 32; ++v)                                        \
        sa[v * 128 + t] = (uint16_t)(pa[v / 2] >> (16 * (v % 2)));                        \
    _Pragma("unroll") for (int v = 0; v < 2; ++v)                                         \
        sb[v * 128 + t] = (uint16_t)(pb[v / 2] >> (16 * (v % 2)));                        \
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \
    __syncthreads();                                                                      \
    const uint64_t da = descriptor(shared_address(sa), AL, AS, AM);                       \
    const uint64_t db = descriptor(shared_address(sb), 128, 256, 0);                      \
    uint32_t r0 = pc[0], r1 = pc[1], r2 = pc[2], r3 = pc[3];                              \
    uint32_t r4 = pc[4], r5 = pc[5], r6 = pc[6], r7 = pc[7];                              \
    asm volatile("wgmma.fence.sync.aligned;\n"                                            \
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, " #TA ", 0;\n"       \
                 "wgmma.commit_group.sync.aligned;\n"                                     \
                 "wgmma.wait_group.sync.aligned 0;"                                       \
                 : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3),                                \
                   "+r"(r4), "+r"(r5), "+r"(r6), "+r"(r7)                                 \
                 : "l"(da), "l"(db) : "memory");                                          \
    pd[0] = r0; pd[1] = r1; pd[2] = r2; pd[3] = r3;                                       \
    pd[4] = r4; pd[5] = r5; pd[6] = r6; pd[7] = r7;                                       \
}

// A K-major (64 rows m of K = 16): 64B swizzle (rows of 64 bytes, the next 8 rows SBO = 512
// on: 4 KiB) and 128B (rows of 128 bytes, SBO = 1024: 8 KiB). A M-major (m contiguous): no
// swizzle (8 k x 16-byte core matrices of 8 m, the next 8 m SBO = 128 on, the next 8 k
// LBO = 1024 on) and 128B (rows of 64 m, 8 k rows per pattern, the next 8 k SBO = 1024 on).
SSA(probe_ssa_sw64, 2, 16, 512, 0)
SSA(probe_ssa_sw128, 1, 16, 1024, 0)
SSA(probe_ssa_mn_none, 0, 1024, 128, 1)
SSA(probe_ssa_mn_sw128, 1, 16, 1024, 1)
