// mma-sp probes, NVIDIA side: one warp = one wave = one sparse mma.sync (mma.sp).
// Lane l of wave w reads its registers from a[w][l][0..4), b[w][l][0..4), c[w][l][0..4)
// and e[w][l] (its metadata word), runs the instruction and writes d[w][l][0..4). Buffers
// use the widest fragment's strides for every kernel; a kernel with two A and two B
// registers never reads the other two (the decode checks that they drive nothing).
// Operands come straight from global memory so the evidence gate can see the loads.
// params[0] = number of waves. The selector and the metadata form are part of the
// instruction text: one kernel per (type, shape, selector, form).
typedef unsigned int uint32_t;  // NVRTC has no standard headers

#define ARGS const uint32_t* params, const uint32_t* a, const uint32_t* b,  \
             const uint32_t* c, const uint32_t* e, uint32_t* d

#define WAVE_PROLOGUE                                                        \
    const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;         \
    const uint32_t lane = threadIdx.x % 32;                                  \
    if (w >= params[0]) return;                                              \
    const uint32_t* pa = a + (w * 32 + lane) * 4;                            \
    const uint32_t* pb = b + (w * 32 + lane) * 4;                            \
    const uint32_t* pc = c + (w * 32 + lane) * 4;                            \
    const uint32_t meta = e[w * 32 + lane];                                  \
    uint32_t* pd = d + (w * 32 + lane) * 4;

// C and D as s32 ("r") or f32 ("f") registers; a float's bits are loaded and stored as is.
#define ACC_r uint32_t
#define ACC_f float
#define OPERANDS_2 "{%4,%5}, {%6,%7}, {%8,%9,%10,%11}, %12, "
#define OPERANDS_4 "{%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, "
#define INPUTS_2(T) "r"(pa[0]), "r"(pa[1]), "r"(pb[0]), "r"(pb[1]),                       \
    #T(((const ACC_##T*)pc)[0]), #T(((const ACC_##T*)pc)[1]),                              \
    #T(((const ACC_##T*)pc)[2]), #T(((const ACC_##T*)pc)[3]), "r"(meta)
#define INPUTS_4(T) "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]),                       \
    "r"(pb[0]), "r"(pb[1]), "r"(pb[2]), "r"(pb[3]),                                        \
    #T(((const ACC_##T*)pc)[0]), #T(((const ACC_##T*)pc)[1]),                              \
    #T(((const ACC_##T*)pc)[2]), #T(((const ACC_##T*)pc)[3]), "r"(meta)

// One kernel: REGS A and B registers (2 or 4), accumulator constraint T, selector SEL.
#define SPARSE(NAME, INSN, REGS, T, SEL)                                     \
extern "C" __global__ void probe_##NAME(ARGS) {                              \
    WAVE_PROLOGUE                                                            \
    ACC_##T d0, d1, d2, d3;                                                  \
    asm volatile(INSN " {%0,%1,%2,%3}, " OPERANDS_##REGS #SEL ";"            \
                 : "=" #T(d0), "=" #T(d1), "=" #T(d2), "=" #T(d3)            \
                 : INPUTS_##REGS(T));                                        \
    ACC_##T* out = (ACC_##T*)pd;                                             \
    out[0] = d0; out[1] = d1; out[2] = d2; out[3] = d3;                      \
}

#define SP "mma.sp.sync.aligned."
#define OM "mma.sp::ordered_metadata.sync.aligned."
#define F16_K16 "m16n8k16.row.col.f32.f16.f16.f32"
#define F16_K32 "m16n8k32.row.col.f32.f16.f16.f32"
#define S8_K32 "m16n8k32.row.col.s32.s8.s8.s32"
#define S8_K64 "m16n8k64.row.col.s32.s8.s8.s32"
#define S4_K64 "m16n8k64.row.col.s32.s4.s4.s32"
#define S4_K128 "m16n8k128.row.col.s32.s4.s4.s32"

