"""wgmma-f16-rs: which thread and which value of its registers holds each element of A and
of the accumulator D, and which byte of the shared-memory tile feeds each element of B, in
Hopper's warpgroup MMA `wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16` with A from
registers (SASS HGMMA on sm_90a), for B K-major under each descriptor swizzle mode (none,
32B, 64B, 128B, and 128B started 32 bytes into its rows), measured with the lane-id kit's
waves over one warpgroup (128 threads) and no layout assumed.

B's slots are the elements of its 1 KiB tile (value v of thread t is element v * 128 + t, at
byte 2 (v * 128 + t)): the tile holds 512 of them, the instruction reads 128, and which ones,
as which (k, n), is the descriptor's layout, measured label-free like any lane map.
"""

from pathlib import Path

from probelab.kits.elements import F16, F32, Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
# kernel -> its B descriptor as wgmma_f16.cu builds it: swizzle (bytes, 0: none), leading and
# stride byte offsets, start (bytes past the tile); per-kernel coordinates of the grid
KERNELS = {"rs_none": (0, 128, 256, 0), "rs_sw32": (32, 16, 256, 0),
           "rs_sw64": (64, 16, 512, 0), "rs_sw128": (128, 16, 1024, 0),
           "rs_sw128_k1": (128, 16, 1024, 32)}
SHAPES = tuple(Shape(name, 64, 8, 16, 128, a_values=8, b_values=4, d_values=4,
                     codec=Codec(F16, F32), tiles=("b",),
                     facts=tuple(zip(("swizzle", "lbo", "sbo", "start"), fields, strict=True)))
               for name, fields in KERNELS.items())


def evidence(shape: Shape) -> Evidence:
    """Exactly one HGMMA m64n8k16 into f32 and no other matrix instruction; A (four registers)
    and C (four) straight from their loads; B placed by the tile's four 16-bit stores, then
    the async-proxy fence, the warpgroup's arrive before the MMA and its wait after."""
    return Evidence(r"HGMMA\.64x8x16\.F32",
                    forbidden=(r"HGMMA\.(?!64x8x16\.F32$).*", r"[HIQ]GMMA\.SP.*", r"IGMMA.*",
                               r"QGMMA.*", r"HMMA.*", r"IMMA.*"),
                    operands=("unmodified", "any", "unmodified"), spans=(4, 1, 4),
                    companions=((r"STS\.U16", "before", shape.b_values),
                                (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                (r"WARPGROUP\.ARRIVE", "before", 1),
                                (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))


PROBES = (LaneIdProbe(
    id="wgmma-f16-rs", version="1",
    summary="f16 -> f32 wgmma m64n8k16, A from registers, B from shared memory under each "
            "swizzle mode: (thread, value) <-> (row, col), B's tile bytes -> (k, n)",
    targets=("sm_90*",), vendor="nvidia", source=HERE / "wgmma_f16.cu", shapes=SHAPES,
    evidence=evidence, seed=0x5EED_1817, block=128, options={"arch": "sm_90a"},
    excluded={"sm_[0-8]*": "wgmma is Hopper's (sm_90a)",
              "sm_1??*": "wgmma is sm_90a only (Blackwell has tcgen05)"}),)
