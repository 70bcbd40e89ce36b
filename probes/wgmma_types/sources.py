"""The two wgmma-<type> kernel sources, rendered from the probes' shapes (neither is kept as
a file): the kit's preamble (probelab.kits.lane_id.wgmma_source), each source's opening
comment and B tile descriptor, the TILE and WGMMA4 macros they share (the text, padding
included, as the archive's sources hold it, so the bytes a build compiles are the
archive's: tests/test_rendered_sources.py), f16 -> f16's kernel written out (two
accumulator registers), and one WGMMA4 instance per other kernel, from its shape: the
tile's element type, the PTX form and the immediates after scale-d. `render_b16` renders the
16-bit types' sources under the 64- and 128-byte swizzles (issue 39 item 5) from the same
parts, each descriptor written from its tile."""

from collections.abc import Sequence

from probelab.kits.lane_id.engine import Shape
from probelab.kits.lane_id.wgmma_source import SHARED_ADDRESS, head
from probelab.kits.tiles import Tile

VENDOR = "nvidia"  # whose compilers build these kernels (their uint32_t line)
NOTE = "// immediates after scale-d: scale-a, scale-b, and for 16-bit types trans-b\n"

PLAIN_PROSE = """\
wgmma-types probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave = one
wgmma.mma_async m64n8k{8,16,32} with A from registers and B K-major from a 1 KiB shared
tile without swizzle (core matrices of 8 rows x 16 bytes, the next 16 bytes of k LBO =
128 on, SBO = 256), fenced, committed and waited for, one kernel per element type.
Thread t of wave w reads its four A registers a[w][t][0..4), its B values b[w][t][0..SB)
and its accumulators c[w][t][0..SC), and writes D to d[w][t][0..SC). B's value v of
thread t is element v * 128 + t of the tile (byte (v * 128 + t) * element size), so the
lane-id decode names tile bytes. params[0] = number of waves."""

SW128_PROSE = """\
wgmma-<type>-sw128 probes, NVIDIA sm_90a: one warpgroup (128 threads, one block) = one wave
= one wgmma.mma_async m64n8k{8,32} with A from registers and B K-major from a 1 KiB shared
tile under the 128-byte swizzle (8 rows n of 128 bytes, SBO 1024, LBO unused), fenced,
committed and waited for, one kernel per element type (4-byte tf32, 1-byte fp8 and s8:
a 16-byte chunk holds 4 or 16 of them).
Thread t of wave w reads its four A registers a[w][t][0..4), its B values b[w][t][0..SB)
and its accumulators c[w][t][0..SC), and writes D to d[w][t][0..SC). B's value v of
thread t is element v * 128 + t of the tile (byte (v * 128 + t) * element size), so the
lane-id decode names tile bytes. params[0] = number of waves."""

PLAIN_DESCRIPTOR = """\
// PTX's matrix descriptor, no swizzle: start address, LBO 128, SBO 256 (each >> 4)
__device__ __forceinline__ uint64_t descriptor(uint32_t address) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)(128 >> 4) << 16) |
           ((uint64_t)(256 >> 4) << 32);
}
"""

SW128_DESCRIPTOR = """\
// PTX's matrix descriptor, 128-byte swizzle (mode 1 in bits 62-63): start address, LBO 16
// (unused), SBO 1024 (each >> 4)
__device__ __forceinline__ uint64_t descriptor(uint32_t address) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)(16 >> 4) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
"""

FORMS = """\
// B's 1 KiB tile from this thread's values, ELEM bytes each (registers of 32 / ELEM bits)
#define TILE(T, PER)                                                                      \\
    __shared__ __align__(1024) T sb[1024 / sizeof(T)];                                    \\
    const uint32_t w = blockIdx.x, t = threadIdx.x;                                       \\
    if (w >= params[0]) return;                                                           \\
    const uint32_t* pa = a + (w * 128 + t) * 4;                                           \\
    const uint32_t* pb = b + (w * 128 + t) * (1024 / sizeof(T) / 128 / (PER));            \\
    _Pragma("unroll") for (int v = 0; v < 1024 / (int)sizeof(T) / 128; ++v)               \\
        sb[v * 128 + t] = (T)(pb[v / (PER)] >> (8 * sizeof(T) * (v % (PER))));            \\
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                          \\
    __syncthreads();                                                                      \\
    const uint64_t db = descriptor(shared_address(sb));

// four accumulator registers (f32, s32) or two (.f16x2)
#define WGMMA4(NAME, T, PER, FORM, TAIL)                                                  \\
extern "C" __global__ void __launch_bounds__(128) NAME(ARGS) {                           \\
    TILE(T, PER)                                                                          \\
    const uint32_t* pc = c + (w * 128 + t) * 4;                                           \\
    uint32_t* pd = d + (w * 128 + t) * 4;                                                 \\
    uint32_t r0 = pc[0], r1 = pc[1], r2 = pc[2], r3 = pc[3];                              \\
    asm volatile("wgmma.fence.sync.aligned;\\n"                                            \\
                 "wgmma.mma_async.sync.aligned." FORM " {%0, %1, %2, %3}, "               \\
                 "{%4, %5, %6, %7}, %8, 1" TAIL ";\\n"                                     \\
                 "wgmma.commit_group.sync.aligned;\\n"                                     \\
                 "wgmma.wait_group.sync.aligned 0;"                                       \\
                 : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3)                                 \\
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");   \\
    pd[0] = r0; pd[1] = r1; pd[2] = r2; pd[3] = r3;                                       \\
}
"""

