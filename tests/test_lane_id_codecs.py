"""The lane-id kit over every element codec: ids travel as digits where a type cannot hold
them whole, a hidden layout is recovered and the random GEMM read through it is exact, on
simulated units. And a new element type needs only a probe folder. Tests of the design,
never evidence.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from test_lane_id import assert_same_up_to_relabeling, hidden, run_unit

from probelab import formats
from probelab.formats import B1, BF16, E4M3, E5M2, F16, F32, F64, S4, S8, S32, TF32, U4, U8
from probelab.kits import elements
from probelab.kits.elements import Codec
from probelab.kits.lane_id import engine
from probelab.kits.lane_id.engine import Shape
from probelab.probe import catalog

# (codec, M, N, K, A values, B values, D values): each dense mma.sync shape PTX gives it
CASES = {
    "f16-f32": (Codec(F16, F32), 16, 8, 16, 8, 4, 4),
    "f16-f16": (Codec(F16, F16), 16, 8, 16, 8, 4, 4),
    "bf16-f32": (Codec(BF16, F32), 16, 8, 16, 8, 4, 4),
    "tf32-f32": (Codec(TF32, F32), 16, 8, 8, 4, 2, 4),
    "e4m3-f32": (Codec(E4M3, F32), 16, 8, 32, 16, 8, 4),
    "e5m2-f16": (Codec(E5M2, F16), 16, 8, 32, 16, 8, 4),
    "s8-s32": (Codec(S8, S32), 16, 8, 32, 16, 8, 4),
    "u8-s32": (Codec(U8, S32), 8, 8, 16, 4, 4, 2),
    "s4-s32": (Codec(S4, S32), 16, 8, 64, 32, 16, 4),
    "u4-s32": (Codec(U4, S32), 8, 8, 32, 8, 8, 2),
    "f64-1024": (Codec(F64, F64), 64, 16, 16, 16, 4, 16),  # 1,024 A slots: two digits
    "b1-s32": (Codec(B1, S32), 8, 8, 128, 32, 32, 2),  # bits, after a presence wave
    "s8xu8-s32": (Codec(S8, S32, b=U8), 16, 8, 32, 16, 8, 4),  # mixed signedness
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "b1-s32" else c
                                  for c in sorted(CASES)])  # b1 has its own quick tests
def test_every_codec_recovers_a_hidden_layout(case: str) -> None:
    codec, m, n, k, a, b, d = CASES[case]
    lanes = m * k // a
    shapes = (Shape(case, m, n, k, lanes, a, b, d, codec=codec),)
    layouts = hidden(shapes, 17)
    ds = run_unit(shapes, layouts)
    assert ds["recovered"].values.tolist() == [1], ds["recovered"].attrs["why"]
    assert ds["gemm_exact"].values.all()
    assert_same_up_to_relabeling(ds, shapes[0], layouts[case])
    plan = engine.Plan.of(codec, engine.Sizes.widest(shapes))
    assert ds.sizes.get("digit", 1) == plan.rounds
    # every operand value the waves carry is exact in its type (encode refuses otherwise)
    w = engine.waves(ds, codec)
    for operand in "abc":
        engine.registers(codec, operand, w[operand], lanes)


def test_narrow_types_need_digit_waves_and_f64_needs_none() -> None:
    def digits(codec: Codec, *shape: int) -> int:
        s = Shape("k", *shape, codec=codec)
        return engine.Plan.of(codec, engine.Sizes.widest([s])).digits

    assert digits(Codec(F64, F64), 16, 8, 16, 32, 8, 4, 4) == 1  # the archive's grids
    assert digits(Codec(E5M2, F32), 16, 8, 32, 32, 16, 8, 4) == 3  # 512 A slots, base 8
    assert digits(Codec(S4, S32), 16, 8, 64, 32, 32, 16, 4) == 4  # 1,024 slots, base 7
    assert digits(Codec(F16, F16), 16, 8, 16, 32, 8, 4, 4) > 1  # C digits: base 3


def test_b1_carries_bits_after_a_presence_wave_and_impossible_plans_are_refused() -> None:
    """b1's one nonzero value cannot also say "no slot": its ids go bit by bit, after a
    wave in which every operand slot is 1."""
    plan = engine.Plan.of(Codec(B1, S32), engine.Sizes(32, 32, 32, 2))
    assert plan.presence and plan.base == 2 and plan.rounds == plan.digits + 1 == 11
    tiny = formats.Element("s3acc", 3, "signed")  # holds 0..3: no room for C beside an id
    with pytest.raises(ValueError, match=r"C digits of base \d .*needs 2"):
        engine.Plan.of(Codec(S8, tiny), engine.Sizes(32, 8, 4, 4))
    with pytest.raises(ValueError, match="random GEMM waves reach"):
        Shape("deep", 16, 8, 256, 32, 128, 64, 4, codec=Codec(E4M3, F16))
    with pytest.raises(ValueError, match="base 1"):  # one level names nothing: no endless loop
        Codec(B1, S32).digits(3)
    with pytest.raises(ValueError, match="one element codec"):
        engine.codec_of([Shape("x", 16, 8, 16, 32, 8, 4, 4, codec=Codec(F16, F32)),
                         Shape("y", 16, 8, 16, 32, 8, 4, 4, codec=Codec(BF16, F32))])


def test_a_unit_that_rounds_an_id_is_not_read_as_one() -> None:
    """f16 accumulators: a unit that keeps D in bf16 (7 fraction bits) rounds the C digits'
    sums, so the ids no longer spell out: refused, never a wrong map."""
    codec = Codec(F16, F16)
    shapes = (Shape("f16acc", 16, 8, 16, 32, 8, 4, 4, codec=codec),)

    def bf16_unit(layout, a, b, c, shape):
        d = engine.multiply(layout, a, b, c, shape).astype(np.float32)
        return (d.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)

    ds = run_unit(shapes, hidden(shapes, 3), unit=bf16_unit)
    assert ds["recovered"].values.tolist() == [0]
    assert not ds["gemm_exact"].values.any()


def test_a_c_missing_from_one_digit_wave_spoils_both_names() -> None:
    """Two digit waves; the C digit is absent from the second only: neither the C slot nor
    the A slot is read from that cell (one value names both, in every digit)."""
    plan = engine.Plan(base=16, scale=1024, c_base=1000, digits=2)
    good = 1024 * (3 + 1) + (5 + 1)  # C slot 3, A digit 5, in the first digit wave
    values = np.array([[[good]], [[0 + 1]]], np.float64)  # second wave: A digit 0, no C
    c, x = engine._names(values, plan, slots=200, c_slots=200)
    assert c.tolist() == [[engine.INVALID]] and x.tolist() == [[engine.INVALID]]
    whole = np.array([[[good]], [[1024 * 1 + 1]]], np.float64)  # C digit 0 there too
    c, x = engine._names(whole, plan, slots=200, c_slots=200)
    assert c.tolist() == [[3]] and x.tolist() == [[5]]


@pytest.mark.slow
def test_a_b1_unit_that_answers_the_presence_wave_everywhere_is_refused() -> None:
    """A unit that reports a product in every D slot of the presence waves (an OR where an
    AND belongs) names slot 0 where nothing arrived: no one layout explains that."""
    codec = Codec(B1, S32)
    shapes = (Shape("b1", 8, 8, 128, 32, 32, 32, 2, codec=codec),)
    size = engine.Sizes.widest(shapes)
    plan = engine.Plan.of(codec, size)

    def everywhere(layout, a, b, c, shape):
        d = engine.multiply(layout, a, b, c, shape)
        nb, na = size.slots("b"), size.slots("a")
        d[:nb] = c[:nb] + 1  # round 0 of the a-named waves: every D slot "met" something
        start = plan.rounds * nb
        d[start:start + na] = c[start:start + na] + 1  # and of the b-named ones
        return d

    ds = run_unit(shapes, hidden(shapes, 4), unit=everywhere)
    assert ds["recovered"].values.tolist() == [0]
    assert not ds["gemm_exact"].values.any()


def test_mixed_signedness_packs_each_operand_in_its_own_type() -> None:
    """s8 x u8: A's values are s8 bit patterns, B's u8 ones; the GEMM waves give the signed
    side negative values and the unsigned side none, and the grid names both types."""
    codec = Codec(S8, S32, b=U8)
    assert codec.element("a") is S8 and codec.element("b") is U8
    shapes = (Shape("mixed", 16, 8, 32, 32, 16, 8, 4, codec=codec),)
    grid = engine.stimulus(shapes, trials=2, seed=1)
    assert str(grid["b_operand_type"].values) == "u8" and (grid["gemm_b"].values >= 0).all()
    assert grid["gemm_a"].values.min() == -4 and grid["gemm_b"].values.max() == 4
    a = engine.registers(codec, "a", grid["gemm_a"].values.reshape(2, -1).astype(float), 32)
    assert (a >> 24 == 0xFC).any()  # -4 reaches the registers as the s8 pattern 0xFC
    with pytest.raises(ValueError, match="codec is not"):
        engine.waves(grid, Codec(S8, S32))


def test_mixed_signedness_gemm_refutes_a_unit_that_reads_the_signed_side_unsigned() -> None:
    """A unit that multiplies s8 x u8 as u8 x u8 keeps every lane map, so only the GEMM
    waves' negative values can tell: gemm_exact must fail there, and hold on a true unit."""
    codec = Codec(S8, S32, b=U8)
    shapes = (Shape("mixed", 16, 8, 16, 32, 8, 4, 4, codec=codec),)
    layouts = hidden(shapes, 7)
    assert run_unit(shapes, layouts)["gemm_exact"].values.all()

    def unsigned(layout, a, b, c, shape):
        return engine.multiply(layout, np.where(a < 0, a + 256, a), b, c, shape)

    ds = run_unit(shapes, layouts, unit=unsigned)
    assert ds["recovered"].values.tolist() == [1] and not ds["gemm_exact"].values.any()


