// wgmma-f16-ss probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
// wgmma.mma_async m64n8k16 f16 x f16 -> f32 with A and B both from shared memory, fenced,
// committed and waited for. Thread t of wave w reads its values from a[w][t][0..4),
// b[w][t][0..2) (two f16 per register, value i in bits [16 (i % 2), +16) of register
// i / 2), c[w][t][0..4), and writes its four f32 accumulators to d[w][t][0..4).
// A's tile is 2 KiB (1,024 f16), B's 1 KiB (512), each 1 KiB aligned; value v of thread t
// is element v * 128 + t of its tile (byte 2 (v * 128 + t)), so the lane-id decode names
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

// A (mode, LBO, SBO) and B (mode, LBO, SBO, start bytes past its tile), both K-major
#define SS(NAME, AM, AL, AS, BM, BL, BS, BSTART)                                         \
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \
    __shared__ __align__(1024) uint16_t sa[1024];                                         \
    __shared__ __align__(1024) uint16_t sb[512];                                          \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \
    if (w >= params[0]) return;                                                           \
    const uint32_t* pa = a + (w * 128 + t) * 4;                                           \
    const uint32_t* pb = b + (w * 128 + t) * 2;                                           \
    const uint32_t* pc = c + (w * 128 + t) * 4;                                           \
    uint32_t* pd = d + (w * 128 + t) * 4;                                                 \
    _Pragma("unroll") for (int v = 0; v < 8; ++v)                                         \
        sa[v * 128 + t] = (uint16_t)(pa[v / 2] >> (16 * (v % 2)));                        \
    _Pragma("unroll") for (int v = 0; v < 4; ++v)                                         \
        sb[v * 128 + t] = (uint16_t)(pb[v / 2] >> (16 * (v % 2)));                        \
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \
    __syncthreads();                                                                      \
    const uint64_t da = descriptor(shared_address(sa), AL, AS, AM);                       \
    const uint64_t db = descriptor(shared_address(sb) + (BSTART), BL, BS, BM);            \
    uint32_t r0 = pc[0], r1 = pc[1], r2 = pc[2], r3 = pc[3];                              \
    asm volatile("wgmma.fence.sync.aligned;\n"                                            \
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "                     \
                 "{%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"                             \
                 "wgmma.commit_group.sync.aligned;\n"                                     \
                 "wgmma.wait_group.sync.aligned 0;"                                       \
                 : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3) : "l"(da), "l"(db) : "memory"); \
    pd[0] = r0; pd[1] = r1; pd[2] = r2; pd[3] = r3;                                       \
}

// A: 64 rows of K = 16 (32 bytes): no swizzle (core matrices of 8 rows x 16 bytes, the next
// 8 k LBO = 128 on, the next 8 rows SBO = 256 on) or 32B swizzle (rows of 32 bytes, the next
// 8 rows SBO = 256 on), each 2 KiB. B: 8 rows (n) likewise, or swizzled by 64 bytes started
// 512 bytes in (address bit 9 set: where the 64- and 128-byte patterns part), or by 128.
SS(probe_ss_none, 0, 128, 256, 0, 128, 256, 0)
SS(probe_ss_sw32, 3, 16, 256, 3, 16, 256, 0)
SS(probe_ss_sw64_hi, 3, 16, 256, 2, 16, 512, 512)
SS(probe_ss_sw128, 3, 16, 256, 1, 16, 1024, 0)
