"""bfe-bfi: PTX bfe.u32, bfe.s32 and bfi.b32 over every position and length 0-33 and the
edges past them (63, 64, 255, 256, 257, 2**31, 2**32 - 1: only the low byte of each is
meant to count), on words whose bits name their positions (the five bit planes 0xAAAAAAAA
... 0xFFFF0000), the constants and seeded random words; bfi inserts into the complement of
its field word (so every bit says which operand it came from) or a random one.

sm_90 has no BFE or BFI: ptxas lowers both (PRMT for the low bytes of pos and len, then
SHF + SGXT, or BMSK + SHF + LOP3), and the evidence says so. The source is generated from
FORMS (`python probes/bfe_bfi/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, header, plot_kind
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "bfe_bfi.cu"
SEED = 0x5EED_0039_0005
N_RANDOM = 3
EDGES = (63, 64, 255, 256, 257, 0x80000000, 0xFFFFFFFF)
INPUTS = ("a", "b", "pos", "len")
FORMS = {"bfe_u32": ("bfe.u32 %0, %1, %2, %3;", ("a", "pos", "len")),
         "bfe_s32": ("bfe.s32 %0, %1, %2, %3;", ("a", "pos", "len")),
         "bfi_b32": ("bfi.b32 %0, %1, %2, %3, %4;", INPUTS)}
M32 = np.uint64(0xFFFFFFFF)


def words() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = [sum(((j >> p) & 1) << j for j in range(32)) for p in range(5)] + [0, 0xFFFFFFFF]
    names = [f"plane{p}" for p in range(5)] + ["zeros", "ones"]
    b = [x ^ 0xFFFFFFFF for x in a]
    rng = np.random.default_rng(SEED)
    for k, (x, y) in enumerate(rng.integers(0, 1 << 32, (N_RANDOM, 2), np.uint64)):
        a.append(int(x))
        b.append(int(y))
        names.append(f"random{k}")
    return np.array(a, np.uint32), np.array(b, np.uint32), np.array(names)


def places() -> np.ndarray:
    return np.concatenate([np.arange(34, dtype=np.uint64), np.array(EDGES, np.uint64)]
                          ).astype(np.uint32)


def _field(pos: np.ndarray, len_: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, l, k): pos and len restricted to 0..255 and the number of bits really inside a."""
    p, l_ = pos & np.uint64(0xFF), len_ & np.uint64(0xFF)
    avail = np.where(p < 32, np.uint64(32) - np.minimum(p, np.uint64(32)), np.uint64(0))
    return p, l_, np.minimum(l_, avail)


def _ones(k: np.ndarray) -> np.ndarray:
    return np.where(k >= 32, M32, (np.uint64(1) << np.minimum(k, np.uint64(63))) - np.uint64(1))


def bfe_model(signed: bool):
    """The PTX reading of bfe (.u32, or .s32 when `signed`): for the simulated device only,
    never evidence."""
    def bfe(a: np.ndarray, pos: np.ndarray, len: np.ndarray, **_: object) -> np.ndarray:
        p, l_, k = _field(pos, len)
        low = np.where(p < 32, a >> np.minimum(p, np.uint64(31)), np.uint64(0)) & _ones(k)
        top = np.minimum(p + l_ - np.uint64(1), np.uint64(31))
        sbit = (a >> np.where(l_ > 0, top, np.uint64(0))) & np.uint64(1)
        if not signed:
            sbit = np.zeros_like(sbit)
        sbit = np.where(l_ == 0, np.uint64(0), sbit)
        fill = (M32 << np.minimum(k, np.uint64(32))) & M32
        return low | np.where(sbit == 1, fill, np.uint64(0))
    return bfe


def bfi_model(a: np.ndarray, b: np.ndarray, pos: np.ndarray, len: np.ndarray, **_: object
              ) -> np.ndarray:
    """The PTX reading of bfi.b32: for the simulated device only, never evidence."""
    p, _, k = _field(pos, len)
    mask = (_ones(k) << np.minimum(p, np.uint64(32))) & M32
    return (b & ~mask & M32) | ((a << np.minimum(p, np.uint64(32))) & mask)


def source() -> str:
    return header("bfe-bfi", "probes/bfe_bfi/generate.py", VENDOR) + "".join(
        "\n" + asm_kernel(f"probe_{name}", INPUTS, text, uses)
        for name, (text, uses) in FORMS.items())


LOWERED_BFE = ("bfe.{t}32 has no SASS BFE on sm_90: ptxas takes the low bytes of pos and len "
               "(three PRMT), shifts a right by pos ({shf}) and keeps len bits ({sgxt})")
EVIDENCE = {
    "bfe_u32": Evidence(r"SGXT\.U32", forbidden=(r"SGXT", r"BFE.*"),
                        operands=("from_memory", "from_memory"),
                        lowered=LOWERED_BFE.format(t="u", shf="SHF.R.U32.HI",
                                                   sgxt="SGXT.U32, zero-extending"),
                        companions=((r"SHF\.R\.U32\.HI", "before", 1), (r"PRMT", "before", 3))),
    "bfe_s32": Evidence(r"SGXT", forbidden=(r"SGXT\.U32", r"BFE.*"),
                        operands=("from_memory", "from_memory"),
                        lowered=LOWERED_BFE.format(t="s", shf="SHF.R.S32.HI",
                                                   sgxt="SGXT, sign-extending"),
                        companions=((r"SHF\.R\.S32\.HI", "before", 1), (r"PRMT", "before", 3))),
    # LOP3.LUT (0xe2: (shifted & mask) | (b & ~mask)) reads (a << pos, the mask, b)
    "bfi_b32": Evidence(r"LOP3\.LUT", forbidden=(r"BFI.*",),
                        operands=("from_memory", "from_memory", "unmodified"),
                        lowered=("bfi.b32 has no SASS BFI on sm_90: ptxas takes the low bytes "
                                 "of pos and len (three PRMT), makes the field's mask (BMSK), "
                                 "shifts a to pos (SHF.L.U32) and merges it into b (LOP3.LUT)"),
                        companions=((r"BMSK", "before", 1), (r"SHF\.L\.U32", "before", 1),
                                    (r"PRMT", "before", 3))),
}
MODELS = {"bfe_u32": bfe_model(False), "bfe_s32": bfe_model(True), "bfi_b32": bfi_model}
FACTS = {"bfe_u32": (0, 0), "bfe_s32": (0, 1), "bfi_b32": (1, 0)}

a, b, names = words()
PROBE = BitOpProbe(
    id="bfe-bfi", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("bfe.u32/.s32 and bfi.b32 (lowered on sm_90): every pos and len 0-33 and the "
             "edges past 255, over bit-naming words"),
    axes=(Axis.operands("word", names, a=(a, "bfe's source; bfi's field"),
                        b=(b, "bfi's base (bfe ignores it)")),
          Axis("pos", {"pos": places()}),
          Axis("len", {"len": places()})),
    ops=tuple(Op(name, EVIDENCE[name], MODELS[name],
                 facts={"insert": FACTS[name][0], "signed": FACTS[name][1]})
              for name in FORMS),
    inputs=INPUTS,
    plots=plot_kind("field-map"),
)
