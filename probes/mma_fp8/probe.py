"""mma-fp8: which lane and which value of its registers holds each element of A, B and C/D
in NVIDIA's dense fp8 mma.sync m16n8k32 (e4m3 and e5m2, into f32 and f16) on sm_90,
measured with the lane-id kit's waves and no layout assumed. Four probes share the folder
and its kernel source, one per codec.

sm_90 has no fp8 mma.sync unit: ptxas unpacks A and B to f16 (F2FP.F16.E4M3/E5M2.UNPACK_B),
issues two f16 HMMA m16n8k16 whose C is zero, and adds C after them (FADD for f32, HADD2 for
f16 accumulators). The evidence gate proves exactly that realisation from the disassembly
and records it (`lowered`), as the sparse s4 probe does. Version 2: the gate also requires
the unpacking before the last HMMA and C's adds after it (`companions`), one per D register;
version 1 counted only the two HMMA.
"""

from pathlib import Path

from probelab.formats import E4M3, E5M2, F16, F32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.mma_sync import ARGS, comment, typed_macro, typedef, wave
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # whose compilers build the kernels (their uint32_t line)
KINDS = {"e4m3-f32": (E4M3, F32), "e5m2-f32": (E5M2, F32), "e4m3-f16": (E4M3, F16),
         "e5m2-f16": (E5M2, F16)}
SEEDS = {"e4m3-f32": 0x5EED_0817, "e5m2-f32": 0x5EED_0917, "e4m3-f16": 0x5EED_0A17,
         "e5m2-f16": 0x5EED_0B17}
# the kernel source's opening comment
PROSE = """\
mma-fp8 probes, NVIDIA side: one warp = one wave = one dense fp8 mma.sync m16n8k32.
Lane l of wave w reads its fragment registers from a[w][l][0..4), b[w][l][0..2),
c[w][l][0..SC) and writes d[w][l][0..SC): four fp8 elements per A/B register (element i in
bits [8 (i % 4), +8) of register i / 4), one f32 (SC = 4) or two f16 (SC = 2) per C/D
register. Operands come straight from global memory (the evidence gate traces them).
params[0] = number of waves."""


def shape(kind: str) -> Shape:
    element, acc = KINDS[kind]
    return Shape(f"{kind.replace('-', '_')}_m16n8k32", 16, 8, 32, 32, a_values=16,
                 b_values=8, d_values=4, codec=Codec(element, acc))


def source() -> str:
    """mma_fp8.cu: one macro per accumulator (F32, F16: C and D strided SC = its registers)
    over the element types, one instance per kernel."""
    first = {acc: shape(kind) for kind, (_, acc) in KINDS.items()}  # a shape per macro
    macros = "\n".join(typed_macro(
        acc.name.upper(), s, f'mma.sync.aligned.m16n8k32.row.col.{acc.name}." TYPES ".{acc.name}',
        f"WAVE({s.registers('d')})", s.registers("d")) for acc, s in first.items())
    return (comment(PROSE) + typedef(VENDOR) + "\n" + wave(4, 2, "(SC)", "(SC)") + "\n" + ARGS
            + "\n" + macros + "\n" + "".join(f'{acc.name.upper()}(probe_{shape(kind).name}, '
                                       f'"{e.name}.{e.name}")\n'
                                       for kind, (e, acc) in KINDS.items()))


def evidence(kind: str):
    element, acc = KINDS[kind]
    suffix, add = (r"\.F32", "FADD") if acc is F32 else (r"\.F16", "HADD2")

    def of(shape: Shape) -> Evidence:
        """Two f16 HMMA m16n8k16 (the lowering), no other MMA; their A and B from the
        kernel's loads through the unpacking, C recorded (zero, then the first's result)."""
        return Evidence(
            rf"HMMA\.16816{suffix}", count=2,
            lowered=f"sm_90 has no fp8 mma.sync unit: ptxas unpacks A and B to f16 "
                    f"(F2FP.F16.{element.name.upper()}.UNPACK_B), issues two f16 HMMA "
                    f"m16n8k16, the first from a zero C and the second accumulating on it, "
                    f"and adds C after them ({add})",
            forbidden=(rf"HMMA\.(?!16816{suffix}$).*", r"IMMA.*", r"DMMA.*", r"QGMMA.*",
                       r"HGMMA.*"),
            operands=("from_memory", "from_memory", "any"),
            spans=(4, 2, shape.registers("d")),
            # every A and B register unpacked to two f16x2 ones before the MMA; C joins only
            # after it, one add per D register
            companions=((rf"F2FP\.F16\.{element.name.upper()}\.UNPACK_B", "before",
                         2 * (shape.registers("a") + shape.registers("b"))),
                        (add, "after", shape.registers("d"))))
    return of


def probe(kind: str) -> LaneIdProbe:
    element, acc = KINDS[kind]
    return LaneIdProbe(
        id=f"mma-{kind}", version="2",
        summary=f"{element.name} -> {acc.name} mma.sync m16n8k32 (lowered on sm_90): "
                "(lane, value) <-> (row, col)",
        targets=("sm_90*",), vendor=VENDOR, source=Rendered(HERE / "mma_fp8.cu", source),
        shapes=(shape(kind),),
        evidence=evidence(kind), seed=SEEDS[kind], block=128,
        excluded={"sm_[0-7]*": "fp8 mma.sync needs sm_89; measured and sealed for sm_90",
                  "sm_8*": "measured and sealed for sm_90 (sm_89 has a native fp8 unit)",
                  "sm_1??*": "measured and sealed for sm_90"})


PROBES = tuple(probe(kind) for kind in KINDS)
