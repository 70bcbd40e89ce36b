// wgmma-f16 probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
// wgmma.mma_async m64n8k16 f16 x f16 -> f32, fenced, committed and waited for.
// Thread t of wave w reads its values from a[w][t][0..SA), b[w][t][0..SB), c[w][t][0..4)
// (two f16 per register, value i in bits [16 (i % 2), +16) of register i / 2) and writes its
// four f32 accumulators to d[w][t][0..4).
// An operand read from shared memory is placed there by slot: value v of thread t is the
// f16 at element v * 128 + t of the operand's tile (byte 2 (v * 128 + t)), so the lane-id
// decode names tile elements, and a hypothesis maps a byte offset to (row, k) through the
// descriptor's layout. Each kernel's descriptor fields are constants of its source.
// params[0] = number of waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers
typedef unsigned long long uint64_t;
typedef unsigned short uint16_t;

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b, \
             const uint32_t* c, uint32_t* d

#define WAVE(SA, SB)                                                          \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                           \
    if (w >= params[0]) return;                                               \
    const uint32_t* pa = a + (w * 128 + t) * (SA);                            \
    const uint32_t* pb = b + (w * 128 + t) * (SB);                            \
    const uint32_t* pc = c + (w * 128 + t) * 4;                               \
    uint32_t* pd = d + (w * 128 + t) * 4;

// the values of one thread into its slots of a shared tile, 16 bits each
#define PLACE(TILE, P, VALUES)                                                \
    _Pragma("unroll") for (int v = 0; v < (VALUES); ++v)                      \
        TILE[v * 128 + t] = (uint16_t)(P[v / 2] >> (16 * (v % 2)));

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

// written by ordinary stores, read by the async proxy: fence, then the barrier
#define PUBLISH() asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); __syncthreads();

#define ACC uint32_t d0 = pc[0], d1 = pc[1], d2 = pc[2], d3 = pc[3];
#define STORE pd[0] = d0; pd[1] = d1; pd[2] = d2; pd[3] = d3;

// A from registers (four f16x2), B from a shared tile of 512 f16 (1 KiB, 1 KiB aligned)
#define RS(NAME, MODE, LBO, SBO, START)                                                  \
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \
    __shared__ __align__(1024) uint16_t sb[512];                                          \
    WAVE(4, 2)                                                                            \
    PLACE(sb, pb, 4)                                                                      \
    PUBLISH()                                                                             \
    const uint64_t db = descriptor(shared_address(sb) + (START), LBO, SBO, MODE);         \
    ACC                                                                                   \
    asm volatile("wgmma.fence.sync.aligned;\n"                                            \
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, "   \
                 "{%4, %5, %6, %7}, %8, 1, 1, 1, 0;\n"                                    \
                 "wgmma.commit_group.sync.aligned;\n"                                     \
                 "wgmma.wait_group.sync.aligned 0;"                                       \
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)                                 \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \
    STORE                                                                                 \
}

// B K-major, 8 rows (n) of the tile: no swizzle (core matrices of 8 rows x 16 bytes, the
// next 8 k LBO = 128 bytes on), then 32-, 64- and 128-byte swizzled rows (SBO: 8 rows on,
// unused at N = 8), and the 128-byte mode started 32 bytes into its rows (the next k block)
RS(probe_rs_none, 0, 128, 256, 0)
RS(probe_rs_sw32, 3, 16, 256, 0)
RS(probe_rs_sw64, 2, 16, 512, 0)
RS(probe_rs_sw128, 1, 16, 1024, 0)
RS(probe_rs_sw128_k1, 1, 16, 1024, 32)
