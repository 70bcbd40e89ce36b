"""The number formats of the lab, one definition each: how a value is written as an
operand element of a matrix instruction and read back from its accumulator (the kits), and
what a numeric model rounds into (probelab.numerics).

An `Element` is a storage format (f64, f32, tf32, f16, bf16, fp8 e4m3/e5m2 and CDNA3's fnuz
variants, s32, s8/u8, s4/u4, b1). `encode` turns exact values into raw bit patterns and
refuses any value the format does not hold exactly (a stimulus that rounds would name the
wrong source); `decode` reads raw bits back as numbers; `bias`, `emin` and `finite_only`
are what exact arithmetic on a float format reads (probelab.numerics.exact).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

MAX_LEVELS = 2**16  # digit bases beyond this only make a digit wave's ids harder to read
_BLOCK = 2**20  # elements encoded at once (Element.encode)
_NATIVE = {64: np.float64, 32: np.float32, 16: np.float16}


@dataclass(frozen=True)
class Element:
    """One storage format. Floats name their exponent and fraction widths (tf32 is stored
    in 32 bits of which the low 13 are ignored; fp8 e4m3 is the finite-only OCP variant;
    `fnuz` fp8 (CDNA3's) has its bias one higher, no -0 and no infinity, NaN at 0x80)."""

    name: str
    bits: int  # storage width, per element
    kind: str  # "float", "signed", "unsigned" or "bits"
    exponent: int = 0
    fraction: int = 0
    stored_in: int | None = None  # tf32: its 19 meaningful bits live in a 32-bit word
    fnuz: bool = False

    @property
    def floating(self) -> bool:
        return self.kind == "float"

    @property
    def exact(self) -> int:
        """The largest n such that every integer 0..n is held exactly."""
        if self.floating:
            return 2 ** (self.fraction + 1)
        if self.kind == "signed":
            return 2 ** (self.bits - 1) - 1
        return 2**self.bits - 1

    @property
    def lowest(self) -> int:
        """The most negative integer held exactly (0 for unsigned types and b1)."""
        if self.floating:
            return -self.exact
        return -(2 ** (self.bits - 1)) if self.kind == "signed" else 0

    @property
    def levels(self) -> np.ndarray:
        """Every nonzero integer held exactly (at most MAX_LEVELS of each sign), in the
        order digits use them: floats 1..exact, integers their positive values, then
        (signed) the negative ones, -1 first."""
        up = np.arange(1, min(self.exact, MAX_LEVELS) + 1, dtype=np.int64)
        if self.floating or self.kind != "signed":
            return up
        return np.concatenate([up, -np.arange(1, min(-self.lowest, MAX_LEVELS) + 1,
                                               dtype=np.int64)])

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Values -> raw bit patterns (uint64), refusing any the format does not hold
        exactly (NaN and infinities are held where the format has them). A large array is
        encoded a block at a time (an operand's waves are 100s of MB, and each element's
        code is its own): the same codes, the first value refused the same."""
        values = np.asarray(values)
        if values.size <= _BLOCK:
            return self._encode(values)
        flat, out = values.reshape(-1), np.empty(values.size, np.uint64)
        for start in range(0, flat.size, _BLOCK):
            out[start:start + _BLOCK] = self._encode(flat[start:start + _BLOCK])
        return out.reshape(values.shape)

    def _encode(self, values: np.ndarray) -> np.ndarray:
        if self.floating:
            as_float = values.astype(np.float64)
            if values.dtype.kind in "iu":  # an integer a double cannot hold is no value here
                big = np.abs(as_float) >= 2.0**63
                back = np.where(big, 0, as_float).astype(np.int64)
                self._refuse(values, ~big & (back == values))
            return self._encode_float(as_float)
        ints = values.astype(np.int64)
        exact = (ints == values) & (ints >= self.lowest) & (ints <= 2**self.bits - 1 +
                                                            self.lowest)
        self._refuse(values, exact)
        return np.bitwise_and(ints, 2**self.bits - 1, out=ints).view(np.uint64)

    def decode(self, raw: np.ndarray) -> np.ndarray:
        """Raw bit patterns -> numbers: float64 for floats, int64 otherwise."""
        raw = np.asarray(raw).astype(np.uint64, copy=False)  # no copy where it is already
        if not self.floating:
            ints = raw.astype(np.int64)
            if self.kind == "signed":  # in place: an operand's elements are 100s of MB
                np.subtract(ints, 2**self.bits, out=ints, where=ints >= 2 ** (self.bits - 1))
            return ints
        if native := self._native:
            dtype, width = native
            return raw.astype(width).view(dtype).astype(np.float64)
        if self.bits > 8:  # bf16, tf32: the top bits of an f32 (tf32's low 13 are ignored)
            word = raw.astype(np.uint32) << np.uint32(32 - self.bits) if self.name == "bf16" \
                else raw.astype(np.uint32) & np.uint32(~(2**self._dropped - 1) & 0xFFFFFFFF)
            return word.view(np.float32).astype(np.float64)
        return self._decode_small(raw)

    # ---- floats: native numpy where one exists, f32 bits for bf16/tf32, a table for fp8 ----

    @property
    def _native(self) -> tuple[type, type] | None:
        """(numpy float type, unsigned type of its width) where numpy has this format."""
        if self.bits in _NATIVE and self.fraction == np.finfo(_NATIVE[self.bits]).nmant:
            return _NATIVE[self.bits], {64: np.uint64, 32: np.uint32, 16: np.uint16}[self.bits]
        return None

    @property
    def _dropped(self) -> int:
        """The f32 fraction bits a format stored as an f32's top bits lacks."""
        return 23 - self.fraction

    def _encode_float(self, values: np.ndarray) -> np.ndarray:
        if native := self._native:
            dtype, width = native
            held = values.astype(dtype)
            self._refuse(values, (held.astype(np.float64) == values) | np.isnan(values))
            return held.view(width).astype(np.uint64)
        if self.bits > 8:  # bf16, tf32
            f32 = values.astype(np.float32)
            raw = f32.view(np.uint32).astype(np.uint64)
            low = raw & np.uint64(2**self._dropped - 1)
            nan = np.isnan(values)
            self._refuse(values, ((f32.astype(np.float64) == values) & (low == 0)) | nan)
            raw = np.where(nan, np.uint64(0x7FC00000), raw)  # one quiet NaN, low bits clear
            return raw >> np.uint64(32 - self.bits) if self.name == "bf16" else raw
        return self._encode_small(values)

    def nearest(self, values: np.ndarray) -> np.ndarray:
        """Values rounded to this format as numpy rounds (round to nearest even), for a
        simulated unit's result; only formats numpy has (f64, f32, f16)."""
        if not (native := self._native):
            raise ValueError(f"no numpy rounding to {self.name}")
        return np.asarray(values).astype(native[0]).astype(np.float64)

    def _refuse(self, values: np.ndarray, exact: np.ndarray) -> None:
        if not exact.all():
            raise ValueError(f"{self.name} cannot hold {values[~exact].reshape(-1)[0]!r} "
                             "exactly")

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent - 1) - (0 if self.fnuz else 1)

    @property
    def emin(self) -> int:
        """The smallest normal exponent."""
        return 1 - self.bias

    @property
    def finite_only(self) -> bool:
        """No infinities: OCP e4m3 (S.1111.111 is NaN) and the fnuz formats."""
        return self.fnuz or self.name == "e4m3"

    def _decode_small(self, raw: np.ndarray) -> np.ndarray:
        """fp8: sign, biased exponent, fraction; e5m2 has Inf/NaN at the top exponent,
        e4m3 only NaN (S.1111.111). Many codes at once are looked up in the table of all
        2**bits (`_decode_codes` of each, the same bits), one pass instead of a dozen."""
        if raw.size > 2**self.bits and raw.dtype.kind == "u" and \
                int(raw.max()) < 2**self.bits:
            return _small_table(self)[raw]
        return self._decode_codes(raw)

    def _decode_codes(self, raw: np.ndarray) -> np.ndarray:
        r = raw.astype(np.int64)
        sign = np.where(r >> (self.bits - 1) & 1, -1.0, 1.0)
        e = (r >> self.fraction) & (2**self.exponent - 1)
        f = (r & (2**self.fraction - 1)).astype(np.float64)
        scale = 2.0 ** self.fraction
        value = np.where(e == 0, f / scale * 2.0 ** (1 - self.bias),
                         (1 + f / scale) * 2.0 ** (e - self.bias))
        if self.fnuz:  # every exponent is finite; the one code of -0 is NaN
            return np.where(r == 1 << (self.bits - 1), np.nan, sign * value)
        top = e == 2**self.exponent - 1
        if self.name == "e5m2":
            value = np.where(top, np.where(f == 0, np.inf, np.nan), value)
        else:
            value = np.where(top & (f == 2**self.fraction - 1), np.nan, value)
        return sign * value

    def _encode_small(self, values: np.ndarray) -> np.ndarray:
        """The one code each value decodes from (searching all 2**bits codes: fp8 only);
        NaN as the format's all-ones code, an infinity where the format has one."""
        codes = np.arange(2**self.bits, dtype=np.uint64)
        table = self._decode_small(codes)
        held = ~np.isnan(table)
        order = np.argsort(table[held], kind="stable")
        known, which = table[held][order], codes[held][order]
        pos = np.clip(np.searchsorted(known, values), 0, len(known) - 1)
        nan = np.isnan(values)
        self._refuse(values, (known[pos] == values) | nan)
        zero = np.where(np.signbit(values) & (not self.fnuz), np.uint64(1 << (self.bits - 1)),
                        np.uint64(0))
        out = np.where(values == 0, zero, which[pos])  # -0.0 == +0.0: keep the sign
        nan_code = 1 << (self.bits - 1) if self.fnuz else 2**(self.bits - 1) - 1
        return np.where(nan, np.uint64(nan_code), out).astype(np.uint64)


@functools.cache
def _small_table(element: Element) -> np.ndarray:
    """Every code of an fp8 format decoded (read-only): index it with codes."""
    table = element._decode_codes(np.arange(2**element.bits, dtype=np.uint64))
    table.flags.writeable = False
    return table


F64 = Element("f64", 64, "float", 11, 52)
F32 = Element("f32", 32, "float", 8, 23)
TF32 = Element("tf32", 32, "float", 8, 10, stored_in=32)
F16 = Element("f16", 16, "float", 5, 10)
BF16 = Element("bf16", 16, "float", 8, 7)
E4M3 = Element("e4m3", 8, "float", 4, 3)
E5M2 = Element("e5m2", 8, "float", 5, 2)
E4M3FNUZ = Element("e4m3fnuz", 8, "float", 4, 3, fnuz=True)
E5M2FNUZ = Element("e5m2fnuz", 8, "float", 5, 2, fnuz=True)
S32 = Element("s32", 32, "signed")
S8 = Element("s8", 8, "signed")
U8 = Element("u8", 8, "unsigned")
S4 = Element("s4", 4, "signed")
U4 = Element("u4", 4, "unsigned")
B1 = Element("b1", 1, "bits")
ELEMENTS = {e.name: e for e in (F64, F32, TF32, F16, BF16, E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, S32,
                                S8, U8, S4, U4, B1)}
# the float formats a numeric model reads and writes (probelab.numerics), by name
FORMATS = {e.name: e for e in (F64, F32, TF32, F16, BF16, E4M3, E5M2)}
