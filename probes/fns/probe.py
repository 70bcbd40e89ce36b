"""fns: PTX fns.b32 (find the n-th set bit) and CUDA's __fns, over masks whose set bits sit
at known places (none, all, alternate, the two ends, runs, single bits) and seeded random
masks, every base 0-31 (the ISA leaves base > 31 undefined: not swept) and every offset
-33..33 with the edges past them (+-64, +-(2**31 - 1), -2**31).

sm_90 has no FNS: ptxas expands fns.b32 (and __fns, which is the same builtin) into a
routine of BREV, POPC counts of halves, bytes and nibbles, and SEL, and the evidence says
so. The source is generated from FORMS (`python probes/fns/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, call_kernel, header, plot_kind
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "fns.cu"
SEED = 0x5EED_0039_0007
N_RANDOM = 6
INPUTS = ("mask", "base", "offset")
FORMS = {"fns": "fns.b32 %0, %1, %2, %3;", "cuda_fns": "__fns({mask}, {base}, (int){offset})"}
MASKS = {"none": 0, "all": 0xFFFFFFFF, "odd": 0xAAAAAAAA, "even": 0x55555555,
         "ends": 0x80000001, "low_half": 0x0000FFFF, "high_half": 0xFFFF0000,
         "bit0": 1, "bit31": 0x80000000, "bit16": 0x00010000}
NONE = np.uint64(0xFFFFFFFF)


def masks() -> tuple[np.ndarray, np.ndarray]:
    values, names = list(MASKS.values()), list(MASKS)
    rng = np.random.default_rng(SEED)
    for k, x in enumerate(rng.integers(0, 1 << 32, N_RANDOM, np.uint64)):
        values.append(int(x))
        names.append(f"random{k}")
    return np.array(values, np.uint32), np.array(names)


def offsets() -> np.ndarray:
    signed = [*range(-33, 34), 64, -64, 2**31 - 1, -(2**31 - 1), -(2**31)]
    return np.array([s & 0xFFFFFFFF for s in signed], np.uint64).astype(np.uint32)


def model(mask: np.ndarray, base: np.ndarray, offset: np.ndarray, **_: object) -> np.ndarray:
    """The PTX reading (the ISA's fns loop, vectorized over bit positions), for the simulated
    device only: never evidence."""
    shape = np.broadcast_shapes(mask.shape, base.shape, offset.shape)
    m, b = np.broadcast_to(mask, shape), np.broadcast_to(base, shape).astype(np.int64)
    off = np.broadcast_to(offset, shape).astype(np.int64)
    off = np.where(off >= 2**31, off - 2**32, off)
    pos = np.arange(32, dtype=np.int64)
    bit = (m[..., None] >> pos.astype(np.uint64)) & np.uint64(1)
    up = (pos >= b[..., None]) & (bit == 1)
    down = (pos <= b[..., None]) & (bit == 1)
    rank_up = np.cumsum(up, axis=-1)  # set bits at or above base, counted upward
    rank_down = np.cumsum(down[..., ::-1], axis=-1)[..., ::-1]  # at or below, downward
    hit = np.where(off[..., None] > 0, up & (rank_up == off[..., None]),
                   down & (rank_down == -off[..., None]))
    found = hit.any(axis=-1)
    out = np.where(found, hit.argmax(axis=-1), -1)
    zero = np.where(((m >> b.astype(np.uint64)) & np.uint64(1)) == 1, b, -1)
    out = np.where(off == 0, zero, out)
    return np.where(out < 0, NONE, out.astype(np.uint64))


def source() -> str:
    return header("fns", "probes/fns/generate.py", VENDOR) + "".join(
        "\n" + (call_kernel(f"probe_{name}", INPUTS, text) if text.startswith("__")
                else asm_kernel(f"probe_{name}", INPUTS, text)) for name, text in FORMS.items())


EVIDENCE = Evidence(
    r"POPC", count=None, operands=("from_memory",),
    lowered=("fns.b32 has no SASS instruction on sm_90: ptxas expands it into a routine with "
             "branches (a BSSY/BSYNC region that takes BREV of the mask for a negative "
             "offset and masks off the bits before base; POPC of the word, a half, a byte "
             "and a nibble, then single-bit steps: a binary search for the n-th set bit; SEL "
             "of 0xffffffff where it is not found)"),
    companions=((r"BREV", "before", 1), (r"BSSY", "before", 1), (r"SEL", "after", None)))

m, names = masks()
PROBE = BitOpProbe(
    id="fns", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("fns.b32 and __fns (lowered on sm_90): every base 0-31 and offset -33..33 and "
             "the edges, over masks with known set bits"),
    axes=(Axis("mask", {"mask": m, "pattern": names}, {"mask": {"display": "hex"}}),
          Axis("base", {"base": np.arange(32, dtype=np.uint32)}),
          Axis("offset", {"offset": offsets()},
               {"offset": {"description": "an s32, stored as its 32-bit word"}})),
    ops=tuple(Op(name, EVIDENCE, model, facts={"intrinsic": int(text.startswith("__"))})
              for name, text in FORMS.items()),
    inputs=INPUTS,
    plots=plot_kind("search-map"),
)
