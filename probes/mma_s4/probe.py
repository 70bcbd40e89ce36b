"""mma-s4: which lane and which value of its registers holds each element of A, B and C/D
in NVIDIA's dense 4-bit integer mma.sync into s32 on sm_90, at m8n8k32, m16n8k32 and
m16n8k64, measured with the lane-id kit's waves and no layout assumed. Four probes share
the folder and its kernel source, one per signedness pair (s4 x s4, u4 x u4, s4 x u4,
u4 x s4).

sm_90 has no 4-bit integer mma.sync unit: ptxas (NVRTC 13) unpacks A and B to 8 bits and
issues two 8-bit IMMA of half the K (same signedness, u4 as u8) from a zero C, then adds
the kernel's C (IADD3). The evidence gate proves the two IMMA and A and B reaching them from
their loads, and records the lowering (`lowered`). Version 2: version 1's gate traced
operand spans twice too wide and so could not require A and B from memory. Version 3 of
the mixed pairs: their random GEMM waves give the signed operand negative values (before,
both stayed within [0, 4]), so the host reference also checks each operand's signedness.
"""

from pathlib import Path

from probelab.kits.lane_id.engine import Shape
from probelab.kits.lane_id.mma_sync import integer_probes, integer_types
from probelab.probe import Evidence

TYPES = integer_types(4)
SEEDS = {"s4s4": 0x5EED_0C17, "u4u4": 0x5EED_0D17, "s4u4": 0x5EED_0E17, "u4s4": 0x5EED_0F17}
# (name, M, N, K, A values, B values, D values) per lane
SHAPES = (("m8n8k32", 8, 8, 32, 8, 8, 2), ("m16n8k32", 16, 8, 32, 16, 8, 4),
          ("m16n8k64", 16, 8, 64, 32, 16, 4))


def evidence(kind: str):
    a, b = (t.name.upper().replace("4", "8") for t in TYPES[kind])

    def of(shape: Shape) -> Evidence:
        """Two 8-bit IMMA of half the K (the lowering) and no other MMA; their A and B from
        the kernel's loads through the unpacking (LOP3/SHF), C recorded (zero: ptxas adds
        the kernel's C after them, IADD3)."""
        form = rf"IMMA\.{shape.M}{shape.N}{shape.K // 2}\.{a}\.{b}"
        return Evidence(
            form, count=2,
            lowered=f"sm_90 has no 4-bit integer mma.sync unit: ptxas (NVRTC 13) unpacks A "
                    f"and B to 8 bits and issues two {a} x {b} IMMA "
                    f"m{shape.M}n{shape.N}k{shape.K // 2} from a zero C, then adds C (IADD3)",
            forbidden=(rf"IMMA\.(?!{shape.M}{shape.N}{shape.K // 2}\.{a}\.{b}$).*",
                       r"IMMA.*\.[SU]4.*", r"HMMA.*", r"DMMA.*"),
            operands=("from_memory", "from_memory", "any"),
            spans=(shape.registers("a"), shape.registers("b"), shape.registers("d")))
    return of


PROBES = integer_probes(
    4, Path(__file__).parent, SHAPES, SEEDS, ("2", "3"), evidence,
    "m8n8k32, m16n8k32, m16n8k64 (lowered on sm_90)",
    {"sm_[0-7]*": "measured and sealed for sm_90 (4-bit mma.sync needs sm_75+)",
     "sm_8*": "measured and sealed for sm_90 (sm_8x has a native 4-bit unit)",
     "sm_1??*": "measured and sealed for sm_90"},
    "nvidia", ("sm_90*",))
