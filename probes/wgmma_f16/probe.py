"""wgmma-f16-rs and wgmma-f16-ss. wgmma-f16-rs: which thread and which value of its
registers holds each element of A and of the accumulator D, and which byte of the
shared-memory tile feeds each element of B, in Hopper's warpgroup MMA
`wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16` with A from registers (SASS HGMMA on
sm_90a), for B K-major under each descriptor swizzle mode (none, 32B, 64B, 128B, and 128B
started 32 bytes into its rows), measured with the lane-id kit's waves over one warpgroup
(128 threads) and no layout assumed.

B's slots are the elements of its 1 KiB tile (value v of thread t is element v * 128 + t, at
byte 2 (v * 128 + t)): the tile holds 512 of them, the instruction reads 128, and which ones,
as which (k, n), is the descriptor's layout, measured label-free like any lane map.

wgmma-f16-ss: m64n8k16 with A and B both from shared tiles (A 2 KiB, B 1 KiB), K-major: A
unswizzled or 32B-swizzled (its 64 rows fill 2 KiB), B unswizzled, 32B, 64B started 512
bytes in (address bit 9 set, where the 64- and 128-byte patterns part), 128B.

wgmma-f16-n64: m64n64k16 with A from registers and 64 rows of B (2 KiB, none and 32B): the
32-register accumulator and B's eight row groups (SBO).

wgmma-f16-mn: the same with B N-major (imm-trans-b = 1, n contiguous, SASS `.tnspB`) under
no swizzle, 32B, 64B and 128B: where the descriptor's LBO and SBO go when B is transposed.

wgmma-bf16-mn (issue 39 item 5): wgmma-f16-mn's four kernels with bf16 -> f32
(`HGMMA.64x64x16.F32.BF16`), the one other type PTX gives imm-trans-b (tf32 and the 8-bit
types have no transpose immediate): whether the transposed reads carry over to bf16.

wgmma-f16-bo (issue 39 item 5): m64n8k16 with B from a 2 KiB tile under the 128- or 64-byte
swizzle, the descriptor started 384 (128) bytes in, off the pattern's 1024- (512-) byte
boundary, and its base offset field (bits 49-51) PTX's (start >> 7) & 7, 0, or set with the
pattern on its boundary: what the field does to the swizzle.

wgmma-f16-ssa: m64n16k16 with A from an 8 KiB shared tile, K-major under 64B and 128B swizzle
and M-major (imm-trans-a = 1, SASS `.tnspA`) unswizzled and 128B; B K-major unswizzled.
"""

from functools import partial
from pathlib import Path

from probelab.formats import BF16, F16, F32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.kits.tiles import Tile, grid_facts
from probelab.probe import Evidence, Rendered, load_sibling

HERE = Path(__file__).parent
sources = load_sibling(HERE / "sources.py")  # each kernel source, rendered from the shapes
F16_F32 = Codec(F16, F32)
BF16_F32 = Codec(BF16, F32)


def shapes(kernels: dict[str, tuple[Tile, ...]], n: int, values: tuple[int, int, int],
           fields: tuple[str, ...], codec: Codec = F16_F32) -> tuple[Shape, ...]:
    """One m64n{n}k16 shape per kernel, its tiles (as the kernel source builds them) and their
    descriptor fields `fields` as the grid's per-kernel coordinates; values = A, B, D per
    lane."""
    a, b, d = values
    return tuple(Shape(name, 64, n, 16, 128, a_values=a, b_values=b, d_values=d,
                       codec=codec, smem=tiles, facts=grid_facts(tiles, fields))
                 for name, tiles in kernels.items())


B_FIELDS = ("swizzle", "lbo", "sbo", "start")  # B's descriptor; bytes (swizzle 0: none)
B_PLAIN = Tile("b", 0, 128, 256)  # K-major, unswizzled: 16-byte core rows, LBO 128, SBO 256
# kernel -> its B tile as wgmma_f16.cu builds it: swizzle, LBO, SBO, start
KERNELS = {"rs_none": (B_PLAIN,), "rs_sw32": (Tile("b", 32, 16, 256),),
           "rs_sw64": (Tile("b", 64, 16, 512),), "rs_sw128": (Tile("b", 128, 16, 1024),),
           "rs_sw128_k1": (Tile("b", 128, 16, 1024, start=32),)}
