"""swmmac-iu4 (version 3) on the shared sparse engine, simulated: a unit that follows the
raw law confirms the sealed raw-law reading and, through its declared translation, CK's
rule; units that swap fields or follow a hidden law are told apart. Tests of the design on
the simulated device, never evidence.
"""

from pathlib import Path

import numpy as np
import pytest

from probelab.hypothesis import parse_hypothesis, predict
from probelab.kits.sparse import engine as sparse
from probelab.probe import get_probe, load_sibling

ROOT = Path(__file__).resolve().parents[1]
model = load_sibling(ROOT / "probes" / "swmmac_iu4" / "model.py")


def decoded(swap: bool = False):
    probe = get_probe("swmmac-iu4")
    design = probe.design
    grid = sparse.stimulus(design)
    w = sparse.waves(grid, design)
    c = np.zeros((w["a"].shape[0], sparse.LANES, design.d_regs), np.uint32)
    raw = {u.name: sparse.multiply(model.documented_law(u, design, swap), u, design.codec,
                                   w["a"], w["b"], c, w["e"]) for u in design.units}
    ds, problems = sparse.assemble(grid, design, raw)
    assert problems == []
    return ds, probe


def tables(ds, probe, name: str) -> dict:
    path = ROOT / "preregistrations" / "swmmac-iu4" / f"{name}.toml"
    return predict(parse_hypothesis(path, path.read_bytes()), ds, probe.observables)


def fits(ds, table: dict) -> bool:
    return all(np.array_equal(ds[name].values, values) for name, values in table.items())


def test_a_raw_law_unit_confirms_raw_law_and_ck_rule_through_its_translation() -> None:
    ds, probe = decoded()
    assert fits(ds, tables(ds, probe, "raw-law-lanes")["literal"])
    assert fits(ds, tables(ds, probe, "documented-rows")["literal"])
    ck = tables(ds, probe, "ck-rule-lanes")
    assert fits(ds, ck["ck_to_raw"]) and not fits(ds, ck["literal"])
    for rival in ("swap-only-lanes", "xor-only-lanes"):
        assert not fits(ds, tables(ds, probe, rival)["literal"]), rival


def test_a_swapping_unit_is_told_from_the_raw_law_only_by_the_governing_field() -> None:
    """Under uniform words every field holds the same value: the pairing cannot show the
    swap (seeds/000's lesson), the lane- and group-coded words can."""
    ds, probe = decoded(swap=True)
    swap = tables(ds, probe, "swap-only-lanes")["literal"]
    raw = tables(ds, probe, "raw-law-lanes")["literal"]
    assert fits(ds, swap)
    for name in ("met_lane", "met_elem", "met_count"):
        np.testing.assert_array_equal(swap[name], raw[name])
    assert not np.array_equal(ds["gov_field"].values, raw["gov_field"])


def test_each_lane_reads_its_own_idx_in_the_documented_unit() -> None:
    ds, _ = decoded()
    for kernel in ds["kernel"].values:
        sub = ds.sel(kernel=kernel)
        elems = int(sub["elems"])
        lanes = sub["gov_lane"].values
        assert (lanes[:, :elems] == np.arange(32)[:, None]).all()
        assert (lanes[:, elems:] == sparse.NONE).all()  # nibbles K does not have
        assert (sub["met_count"].values[:, :, :elems] == 16).all()


@pytest.mark.parametrize("seed", [1, 2])
def test_a_hidden_law_in_gfx12_geometry_is_recovered(seed: int) -> None:
    """The same engine serves gfx12's geometry (2/4/8 registers, 16x16 D, 2-bit fields):
    a unit whose governing lanes and fields are shuffled is recovered exactly."""
    probe = get_probe("swmmac-iu4")
    design = probe.design
    grid = sparse.stimulus(design)
    w = sparse.waves(grid, design)
    c = np.zeros((w["a"].shape[0], sparse.LANES, design.d_regs), np.uint32)
    rng = np.random.default_rng(seed)
    laws = {u.name: sparse.random_law(u, design, rng) for u in design.units}
    raw = {u.name: sparse.multiply(laws[u.name], u, design.codec, w["a"], w["b"], c, w["e"])
           for u in design.units}
    ds, problems = sparse.assemble(grid, design, raw)
    assert problems == []
    for unit in design.units:
        law, sub = laws[unit.name], ds.sel(kernel=unit.name)
        exist = law.a_row >= 0
        np.testing.assert_array_equal(sub["gov_lane"].values[exist], law.gov_lane[exist])
        np.testing.assert_array_equal(sub["gov_field"].values[exist], law.gov_field[exist])
        assert (sub["met_count"].values[:, exist] == 16).all()
        assert (sub["superposed"].values == 1).all()


def test_sim_sweep_end_to_end_is_not_evidence(tmp_path: Path) -> None:
    """On a checkout with its history the order proof holds and simulated data are
    NOT-EVIDENCE; on the GPU machine (no history) the order cannot be shown: POST-HOC."""
    from probelab.check import NOT_EVIDENCE, POST_HOC, check
    from probelab.sweep import run_sweep

    result = run_sweep("swmmac-iu4", "sim", target="gfx1201", repeats=2, out_root=tmp_path)
    doc = check(ROOT / "preregistrations" / "swmmac-iu4" / "raw-law-lanes.toml", result.path)
    from probelab.prereg import ledger_entries, seal_commit

    entry = next(e for e in ledger_entries() if e["hypothesis"] == "raw-law-lanes")
    has_history = seal_commit(entry) is not None
    assert doc["verdict"] == (NOT_EVIDENCE if has_history else POST_HOC)
    assert doc["dataset"]["simulated"] is True
    assert result.dataset.sizes["bad"] == 0  # gfx12 gives no idx value outside its contract