def test_f64_packing_is_the_old_double_view() -> None:
    """The archive's f64 launches passed doubles viewed as uint32 pairs: the codec packs
    them into the same words, low word first."""
    values = np.random.default_rng(0).integers(-2**40, 2**40, (3, 32, 8)).astype(np.float64)
    np.testing.assert_array_equal(elements.pack(F64, values), values.view(np.uint32))


@pytest.mark.parametrize("element", list(formats.ELEMENTS.values()), ids=lambda e: e.name)
def test_every_element_round_trips_its_levels_and_refuses_the_rest(element) -> None:
    values = np.concatenate([[0], element.levels[:300]]).astype(np.float64)
    regs = elements.pack(element, values[None])
    assert regs.shape == (1, elements.words(element, values.size))
    back = element.decode(elements.unpack(element, regs, values.size))
    np.testing.assert_array_equal(back[0], values)
    if element is F64:
        return  # the host's own doubles: nothing finer to refuse
    # one fraction bit more than the type has / one above its largest integer
    beyond = 1 + 2.0 ** -(element.fraction + 1) if element.floating else \
        2**element.bits + element.lowest
    with pytest.raises(ValueError, match="cannot hold"):
        element.encode(np.array([beyond]))


def test_many_fp8_codes_decode_to_the_bits_each_decodes_to_alone() -> None:
    """A large array is decoded through the table of every code: the same float64 bits
    (NaN's sign and payload, -0.0) as the formula per code, in its shape; codes past the
    format's width are left to the formula."""
    from probelab.formats import E4M3FNUZ, E5M2FNUZ

    rng = np.random.default_rng(5)
    for element in (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ):
        codes = np.concatenate([np.arange(256), rng.integers(0, 256, 3000)]).astype(np.uint64)
        for raw in (codes, codes.reshape(8, -1)[:, ::-1], codes.astype(np.uint32)):
            got = element.decode(raw)
            alone = np.array([element._decode_codes(np.array([c]))[0]
                              for c in raw.reshape(-1)]).reshape(raw.shape)
            assert got.dtype == np.float64 and got.shape == raw.shape
            assert got.view(np.uint64).tolist() == alone.view(np.uint64).tolist()
        wide = np.concatenate([codes, [256, 2**40 + 3]]).astype(np.uint64)
        assert element._decode_small(wide).view(np.uint64).tolist() == \
            element._decode_codes(wide).view(np.uint64).tolist()


