"""mma-tf32: which lane and which register holds each element of A, B and C/D in NVIDIA's
dense tf32 mma.sync into f32 (SASS HMMA ... TF32) on sm_90, m16n8k4 and m16n8k8, measured
with the lane-id kit's waves and no layout assumed; tf32 elements go one per register as
f32 bit patterns (probelab.kits.elements.TF32).
"""

from pathlib import Path

from probelab.formats import F32, TF32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.mma_sync import exactly_one, per_shape
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # whose compilers build the kernels (their uint32_t line)
CODEC = Codec(TF32, F32)
# the kernel source's opening comment
PROSE = """\
mma-tf32 probe, NVIDIA side: one warp = one wave = one dense tf32 mma.sync into f32.
Lane l of wave w reads its fragment registers from a[w][l][0..4), b[w][l][0..2),
c[w][l][0..4) (the widest shape's strides: m16n8k8) and writes d[w][l][0..4); one tf32
element (an f32 bit pattern whose low 13 bits the unit ignores) per register.
Operands come straight from global memory so the evidence gate can see the loads.
params[0] = number of waves."""
SHAPES = (Shape("tf32_m16n8k4", 16, 8, 4, 32, a_values=2, b_values=1, d_values=4, codec=CODEC),
          Shape("tf32_m16n8k8", 16, 8, 8, 32, a_values=4, b_values=2, d_values=4, codec=CODEC))


def evidence(shape: Shape) -> Evidence:
    """Exactly one tf32 HMMA of this shape, no other MMA and no FFMA fallback."""
    return exactly_one(shape, rf"HMMA\.{shape.M}{shape.N}{shape.K}\.F32\.TF32", r"IMMA.*",
                       r"DMMA.*", r"FFMA.*")


PROBE = LaneIdProbe(
    id="mma-tf32", version="1",
    summary="tf32 -> f32 mma.sync m16n8k4, m16n8k8: (lane, value) <-> (row, col)",
    targets=("sm_90*",), vendor=VENDOR, source=Rendered(HERE / "mma_tf32.cu", lambda: per_shape(
        VENDOR, PROSE, [SHAPES],
        lambda s: f"mma.sync.aligned.m{s.M}n{s.N}k{s.K}.row.col.f32.tf32.tf32.f32",
        spelled=True)), shapes=SHAPES,
    evidence=evidence, seed=0x5EED_0317, block=128,
    excluded={"sm_[0-7]*": "tf32 mma.sync needs sm_80; measured and sealed for sm_90",
              "sm_8*": "measured and sealed for sm_90",
              "sm_1??*": "measured and sealed for sm_90"},
)
