"""The numerics kit's exact arithmetic and models: every pattern of the small formats reads
back as numpy reads it, rounding into f32/f16 is numpy's (IEEE) for nearest-even and brackets
the value for the directed modes, the exact fused dot is the correctly rounded dot product,
and a truncating one drops exactly the terms below its window."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import quick_first

from probelab.formats import FORMATS
from probelab.numerics.exact import ROUNDINGS, Value, decode, encode, round_to
from probelab.numerics.models import FmaChain, FusedDot

F64, F32, TF32, F16, BF16, E4M3, E5M2 = (FORMATS[n] for n in
                                         ("f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2"))


def fraction(v: Value) -> Fraction:
    assert v.kind == "finite"
    return (-1) ** v.sign * Fraction(v.significand) * Fraction(2) ** v.exponent


def of_float(x: float) -> Value:
    return decode(F64, int(np.float64(x).view(np.uint64)))


def as_float(v: Value) -> float:
    if v.kind == "nan":
        return float("nan")
    if v.kind == "inf":
        return -np.inf if v.sign else np.inf
    return float(fraction(v)) if v.significand else (-0.0 if v.sign else 0.0)


@pytest.mark.parametrize("fmt, native",
                         quick_first([(F32, np.float32), (F16, np.float16), (BF16, None)]))
def test_every_pattern_reads_as_numpy_reads_it_and_encodes_back(fmt, native) -> None:
    patterns = range(2**16) if fmt.bits == 16 else \
        np.random.default_rng(0).integers(0, 2**32, 20000).tolist()
    for bits in patterns:
        v = decode(fmt, int(bits))
        if native is not None:
            want = float(np.array([bits], {16: np.uint16, 32: np.uint32}[fmt.bits]).view(native)[0])
        else:  # bf16: the upper half of an f32
            want = float(np.array([bits << 16], np.uint32).view(np.float32)[0])
        got = as_float(v)
        assert (np.isnan(want) and np.isnan(got)) or (got == want and
                                                     np.signbit(got) == np.signbit(want)), bits
        if v.kind != "nan":
            assert encode(fmt, v) == bits


def test_fp8_and_tf32_patterns() -> None:
    """e4m3 (OCP, finite only): largest 448, S.1111.111 NaN, no infinity; e5m2: IEEE-like,
    largest 57344; tf32: an f32 word's top 19 bits."""
    e4 = [decode(E4M3, b) for b in range(256)]
    assert max(as_float(v) for v in e4 if v.kind == "finite") == 448.0
    assert [b for b, v in enumerate(e4) if v.kind == "nan"] == [0x7F, 0xFF]
    e5 = [decode(E5M2, b) for b in range(256)]
    assert max(as_float(v) for v in e5 if v.kind == "finite") == 57344.0
    assert decode(E5M2, 0x7C).kind == "inf" and decode(E5M2, 0x7D).kind == "nan"
    assert as_float(decode(E4M3, 0x01)) == 2.0**-9 and as_float(decode(E5M2, 0x01)) == 2.0**-16
    word = int(np.float32(1.5).view(np.uint32)) | 0x1FFF  # low 13 bits ignored
    assert as_float(decode(TF32, word)) == 1.5
    assert encode(TF32, decode(TF32, word)) == word & ~0x1FFF
    for b in range(256):
        for fmt, vs in ((E4M3, e4), (E5M2, e5)):
            if vs[b].kind != "nan":
                assert encode(fmt, vs[b]) == b


