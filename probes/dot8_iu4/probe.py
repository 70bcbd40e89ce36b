"""dot8-iu4: which B nibble each A nibble of gfx12's v_dot8_i32_iu4 (and v_dot8_u32_u4)
meets, and how each operand's nibbles are read (signed or not), per sign-flag variant.
Seeds/000 section 5 reports "dots mismatched element pairs" on this path; nobody there
measured the pairing. No pairing and no signedness is assumed here.

Stimulus, per kernel, one thread per case:
- one-hot: A holds code av at nibble a_nib and 0 elsewhere, B code bv at nibble b_nib, C a
  random word; every (a_nib, b_nib) and all 16 x 16 codes. `product` = D - C is what the unit
  added for that pair of nibbles and codes.
- dense: random A, B and C words. `d_dense` is D as it came; `linear` says whether D - C is
  the sum of the one-hot products of the case's 64 nibble pairs (measured, no law assumed).
Decoded from `product` alone: `partner` (the B nibble an A nibble meets) and `a_signed`,
`b_signed` (how codes 8-15 were read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab.kits.sentinels import FLAGS, INVALID, NONE
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

HERE = Path(__file__).parent
NIBBLES = 8
CODES = 16  # what a 4-bit nibble can hold
PAIRS = CODES * CODES  # pair = 16 * av + bv
ONES = CODES + 1  # the pair (av, bv) = (1, 1)
ONE_HOT = NIBBLES * NIBBLES * PAIRS
N_DENSE = 256
LANES = 32  # the kernels' bound is per wave: the launch holds whole waves
SEED = 0x5EED_0008
MASK = 0xFFFFFFFF
# kernel -> (A signed, B signed) as the builtin's flags ask; udot8 has no flags (unsigned)
VARIANTS = MappingProxyType({"iu4_ss": (1, 1), "iu4_su": (1, 0), "iu4_us": (0, 1),
                             "iu4_uu": (0, 0), "u4": (0, 0)})
# Every gfx12 integer dot8, by its disassembled name. clang 22 also assembles the gfx9 name
# v_dot8_i32_i4 on gfx12 (as v_dot8_i32_iu4); forbidding it costs nothing.
DOT8 = ("v_dot8_i32_iu4", "v_dot8_u32_u4", "v_dot8_i32_i4")
SIGNEDNESS = {"flag_values": np.array([0, 1, NONE, INVALID], np.uint32),
              "flag_meanings": "unsigned signed none invalid"}


def instruction(kernel: str) -> str:
    return "v_dot8_u32_u4" if kernel == "u4" else "v_dot8_i32_iu4"


def evidence(kernel: str) -> Evidence:
    """Exactly one dot8 of the kernel's form, no other dot product, with exactly the sign
    flags the kernel asks for (neg_lo bit i: operand i signed) and no clamp, and A, B, C each
    straight from a global load."""
    claimed = instruction(kernel)
    others = tuple(m for m in DOT8 if m != claimed)
    a, b = VARIANTS[kernel]
    flags = (f"neg_lo:[{a},{b},0]",) if a or b else ()
    return Evidence(claimed, forbidden=(*others, r"v_dot2\w*", r"v_dot4\w*"),
                    operands=("unmodified", "unmodified", "unmodified"), modifiers=flags)


# ---- the simulated unit (tests and the sim backend only; never evidence) ----

@dataclass(frozen=True)
class Law:
    """A dot8 unit: A nibble i meets B nibble pairing[i]; each operand's codes 8-15 are read
    as -8..-1 (signed) or as 8..15."""

    pairing: tuple[int, ...]
    a_signed: bool
    b_signed: bool


def documented_law(kernel: str) -> Law:
    """Nibble i meets nibble i, signed as the builtin's flags ask (the ISA's reading)."""
    a_signed, b_signed = VARIANTS[kernel]
    return Law(tuple(range(NIBBLES)), bool(a_signed), bool(b_signed))


def random_law(rng: np.random.Generator) -> Law:
    """A unit nobody documented: any pairing permutation, any signedness."""
    return Law(tuple(int(j) for j in rng.permutation(NIBBLES)), bool(rng.integers(2)),
               bool(rng.integers(2)))


def nibbles(words: np.ndarray, signed: bool) -> np.ndarray:
    """(..., 8) int64: nibble i of each word, two's complement where `signed`."""
    shift = 4 * np.arange(NIBBLES, dtype=np.uint32)
    codes = ((np.asarray(words, np.uint32)[..., None] >> shift) & 0xF).astype(np.int64)
    return np.where(codes >= 8, codes - 16, codes) if signed else codes


