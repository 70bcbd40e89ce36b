"""The sparse-metadata engine on simulated units: does the lane-qualified sweep recover a
hidden law (whose lane, which field, which row of B), and does it flag units that follow
none? Tests of the design, never evidence.

Expectations come from the hidden laws themselves, never from decoding. `ptx_law`
(probes/mma_sp/ptx.py) transcribes the PTX ISA's sparse fragment tables element by element,
so the sealed hypotheses' expressions are checked against an independent reading.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first

from probelab.errors import UsageError
from probelab.formats import BF16, E4M3, E5M2, F16, F32, S4, S8, S32, TF32
from probelab.hypothesis import parse_hypothesis, predict
from probelab.kits.elements import Codec
from probelab.kits.sparse import engine as sparse
from probelab.kits.sparse.engine import LANES, NONE, Law
from probelab.probe import get_probe, load_sibling

ROOT = Path(__file__).resolve().parents[1]
ptx_law = load_sibling(ROOT / "probes" / "mma_sp" / "ptx.py").ptx_law
KINDS = ("f16", "s8", "s4", "bf16", "tf32", "e4m3", "e5m2")


def run(probe, units=None, unit_fn=None):
    """Simulate the probe's kernels (all, or `units`) and decode: (dataset, problems)."""
    design = probe.design if units is None else dataclasses.replace(probe.design, units=units)
    grid = sparse.stimulus(design)
    w = sparse.waves(grid, design.codec)
    c = np.zeros_like(w["a"])
    raw = {}
    for unit in design.units:
        law = probe.hidden_law(unit)
        fn = unit_fn or sparse.multiply
        raw[unit.name] = fn(law, unit, design.codec, w["a"], w["b"], c, w["e"])
    return sparse.assemble(grid, design, raw)


def smallest_slot_of_row(law: Law, k: int) -> int:
    """The smallest B slot (lane * b_elems + elem) holding row k of B."""
    lanes, elems = np.nonzero(law.b_kn[..., 0] == k)
    return int((lanes * law.b_kn.shape[1] + elems).min())


def expected_met(law: Law, value: np.ndarray) -> np.ndarray:
    """Per A slot, the smallest B slot of the row its element meets when its governing
    field holds `value` (NONE where the slot holds no element)."""
    out = np.full(law.a_row.shape, NONE, np.int64)
    for lane, n in zip(*np.nonzero(law.a_row >= 0), strict=True):
        out[lane, n] = smallest_slot_of_row(law, int(law.base[lane, n]
                                                      + law.stride[lane, n] * value[lane, n]))
    return out


@pytest.mark.parametrize("kind", quick_first(KINDS))
def test_a_hidden_law_is_recovered(kind: str) -> None:
    probe = get_probe(f"mma-sp-{kind}")
    units = probe.design.units[:2]  # the smaller shape, selectors 0 and 1 (fp8: both forms)
    ds, problems = run(probe, units)
    assert problems == []
    meta = probe.design.meta
    for unit in units:
        law, sub = probe.hidden_law(unit), ds.sel(kernel=unit.name)
        exist = law.a_row >= 0
        assert exist.sum() == 16 * unit.K // 2
        np.testing.assert_array_equal(sub["gov_lane"].values[exist], law.gov_lane[exist])
        np.testing.assert_array_equal(sub["gov_field"].values[exist], law.gov_field[exist])
        assert (sub["gov_lane"].values[~exist] == NONE).all()
        for w, word in enumerate(meta.valid):
            value = ((meta.uniform(word) >> (2 * law.gov_field)) & 3) >> law.shift
            slot = expected_met(law, value)
            b_elems = probe.design.b_elems
            got = sub["met_lane"].values[w].astype(np.int64) * b_elems + \
                sub["met_elem"].values[w]
            np.testing.assert_array_equal(got[exist], slot[exist])
            assert (sub["met_lane"].values[w][~exist] == NONE).all()
        assert (sub["met_count"].values[:, exist] == 8).all()
        assert (sub["random_ok"].values[:, exist] == 1).all()
        assert (sub["superposed"].values == 1).all()


def hypothesis(probe_id: str, name: str):
    path = ROOT / "preregistrations" / probe_id / f"{name}.toml"
    return parse_hypothesis(path, path.read_bytes())


def check_reading(probe, law_of, readings: tuple[str, ...], rival: str) -> None:
    """A unit built by `law_of(unit, design)` for every kernel: the sealed `readings` predict
    every decoded cell; the `rival` misses gov_lane and each near miss of the first reading
    misses somewhere."""
    probe.sim_laws.clear()
    try:
        for unit in probe.design.units:
            probe.sim_laws[unit.name] = law_of(unit, probe.design)
        ds, problems = run(probe)
    finally:
        probe.sim_laws.clear()
    assert problems == []
    sealed = [hypothesis(probe.id, name) for name in readings]
    tables = {}
    for reading in sealed:
        tables |= predict(reading, ds, probe.observables)["literal"]
    assert {"row_lane", "met_lane", "gov_lane"} <= set(tables)
    for name, table in tables.items():
        np.testing.assert_array_equal(ds[name].values, table, err_msg=name)
    rivals = predict(hypothesis(probe.id, rival), ds, probe.observables)["literal"]
    assert (rivals["gov_lane"] != ds["gov_lane"].values).any()
    for miss in sealed[0].near_misses:
        changed = predict(sealed[0].near_miss(miss), ds, probe.observables)["literal"]
        assert any((changed[n] != ds[n].values).any() for n in changed), miss


