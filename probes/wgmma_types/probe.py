"""wgmma-<type>: the accumulator and register-A fragments, and B's shared-memory byte map,
of Hopper's warpgroup MMA for each element type beside f16 -> f32 (probes/wgmma_f16):
bf16 -> f32, f16 -> f16, tf32 -> f32 (k8), e4m3 and e5m2 -> f32 (k32, QGMMA) and s8 -> s32
(k32, IGMMA), each m64n8 with A from registers and B K-major from a 1 KiB tile without
swizzle (LBO 128, SBO 256), measured with the lane-id kit over one warpgroup. One probe per
type (a probe's kernels share their buffers, so one codec each), one kernel source.
Version 2 of the fp8 probes plans the lane-id waves within QGMMA's exact sums (below 2**14);
version 1 planned them for f32's 2**24, and the unit dropped the ids' low bits.
wgmma-tf32-f32-sw128, wgmma-e4m3-f32-sw128, wgmma-s8-s32-sw128: the same with B under the
128-byte swizzle (wgmma_types_sw128.cu), where a 16-byte chunk holds 4 or 16 elements.
wgmma-bf16-f32-sw64/-sw128, wgmma-f16-f16-sw64/-sw128 (issue 39 item 5): the 16-bit types
with B under the 64- and 128-byte swizzles (wgmma_types_b16_sw64.cu, wgmma_types_b16_sw128.cu,
both types' kernels in each), a 16-byte chunk holding 8 elements.
"""

from functools import partial
from pathlib import Path

from probelab.formats import BF16, E4M3, E5M2, F16, F32, S8, S32, TF32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.kits.tiles import Tile, grid_facts
from probelab.probe import Evidence, Rendered, load_sibling

HERE = Path(__file__).parent
sources = load_sibling(HERE / "sources.py")  # the two kernel sources, rendered from the shapes
# QGMMA into f32 keeps sums exact only below 2**14 (13 fraction bits beside the leading one:
# the version-1 fp8 datasets, 20261201T172932Z and ...172940Z, whose lane-id decode was
# refused), so version 2 plans its ids and C digits within that
FP8_SUMS = 2**14
# kind -> (codec, K, A values, SASS form, the tile's store mnemonic)
KINDS = {"bf16-f32": (Codec(BF16, F32), 16, 8, r"HGMMA\.64x8x16\.F32\.BF16", r"STS\.U16"),
         "f16-f16": (Codec(F16, F16), 16, 8, r"HGMMA\.64x8x16\.F16", r"STS\.U16"),
         "tf32-f32": (Codec(TF32, F32), 8, 4, r"HGMMA\.64x8x8\.F32\.TF32", r"STS"),
         "e4m3-f32": (Codec(E4M3, F32, sums_exact=FP8_SUMS), 32, 16,
                      r"QGMMA\.64x8x32\.F32\.E4M3\.E4M3", r"STS\.U8"),
         "e5m2-f32": (Codec(E5M2, F32, sums_exact=FP8_SUMS), 32, 16,
                      r"QGMMA\.64x8x32\.F32\.E5M2\.E5M2", r"STS\.U8"),
         "s8-s32": (Codec(S8, S32), 32, 16, r"IGMMA\.64x8x32\.S8\.S8", r"STS\.U8")}
SEEDS = {kind: 0x5EED_2017 + 0x100 * i for i, kind in enumerate(KINDS)}


SWIZZLED = ("tf32-f32", "e4m3-f32", "s8-s32")  # also measured with B 128B-swizzled
# B's tile as wgmma_types.cu builds it (K-major, unswizzled: LBO 128, SBO 256), and as
# wgmma_types_sw128.cu does (the grid carries the swizzled one's fields)
PLAIN, SW128 = Tile("b", 0, 128, 256), Tile("b", 128, 16, 1024)
# the 16-bit types under the 64- and 128-byte swizzles: swizzle width -> B's tile as
# wgmma_types_b16_sw<W>.cu builds it (8 rows of W bytes per pattern, SBO 8 W, LBO unused)
WIDE16 = ("bf16-f32", "f16-f16")
SW16 = {64: Tile("b", 64, 16, 512), 128: SW128}


