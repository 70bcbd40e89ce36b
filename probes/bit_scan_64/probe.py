"""bit-scan-64: PTX popc.b32, popc.b64, clz.b64, bfind.{u64,s64}, bfind.shiftamt.{u64,s64}
and brev.b64 (its low and its high 32-bit half, two kernels), and CUDA's __popc, __popcll,
__clzll, __ffsll and __brevll (halves), over 64-bit words given as two loaded words (lo, hi):
0, all ones, each single bit, each low run, each high run, each single hole at all 64
positions, seeded random words, random words shifted right by every amount (and their
complements), and words whose halves differ in sign and zero-ness. The inline PTX builds
the 64-bit operand with `mov.b64 x, {lo, hi}` (the first element the low half). The source
is generated from FORMS (`python probes/bit_scan_64/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, call_kernel, header
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "bit_scan_64.cu"
SEED = 0x5EED_0039_0064
N_RANDOM = 64
N_SPLIT = 16
M32 = np.uint64(0xFFFFFFFF)
M64 = (1 << 64) - 1
NONE = np.uint64(0xFFFFFFFF)
INPUTS = ("lo", "hi")
X64 = "unsigned long long"
WORD = f"((({X64}){{hi}} << 32) | {{lo}})"  # CUDA's 64-bit operand, built in C


def ptx64(body: str) -> str:
    """Inline PTX on the 64-bit x = {lo, hi} (%1 the low word, %2 the high)."""
    return "{ .reg .b64 x; mov.b64 x, {%1, %2}; " + body + " }"


def brev_half(half: int) -> str:
    out = "{%0, t}" if half == 0 else "{t, %0}"
    return ("{ .reg .b64 x, y; .reg .b32 t; mov.b64 x, {%1, %2}; brev.b64 y, x; "
            f"mov.b64 {out}, y; }}")


# kernel -> (op number, packed: 1 PTX's mov.b64 {lo, hi} / 0 CUDA's C shift, how it is
# written); its evidence is EVIDENCE[kernel] (shared by the PTX form and CUDA's intrinsic)
FORMS = {
    "popc_b32": (1, 0, "popc.b32 %0, %1;"),
    "popc_b64": (2, 1, ptx64("popc.b64 %0, x;")),
    "clz_b64": (3, 1, ptx64("clz.b64 %0, x;")),
    "bfind_u64": (4, 1, ptx64("bfind.u64 %0, x;")),
    "bfind_s64": (5, 1, ptx64("bfind.s64 %0, x;")),
    "bfind_shiftamt_u64": (6, 1, ptx64("bfind.shiftamt.u64 %0, x;")),
    "bfind_shiftamt_s64": (7, 1, ptx64("bfind.shiftamt.s64 %0, x;")),
    "brev_b64_lo": (8, 1, brev_half(0)),
    "brev_b64_hi": (9, 1, brev_half(1)),
    "cuda_popc": (1, 0, "__popc({lo})"),
    "cuda_popcll": (2, 0, f"__popcll({WORD})"),
    "cuda_clzll": (3, 0, f"__clzll({WORD})"),
    "cuda_ffsll": (10, 0, f"__ffsll({WORD})"),
    "cuda_brevll_lo": (8, 0, f"(uint32_t)__brevll({WORD})"),
    "cuda_brevll_hi": (9, 0, f"(uint32_t)(__brevll({WORD}) >> 32)"),
}
SCANS = (r"FLO", r"FLO\.U32", r"FLO\.SH", r"FLO\.U32\.SH", r"BREV", r"POPC")
# sm_90 has no 64-bit POPC, FLO or BREV: ptxas works on the two 32-bit halves
LOWERED = {
    "popc_b64": "popc.b64 has no 64-bit POPC on sm_90: POPC of each half, summed (IADD3)",
    "clz_b64": ("clz.b64 has no 64-bit CLZ or FLO on sm_90: FLO.U32 of the high word if it "
                "is nonzero, else of the low word (ISETP.NE picks), then 31 - or 63 - it "
                "(IADD3)"),
    "bfind_u64": ("bfind.u64 has no 64-bit FLO on sm_90: FLO.U32 of the high word, plus 32 "
                  "(IADD3); where it finds none (-1), FLO.U32 of the low word (a branch)"),
    "bfind_s64": ("bfind.s64 has no 64-bit FLO on sm_90: signed FLO of the high word, plus 32 "
                  "(IADD3); where it finds none, FLO.U32 of the low word or of its complement "
                  "(~R) by the high word's sign (branches): one FLO and two FLO.U32"),
    "bfind_shiftamt_u64": ("bfind.shiftamt.u64 has no 64-bit FLO on sm_90: FLO.U32.SH of "
                           "the high word, else 32 + FLO.U32.SH of the low word (SEL)"),
    "bfind_shiftamt_s64": ("bfind.shiftamt.s64 has no 64-bit FLO on sm_90: FLO.SH of the "
                           "high word, else 32 + FLO.U32.SH of the low word or of its "
                           "complement by the high word's sign (branches, SEL)"),
    "brev_b64_lo": "brev.b64's low half is one BREV of the high word",
    "brev_b64_hi": "brev.b64's high half is one BREV of the low word",
    "cuda_ffsll": ("__ffsll has no SASS FFS on sm_90: x & -x (IADD3/IMAD.X, LOP3.LUT per "
                   "half), then 64 - clz.b64 of it (FLO.U32, IADD3)"),
}
LOWERED |= {"cuda_popcll": LOWERED["popc_b64"], "cuda_clzll": LOWERED["clz_b64"],
            "cuda_brevll_lo": LOWERED["brev_b64_lo"],
            "cuda_brevll_hi": LOWERED["brev_b64_hi"]}
# kernel -> (SASS it must hold, how many, operands, companions); forbidden: the other
# SCANS, less those a lowering holds
UNMODIFIED = ("unmodified",)
EVIDENCE = {
    "popc_b32": (r"POPC", 1, UNMODIFIED, ()),
    "popc_b64": (r"POPC", 2, UNMODIFIED, ((r"IADD3", "after", 1),)),
    # its operand is the high word, or the low word by a load predicated on the high word
    # being 0, which the gate counts as no load: "any"
    "clz_b64": (r"FLO\.U32", 1, ("any",), ((r"ISETP\.NE\.U32\.AND", "before", 1),
                                          (r"IADD3", "after", 3))),
    "bfind_u64": (r"FLO\.U32", 2, ("from_memory",), ((r"IADD3", "before", 1),)),
    # r"FLO" matches FLO.U32 by its base too: the one signed FLO and the two FLO.U32
    "bfind_s64": (r"FLO", 3, ("from_memory",), ((r"IADD3", "before", 1),)),
    "bfind_shiftamt_u64": (r"FLO\.U32\.SH", 2, UNMODIFIED, ((r"SEL", "after", 1),)),
    "bfind_shiftamt_s64": (r"FLO\.SH", 1, UNMODIFIED,
                           ((r"FLO\.U32\.SH", "after", 2), (r"SEL", "after", 1))),
    "brev_b64_lo": (r"BREV", 1, UNMODIFIED, ()),
    "brev_b64_hi": (r"BREV", 1, UNMODIFIED, ()),
    "cuda_ffsll": (r"FLO\.U32", 1, ("from_memory",), ((r"LOP3\.LUT", "before", 2),
                                             (r"IADD3", "after", 3))),
}
EVIDENCE |= {"cuda_popc": EVIDENCE["popc_b32"], "cuda_popcll": EVIDENCE["popc_b64"],
             "cuda_clzll": EVIDENCE["clz_b64"], "cuda_brevll_lo": EVIDENCE["brev_b64_lo"],
             "cuda_brevll_hi": EVIDENCE["brev_b64_hi"]}
HELD = {"bfind_s64": {r"FLO\.U32"}, "bfind_shiftamt_s64": {r"FLO\.U32\.SH"}}


def words() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, names): the distinct 64-bit words, each split into its halves."""
    w: list[int] = [0, M64]
    names = ["zero", "ones"]
    for k in range(64):
        w += [1 << k, (1 << k) - 1, (M64 << k) & M64, M64 ^ (1 << k)]
        names += [f"bit{k}", f"low{k}", f"high{k}", f"hole{k}"]
    rng = np.random.default_rng(SEED)
    for k, (x, y) in enumerate(rng.integers(0, 1 << 32, (N_RANDOM, 2), np.uint64)):
        w.append(int(y) << 32 | int(x))
        names.append(f"random{k}")
    for k, (x, y) in enumerate(rng.integers(0, 1 << 32, (64, 2), np.uint64)):
        v = (int(y) << 32 | int(x)) >> k
        w += [v, v ^ M64]
        names += [f"random_shr{k}", f"random_shr{k}_not"]
    # halves that differ in sign and zero-ness: a 32-bit value zero- or sign-extended (hi 0
    # or all ones under a random lo), and a random hi over a zero or all-ones lo
    for k, (x, y) in enumerate(rng.integers(0, 1 << 32, (N_SPLIT, 2), np.uint64)):
        w += [int(x), 0xFFFFFFFF << 32 | int(x), int(y) << 32, int(y) << 32 | 0xFFFFFFFF]
        names += [f"hi_zero{k}", f"hi_ones{k}", f"lo_zero{k}", f"lo_ones{k}"]
    _, first = np.unique(np.array(w, np.uint64), return_index=True)
    order = np.sort(first)  # the first name each distinct word had, in declaration order
    kept = np.array(w, np.uint64)[order]
    return ((kept & M32).astype(np.uint32), (kept >> np.uint64(32)).astype(np.uint32),
            np.array(names)[order])