def test_fp8_codes_decode_as_the_ocp_formats_say() -> None:
    """OCP fp8 (arXiv 2209.05433): e4m3 max 448, NaN S.1111.111, no Inf; e5m2 max 57344,
    Inf S.11111.00; the smallest subnormals 2**-9 and 2**-16."""
    assert E4M3.decode(np.array([0x7E, 0x01]))[[0, 1]].tolist() == [448.0, 2.0**-9]
    assert np.isnan(E4M3.decode(np.array([0x7F, 0xFF]))).all()
    assert E5M2.decode(np.array([0x7B, 0x01])).tolist() == [57344.0, 2.0**-16]
    assert E5M2.decode(np.array([0x7C, 0xFC])).tolist() == [np.inf, -np.inf]
    assert E4M3.encode(np.array([-0.0, 0.0])).tolist() == [0x80, 0x00]
    assert TF32.encode(np.array([2049.0 - 1])).tolist() == [np.float32(2048).view(np.uint32)]
    with pytest.raises(ValueError):
        TF32.encode(np.array([2049.0]))  # 11 significant bits: one too many for tf32
    assert S32.encode(np.array([-1])).tolist() == [0xFFFFFFFF]
    with pytest.raises(ValueError):
        F64.encode(np.array([2**53 + 1]))  # an integer no double holds is refused, not rounded
    assert E5M2.encode(np.array([np.inf, -np.inf])).tolist() == [0x7C, 0xFC]
    with pytest.raises(ValueError):
        E4M3.encode(np.array([np.inf]))  # e4m3 has no infinity
    assert np.isnan(E4M3.decode(E4M3.encode(np.array([np.nan])))).all()
    assert np.isnan(BF16.decode(BF16.encode(np.array([np.nan])))).all()
    assert TF32.decode(np.array([np.float32(1.0).view(np.uint32) | 0x1FFF])).tolist() == [1.0]