SHAPES = shapes(KERNELS, 8, (8, 4, 4), B_FIELDS)


def evidence(shape: Shape) -> Evidence:
    """Exactly one HGMMA of the shape into f32 and no other matrix instruction; A from four
    registers straight from their loads (RS) or with B through the one descriptor operand
    (SS), C straight from its loads; each tile placed by its 16-bit stores, then the
    async-proxy fence, the warpgroup's arrive before the MMA and its wait after."""
    form = rf"HGMMA\.{shape.M}x{shape.N}x{shape.K}\.F32" + (
        r"\.BF16" if shape.codec.operand is BF16 else "")
    rs = "a" not in shape.tiles
    stores = shape.b_values + (0 if rs else shape.a_values)
    return Evidence(form,
                    forbidden=(rf"HGMMA\.(?!{form[7:]}$).*",
                               r"[HIQ]GMMA\.SP.*", r"IGMMA.*", r"QGMMA.*", r"HMMA.*", r"IMMA.*"),
                    operands=(("unmodified",) if rs else ()) + ("any", "unmodified"),
                    spans=((shape.registers("a"),) if rs else ()) + (1, shape.registers("d")),
                    companions=((r"STS\.U16", "before", stores),
                                (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                (r"WARPGROUP\.ARRIVE", "before", 1),
                                (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))


# kernel -> A's and B's tiles as wgmma_f16_ss.cu builds them: (swizzle, LBO, SBO) each, and
# B's start
A_SW32 = Tile("a", 32, 16, 256)
SS_KERNELS = {"ss_none": (Tile("a", 0, 128, 256), B_PLAIN),
              "ss_sw32": (A_SW32, Tile("b", 32, 16, 256)),
              "ss_sw64_hi": (A_SW32, Tile("b", 64, 16, 512, start=512)),
              "ss_sw128": (A_SW32, Tile("b", 128, 16, 1024))}
SS_SHAPES = shapes(SS_KERNELS, 8, (8, 4, 4),
                   ("a_swizzle", "a_lbo", "a_sbo", "b_swizzle", "b_lbo", "b_sbo", "b_start"))
# kernel -> B's tile as wgmma_f16_n64.cu builds it
N64_SHAPES = shapes({"n64_none": (B_PLAIN,), "n64_sw32": (Tile("b", 32, 16, 256),)}, 64,
                    (8, 8, 32), B_FIELDS)
# kernel -> B's tile as wgmma_f16_mn.cu builds it, B N-major (imm-trans-b = 1)
MN_SHAPES = shapes({"mn_none": (Tile("b", 0, 1024, 128, trans=True),),
                    "mn_sw32": (Tile("b", 32, 256, 1024, trans=True),),
                    "mn_sw64": (Tile("b", 64, 512, 1024, trans=True),),
                    "mn_sw128": (Tile("b", 128, 16, 1024, trans=True),)}, 64,
                   (8, 8, 32), B_FIELDS)
# kernel -> B's tile as wgmma_f16_bo.cu builds it (2 KiB): swizzle, LBO, SBO, start, base offset
BO_SHAPES = shapes({"bo_sw128_s384_b3": (Tile("b", 128, 16, 1024, 384, 3),),
                    "bo_sw128_s384_b0": (Tile("b", 128, 16, 1024, 384, 0),),
                    "bo_sw128_s0_b3": (Tile("b", 128, 16, 1024, 0, 3),),
                    "bo_sw64_s128_b1": (Tile("b", 64, 16, 512, 128, 1),)}, 8, (8, 8, 4),
                   (*B_FIELDS, "base_offset"))
# the same kernels with bf16 (wgmma_bf16_mn.cu)
BF16_MN_SHAPES = shapes({f"bf16_{name}": tiles for name, tiles in (
    (s.name, s.smem) for s in MN_SHAPES)}, 64, (8, 8, 32), B_FIELDS, BF16_F32)
# kernel -> A's tile as wgmma_f16_ssa.cu builds it, M-major where trans (imm-trans-a); B
# K-major, unswizzled
SSA_SHAPES = shapes({"ssa_sw64": (Tile("a", 64, 16, 512), B_PLAIN),
                     "ssa_sw128": (Tile("a", 128, 16, 1024), B_PLAIN),
                     "ssa_mn_none": (Tile("a", 0, 1024, 128, trans=True), B_PLAIN),
                     "ssa_mn_sw128": (Tile("a", 128, 16, 1024, trans=True), B_PLAIN)},
                    16, (32, 2, 8), ("a_swizzle", "a_lbo", "a_sbo", "a_trans"))


def probe(pid: str, summary: str, source: str, kernel_shapes: tuple[Shape, ...], seed: int,
          version: str = "1", compact: bool = False) -> LaneIdProbe:
    """compact: the kit's compact storage form, for the probes whose datasets would
    otherwise declare over the 512 MB a new dataset may (README: version 2)."""
    return LaneIdProbe(
        id=pid, version=version, summary=summary, targets=("sm_90*",), vendor=sources.VENDOR,
        source=Rendered(HERE / source, partial(sources.render, source, kernel_shapes)),
        shapes=kernel_shapes, evidence=evidence, seed=seed, block=128,
        options={"arch": "sm_90a"}, compact=compact,
        excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
                  "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"})


PROBES = (
    probe("wgmma-f16-rs", "f16 -> f32 wgmma m64n8k16, A from registers, B from shared memory "
          "under each swizzle mode: (thread, value) <-> (row, col), B's tile bytes -> (k, n)",
          "wgmma_f16.cu", SHAPES, 0x5EED_1817),
    probe("wgmma-f16-ss", "f16 -> f32 wgmma m64n8k16, A and B from shared memory under each "
          "swizzle mode: tile bytes -> (m, k) and (k, n), (thread, value) <-> (row, col) of D",
          "wgmma_f16_ss.cu", SS_SHAPES, 0x5EED_1917),
    probe("wgmma-f16-n64", "f16 -> f32 wgmma m64n64k16, A from registers, B from a 2 KiB "
          "shared tile (none, 32B): (thread, value) <-> (row, col) of 32 accumulators, B's "
          "bytes -> (k, n)", "wgmma_f16_n64.cu", N64_SHAPES, 0x5EED_1A17),
    probe("wgmma-f16-mn", "f16 -> f32 wgmma m64n64k16, A from registers, B N-major "
          "(transposed) from a 2 KiB shared tile under each swizzle mode: B's bytes -> (k, n)",
          "wgmma_f16_mn.cu", MN_SHAPES, 0x5EED_1B17, version="2", compact=True),
    probe("wgmma-f16-ssa", "f16 -> f32 wgmma m64n16k16, A from an 8 KiB shared tile under the "
          "wide swizzles and M-major: A's bytes -> (m, k)", "wgmma_f16_ssa.cu", SSA_SHAPES,
          0x5EED_1C17, version="2", compact=True),
    probe("wgmma-f16-bo", "f16 -> f32 wgmma m64n8k16, A from registers, B from a swizzled "
          "shared tile started off its pattern's boundary, under each base offset: B's tile "
          "bytes -> (k, n)", "wgmma_f16_bo.cu", BO_SHAPES, 0x5EED_1E17),
    probe("wgmma-bf16-mn", "bf16 -> f32 wgmma m64n64k16, A from registers, B N-major "
          "(transposed) from a 2 KiB shared tile under each swizzle mode: B's bytes -> (k, n)",
          "wgmma_bf16_mn.cu", BF16_MN_SHAPES, 0x5EED_1D17, compact=True),
)
