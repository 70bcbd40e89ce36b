"""The numeric models a calibration hypothesis can name: small parameterised families of how
a matrix unit computes D = A·B + C for one output element, each exact (integer significand
arithmetic over exact.Value). A hypothesis file names a family and its parameters; the lab
evaluates this one implementation, so a stranger's model is data, never code.

- `FusedDot`: one fused sum per block of k. Products are exact; the block's terms (its
  products, and C or the running sum) are aligned to the largest one and each truncated
  toward zero to `fraction_bits` bits below it (None: kept whole), summed exactly, and
  rounded once into the output format (to `result_bits` fraction bits where the unit keeps
  fewer than the format). "The largest" is the largest leading bit (`align="leading-bit"`)
  or, as MMA-Sim reads the unit, the largest exponent sum of a product's operands
  (`align="exponents"`: each operand's exponent, a subnormal's the format's smallest, a
  zero's -126; a product of two significands >= 1.5 then keeps one bit more). C joins the
  first block's sum ("in-sum") or is added after the last in one more rounding ("after",
  `after_rounding`); blocks of `group` k accumulate in order, from k = 0 (`blocks =
  "ascending"`) or from the last block (`"descending"`), each block the next `group` k of
  `order` (None: 0, 1, ...; sm_90's lowered fp8 mma.sync gives its first HMMA the k whose
  k % 4 < 2). An overflow goes as IEEE 754
  says for the rounding, or always to the infinity (`overflow="infinity"`).
  `FusedDot(None, rounding="nearest-even")` is the correctly rounded dot product, the naive
  rival; MMA-Sim's Hopper f16/bf16 model is `FusedDot(25, rounding="toward-zero")`.
- `FmaChain`: an IEEE fused multiply-add per k, in `order`, each rounded to the output.
- `PairwiseTree`: exact products summed in a balanced binary tree (k 0+1, 2+3, ..., then
  those sums pairwise), each addition rounded to the output; C added last, rounded once more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probelab.formats import Element
from probelab.numerics.exact import NAN, ROUNDINGS, Value, largest, magnitude_above, round_to

SUBNORMALS = ("keep", "flush")
ALIGNS = ("leading-bit", "exponents")
OVERFLOWS = ("ieee", "infinity")
ZERO_EXPONENT = -126  # the exponent MMA-Sim's decoding gives a zero, in every format


def product(a: Value, b: Value) -> Value:
    """a * b exactly (IEEE's specials: 0 * inf is NaN; a NaN operand is the result)."""
    if a.kind == "nan" or b.kind == "nan":
        return a if a.kind == "nan" else b
    if a.kind == "inf" or b.kind == "inf":
        if a.is_zero or b.is_zero:
            return NAN
        return Value("inf", a.sign ^ b.sign)
    return Value("finite", a.sign ^ b.sign, a.significand * b.significand,
                 a.exponent + b.exponent)


def _special(terms: Sequence[Value]) -> Value | None:
    """The sum's NaN or infinity where a term is one (inf - inf: NaN; the first NaN term
    passes), else None."""
    if nans := [t for t in terms if t.kind == "nan"]:
        return nans[0]
    signs = {t.sign for t in terms if t.kind == "inf"}
    if len(signs) > 1:
        return NAN
    return Value("inf", signs.pop()) if signs else None


def _flushed(v: Value, fmt: Element) -> Value:
    """A subnormal of `fmt` read as zero (its sign kept)."""
    if v.kind == "finite" and v.significand and v.top() < fmt.emin:
        return Value("finite", v.sign, 0, 0)
    return v


def fused_sum(terms: Sequence[Value], fraction_bits: int | None, rounding: str = "nearest-even",
              refs: Sequence[int] | None = None) -> Value:
    """The exact sum of the terms after each is truncated toward zero to `fraction_bits`
    bits below the reference: the largest of `refs` (one exponent per term), or of the live
    terms' leading bits (None: no truncation); an exact cancellation is +0, or -0 where the
    sum is to round down (IEEE 754 6.3)."""
    if (special := _special(terms)) is not None:
        return special
    live = [t for t in terms if t.significand]
    if not live:  # IEEE: +0 unless every addend is -0
        return Value("finite", int(all(t.sign for t in terms)), 0, 0)
    if fraction_bits is None:
        low = min(t.exponent for t in live)
    else:
        low = max(refs if refs is not None else [t.top() for t in live]) - fraction_bits
    total = 0
    for t in live:
        shift = t.exponent - low
        n = t.significand << shift if shift >= 0 else t.significand >> -shift  # toward zero
        total += -n if t.sign else n
    if total == 0:
        return Value("finite", int(rounding == "down"), 0, 0)
    return Value.of_int(total, low)


def ordered(order: tuple[int, ...] | None, k: int) -> tuple[int, ...]:
    """The k in the order a model takes them (None: 0, 1, ...), refusing one that is not a
    permutation of the K."""
    if order is None:
        return tuple(range(k))
    if sorted(order) != list(range(k)):
        raise ValueError(f"order {order} is not a permutation of the {k} k")
    return order


def _exponent(v: Value, fmt: Element) -> int:
    """An operand's exponent as MMA-Sim decodes it: a subnormal's the format's smallest, a
    zero's ZERO_EXPONENT."""
    if not v.significand:
        return ZERO_EXPONENT
    return max(v.top(), fmt.emin)


@dataclass(frozen=True)
class FusedDot:
    fraction_bits: int | None = None
    rounding: str = "nearest-even"
    c: str = "in-sum"  # or "after"
    group: int | None = None  # k per fused block; None: all of K at once
    subnormals: str = "keep"  # or "flush": subnormal inputs and results read as zero
    align: str = "leading-bit"  # or "exponents"
    result_bits: int | None = None  # fraction bits the result keeps; None: the format's
    overflow: str = "ieee"  # or "infinity"
    after_rounding: str | None = None  # C's add when c = "after"; None: `rounding`
    blocks: str = "ascending"  # or "descending": the order the k-blocks accumulate in
    order: tuple[int, ...] | None = None  # the k as the blocks take them; None: 0, 1, ...

    def __post_init__(self) -> None:
        if self.rounding not in ROUNDINGS or self.c not in ("in-sum", "after") or \
                self.subnormals not in SUBNORMALS or self.align not in ALIGNS or \
                self.overflow not in OVERFLOWS or \
                self.after_rounding not in (None, *ROUNDINGS) or \
                self.blocks not in ("ascending", "descending") or \
                (self.group is not None and self.group < 1) or \
                any(b is not None and b < 0 for b in (self.fraction_bits, self.result_bits)):
            raise ValueError(f"not a fused-dot model: {self}")

    def __call__(self, a: Sequence[Value], b: Sequence[Value], c: Value, formats:
                 tuple[Element, Element, Element]) -> Value:
        """D for one output element: a and b the k values of its row and column, c its C;
        formats (A's, B's, the accumulator's)."""
        fa, fb, out = formats
        if self.subnormals == "flush":
            a = [_flushed(x, fa) for x in a]
            b = [_flushed(x, fb) for x in b]
            c = _flushed(c, out)
        pairs = list(zip(a, b, strict=True))
        pairs = [pairs[k] for k in ordered(self.order, len(pairs))]
        step = self.group or max(len(pairs), 1)
        blocks = [pairs[i:i + step] for i in range(0, len(pairs), step)] or [[]]
        if self.blocks == "descending":
            blocks.reverse()
        acc = c if self.c == "in-sum" else Value("finite", 0, 0, 0)
        for block in blocks:
            terms = [product(x, y) for x, y in block] + [acc]
            refs = [_exponent(x, fa) + _exponent(y, fb) for x, y in block] + \
                [_exponent(acc, out)] if self.align == "exponents" else None
            acc = self._round(fused_sum(terms, self.fraction_bits, self.rounding, refs), out,
                              self.rounding)
        if self.c == "after":  # one more rounded addition, of C exactly
            exact = fused_sum([acc, c], None, self.after_rounding or self.rounding)
            acc = self._round(exact, out, self.after_rounding or self.rounding)
        return acc

    def _round(self, v: Value, out: Element, rounding: str) -> Value:
        fraction = out.fraction if self.result_bits is None else \
            min(self.result_bits, out.fraction)
        got = round_to(narrowed(out, out.exponent, fraction), v, rounding, self.subnormals)
        if self.overflow == "infinity" and got.kind == "finite" and not out.finite_only:
            # rounded as if the exponent had no top, then too large for the format: inf
            wide = round_to(narrowed(out, out.exponent + 1, fraction), v, rounding,
                            self.subnormals)
            if wide.kind == "finite" and magnitude_above(wide, largest(out)):
                return Value("inf", v.sign)
        return got


def narrowed(out: Element, exponent: int, fraction: int) -> Element:
    """`out`'s name with other field widths, stored in exactly its own bits (what a model
    rounds into: fewer fraction bits kept, or an exponent with no top)."""
    return Element(out.name, 1 + exponent + fraction, "float", exponent, fraction)


@dataclass(frozen=True)
class FmaChain:
    order: tuple[int, ...] | None = None  # k in the order they are added; None: 0, 1, ...
    rounding: str = "nearest-even"

    def __call__(self, a: Sequence[Value], b: Sequence[Value], c: Value, formats:
                 tuple[Element, Element, Element]) -> Value:
        out = formats[2]
        acc = c
        for k in ordered(self.order, len(a)):  # IEEE fma: one rounding of the exact a*b + acc
            exact = fused_sum([product(a[k], b[k]), acc], None, self.rounding)
            acc = round_to(out, exact, self.rounding)
        return acc


@dataclass(frozen=True)
class PairwiseTree:
    rounding: str = "nearest-even"

    def __post_init__(self) -> None:
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"not a pairwise-tree model: {self}")

    def __call__(self, a: Sequence[Value], b: Sequence[Value], c: Value, formats:
                 tuple[Element, Element, Element]) -> Value:
        out = formats[2]
        level = [product(x, y) for x, y in zip(a, b, strict=True)]
        while len(level) > 1:  # an odd one out passes up unchanged
            level = [round_to(out, fused_sum(level[i:i + 2], None, self.rounding),
                              self.rounding) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        total = level[0] if level else Value("finite", 0, 0, 0)
        return round_to(out, fused_sum([total, c], None, self.rounding), self.rounding)
