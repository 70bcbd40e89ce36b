"""The vectorised numeric models (probelab.numerics.batch) against the scalar ones they
mirror (probelab.numerics.models, the reference): bit for bit, on every case the batch says
it covers, over random grids of every format pair the lab knows and over the cases exact
arithmetic most easily gets wrong (NaN payloads, infinities, 0 * inf, subnormals, overflow,
exact cancellation, sums too wide for int64), for every parameter a model takes; and
`predicted_bits` (the batch, the scalar models for what it does not cover) equal to the
scalar models on every case."""

from itertools import product

import numpy as np
import pytest
import xarray as xr

from probelab.formats import FORMATS, Element
from probelab.numerics import batch, spec
from probelab.numerics.exact import NANS, ROUNDINGS, Value, decode, encode, round_to
from probelab.numerics.models import FmaChain, FusedDot, PairwiseTree

NAMES = ("f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2")
assert set(NAMES) == set(FORMATS)  # a format added to the lab is added here


def _models(k: int) -> list:
    """A model for every parameter value each family takes (K long orders)."""
    perm = tuple(int(x) for x in np.random.default_rng(k).permutation(k))
    return [
        *(FusedDot(None, r) for r in ROUNDINGS),
        *(FusedDot(25, r) for r in ROUNDINGS),
        FusedDot(0, "up"), FusedDot(3, "nearest-even"), FusedDot(60, "down"),
        FusedDot(25, "toward-zero", align="exponents"),
        FusedDot(13, "down", align="exponents", result_bits=4),
        FusedDot(24, "toward-zero", c="after", after_rounding="nearest-even"),
        FusedDot(None, "up", c="after"),
        FusedDot(26, "toward-zero", group=4), FusedDot(25, "nearest-even", group=3),
        FusedDot(25, "toward-zero", group=2, blocks="descending", c="after"),
        FusedDot(25, "down", order=perm), FusedDot(None, "up", group=2, order=perm),
        FusedDot(14, "toward-zero", subnormals="flush"),
        FusedDot(None, "nearest-even", subnormals="flush", c="after"),
        FusedDot(25, "toward-zero", overflow="infinity"),
        FusedDot(None, "down", overflow="infinity", result_bits=5, group=2),
        FusedDot(25, "up", result_bits=0),
        *(FmaChain(rounding=r) for r in ROUNDINGS), FmaChain(perm, "down"),
        *(PairwiseTree(r) for r in ROUNDINGS),
    ]


def _field(rng: np.random.Generator, fmt: Element, shape: tuple[int, ...], mode: int,
           short: bool = False) -> np.ndarray:
    """Stored patterns of `fmt`: mode 0 exponents near 1 (carries, ties, cancellation),
    1 anywhere, 2 raw bits (NaNs, infinities), 3 near the largest (overflow), 4 near the
    smallest (subnormals, flush); `short`: at most 12 fraction bits set (f64 products the
    batch can hold)."""
    ebits, fbits = fmt.exponent, fmt.fraction
    top = (1 << ebits) - 1
    near = {0: (fmt.bias - 3, fmt.bias + 3), 1: (0, top), 3: (top - 2, top),
            4: (0, 2)}.get(mode, (0, top))
    field = rng.integers(near[0], near[1], shape, endpoint=True)
    if mode != 2:
        field = np.minimum(field, top - (0 if fmt.finite_only else 1))  # finite
    frac = rng.integers(0, 1 << fbits, shape) & np.where(rng.random(shape) < 0.3, -4, -1)
    if short:
        frac &= -(1 << max(fbits - 12, 0))
    bits = (rng.integers(0, 2, shape) << (ebits + fbits)) | (field << fbits) | frac
    if mode == 2:
        bits = rng.integers(0, 1 << (1 + ebits + fbits), shape, dtype=np.uint64)
    bits = bits.astype(np.uint64)
    if fmt.stored_in:  # a tf32 word: its low bits are junk the format ignores
        shift = np.uint64(fmt.stored_in - 1 - ebits - fbits)
        bits = (bits << shift) | rng.integers(0, 1 << int(shift), shape).astype(np.uint64)
    return bits


