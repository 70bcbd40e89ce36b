// tma-swizzle-b8/-b16/-b32: one tensor-map load (cp.async.bulk.tensor.2d, sm_90) per map,
// each into its own 1 KiB-aligned 2 KiB region of shared memory, which every thread has
// poisoned first; then shared memory copied out word by word, as it lies. The maps (their
// element type, box and swizzle mode) are the launch's: the code is the same for all.
// origin: [box x in elements, box y in rows, the poison word, the bytes the boxes carry].

#define MAPS 12
#define REGION 2048

struct __align__(64) TensorMap { unsigned long long opaque[16]; };  // CUtensorMap's size

#define MAP(i) const __grid_constant__ TensorMap m##i

extern "C" __global__ void __launch_bounds__(128) probe_tma_swizzle(
    const unsigned* origin, const unsigned* lo, const unsigned* hi, unsigned* out,
    MAP(0), MAP(1), MAP(2), MAP(3), MAP(4), MAP(5), MAP(6), MAP(7), MAP(8), MAP(9), MAP(10),
    MAP(11)) {
    __shared__ __align__(1024) unsigned tile[MAPS * REGION / 4];
    __shared__ __align__(8) unsigned long long bar;
    const TensorMap* maps[MAPS] = {&m0, &m1, &m2, &m3, &m4, &m5, &m6, &m7, &m8, &m9, &m10,
                                   &m11};
    const unsigned x = origin[0], y = origin[1], poison = origin[2], bytes = origin[3];
    const unsigned smem = (unsigned)__cvta_generic_to_shared(tile);
    const unsigned barrier = (unsigned)__cvta_generic_to_shared(&bar);
    for (unsigned i = threadIdx.x; i < MAPS * REGION / 4; i += blockDim.x) tile[i] = poison;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // the poison (generic proxy) before the loads' writes (async proxy)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     ::"r"(barrier), "r"(bytes) : "memory");
#pragma unroll
        for (int i = 0; i < MAPS; ++i)
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx"
                         "::bytes [%0], [%1, {%2, %3}], [%4];"
                         ::"r"(smem + i * REGION), "l"(maps[i]), "r"(x), "r"(y), "r"(barrier)
                         : "memory");
    }
    unsigned done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;"
                     " selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(barrier) : "memory");
    for (unsigned i = threadIdx.x; i < MAPS * REGION / 4; i += blockDim.x) out[i] = tile[i];
}