@settings(max_examples=400, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_nearest_even_is_numpy_and_directed_modes_bracket(x: float) -> None:
    for fmt, native in ((F32, np.float32), (F16, np.float16)):
        with np.errstate(over="ignore"):
            want = float(native(x))
        got = round_to(fmt, of_float(x), "nearest-even")
        assert as_float(got) == want and np.signbit(as_float(got)) == np.signbit(want)
        down, up = (as_float(round_to(fmt, of_float(x), r)) for r in ("down", "up"))
        zero = as_float(round_to(fmt, of_float(x), "toward-zero"))
        assert down <= x <= up and abs(zero) <= abs(x)
        assert zero == (down if x >= 0 else up)
        if down != up and np.isfinite(up) and np.isfinite(down):  # adjacent values
            assert np.nextafter(native(down), native(np.inf)) == native(up)


def test_overflow_follows_ieee_per_rounding_and_e4m3_has_no_infinity() -> None:
    big = of_float(2.0**200)
    assert round_to(F32, big, "nearest-even").kind == "inf"
    assert as_float(round_to(F32, big, "toward-zero")) == float(np.finfo(np.float32).max)
    assert as_float(round_to(F32, big, "down")) == float(np.finfo(np.float32).max)
    assert round_to(F32, of_float(-2.0**200), "down").kind == "inf"
    assert round_to(E4M3, of_float(480.0)).kind == "nan"  # beyond 448 + half an ulp
    assert as_float(round_to(E4M3, of_float(460.0))) == 448.0
    assert round_to(F32, of_float(2.0**-140), subnormals="flush").significand == 0


def _correct_dot(a, b, c, fmt=np.float32) -> float:
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b, strict=True)), Fraction(c))
    return float(fmt(float(exact)))  # float(Fraction) is correctly rounded; float32 of it
    # could double-round, so the values below keep the exact sum within f64's precision


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_exact_fused_dot_is_the_correctly_rounded_dot_product(data) -> None:
    k = data.draw(st.integers(1, 16))
    half = st.integers(-2048, 2048).map(lambda n: n / 64)  # f16 values, exact sums in f64
    a, b = data.draw(st.lists(half, min_size=k, max_size=k)), data.draw(
        st.lists(half, min_size=k, max_size=k))
    c = data.draw(half)
    got = FusedDot(None, "nearest-even")([of_float(x) for x in a], [of_float(y) for y in b],
                                         of_float(c), (F16, F16, F32))
    assert as_float(got) == _correct_dot(a, b, c)
    ints = [[round(x * 2) for x in v] for v in (a, b)]  # integers: every partial sum exact
    chain = FmaChain()([of_float(x) for x in ints[0]], [of_float(y) for y in ints[1]],
                       of_float(c), (F16, F16, F32))
    assert as_float(chain) == _correct_dot(*ints, c)


def test_truncation_drops_the_terms_below_its_window_and_rounding_then_applies() -> None:
    """1 + 2**-k (k = 1..30) through FusedDot(F): a term survives where k <= F, the f32
    result then rounds it (toward zero: kept while k <= 23)."""
    one = of_float(1.0)
    for k in range(1, 31):
        a, b = [one, of_float(2.0**-k)], [one, one]
        for f in (23, 24, 25, 26):
            for rounding in ROUNDINGS[:2]:
                got = as_float(FusedDot(f, rounding)(a, b, of_float(0.0), (F16, F16, F32)))
                kept = 2.0**-k if k <= f else 0.0
                assert got == float(np.float32(1.0 + kept)) if rounding == "nearest-even" \
                    else got == (1.0 + kept if k <= 23 else 1.0)


def test_c_after_the_sum_is_a_second_rounding() -> None:
    """C = 2**24 with products 1 and 1: fused, 2**24 + 2 exactly; C after a rounded 2, the
    same here, but 2**24 + 1 + 1 as 1 then C differ where the products' sum rounds."""
    c = of_float(2.0**24)
    ones = [of_float(1.0)] * 2
    assert as_float(FusedDot(None)(ones, ones, c, (F16, F16, F32))) == 2.0**24 + 2
    assert as_float(FusedDot(None, c="after")(ones, ones, c, (F16, F16, F32))) == 2.0**24 + 2
    single = [of_float(1.0)]
    assert as_float(FusedDot(None)(single, single, c, (F16, F16, F32))) == 2.0**24  # tie->even
    assert as_float(FmaChain()(single * 2, single * 2, c, (F16, F16, F32))) == 2.0**24


def test_specials_propagate_as_ieee_says() -> None:
    inf, nan, zero = of_float(np.inf), of_float(np.nan), of_float(0.0)
    one = of_float(1.0)
    model = FusedDot(25, "toward-zero")
    assert model([inf, zero], [zero, one], one, (F16, F16, F32)).kind == "nan"  # inf * 0
    assert model([inf, inf], [one, of_float(-1.0)], one, (F16, F16, F32)).kind == "nan"
    assert model([inf], [one], one, (F16, F16, F32)) == Value("inf", 0)
    assert model([nan], [one], one, (F16, F16, F32)).kind == "nan"
    negzero = FusedDot(None)([of_float(-0.0)], [one], of_float(-0.0), (F16, F16, F32))
    assert negzero.significand == 0 and negzero.sign == 1


def _outcomes(family: str, model, frame=None, formats=(F16, F16, F32)) -> list[Value]:
    from probelab.kits.numerics.stimulus import FAMILIES, Frame
    return [model(a, b, c, formats) for _, a, b, c in FAMILIES[family](frame or Frame(16))]


