"""Shared-memory tiles an operand is read from (Hopper's wgmma reads A and B through matrix
descriptors): every fact of how a kernel builds a tile and addresses it, declared once, so
that a dataset records them (`Tile.record`) and no reader has to take them from a kernel
source.

A tile is aligned to `align` bytes (how a kernel fills it is its kit's: the lane-id kit's
kernels store value v of lane l at element v * lanes + l). The descriptor says how the
instruction reads it: the swizzle mode, the leading and stride byte offsets (LBO, SBO),
the start's offset past the tile's first byte, the base offset (descriptor bits 49-51) and
whether the operand is MN-major (imm-trans-a/-b = 1, SASS `.tnspA`/`.tnspB`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# PTX's descriptor swizzle field (bits 62-63) per swizzle width in bytes (0: none)
SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}
FIELDS = ("swizzle", "lbo", "sbo", "start", "base_offset", "trans")


@dataclass(frozen=True)
class Tile:
    """One operand's shared-memory tile and its descriptor (byte counts)."""

    operand: str  # "a" or "b"
    swizzle: int  # 0 (none), 32, 64 or 128
    lbo: int
    sbo: int
    start: int = 0  # the descriptor's start, bytes past the tile's first
    base_offset: int = 0
    trans: bool = False  # MN-major: imm-trans-a/-b = 1
    align: int = 1024

    def __post_init__(self) -> None:
        if self.operand not in ("a", "b") or self.swizzle not in SWIZZLE_MODES:
            raise ValueError(f"a tile is A's or B's, swizzled by one of "
                             f"{sorted(SWIZZLE_MODES)} bytes: got {self}")

    @property
    def mode(self) -> int:
        """The descriptor's swizzle field."""
        return SWIZZLE_MODES[self.swizzle]

    def byte(self, k: int, mn: int, element_bytes: int) -> int:
        """The byte, from the tile's first, that holds element (k, mn) of a K-major tile
        without swizzle: core matrices of 8 rows (m or n) of 16 bytes of k, the next 16 bytes
        of k LBO on, the next 8 rows SBO on (the kits model no other layout: a swizzled or
        MN-major tile's bytes are what its lane-id probes measure)."""
        if self.swizzle or self.trans:
            raise ValueError(f"{self}: only a K-major tile without swizzle is modelled")
        at = k * element_bytes
        return self.start + at % 16 + 16 * (mn % 8) + self.lbo * (at // 16) + self.sbo * (mn // 8)

    def record(self, element_bits: int, elements: int) -> dict[str, object]:
        """The tile as a dataset records it: its descriptor, its size and alignment
        (`elements` of `element_bits` each)."""
        return {"swizzle": self.swizzle, "swizzle_mode": self.mode, "lbo": self.lbo,
                "sbo": self.sbo, "start": self.start, "base_offset": self.base_offset,
                "major": "MN" if self.trans else "K", "align": self.align,
                "bytes": elements * element_bits // 8, "element_bits": element_bits,
                "elements": elements}


def grid_facts(tiles: Sequence[Tile], names: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """The descriptor numbers a grid carries as per-kernel coordinates, read off the tiles:
    `<field>` is the one tile's field, `<operand>_<field>` that operand's (0 where it has no
    tile), `<operand>_tile` whether it has one (fields: FIELDS; `trans` 1 when MN-major)."""
    by = {t.operand: t for t in tiles}

    def value(name: str) -> int:
        operand, _, field = name.partition("_") if name[:2] in ("a_", "b_") else ("", "", name)
        if not operand:
            if len(by) != 1 or field not in FIELDS:
                raise ValueError(f"{name!r} names no field of one tile (tiles: {sorted(by)})")
            return int(getattr(next(iter(by.values())), field))
        if field == "tile":
            return int(operand in by)
        if field not in FIELDS:
            raise ValueError(f"{name!r}: a tile's fields are {FIELDS}")
        return int(getattr(by[operand], field)) if operand in by else 0

    return tuple((name, value(name)) for name in names)
