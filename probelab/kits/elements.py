"""The element codec the kits share, over the lab's number formats (probelab.formats:
`Element`, F16, ..., one definition each, shared with probelab.numerics). `pack`/`unpack`
lay elements out in 32-bit registers the way the instructions read them: little-endian,
element i of a lane at bits [i*bits, (i+1)*bits) of the lane's register string (a 64-bit
element spans two registers, low word first). A `Codec` pairs an operand type with its
accumulator's and says how large an id each carries exactly, so a kit can split ids into
several digit waves where one is not enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probelab.formats import Element


def digits(slots: int, base: int) -> int:
    """How many digits of `base` name `slots` distinct ids (ValueError for a base below 2:
    one level names nothing)."""
    if base < 2:
        raise ValueError(f"digits of base {base} cannot name {slots} ids")
    n = 1
    while base**n < slots:
        n += 1
    return n


def words(element: Element, n: int) -> int:
    """32-bit registers that n elements fill (the last one padded with zero bits)."""
    return -(-n * element.bits // 32)


def pack(element: Element, values: np.ndarray) -> np.ndarray:
    """(..., n) values -> (..., words(n)) uint32 registers, as the instructions read them."""
    return pack_bits(element.encode(values), element.bits)


def pack_bits(raw: np.ndarray, bits: int) -> np.ndarray:
    """(..., n) raw bit patterns of `bits` each -> (..., words) uint32 registers (`pack`)."""
    raw = np.asarray(raw).astype(np.uint64, copy=False)  # read only: never written here
    n = raw.shape[-1]
    if bits >= 32:  # word i of an element: its bits [32 i, 32 i + 32), cast to 32 bits
        per = bits // 32
        out = np.empty((*raw.shape, per), np.uint32)
        for i in range(per):
            out[..., i] = raw >> np.uint64(32 * i) if i else raw
        return out.reshape(*raw.shape[:-1], n * per)
    per = 32 // bits
    if bits == 1 and n % 32 == 0 and raw.size and int(raw.max()) <= 1:  # b1: packbits's
        held = np.packbits(raw.astype(np.uint8), axis=-1, bitorder="little")
        return held.view("<u4").astype(np.uint32, copy=False)  # byte 0 the low one
    if n % per:  # the last register's high bits: zeros
        padded = np.zeros((*raw.shape[:-1], -(-n * bits // 32) * per), np.uint64)
        padded[..., :n] = raw
    else:
        padded = raw
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    grouped = padded.reshape(*raw.shape[:-1], -1, per) << shifts
    return np.bitwise_or.reduce(grouped, axis=-1).astype(np.uint32)


def unpack(element: Element, registers: np.ndarray, n: int) -> np.ndarray:
    """(..., words) uint32 registers -> the raw bits (uint64) of the first n elements."""
    regs = np.asarray(registers).astype(np.uint64)
    if element.bits >= 32:
        per = element.bits // 32
        parts = regs[..., : n * per].reshape(*regs.shape[:-1], n, per)
        shifts = np.arange(per, dtype=np.uint64) * np.uint64(32)
        return np.bitwise_or.reduce(parts << shifts, axis=-1)
    per = 32 // element.bits
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(element.bits)
    raw = regs[..., None] >> shifts
    raw &= np.uint64(2**element.bits - 1)
    return raw.reshape(*regs.shape[:-1], -1)[..., :n]


@dataclass(frozen=True)
class Codec:
    """An instruction's operand type and accumulator type: ids go in as operand elements,
    come back as accumulator values. `b` names B's type where it is not A's (mixed
    signedness: s8 x u8)."""

    operand: Element
    accumulator: Element
    b: Element | None = None
    # where the unit sums more narrowly than its accumulator format holds: the largest n
    # every integer 0..n of which its sums keep exact (fp8 wgmma into f32: 2**14, as the
    # archive's first fp8 wgmma datasets show), so ids and C digits are planned within it
    sums_exact: int | None = None

    def __post_init__(self) -> None:
        if self.b == self.operand:  # B of A's own type is no mixed codec: one spelling each
            object.__setattr__(self, "b", None)

    @property
    def sum_exact(self) -> int:
        """The largest n every integer 0..n of which D holds exactly: the accumulator's, or
        the unit's narrower sums."""
        return min(self.accumulator.exact, self.sums_exact or self.accumulator.exact)

    def element(self, operand: str) -> Element:
        """The element type of operand "a", "b", "c" or "d"."""
        if operand in "cd":
            return self.accumulator
        return self.b or self.operand if operand == "b" else self.operand

    @property
    def exact(self) -> int:
        """The largest n every integer 0..n of which both A and B hold exactly."""
        return min(self.operand.exact, self.element("b").exact)

    @property
    def name(self) -> str:
        """e.g. "f16 -> f32", "s8 x u8 -> s32", "e4m3 -> f32 (sums exact to 16384)"."""
        b = f" x {self.b.name}" if self.b else ""
        narrow = f" (sums exact to {self.sums_exact})" if self.sums_exact else ""
        return f"{self.operand.name}{b} -> {self.accumulator.name}{narrow}"

    @property
    def bits(self) -> int:
        return self.operand.bits

    @property
    def floating(self) -> bool:
        return self.operand.floating

    @property
    def levels(self) -> np.ndarray:
        return self.operand.levels

    def digits(self, slots: int) -> int:
        """Digit waves that name `slots` slots, one nonzero level per digit."""
        return digits(slots, len(self.levels))

    def pack(self, values: np.ndarray) -> np.ndarray:
        """(..., n) operand values -> (..., registers) uint32."""
        return pack(self.operand, values)

    def unpack(self, registers: np.ndarray, n: int) -> np.ndarray:
        """(..., registers) uint32 -> (..., n) operand values as numbers."""
        return self.operand.decode(unpack(self.operand, registers, n))

    def read(self, registers: np.ndarray, n: int | None = None) -> np.ndarray:
        """Accumulator registers -> values as numbers (n values; default: as many as the
        registers hold)."""
        regs = np.asarray(registers)
        n = regs.shape[-1] * 32 // self.accumulator.bits if n is None else n
        return self.accumulator.decode(unpack(self.accumulator, regs, n))

    def write(self, values: np.ndarray) -> np.ndarray:
        """Accumulator values -> registers (a simulated unit's D, or a C operand)."""
        return pack(self.accumulator, values)