def test_fnuz_fp8_codes_decode_as_cdna3s_formats_say() -> None:
    """CDNA3's fp8 (the FNUZ variants, LLVM's Float8E4M3FNUZ / Float8E5M2FNUZ): the bias one
    higher than OCP's (so 1.0 is 0x40, not 0x38), e4m3 max 240, e5m2 max 57344, no
    infinity, one zero, and 0x80 (OCP's -0) the only NaN."""
    from probelab.formats import E4M3FNUZ, E5M2FNUZ

    assert E4M3FNUZ.encode(np.array([1.0, -1.0])).tolist() == [0x40, 0xC0]
    assert E4M3.encode(np.array([1.0])).tolist() == [0x38]
    assert E4M3FNUZ.decode(np.array([0x7F, 0x01])).tolist() == [240.0, 2.0**-10]
    assert E5M2FNUZ.decode(np.array([0x7F, 0x01])).tolist() == [57344.0, 2.0**-17]
    for fnuz in (E4M3FNUZ, E5M2FNUZ):
        table = fnuz.decode(np.arange(256))
        assert np.isnan(table).sum() == 1 and np.isnan(table[0x80]) and not np.isinf(table).any()
        assert fnuz.encode(np.array([-0.0, 0.0, np.nan])).tolist() == [0x00, 0x00, 0x80]

