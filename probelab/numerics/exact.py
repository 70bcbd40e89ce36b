"""Exact binary floating point: a format's bit patterns read as exact values, and exact
values rounded into a format under a named rounding mode.

A finite value is (sign, significand, exponent), value = (-1)**sign * significand *
2**exponent with an integer significand >= 0; NaN and the infinities are their own kinds.
Every operation is Python integer arithmetic, so a model built on it is exact by
construction (no float ever rounds behind its back).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from probelab.formats import Element

ROUNDINGS = ("nearest-even", "toward-zero", "down", "up")


@dataclass(frozen=True)
class Value:
    """An exact binary value: finite (sign, significand, exponent), or NaN or an infinity.
    A NaN read from an input keeps its sign and fraction field (sign, significand) so a unit
    that passes NaNs through can be modelled; a NaN an operation makes has significand 0."""

    kind: str  # "finite", "inf", "nan"
    sign: int = 0
    significand: int = 0
    exponent: int = 0

    @classmethod
    def of_int(cls, n: int, exponent: int = 0) -> Value:
        return cls("finite", int(n < 0), abs(n), exponent)

    @property
    def is_zero(self) -> bool:
        return self.kind == "finite" and self.significand == 0

    def scaled(self, exponent: int) -> int:
        """The signed integer value / 2**exponent, exactly (exponent <= self's exponent, or
        a significand with enough trailing zeros); refuses a value that is not a multiple."""
        shift = self.exponent - exponent
        n = self.significand << shift if shift >= 0 else self.significand >> -shift
        if shift < 0 and n << -shift != self.significand:
            raise ValueError(f"{self} is not a multiple of 2**{exponent}")
        return -n if self.sign else n

    def top(self) -> int:
        """floor(log2 |value|) of a nonzero finite value: its leading bit's weight."""
        return self.exponent + self.significand.bit_length() - 1


NAN = Value("nan")


@functools.lru_cache(maxsize=1 << 16)
def decode(e: Element, bits: int) -> Value:
    """The exact value of one stored pattern (tf32: the low 13 bits of its word ignored);
    pure, so the patterns a grid repeats are decoded once."""
    ebits, fbits, bias = e.exponent, e.fraction, e.bias
    if e.stored_in:
        bits >>= e.stored_in - 1 - ebits - fbits
    sign = (bits >> (ebits + fbits)) & 1
    field = (bits >> fbits) & ((1 << ebits) - 1)
    frac = bits & ((1 << fbits) - 1)
    top = (1 << ebits) - 1
    if e.finite_only:
        if field == top and frac == (1 << fbits) - 1:
            return Value("nan", sign, frac)
    elif field == top:
        return Value("inf", sign) if frac == 0 else Value("nan", sign, frac)
    if field == 0:  # zero and subnormals
        return Value("finite", sign, frac, 1 - bias - fbits)
    return Value("finite", sign, frac | (1 << fbits), field - bias - fbits)


def largest(e: Element) -> Value:
    ebits, fbits, bias = e.exponent, e.fraction, e.bias
    top = (1 << ebits) - 1
    if e.finite_only:  # the top exponent holds numbers; its all-ones fraction is NaN
        return Value("finite", 0, (1 << (fbits + 1)) - 2, top - bias - fbits)
    return Value("finite", 0, (1 << (fbits + 1)) - 1, top - 1 - bias - fbits)


def _round_int(n: int, shift: int, sign: int, rounding: str) -> int:
    """|value| = n * 2**-shift rounded to an integer under `rounding` (sign: the value's)."""
    if shift <= 0:
        return n << -shift
    q, r = n >> shift, n & ((1 << shift) - 1)
    if r == 0:
        return q
    half = 1 << (shift - 1)
    if rounding == "nearest-even":
        return q + (r > half or (r == half and q & 1))
    if rounding == "toward-zero":
        return q
    away = (rounding == "up") != bool(sign)  # up rounds positives away, down negatives
    return q + away