@pytest.mark.parametrize("kind", quick_first(KINDS))
def test_the_sealed_ptx_reading_predicts_a_ptx_unit_and_its_rival_does_not(kind: str) -> None:
    """A unit built from this file's transcription of PTX: the ptx hypothesis predicts every
    decoded cell; the own-lane rival misses gov_lane and its near misses miss somewhere."""
    check_reading(get_probe(f"mma-sp-{kind}"), ptx_law, ("ptx-sparse-storage", "ptx-a-rows"),
                  "own-lane-metadata")


def test_a_unit_reading_two_lanes_at_once_is_not_given_a_governor() -> None:
    """The first-kept fields (bits [1:0] of each nibble) are read as the sum of the
    governing lane's and the next lane's: no single (lane, field) explains the pairing, so
    the decode must not name one as if it did."""
    probe = get_probe("mma-sp-f16")
    unit = probe.design.units[0]

    def two_lanes(law, unit, codec, a, b, c, e):
        e = e.astype(np.int64)
        summed = ((e + np.roll(e, -1, axis=1)) & 0x33333333) | (e & 0xCCCCCCCC)
        return sparse.multiply(law, unit, codec, a, b, c, summed.astype(np.uint32))

    ds, _ = run(probe, (unit,), two_lanes)
    sub = ds.sel(kernel=unit.name)
    law = probe.hidden_law(unit)
    first = (law.a_row >= 0) & (law.gov_field % 2 == 0)  # elements a summed field governs
    named = sub["gov_lane"].values[first]
    wrong = (named == sparse.AMBIGUOUS) | (sub["random_ok"].values[:, first] == 0).any(0)
    assert wrong.all()


def test_a_unit_that_does_not_superpose_is_caught() -> None:
    probe = get_probe("mma-sp-s8")
    unit = probe.design.units[0]

    def saturating(law, unit, codec, a, b, c, e):
        d = sparse.multiply(law, unit, codec, a, b, c, e).view(np.int32)
        return np.clip(d, -200, 200).astype(np.int32).view(np.uint32)

    ds, _ = run(probe, (unit,), saturating)
    assert (ds.sel(kernel=unit.name)["superposed"].values == 0).any()


def test_a_unit_that_scales_products_is_unreadable_not_misread() -> None:
    probe = get_probe("mma-sp-s4")
    unit = probe.design.units[0]

    def doubled(law, unit, codec, a, b, c, e):
        return (sparse.multiply(law, unit, codec, a, b, c, e).view(np.int32) * 2).view(np.uint32)

    ds, problems = run(probe, (unit,), doubled)
    met = ds.sel(kernel=unit.name)["met_lane"].values
    exist = probe.hidden_law(unit).a_row >= 0
    assert (met[:, exist] == sparse.AMBIGUOUS).all()
    assert problems  # the word waves no longer agree with the rows they name


def test_invalid_metadata_is_recorded_but_no_hypothesis_can_claim_it(tmp_path: Path) -> None:
    probe = get_probe("mma-sp-f16")
    ds, _ = run(probe, probe.design.units[:1])
    assert "bad_lane" in ds and "bad_lane" not in probe.observables
    assert ds["bad_lane"].attrs["outside_contract"]
    assert list(ds["bad"].values) == [probe.design.meta.uniform(v)
                                      for v in probe.design.meta.invalid]
    path = tmp_path / "claims-bad.toml"
    path.write_text('schema = 1\nid = "claims-bad"\nprobe = "mma-sp-f16"\nclaim = "x"\n'
                    'coordinates = "raw"\n[predict]\nbad_lane = "0"\n')
    with pytest.raises(UsageError, match="observes"):
        predict(parse_hypothesis(path, path.read_bytes()), ds, probe.observables)


@pytest.mark.parametrize("operand,accumulator",
                         [(S4, S32), (S8, S32), (F16, F32), (BF16, F32), (TF32, F32),
                          (E4M3, F32), (E5M2, F32)],
                         ids=["s4", "s8", "f16", "bf16", "tf32", "e4m3", "e5m2"])
