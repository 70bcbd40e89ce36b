"""numerics-mma-f16-f32 end to end on the simulated unit: the cases reach D(0, 0) through
the fragments placed by the PTX m16n8k16 maps, the dataset's d_bits are what the unit's own
model predicts (and not what a rival one parameter away predicts), and every other D
element is +0 exactly where the inputs are finite."""

from pathlib import Path

import numpy as np
import pytest
from quick import quick_first

from probelab.hypothesis import evaluate_claim, parse_hypothesis
from probelab.numerics.models import FusedDot
from probelab.probe import get_probe, load_sibling
from probelab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
# the sweeps' repeats: both output poisons (a cell the unit never wrote is told apart); a
# third run repeats the first poison on a deterministic model and costs a third more
REPEATS = 2


def _model_file(model: str, probe_id: str) -> bytes:
    return (f'schema = 1\nid = "m"\nprobe = "{probe_id}"\nclaim = "x"\n'
            f'coordinates = "raw"\nwhere = "finite_inputs == 1"\n\n[model]\n{model}\n\n'
            '[predict]\nd_bits = "model"\nrest_zero = "1"\n').encode()


def test_the_fragment_maps_place_each_element_once() -> None:
    mod = load_sibling(ROOT / "probes" / "numerics_mma" / "probe.py")
    for probe in mod.PROBES:
        rows = int(probe.spec.shape[1:].split("n")[0])  # M of the shape
        tables = [(probe.a_map, rows * probe.spec.k), (probe.d_map, rows * 8)]
        if probe.b_map is not None:
            tables.append((probe.b_map, probe.spec.k * 8))
        for table, cells in tables:
            flat = {tuple(c) for c in table.reshape(-1, 2).tolist()}
            assert len(flat) == cells == table.shape[0] * table.shape[1], probe.id


@pytest.mark.parametrize("probe_id", quick_first(["numerics-mma-tf32-f32", "numerics-mma-f16-f32",
                                                  "numerics-mma-bf16-f32"]))
def test_a_simulated_unit_is_read_back_through_the_models(tmp_path: Path, monkeypatch,
                                                          probe_id: str) -> None:
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    monkeypatch.setattr(probe, "sim_model", FusedDot(24, "toward-zero"))
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, repeats=REPEATS,
                   allow_blind=True).dataset
    grid = probe.stimulus()
    finite = ds["finite_inputs"].values == 1
    np.testing.assert_array_equal(ds["rest_zero"].values[0], finite.astype(np.uint32))
    own = parse_hypothesis(tmp_path / "own.toml", _model_file(
        'family = "fused-dot"\nfraction_bits = 24\nrounding = "toward-zero"', probe_id))
    rival = parse_hypothesis(tmp_path / "rival.toml", _model_file(
        'family = "fused-dot"\nfraction_bits = 25\nrounding = "toward-zero"', probe_id))
    want = evaluate_claim(own, grid, probe.observables)[0]["literal"]["d_bits"]
    other = evaluate_claim(rival, grid, probe.observables)[0]["literal"]["d_bits"]
    got = ds["d_bits"].values[0]
    assert (got[finite] == want[finite]).all() and (got[finite] != other[finite]).any()


def test_every_kind_places_its_cases_inside_its_formats() -> None:
    """Outside `specials`, the targeted subnormal inputs and the seeded draws (subnormals
    where their window reaches them) every nonzero input is a normal of its format (a flushed
    input would mask the property), every case is K long, and
    mma.sync's f16/bf16/tf32 probes and their wgmma twins share one stimulus (issue 38: both
    take every family), so their datasets compare case by case."""
    from probelab.kits.numerics import stimulus
    mod = load_sibling(ROOT / "probes" / "numerics_mma" / "probe.py")
    for kind in mod.KINDS.values():
        for family in kind.families:
            for name, a, b, _ in stimulus.FAMILIES[family](kind.frame):
                assert len(a) == len(b) == kind.k, name
                if family not in ("specials", "seeded") and "subnormal input" not in name:
                    assert all(v.top() >= kind.frame.a.emin for v in (*a, *b)
                               if v.kind == "finite" and v.significand), (kind.id, name)
    names = {p.id: set(p.stimulus()["case_name"].values.tolist()) for p in mod.PROBES
             if "order" not in p.id}
    for kind in ("f16-f32", "bf16-f32", "tf32-f32"):
        assert names[f"numerics-wgmma-{kind}"] == names[f"numerics-mma-{kind}"], kind


def test_pack_and_the_wgmma_tile_round_trip() -> None:
    mod = load_sibling(ROOT / "probes" / "numerics_mma" / "probe.py")
    rng = np.random.default_rng(7)
    for bits in (8, 16, 32, 64):
        values = rng.integers(0, 2**min(bits, 63), (3, 5, 8), dtype=np.uint64)
        assert (mod.unpack(mod.pack(values, bits), bits, 8) == values).all()
    for size in (1, 2, 4):  # B(k, 0) of every k at its own byte, none past the 256 of N = 8
        k = 32 // size
        places = {mod.tile_byte(i, size) + j for i in range(k) for j in range(size)}
        assert len(places) == k * size and max(places) < 128 + 16