def shape(kind: str, swizzled: bool = False) -> Shape:
    codec, k, a_values, _, _ = KINDS[kind]
    tile = 1024 * 8 // codec.operand.bits  # B's 1 KiB tile in elements
    name = kind.replace("-", "_") + ("_sw128" if swizzled else "")
    return Shape(f"{name}_m64n8k{k}", 64, 8, k, 128, a_values=a_values,
                 b_values=tile // 128, d_values=4, codec=codec,
                 smem=(SW128 if swizzled else PLAIN,),
                 facts=grid_facts((SW128,), ("swizzle", "lbo", "sbo")) if swizzled else ())


def evidence(kind: str):
    _, _, _, form, store = KINDS[kind]

    def of(s: Shape) -> Evidence:
        """Exactly one warpgroup MMA of this form and no other matrix instruction; A (four
        registers) and C straight from their loads; B placed by the tile's stores, then the
        async-proxy fence, the warpgroup's arrive before the MMA and its wait after."""
        return Evidence(form, forbidden=(rf"(?!{form}$)[HIQ]GMMA.*", r"[HID]MMA.*"),
                        operands=("unmodified", "any", "unmodified"),
                        spans=(4, 1, s.registers("d")),
                        companions=((rf"{store}", "before", s.b_values),
                                    (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                    (r"WARPGROUP\.ARRIVE", "before", 1),
                                    (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))
    return of


def probe(kind: str, swizzled: bool = False) -> LaneIdProbe:
    b = "from a 128B-swizzled shared tile" if swizzled else "from shared memory"
    return LaneIdProbe(
        id=f"wgmma-{kind}" + ("-sw128" if swizzled else ""),
        version="2" if KINDS[kind][0].sums_exact and not swizzled else "1",
        summary=f"{kind.replace('-', ' -> ')} wgmma m64n8, A from registers, B {b}: "
                "(thread, value) <-> (row, col), B's tile bytes -> (k, n)",
        targets=("sm_90*",), vendor=sources.VENDOR,
        source=Rendered(HERE / ("wgmma_types_sw128.cu" if swizzled else "wgmma_types.cu"),
                        partial(sources.render, swizzled, tuple(
                            shape(k, swizzled) for k in (SWIZZLED if swizzled else KINDS)))),
        shapes=(shape(kind, swizzled),), evidence=evidence(kind),
        seed=SEEDS[kind] + (0x10 if swizzled else 0), block=128, options={"arch": "sm_90a"},
        excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
                  "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"})


def shape16(kind: str, width: int) -> Shape:
    """m64n8k16 of a 16-bit kind with B under the `width`-byte swizzle."""
    codec, k, a_values, _, _ = KINDS[kind]
    tile = SW16[width]
    return Shape(f"{kind.replace('-', '_')}_sw{width}_m64n8k{k}", 64, 8, k, 128,
                 a_values=a_values, b_values=1024 * 8 // codec.operand.bits // 128, d_values=4,
                 codec=codec, smem=(tile,), facts=grid_facts((tile,), ("swizzle", "lbo", "sbo")))


def probe16(kind: str, width: int) -> LaneIdProbe:
    return LaneIdProbe(
        id=f"wgmma-{kind}-sw{width}", version="1",
        summary=f"{kind.replace('-', ' -> ')} wgmma m64n8k16, A from registers, B from a "
                f"{width}B-swizzled shared tile: (thread, value) <-> (row, col), B's tile "
                "bytes -> (k, n)",
        targets=("sm_90*",), vendor=sources.VENDOR,
        source=Rendered(HERE / f"wgmma_types_b16_sw{width}.cu",
                        partial(sources.render_b16, SW16[width],
                                tuple(shape16(k, width) for k in WIDE16))),
        shapes=(shape16(kind, width),), evidence=evidence(kind),
        seed=SEEDS[kind] + width // 2, block=128, options={"arch": "sm_90a"},
        excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
                  "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"})


PROBES = (*(probe(kind) for kind in KINDS), *(probe(kind, swizzled=True) for kind in SWIZZLED),
          *(probe16(kind, width) for kind in WIDE16 for width in SW16))