F16_F16 = """\
extern "C" __global__ void __launch_bounds__(128) probe_f16_f16_m64n8k16(ARGS) {
    TILE(uint16_t, 2)
    const uint32_t* pc = c + (w * 128 + t) * 2;
    uint32_t* pd = d + (w * 128 + t) * 2;
    uint32_t r0 = pc[0], r1 = pc[1];
    asm volatile("wgmma.fence.sync.aligned;\\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, "
                 "{%2, %3, %4, %5}, %6, 1, 1, 1, 0;\\n"
                 "wgmma.commit_group.sync.aligned;\\n"
                 "wgmma.wait_group.sync.aligned 0;"
                 : "+r"(r0), "+r"(r1)
                 : "r"(pa[0]), "r"(pa[1]), "r"(pa[2]), "r"(pa[3]), "l"(db) : "memory");
    pd[0] = r0; pd[1] = r1;
}
"""


def _instance(s: Shape) -> str:
    a, acc = s.codec.operand, s.codec.accumulator
    tail = "" if a.kind == "signed" else ", 1, 1" + (", 0" if a.bits == 16 else "")
    return (f"WGMMA4(probe_{s.name}, uint{a.bits}_t, {32 // a.bits}, "
            f'"m{s.M}n{s.N}k{s.K}.{acc.name}.{a.name}.{a.name}", "{tail}")\n')


def render(swizzled: bool, shapes: Sequence[Shape]) -> str:
    """The source of the probes' `shapes` with B unswizzled or 128B-swizzled."""
    prose, descriptor = (SW128_PROSE, SW128_DESCRIPTOR) if swizzled else (PLAIN_PROSE,
                                                                          PLAIN_DESCRIPTOR)
    pairs = [s for s in shapes if s.registers("d") == 2]  # written out: F16_F16
    if [s.name for s in pairs] not in ([], ["f16_f16_m64n8k16"]):
        raise ValueError(f"no kernel text for {[s.name for s in pairs]}")
    return (head(VENDOR, prose, (16, 8)) + "\n" + SHARED_ADDRESS + "\n" + descriptor + "\n" + FORMS
            + "\n" + (F16_F16 + "\n" if pairs else "") + NOTE
            + "".join(_instance(s) for s in shapes if s not in pairs))


B16_PROSE = """\
wgmma-<type>-sw{W} probes for the 16-bit types, NVIDIA sm_90a: one warpgroup (128 threads,
one block) = one wave = one wgmma.mma_async m64n8k16 (bf16 -> f32, f16 -> f16) with A from
registers and B K-major from a 1 KiB shared tile under the {W}-byte swizzle (rows n of {W}
bytes, 8 rows per pattern, SBO {SBO}, LBO unused), fenced, committed and waited for, one
kernel per element type (a 16-byte chunk holds 8 of them).
Thread t of wave w reads its four A registers a[w][t][0..4), its B values b[w][t][0..SB)
and its accumulators c[w][t][0..SC), and writes D to d[w][t][0..SC). B's value v of
thread t is element v * 128 + t of the tile (byte (v * 128 + t) * element size), so the
lane-id decode names tile bytes. params[0] = number of waves."""


def swizzled_descriptor(tile: Tile) -> str:
    """PTX's matrix descriptor for one K-major swizzled tile, its fields as constants."""
    return (f"// PTX's matrix descriptor, {tile.swizzle}-byte swizzle (mode {tile.mode} in bits "
            f"62-63): start address, LBO\n// {tile.lbo} (unused), SBO {tile.sbo} (each >> 4)\n"
            "__device__ __forceinline__ uint64_t descriptor(uint32_t address) {\n"
            "    return (uint64_t)((address & 0x3FFFF) >> 4) | "
            f"((uint64_t)({tile.lbo} >> 4) << 16) |\n"
            f"           ((uint64_t)({tile.sbo} >> 4) << 32) | ((uint64_t){tile.mode} << 62);\n"
            "}\n")


def render_b16(tile: Tile, shapes: Sequence[Shape]) -> str:
    """The source of the 16-bit probes' `shapes` with B under `tile`'s swizzle: f16 -> f16's
    kernel written out (two accumulator registers), WGMMA4 instances for the others."""
    if any(s.smem != (tile,) for s in shapes):
        raise ValueError(f"every shape reads B through {tile}")
    pairs = [s for s in shapes if s.registers("d") == 2]
    return (head(VENDOR, B16_PROSE.format(W=tile.swizzle, SBO=tile.sbo), (16,)) + "\n"
            + SHARED_ADDRESS + "\n" + swizzled_descriptor(tile) + "\n" + FORMS + "\n"
            + "".join(F16_F16.replace("probe_f16_f16_m64n8k16", f"probe_{s.name}") + "\n"
                      for s in pairs) + NOTE
            + "".join(_instance(s) for s in shapes if s not in pairs))