def test_each_stimulus_family_separates_the_rivals_it_is_meant_to() -> None:
    """The design check issue 19 asks of `prereg power`, on the models themselves: the
    alignment sweep tells 24, 25 and 26 fraction bits apart; the ties tell the four
    roundings apart; swamping tells one fused sum from blocks of 4 and from an fma chain;
    c_joins tells C in the sum from C after it."""
    from probelab.kits.numerics.stimulus import FAMILIES, Frame
    for k in FAMILIES:  # every case's values are exact and K long
        for _, a, b, _ in FAMILIES[k](Frame(16)):
            assert len(a) == len(b) == 16
    by_bits = {f: _outcomes("alignment", FusedDot(f, "toward-zero")) for f in (24, 25, 26)}
    assert by_bits[24] != by_bits[25] != by_bits[26] != by_bits[24]
    by_rounding = {r: _outcomes("ties", FusedDot(None, r)) for r in ROUNDINGS}
    assert len({tuple(v) for v in by_rounding.values()}) == 4
    grouped = [_outcomes("swamping", m) for m in (FusedDot(25, "toward-zero"),
                                                  FusedDot(25, "toward-zero", group=4),
                                                  FmaChain())]
    assert grouped[0] != grouped[1] != grouped[2] != grouped[0]
    joins = [_outcomes("c_joins", FusedDot(25, "toward-zero", c=c)) for c in ("in-sum", "after")]
    assert joins[0] != joins[1]


def test_encode_refuses_a_value_the_format_does_not_hold() -> None:
    for v in (Value("finite", 0, 1, 16), Value("finite", 0, 1, -25), Value("finite", 0, 3, 15),
              Value("finite", 0, 2049, 0)):  # too large, too small, 98304, 12 bits
        with pytest.raises(ValueError, match="is not a f16 value"):
            encode(F16, v)
    assert encode(F16, Value("finite", 0, 3, 13)) == int(np.float16(24576).view(np.uint16))
    with pytest.raises(ValueError, match="e4m3"):
        encode(E4M3, Value("finite", 0, 15, 5))  # 480: the NaN pattern's magnitude


def test_mmasim_alignment_keeps_one_more_bit_below_a_carried_product() -> None:
    """1.5 * 1.5 = 2.25 leads at 2**1, but its operands' exponents sum to 0: aligned to the
    exponent sum (MMA-Sim) a term 2**-25 survives 25 fraction bits, aligned to the leading
    bit it does not; with products of powers of two both readings agree."""
    big, small = of_float(1.5), of_float(2.0**-25)
    one = of_float(1.0)
    pair = ([big, of_float(-1.5), small], [big, big, one])
    got = {align: FusedDot(25, "toward-zero", align=align)(*pair, of_float(0.0),
                                                          (F16, F16, F32))
           for align in ("exponents", "leading-bit")}
    assert as_float(got["exponents"]) == 2.0**-25 and as_float(got["leading-bit"]) == 0.0
    plain = ([one, of_float(-1.0), small], [one, one, one])
    assert len({as_float(FusedDot(25, "toward-zero", align=a)(*plain, of_float(0.0),
                                                             (F16, F16, F32)))
                for a in ("exponents", "leading-bit")}) == 1


def test_result_bits_overflow_blocks_and_c_after_are_their_own_parameters() -> None:
    ones = [of_float(1.0)] * 4
    small = of_float(3 * 2.0**-13)  # 4 + 3 * 2**-13: three quarters of a 13-bit ulp at 4
    a, b = [*ones, small], [*ones, of_float(1.0)]
    fmt = (E4M3, E4M3, F32)
    kept = {r: as_float(FusedDot(13, r, result_bits=13)(a, b, of_float(0.0), (F16, F16, F32)))
            for r in ("toward-zero", "nearest-even")}
    assert kept == {"toward-zero": 4.0, "nearest-even": 4.0 + 2.0**-11}
    assert as_float(FusedDot(13, "toward-zero")(a, b, of_float(0.0), (F16, F16, F32))) == \
        4.0 + 3 * 2.0**-13
    # 2**127 + 2**127 toward zero: IEEE's largest finite, or (MMA-Sim's cast) the infinity
    top = of_float(2.0**64)
    big = ([of_float(2.0**63)] * 2, [top, top])
    assert as_float(FusedDot(25, "toward-zero")(*big, of_float(0.0), (BF16, BF16, F32))) == \
        float(np.finfo(np.float32).max)
    assert FusedDot(25, "toward-zero", overflow="infinity")(*big, of_float(0.0),
                                                             (BF16, BF16, F32)).kind == "inf"
    # C after the last block, in its own rounding: 1 + 3 * 2**-25 to nearest is 1 + 2**-23
    c = of_float(3 * 2.0**-25)
    after = {r: as_float(FusedDot(25, "toward-zero", c="after", after_rounding=r)(
        [of_float(1.0)], [of_float(1.0)], c, fmt)) for r in ("toward-zero", "nearest-even")}
    assert after == {"toward-zero": 1.0, "nearest-even": 1.0 + 2.0**-23}
    # +M in the first block, -M in the second: the order of the blocks decides what is lost
    m, unit = of_float(2.0**8), of_float(2.0**-4)  # products 2**16, 2**-8
    xs = [m, *[unit] * 15, of_float(-2.0**8), *[unit] * 15]
    ys = [m, *[unit] * 15, m, *[unit] * 15]
    order = {o: as_float(FusedDot(25, "toward-zero", group=16, blocks=o)(xs, ys, of_float(0.0),
                                                                         fmt))
             for o in ("ascending", "descending")}
    assert order == {"ascending": 29 * 2.0**-8, "descending": 30 * 2.0**-8}


