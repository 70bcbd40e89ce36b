"""mma-f16: which lane and which value of its registers holds each element of A, B and C/D
in NVIDIA's dense 16-bit mma.sync (SASS HMMA) on sm_90, measured with the lane-id kit's
waves and no layout assumed. Three probes share the folder and its kernel source, one per
codec (the kernels of one probe share their buffers): f16 into f32 (mma-f16-f32), f16 into
f16 (mma-f16-f16) and bf16 into f32 (mma-bf16-f32), each at m16n8k8 and m16n8k16.
"""

from pathlib import Path

from probelab.formats import BF16, F16, F32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape, warp_shapes
from probelab.probe import Evidence

HERE = Path(__file__).parent
CODECS = {"f16-f32": Codec(F16, F32), "f16-f16": Codec(F16, F16), "bf16-f32": Codec(BF16, F32)}
# SASS on sm_90 per codec: the mnemonic's type suffix (sm_90 HMMA names the shape's MNK)
SUFFIX = {"f16-f32": r"\.F32", "f16-f16": r"\.F16", "bf16-f32": r"\.F32\.BF16"}
# (shape, M, N, K, A values, B values, D values) per lane
SHAPES = (("m16n8k8", 16, 8, 8, 4, 2, 4), ("m16n8k16", 16, 8, 16, 8, 4, 4))
SEEDS = {"f16-f32": 0x5EED_0017, "f16-f16": 0x5EED_0117, "bf16-f32": 0x5EED_0217}


def evidence(kind: str):
    def of(shape: Shape) -> Evidence:
        """Exactly one HMMA of this shape and type and no other MMA; A, B and C each
        straight from 32-bit loads, every register of the fragment."""
        mnk = f"{shape.M}{shape.N}{shape.K}"
        return Evidence(rf"HMMA\.{mnk}{SUFFIX[kind]}",
                        forbidden=(rf"HMMA\.(?!{mnk}{SUFFIX[kind]}$).*", r"IMMA.*",
                                   r"DMMA.*", r"HFMA2.*"),
                        operands=("unmodified",) * 3,
                        spans=tuple(shape.registers(n) for n in "abd"))
    return of


def probe(kind: str) -> LaneIdProbe:
    return LaneIdProbe(
        id=f"mma-{kind}", version="1",
        summary=f"{kind.replace('-', ' -> ')} mma.sync m16n8k8, m16n8k16: (lane, value) <-> "
                "(row, col)",
        targets=("sm_90*",), vendor="nvidia", source=HERE / "mma_f16.cu",
        shapes=warp_shapes(kind.replace("-", "_"), SHAPES, CODECS[kind]),
        evidence=evidence(kind), seed=SEEDS[kind], block=128,
        excluded={"sm_[0-7]*": "measured and sealed for sm_90 (m16n8k16 needs sm_80, bf16 "
                               "sm_80, m16n8k8 f16 sm_75)",
                  "sm_8*": "measured and sealed for sm_90",
                  "sm_1??*": "measured and sealed for sm_90"})


PROBES = tuple(probe(kind) for kind in CODECS)
