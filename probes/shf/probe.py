"""shf: PTX shf.{l,r}.{clamp,wrap}.b32 and CUDA's __funnelshift_{l,lc,r,rc}, over every
shift amount 0-70, the edges past them (96, 127, 128, 255-257, 2**31 +- 1, 2**32 - 32,
2**32 - 1) and seeded random ones, on operand pairs whose 64-bit {b, a} names each bit's
position across six bit-plane pairs (bit j of pair p is bit p of j), plus the one-sided and
random pairs. The source is generated from FORMS (`python probes/shf/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import (
    Axis,
    BitOpProbe,
    Op,
    asm_kernel,
    call_kernel,
    header,
    plot_kind,
    word_pairs,
)
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "shf.cu"
SEED = 0x5EED_0039_0004
N_RANDOM_PAIRS = 8
N_RANDOM_SHIFTS = 16
EDGES = (96, 127, 128, 255, 256, 257, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFE0,
         0xFFFFFFFF)
# kernel -> (left, clamp, how it is written, the SASS form it must become)
SASS = {(1, 1): r"SHF\.L\.U32\.HI", (1, 0): r"SHF\.L\.W\.U32\.HI",
        (0, 1): r"SHF\.R\.U32", (0, 0): r"SHF\.R\.W\.U32"}
FORMS = {
    "shf_l_clamp": (1, 1, "shf.l.clamp.b32 %0, %1, %2, %3;"),
    "shf_l_wrap": (1, 0, "shf.l.wrap.b32 %0, %1, %2, %3;"),
    "shf_r_clamp": (0, 1, "shf.r.clamp.b32 %0, %1, %2, %3;"),
    "shf_r_wrap": (0, 0, "shf.r.wrap.b32 %0, %1, %2, %3;"),
    # CUDA's intrinsics: (lo, hi, shift) = (a, b, shift)
    "funnelshift_l": (1, 0, "__funnelshift_l({a}, {b}, {shift})"),
    "funnelshift_lc": (1, 1, "__funnelshift_lc({a}, {b}, {shift})"),
    "funnelshift_r": (0, 0, "__funnelshift_r({a}, {b}, {shift})"),
    "funnelshift_rc": (0, 1, "__funnelshift_rc({a}, {b}, {shift})"),
}
INPUTS = ("a", "b", "shift")


def pairs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    planes = {f"plane{p}": sum(((j >> p) & 1) << j for j in range(64)) for p in range(6)}
    return word_pairs(planes | {"a_ones": 0xFFFFFFFF, "b_ones": 0xFFFFFFFF << 32}, SEED,
                      N_RANDOM_PAIRS)


def shifts() -> np.ndarray:
    rng = np.random.default_rng([SEED, 2])
    rand = rng.integers(71, 1 << 32, N_RANDOM_SHIFTS, np.uint64)
    return np.concatenate([np.arange(71, dtype=np.uint64), np.array(EDGES, np.uint64),
                           rand]).astype(np.uint32)


def model(a: np.ndarray, b: np.ndarray, shift: np.ndarray, left: int, clamp: int
          ) -> np.ndarray:
    """The PTX reading: n = min(c, 32) (clamp) or c & 0x1f (wrap); shf.l keeps the high 32
    bits of {b, a} << n, shf.r the low 32 of {b, a} >> n. For the simulated device only:
    never evidence."""
    n = np.minimum(shift, np.uint64(32)) if clamp else shift & np.uint64(31)
    src = (b << np.uint64(32)) | a
    if left:
        return ((src << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
    return (src >> n) & np.uint64(0xFFFFFFFF)


def source() -> str:
    parts = [header("shf", "probes/shf/generate.py", VENDOR)]
    for name, (_, _, text) in FORMS.items():
        parts.append("\n" + (call_kernel(f"probe_{name}", INPUTS, text) if text.startswith("__")
                             else asm_kernel(f"probe_{name}", INPUTS, text)))
    return "".join(parts)


def evidence(left: int, clamp: int) -> Evidence:
    # SASS SHF reads (a, shift, b); clamp or wrap (.W) and the direction are in the
    # mnemonic, so the other three forms are forbidden
    return Evidence(SASS[left, clamp], forbidden=tuple(v for k, v in SASS.items()
                                                        if k != (left, clamp)),
                    operands=("unmodified", "unmodified", "unmodified"))


a, b, names = pairs()
PROBE = BitOpProbe(
    id="shf", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("shf.{l,r}.{clamp,wrap}.b32 and __funnelshift_{l,lc,r,rc}: every shift 0-70, "
             "the edges past 32 and random ones, over bit-naming operand pairs"),
    axes=(Axis.operands("pair", names, a=(a, "bits 31:0 of the source"),
                        b=(b, "bits 63:32 of the source")),
          Axis("shift", {"shift": shifts()}, {"shift": {"description": "operand c"}})),
    ops=tuple(Op(name, evidence(left, clamp), model, facts={"left": left, "clamp": clamp})
              for name, (left, clamp, _) in FORMS.items()),
    inputs=INPUTS,
    plots=plot_kind("shift-map"),
)
