"""lop3-pred: PTX's predicate-output form of lop3, `lop3.BoolOp.b32 d|p, a, b, c, immLut,
q` (.BoolOp = .or, .and; PTX ISA 8.2, sm_70), with each of its 256 truth tables (immLut, an
immediate: each kernel runs all 256 on the same loaded words), q = 0 and q = 1. Four
kernels: d and p (a 0/1 word by selp) under each BoolOp. Operand triples make d zero and
nonzero for many tables: every one of the eight (a, b, c) bit combinations alone, every pair
of them, the ISA's own 0xF0/0xCC/0xAA words in all six assignments and seeded random
triples. The source is generated from FORMS (`python probes/lop3_pred/generate.py`)."""

from __future__ import annotations

from itertools import combinations, permutations
from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, header, unrolled_kernel
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "lop3_pred.cu"
LUTS = tuple(range(256))
N_RANDOM = 16
SEED = 0x5EED_0039_0083
PLANES = {"F0": 0xF0F0F0F0, "CC": 0xCCCCCCCC, "AA": 0xAAAAAAAA}
INPUTS = ("a", "b", "c", "q")
# q is the predicate operand, set from its word (setp.ne: q = word != 0); d is written to %0
# (the d kernels) or sunk (`_`, the p kernels, which read p through selp)
Q = "setp.ne.u32 q, %4, 0; "
FORMS = {  # kernel -> (boolop: 1 .or / 0 .and, out: 0 d / 1 p, how it is written)
    "or_d": (1, 0, "{{ .reg .pred p, q; " + Q + "lop3.or.b32 %0|p, %1, %2, %3, {v}, q; }}"),
    "or_p": (1, 1, "{{ .reg .pred p, q; " + Q + "lop3.or.b32 _|p, %1, %2, %3, {v}, q; "
                   "selp.u32 %0, 1, 0, p; }}"),
    "and_d": (0, 0, "{{ .reg .pred p, q; " + Q + "lop3.and.b32 %0|p, %1, %2, %3, {v}, q; }}"),
    "and_p": (0, 1, "{{ .reg .pred p, q; " + Q + "lop3.and.b32 _|p, %1, %2, %3, {v}, q; "
                    "selp.u32 %0, 1, 0, p; }}"),
}


def combo(k: int) -> tuple[int, int, int]:
    """(a, b, c) words whose every bit is the combination k = 4 a + 2 b + c."""
    return tuple(0xFFFFFFFF if k >> s & 1 else 0 for s in (2, 1, 0))


def triples() -> tuple[np.ndarray, ...]:
    rows: list[tuple[int, int, int]] = []
    names: list[str] = []
    for k in range(8):
        rows.append(combo(k))
        names.append(f"only{k}")
    for j, k in combinations(range(8), 2):  # bits 15:0 combination j, bits 31:16 k
        rows.append(tuple((x & 0xFFFF) | (y & 0xFFFF0000) for x, y in zip(combo(j), combo(k),
                                                                            strict=True)))
        names.append(f"pair{j}{k}")
    for order in permutations(PLANES):
        rows.append(tuple(PLANES[o] for o in order))
        names.append("a" + order[0] + "_b" + order[1] + "_c" + order[2])
    rng = np.random.default_rng(SEED)
    for k, row in enumerate(rng.integers(0, 1 << 32, (N_RANDOM, 3), np.uint64)):
        rows.append(tuple(int(x) for x in row))
        names.append(f"random{k}")
    words = np.array(rows, np.uint64)
    n = len(rows)
    # each triple with q = 0 and with q = 1
    a, b, c = (np.tile(words[:, i], 2).astype(np.uint32) for i in range(3))
    q = np.repeat(np.array([0, 1], np.uint32), n)
    return a, b, c, q, np.array([f"{m}_q{v}" for v in (0, 1) for m in names])


def lop3(a: np.ndarray, b: np.ndarray, c: np.ndarray, lut: np.ndarray) -> np.ndarray:
    m = np.uint64(0xFFFFFFFF)
    out = np.zeros(np.broadcast_shapes(a.shape, lut.shape), np.uint64)
    for k in range(8):
        term = ((a if k & 4 else ~a & m) & (b if k & 2 else ~b & m) & (c if k & 1 else ~c & m))
        out |= np.where((lut >> np.uint64(k)) & np.uint64(1), term, np.uint64(0))
    return out


def model(a: np.ndarray, b: np.ndarray, c: np.ndarray, q: np.ndarray, lut: np.ndarray,
          boolop: int, out: int) -> np.ndarray:
    """The PTX reading: d = F(a, b, c) with immLut = F(0xF0, 0xCC, 0xAA); p = (d != 0)
    BoolOp q. For the simulated device only: never evidence."""
    d = lop3(a, b, c, lut)
    if not int(out):
        return d
    p = (d != 0) | (q != 0) if int(boolop) else (d != 0) & (q != 0)
    return p.astype(np.uint64)


def source() -> str:
    parts = [header("lop3-pred", "probes/lop3_pred/generate.py", VENDOR)]
    for name, (_, _, asm) in FORMS.items():
        parts.append("\n" + unrolled_kernel(f"probe_{name}", INPUTS, asm, LUTS))
    return "".join(parts)


# SASS: .or is LOP3.LUT with q as its predicate operand, .and LOP3.LUT.PAND; p is the
# predicate destination (`LOP3.LUT P1, RZ, a, b, c, immLut, P0`), read by a SEL per table.
# In the d kernels p is dead and ptxas writes d alone (`LOP3.LUT R13, a, b, c, immLut, P0`).
SASS = {1: r"LOP3\.LUT", 0: r"LOP3\.LUT\.PAND"}


def evidence(name: str) -> Evidence:
    boolop, out, _ = FORMS[name]
    # a, b, c straight from their loads, immLut any, q a predicate set from a loaded word
    # (a q folded to PT or !PT fails); p's d is RZ (the sink)
    sources = ("unmodified",) * 3 + ("any", "from_memory")
    return Evidence(SASS[boolop], forbidden=(SASS[1 - boolop],), count=len(LUTS),
                    operands=("any", *sources) if out else sources,
                    companions=((r"SEL", "after", None),) if out else ())


a, b, c, q, names = triples()
HEX = {"display": "hex"}
PROBE = BitOpProbe(
    id="lop3-pred", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("lop3.{or,and}.b32 d|p: all 256 truth tables, q = 0 and 1, d and p, over "
             "triples that make d zero and nonzero"),
    axes=(Axis.numbered("triple", {"a": a, "b": b, "c": c, "q": q, "pattern": names},
                        {"a": HEX, "b": HEX, "c": HEX,
                         "q": {"description": "predicate operand q = (word != 0)"}}),
          Axis("lut", {"lut": np.array(LUTS, np.uint32)},
               {"lut": {"description": "immLut, an immediate of the instruction",
                        "display": "hex"}})),
    ops=tuple(Op(name, evidence(name), model, facts={"boolop": boolop, "out": out})
              for name, (boolop, out, _) in FORMS.items()),
    inputs=INPUTS, unrolled="lut",
)
