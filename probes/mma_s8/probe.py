"""mma-s8: which lane and which value of its registers holds each element of A, B and C/D
in NVIDIA's dense 8-bit integer mma.sync into s32 (SASS IMMA) on sm_90, at m8n8k16,
m16n8k16 and m16n8k32, measured with the lane-id kit's waves and no layout assumed. Four
probes share the folder and its kernel source, one per signedness (the kernels of one probe
share their buffers): s8 x s8, u8 x u8, and the mixed s8 x u8 and u8 x s8.

Version 2 of the mixed pairs: their random GEMM waves give the signed operand negative
values (version 1 kept both within [0, 4], what both types hold), so the exact host
reference also checks that the unit reads each operand in its own signedness.
"""

from pathlib import Path

from probelab.kits.lane_id.engine import Shape
from probelab.kits.lane_id.mma_sync import exactly_one, integer_probes, integer_types
from probelab.probe import Evidence

TYPES = integer_types(8)
SEEDS = {"s8s8": 0x5EED_0417, "u8u8": 0x5EED_0517, "s8u8": 0x5EED_0617, "u8s8": 0x5EED_0717}
# (name, M, N, K, A values, B values, D values) per lane
SHAPES = (("m8n8k16", 8, 8, 16, 4, 4, 2), ("m16n8k16", 16, 8, 16, 8, 4, 4),
          ("m16n8k32", 16, 8, 32, 16, 8, 4))


def evidence(kind: str):
    a, b = (t.name.upper() for t in TYPES[kind])

    def of(shape: Shape) -> Evidence:
        """Exactly one IMMA of this shape and signedness and no other MMA."""
        return exactly_one(shape, rf"IMMA\.{shape.M}{shape.N}{shape.K}\.{a}\.{b}", r"HMMA.*",
                           r"DMMA.*")
    return of


PROBES = integer_probes(
    8, Path(__file__).parent, SHAPES, SEEDS, ("1", "2"), evidence, "m8n8k16, m16n8k16, m16n8k32",
    {"sm_[0-7]*": "measured and sealed for sm_90 (m16n8k32 needs sm_80)",
     "sm_8*": "measured and sealed for sm_90", "sm_1??*": "measured and sealed for sm_90"},
    "nvidia", ("sm_90*",))