def msb(x: np.ndarray) -> np.ndarray:
    """Position of the most significant 1 of each nonzero 64-bit x (garbage for 0)."""
    out = np.zeros(x.shape, np.uint64)
    for shift in (32, 16, 8, 4, 2, 1):
        high = (x >> (out + np.uint64(shift))) != 0
        out = np.where(high, out + np.uint64(shift), out)
    return out


def popc(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.uint64)
    for i in range(64):
        out += (x >> np.uint64(i)) & np.uint64(1)
    return out


def brev(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.uint64)
    for i in range(64):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(63 - i)
    return out


def model(lo: np.ndarray, hi: np.ndarray, op: int, packed: int) -> np.ndarray:
    """The PTX reading (popc, clz, bfind, brev over x = hi * 2**32 + lo) and CUDA's
    documented __ffsll, for the simulated device only: never evidence. `packed` is unused:
    the reading builds the same x whichever way the kernel did."""
    op = int(op)
    x = (hi << np.uint64(32)) | lo
    if op == 1:
        return popc(lo)
    if op == 2:
        return popc(x)
    if op == 3:
        return np.where(x == 0, np.uint64(64), np.uint64(63) - msb(x))
    if op in (4, 5, 6, 7):
        y = np.where((op in (5, 7)) & (hi >> np.uint64(31) == 1), ~x, x)
        found = msb(y)
        d = found if op in (4, 5) else np.uint64(63) - found
        return np.where(y == 0, NONE, d)
    if op in (8, 9):
        r = brev(x)
        return r & M32 if op == 8 else r >> np.uint64(32)
    low = x & (~x + np.uint64(1))
    return np.where(x == 0, np.uint64(0), msb(low) + np.uint64(1))


