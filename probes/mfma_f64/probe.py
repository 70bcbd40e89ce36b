"""mfma-f64: which lane and which register holds each element of A, B and C/D in CDNA's
v_mfma_f64_16x16x4f64 (gfx90a) / v_mfma_f64_16x16x4_f64 (gfx942, gfx950), measured with
lane-id waves and no layout assumed (probelab.kits.lane_id). Seeds/001 is the bug this settles.
"""

from pathlib import Path

from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
SHAPES = (Shape("mfma_f64_16x16x4", 16, 16, 4, 64, a_values=1, b_values=1, d_values=4),)


def evidence(shape: Shape) -> Evidence:
    """Exactly one f64 16x16x4 MFMA (either spelling) and no other MFMA; A, B and C each
    straight from full-width global loads."""
    return Evidence(r"v_mfma_f64_16x16x4_?f64",
                    forbidden=(r"v_mfma_(?!f64_16x16x4_?f64$).*",),
                    operands=("unmodified",) * 3)


PROBE = LaneIdProbe(
    id="mfma-f64", version="1",
    summary="v_mfma_f64_16x16x4(_)f64 on CDNA2-4: (lane, register) <-> (row, col)",
    targets=("gfx90a", "gfx942", "gfx950"), vendor="amd", source=HERE / "mfma_f64.hip",
    shapes=SHAPES, evidence=evidence, seed=0x5EED_0105,
    excluded={"gfx908": "gfx908 (CDNA1) has no FP64 matrix core, so no f64 MFMA to probe "
                        "(the kernel source refuses to build there rather than return zeros)",
              "gfx94[01]": "gfx940/gfx941 are deprecated; the f64 probe covers exactly "
                           "gfx90a, gfx942 and gfx950 (seeds/001)",
              "gfx9*": "no f64 16x16x4 MFMA on this target (gfx90a, gfx942 and gfx950 have it)",
              "gfx1*": "RDNA has no MFMA"},
)
