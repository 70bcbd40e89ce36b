// matrix-move probes, NVIDIA side: one warp = one wave = one ldmatrix, stmatrix or movmatrix
// on 16-bit elements (.b16). Each warp of a block owns a shared tile of ROWS rows of 16
// bytes; lane l of wave w points its address at row address[w][l] of it.
// - load (ldmatrix): the tile is filled from tile[w] (ROWS x 4 words), then lane l writes
//   its destination registers to out[w][l][0..4), 0 beyond .num.
// - store (stmatrix): the tile is zeroed, lane l's source registers come from held[w][l],
//   then the whole tile is copied to out[w] (ROWS x 4 words).
// - move (movmatrix): lane l's register from held[w][l], its result to out[w][l].
// params[0] = number of waves. The block is 128 threads (4 warps, 4 tiles).
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define ROWS 64
#define WARPS 4

#define WAVE                                                                 \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return; /* whole warps: a wave is one warp */

#define TILE                                                                 \
    __shared__ uint32_t tiles[WARPS][ROWS * 4];                              \
    uint32_t* tile = tiles[threadIdx.x / 32];                                \
    uint32_t base;                                                           \
    asm("{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }"      \
        : "=r"(base) : "l"(tile));                                           \
    const uint32_t addr = base + address[w * 32 + lane] * 16;

#define LOAD_ARGS const uint32_t* params, const uint32_t* address, const uint32_t* src, \
                  uint32_t* out
#define STORE_ARGS const uint32_t* params, const uint32_t* address, const uint32_t* held, \
                   uint32_t* out

#define FILL                                                                 \
    for (uint32_t i = lane; i < ROWS * 4; i += 32) tile[i] = src[w * ROWS * 4 + i]; \
    __syncwarp();

#define LD1(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(LOAD_ARGS) {                                 \
    WAVE TILE FILL                                                           \
    uint32_t r0;                                                             \
    asm volatile("ldmatrix.sync.aligned." SHAPE ".shared.b16 {%0}, [%1];"    \
                 : "=r"(r0) : "r"(addr) : "memory");                         \
    uint32_t* o = out + (w * 32 + lane) * 4;                                 \
    o[0] = r0; o[1] = 0; o[2] = 0; o[3] = 0;                                 \
}

#define LD2(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(LOAD_ARGS) {                                 \
    WAVE TILE FILL                                                           \
    uint32_t r0, r1;                                                         \
    asm volatile("ldmatrix.sync.aligned." SHAPE ".shared.b16 {%0, %1}, [%2];" \
                 : "=r"(r0), "=r"(r1) : "r"(addr) : "memory");               \
    uint32_t* o = out + (w * 32 + lane) * 4;                                 \
    o[0] = r0; o[1] = r1; o[2] = 0; o[3] = 0;                                \
}

#define LD4(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(LOAD_ARGS) {                                 \
    WAVE TILE FILL                                                           \
    uint32_t r0, r1, r2, r3;                                                 \
    asm volatile("ldmatrix.sync.aligned." SHAPE ".shared.b16 {%0, %1, %2, %3}, [%4];" \
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory"); \
    uint32_t* o = out + (w * 32 + lane) * 4;                                 \
    o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;                              \
}

LD1(probe_ldmatrix_x1, "m8n8.x1")
LD2(probe_ldmatrix_x2, "m8n8.x2")
LD4(probe_ldmatrix_x4, "m8n8.x4")
LD1(probe_ldmatrix_x1_trans, "m8n8.x1.trans")
LD2(probe_ldmatrix_x2_trans, "m8n8.x2.trans")
LD4(probe_ldmatrix_x4_trans, "m8n8.x4.trans")

#define ZERO                                                                 \
    for (uint32_t i = lane; i < ROWS * 4; i += 32) tile[i] = 0;              \
    __syncwarp();                                                            \
    const uint32_t* h = held + (w * 32 + lane) * 4;

#define DUMP                                                                 \
    __syncwarp();                                                            \
    for (uint32_t i = lane; i < ROWS * 4; i += 32) out[w * ROWS * 4 + i] = tile[i];

#define ST1(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(STORE_ARGS) {                                \
    WAVE TILE ZERO                                                           \
    asm volatile("stmatrix.sync.aligned." SHAPE ".shared.b16 [%0], {%1};"    \
                 :: "r"(addr), "r"(h[0]) : "memory");                        \
    DUMP                                                                     \
}

#define ST2(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(STORE_ARGS) {                                \
    WAVE TILE ZERO                                                           \
    asm volatile("stmatrix.sync.aligned." SHAPE ".shared.b16 [%0], {%1, %2};" \
                 :: "r"(addr), "r"(h[0]), "r"(h[1]) : "memory");             \
    DUMP                                                                     \
}

#define ST4(NAME, SHAPE)                                                     \
extern "C" __global__ void NAME(STORE_ARGS) {                                \
    WAVE TILE ZERO                                                           \
    asm volatile("stmatrix.sync.aligned." SHAPE ".shared.b16 [%0], {%1, %2, %3, %4};" \
                 :: "r"(addr), "r"(h[0]), "r"(h[1]), "r"(h[2]), "r"(h[3]) : "memory"); \
    DUMP                                                                     \
}

ST1(probe_stmatrix_x1, "m8n8.x1")
ST2(probe_stmatrix_x2, "m8n8.x2")
ST4(probe_stmatrix_x4, "m8n8.x4")
ST1(probe_stmatrix_x1_trans, "m8n8.x1.trans")
ST2(probe_stmatrix_x2_trans, "m8n8.x2.trans")
ST4(probe_stmatrix_x4_trans, "m8n8.x4.trans")

extern "C" __global__ void probe_movmatrix_trans(const uint32_t* params, const uint32_t* held,
                                                 uint32_t* out) {
    WAVE
    uint32_t d;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(held[w * 32 + lane]));
    out[w * 32 + lane] = d;
}