def _cases(fa: Element, fb: Element, fd: Element, n: int, k: int, seed: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n cases of K: a mode per case (and one for C), every other case short, a few with
    exact cancellation (the second half of A the first negated, B repeated, C a zero)."""
    rng = np.random.default_rng(seed)
    a, b, c = (np.zeros(shape, np.uint64) for shape in ((n, k), (n, k), (n,)))
    for i in range(n):
        mode, short = i % 6, i % 12 < 6
        a[i] = _field(rng, fa, (k,), mode % 5, short)
        b[i] = _field(rng, fb, (k,), rng.integers(0, 5) if mode == 5 else mode % 5, short)
        c[i] = _field(rng, fd, (), int(rng.integers(0, 5)), short)
        if mode == 5:  # x*y + (-x)*y + ... cancels exactly: the zero's sign is the rounding's
            half = k // 2
            a[i, half:2 * half] = a[i, :half] ^ np.uint64(1 << (fa.bits - 1))
            b[i, half:2 * half] = b[i, :half]
            c[i] = np.uint64(rng.integers(0, 2)) << np.uint64(fd.bits - 1)
    return a, b, c


def _scalar(model, fa: Element, fb: Element, fd: Element, a: np.ndarray, b: np.ndarray,
            c: np.ndarray, nan: str) -> np.ndarray:
    return np.array([encode(fd, model([decode(fa, int(x)) for x in ra],
                                      [decode(fb, int(y)) for y in rb],
                                      decode(fd, int(rc)), (fa, fb, fd)), nan)
                     for ra, rb, rc in zip(a, b, c, strict=True)], np.uint64)


def _agree(fa: Element, fb: Element, fd: Element, a: np.ndarray, b: np.ndarray,
           c: np.ndarray, models: list, least: float) -> None:
    """Each model's batch equals the scalar model on every case it covers, and the models
    cover at least `least` of the cases between them (so that the batch, not the fallback,
    is what is tested: an exact sum of terms far apart, or fraction_bits = 60, is not)."""
    values = batch.decode(fa, a), batch.decode(fb, b), batch.decode(fd, c)
    share = []
    for i, model in enumerate(models):
        nan = NANS[i % len(NANS)]
        done = batch.evaluate(model, *values, (fa, fb, fd))
        assert done is not None, model
        got, covered = done
        want = _scalar(model, fa, fb, fd, a, b, c, nan)
        bits = batch.encode(fd, got, nan)
        wrong = np.flatnonzero(covered & (bits != want))
        assert not wrong.size, (model, fa.name, fb.name, fd.name, a[wrong[0]], b[wrong[0]],
                                c[wrong[0]], hex(int(bits[wrong[0]])), hex(int(want[wrong[0]])))
        share.append(covered.mean())
    assert np.mean(share) >= least, (fa.name, fb.name, fd.name, share)


@pytest.mark.parametrize("name", NAMES)
def test_random_grids_of_every_format_pair_agree_with_the_scalar_models(name) -> None:
    """A and B of `name`, D every format the lab knows (and mixed A and B formats); f64's
    long significands are the scalar models' (its products fit 62 bits where short)."""
    fa = FORMATS[name]
    pairs = [(fa, fa, FORMATS[d]) for d in NAMES]
    pairs += [(fa, FORMATS[other], FORMATS["f32"]) for other in NAMES if other != name][:2]
    for j, (x, y, d) in enumerate(pairs):
        k = 5 if j % 2 else 8  # odd K: an odd term passes up the pairwise tree unrounded
        least = 0.3 if "f64" in (x.name, y.name) else 0.7
        _agree(x, y, d, *_cases(x, y, d, 36, k, seed=j), _models(k), least)


def _edge(fmt: Element) -> list[Value]:
    """The values of `fmt` exact arithmetic most easily gets wrong."""
    low = fmt.emin - fmt.fraction  # the smallest subnormal's exponent
    values = [Value("finite", 0, 0, 0), Value("finite", 1, 0, 0), Value("finite", 0, 1, low),
              Value("finite", 1, (1 << fmt.fraction) - 1, low), Value.of_int(1),
              Value.of_int(-3), Value("finite", 0, 3, -1),
              round_to(fmt, Value("finite", 0, 1, 10_000), "toward-zero")]  # the largest
    if not fmt.finite_only:
        values += [Value("inf", 0), Value("inf", 1)]
    nans = [Value("nan", s, p) for s in (0, 1) for p in (1, (1 << fmt.fraction) - 1)]
    return values + [v for v in nans if decode(fmt, encode(fmt, v, "passed-negative-quiet"))
                     == v or fmt.finite_only][:3]


@pytest.mark.parametrize("names", [("f16", "f32"), ("e4m3", "f32"), ("e5m2", "f16"),
                                   ("bf16", "e4m3"), ("tf32", "bf16"), ("f32", "e5m2")])
def test_edge_values_in_every_combination_agree_with_the_scalar_models(names) -> None:
    """K = 3 over the edge values of A's format (every pair of k drawn from them) and C's
    (NaN payloads, first NaN passed, inf - inf, 0 * inf, signed zeros, overflow)."""
    fa, fd = FORMATS[names[0]], FORMATS[names[1]]
    ea, ed = _edge(fa), _edge(fd)
    rows = [(x, y, z) for x, y in product(ea, repeat=2) for z in ed[:: max(1, len(ed) // 4)]]
    rng = np.random.default_rng(7)
    a = np.array([[encode(fa, x), encode(fa, y), encode(fa, Value.of_int(1))]
                  for x, y, _ in rows], np.uint64)
    b = a[rng.permutation(len(a))]
    c = np.array([encode(fd, z, "passed-negative-quiet") for _, _, z in rows], np.uint64)
    _agree(fa, fa, fd, a, b, c, _models(3), least=0.95)


def test_sums_too_wide_for_int64_fall_back_and_pairs_stand_in() -> None:
    """A fused sum spanning 2**60 and 2**-14 does not fit: not covered (the scalar model
    computes it); an addition of two far apart terms is covered by its stand-in."""
    f16, f32 = FORMATS["f16"], FORMATS["f32"]
    big, tiny = Value("finite", 0, 1, 15), Value("finite", 0, 1, -24)
    grid = [[big, big, tiny, tiny], [big, tiny, tiny, tiny]]
    a = np.array([[encode(f16, v) for v in row] for row in grid], np.uint64)
    b = np.array([[encode(f16, v) for v in (big, big, tiny, tiny)]] * 2, np.uint64)
    c = np.array([encode(f32, Value("finite", 1, 1, -149))] * 2, np.uint64)
    values = batch.decode(f16, a), batch.decode(f16, b), batch.decode(f32, c)
    _, covered = batch.evaluate(FusedDot(None), *values, (f16, f16, f32))
    assert not covered.any()
    for model in (FmaChain(), PairwiseTree("down"), FusedDot(25, "up", c="after")):
        got, covered = batch.evaluate(model, *values, (f16, f16, f32))
        assert covered.all()
        assert (batch.encode(f32, got, "quiet") ==
                _scalar(model, f16, f16, f32, a, b, c, "quiet")).all()


def test_one_term_as_wide_as_an_int64_holds_is_summed_alone() -> None:
    """A 61-bit f64 product beside a zero (and tiny C): a sum of one live term needs no room
    for a carry, so the batch covers it, and rounds it as the scalar model does."""
    f64, f32 = FORMATS["f64"], FORMATS["f32"]
    x = np.float64((2**30 + 1) * 2.0**-500)
    a = np.array([[x, 0.0], [-x, 0.0]]).view(np.uint64)
    b = np.array([[x, 1.0], [x, -1.0]]).view(np.uint64)
    c = np.array([np.float32(-0.0), np.float32(2.0**-149)]).view(np.uint32).astype(np.uint64)
    values = batch.decode(f64, a), batch.decode(f64, b), batch.decode(f32, c)
    for model in (PairwiseTree("toward-zero"), FmaChain(rounding="up")):
        got, covered = batch.evaluate(model, *values, (f64, f64, f32))
        assert covered.all(), model
        assert (batch.encode(f32, got, "quiet") ==
                _scalar(model, f64, f64, f32, a, b, c, "quiet")).all(), model


def test_a_stand_in_rounds_as_the_sum_even_one_bit_below_a_power_of_two() -> None:
    """C = 2**20 less a product 2**-(d + 1) (1 + 2**-22 + 2**-46): 47 bits wide, too wide
    to add exactly; where it falls just past half an ulp of the sum (which lost its leading
    bit), a stand-in cut too close to the sum's last bit would round as a tie."""
    f32 = FORMATS["f32"]
    odd = np.float32(1 + 2.0**-23)
    a = np.array([[np.float32(s * odd * 2.0**-d)] for d in range(1, 12) for s in (-1, 1)])
    b = np.full_like(a, odd * np.float32(2.0**-4))
    c = np.full(len(a), np.float32(2.0**20))
    a, b, c = (x.view(np.uint32).astype(np.uint64) for x in (a, b, c))
    values = batch.decode(f32, a), batch.decode(f32, b), batch.decode(f32, c)
    for model in (*(FmaChain(rounding=r) for r in ROUNDINGS), PairwiseTree("nearest-even"),
                  FusedDot(25, "down", c="after", after_rounding="nearest-even")):
        got, covered = batch.evaluate(model, *values, (f32, f32, f32))
        assert covered.all()
        assert (batch.encode(f32, got, "quiet") ==
                _scalar(model, f32, f32, f32, a, b, c, "quiet")).all(), model


def test_long_f64_products_and_other_families_are_left_to_the_scalar_models() -> None:
    """1 and 1 + 2**-52 (53 bits): one product of two is the batch's, the other not."""
    f64 = FORMATS["f64"]
    one = batch.decode(f64, np.array([[0x3FF0000000000000], [0x3FF0000000000001]], np.uint64))
    assert one.sig.tolist() == [[1], [(1 << 52) + 1]]  # the same values, as few bits as need
    _, covered = batch.evaluate(FusedDot(25), one, one, one[:, 0], (f64, f64, f64))
    assert covered.tolist() == [True, False]
    assert batch.evaluate(object(), one, one, one[:, 0], (f64, f64, f64)) is None


def _shortest(v: Value) -> Value:
    """A finite value with its significand's trailing zeros in the exponent (as the batch
    decodes it: the same value)."""
    if v.kind != "finite" or not v.significand:
        return v
    zeros = (v.significand & -v.significand).bit_length() - 1
    return Value("finite", v.sign, v.significand >> zeros, v.exponent + zeros)


def test_decode_and_round_to_are_the_scalar_ones() -> None:
    rng = np.random.default_rng(3)
    for fmt in FORMATS.values():
        patterns = rng.integers(0, 1 << min(fmt.bits, 63), 3000, dtype=np.uint64)
        if fmt.bits <= 16:
            patterns = np.arange(1 << fmt.bits, dtype=np.uint64)
        got = batch.decode(fmt, patterns)
        want = [_shortest(decode(fmt, int(x))) for x in patterns]
        kinds = {"finite": batch.FINITE, "inf": batch.INF, "nan": batch.NAN}
        assert got.kind.tolist() == [kinds[v.kind] for v in want]
        for part, field in (("sign", "sign"), ("sig", "significand"), ("exp", "exponent")):
            assert getattr(got, part).tolist() == [getattr(v, field) for v in want]
    sig = rng.integers(1, 1 << 61, 4000) >> rng.integers(0, 61, 4000)
    values = batch.Values(np.zeros(4000, np.int64), rng.integers(0, 2, 4000), sig,
                          rng.integers(-400, 300, 4000))
    for fmt, rounding, subnormals in product(FORMATS.values(), ROUNDINGS, ("keep", "flush")):
        got = batch.round_to(fmt, values, rounding, subnormals)
        want = [round_to(fmt, Value("finite", int(s), int(n), int(e)), rounding, subnormals)
                for s, n, e in zip(values.sign, values.sig, values.exp, strict=True)]
        assert (batch.encode(fmt, got, "quiet") ==
                np.array([encode(fmt, v) for v in want], np.uint64)).all(), (fmt, rounding)


def test_bit_length_is_ints() -> None:
    x = np.array([0, 1, 2, 3, *(1 << np.arange(1, 62)), *((1 << np.arange(1, 62)) - 1),
                  (1 << 62) - 1], np.int64)
    assert batch.bit_length(x).tolist() == [int(v).bit_length() for v in x]


def test_predicted_bits_is_the_scalar_models_on_every_case() -> None:
    """The batch and its fallback together, through a [model] table: e5m2 (batched, a few
    cases too wide) and f64 (scalar) grids."""
    for name, k in (("e5m2", 8), ("f64", 4)):
        fmt = FORMATS[name]
        a, b, c = _cases(fmt, fmt, fmt if name == "f64" else FORMATS["f32"], 60, k, seed=11)
        fd = FORMATS[name if name == "f64" else "f32"]
        grid = xr.Dataset(coords={
            "a_bits": (("case", "k"), a), "b_bits": (("case", "k"), b), "c_bits": ("case", c),
            "a_format": ((), name), "b_format": ((), name), "d_format": ((), fd.name)})
        for table in ({"family": "fused-dot"}, {"family": "fused-dot", "fraction_bits": 25,
                                                "rounding": "toward-zero", "c": "after"},
                      {"family": "fma-chain", "rounding": "up", "nan": "all-ones"},
                      {"family": "pairwise-tree", "nan": "passed-negative-quiet"}):
            model = spec.model_of(table)
            want = _scalar(model, fmt, fmt, fd, a, b, c, str(table.get("nan", "quiet")))
            assert (spec.predicted_bits(table, grid) == want.view(np.int64)).all(), table
