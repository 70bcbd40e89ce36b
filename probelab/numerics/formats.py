"""The binary floating-point formats a numeric model reads and writes, by name."""

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Format:
    name: str
    exponent: int  # exponent field bits
    fraction: int  # fraction field bits
    finite_only: bool = False  # OCP e4m3: no infinities; S.1111.111 is NaN
    stored_in: int | None = None  # tf32: 19 bits at the top of a 32-bit word

    @property
    def bits(self) -> int:
        return self.stored_in or 1 + self.exponent + self.fraction

    @cached_property
    def bias(self) -> int:
        return 2 ** (self.exponent - 1) - 1

    @cached_property
    def emin(self) -> int:
        """The smallest normal exponent."""
        return 1 - self.bias


FORMATS = {f.name: f for f in (
    Format("f64", 11, 52), Format("f32", 8, 23), Format("tf32", 8, 10, stored_in=32),
    Format("f16", 5, 10), Format("bf16", 8, 7), Format("e4m3", 4, 3, finite_only=True),
    Format("e5m2", 5, 2))}
