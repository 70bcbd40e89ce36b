"""The numerics kit's seeded family (issue 38 item 3): cases drawn from a probe's declared
seed, so that a law read from earlier data meets cases it has not seen. The same seed draws
the same cases, another seed other ones; every value is exact in its format and sent as
drawn (a NaN keeps its sign and payload, a signalling one too); the cases alone tell the
fitted laws from their rivals; only the probes that declare a seed record one."""

from dataclasses import replace
from fractions import Fraction

import pytest
import xarray as xr

from probelab.formats import FORMATS
from probelab.kits.numerics.draws import pattern
from probelab.kits.numerics.stimulus import Frame, seeded
from probelab.numerics.exact import Value, decode, encode
from probelab.numerics.models import FmaChain, FusedDot
from probelab.probe import catalog

E4M3, E5M2, F32, F64 = (FORMATS[n] for n in ("e4m3", "e5m2", "f32", "f64"))
FP8 = Frame(32, a=E5M2, one=16, swamp_one=-8, shifts=range(8, 29), seed=7, draws=48)
DFMA = Frame(4, a=F64, out=F64, shifts=range(48, 60), c_tiny=-1060, seed=7, draws=48)
# sm_90's lowered fp8 mma.sync (lowered-pairs-law) and its rival reading of the halves
PAIRS = tuple(k for k in range(32) if k % 4 < 2) + tuple(k for k in range(32) if k % 4 >= 2)
LOWERED = dict(fraction_bits=25, rounding="toward-zero", align="exponents", group=16,
               c="after", after_rounding="nearest-even")


def _rows(frame: Frame) -> set[tuple[int, ...]]:
    return {(*(pattern(frame.a, v) for v in (*a, *b)), pattern(frame.out, c))
            for _, a, b, c in seeded(frame)}


def test_the_seed_draws_the_cases_and_another_seed_other_ones() -> None:
    assert list(seeded(replace(FP8, seed=None))) == []
    assert list(seeded(FP8)) == list(seeded(FP8))
    assert len(_rows(FP8)) == 4 * 48 and not _rows(FP8) & _rows(replace(FP8, seed=8))
    finite_only = replace(FP8, a=E4M3)  # no infinities: its specials are NaN inputs alone
    assert [n.split()[1].split("@")[0] for n, *_ in seeded(finite_only)].count("NaN") == 48
    assert len(list(seeded(finite_only))) == 3 * 48


@pytest.mark.parametrize("frame", [FP8, replace(FP8, a=E4M3), DFMA])
def test_every_drawn_value_is_sent_exactly_as_drawn(frame: Frame) -> None:
    """A finite value round-trips through its pattern; a NaN keeps its sign and fraction
    field (quiet or signalling); every finite case's exact sum is finite in D's format."""
    signalling = 0
    for _, a, b, c in seeded(frame):
        for fmt, v in [*((frame.a, x) for x in (*a, *b)), (frame.out, c)]:
            back = decode(fmt, pattern(fmt, v))
            assert (back.kind, back.sign) == (v.kind, v.sign)
            if v.kind == "finite":
                assert Fraction(back.significand) * Fraction(2) ** back.exponent == \
                    Fraction(v.significand) * Fraction(2) ** v.exponent
            if v.kind == "nan" and not fmt.finite_only:
                assert back.significand == v.significand
                signalling += not v.significand >> (fmt.fraction - 1)
        if all(v.kind == "finite" for v in (*a, *b, c)):
            assert FusedDot(None)(a, b, c, (frame.a, frame.a, frame.out)).kind == "finite"
    assert signalling > 0 or frame.a.finite_only
    assert pattern(F64, Value("nan")) == encode(F64, Value("nan"))  # the designed NaN as ever


def test_the_drawn_cases_alone_part_the_fitted_laws_from_their_rivals() -> None:
    """On the seeded cases alone: the pairs lowering from the halves one and from C in the
    sum; DFMA's NaN spelling from IEEE's default quiet NaN, on NaNs passed and made."""
    formats = (E5M2, E5M2, F32)
    finite = [(a, b, c) for _, a, b, c in seeded(FP8)
              if all(v.kind == "finite" for v in (*a, *b, c))]

    def apart(x: FusedDot, y: FusedDot) -> int:
        return sum(encode(F32, x(*case, formats)) != encode(F32, y(*case, formats))
                   for case in finite)

    law = FusedDot(**LOWERED, order=PAIRS)
    assert apart(law, FusedDot(**LOWERED)) >= 16  # the halves: k < 16 first
    assert apart(law, FusedDot(**LOWERED | {"c": "in-sum"}, order=PAIRS)) >= 16
    specials = [(name, FmaChain()(a, b, c, (F64, F64, F64))) for name, a, b, c in seeded(DFMA)
                if not all(v.kind == "finite" for v in (*a, *b, c))]
    spelt = [(name, encode(F64, d, "passed-negative-quiet"), encode(F64, d)) for name, d in
             specials if d.kind == "nan"]
    passed = [s for s in spelt if " NaN@" in s[0]]
    assert len(passed) == 48 and all(law != quiet for _, law, quiet in spelt)
    assert len(spelt) - len(passed) >= 16  # made: 0 * inf, inf - inf, C against a product


def test_only_the_probes_that_declare_a_seed_record_one() -> None:
    """The four probes whose laws were read from their data draw seeded cases (version 4)
    and record the seed in the grid; every other numerics grid is as it was."""
    probes = {i: p for i, p in catalog().probes.items() if i.startswith("numerics-")}
    seeded_ids = {i for i, p in probes.items() if "seeded" in p.families}
    assert seeded_ids == {"numerics-mma-e4m3-f32", "numerics-mma-e5m2-f32",
                          "numerics-mma-f64-m8n8k4", "numerics-mma-f64-m16n8k16"}
    for i in sorted(seeded_ids):
        grid = probes[i].stimulus()
        assert probes[i].version == "4"
        assert int(grid["stimulus_seed"]) == probes[i].spec.frame.seed
        assert (grid["family"] == "seeded").sum() >= 3 * probes[i].spec.frame.draws
    assert "stimulus_seed" not in probes["numerics-order-mma-e4m3-f32"].stimulus().coords


def test_the_datasets_a_fitted_law_names_hold_every_case_but_the_seeded_ones() -> None:
    """What the sealed restatements rest on (`fitted_from`, notary.freshness): of version 4's
    cases, exactly the seeded ones are in none of the archived datasets each names, and each
    named dataset records no seed."""
    from probelab.hypothesis import load_hypothesis
    from probelab.notary import freshness
    from probelab.paths import lab_root

    probes = catalog().probes
    for path in sorted(lab_root().glob("preregistrations/numerics-*/*-fresh.toml")):
        h = load_hypothesis(path)
        held: set[bytes] = set()
        for name in h.fitted_from:
            with xr.open_dataset(lab_root() / name, engine="h5netcdf") as ds:
                assert freshness.seed(ds) == "none"
                held.update(freshness.cases(ds))
        grid = probes[h.probe].stimulus()
        new = [key not in held for key in freshness.cases(grid)]
        assert new == (grid["family"] == "seeded").values.tolist(), h.probe