def test_the_new_families_separate_what_they_are_meant_to() -> None:
    """carry: the alignment's reference; c_ties: C's own rounding after the sum; carry_ties:
    a 13-bit result's rounding; overflow: IEEE's largest finite against the infinity."""
    from probelab.kits.numerics.stimulus import Frame
    fp8 = Frame(32, a=E4M3, one=16, swamp_one=-8, shifts=range(8, 29), carry_precision=14)
    fmt = (E4M3, E4M3, F32)
    assert _outcomes("carry", FusedDot(25, "toward-zero", align="exponents"), fp8, fmt) != \
        _outcomes("carry", FusedDot(25, "toward-zero"), fp8, fmt)
    after = [_outcomes("c_ties", FusedDot(25, "toward-zero", c="after", group=16,
                                          after_rounding=r), fp8, fmt)
             for r in ("toward-zero", "nearest-even")]
    assert after[0] != after[1]
    narrow = [_outcomes("carry_ties", FusedDot(13, r, result_bits=13), fp8, fmt)
              for r in ("toward-zero", "nearest-even")]
    assert narrow[0] != narrow[1]
    wide = Frame(16, a=BF16)
    over = [_outcomes("overflow", FusedDot(25, "toward-zero", overflow=o), wide,
                      (BF16, BF16, F32)) for o in ("ieee", "infinity")]
    assert over[0] != over[1]
    assert _outcomes("overflow", FusedDot(25), Frame(16)) == []  # f16 cannot reach f32's top


def test_nan_spellings_canonical_quiet_or_passed_through() -> None:
    """A NaN input keeps its sign and fraction in the value; `passed-negative-quiet` writes
    it back quieted, and a NaN an operation makes as the negative quiet NaN (DFMA's)."""
    payload = decode(F64, 0x7FF0000000000001)  # a signalling NaN with fraction 1
    made = FmaChain()([of_float(0.0)], [of_float(np.inf)], of_float(0.0), (F64, F64, F64))
    passed = FmaChain()([payload], [of_float(1.0)], of_float(0.0), (F64, F64, F64))
    assert encode(F64, made, "passed-negative-quiet") == 0xFFF8000000000000
    assert encode(F64, passed, "passed-negative-quiet") == 0x7FF8000000000001
    assert {encode(F64, v, "all-ones") for v in (made, passed)} == {0x7FFFFFFFFFFFFFFF}
    assert {encode(F64, v, "quiet") for v in (made, passed)} == {0x7FF8000000000000}
    assert encode(F32, made, "passed-negative-quiet") == 0xFFC00000


def test_order_hands_each_block_its_k() -> None:
    """+M = 2**24 at k = 0, -M at k = 2, ones at 1 and 3, blocks of 2 each rounded toward
    zero into f32: in k order +M's block loses its one (D = 1); by pairs (0, 2), (1, 3) the
    Ms cancel first and both ones survive (D = 2)."""
    half = of_float(2.0**12)
    xs, ys = [half, of_float(1.0), of_float(-2.0**12), of_float(1.0)], [half, of_float(1.0)] * 2
    fmt = (F16, F16, F32)
    got = {order: as_float(FusedDot(None, "toward-zero", group=2, order=order)(
        xs, ys, of_float(0.0), fmt)) for order in (None, (0, 2, 1, 3))}
    assert got == {None: 1.0, (0, 2, 1, 3): 2.0}
    with pytest.raises(ValueError, match="permutation"):
        FusedDot(order=(0, 0, 1, 2))(xs, ys, of_float(0.0), fmt)


def test_a_pairwise_tree_loses_the_units_of_the_subtree_where_the_pair_meets() -> None:
    """FPRev's reading of a tree: +M at i, -M at j (M swamps a unit) leave the units outside
    the smallest aligned block of 2**n k holding both, whose size is written here from i and
    j alone."""
    from probelab.formats import FORMATS
    from probelab.kits.numerics.stimulus import Frame, order
    from probelab.numerics.models import PairwiseTree
    frame, f16, f32 = Frame(16), FORMATS["f16"], FORMATS["f32"]
    unit, _ = frame.order_span()
    for name, a, b, c in order(frame):
        i, j = (int(t.split("@")[1]) for t in name.split()[1:3])
        size = 1 << (i ^ j).bit_length()
        d = PairwiseTree()(a, b, c, (f16, f16, f32))
        units = Fraction(d.significand) * Fraction(2) ** (d.exponent - unit)
        assert units == 16 - size and d.sign == (units > 0 and name.endswith("units=-")), name
