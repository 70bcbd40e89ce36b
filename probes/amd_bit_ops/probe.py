"""amd-bit-ops: the AMD VALU bit instructions whose edge cases kernel engineers trip on,
one kernel each, over one grid of cases (a, b, c): v_bcnt_u32_b32 (popcount of a plus b),
v_ffbh_u32 and v_ffbl_b32 (first set bit from the top and the bottom; 0), v_ffbh_i32 (first
bit unlike the sign; 0 and -1), v_bfrev_b32, v_bfe_u32 and v_bfe_i32 (offset b, width c:
which of their bits count, width 0, offset + width past 32), v_bfi_b32 (mask a selects b,
else c) and v_alignbit_b32 ({a, b} shifted right by c).

RDNA (gfx11+) renamed three of them: v_ffbh_u32 is v_clz_i32_u32, v_ffbl_b32 v_ctz_i32_b32,
v_ffbh_i32 v_cls_i32 (the assembler still takes the old names). Every kernel reaches its
instruction through a clang builtin where one exists in clang 19 and 22, else inline asm
(v_ffbh_i32: no __builtin_amdgcn_sffbh; v_bfi_b32: none). The source is generated from
FORMS (`python probes/amd_bit_ops/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op
from probelab.probe import Evidence, Rendered
from probelab.vendors import VENDORS

HERE = Path(__file__).parent
VENDOR = "amd"
SOURCE = HERE / "amd_bit_ops.hip"
SEED = 0x5EED_00AB_0001
M32 = np.uint64(0xFFFFFFFF)
# offsets, widths and shift amounts past 0..63: each keeps a different value under 5, 6 and
# 8 low bits (64: 0, 0, 64; 288: 0, 32, 32; 200: 8, 8, 200), or is huge
EDGES = (64, 65, 72, 100, 128, 200, 255, 256, 257, 288, 0x80000010, 0xFFFFFFFF)
INPUTS = ("a", "b", "c")
# the mnemonic as CDNA (gfx9) and as RDNA4 (gfx12) disassemble it
ENC = r"(_e32|_e64)?"  # the VOP1 and VOP3 encodings' suffixes
FFBH_U32 = rf"(v_ffbh_u32|v_clz_i32_u32){ENC}"
FFBH_I32 = rf"(v_ffbh_i32|v_cls_i32){ENC}"
FFBL_B32 = rf"(v_ffbl_b32|v_ctz_i32_b32){ENC}"
GUARDS = (r"v_min_u32\w*", r"v_cndmask_b32\w*")  # a zero guard the compiler might add
# kernel -> (op number, how it is written ({a} {b} {c}: the loaded words; "asm:" inline
# asm, %1 %2 %3 the words it uses), instruction regex, forbidden relatives)
FORMS = {
    "bcnt": (1, "__builtin_popcount({a}) + {b}", r"v_bcnt_u32_b32", ()),
    "ffbh_u32": (2, "__builtin_clz({a})", FFBH_U32, (FFBH_I32, FFBL_B32, *GUARDS)),
    "ffbh_i32": (3, "asm:v_ffbh_i32 %0, %1", FFBH_I32, (FFBH_U32, FFBL_B32, *GUARDS)),
    "ffbl_b32": (4, "__builtin_ctz({a})", FFBL_B32, (FFBH_U32, FFBH_I32, *GUARDS)),
    "bfrev": (5, "__builtin_bitreverse32({a})", rf"v_bfrev_b32{ENC}", ()),
    "bfe_u32": (6, "__builtin_amdgcn_ubfe({a}, {b}, {c})", r"v_bfe_u32", (r"v_bfe_i32",)),
    "bfe_i32": (7, "(uint32_t)__builtin_amdgcn_sbfe((int){a}, {b}, {c})", r"v_bfe_i32",
                (r"v_bfe_u32",)),
    "bfi": (8, "asm:v_bfi_b32 %0, %1, %2, %3", r"v_bfi_b32", ()),
    "alignbit": (9, "__builtin_amdgcn_alignbit({a}, {b}, {c})", r"v_alignbit_b32",
                 (r"v_alignbyte_b32",)),
}
# the operands each instruction reads, in disassembly order (v_ffbh/v_bfrev: src0 only)
READS = {1: ("a", "b"), 2: ("a",), 3: ("a",), 4: ("a",), 5: ("a",)}


def reads(name: str) -> tuple[str, ...]:
    return READS.get(FORMS[name][0], INPUTS)


def _random(n: int, stream: int) -> list[int]:
    rng = np.random.default_rng([SEED, stream])
    return [int(x) for x in rng.integers(0, 1 << 32, n, np.uint64)]


def scan_words() -> tuple[list[int], list[str]]:
    """0, all ones, and for every k the single bit, the low run 2**k - 1, the high run
    ~(2**k - 1), the hole ~(1 << k); then seeded random words and random words shifted right
    by every amount with their complements; each word once (its first name)."""
    w: list[int] = [0, 0xFFFFFFFF]
    names = ["zero", "ones"]
    for k in range(32):
        w += [1 << k, (1 << k) - 1, (0xFFFFFFFF << k) & 0xFFFFFFFF, 0xFFFFFFFF ^ (1 << k)]
        names += [f"bit{k}", f"low{k}", f"high{k}", f"hole{k}"]
    for k, x in enumerate(_random(64, 1)):
        w.append(x)
        names.append(f"random{k}")
    for k, x in enumerate(_random(32, 2)):
        w += [x >> k, (x >> k) ^ 0xFFFFFFFF]
        names += [f"random_shr{k}", f"random_shr{k}_not"]
    seen: dict[int, str] = {}
    for x, name in zip(w, names, strict=True):
        seen.setdefault(x, name)
    return list(seen), list(seen.values())


def places() -> list[int]:
    return [*range(64), *EDGES]


def cases() -> dict[str, list]:
    """Every case (a, b, c) with its family and pattern name:
    scan: each scan word as a, b = c = 0 (bcnt adds nothing);
    field: a in {all ones, the sign bit alone, 3 random words} x offset b x width c, each
    over 0..63 and EDGES;
    align: (a, b) in {3 random pairs, (ones, 0), (0, ones)} x shift c over 0..63 and EDGES;
    insert: mask a in {0, ones, each single bit, each low run, 8 random} x 4 random (b, c);
    count: a in {0, ones, the sign bit, 6 random} x addend b in {0, 1, 0x7fffffff,
    0xffffffff, 3 random} (the sum wraps), c = 0."""
    out: dict[str, list] = {"a": [], "b": [], "c": [], "family": [], "pattern": []}

    def add(family: str, pattern: str, a: int, b: int, c: int) -> None:
        for key, value in zip(out, (a, b, c, family, pattern), strict=True):
            out[key].append(value)

    for x, name in zip(*scan_words(), strict=True):
        add("scan", name, x, 0, 0)
    field = {"ones": 0xFFFFFFFF, "sign": 0x80000000,
             **{f"random{k}": x for k, x in enumerate(_random(3, 3))}}
    for name, x in field.items():
        for off in places():
            for width in places():
                add("field", name, x, off, width)
    pairs = {f"random{k}": (x, y) for k, (x, y) in
             enumerate(zip(_random(3, 4), _random(3, 5), strict=True))}
    pairs |= {"ones_zero": (0xFFFFFFFF, 0), "zero_ones": (0, 0xFFFFFFFF)}
    for name, (hi, lo) in pairs.items():
        for shift in places():
            add("align", name, hi, lo, shift)
    masks = {"zero": 0, "ones": 0xFFFFFFFF, **{f"bit{k}": 1 << k for k in range(32)},
             **{f"low{k}": (1 << k) - 1 for k in range(1, 32)},
             **{f"random{k}": x for k, x in enumerate(_random(8, 6))}}
    operands = list(zip(_random(4, 7), _random(4, 8), strict=True))
    for name, mask in masks.items():
        for k, (b, c) in enumerate(operands):
            add("insert", f"{name}/{k}", mask, b, c)
    words = {"zero": 0, "ones": 0xFFFFFFFF, "sign": 0x80000000,
             **{f"random{k}": x for k, x in enumerate(_random(6, 9))}}
    addends = [0, 1, 0x7FFFFFFF, 0xFFFFFFFF, *_random(3, 10)]
    for name, x in words.items():
        for k, b in enumerate(addends):
            add("count", f"{name}/{k}", x, b, 0)
    return out


# ---- the ISA's reading, for the simulated device only: never evidence ----

def _msb(x: np.ndarray) -> np.ndarray:
    """Position of the most significant 1 of each nonzero x (0 for 0)."""
    out = np.zeros(x.shape, np.uint64)
    for shift in (16, 8, 4, 2, 1):
        high = (x >> (out + np.uint64(shift))) != 0
        out = np.where(high, out + np.uint64(shift), out)
    return out


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.sum([(x >> np.uint64(i)) & np.uint64(1) for i in range(32)], axis=0,
                  dtype=np.uint64)


def _bfrev(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.uint64)
    for i in range(32):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(31 - i)
    return out


def _ones(k: np.ndarray) -> np.ndarray:
    """(1 << k) - 1 for k in 0..32."""
    return (np.uint64(1) << k) - np.uint64(1)


def bfe(a: np.ndarray, b: np.ndarray, c: np.ndarray, signed: bool, bits: int = 5
        ) -> np.ndarray:
    """v_bfe_u32 / v_bfe_i32 with offset and width read from their low `bits` bits (the
    ISA: 5); a field reaching past bit 31 takes zeros (u32) or the sign (i32) there."""
    keep = np.uint64((1 << bits) - 1)
    off, width = b & keep, np.minimum(c & keep, np.uint64(32))
    neg = (a >> np.uint64(31)) & np.uint64(1)
    fill = np.where(neg == 1, M32, np.uint64(0)) if signed else np.zeros_like(a)
    wide = (fill << np.uint64(32)) | a  # a, sign- (or zero-) extended to 64 bits
    shifted = np.where(off < 32, wide >> np.minimum(off, np.uint64(63)),
                       fill) & M32
    field = shifted & _ones(width)
    if not signed:
        return field
    top = (field >> np.maximum(width, np.uint64(1)) - np.uint64(1)) & np.uint64(1)
    extend = (width > 0) & (width < 32) & (top == 1)
    return np.where(extend, field | ((M32 << width) & M32), field)


def model(a: np.ndarray, b: np.ndarray, c: np.ndarray, op: np.uint64) -> np.ndarray:
    """The ISA documents' reading of each instruction (op: the kernel's FORMS number)."""
    op = int(op)
    if op == 1:
        return (_popcount(a) + b) & M32
    if op in (2, 3, 4):
        x = a
        if op == 3:
            x = np.where(a >> np.uint64(31) == 1, ~a & M32, a)
        if op == 4:
            x = a & ((~a + np.uint64(1)) & M32)
        found = _msb(x) if op == 4 else np.uint64(31) - _msb(x)
        return np.where(x == 0, M32, found)
    if op == 5:
        return _bfrev(a)
    if op in (6, 7):
        return bfe(a, b, c, signed=op == 7)
    if op == 8:
        return (a & b) | (~a & M32 & c)
    s = c & np.uint64(31)
    return (((a << np.uint64(32)) | b) >> s) & M32


# ---- the kernel source ----

def header() -> str:
    return ("// GENERATED by probes/amd_bit_ops/generate.py: do not edit.\n"
            "// amd-bit-ops: one kernel per VALU bit instruction. Cell i runs on thread i\n"
            "// (params[0] cells); every kernel loads a[i], b[i], c[i] from global memory, so\n"
            "// nothing can be constant-folded, runs one builtin or inline-asm instruction on\n"
            "// the words it reads and stores the result.\n"
            "// No headers: built offline with clang -nogpuinc -nogpulib; every definition\n"
            "// below is guarded or identical to HIP's, so hiprtc builds it unchanged.\n"
            "#ifndef __global__\n#define __global__ __attribute__((global))\n#endif\n"
            "#ifndef __device__\n#define __device__ __attribute__((device))\n#endif\n"
            + VENDORS[VENDOR].uint32_typedef +
            "\nstatic __device__ __attribute__((always_inline)) uint32_t probe_cell() {\n"
            "    return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()\n"
            "           + __builtin_amdgcn_workitem_id_x();\n}\n")


def kernel_text(name: str) -> str:
    _, text, _, _ = FORMS[name]
    args = ", ".join(["const uint32_t* params", *(f"const uint32_t* {n}" for n in INPUTS),
                      "uint32_t* out"])
    loads = "".join(f"    const uint32_t {n}_ = {n}[i];\n" for n in reads(name))
    if text.startswith("asm:"):
        operands = ", ".join(f'"v"({n}_)' for n in reads(name))
        body = ("    uint32_t r;\n"
                f'    asm volatile("{text[4:]}" : "=v"(r) : {operands});\n'
                "    out[i] = r;\n")
    else:
        body = f"    out[i] = {text.format(**{n: f'{n}_' for n in INPUTS})};\n"
    return (f'extern "C" __global__ void probe_{name}({args}) {{\n'
            "    const uint32_t i = probe_cell();\n"
            "    if (i >= params[0]) return;\n" + loads + body + "}\n")


def source() -> str:
    return header() + "".join("\n" + kernel_text(name) for name in FORMS)


def evidence(name: str) -> Evidence:
    """Exactly one of the claimed instruction (CDNA's or RDNA4's name), none of its
    relatives, and every word it reads straight from its global load."""
    _, _, claimed, forbidden = FORMS[name]
    return Evidence(claimed, forbidden=forbidden,
                    operands=("unmodified",) * len(reads(name)))


grid = cases()
HEX = {"display": "hex"}
PROBE = BitOpProbe(
    id="amd-bit-ops", version="1", vendor=VENDOR,
    targets=("gfx90a", "gfx942", "gfx950", "gfx1200", "gfx1201"),
    source=Rendered(SOURCE, source),
    summary=("v_bcnt, v_ffbh (u32, i32), v_ffbl, v_bfrev, v_bfe (u32, i32), v_bfi, "
             "v_alignbit: zero and all-ones words, every bit position, offsets, widths and "
             "shifts 0..63 and past"),
    axes=(Axis.numbered("case", {
        "a": np.array(grid["a"], np.uint32), "b": np.array(grid["b"], np.uint32),
        "c": np.array(grid["c"], np.uint32), "family": np.array(grid["family"]),
        "pattern": np.array(grid["pattern"])},
        {"a": {"description": "src0: the word scanned or counted; bfe's source; bfi's mask; "
                              "alignbit's high word", **HEX},
         "b": {"description": "src1: bcnt's addend; bfe's offset; bfi's ones-side word; "
                              "alignbit's low word", **HEX},
         "c": {"description": "src2: bfe's width; bfi's zeros-side word; alignbit's shift",
               **HEX}}),),
    ops=tuple(Op(name, evidence(name), model, facts={"op": FORMS[name][0]}) for name in FORMS),
    inputs=INPUTS,
)
