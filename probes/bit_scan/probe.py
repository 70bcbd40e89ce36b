"""bit-scan: PTX brev.b32, bfind.{u32,s32} and bfind.shiftamt.{u32,s32}, clz.b32, and CUDA's
__brev, __clz and __ffs, over words that put the most and least significant set (and, for
the signed forms, clear) bit at every position: 0, all ones, each single bit, each low run
2**k - 1, each high run ~(2**k - 1), each single clear bit, seeded random words and random
words shifted right by every amount. The source is generated from FORMS
(`python probes/bit_scan/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, call_kernel, header, plot_kind
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "bit_scan.cu"
SEED = 0x5EED_0039_0006
N_RANDOM = 64
M32 = np.uint64(0xFFFFFFFF)
NONE = np.uint64(0xFFFFFFFF)
# kernel -> (op number, how it is written, SASS it must hold, what ptxas adds to it)
FORMS = {
    "brev": (1, "brev.b32 %0, %1;", r"BREV", ()),
    "bfind_u32": (2, "bfind.u32 %0, %1;", r"FLO\.U32", ()),
    "bfind_s32": (3, "bfind.s32 %0, %1;", r"FLO", ()),
    "bfind_shiftamt_u32": (4, "bfind.shiftamt.u32 %0, %1;", r"FLO\.U32\.SH", ()),
    "bfind_shiftamt_s32": (5, "bfind.shiftamt.s32 %0, %1;", r"FLO\.SH", ()),
    "clz": (6, "clz.b32 %0, %1;", r"FLO\.U32", ((r"IADD3", "after", 1),)),
    "cuda_brev": (1, "__brev({word})", r"BREV", ()),
    "cuda_clz": (6, "__clz({word})", r"FLO\.U32", ((r"IADD3", "after", 1),)),
    "cuda_ffs": (7, "__ffs({word})", r"FLO\.U32\.SH",
                 ((r"BREV", "before", 1), (r"IADD3", "after", 1))),
}
LOWERED = {
    "clz": "clz.b32 has no SASS CLZ on sm_90: ptxas computes 31 - FLO.U32 (IADD3)",
    "cuda_clz": "__clz is clz.b32: 31 - FLO.U32 (IADD3)",
    "cuda_ffs": "__ffs has no SASS FFS on sm_90: FLO.U32.SH of BREV(x), plus 1 (IADD3)",
}


def words() -> tuple[np.ndarray, np.ndarray]:
    w: list[int] = [0, 0xFFFFFFFF]
    names = ["zero", "ones"]
    for k in range(32):
        w += [1 << k, (1 << k) - 1, (0xFFFFFFFF << k) & 0xFFFFFFFF, 0xFFFFFFFF ^ (1 << k)]
        names += [f"bit{k}", f"low{k}", f"high{k}", f"hole{k}"]
    rng = np.random.default_rng(SEED)
    for k, x in enumerate(rng.integers(0, 1 << 32, N_RANDOM, np.uint64)):
        w.append(int(x))
        names.append(f"random{k}")
    for k, x in enumerate(rng.integers(0, 1 << 32, 32, np.uint64)):
        w += [int(x) >> k, (int(x) >> k) ^ 0xFFFFFFFF]
        names += [f"random_shr{k}", f"random_shr{k}_not"]
    _, first = np.unique(np.array(w, np.uint64), return_index=True)
    order = np.sort(first)  # the first name each distinct word had, in declaration order
    return np.array(w, np.uint32)[order], np.array(names)[order]


def msb(x: np.ndarray) -> np.ndarray:
    """Position of the most significant 1 of each nonzero x (garbage for 0)."""
    out = np.zeros(x.shape, np.uint64)
    for shift in (16, 8, 4, 2, 1):
        high = (x >> np.uint64(out + np.uint64(shift))) != 0
        out = np.where(high, out + np.uint64(shift), out)
    return out


def brev(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.uint64)
    for i in range(32):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(31 - i)
    return out


def model(word: np.ndarray, op: int) -> np.ndarray:
    """The PTX reading (brev, bfind, clz) and CUDA's documented __ffs, for the simulated
    device only: never evidence."""
    op = int(op)
    if op == 1:
        return brev(word)
    if op in (2, 3, 4, 5):
        x = np.where((op in (3, 5)) & (word >> np.uint64(31) == 1), ~word & M32, word)
        found = msb(x)
        d = found if op in (2, 3) else np.uint64(31) - found
        return np.where(x == 0, NONE, d)
    if op == 6:
        return np.where(word == 0, np.uint64(32), np.uint64(31) - msb(word))
    low = word & ((~word + np.uint64(1)) & M32)
    return np.where(word == 0, np.uint64(0), msb(low) + np.uint64(1))


def source() -> str:
    parts = [header("bit-scan", "probes/bit_scan/generate.py", VENDOR)]
    for name, (_, text, _, _) in FORMS.items():
        parts.append("\n" + (call_kernel(f"probe_{name}", ("word",), text)
                             if text.startswith("__") else
                             asm_kernel(f"probe_{name}", ("word",), text)))
    return "".join(parts)


def evidence(name: str) -> Evidence:
    _, _, sass, companions = FORMS[name]
    others = {r"BREV", r"FLO\.U32", r"FLO", r"FLO\.U32\.SH", r"FLO\.SH"} - {sass}
    if name == "cuda_ffs":
        others -= {r"BREV"}
    return Evidence(sass, forbidden=tuple(sorted(others)), operands=(
        ("from_memory",) if name == "cuda_ffs" else ("unmodified",)),
        lowered=LOWERED.get(name), companions=companions)


w, names = words()
PROBE = BitOpProbe(
    id="bit-scan", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("brev, bfind (.u32 .s32 .shiftamt), clz and __brev/__clz/__ffs over words with "
             "their first and last set and clear bits at every position"),
    axes=(Axis("word", {"word": w, "pattern": names}, {"word": {"display": "hex"}}),),
    ops=tuple(Op(name, evidence(name), model, facts={"op": FORMS[name][0]})
              for name in FORMS),
    inputs=("word",),
    plots=plot_kind("scan-map"),
)
