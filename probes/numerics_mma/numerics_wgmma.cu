// numerics-wgmma probes, NVIDIA sm_90a: one block = one warpgroup = one wave = one
// wgmma.mma_async m64n8k{16,8,32} into f32, A from registers, B from a shared tile, fenced,
// committed and waited for. Thread t of wave w reads its four A registers from a[w][t][0..4)
// and its four accumulators from c[w][t][0..4), and writes D to d[w][t][0..4). Operands come
// straight from global memory so the evidence gate sees the loads. params[0] = waves.
typedef unsigned int uint32_t;  // NVRTC has no standard headers

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    uint32_t r;
    asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }"
                 : "=r"(r) : "l"(p));
    return r;
}

// Thread t stores word b[w][t] at word t of B's 512-byte shared tile (K-major, no swizzle:
// 16-byte core rows of one n, LBO 128 to the next 16 bytes of k, SBO 256; the host fills
// only the first 256 bytes), then the MMA reads A from its four registers and B through the
// descriptor. IMM: the immediates after scale-d (scale-a, scale-b, and for 16-bit types trans-b)
#define WGMMA_F32(NAME, SHAPE, TYPES, IMM)                                               \
extern "C" __global__ void __launch_bounds__(128) NAME(                                 \
        const uint32_t* params, const uint32_t* a, const uint32_t* b, const uint32_t* c,\
        uint32_t* d) {                                                                  \
    __shared__ __align__(1024) uint32_t sb[128];                                        \
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                     \
    if (w >= params[0]) return;                                                         \
    const uint32_t* pa = a + (w * 128 + t) * 4;                                         \
    const uint32_t* pc = c + (w * 128 + t) * 4;                                         \
    uint32_t* pd = d + (w * 128 + t) * 4;                                               \
    sb[t] = b[w * 128 + t];                                                             \
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                        \
    __syncthreads();                                                                    \
    const uint32_t s = shared_address(sb);                                              \
    /* descriptor: start >> 4, LBO 128 >> 4 at bit 16, SBO 256 >> 4 at bit 32 */       \
    const unsigned long long db = (unsigned long long)((s & 0x3FFFF) >> 4) |            \
                                  (8ull << 16) | (16ull << 32);                         \
    uint32_t r0 = pc[0], r1 = pc[1], r2 = pc[2], r3 = pc[3];                            \
    asm volatile("wgmma.fence.sync.aligned;\n"                                          \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " "                \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1" IMM ";\n"                 \
                 "wgmma.commit_group.sync.aligned;\n"                                   \
                 "wgmma.wait_group.sync.aligned 0;"                                     \
                 : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3)                               \
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \
    pd[0] = r0; pd[1] = r1; pd[2] = r2; pd[3] = r3;                                     \
}

WGMMA_F32(probe_wgmma_f16_f32_m64n8k16, "m64n8k16", "f16.f16", ", 1, 1, 0")
WGMMA_F32(probe_wgmma_bf16_f32_m64n8k16, "m64n8k16", "bf16.bf16", ", 1, 1, 0")
WGMMA_F32(probe_wgmma_tf32_f32_m64n8k8, "m64n8k8", "tf32.tf32", ", 1, 1")
WGMMA_F32(probe_wgmma_e4m3_f32_m64n8k32, "m64n8k32", "e4m3.e4m3", ", 1, 1")
WGMMA_F32(probe_wgmma_e5m2_f32_m64n8k32, "m64n8k32", "e5m2.e5m2", ", 1, 1")
