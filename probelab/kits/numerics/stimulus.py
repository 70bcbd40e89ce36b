"""Stimulus families for numeric calibration, each isolating one property of how a unit
sums K products and C into one output (issue 19). A case is one output element: its K
values of A and of B and its C, every one exact in its format (built from powers of two,
so no input is ever rounded on the way in). Families, after the properties they probe:

- `alignment`: one product 1 and K - 1 products 2**-s: the small terms survive the
  alignment window only while s <= its fraction bits (K - 1 of them sum to a visible bit);
- `window`: the same behind a cancelling pair (+1, -1, then K - 2 products 2**-s), so D is
  the small terms alone and no output rounding hides the window (f16 outputs need it);
- `carry`: where the window is measured: a cancelling pair of 1.5 * 1.5 = 2.25 (a product
  whose leading bit is one above its operands' exponent sum) before K - 2 products 2**-s,
  and K/2 products 1 (a sum that carries log2(K/2) bits) beside one product 2**-s;
- `c_mantissa`: A = B = 0, C with every mantissa pattern the sweep gives: what C passes;
- `ties`: 1 plus small terms that leave exactly half, just under and just over half an
  output ulp, both signs: the result's rounding;
- `c_ties`: one product 1 and C a quarter, half or three quarters of an output ulp: C's
  own rounding (inside the fused sum, or in an addition after it);
- `carry_ties`: four products 1 and one, two or three products of the window's last bit:
  a sum that carries past a result narrower than its window (`carry_precision`) and rounds;
- `swamping`: +M and -M at two chosen k and ones elsewhere (FPRev-style): which terms are
  summed before the cancellation reveals the grouping across K;
- `c_joins`: C below the products' window: added inside the fused sum or after it;
- `order`: swamping made deep (issue 38): +M at k = i, -M at k = j (i < j) and unit products
  elsewhere, M so far above the unit (`order_span`) that no window keeps a unit beside it: D
  counts the unit products summed after the step in which i and j have met, so every pair
  says where its two k join (FPRev, arXiv 2411.00442);
- `specials`: subnormal inputs and outputs, signed zeros, infinities and NaN;
- `overflow`: sums just past the output's largest finite (a rounding toward zero stays
  finite, to nearest it overflows): only where the inputs can reach it;
- `targeted` (issue 38): the families whose rivals part on a handful of cells (alignment,
  window, carry, ties, C's ties, carry ties, C below the window) again at each of the
  frame's `offsets` (the unit term moved by 2**d: the same property at another exponent)
  and `rolls` (the k rotated, where a narrow format leaves few exponents), sums
  past the output's largest finite by many amounts and every subnormal input, so that
  every sealed rival pair of the probe parts on at least 32 cells;
- `nans` (issue 38): NaN inputs at each k, and (with infinities) 0 * inf, inf - inf and an
  infinite C against the opposite infinity at each k: how D spells a NaN, >= 32 times;
- `seeded` (issue 38 item 3): cases drawn from the frame's `seed` (none without one), so a law
  read from earlier data meets cases it has not seen: dense random sums, swamping at random
  k and scales, and one NaN or infinity among random values (NaNs of any sign and payload).

A `Frame` places them: K, the formats, and where "1" sits (`one`, `swamp_one`: exponents
that keep every input a normal of its format and every result inside the output's range).
Each family returns cases as (name, a, b, c): a and b tuples of K exact Values, c a Value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from probelab.formats import FORMATS, Element
from probelab.kits.numerics import draws
from probelab.numerics.exact import NAN, Value, encode, largest

Case = tuple[str, tuple[Value, ...], tuple[Value, ...], Value]
ZERO = Value("finite", 0, 0, 0)


@dataclass(frozen=True)
class Frame:
    """Where one probe's cases sit. The defaults are the first frame (f16-range inputs into
    f32, `numerics-mma-f16-f32`), so its cases are what they were when it was sealed."""

    k: int
    a: Element = FORMATS["f16"]  # the input format (A and B)
    out: Element = FORMATS["f32"]  # D's and C's
    one: int = 0  # 2**one is the unit term of every family but swamping
    swamp_one: int | None = None  # swamping's unit term (None: one); M = its 2**precision
    shifts: range = range(18, 29)  # the s the alignment families sweep
    tiny: tuple[tuple[int, int], ...] = ((-24, -24), (-20, -20), (-14, -14))  # a, b of tiny
    c_tiny: int = -140  # an output-subnormal C
    carry_precision: int | None = None  # a result's significand bits below the output's
    offsets: tuple[int, ...] = ()  # `targeted`: the exponent shifts its families repeat at
    rolls: tuple[int, ...] = ()  # `targeted`: the k rotations they repeat at (narrow formats)
    seed: int | None = None  # `seeded`: what its cases are drawn from (None: it has none)
    draws: int = 96  # `seeded`: cases of each of its kinds

    @property
    def precision(self) -> int:
        """The output's significand bits (f32: 24)."""
        return self.out.fraction + 1

    def order_span(self) -> tuple[int, int]:
        """(u, g): the order family's unit product 2**u and M = 2**(u + g), g as far up as
        M's halves and the output reach, at most 60 bits. M must swamp K units summed (a
        25-bit window and 32 units: g > 30), so u is the smallest product of normal inputs
        that is a normal output where that leaves g >= 40, else (e4m3 inputs, f16 outputs)
        the smallest of subnormal ones: every sum of units is still exact."""
        top = min(2 * largest(self.a).top(), largest(self.out).top() - 1)
        low = max(2 * self.a.emin, self.out.emin)
        if top - low < 40:
            low = max(2 * (self.a.emin - self.a.fraction), self.out.emin - self.out.fraction)
        return low, min(top, low + 60) - low


