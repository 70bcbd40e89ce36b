"""bmsk: PTX bmsk.clamp.b32 and bmsk.wrap.b32 (sm_70+), over every bit position and width
0-40 and the edges past them (63, 64, 255, 256, 2**31, 2**32 - 1): which mask each makes,
and what clamp and wrap do with a position or width of 32 and more. The source is generated
from FORMS (`python probes/bmsk/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, header, plot_kind
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "bmsk.cu"
EDGES = (63, 64, 255, 256, 0x80000000, 0xFFFFFFFF)
INPUTS = ("pos", "width")
# kernel -> (clamp, how it is written, its SASS)
FORMS = {"bmsk_clamp": (1, "bmsk.clamp.b32 %0, %1, %2;", r"BMSK"),
         "bmsk_wrap": (0, "bmsk.wrap.b32 %0, %1, %2;", r"BMSK\.W")}
M32 = np.uint64(0xFFFFFFFF)


def amounts() -> np.ndarray:
    return np.concatenate([np.arange(41, dtype=np.uint64), np.array(EDGES, np.uint64)]
                          ).astype(np.uint32)


def model(pos: np.ndarray, width: np.ndarray, clamp: int) -> np.ndarray:
    """The PTX reading (the ISA's bmsk semantics, line by line), for the simulated device
    only: never evidence."""
    a1, b1 = pos & np.uint64(31), width & np.uint64(31)
    mask0 = (M32 << a1) & M32
    total = a1 + b1
    mask1 = (M32 << np.minimum(total, np.uint64(63))) & M32
    overflow = total >= 32
    if clamp:
        mask0 = np.where(pos >= 32, np.uint64(0), mask0)
        overflow = overflow | (pos >= 32) | (width >= 32)
    mask1 = np.where(overflow, np.uint64(0), np.where(b1 == 0, M32, mask1))
    return mask0 & ~mask1 & M32


def source() -> str:
    return header("bmsk", "probes/bmsk/generate.py", VENDOR) + "".join(
        "\n" + asm_kernel(f"probe_{name}", INPUTS, text) for name, (_, text, _) in FORMS.items())


PROBE = BitOpProbe(
    id="bmsk", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary="bmsk.clamp/.wrap.b32: every position and width 0-40 and the edges past 32",
    axes=(Axis("pos", {"pos": amounts()}, {"pos": {"description": "operand a"}}),
          Axis("width", {"width": amounts()}, {"width": {"description": "operand b"}})),
    # SASS BMSK reads (pos, width); .W is the wrap form, so each forbids the other
    ops=tuple(Op(name, Evidence(sass, forbidden=tuple(s for _, _, s in FORMS.values()
                                                      if s != sass),
                                operands=("unmodified", "unmodified")),
                 model, facts={"clamp": clamp})
              for name, (clamp, _, sass) in FORMS.items()),
    inputs=INPUTS,
    plots=plot_kind("mask-map"),
)