// f16 (the reference case): m16n8k16 selectors 0-3, m16n8k32 selectors 0-1.
SPARSE(f16_k16_s0_sp, SP F16_K16, 2, f, 0)
SPARSE(f16_k16_s1_sp, SP F16_K16, 2, f, 1)
SPARSE(f16_k16_s2_sp, SP F16_K16, 2, f, 2)
SPARSE(f16_k16_s3_sp, SP F16_K16, 2, f, 3)
SPARSE(f16_k32_s0_sp, SP F16_K32, 4, f, 0)
SPARSE(f16_k32_s1_sp, SP F16_K32, 4, f, 1)
SPARSE(f16_k16_s0_om, OM F16_K16, 2, f, 0)
SPARSE(f16_k16_s1_om, OM F16_K16, 2, f, 1)
SPARSE(f16_k16_s2_om, OM F16_K16, 2, f, 2)
SPARSE(f16_k16_s3_om, OM F16_K16, 2, f, 3)
SPARSE(f16_k32_s0_om, OM F16_K32, 4, f, 0)
SPARSE(f16_k32_s1_om, OM F16_K32, 4, f, 1)

// s8: m16n8k32 selectors 0-1, m16n8k64 selector 0.
SPARSE(s8_k32_s0_sp, SP S8_K32, 2, r, 0)
SPARSE(s8_k32_s1_sp, SP S8_K32, 2, r, 1)
SPARSE(s8_k64_s0_sp, SP S8_K64, 4, r, 0)
SPARSE(s8_k32_s0_om, OM S8_K32, 2, r, 0)
SPARSE(s8_k32_s1_om, OM S8_K32, 2, r, 1)
SPARSE(s8_k64_s0_om, OM S8_K64, 4, r, 0)

// s4: m16n8k64 selectors 0-1, m16n8k128 selector 0 (lowered by ptxas on sm_90).
SPARSE(s4_k64_s0_sp, SP S4_K64, 2, r, 0)
SPARSE(s4_k64_s1_sp, SP S4_K64, 2, r, 1)
SPARSE(s4_k128_s0_sp, SP S4_K128, 4, r, 0)
SPARSE(s4_k64_s0_om, OM S4_K64, 2, r, 0)
SPARSE(s4_k64_s1_om, OM S4_K64, 2, r, 1)
SPARSE(s4_k128_s0_om, OM S4_K128, 4, r, 0)

// Both selector families of one type in one form: selectors 0-3 on the smaller shape
// (2 A/B registers), 0-1 on the larger (4), f32 C and D.
#define FOUR_TWO(NA, NB, IA, IB, FORM, TAG)                                        \
    SPARSE(NA##_s0_##TAG, FORM IA, 2, f, 0) SPARSE(NA##_s1_##TAG, FORM IA, 2, f, 1)   \
    SPARSE(NA##_s2_##TAG, FORM IA, 2, f, 2) SPARSE(NA##_s3_##TAG, FORM IA, 2, f, 3)   \
    SPARSE(NB##_s0_##TAG, FORM IB, 4, f, 0) SPARSE(NB##_s1_##TAG, FORM IB, 4, f, 1)

// bf16 (as f16): m16n8k16 selectors 0-3, m16n8k32 selectors 0-1.
#define BF16_K16 "m16n8k16.row.col.f32.bf16.bf16.f32"
#define BF16_K32 "m16n8k32.row.col.f32.bf16.bf16.f32"
FOUR_TWO(bf16_k16, bf16_k32, BF16_K16, BF16_K32, SP, sp)
FOUR_TWO(bf16_k16, bf16_k32, BF16_K16, BF16_K32, OM, om)

// tf32 (1:2, one element per register): m16n8k8 selectors 0-3, m16n8k16 selectors 0-1.
#define TF32_K8 "m16n8k8.row.col.f32.tf32.tf32.f32"
#define TF32_K16 "m16n8k16.row.col.f32.tf32.tf32.f32"
FOUR_TWO(tf32_k8, tf32_k16, TF32_K8, TF32_K16, SP, sp)
FOUR_TWO(tf32_k8, tf32_k16, TF32_K8, TF32_K16, OM, om)

// fp8 into f32 (sm_89+): m16n8k64 selector 0 only, both forms; f16 C/D and .kind::f8f6f4
// need sm_120a.
#define FP8(T, I) SPARSE(T##_k64_s0_sp, SP I, 4, f, 0) SPARSE(T##_k64_s0_om, OM I, 4, f, 0)
FP8(e4m3, "m16n8k64.row.col.f32.e4m3.e4m3.f32")
FP8(e5m2, "m16n8k64.row.col.f32.e5m2.e5m2.f32")
