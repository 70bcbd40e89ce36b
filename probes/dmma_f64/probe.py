"""dmma-f64: which lane and which register holds each element of A, B and C/D in NVIDIA's
f64 mma.sync (DMMA), measured with lane-id waves and no layout assumed (probelab.kits.lane_id).

Kernels: mma.sync.aligned.m8n8k4.row.col.f64 (sm_80+) and sm_90's m16n8k4, m16n8k8 and
m16n8k16 f64, one warp per wave, fragments straight from global memory.
"""

from pathlib import Path

from probelab.kits.lane_id.mma_sync import exactly_one
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
SHAPES = (Shape("m8n8k4", 8, 8, 4, 32, a_values=1, b_values=1, d_values=2),
          Shape("m16n8k4", 16, 8, 4, 32, a_values=2, b_values=1, d_values=4),
          Shape("m16n8k8", 16, 8, 8, 32, a_values=4, b_values=2, d_values=4),
          Shape("m16n8k16", 16, 8, 16, 32, a_values=8, b_values=4, d_values=4))


def evidence(shape: Shape) -> Evidence:
    """Exactly one DMMA of this shape and no DFMA or HMMA; A, B and C from 64-bit loads."""
    return exactly_one(shape, rf"DMMA\.{shape.M}x{shape.N}x{shape.K}", r"DFMA.*", r"HMMA.*")


PROBE = LaneIdProbe(
    id="dmma-f64", version="1",
    summary="f64 mma.sync (DMMA) m8n8k4, m16n8k{4,8,16}: (lane, register) <-> (row, col)",
    targets=("sm_90*",), vendor="nvidia", source=HERE / "dmma_f64.cu", shapes=SHAPES,
    evidence=evidence, seed=0x5EED_0005, block=128,
    excluded={"sm_[0-7]*": "f64 mma.sync needs sm_80; the m16n8k* f64 shapes need sm_90",
              "sm_8*": "the m16n8k{4,8,16} f64 shapes need sm_90 (sm_80 has m8n8k4 only)"},
)
