"""mfma-cdna: which lane and which value of its registers holds each element of A, B and
C/D in CDNA's dense wave64 MFMA beyond f64 (mfma-f64's folder), measured with the lane-id
kit's waves and no layout assumed (probelab.kits.lane_id). Five probes share the folder and
its kernel source, one per element codec and so per buffer layout: mfma-f16 (16x16x16 and
32x32x8), mfma-bf16 (16x16x16, the bf16_1k form), mfma-i8 (16x16x32) and the fp8 x fp8
16x16x32 form twice, because its encoding differs by target: CDNA3's fp8 is AMD's FNUZ
variant (mfma-fp8-gfx942), CDNA4's the OCP one (mfma-fp8-gfx950).
"""

from pathlib import Path

from probelab.formats import BF16, E4M3, E4M3FNUZ, F16, F32, S8, S32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
# kernel -> (M, N, K, A/B values per lane, D values per lane, the mnemonic on every target:
# gfx90a spells the first three without the underscore, bf16 as bf16_1k)
FORMS = {
    "mfma_f32_16x16x16_f16": (16, 16, 16, 4, 4, r"f32_16x16x16_?f16"),
    "mfma_f32_32x32x8_f16": (32, 32, 8, 4, 16, r"f32_32x32x8_?f16"),
    "mfma_f32_16x16x16_bf16": (16, 16, 16, 4, 4, r"f32_16x16x16(_bf16|bf16_1k)"),
    "mfma_i32_16x16x32_i8": (16, 16, 32, 8, 4, r"i32_16x16x32_i8"),
    "mfma_f32_16x16x32_fp8_fp8": (16, 16, 32, 8, 4, r"f32_16x16x32_fp8_fp8"),
}
CDNA = ("gfx90a", "gfx942", "gfx950")
# (probe id, seed, codec, kernels, targets)
FAMILIES = (
    ("mfma-f16", 0x5EED_0901, Codec(F16, F32),
     ("mfma_f32_16x16x16_f16", "mfma_f32_32x32x8_f16"), CDNA),
    ("mfma-bf16", 0x5EED_0902, Codec(BF16, F32), ("mfma_f32_16x16x16_bf16",), CDNA),
    ("mfma-i8", 0x5EED_0903, Codec(S8, S32), ("mfma_i32_16x16x32_i8",), CDNA[1:]),
    ("mfma-fp8-gfx942", 0x5EED_0904, Codec(E4M3FNUZ, F32), ("mfma_f32_16x16x32_fp8_fp8",),
     ("gfx942",)),
    ("mfma-fp8-gfx950", 0x5EED_0905, Codec(E4M3, F32), ("mfma_f32_16x16x32_fp8_fp8",),
     ("gfx950",)),
)


def shape(kernel: str, codec: Codec) -> Shape:
    m, n, k, ab, d, _ = FORMS[kernel]
    return Shape(kernel, m, n, k, 64, a_values=ab, b_values=ab, d_values=d, codec=codec)


def evidence(shape: Shape) -> Evidence:
    """Exactly one MFMA of this form (as the target spells it), with no modifiers (cbsz,
    abid, blgp all 0), and no other matrix instruction; A, B and C each straight from
    full-width global loads."""
    form = FORMS[shape.name][-1]
    return Evidence(rf"v_mfma_{form}", forbidden=(rf"v_mfma_(?!({form})$).*", r"v_smfmac_.*"),
                    operands=("unmodified",) * 3, modifiers=())


def probe(id: str, seed: int, codec: Codec, kernels: tuple[str, ...],
          targets: tuple[str, ...]) -> LaneIdProbe:
    others = sorted(set(CDNA) - set(targets))
    return LaneIdProbe(
        id=id, version="1",
        summary=f"CDNA wave64 v_mfma {codec.operand.name} -> {codec.accumulator.name} "
                f"({', '.join(kernels)}): (lane, value) <-> (row, col)",
        targets=targets, vendor="amd", source=HERE / "mfma_cdna.hip",
        shapes=tuple(shape(k, codec) for k in kernels), evidence=evidence, seed=seed,
        excluded={**{t: f"{id} is for {', '.join(targets)}: {why}" for t in others
                     for why in [_why(id, t)]},
                  "gfx908": "gfx908 (CDNA1) is not a target: the source refuses to build there",
                  "gfx9*": "CDNA2-4 only (gfx90a, gfx942, gfx950)", "gfx1*": "RDNA has no MFMA"})


def _why(id: str, target: str) -> str:
    if id == "mfma-i8":
        return "gfx90a has v_mfma_i32_16x16x16i8 (4 bytes per lane), not this 16x16x32 form"
    if target == "gfx90a":
        return "gfx90a has no fp8 MFMA"
    return ("the fp8 encoding differs by target (CDNA3 FNUZ, CDNA4 OCP): each target has "
            "its own probe")


PROBES = tuple(probe(*family) for family in FAMILIES)