def source() -> str:
    parts = [header("bit-scan-64", "probes/bit_scan_64/generate.py", VENDOR)]
    for name, (_, _, text) in FORMS.items():
        if text.startswith("__") or text.startswith("("):
            parts.append("\n" + call_kernel(f"probe_{name}", INPUTS, text))
        else:
            uses = ("lo",) if name == "popc_b32" else INPUTS
            parts.append("\n" + asm_kernel(f"probe_{name}", INPUTS, text, uses))
    return "".join(parts)


def evidence(name: str) -> Evidence:
    sass, count, operands, companions = EVIDENCE[name]
    others = set(SCANS) - {sass} - HELD.get(name, set())
    return Evidence(sass, forbidden=tuple(sorted(others)), operands=operands, count=count,
                    lowered=LOWERED.get(name), companions=companions)


lo, hi, names = words()
PROBE = BitOpProbe(
    id="bit-scan-64", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("popc (.b32 .b64), clz.b64, bfind (.u64 .s64 .shiftamt), brev.b64 and "
             "__popc/__popcll/__clzll/__ffsll/__brevll over 64-bit words with their first "
             "and last set and clear bits at every position"),
    axes=(Axis.operands("word", names, lo=(lo, "bits 31:0 of the 64-bit operand"),
                        hi=(hi, "bits 63:32 of the 64-bit operand")),),
    ops=tuple(Op(name, evidence(name), model, facts={"op": op, "packed": packed})
              for name, (op, packed, _) in FORMS.items()),
    inputs=INPUTS,
)