def power(e: int, sign: int = 0) -> Value:
    return Value("finite", sign, 1, e)


def split(e: int, sign: int = 0) -> tuple[Value, Value]:
    """2**e as a product of two halves as near each other as they go (the sign on the
    first), so both stay normals of a narrow input format."""
    return power(e // 2, sign), power(e - e // 2)


def _padded(f: Frame, a: list[Value], b: list[Value]) -> tuple[tuple[Value, ...], ...]:
    pad = [ZERO] * (f.k - len(a))
    return tuple(a + pad), tuple(b + pad)


def _sign(sign: int) -> str:
    return "-" if sign else "+"


def alignment(f: Frame) -> Iterator[Case]:
    x, y = split(f.one)
    for s in f.shifts:
        for sign in (0, 1):
            u, v = split(f.one - s, sign)
            yield f"alignment s={s} sign={_sign(sign)}", (x, *[u] * (f.k - 1)), \
                (y, *[v] * (f.k - 1)), ZERO


def window(f: Frame) -> Iterator[Case]:
    x, y = split(f.one)
    for s in f.shifts:
        for sign in (0, 1):
            u, v = split(f.one - s, sign)
            yield f"window s={s} sign={_sign(sign)}", (x, Value("finite", 1, 1, x.exponent),
                                                       *[u] * (f.k - 2)), \
                (y, y, *[v] * (f.k - 2)), ZERO


def carry(f: Frame) -> Iterator[Case]:
    x, y = split(f.one)
    x, y = (Value("finite", 0, 3, v.exponent - 1) for v in (x, y))  # 1.5 * 2**e each
    ones = f.k // 2
    for s in f.shifts:
        for sign in (0, 1):
            u, v = split(f.one - s, sign)
            yield f"carry product s={s} sign={_sign(sign)}", \
                (x, Value("finite", 1, 3, x.exponent), *[u] * (f.k - 2)), \
                (y, y, *[v] * (f.k - 2)), ZERO
        u, v = split(f.one - s)
        a, b = split(f.one)
        yield (f"carry sum s={s}", *_padded(f, [a] * ones + [u], [b] * ones + [v]), ZERO)


def c_mantissa(f: Frame) -> Iterator[Case]:
    zeros, p = (ZERO,) * f.k, f.out.fraction
    for i in range(p + 1):  # 1 + 2**-i + 2**-p: a leading bit, one middle bit and the last
        c = Value("finite", 0, (1 << p) | (1 << (p - i)) | 1, f.one - p)
        yield f"c_mantissa bit={i}", zeros, zeros, c


def ties(f: Frame) -> Iterator[Case]:
    """1 + r * 2**-(p - 1) for the fractions r of an output ulp below: 1/2 (a tie), 3/8,
    5/8, 1/4, 3/4, spelled by products 2**-p, 2**-(p+1), 2**-(p+2) at separate k."""
    p = f.precision
    spellings = {"half": (p,), "under-half": (p + 1, p + 2), "over-half": (p, p + 2),
                 "quarter": (p + 1,), "three-quarters": (p, p + 1)}
    for name, shifts in spellings.items():
        for sign in (0, 1):
            x, y = split(f.one, sign)
            a, b = [x], [y]
            for s in shifts:
                u, v = split(f.one - s, sign)
                a.append(u)
                b.append(v)
            yield (f"ties {name} sign={_sign(sign)}", *_padded(f, a, b), ZERO)


def c_ties(f: Frame) -> Iterator[Case]:
    x, y = split(f.one)
    p = f.precision
    for name, n, e in (("quarter", 1, p + 1), ("half", 1, p), ("three-quarters", 3, p + 1)):
        for sign in (0, 1):
            yield (f"c_ties {name} sign={_sign(sign)}", *_padded(f, [x], [y]),
                   Value("finite", sign, n, f.one - e))


def carry_ties(f: Frame) -> Iterator[Case]:
    """4 + r * 2**-(q-1) for r = 1, 2, 3 (q = carry_precision): a quarter, half and three
    quarters of a q-bit result's ulp at 4, spelled by products inside a q-1-bit window."""
    if f.carry_precision is None:
        return
    x, y = split(f.one)
    for r in (1, 2, 3):
        for sign in (0, 1):
            u, v = split(f.one - (f.carry_precision - 1), sign)
            a = [Value("finite", sign, 1, x.exponent)] * 4 + [u] * r
            yield (f"carry_ties r={r} sign={_sign(sign)}", *_padded(f, a, [y] * 4 + [v] * r),
                   ZERO)


def swamping(f: Frame) -> Iterator[Case]:
    """+M at k = i, -M at k = j (M = 2**precision ones), 1 elsewhere: an exact sum gives
    K - 2; a unit that adds the ones to +M before -M arrives (or in a block without it)
    loses them."""
    one = f.one if f.swamp_one is None else f.swamp_one
    x, y = split(one)
    big, big_b = split(one + f.precision)
    for i in range(f.k):
        for j in range(f.k):
            if i == j:
                continue
            a, b = [x] * f.k, [y] * f.k
            a[i], a[j] = big, Value("finite", 1, 1, big.exponent)
            b[i] = b[j] = big_b
            yield f"swamping +M@{i} -M@{j}", tuple(a), tuple(b), ZERO


def order(f: Frame) -> Iterator[Case]:
    """For every i < j: +M at i and -M at j, then -M at i and +M at j, each with positive
    and with negative units at every other k; C = +0 (four witnesses of each pair, so a
    sign-dependent path shows too). Where K leaves fewer than 64 pairs, each witness comes
    again with the signs carried by B instead of A (M's, the units', both): 16 per pair."""
    unit, gap = f.order_span()
    big, big_b = split(unit + gap)
    carriers = ((0, 0), (1, 0), (0, 1), (1, 1)) if f.k * (f.k - 1) < 128 else ((0, 0),)
    for i in range(f.k):
        for j in range(i + 1, f.k):
            for first in (0, 1):
                for sign in (0, 1):
                    for m_on_b, u_on_b in carriers:
                        a, b = _units(split(unit, sign), f.k, u_on_b)
                        signs = (first, 1 - first)
                        for k, s in zip((i, j), signs, strict=True):
                            a[k], b[k] = ((Value("finite", 0, 1, big.exponent),
                                           Value("finite", s, 1, big_b.exponent)) if m_on_b
                                          else (Value("finite", s, 1, big.exponent), big_b))
                        on_b = f" signs on B: M {'yes' if m_on_b else 'no'}, units " \
                            f"{'yes' if u_on_b else 'no'}" if len(carriers) > 1 else ""
                        yield (f"order {_sign(first)}M@{i} {_sign(1 - first)}M@{j} "
                               f"units={_sign(sign)}{on_b}"), tuple(a), tuple(b), ZERO


def _units(halves: tuple[Value, Value], k: int, on_b: bool) -> tuple[list[Value], list[Value]]:
    """K unit products, their sign on A's half (or on B's)."""
    x, y = halves
    if on_b:
        x, y = Value("finite", 0, x.significand, x.exponent), \
            Value("finite", x.sign, y.significand, y.exponent)
    return [x] * k, [y] * k


def c_joins(f: Frame) -> Iterator[Case]:
    """Products 1 and -1 cancel; C = 2**-e survives a fused sum aligned to the products'
    leading bit only while e <= its window, but always survives when added after."""
    x, y = split(f.one)
    for e in range(f.shifts.start + 2, f.shifts.stop + 5):
        a, b = [x, Value("finite", 1, 1, x.exponent)], [y, y]
        yield (f"c_joins c=2^-{e}", *_padded(f, a, b), power(f.one - e))


def specials(f: Frame) -> Iterator[Case]:
    """Inputs without an infinity (e4m3) skip the cases that need one."""
    inf, ninf, one = Value("inf", 0), Value("inf", 1), power(0)
    if not f.a.finite_only:
        yield ("specials 0*inf", *_padded(f, [ZERO], [inf]), ZERO)
        yield ("specials inf-inf", *_padded(f, [inf, ninf], [one, one]), ZERO)
    yield ("specials nan", *_padded(f, [NAN], [one]), ZERO)
    yield ("specials -0 + -0", *_padded(f, [Value("finite", 1, 0, 0)], [one]),
           Value("finite", 1, 0, 0))
    for ea, eb in f.tiny:  # subnormal/normal inputs, products near or below D's range
        name = f"specials tiny 2^{ea}" + (f"*2^{eb}" if eb != ea else "")
        yield (name, *_padded(f, [power(ea)], [power(eb)]), ZERO)
    yield (f"specials {f.out.name} subnormal C", *_padded(f, [], []), power(f.c_tiny))


def overflow(f: Frame) -> Iterator[Case]:
    """2**t + 2**t with 2**t the output's largest power, and its largest finite plus half
    and a whole ulp of it (C), both signs: none where the inputs cannot reach 2**t."""
    big = largest(f.out)
    t = big.top()
    x, y = split(t)
    if min(x.exponent, y.exponent) < f.a.emin or \
            max(x.exponent, y.exponent) > largest(f.a).top():
        return
    ulp = big.exponent
    for sign in (0, 1):
        u = Value("finite", sign, 1, x.exponent)
        yield (f"overflow 2^{t}+2^{t} sign={_sign(sign)}", *_padded(f, [u, u], [y, y]), ZERO)
        for name, e in (("half", ulp - 1), ("ulp", ulp)):
            ea, eb = split(e, sign)
            yield (f"overflow max+{name} sign={_sign(sign)}", *_padded(f, [ea], [eb]),
                   Value("finite", sign, big.significand, big.exponent))


def overflow_amounts(f: Frame) -> Iterator[Case]:
    """C the output's largest finite and one product r/8 of its ulp, r = 1..40, both signs:
    past the largest finite from r = 4 (half an ulp) on, where the inputs reach it."""
    big = largest(f.out)
    ulp = big.exponent
    for r in range(1, 41):
        for sign in (0, 1):
            n, e = r, ulp - 3
            while n % 2 == 0:
                n, e = n // 2, e + 1
            half = Value("finite", sign, n, e // 2)
            other = power(e - e // 2)
            if half.top() > largest(f.a).top() or other.top() > largest(f.a).top() or \
                    half.exponent < f.a.emin - f.a.fraction or n.bit_length() > f.a.fraction + 1:
                continue  # the inputs cannot spell it exactly
            yield (f"overflow max+{r}/8ulp sign={_sign(sign)}", *_padded(f, [half], [other]),
                   Value("finite", sign, big.significand, big.exponent))


def subnormal_inputs(f: Frame) -> Iterator[Case]:
    """Subnormals of the input format (at most 8, spread) times 2**0 .. 2**8, both signs: a
    product the output holds as a normal, which a unit that flushes its inputs loses."""
    below = range(f.a.emin - f.a.fraction, f.a.emin)
    for e in below[::-(-len(below) // 8)]:  # at most 8 of them, spread
        for eb in range(9):
            for sign in (0, 1):
                yield (f"subnormal input 2^{e}*2^{eb} sign={_sign(sign)}",
                       *_padded(f, [power(e, sign)], [power(eb)]), ZERO)


def _in_formats(f: Frame, inputs: tuple[Value, ...], c: Value) -> bool:
    """Every nonzero input a normal of the input format and C a value of the output's: a
    shifted case that would need a subnormal input, or no value at all, tests nothing."""
    top = largest(f.a).top()
    if not all(f.a.emin <= v.top() <= top for v in inputs if v.kind == "finite" and v.significand):
        return False
    try:
        encode(f.out, c)
    except ValueError:
        return False
    return True


THIN = (alignment, window, carry, ties, c_ties, carry_ties, c_joins)  # few separating cells


def targeted(f: Frame) -> Iterator[Case]:
    for d in f.offsets:
        shifted = replace(f, one=f.one + d)
        for family in THIN:
            for name, a, b, c in family(shifted):
                if _in_formats(f, (*a, *b), c):
                    yield f"targeted d={d} {name}", a, b, c
    for r in f.rolls:  # the same cases with their k rotated: where formats leave few shifts
        for family in THIN:
            for name, a, b, c in family(f):
                yield f"targeted roll={r} {name}", a[-r:] + a[:-r], b[-r:] + b[:-r], c
    yield from overflow_amounts(f)
    yield from subnormal_inputs(f)


def nans(f: Frame) -> Iterator[Case]:
    """How D spells a NaN, many times over: a NaN input at each k in A and in B, and where
    the format has infinities, 0 * inf at each k (either operand, either sign), +inf at each
    k against -inf 1, 2 and K/2 k on, and C = inf against a product -inf at each k."""
    one, zero = power(0), ZERO
    for k in range(f.k):
        for name, a, b in (("A", NAN, one), ("B", one, NAN)):
            yield (f"nans {name} NaN@{k}", *_at(f, k, a, b), ZERO)
    if f.a.finite_only:
        return
    for k in range(f.k):
        for sign in (0, 1):
            inf = Value("inf", sign)
            yield (f"nans 0*{_sign(sign)}inf@{k}", *_at(f, k, zero, inf), ZERO)
            yield (f"nans {_sign(sign)}inf*0@{k}", *_at(f, k, inf, zero), ZERO)
            yield (f"nans C={_sign(sign)}inf -inf@{k}",
                   *_at(f, k, Value("inf", 1 - sign), one), Value("inf", sign))
    for i in range(f.k):
        for j in sorted({(i + step) % f.k for step in (1, 2, f.k // 2)} - {i}):
            a = [ZERO] * f.k
            a[i], a[j] = Value("inf", 0), Value("inf", 1)
            yield (f"nans +inf@{i} -inf@{j}", tuple(a), (one,) * f.k, ZERO)


def _at(f: Frame, k: int, x: Value, y: Value) -> tuple[tuple[Value, ...], tuple[Value, ...]]:
    """Zeros but for x, y at k."""
    a, b = [ZERO] * f.k, [ZERO] * f.k
    a[k], b[k] = x, y
    return tuple(a), tuple(b)


def seeded(f: Frame) -> Iterator[Case]:
    """`f.draws` cases of each kind drawn from the frame's seed (none without one), every
    value exact in its format, the operands' exponents within 2**w of a centre drawn per
    case (`_centres`: K products and their sum inside D's range):
    - dense: A and B random at every k (subnormals where the window reaches them), C a random
      output value at the products' scale: every property at once, at no designed exponent;
    - swamped: +M at a random k and -M at another (its sign on A or on B), M's halves about
      2**(precision/2) above random values at every other k, C a random value at their
      products' scale (swamped too where it joins M's sum);
    - specials: dense, then at a random k a NaN input of any sign and fraction (signalling
      too) in A or B; and as many again (where the inputs have infinities) with one of 0 *
      inf, +inf and -inf products at two k, C an infinity against the opposite product, or
      an infinity alone."""
    if f.seed is None:
        return
    rng = np.random.default_rng(f.seed)
    lo, hi, w = _centres(f)

    def drawn(low: int, high: int, subnormal: float = 0.0) -> list[Value]:
        return [draws.finite(rng, f.a, low, high, subnormal) for _ in range(f.k)]

    def dense() -> tuple[int, list[Value], list[Value]]:
        c = int(rng.integers(lo, hi + 1))
        sub = 1 / 8 if c - w <= f.a.emin else 0.0
        return c, drawn(c - w, c + w, sub), drawn(c - w, c + w, sub)

    for n in range(f.draws):
        c, a, b = dense()
        yield (f"seeded dense #{n}", tuple(a), tuple(b),
               draws.finite(rng, f.out, 2 * c - w, 2 * c + w))
    half, top = -(-f.precision // 2), largest(f.a).top()
    for n in range(f.draws):
        c = max(f.a.emin + 2, min(top - half - 2, int(rng.integers(lo, hi + 1))))
        a, b = drawn(c - 2, c + 2), drawn(c - 2, c + 2)
        i, j = (int(x) for x in rng.choice(f.k, 2, replace=False))
        x, y = (_positive(draws.finite(rng, f.a, c + half, c + half + 2)) for _ in "xy")
        a[i], b[i] = x, y
        a[j], b[j] = (x, _negated(y)) if rng.integers(2) else (_negated(x), y)
        yield (f"seeded swamped +M@{i} -M@{j} #{n}", tuple(a), tuple(b),
               draws.finite(rng, f.out, 2 * c - 4, 2 * c + 4))
    made = () if f.a.finite_only else ("0*inf", "inf-inf", "C=inf", "inf")
    for n, kind in enumerate(["NaN"] * f.draws + [made[int(x)] for x in rng.integers(
            len(made), size=f.draws if made else 0)]):
        c, a, b = dense()
        k = int(rng.integers(f.k))
        cv = draws.finite(rng, f.out, 2 * c - w, 2 * c + w)
        if kind == "inf-inf":  # the product at j the opposite infinity of the one at k
            j = int(rng.choice([x for x in range(f.k) if x != k]))
            a[k] = Value("inf", int(rng.integers(2)))
            a[j] = Value("inf", 1 ^ a[k].sign ^ b[k].sign ^ b[j].sign)
        elif kind == "C=inf":  # C against the opposite infinite product
            cv = Value("inf", int(rng.integers(2)))
            a[k] = Value("inf", 1 ^ cv.sign ^ b[k].sign)
        else:  # a NaN, an infinity, or an infinity times a zero, in A or in B
            x = draws.nan(rng, f.a) if kind == "NaN" else Value("inf", int(rng.integers(2)))
            mine, other = (b, a) if rng.integers(2) else (a, b)
            mine[k] = x
            if kind == "0*inf":
                other[k] = Value("finite", int(rng.integers(2)), 0, 0)
        yield f"seeded {kind}@{k} #{n}", tuple(a), tuple(b), cv


def _centres(f: Frame) -> tuple[int, int, int]:
    """(lo, hi, w): the centres an operand's exponent is drawn within 2**w of (w at most
    10), such that each operand is a normal of its format and each product, and K of them
    summed, lie inside D's normal range."""
    top = largest(f.a).top()
    w = min((top - f.a.emin) // 2, 10)
    return (max(f.a.emin + w, -(-f.out.emin // 2) + w),
            min(top - w, (largest(f.out).top() - f.k.bit_length()) // 2 - w), w)


def _positive(v: Value) -> Value:
    return replace(v, sign=0)


def _negated(v: Value) -> Value:
    return replace(v, sign=1 - v.sign)


FAMILIES = {"alignment": alignment, "window": window, "carry": carry,
            "c_mantissa": c_mantissa, "ties": ties, "c_ties": c_ties, "carry_ties": carry_ties,
            "swamping": swamping, "order": order, "c_joins": c_joins, "specials": specials,
            "overflow": overflow, "targeted": targeted, "nans": nans, "seeded": seeded}
FIRST = ("alignment", "c_mantissa", "ties", "swamping", "c_joins", "specials")  # 1st probes'