def round_to(e: Element, v: Value, rounding: str = "nearest-even",
             subnormals: str = "keep") -> Value:
    """The value of format `e` that `v` rounds to: the format's precision and exponent
    range, gradual underflow (or flushed to zero, `subnormals="flush"`), overflow to the
    infinity or the largest finite as IEEE 754 says for the rounding (e4m3 has no infinity:
    beyond its largest, NaN)."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"no rounding {rounding!r} (known: {ROUNDINGS})")
    if v.kind != "finite":
        return v if not (v.kind == "inf" and e.finite_only) else NAN
    if v.significand == 0:
        return v
    fbits, bias = e.fraction, e.bias
    emin = 1 - bias  # the smallest normal exponent
    quantum = max(v.top() - fbits, emin - fbits)  # the weight of the result's last bit
    n = _round_int(v.significand, quantum - v.exponent, v.sign, rounding)
    if n.bit_length() > fbits + 1:  # the rounding carried into a new leading bit
        n, quantum = n >> 1, quantum + 1
    out = Value("finite", v.sign, n, quantum)
    if n and out.top() < emin and subnormals == "flush":
        return Value("finite", v.sign, 0, 0)
    big = largest(e)
    if magnitude_above(out, big):
        if e.finite_only:
            return NAN
        # IEEE 754 7.4: to nearest and away from zero overflow to the infinity, toward
        # zero and toward the other infinity to the largest finite
        away = {"nearest-even": True, "toward-zero": False, "up": not v.sign,
                "down": bool(v.sign)}[rounding]
        return Value("inf", v.sign) if away else Value("finite", v.sign, big.significand,
                                                        big.exponent)
    return out


def magnitude_above(a: Value, b: Value) -> bool:
    """|a| > |b| for finite values, exactly."""
    low = min(a.exponent, b.exponent)
    return a.significand << (a.exponent - low) > b.significand << (b.exponent - low)


# how D spells a NaN: IEEE's default quiet NaN (top fraction bit); every bit set; or an
# input's NaN passed through quieted (its sign and fraction kept) and a made one negative
# quiet (x86's default NaN, and sm_90's DFMA's)
NANS = ("quiet", "all-ones", "passed-negative-quiet")


def encode(e: Element, v: Value, nan: str = "quiet") -> int:
    """The stored pattern of a value the format holds exactly (round_to's output); a NaN as
    `nan` spells it (e4m3 has one NaN pattern per sign)."""
    ebits, fbits, bias = e.exponent, e.fraction, e.bias
    sign = v.sign << (ebits + fbits)
    if v.kind == "nan":
        if nan not in NANS:
            raise ValueError(f"no NaN spelling {nan!r} (known: {NANS})")
        quiet = (((1 << ebits) - 1) << fbits) | (1 << (fbits - 1))
        if e.finite_only or nan == "all-ones":
            out = (1 << (ebits + fbits)) - 1
        elif nan == "quiet":
            out = quiet
        elif v.significand:  # passed through: its own sign and fraction, quieted
            out = sign | quiet | (v.significand & ((1 << fbits) - 1))
        else:
            out = (1 << (ebits + fbits)) | quiet
    elif v.kind == "inf":
        if e.finite_only:
            raise ValueError("e4m3 has no infinity")
        out = sign | (((1 << ebits) - 1) << fbits)
    elif v.significand == 0:
        out = sign
    else:
        n, exp = v.significand, v.exponent
        if n.bit_length() < fbits + 1 and exp > 1 - bias - fbits:  # normalise where it can
            shift = min(fbits + 1 - n.bit_length(), exp - (1 - bias - fbits))
            n, exp = n << shift, exp - shift
        field = exp + fbits + bias if n >> fbits else 0
        top = (1 << ebits) - (1 if e.finite_only else 2)  # the largest finite field
        if (n >> fbits and (n.bit_length() != fbits + 1 or not 1 <= field <= top)) or \
                (not n >> fbits and exp != 1 - bias - fbits) or \
                (e.finite_only and field == top and n & ((1 << fbits) - 1) ==
                 (1 << fbits) - 1):
            raise ValueError(f"{v} is not a {e.name} value")
        out = sign | (field << fbits) | (n & ((1 << fbits) - 1))
    if e.stored_in:
        out <<= e.stored_in - 1 - ebits - fbits
    return out