def dot8(law: Law, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D of a `law` unit: C + the sum of A nibble i x B nibble pairing[i], mod 2**32."""
    x = nibbles(a, law.a_signed)
    y = nibbles(b, law.b_signed)[..., list(law.pairing)]
    return ((np.asarray(c, np.int64) + (x * y).sum(-1)) & MASK).astype(np.uint32)


# ---- the decode: everything from measured products ----

def partners(product: np.ndarray) -> np.ndarray:
    """(kernel, a_nib): the one B nibble whose (1, 1) product is nonzero; NONE where no B
    nibble is, INVALID where several are."""
    hits = product[..., ONES] != 0
    count = hits.sum(-1)
    return np.where(count == 1, hits.argmax(-1), np.where(count == 0, NONE, INVALID)
                    ).astype(np.uint32)


def signedness(seen: np.ndarray, unit: np.ndarray, paired: np.ndarray) -> np.ndarray:
    """(kernel,): 1 where every paired nibble's product over the 16 codes (against a 1) is
    the code read as two's complement times the (1, 1) product, 0 where it is the code read
    unsigned, NONE where no nibble is paired, INVALID where neither holds throughout."""
    v = np.arange(CODES)
    scaled = unit[..., None]
    signed = (seen == np.where(v >= 8, v - 16, v) * scaled).all(-1) | ~paired
    unsigned = (seen == v * scaled).all(-1) | ~paired
    return np.select([~paired.any(-1), signed.all(-1), unsigned.all(-1)], [NONE, 1, 0],
                     INVALID).astype(np.uint32)


def readings(product: np.ndarray, partner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a_signed, b_signed) per kernel, read at each A nibble's measured partner."""
    paired = partner < NIBBLES
    j = np.where(paired, partner, 0).astype(np.intp)[..., None, None]
    met = np.take_along_axis(product, j, axis=2)[:, :, 0]  # (kernel, a_nib, pair)
    table = met.view(np.int32).astype(np.int64).reshape(*met.shape[:2], CODES, CODES)
    unit = table[..., 1, 1]
    return (signedness(table[..., :, 1], unit, paired),
            signedness(table[..., 1, :], unit, paired))


def superposed(product: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
               ) -> np.ndarray:
    """(kernel, case): C + the one-hot products of the case's 64 (A nibble, B nibble) code
    pairs, mod 2**32: what D is if the unit adds independent nibble-pair terms."""
    codes = nibbles(a, False)[:, :, None] * CODES + nibbles(b, False)[:, None, :]
    i = np.arange(NIBBLES)
    terms = product[:, i[None, :, None], i[None, None, :], codes].astype(np.uint64)
    return ((np.asarray(c, np.uint64) + terms.sum((-2, -1))) & MASK).astype(np.uint32)


class Dot8Iu4:
    id = "dot8-iu4"
    version = "1"
    summary = ("v_dot8_i32_iu4 / v_dot8_u32_u4 (gfx12): which B nibble each A nibble meets, "
               "and how each sign flag reads codes 8-15")
    targets = ("gfx1200", "gfx1201")
    observables = MappingProxyType({
        "product": ("kernel", "a_nib", "b_nib", "pair"),
        "partner": ("kernel", "a_nib"),
        "a_signed": ("kernel",),
        "b_signed": ("kernel",),
        "linear": ("kernel", "case"),
        "d_dense": ("kernel", "case"),
    })
    plots = MappingProxyType({})

    def __init__(self) -> None:
        # The simulated unit's law per kernel: hidden (random, seeded) unless a test swaps
        # in another. Never documentation, never evidence.
        self.sim_laws: dict[str, Law] = {}

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "amd":
            return []
        return [Kernel(name, f"probe_dot8_{name}", HERE / "dot8_iu4.hip", "amd",
                       evidence(name)) for name in VARIANTS]

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        rng = np.random.default_rng(SEED)

        def words(*shape: int) -> np.ndarray:
            return rng.integers(0, 1 << 32, shape, np.uint64).astype(np.uint32)

        nib = np.arange(NIBBLES, dtype=np.uint32)
        av, bv = np.divmod(np.arange(PAIRS, dtype=np.uint32), np.uint32(CODES))
        hex_ = {"display": "hex"}
        return xr.Dataset(coords={
            "kernel": ("kernel", np.array(list(VARIANTS))),
            "neg_a": ("kernel", np.array([v[0] for v in VARIANTS.values()], np.uint32),
                      {"description": "the builtin's A sign flag (neg_lo bit 0); 0 for udot8"}),
            "neg_b": ("kernel", np.array([v[1] for v in VARIANTS.values()], np.uint32),
                      {"description": "the builtin's B sign flag (neg_lo bit 1); 0 for udot8"}),
            "a_nib": ("a_nib", nib, {"description": "A's nibble i: bits 4i..4i+3"}),
            "b_nib": ("b_nib", nib, {"description": "B's nibble j: bits 4j..4j+3"}),
            "pair": ("pair", np.arange(PAIRS, dtype=np.uint32),
                     {"description": "pair = 16 * av + bv"}),
            "av": ("pair", av, {"description": "A's code at a_nib (0 elsewhere)"}),
            "bv": ("pair", bv, {"description": "B's code at b_nib (0 elsewhere)"}),
            "onehot_a": (("a_nib", "pair"), av[None, :] << (4 * nib[:, None]), hex_),
            "onehot_b": (("b_nib", "pair"), bv[None, :] << (4 * nib[:, None]), hex_),
            "onehot_c": (("a_nib", "b_nib", "pair"), words(NIBBLES, NIBBLES, PAIRS), hex_),
            "case": ("case", np.arange(N_DENSE, dtype=np.uint32)),
            "a_word": ("case", words(N_DENSE), hex_),
            "b_word": ("case", words(N_DENSE), hex_),
            "c_word": ("case", words(N_DENSE), hex_),
        })

    def launch(self, stimulus: xr.Dataset) -> Launch:
        # thread t < ONE_HOT is one-hot cell (a_nib, b_nib, pair) in C order; then the dense
        # cases
        shape = (NIBBLES, NIBBLES, PAIRS)
        a = np.broadcast_to(stimulus["onehot_a"].values[:, None, :], shape).reshape(-1)
        b = np.broadcast_to(stimulus["onehot_b"].values[None, :, :], shape).reshape(-1)
        inputs = {"a": np.concatenate([a, stimulus["a_word"].values]),
                  "b": np.concatenate([b, stimulus["b_word"].values]),
                  "c": np.concatenate([stimulus["onehot_c"].values.reshape(-1),
                                       stimulus["c_word"].values])}
        threads = inputs["a"].size
        if threads % LANES:
            raise ValueError(f"{threads} cases are not whole waves of {LANES}")
        return Launch(inputs={"params": np.array([threads // LANES], np.uint32), **inputs},
                      outputs={"d": threads}, threads=threads)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        ds = stimulus.copy()
        d = np.stack([np.asarray(outputs[str(k)]["d"], np.uint32)
                      for k in stimulus["kernel"].values])
        onehot = d[:, :ONE_HOT].reshape(-1, NIBBLES, NIBBLES, PAIRS)
        product = onehot - stimulus["onehot_c"].values[None]  # uint32: wraps as the unit does
        partner = partners(product)
        a_signed, b_signed = readings(product, partner)
        dense = d[:, ONE_HOT:]
        linear = dense == superposed(product, stimulus["a_word"].values,
                                     stimulus["b_word"].values, stimulus["c_word"].values)
        cells = ("kernel", "a_nib", "b_nib", "pair")
        ds["d_onehot"] = (cells, onehot, {"description": "raw D of the one-hot cell"})
        ds["product"] = (cells, product, {
            "description": "D - C mod 2**32 (an int32 in two's complement): what the unit "
                           "added for A code av at a_nib against B code bv at b_nib"})
        ds["partner"] = (("kernel", "a_nib"), partner, {
            "description": "the one B nibble whose (1, 1) one-hot product is nonzero", **FLAGS})
        ds["a_signed"] = (("kernel",), a_signed, {
            "description": "how A's codes 8-15 read, at every A nibble's partner, against "
                           "a B code 1", **SIGNEDNESS})
        ds["b_signed"] = (("kernel",), b_signed, {
            "description": "how B's codes 8-15 read, at every A nibble's partner, against "
                           "an A code 1", **SIGNEDNESS})
        ds["linear"] = (("kernel", "case"), linear.astype(np.uint32), {
            "description": "1 where D = C + the one-hot products of the case's 64 nibble "
                           "pairs (mod 2**32): measured terms, no law assumed",
            "flag_values": np.array([0, 1], np.uint32), "flag_meanings": "differs sums"})
        ds["d_dense"] = (("kernel", "case"), dense, {"description": "raw D of the dense case"})
        return ds

    def hidden_law(self, kernel: str) -> Law:
        if kernel not in self.sim_laws:
            index = list(VARIANTS).index(kernel)
            self.sim_laws[kernel] = random_law(np.random.default_rng([SEED, index]))
        return self.sim_laws[kernel]

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"d": dot8(self.hidden_law(kernel.name), inputs["a"], inputs["b"], inputs["c"])}


PROBE = Dot8Iu4()
