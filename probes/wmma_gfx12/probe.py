"""wmma-gfx12: which lane and which value of its registers holds each element of A, B and
C/D in RDNA4's (gfx1200, gfx1201) dense wave32 WMMA, measured with the lane-id kit's waves
and no layout assumed (probelab.kits.lane_id). Nine probes share the folder and its kernel
source, one per element codec (the kernels of one probe share its buffers):
wmma-f16-f32, wmma-bf16-f32, wmma-f16-f16, wmma-iu8, wmma-iu4 (16x16x16 and 16x16x32) and
the four fp8/bf8 pairs into f32. The users' question: which lane holds which output
(ROCm/legacy-rocm-build#6025).
"""

from pathlib import Path

from probelab.formats import BF16, E4M3, E5M2, F16, F32, S4, S8, S32, Element
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
# (probe id, seed, codec, shapes as (instruction, K, A/B values per lane)); D: 8 per lane
FP8 = {"fp8": E4M3, "bf8": E5M2}  # gfx12's are the OCP formats (AMD's calculator, RDNA4)
FAMILIES = (
    ("wmma-f16-f32", 0x5EED_1201, Codec(F16, F32), (("f32_16x16x16_f16", 16, 8),)),
    ("wmma-bf16-f32", 0x5EED_1202, Codec(BF16, F32), (("f32_16x16x16_bf16", 16, 8),)),
    ("wmma-f16-f16", 0x5EED_1203, Codec(F16, F16), (("f16_16x16x16_f16", 16, 8),)),
    ("wmma-iu8", 0x5EED_1204, Codec(S8, S32), (("i32_16x16x16_iu8", 16, 8),)),
    ("wmma-iu4", 0x5EED_1205, Codec(S4, S32), (("i32_16x16x16_iu4", 16, 8),
                                               ("i32_16x16x32_iu4", 32, 16))),
    *((f"wmma-{a}-{b}", 0x5EED_1206 + n, Codec(FP8[a], F32, FP8[b]),
       ((f"f32_16x16x16_{a}_{b}", 16, 8),))
      for n, (a, b) in enumerate((("fp8", "fp8"), ("fp8", "bf8"), ("bf8", "fp8"),
                                  ("bf8", "bf8")))),
)
# every gfx12 dense and sparse matrix form: what a kernel must not use instead
OTHERS = r"v_wmma_.*", r"v_swmmac_.*"


def shapes(codec: Codec, rows: tuple[tuple[str, int, int], ...]) -> tuple[Shape, ...]:
    return tuple(Shape(f"wmma_{form}", 16, 16, k, 32, a_values=v, b_values=v, d_values=8,
                       codec=codec) for form, k, v in rows)


def evidence(shape: Shape) -> Evidence:
    """Exactly one WMMA of this form and no other matrix instruction, with exactly the
    modifiers the kernel asks for (integer forms: both operands signed, neg_lo:[1,1,0]; no
    clamp); A, B and C each straight from full-width global loads."""
    form = shape.name.removeprefix("wmma_")
    signed = ("neg_lo:[1,1,0]",) if shape.codec.accumulator.kind == "signed" else ()
    return Evidence(rf"v_wmma_{form}", forbidden=(rf"v_wmma_(?!{form}$).*", OTHERS[1]),
                    operands=("unmodified",) * 3, modifiers=signed)


def probe(id: str, seed: int, codec: Codec, rows: tuple[tuple[str, int, int], ...]
          ) -> LaneIdProbe:
    b: Element = codec.element("b")
    return LaneIdProbe(
        id=id, version="1",
        summary=f"gfx12 wave32 v_wmma {codec.operand.name} x {b.name} -> "
                f"{codec.accumulator.name}: (lane, value) <-> (row, col)",
        targets=("gfx1200", "gfx1201"), vendor="amd", source=HERE / "wmma_gfx12.hip",
        shapes=shapes(codec, rows), evidence=evidence, seed=seed,
        excluded={"gfx11*": "RDNA3's WMMA is another instruction set (16 values per lane, "
                            "A and B replicated across the half-waves): not these kernels",
                  "gfx1250": "gfx1250's WMMA forms are other instructions",
                  "gfx1*": "RDNA4 (gfx1200, gfx1201) only", "gfx9*": "CDNA has MFMA"})


PROBES = tuple(probe(*family) for family in FAMILIES)
