"""The numeric models (models.py) over a whole grid at once: the same exact arithmetic, step
for step, on int64 significands, each step one numpy operation over every case. Exact only
where every intermediate fits: a model here says which cases it covered (not a sum whose
terms span more than WIDTH bits, nor a product of two significands longer than that between
them: f64's, where neither ends in zeros), and spec.predicted_bits computes the rest with the
scalar models, which stay the reference (tests/test_numerics_batch.py holds the two equal).

Values are arrays of one shape (`Values`), cases first and, for sums, terms on the last
axis; NaNs keep their sign and fraction field, so the NaN a unit passes is the scalar's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from probelab.formats import Element
from probelab.numerics.exact import Value, largest
from probelab.numerics.models import (
    ZERO_EXPONENT,
    FmaChain,
    FusedDot,
    PairwiseTree,
    narrowed,
    ordered,
)

FINITE, INF, NAN = 0, 1, 2
TABLE_BITS = 16  # formats this wide or narrower are decoded through a table of all patterns
WIDTH = 62  # the magnitude bits an int64 holds with room for a sign and a carry
_FAR = 1 << 40  # an exponent beyond any format's: where a term is missing from a min or max


@dataclass(frozen=True)
class Values:
    """Exact values (exact.Value) as int64 arrays of one shape: kind (FINITE, INF, NAN),
    sign (0 or 1), significand (>= 0; a NaN's fraction field) and exponent."""

    kind: np.ndarray
    sign: np.ndarray
    sig: np.ndarray
    exp: np.ndarray

    @classmethod
    def filled(cls, shape: tuple[int, ...], kind: int = FINITE, sign: Any = 0, sig: Any = 0,
               exp: Any = 0) -> Values:
        return cls(*(np.broadcast_to(np.asarray(x, np.int64), shape).copy()
                     for x in (kind, sign, sig, exp)))

    def parts(self) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __getitem__(self, index: Any) -> Values:
        return Values(*(x[index] for x in self.parts()))

    def put(self, mask: np.ndarray, values: Values) -> None:
        """Set the masked values (of arrays this module made, never a caller's)."""
        for x, y in zip(self.parts(), values.parts(), strict=True):
            x[mask] = y

    def where(self, mask: np.ndarray, other: Values) -> Values:
        """Self where `mask`, else `other`."""
        return Values(*(np.where(mask, x, y) for x, y in zip(self.parts(), other.parts(),
                                                              strict=True)))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.kind.shape


def decode(e: Element, patterns: np.ndarray) -> Values:
    """exact.decode of each stored pattern (uint64): looked up in a table of every pattern
    where the format has at most 2**TABLE_BITS (a grid's operands are most of its values)."""
    ebits, fbits = e.exponent, e.fraction
    if e.stored_in:
        patterns = patterns >> np.uint64(e.stored_in - 1 - ebits - fbits)
    if 1 + ebits + fbits <= TABLE_BITS:
        return _table(e)[(patterns & np.uint64((1 << (1 + ebits + fbits)) - 1)).astype(np.intp)]
    return _decoded(e, patterns)


@functools.cache
def _table(e: Element) -> Values:
    return _decoded(e, np.arange(1 << (1 + e.exponent + e.fraction), dtype=np.uint64))


def _decoded(e: Element, patterns: np.ndarray) -> Values:
    """exact.decode of each pattern, stored_in's low bits already dropped."""
    ebits, fbits, bias = e.exponent, e.fraction, e.bias
    bits = patterns.astype(np.int64)  # the sign, and all above it, shifted out below
    sign = (patterns >> np.uint64(ebits + fbits)).astype(np.int64) & 1
    field = (bits >> fbits) & ((1 << ebits) - 1)
    frac = bits & ((1 << fbits) - 1)
    top = (1 << ebits) - 1
    if e.finite_only:
        nan, inf = (field == top) & (frac == (1 << fbits) - 1), np.zeros(bits.shape, bool)
    else:
        nan, inf = (field == top) & (frac != 0), (field == top) & (frac == 0)
    normal = field != 0
    sig = np.where(normal, frac | (1 << fbits), frac)
    exp = np.where(normal, field, 1) - bias - fbits
    zeros = bit_length(sig & -sig) - 1  # trailing: the same value, in as few bits as it needs
    sig, exp = sig >> np.maximum(zeros, 0), exp + np.maximum(zeros, 0)
    kind = np.where(nan, NAN, np.where(inf, INF, FINITE))
    special = nan | inf
    return Values(kind, sign, np.where(inf, 0, np.where(nan, frac, sig)),
                  np.where(special, 0, exp))


def stack(values: Sequence[Values]) -> Values:
    """Values of one shape as the terms (last axis) of a sum."""
    return Values(*(np.stack(xs, axis=-1) for xs in zip(*(v.parts() for v in values),
                                                        strict=True)))


def concat(terms: Values, more: Values) -> Values:
    """Terms (last axis) and one more term after them."""
    return Values(*(np.concatenate([x, y[..., None]], axis=-1)
                    for x, y in zip(terms.parts(), more.parts(), strict=True)))


def bit_length(x: np.ndarray) -> np.ndarray:
    """int.bit_length of each x (0 <= x < 2**63): the double's exponent, one less where the
    conversion rounded x up to a power of two."""
    e = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    return e - ((e > 0) & (np.left_shift(1, np.maximum(e - 1, 0)) > x))


def _top(v: Values) -> np.ndarray:
    return v.exp + bit_length(v.sig) - 1


def _made_nan(shape: tuple[int, ...]) -> Values:
    return Values.filled(shape, NAN)


def product(a: Values, b: Values) -> Values:
    """models.product: a NaN operand is the result (a's first), 0 * inf is NaN. Worked out
    apart for the few products with a NaN or an infinity."""
    out = Values(np.zeros(a.shape, np.int64), a.sign ^ b.sign, a.sig * b.sig, a.exp + b.exp)
    odd = (a.kind != FINITE) | (b.kind != FINITE)
    if odd.any():
        a, b = a[odd], b[odd]
        zero = ((a.kind == FINITE) & (a.sig == 0)) | ((b.kind == FINITE) & (b.sig == 0))
        infinite = Values.filled(a.shape, INF, a.sign ^ b.sign).where(~zero,
                                                                      _made_nan(a.shape))
        out.put(odd, a.where(a.kind == NAN, b.where(b.kind == NAN, infinite)))
    return out


def _special(terms: Values) -> tuple[np.ndarray, Values]:
    """models._special over the terms: (which sums are a NaN or an infinity, which: the
    first NaN term, NaN for inf - inf, else the infinity; worked out for those alone)."""
    special = (terms.kind != FINITE).any(-1)
    out = Values.filled(special.shape)
    if special.any():
        out.put(special, _nonfinite(terms[special]))
    return special, out


def _nonfinite(terms: Values) -> Values:
    """The NaN or infinity of sums with a NaN or an infinity among their terms."""
    nan = terms.kind == NAN
    first = np.argmax(nan, axis=-1)[..., None]
    passed = Values(*(np.take_along_axis(x, first, -1)[..., 0] for x in terms.parts()))
    inf = terms.kind == INF
    pos, neg = (inf & (terms.sign == 0)).any(-1), (inf & (terms.sign == 1)).any(-1)
    infinite = Values.filled(passed.shape, INF, neg).where(~(pos & neg),
                                                           _made_nan(passed.shape))
    return passed.where(nan.any(-1), infinite)


def fused_sum(terms: Values, fraction_bits: int | None, rounding: str,
              refs: np.ndarray | None = None) -> tuple[Values, np.ndarray]:
    """models.fused_sum over the last axis, and where it is exact here: every term, shifted
    to the sum's lowest bit, and their sum within WIDTH bits (n terms of w bits sum to fewer
    than w + bit_length(n - 1)); a special sum always is."""
    special, out = _special(terms)
    live = terms.sig != 0
    top = _top(terms)
    if fraction_bits is None:
        low = np.where(live, terms.exp, _FAR).min(-1)
    else:
        low = (refs if refs is not None else np.where(live, top, -_FAR)).max(-1) - fraction_bits
    shift = terms.exp - low[..., None]
    width = np.where(live, top - low[..., None] + 1, 0).max(-1)
    some = live.any(-1)
    covered = special | ~some | (width + bit_length(live.sum(-1) - 1) <= WIDTH)
    n = np.where(shift >= 0, terms.sig << np.clip(shift, 0, 63),
                 terms.sig >> np.clip(-shift, 0, 63))  # toward zero
    n = np.where(live & covered[..., None], n, 0)
    total = np.where(terms.sign == 1, -n, n).sum(-1)
    summed = Values.filled(total.shape, FINITE, total < 0, np.abs(total), low)
    cancelled = Values.filled(total.shape, FINITE, int(rounding == "down"))
    zeros = Values.filled(total.shape, FINITE, terms.sign.all(-1))  # +0 unless all are -0
    exact = summed.where(total != 0, cancelled).where(some, zeros)
    return out.where(special, exact), covered


def _round_int(n: np.ndarray, shift: np.ndarray, sign: np.ndarray, rounding: str
               ) -> np.ndarray:
    """exact._round_int of each n < 2**WIDTH: n * 2**-shift to an integer."""
    s = np.clip(shift, 0, 63)
    q = n >> s
    r = n - (q << s)
    half = np.left_shift(1, np.maximum(s - 1, 0))
    if rounding == "nearest-even":
        up = (r > half) | ((r == half) & (q & 1 == 1))
    elif rounding == "toward-zero":
        up = np.zeros(n.shape, bool)
    else:  # up rounds positives away, down negatives
        up = (r != 0) & (sign == int(rounding == "down"))
    return np.where(shift <= 0, n << np.clip(-shift, 0, 63), q + up)


def magnitude_above(v: Values, big: Value) -> np.ndarray:
    """exact.magnitude_above(v, big) for each nonzero finite v: by leading bits, then by
    significands normalised to one width."""
    if not big.significand:  # e4m3 kept to no fraction bits has no finite above zero
        return v.sig != 0
    top, bits = _top(v), bit_length(v.sig)
    normal = v.sig << np.clip(WIDTH - bits, 0, 63)
    big_normal = big.significand << (WIDTH - big.significand.bit_length())
    return (v.sig != 0) & ((top > big.top()) | ((top == big.top()) & (normal > big_normal)))


def round_to(e: Element, v: Values, rounding: str, subnormals: str = "keep") -> Values:
    """exact.round_to of each value."""
    fbits, emin = e.fraction, e.emin
    live = (v.kind == FINITE) & (v.sig != 0)
    sig, exp = np.where(live, v.sig, 1), np.where(live, v.exp, 0)
    quantum = np.maximum(exp + bit_length(sig) - 1 - fbits, emin - fbits)
    n = _round_int(sig, quantum - exp, v.sign, rounding)
    carry = (bit_length(n) > fbits + 1).astype(np.int64)  # carried into a new leading bit
    rounded = Values(v.kind, v.sign, n >> carry, quantum + carry)
    zero = Values.filled(v.shape, FINITE, v.sign)
    if subnormals == "flush":
        rounded = zero.where((rounded.sig != 0) & (_top(rounded) < emin), rounded)
    big = largest(e)
    if e.finite_only:
        beyond = _made_nan(v.shape)
    else:  # IEEE 754 7.4: to nearest and away from zero to the infinity, else the largest
        away = {"nearest-even": np.ones(v.shape, bool), "toward-zero": np.zeros(v.shape, bool),
                "up": v.sign == 0, "down": v.sign == 1}[rounding]
        beyond = Values.filled(v.shape, INF, v.sign).where(
            away, Values.filled(v.shape, FINITE, v.sign, big.significand, big.exponent))
    rounded = beyond.where(magnitude_above(rounded, big), rounded)
    passed = _made_nan(v.shape).where((v.kind == INF) & e.finite_only, v)
    return rounded.where(live, passed)


def _flushed(v: Values, fmt: Element) -> Values:
    """models._flushed: a subnormal of `fmt` read as zero (its sign kept)."""
    tiny = (v.kind == FINITE) & (v.sig != 0) & (_top(v) < fmt.emin)
    return Values.filled(v.shape, FINITE, v.sign).where(tiny, v)


def _exponent(v: Values, fmt: Element) -> np.ndarray:
    """models._exponent of each value."""
    return np.where(v.sig == 0, ZERO_EXPONENT, np.maximum(_top(v), fmt.emin))


Formats = tuple[Element, Element, Element]
Batched = tuple[Values, np.ndarray]


def fused_dot(m: FusedDot, a: Values, b: Values, c: Values, formats: Formats) -> Batched:
    """FusedDot.__call__ for every case: a and b (cases, K), c (cases)."""
    fa, fb, out = formats
    if m.subnormals == "flush":
        a, b, c = _flushed(a, fa), _flushed(b, fb), _flushed(c, out)
    if m.order is not None:
        order = list(ordered(m.order, a.shape[-1]))
        a, b = a[..., order], b[..., order]
    products = product(a, b)
    refs = _exponent(a, fa) + _exponent(b, fb) if m.align == "exponents" else None
    k = a.shape[-1]
    step = m.group or max(k, 1)
    blocks = [slice(i, i + step) for i in range(0, k, step)] or [slice(0, 0)]
    if m.blocks == "descending":
        blocks.reverse()
    acc = c if m.c == "in-sum" else Values.filled(c.shape)
    covered = np.ones(c.shape, bool)
    for block in blocks:
        more = None if refs is None else \
            np.concatenate([refs[..., block], _exponent(acc, out)[..., None]], axis=-1)
        exact, fits = fused_sum(concat(products[..., block], acc), m.fraction_bits, m.rounding,
                                more)
        acc, covered = _fused_round(m, exact, out, m.rounding), covered & fits
    if m.c == "after":  # one more rounded addition, of C exactly
        rounding = m.after_rounding or m.rounding
        exact, fits = _pair_sum(acc, c, rounding, out.fraction)
        acc, covered = _fused_round(m, exact, out, rounding), covered & fits
    return acc, covered


def _fused_round(m: FusedDot, v: Values, out: Element, rounding: str) -> Values:
    """FusedDot._round of each value."""
    fraction = out.fraction if m.result_bits is None else min(m.result_bits, out.fraction)
    got = round_to(narrowed(out, out.exponent, fraction), v, rounding, m.subnormals)
    if m.overflow == "infinity" and not out.finite_only:
        wide = round_to(narrowed(out, out.exponent + 1, fraction), v, rounding, m.subnormals)
        over = (got.kind == FINITE) & (wide.kind == FINITE) & magnitude_above(wide, largest(out))
        got = Values.filled(v.shape, INF, v.sign).where(over, got)
    return got


def _pair_sum(x: Values, y: Values, rounding: str, fraction: int) -> Batched:
    """fused_sum([x, y], None, rounding), or where that is too wide, a stand-in that rounds
    as the sum does to `fraction` fraction bits or fewer: the smaller term, far below the
    larger, cut at a bit 2**L at least fraction + 4 below the larger's leading bit and,
    where anything was cut, moved half a 2**L past the cut. The sum and its stand-in then
    lie strictly between the same two multiples of 2**L, and with the sum's last kept bit
    at 2**(L+1) or above, no rounding, flush or overflow tells them apart."""
    exact, covered = fused_sum(stack([x, y]), None, rounding)
    if covered.all():
        return exact, covered
    x_big = _top(x) >= _top(y)
    big, small = x.where(x_big, y), y.where(x_big, x)
    top, below = _top(big), _top(small)
    low = np.minimum(big.exp, top - fraction - 4)
    cut = np.clip(low - small.exp, 0, 63)  # > 0 wherever the exact sum was too wide
    kept = small.sig >> cut
    small_n = 2 * kept + (small.sig != kept << cut)  # in units of 2**(L-1)
    big_n = big.sig << np.clip(big.exp - low + 1, 0, 63)
    stands = ~covered & (below <= top - 2) & (top - low + 3 <= WIDTH)  # two live terms
    total = np.where(big.sign == 1, -big_n, big_n) + np.where(small.sign == 1, -small_n, small_n)
    stand_in = Values.filled(x.shape, FINITE, total < 0, np.abs(total), low - 1)
    return stand_in.where(stands, exact), covered | stands


def _added(x: Values, y: Values, out: Element, rounding: str) -> Batched:
    """x + y exactly, rounded once into `out` (an IEEE addition)."""
    exact, covered = _pair_sum(x, y, rounding, out.fraction)
    return round_to(out, exact, rounding), covered


def fma_chain(m: FmaChain, a: Values, b: Values, c: Values, formats: Formats) -> Batched:
    """FmaChain.__call__ for every case."""
    acc, covered = c, np.ones(c.shape, bool)
    for k in ordered(m.order, a.shape[-1]):
        acc, fits = _added(product(a[..., k], b[..., k]), acc, formats[2], m.rounding)
        covered &= fits
    return acc, covered


def pairwise_tree(m: PairwiseTree, a: Values, b: Values, c: Values, formats: Formats
                  ) -> Batched:
    """PairwiseTree.__call__ for every case."""
    out, covered = formats[2], np.ones(c.shape, bool)
    level = [product(a[..., k], b[..., k]) for k in range(a.shape[-1])]
    while len(level) > 1:  # an odd one out passes up unchanged
        sums = [_added(*level[i:i + 2], out, m.rounding) for i in range(0, len(level) - 1, 2)]
        covered &= np.logical_and.reduce([fits for _, fits in sums])
        level = [v for v, _ in sums] + level[len(level) - len(level) % 2:]
    total = level[0] if level else Values.filled(c.shape)
    acc, fits = _added(total, c, out, m.rounding)
    return acc, covered & fits


MODELS: dict[type, Callable[..., Batched]] = {
    FusedDot: fused_dot, FmaChain: fma_chain, PairwiseTree: pairwise_tree}


def evaluate(model: object, a: Values, b: Values, c: Values, formats: Formats
             ) -> Batched | None:
    """The model's D for every case and which cases that is exact for (not those with a
    product wider than WIDTH bits: f64's of two long significands); None for a family not
    here."""
    batched = MODELS.get(type(model))
    if batched is None:
        return None
    long = (a.kind == FINITE) & (b.kind == FINITE) & \
        (bit_length(a.sig) + bit_length(b.sig) > WIDTH)
    got, covered = batched(model, a, b, c, formats)
    return got, covered & ~long.any(-1)


def encode(e: Element, v: Values, nan: str) -> np.ndarray:
    """exact.encode of each value round_to made (uint64 patterns)."""
    ebits, fbits, bias = e.exponent, e.fraction, e.bias
    u = np.uint64
    sign = v.sign.astype(u) << u(ebits + fbits)
    fraction = (1 << fbits) - 1
    quiet = (((1 << ebits) - 1) << fbits) | (1 << (fbits - 1))
    if e.finite_only or nan == "all-ones":
        nans = np.full(v.shape, (1 << (ebits + fbits)) - 1, u)
    elif nan == "quiet":
        nans = np.full(v.shape, quiet, u)
    else:  # passed through: its own sign and fraction, quieted; a made one negative quiet
        nans = np.where(v.sig != 0, sign | u(quiet) | (v.sig & fraction).astype(u),
                        u((1 << (ebits + fbits)) | quiet))
    infs = sign | u(((1 << ebits) - 1) << fbits)
    n, exp = v.sig, v.exp
    subnormal = 1 - bias - fbits  # a subnormal's exponent
    short = np.maximum(fbits + 1 - bit_length(n), 0)
    shift = np.where((n != 0) & (exp > subnormal), np.minimum(short, exp - subnormal), 0)
    n, exp = n << shift, exp - shift  # normalised where it can be
    field = np.where(n >> fbits != 0, exp + fbits + bias, 0)
    finite = sign | (field.astype(u) << u(fbits)) | (n & fraction).astype(u)
    out = np.where(v.kind == NAN, nans, np.where(v.kind == INF, infs, finite))
    return out << u(e.stored_in - 1 - ebits - fbits) if e.stored_in else out
