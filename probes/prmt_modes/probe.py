"""prmt-modes: PTX prmt.b32's six special modes (.f4e .b4e .rc8 .ecl .ecr .rc16), each over
every 8-bit selector value and 32 random 32-bit ones, on byte-named operand pairs (byte k of
{b, a} holds k + 1, with bit 7 set on no byte, every byte or one byte) and random pairs.

The mode is an immediate of the instruction, so each is a kernel of its own; the source is
generated from MODES (`python probes/prmt_modes/generate.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probelab.kits.bitops import Axis, BitOpProbe, Op, asm_kernel, header, plot_kind, word_pairs
from probelab.probe import Evidence, Rendered

HERE = Path(__file__).parent
VENDOR = "nvidia"  # PTX's vendor: its compilers' uint32_t line in the source
SOURCE = HERE / "prmt_modes.cu"
# mode -> its number in the SASS encoding (PRMT's mode field: 0 is the default form)
MODES = {"f4e": 1, "b4e": 2, "rc8": 3, "ecl": 4, "ecr": 5, "rc16": 6}
N_RANDOM_PAIRS = 6
N_RANDOM_SELECTORS = 32
SEED = 0x5EED_0039


def operand_pairs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, pattern): byte k of (b << 32) | a is k + 1, bit 7 set on the pattern's bytes
    (byte-perm's pairs), then random pairs."""
    patterns = {"msb_none": set(), "msb_all": set(range(8))}
    patterns |= {f"msb_byte{k}": {k} for k in range(8)}
    return word_pairs({name: int.from_bytes(bytes((k + 1) | (0x80 if k in signs else 0)
                                                  for k in range(8)), "little")
                       for name, signs in patterns.items()}, SEED, N_RANDOM_PAIRS)


def selectors() -> np.ndarray:
    rng = np.random.default_rng([SEED, 2])
    high = rng.integers(1 << 8, 1 << 32, N_RANDOM_SELECTORS, np.uint64)
    return np.concatenate([np.arange(256, dtype=np.uint64), high]).astype(np.uint32)


def read_byte(mode: int, ctl: np.ndarray, k: int) -> np.ndarray:
    """Source byte index of output byte k under `mode`, control ctl = c & 3."""
    return {1: ctl + k, 2: (8 + ctl - k) & 7, 3: ctl, 4: np.maximum(ctl, k),
            5: np.minimum(ctl, k), 6: (k & 1) + 2 * (ctl & 1)}[mode]


def model(a: np.ndarray, b: np.ndarray, selector: np.ndarray, mode: int) -> np.ndarray:
    """The PTX reading of prmt.b32.<mode> (the mode table of the PTX ISA's prmt section),
    for the simulated device only: never evidence."""
    src = (b << np.uint64(32)) | a
    ctl = (selector & np.uint64(3)).astype(np.int64)
    out = np.zeros(np.broadcast_shapes(a.shape, selector.shape), np.uint64)
    for k in range(4):
        pick = read_byte(int(mode), ctl, k).astype(np.uint64)
        out |= ((src >> (np.uint64(8) * pick)) & np.uint64(0xFF)) << np.uint64(8 * k)
    return out


def source() -> str:
    return header("prmt-modes", "probes/prmt_modes/generate.py", VENDOR) + "".join(
        "\n" + asm_kernel(f"probe_{m}", ("a", "b", "selector"),
                          f"prmt.b32.{m} %0, %1, %2, %3;") for m in MODES)


def evidence(mode: str) -> Evidence:
    # SASS PRMT reads (a, selector, b); the mode is a suffix of the mnemonic. A default-mode
    # PRMT in the kernel would mean the mode was lowered to something else.
    return Evidence(rf"PRMT\.{mode.upper()}", forbidden=(r"PRMT",),
                    operands=("unmodified", "unmodified", "unmodified"))


a, b, pattern = operand_pairs()
PROBE = BitOpProbe(
    id="prmt-modes", version="1", targets=("sm_*",), vendor=VENDOR,
    source=Rendered(SOURCE, source),
    summary=("prmt.b32 .f4e/.b4e/.rc8/.ecl/.ecr/.rc16: every 8-bit selector and random ones "
             "over byte-named operand pairs"),
    axes=(Axis.operands("word", pattern, a=(a, "source bytes 0-3"), b=(b, "source bytes 4-7")),
          Axis("selector", {"selector": selectors()},
               {"selector": {"description": "operand c", "display": "hex"}})),
    ops=tuple(Op(m, evidence(m), model, facts={"mode": n}) for m, n in MODES.items()),
    inputs=("a", "b", "selector"),
    plots=plot_kind("selector-map"),
)