F16_PROBE = '''"""f16-lanes: a test-only dense f16 lane-map probe, declared with the lane-id kit."""

from pathlib import Path

from probelab.formats import F16, F32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.probe import LaneIdProbe, Shape
from probelab.probe import Evidence

HERE = Path(__file__).parent
PROBE = LaneIdProbe(
    id="f16-lanes", version="1", summary="test-only: f16 m16n8k16 lane map",
    targets=("sm_90",), vendor="nvidia", source=HERE / "f16_lanes.cu",
    shapes=(Shape("m16n8k16", 16, 8, 16, 32, 8, 4, 4, codec=Codec(F16, F32)),),
    evidence=lambda shape: Evidence(r"HMMA\\.16816\\.F32"), seed=11)
'''


def test_a_new_element_type_needs_only_a_probe_folder(tmp_path: Path, monkeypatch) -> None:
    """An f16 probe in a lab of its own (nothing in probelab/ changed for it): swept on the
    simulated device, its hidden layout comes back, the registers packed two halves each."""
    from probelab.sweep import run_sweep

    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    folder = tmp_path / "lab" / "probes" / "f16_lanes"
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(F16_PROBE)
    (folder / "f16_lanes.cu").write_text("// the sim backend never compiles this\n")
    (tmp_path / "lab" / "preregistrations").mkdir()
    monkeypatch.setenv("PROBELAB_ROOT", str(tmp_path / "lab"))
    catalog.cache_clear()
    try:
        result = run_sweep("f16-lanes", "sim", target="sm_90", out_root=tmp_path / "out")
        probe = catalog().get("f16-lanes")
        launch = probe.launch(probe.stimulus())
        assert launch.inputs["a"].shape[-1] == 4  # 8 halves per lane in 4 registers
        ds = result.dataset
        assert ds["recovered"].values.all(), ds["recovered"].attrs["why"]
        assert ds["gemm_exact"].values.all()
        shape = probe.shapes[0]
        assert_same_up_to_relabeling(ds, shape, probe.hidden_layout(shape))
    finally:
        sys.modules.pop("probelab_probe_f16_lanes_probe", None)
        catalog.cache_clear()


def _thirteen_bits(d: np.ndarray) -> np.ndarray:
    """D as a unit that keeps 13 fraction bits beside the leading one (truncating) leaves
    it: what fp8 wgmma did to the version-1 lane-id waves."""
    out = np.asarray(d, np.float64).copy()
    big = np.abs(out) >= 2**14
    ulp = 2.0 ** (np.floor(np.log2(np.abs(out[big]))) - 13)
    out[big] = np.trunc(out[big] / ulp) * ulp
    return out


@pytest.mark.slow
def test_ids_planned_within_a_units_narrow_sums_are_read_and_otherwise_refused() -> None:
    """A unit whose sums are exact only below 2**14: waves planned for f32's 2**24 lose
    the ids' low bits and no map is drawn; planned within the sums (Codec.sums_exact) the
    same hidden layout is recovered and every GEMM is exact. The grid says which."""
    def narrow(layout, a, b, c, shape):
        return _thirteen_bits(engine.multiply(layout, a, b, c, shape))

    for sums, recovered in ((None, 0), (2**14, 1)):
        codec = Codec(E4M3, F32, sums_exact=sums)
        shapes = (Shape("qgmma", 64, 8, 32, 128, 16, 8, 4, codec=codec, tiles=("b",)),)
        ds = run_unit(shapes, hidden(shapes, 3), unit=narrow)
        assert ds["recovered"].values.tolist() == [recovered], ds["recovered"].attrs
        assert bool(ds["gemm_exact"].values.all()) == bool(recovered)
        assert ("sums_exact" in ds.coords) == bool(sums)
    with pytest.raises(ValueError, match="codec is not"):
        engine.waves(engine.stimulus(shapes, 2, 1), Codec(E4M3, F32))
