"""Stimulus families for numeric calibration, each isolating one property of how a unit
sums K products and C into one output (issue 19). A case is one output element: its K
values of A and of B and its C, every one exact in its format (built from powers of two,
so no input is ever rounded on the way in). Families, after the properties they probe:

- `alignment`: one product 1 and fifteen products 2**-s: the small terms survive the
  alignment window only while s <= its fraction bits (15 of them sum to a visible bit);
- `c_mantissa`: A = B = 0, C with every mantissa pattern the sweep gives: what C passes;
- `ties`: 1 plus small terms that leave exactly half, just under and just over half an
  output ulp, both signs: the result's rounding;
- `swamping`: +M and -M at two chosen k and ones elsewhere (FPRev-style): which terms are
  summed before the cancellation reveals the grouping across K;
- `c_joins`: C below the products' window: added inside the fused sum or after it;
- `specials`: subnormal inputs and outputs, signed zeros, infinities and NaN.

Each family returns cases as (name, a, b, c): a and b tuples of K exact Values, c a Value.
"""

from __future__ import annotations

from collections.abc import Iterator

from probelab.numerics.exact import NAN, Value

Case = tuple[str, tuple[Value, ...], tuple[Value, ...], Value]
ZERO, ONE = Value("finite", 0, 0, 0), Value("finite", 0, 1, 0)


def power(e: int, sign: int = 0) -> Value:
    return Value("finite", sign, 1, e)


def _split(s: int) -> tuple[Value, Value]:
    """2**-s as a product of two halves (each within f16's normal range for s <= 28)."""
    return power(-((s + 1) // 2)), power(-(s // 2))


def alignment(k: int, shifts: range = range(18, 29)) -> Iterator[Case]:
    """s <= 28: both halves of 2**-s stay f16 normals (a flushed input would mask it)."""
    for s in shifts:
        for sign in (0, 1):
            x, y = _split(s)
            a = (ONE, *[Value("finite", sign, 1, x.exponent)] * (k - 1))
            yield f"alignment s={s} sign={'-' if sign else '+'}", a, (ONE, *[y] * (k - 1)), ZERO


def c_mantissa(k: int, bits: range = range(0, 24)) -> Iterator[Case]:
    zeros = (ZERO,) * k
    for i in bits:  # 1 + 2**-i + 2**-23: a leading bit, one middle bit and the last
        c = Value("finite", 0, (1 << 23) | (1 << (23 - i)) | 1, -23)
        yield f"c_mantissa bit={i}", zeros, zeros, c


def ties(k: int) -> Iterator[Case]:
    """1 + f * 2**-24 for f in {1 (a tie), 3/4 * 2 = 1.5, ...}: the fraction below the output
    ulp (2**-23 at 1) is spelled by products 2**-24, 2**-25, 2**-26 at separate k."""
    spellings = {"half": (24,), "under-half": (25, 26), "over-half": (24, 26),
                 "quarter": (25,), "three-quarters": (24, 25)}
    for name, shifts in spellings.items():
        for sign in (0, 1):
            a, b = [Value("finite", sign, 1, 0)], [ONE]
            for s in shifts:
                x, y = _split(s)
                a.append(Value("finite", sign, 1, x.exponent))
                b.append(y)
            pad = k - len(a)
            yield f"ties {name} sign={'-' if sign else '+'}", tuple(a + [ZERO] * pad), \
                tuple(b + [ZERO] * pad), ZERO


def swamping(k: int, big: int = 24) -> Iterator[Case]:
    """+2**big at k = i, -2**big at k = j (each 2**(big/2) squared: f16 holds the halves), 1
    elsewhere: an exact sum gives k - 2; a unit that adds the ones to +M before -M arrives
    (or in a block without it) loses them."""
    half = power(big // 2)
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            a, b = [ONE] * k, [ONE] * k
            a[i], a[j] = half, Value("finite", 1, 1, big // 2)
            b[i] = b[j] = power(big - big // 2)
            yield f"swamping +M@{i} -M@{j}", tuple(a), tuple(b), ZERO


def c_joins(k: int) -> Iterator[Case]:
    """Products 1 and -1 cancel; C = 2**-e survives a fused sum aligned to the products'
    leading bit only while e <= its window, but always survives when added after."""
    for e in range(20, 34):
        a = (ONE, Value("finite", 1, 1, 0), *(ZERO,) * (k - 2))
        yield f"c_joins c=2^-{e}", a, (ONE, ONE, *(ZERO,) * (k - 2)), power(-e)


def specials(k: int) -> Iterator[Case]:
    inf, ninf = Value("inf", 0), Value("inf", 1)
    pad = (ZERO,) * (k - 1)
    yield "specials 0*inf", (ZERO, *pad), (inf, *pad), ZERO
    yield "specials inf-inf", (inf, ninf, *pad[1:]), (ONE, ONE, *pad[1:]), ZERO
    yield "specials nan", (NAN, *pad), (ONE, *pad), ZERO
    yield "specials -0 + -0", (Value("finite", 1, 0, 0), *pad), (ONE, *pad), \
        Value("finite", 1, 0, 0)
    for e in (-24, -20, -14):  # f16 subnormal/normal inputs, products below f32's range
        yield f"specials tiny 2^{e}", (power(e), *pad), (power(e), *pad), ZERO
    yield "specials f32 subnormal C", (ZERO, *pad), (ZERO, *pad), power(-140)


FAMILIES = {"alignment": alignment, "c_mantissa": c_mantissa, "ties": ties,
            "swamping": swamping, "c_joins": c_joins, "specials": specials}
