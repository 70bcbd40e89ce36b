// wgmma-f16-mn probe, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
// wgmma.mma_async m64n64k16 f16 x f16 -> f32, A from registers, B N-major (imm-trans-b = 1:
// n contiguous) from a 2 KiB shared tile (1 KiB aligned), fenced, committed and waited for. Thread t of wave w reads
// its four A registers a[w][t][0..4), its eight B values b[w][t][0..4) (two f16 per
// register, value i in bits [16 (i % 2), +16) of register i / 2) and its 32 f32
// accumulators c[w][t][0..32), and writes D to d[w][t][0..32). B's value v of thread t is
// element v * 128 + t of the tile (byte 2 (v * 128 + t)). params[0] = number of waves.
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

#define MN(NAME, MODE, LBO, SBO)                                                         \
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \
    __shared__ __align__(1024) uint16_t sb[1024];                                          \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \
    if (w >= params[0]) return;                                                           \
    const uint32_t* pa = a + (w * 128 + t) * 4;                                           \
    const uint32_t* pb = b + (w * 128 + t) * 4;                                           \
    const uint32_t* pc = c + (w * 128 + t) * 32;                                          \
    uint32_t* pd = d + (w * 128 + t) * 32;                                                \
    _Pragma("unroll") for (int v = 0; v < 8; ++v)                                         \
        sb[v * 128 + t] = (uint16_t)(pb[v / 2] >> (16 * (v % 2)));                        \
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \
    __syncthreads();                                                                      \
    const uint64_t db = descriptor(shared_address(sb), LBO, SBO, MODE);                   \
    uint32_t r[32];                                                                       \
    _Pragma("unroll") for (int i = 0; i < 32; ++i) r[i] = pc[i];                          \
    asm volatile("wgmma.fence.sync.aligned;\n"                                            \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                                                             \
                 "{%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"                               \
                 "wgmma.commit_group.sync.aligned;\n"                                     \
                 "wgmma.wait_group.sync.aligned 0;"                                       \
                 : "+r"(r[0]), "+r"(r[1]), "+r"(r[2]), "+r"(r[3]), "+r"(r[4]), "+r"(r[5]), "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17]), "+r"(r[18]), "+r"(r[19]), "+r"(r[20]), "+r"(r[21]), "+r"(r[22]), "+r"(r[23]), "+r"(r[24]), "+r"(r[25]), "+r"(r[26]), "+r"(r[27]), "+r"(r[28]), "+r"(r[29]), "+r"(r[30]), "+r"(r[31])                                                                  \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \
    _Pragma("unroll") for (int i = 0; i < 32; ++i) pd[i] = r[i];                          \
}

// B N-major: 16 k rows of 64 n. No swizzle: core matrices of 8 k x 16 bytes (8 n each), the
// next 8 n SBO = 128 on, the next 8 k LBO = 1024 on. Swizzled by 32/64/128 bytes: rows of
// 16/32/64 n, the next such block of n LBO on (256, 512; unused at 128B), the next 8 k
// SBO = 1024 on.
MN(probe_mn_none, 0, 1024, 128)
MN(probe_mn_sw32, 3, 256, 1024)
MN(probe_mn_sw64, 2, 512, 1024)
MN(probe_mn_sw128, 1, 16, 1024)
