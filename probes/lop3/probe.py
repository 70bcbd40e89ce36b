"""lop3: PTX lop3.b32 with each of its 256 truth tables (immLut, an immediate: one kernel
runs all 256 on the same loaded words, generated from LUTS by
`python probes/lop3/generate.py`), over operand triples that put every (a, b, c) bit
combination in every byte (the ISA's own 0xF0/0xCC/0xAA words in all six assignments),
the two constant triples and seeded random triples."""

from __future__ import annotations

from itertools import permutations
from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, header, plot_kind, unrolled_kernel
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "lop3.cu"
LUTS = tuple(range(256))
N_RANDOM = 56
SEED = 0x5EED_0039_0003
PLANES = {"F0": 0xF0F0F0F0, "CC": 0xCCCCCCCC, "AA": 0xAAAAAAAA}


def triples() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a, b, c, names = [], [], [], []
    for order in permutations(PLANES):
        a.append(PLANES[order[0]])
        b.append(PLANES[order[1]])
        c.append(PLANES[order[2]])
        names.append("a" + order[0] + "_b" + order[1] + "_c" + order[2])
    for value, name in ((0, "zeros"), (0xFFFFFFFF, "ones")):
        a.append(value)
        b.append(value)
        c.append(value)
        names.append(name)
    rng = np.random.default_rng(SEED)
    for k, (x, y, z) in enumerate(rng.integers(0, 1 << 32, (N_RANDOM, 3), np.uint64)):
        a.append(int(x))
        b.append(int(y))
        c.append(int(z))
        names.append(f"random{k}")
    return (np.array(a, np.uint32), np.array(b, np.uint32), np.array(c, np.uint32),
            np.array(names))


def model(a: np.ndarray, b: np.ndarray, c: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """The PTX reading (immLut = F(0xF0, 0xCC, 0xAA)): bit i of d is bit
    4 a_i + 2 b_i + c_i of immLut. For the simulated device only: never evidence."""
    m = np.uint64(0xFFFFFFFF)
    out = np.zeros(np.broadcast_shapes(a.shape, lut.shape), np.uint64)
    for k in range(8):
        term = ((a if k & 4 else ~a & m) & (b if k & 2 else ~b & m) & (c if k & 1 else ~c & m))
        out |= np.where((lut >> np.uint64(k)) & np.uint64(1), term, np.uint64(0))
    return out


def source() -> str:
    return header("lop3", "probes/lop3/generate.py", VENDOR) + "\n" + unrolled_kernel(
        "probe_lop3", ("a", "b", "c"), "lop3.b32 %0, %1, %2, %3, {v};", LUTS)


a, b, c, names = triples()
HEX = {"display": "hex"}
PROBE = BitOpProbe(
    id="lop3", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary="lop3.b32: all 256 truth tables over bit-complete and random operand triples",
    axes=(Axis.numbered("triple", {"a": a, "b": b, "c": c,
                                   "pattern": names}, {"a": HEX, "b": HEX, "c": HEX}),
          Axis("lut", {"lut": np.array(LUTS, np.uint32)},
               {"lut": {"description": "immLut, an immediate of the instruction",
                        "display": "hex"}})),
    # SASS LOP3.LUT reads (a, b, c, immLut, predicate): one per truth table, each straight
    # from the three loads (tests/test_bitops.py reads each one's immLut off the SASS)
    ops=(Op("lop3", Evidence(r"LOP3\.LUT", count=len(LUTS),
                             operands=("unmodified", "unmodified", "unmodified")), model),),
    inputs=("a", "b", "c"), unrolled="lut",
    plots=plot_kind("truth-tables"),
)
