"""mma-b1: which lane and which value (bit) of its registers holds each element of A, B and
C/D in NVIDIA's single-bit mma.sync with .and.popc into s32 (SASS BMMA ... AND.POPC) on
sm_90, measured with the lane-id kit's waves (b1 ids travel bit by bit after a presence
wave) and no layout assumed. Two probes share the folder and its kernel source, because
the kernels of one probe share their buffers and m16n8k256's would triple the others'
waves: mma-b1-and (m8n8k128, m16n8k128) and mma-b1-and-k256 (m16n8k256).

.xor.popc is not measured here: sm_90 has no XOR BMMA; ptxas (NVRTC 13) calls an internal
routine (__cuda_sm_9x_mma_bit_internal_xor_*) that issues two BMMA ... AND.POPC on
complemented operands (LOP3 0x33), popc(a ^ b) = popc(a & ~b) + popc(~a & b), and a
one-hot lane-id wave cannot name a slot through XOR (every zero bit counts): it needs its
own reading (tests/test_sm90_lowerings.py holds the lowering).
"""

from pathlib import Path

from probelab.formats import B1, S32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.mma_sync import exactly_one, per_shape
from probelab.kits.lane_id.probe import LaneIdProbe, Shape, warp_shapes
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # whose compilers build the kernels (their uint32_t line)
# (name, M, N, K, A values, B values, D values) per lane
SHAPES = {"and": (("m8n8k128", 8, 8, 128, 32, 32, 2), ("m16n8k128", 16, 8, 128, 64, 32, 4)),
          "and-k256": (("m16n8k256", 16, 8, 256, 128, 64, 4),)}
SEEDS = {"and": 0x5EED_1317, "and-k256": 0x5EED_1417}
# the kernel source's opening comment
PROSE = """\
mma-b1 probes, NVIDIA side: one warp = one wave = one single-bit mma.sync with
.and.popc into s32. Lane l of wave w reads its fragment registers from a[w][l][0..SA),
b[w][l][0..SB), c[w][l][0..4) and writes d[w][l][0..4): 32 one-bit elements per A/B
register (element i in bit i % 32 of register i / 32), one s32 per C/D register;
m8n8k128's D has two registers, the other two are written 0 so no cell is left unwritten.
SA/SB are the strides of the probe's widest shape (the kernels of one probe share their
buffers): 2/1 for mma-b1-and (m8n8k128, m16n8k128), 4/2 for mma-b1-and-k256. Operands
come straight from global memory (the evidence gate traces them). params[0] = waves."""


def evidence(shape: Shape) -> Evidence:
    """Exactly one BMMA of this shape with AND.POPC, no other MMA and no call (sm_90's XOR
    routine)."""
    return exactly_one(shape, rf"BMMA\.{shape.M}{shape.N}{shape.K}\.AND\.POPC", r"IMMA.*",
                       r"HMMA.*", r"DMMA.*", r"CALL.*")


def probe(kind: str) -> LaneIdProbe:
    names = ", ".join(row[0] for row in SHAPES[kind])
    return LaneIdProbe(
        id=f"mma-b1-{kind}", version="1",
        summary=f"b1 .and.popc -> s32 mma.sync {names}: (lane, value) <-> (row, col)",
        targets=("sm_90*",), vendor=VENDOR, source=SOURCE,
        shapes=warp_shapes("b1_and", SHAPES[kind], Codec(B1, S32)),
        evidence=evidence, seed=SEEDS[kind], block=128,
        excluded={"sm_[0-7]*": "measured and sealed for sm_90 (.and.popc needs sm_80)",
                  "sm_8*": "measured and sealed for sm_90",
                  "sm_1??*": "measured and sealed for sm_90"})


SOURCE = Rendered(HERE / "mma_b1.cu", lambda: per_shape(
    VENDOR, PROSE, [p.shapes for p in PROBES],
    lambda s: f"mma.sync.aligned.m{s.M}n{s.N}k{s.K}.row.col.s32.b1.b1.s32.and.popc"))
PROBES = tuple(probe(kind) for kind in SHAPES)