@pytest.mark.parametrize("probe_id", quick_first(["numerics-mma-f64-m8n8k4", "numerics-mma-f16-f16",
                                                  "numerics-mma-e4m3-f32",
                                                  "numerics-wgmma-tf32-f32"]))
def test_the_new_kinds_read_back_a_hidden_law(tmp_path: Path, monkeypatch, probe_id) -> None:
    """A simulated unit with a law no sealed file names (24 bits, toward zero, C after) is
    read back through each kind's fragments, tile and words: its own model predicts every
    finite cell, and the lab's main hypothesis's model does not."""
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    monkeypatch.setattr(probe, "sim_model", FusedDot(24, "toward-zero", c="after"))
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, repeats=REPEATS,
                   allow_blind=True).dataset
    grid = probe.stimulus()
    finite = ds["finite_inputs"].values == 1
    np.testing.assert_array_equal(ds["rest_zero"].values[0], finite.astype(np.uint32))
    from probelab.numerics.spec import predicted_bits
    own = predicted_bits({"family": "fused-dot", "fraction_bits": 24,
                          "rounding": "toward-zero", "c": "after"}, grid).view(np.uint64)
    rival = predicted_bits({"family": "fused-dot", "fraction_bits": 25,
                            "rounding": "toward-zero"}, grid).view(np.uint64)
    got = ds["d_bits"].values[0].astype(np.uint64) if "d_bits" in ds else \
        ds["d_lo"].values[0].astype(np.uint64) | (ds["d_hi"].values[0].astype(np.uint64) << 32)
    assert (got[finite] == own[finite]).all() and (got[finite] != rival[finite]).any()


@pytest.mark.parametrize("probe_id", quick_first(["numerics-order-mma-f64-m8n8k4",
                                                  "numerics-order-mma-f16-f32",
                                                  "numerics-order-wgmma-e4m3-f32"]))
def test_the_order_probes_read_a_hidden_accumulation_order_back(tmp_path: Path, monkeypatch,
                                                                probe_id: str) -> None:
    """Units with hidden orders (fused over K, blocks of 4 in turn, an FMA chain) are read
    back by the order family alone: joins_after is, per k, the count of unit products summed
    after k's block, as each order implies it (written here from the order, not the decode)."""
    from probelab.numerics.models import FmaChain
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    k = probe.spec.k
    blocks = lambda g: [k - g * (i // g + 1) for i in range(k)]  # noqa: E731
    laws = {"fused": (FusedDot(25, "toward-zero"), blocks(k)),
            "blocks of 4": (FusedDot(25, "toward-zero", group=4), blocks(4)),
            "fma chain": (FmaChain(), [k - 2] + [k - 1 - i for i in range(1, k)])}
    for name, (law, want) in laws.items():
        monkeypatch.setattr(probe, "sim_model", law)
        ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path / name,
                       repeats=REPEATS, allow_blind=True).dataset
        assert ds["joins_after"].values[0].tolist() == want, name
        assert (ds["rest_zero"].values == 1).all()
        i, j = ds["pair_i"].values, ds["pair_j"].values
        witnesses = 16 if k * (k - 1) < 128 else 4  # signs on B too where pairs are few
        assert (i < j).all() and len(i) == witnesses * k * (k - 1) // 2
        assert (ds["survivors"].values[0] < k - 1).all()


@pytest.mark.parametrize("probe_id", ["numerics-order-mma-f16-f32",
                                      "numerics-order-mma-f64-m8n8k4"])
def test_a_result_past_any_count_of_units_is_flagged_not_wrapped(probe_id: str) -> None:
    """D(0, 0) = +M (the pair never cancelled: one of its inputs lost) is 2**gap units, no
    count of the K - 2 units. It must decode to NOT_UNITS, not to 2**gap mod 2**32, which is 0
    (the survivors of a fused sum, where M swamps every unit) or another plausible count."""
    from probelab.numerics.exact import Value, encode
    mod = load_sibling(ROOT / "probes" / "numerics_mma" / "probe.py")
    probe = get_probe(probe_id)
    ds = probe.stimulus().assign_coords(kernel=("kernel", np.array(["k0"])))
    unit, gap = int(ds["unit_exponent"]), int(ds["gap_bits"])
    plus = ds["unit_sign"].values == 0
    big = [encode(probe.out, Value("finite", 0, 1, unit + gap)),  # +M alone
           encode(probe.out, Value("finite", 0, 1, unit + 32))]  # 2**32 units: 0 too
    for d in big:
        first = np.full((1, ds.sizes["case"]), d, np.uint64)
        got = probe._joins(ds.copy(), first)
        assert (got["survivors"].values[0][plus] == mod.NOT_UNITS).all()
        assert (got["joins_after"].values[0] == mod.NOT_UNITS).all()
