"""swmmac-iu4 (version 4) on the shared sparse engine, simulated: a unit that follows the
raw law confirms the sealed raw-law reading and, through its declared translation, CK's
rule, whatever it does when two nibbles share a position; that collision rule is told
apart on its own; units that swap fields or follow a hidden law are told apart. Tests of
the design on the simulated device, never evidence.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first
from toylab import checked_with_and_without_history

from probelab.hypothesis import parse_hypothesis, predict
from probelab.kits.sparse import engine as sparse
from probelab.probe import get_probe, load_sibling

ROOT = Path(__file__).resolve().parents[1]
model = load_sibling(ROOT / "probes" / "swmmac_iu4" / "model.py")


RULES = ("adds", "last", "first")
PAIRING = ("raw-law-v4", "swap-only-v4", "xor-only-v4", "ck-rule-v4", "documented-rows",
           "contract-law-v4", "outside-sorted")


def decoded(swap: bool = False, clash: str = "adds"):
    probe = get_probe("swmmac-iu4")
    design = probe.design
    grid = sparse.stimulus(design)
    w = sparse.waves(grid, design.codec)
    c = np.zeros((w["a"].shape[0], sparse.LANES, design.d_regs), np.uint32)
    raw = {u.name: sparse.multiply(model.documented_law(u, design, swap, clash), u,
                                   design.codec, w["a"], w["b"], c, w["e"])
           for u in design.units}
    ds, problems = sparse.assemble(grid, design, raw)
    assert problems == []
    return ds, probe


def tables(ds, probe, name: str) -> dict:
    path = ROOT / "preregistrations" / "swmmac-iu4" / f"{name}.toml"
    return predict(parse_hypothesis(path, path.read_bytes()), ds, probe.observables)


def fits(ds, table: dict) -> bool:
    return all(np.array_equal(ds[name].values, values) for name, values in table.items())


@pytest.mark.parametrize("clash", quick_first(RULES))
def test_a_raw_law_unit_confirms_raw_law_and_ck_rule_whatever_collisions_do(clash: str) -> None:
    """Version 3's flaw: a right law refuted by what two nibbles on one position do, which
    its waves never measured apart. Now the pairing observables are collision-free, and
    only the matching clash rival fits."""
    ds, probe = decoded(clash=clash)
    assert fits(ds, tables(ds, probe, "raw-law-v4")["literal"])
    assert fits(ds, tables(ds, probe, "documented-rows")["literal"])
    ck = tables(ds, probe, "ck-rule-v4")
    assert fits(ds, ck["ck_to_raw"]) and not fits(ds, ck["literal"])
    for rival in ("swap-only-v4", "xor-only-v4", "outside-sorted"):
        assert not fits(ds, tables(ds, probe, rival)["literal"]), rival
    assert fits(ds, tables(ds, probe, "contract-law-v4")["literal"])  # the contract, apart
    for rule in RULES:
        assert fits(ds, tables(ds, probe, f"clash-{rule}")["literal"]) == (rule == clash)
    assert (ds["clash"].values == sparse.CLASH_RULES.index(clash)).all()


@pytest.mark.slow
def test_a_swapping_unit_is_told_from_the_raw_law_by_the_pairing_too() -> None:
    """Version 4's contract words give a group's two fields different values, so a unit
    that swaps them shows it in the pairing itself (version 3's uniform words could not:
    seeds/000's lesson), as well as in the governing field."""
    ds, probe = decoded(swap=True)
    swap = tables(ds, probe, "swap-only-v4")["literal"]
    raw = tables(ds, probe, "raw-law-v4")["literal"]
    assert fits(ds, swap)
    assert fits(ds, tables(ds, probe, "outside-sorted")["literal"])  # sorting is the swap there
    assert not fits(ds, tables(ds, probe, "contract-law-v4")["literal"])
    assert not np.array_equal(ds["met_elem"].values, raw["met_elem"])
    assert not np.array_equal(ds["gov_field"].values, raw["gov_field"])


@pytest.mark.slow
def test_contract_words_and_the_rest_are_labelled_and_kept_apart() -> None:
    """Inside the 2:4 contract (Idx0 < Idx1) the pairing is `met_*` over `word`; descending
    pairs are `out_*` over `oword`, marked outside the contract; equal pairs are recorded
    one-hot (`bad_*`, never an observable) and drive the collision waves."""
    ds, probe = decoded()
    meta = probe.design.meta
    fields = lambda words: [((int(w) & 3), (int(w) >> 2) & 3) for w in words]  # noqa: E731
    assert all(i0 < i1 for i0, i1 in fields(ds["word"].values))
    assert all(i0 > i1 for i0, i1 in fields(ds["oword"].values))
    assert all(i0 == i1 for i0, i1 in fields(ds["bad"].values))
    assert list(ds["cword"].values) == [meta.uniform(v) for v in meta.clash]
    assert "inside" in ds["word"].attrs["contract"] and "outside" in ds["oword"].attrs["contract"]
    assert ds["out_elem"].attrs["outside_contract"] and "out_elem" in probe.observables
    assert "bad_lane" not in probe.observables and "superposed" not in probe.observables
    assert ds["clash"].attrs["flag_meanings"].split() == list(sparse.CLASH_RULES)


def test_version_3_files_are_sealed_for_an_earlier_version() -> None:
    """Every version 3 file predicts `superposed`, which version 4 retires: they stay sealed
    and are never scored on version 4's data."""
    from probelab.hypothesis import retired_observables

    for name in ("raw-law-lanes", "swap-only-lanes", "xor-only-lanes", "ck-rule-lanes"):
        path = ROOT / "preregistrations" / "swmmac-iu4" / f"{name}.toml"
        assert retired_observables(parse_hypothesis(path, path.read_bytes())) == ["superposed"]
    for name in PAIRING:
        path = ROOT / "preregistrations" / "swmmac-iu4" / f"{name}.toml"
        assert retired_observables(parse_hypothesis(path, path.read_bytes())) == []


def test_each_lane_reads_its_own_idx_in_the_documented_unit() -> None:
    ds, _ = decoded()
    for kernel in ds["kernel"].values:
        sub = ds.sel(kernel=kernel)
        elems = int(sub["elems"])
        lanes = sub["gov_lane"].values
        assert (lanes[:, :elems] == np.arange(32)[:, None]).all()
        assert (lanes[:, elems:] == sparse.NONE).all()  # nibbles K does not have
        assert (sub["met_count"].values[:, :, :elems] == 16).all()
        assert (sub["out_lane"].values[:, :, :elems] < sparse.CODES).all()


@pytest.mark.parametrize(("seed", "clash"), quick_first([(1, "adds"), (2, "last"), (3, "first")]))
def test_a_hidden_law_in_gfx12_geometry_is_recovered(seed: int, clash: str) -> None:
    """The same engine serves gfx12's geometry (2/4/8 registers, 16x16 D, 2-bit fields):
    a unit whose governing lanes and fields are shuffled is recovered exactly, and so is
    its collision rule."""
    probe = get_probe("swmmac-iu4")
    design = probe.design
    grid = sparse.stimulus(design)
    w = sparse.waves(grid, design.codec)
    c = np.zeros((w["a"].shape[0], sparse.LANES, design.d_regs), np.uint32)
    rng = np.random.default_rng(seed)
    laws = {u.name: dataclasses.replace(sparse.random_law(u, design, rng), clash=clash)
            for u in design.units}
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
        assert (sub["superposed_apart"].values == 1).all()
        assert (sub["clash"].values == sparse.CLASH_RULES.index(clash)).all()


@pytest.mark.slow
def test_sim_sweep_end_to_end_is_not_evidence(tmp_path: Path, sealed_lab, monkeypatch) -> None:
    """Simulated data are NOT-EVIDENCE: in a lab with its history the sealed raw-law reading
    would be REFUTED by the sim backend's hidden unit; in a copy without it (a tarball, the
    GPU machine's) the order cannot be shown: it would be POST-HOC."""
    from probelab.notary.rules import Finding, Outcome, Rule
    from probelab.sweep import run_sweep

    lab = sealed_lab("swmmac_iu4", "swmmac-iu4", "raw-law-v4")
    result = run_sweep("swmmac-iu4", "sim", target="gfx1201", repeats=2,
                       out_root=tmp_path / "sim")
    hyp = lab / "preregistrations" / "swmmac-iu4" / "raw-law-v4.toml"
    full, copy = checked_with_and_without_history(hyp, result.path, tmp_path / "copy",
                                                  monkeypatch)
    for judged in (full, copy):
        assert judged.outcome == Outcome.NOT_EVIDENCE and judged.doc["dataset"]["simulated"]
    assert full.findings == (Finding(Rule.SIMULATED, detail=Outcome.REFUTED),)
    assert copy.findings == (Finding(Rule.SIMULATED, detail=Outcome.POST_HOC),
                             Finding(Rule.NO_HISTORY))
    assert result.dataset.sizes["bad"] == 4  # the equal pairs, recorded one-hot