def test_codec_round_trips_and_names_every_slot(operand, accumulator) -> None:
    codec = Codec(operand, accumulator)
    bits = codec.bits
    levels = codec.levels
    assert len(set(levels.tolist())) == len(levels) and 0 not in levels
    values = np.resize(levels, (3, LANES, 128 // bits))
    np.testing.assert_array_equal(codec.unpack(codec.pack(values), 128 // bits), values)
    slots = LANES * 128 // bits
    assert len(levels) ** codec.digits(slots) >= slots > len(levels) ** (codec.digits(slots) - 1)


def test_the_probes_cover_every_legal_selector_in_both_forms() -> None:
    names = {u.name for kind in KINDS for u in get_probe(f"mma-sp-{kind}").design.units}
    assert len(names) == 52
    assert {"f16_k16_s3_om", "f16_k32_s1_sp", "s8_k64_s0_om", "s4_k128_s0_sp", "bf16_k16_s3_om",
            "bf16_k32_s1_sp", "tf32_k8_s3_sp", "tf32_k16_s1_om", "e4m3_k64_s0_om",
            "e5m2_k64_s0_sp"} <= names
    assert not any(n.startswith(("s8_k64_s1", "s4_k128_s1", "f16_k32_s2", "bf16_k32_s2",
                                 "tf32_k16_s2", "e4m3_k64_s1", "e5m2_k64_s1")) for n in names)


def test_tf32_metadata_is_one_whole_nibble_per_element() -> None:
    """tf32 is 1:2: 0x4 and 0xE are its only valid nibbles and the rest are recorded, never
    claimed; the decode names the nibble's first field as an element's governor."""
    probe = get_probe("mma-sp-tf32")
    meta = probe.design.meta
    assert meta.whole_group and meta.valid == (0x4, 0xE) and len(meta.invalid) == 14
    ds, problems = run(probe, probe.design.units[:1])
    assert problems == []
    exist = probe.hidden_law(probe.design.units[0]).a_row >= 0
    assert exist.sum() == 64 and (ds["gov_field"].values[0][exist] % 2 == 0).all()


def test_outside_contract_summary_counts_what_the_unit_did() -> None:
    """A PTX unit that honours every index literally is all `literal`; one that forms no
    product under the all-zero word counts `none` there, element by element."""
    outside = load_sibling(ROOT / "probes" / "mma_sp" / "outside.py")
    probe = get_probe("mma-sp-s8")
    units = probe.design.units[:1]

    def silent_at_zero(law, unit, codec, a, b, c, e):
        d = sparse.multiply(law, unit, codec, a, b, c, e)
        return np.where((e == 0).all(1)[:, None, None], 0, d).astype(np.uint32)

    probe.sim_laws.clear()
    try:
        probe.sim_laws[units[0].name] = ptx_law(units[0], probe.design)
        plain, _ = run(probe, units)
        muted, _ = run(probe, units, silent_at_zero)
    finally:
        probe.sim_laws.clear()
    design = dataclasses.replace(probe.design, units=units)
    view = dataclasses.replace(probe, design=design)
    rows = outside.summary(plain, view)
    assert len(rows) == len(probe.design.meta.invalid)
    assert all(r["literal"] == r["elements"] == 256 for r in rows)  # 16 rows x 16 kept
    zero = {r["word"]: r for r in outside.summary(muted, view)}["0x00000000"]
    assert (zero["none"], zero["literal"]) == (256, 0)


def test_pairing_map_tables_read_the_decoded_variables() -> None:
    from probelab.kits.sparse.figures import governance_table, pairing_table

    probe = get_probe("mma-sp-f16")
    ds, _ = run(probe, probe.design.units[4:5])  # m16n8k32: 8 elements per lane
    kernel = probe.design.units[4].name
    text, color = governance_table(ds, kernel)
    sub = ds.sel(kernel=kernel)
    assert text.shape == (32, 8)
    assert text[5, 3] == f"{int(sub['gov_lane'][5, 3])}:{int(sub['gov_field'][5, 3])}"
    assert color[5, 3] == int(sub["gov_lane"][5, 3]) % 4
    text, _ = pairing_table(ds, kernel)
    first, second = text[0, 0].split("\n")
    assert first == f"{int(sub['met_lane'][0, 0, 0])}.{int(sub['met_elem'][0, 0, 0])}"
    assert second == f"{int(sub['met_lane'][1, 0, 0])}.{int(sub['met_elem'][1, 0, 0])}"


def test_a_unit_whose_elements_meet_two_rows_of_b_is_flagged() -> None:
    """Every element also lands one chunk further on: each D register holds the sum of two
    B ids. With f16's single digit many sums still spell ids, so the per-register reading
    alone would be fooled; rows of B that overlap without being equal give it away."""
    probe = get_probe("mma-sp-f16")
    unit = probe.design.units[0]

    def twice(law, unit, codec, a, b, c, e):
        moved = dataclasses.replace(law, base=np.where(law.a_row >= 0,
                                                       (law.base + 4) % unit.K, 0))
        total = sparse.multiply(law, unit, codec, a, b, c, e).view(np.float32) + \
            sparse.multiply(moved, unit, codec, a, b, c, e).view(np.float32)
        return total.view(np.uint32)

    ds, problems = run(probe, (unit,), twice)
    assert any("overlapping sets" in p for p in problems)
    assert list(ds["decode_problems"].values) == problems
