"""Discriminating power: `prereg power`, the sweep's blindness gate, and separation counts
in verdicts. The toy lab gives a deliberately regular stimulus two rivals cannot be told
apart on; the real probes (byte-perm, swmmac-iu4) show the counts on their own grids."""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import Result
from toylab import ToyLab, invoke

from probelab import dataset, prereg
from probelab.backends import ops_sim
from probelab.check import check
from probelab.errors import UsageError
from probelab.hypothesis import load_hypothesis, parse_hypothesis, predict
from probelab.power import power
from probelab.probe import get_probe
from probelab.report import render
from probelab.sweep import run_sweep


def regular(a_step: int):
    """A toy stimulus: a = a_step * i. With a_step = 16 no bit of a meets a bit of b
    (b < 8), so a + b and a | b coincide on every cell."""
    def stimulus() -> xr.Dataset:
        return xr.Dataset(coords={"a": ("a", (a_step * np.arange(16)).astype(np.uint32)),
                                  "b": ("b", np.arange(8, dtype=np.uint32))})
    return stimulus


def randomised() -> xr.Dataset:
    rng = np.random.default_rng(8)
    return xr.Dataset(coords={"a": ("a", rng.integers(0, 2**16, 16).astype(np.uint32)),
                              "b": ("b", rng.integers(0, 2**16, 8).astype(np.uint32))})


def measured_sweep(lab: ToyLab, monkeypatch) -> Result:
    """`sweep toy` as a measurement would run: the simulated device posing as hardware (a
    test's device only), saving outside the archive, where a measurement may be saved."""
    monkeypatch.setattr(ops_sim.SimBackend, "simulated", False)
    return invoke("sweep", "toy", "--backend", "sim", "--out", lab.root.parent / "measured")


@pytest.fixture
def rivals(toylab: ToyLab) -> ToyLab:
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    prereg.seal(toylab.write_hyp("bitor", "a | b", claim="value is a OR b"))
    return toylab


def test_a_regular_stimulus_blind_to_two_rivals_stops_the_sweep(rivals: ToyLab,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    (pair,), _ = power(rivals.probe())
    assert pair.blind and pair.compared == 128 and pair.differing == 0
    result = measured_sweep(rivals, monkeypatch)
    assert result.exit_code == 3
    assert "cannot tell apart bitor and sum" in result.stderr
    assert not (rivals.root.parent / "measured").exists()  # nothing ran, nothing written
    power_cli = invoke("prereg", "power", "toy")
    assert power_cli.exit_code == 3 and "bitor / sum (rivals): BLIND" in power_cli.stdout


def test_a_simulated_sweep_warns_of_blindness_and_goes_on(rivals: ToyLab,
                                                          monkeypatch) -> None:
    """Simulated data are never evidence: a blind pair is one line on stderr, not a stop
    (issue 35, item 2), and the dataset records it as --allow-blind would."""
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "bitor and sum" in line]
    assert warning.startswith("warning: the stimulus cannot tell apart bitor and sum")
    assert "simulated data are never evidence" in warning
    prov = dataset.provenance(dataset.load(Path(result.stdout.strip())))
    assert prov["blind_pairs"] == [["bitor", "sum"]]


def test_allow_blind_measures_and_records_the_pair(rivals: ToyLab, monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    result = invoke("sweep", "toy", "--backend", "sim", "--allow-blind")
    assert result.exit_code == 0, result.stderr
    prov = dataset.provenance(dataset.load(Path(result.stdout.strip())))
    assert prov["blind_pairs"] == [["bitor", "sum"]]


def test_randomising_the_stimulus_separates_them_and_the_sweep_proceeds(
        rivals: ToyLab, monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", randomised)
    (pair,), _ = power(rivals.probe())
    grid = randomised()
    a, b = grid["a"].values[:, None], grid["b"].values[None, :]
    assert pair.differing == int(((a + b) != (a | b)).sum()) > 0  # counted, not guessed
    example = pair.examples[0]
    assert example["sum"] == example["a"] + example["b"] != example["bitor"]
    power_cli = invoke("prereg", "power", "toy", "--json")
    assert power_cli.exit_code == 0 and json.loads(power_cli.stdout)["pairs"][0]["blind"] is False
    result = run_sweep("toy", "sim", out_root=rivals.root / "sim-data", repeats=2)
    assert result.provenance["blind_pairs"] == []


def test_a_declared_restatement_is_not_blind_and_the_sweep_proceeds(toylab: ToyLab,
                                                                    monkeypatch) -> None:
    """`a | b` restates `a + b` where no bits meet: declared with agrees_with, the pair is a
    RESTATEMENT (never blind, no --allow-blind needed); undeclared, the same pair blocks."""
    monkeypatch.setattr(toylab.probe(), "stimulus", regular(16))
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    path = toylab.write_hyp("bitor", "a | b", claim="value is a OR b")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\nagrees_with = ["sum"]'))
    prereg.seal(path)
    (pair,), _ = power(toylab.probe())
    assert (pair.kind, pair.blind, pair.compared, pair.differing) == ("restatement", False,
                                                                      128, 0)
    power_cli = invoke("prereg", "power", "toy")
    assert power_cli.exit_code == 0
    assert "bitor / sum (restatement): RESTATEMENT: identical on all 128 cells" in \
        power_cli.stdout
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 0, result.stderr
    assert dataset.provenance(dataset.load(Path(result.stdout.strip())))["blind_pairs"] == []


def test_a_restatement_without_agrees_with_is_refused_at_seal(toylab: ToyLab,
                                                             monkeypatch) -> None:
    """`b + a` restates the sealed `a + b` on every cell: sealed as a rival, it would stop
    every measured sweep of the probe for good. Refused in one line naming the fix, with
    nothing written; declared, it seals; with --allow-blind the seal commit records the pair
    and sweeps then behave as for any blind pair (issue 35, item 2)."""
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    again = toylab.write_hyp("sum2", "b + a")
    commits, ledger = toylab.commit_count(), toylab.ledger.read_bytes()
    result = invoke("prereg", "seal", again)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "sum2.toml would make every sweep of toy blind: it predicts the same as sealed " \
        'sum on every cell both claim (if it restates it, declare agrees_with = ["sum"])' in line
    assert line.endswith("or seal it anyway with --allow-blind (the seal commit records it)")
    assert (toylab.commit_count(), toylab.ledger.read_bytes()) == (commits, ledger)
    assert "UNSEALED preregistrations/toy/sum2.toml" in invoke("prereg", "list").stdout

    result = invoke("prereg", "seal", "--allow-blind", again)
    assert result.exit_code == 0, result.stderr
    assert "blind-to: sum (sealed with --allow-blind)" in toylab.git("log", "-1", "--format=%B")
    assert measured_sweep(toylab, monkeypatch).exit_code == 3
    # a third restating both would hide their blind pair: it declares one, and is blind to
    # the other as that one is (test_a_new_version_may_not_declare_...)
    declared = toylab.write_hyp("sum3", "a + b")
    declared.write_text(declared.read_text().replace(
        'coordinates = "raw"', 'coordinates = "raw"\nagrees_with = ["sum"]'))
    assert invoke("prereg", "seal", declared).exit_code == 2
    assert invoke("prereg", "seal", "--allow-blind", declared).exit_code == 0
    assert "blind-to: sum2 (sealed with --allow-blind)" in toylab.git("log", "-1", "--format=%B")


def test_agrees_with_must_name_a_sealed_hypothesis(toylab: ToyLab) -> None:
    path = toylab.write_hyp("bitor", "a | b")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\nagrees_with = ["sum"]'))
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2 and "not sealed hypotheses of toy" in result.stderr


def test_a_declared_near_miss_the_stimulus_cannot_see_is_caught(toylab: ToyLab,
                                                                 monkeypatch) -> None:
    """`a + b` and its near miss `a + b + (a == 99)` differ only where a is 99: a cell the
    toy grid (a < 16) never visits."""
    path = toylab.write_hyp("sum", "a + b")
    path.write_text(path.read_text() + '\n[near_misses.at99]\nvalue = "a + b + (a == 99)"\n')
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2
    assert "its near miss at99 predicts the same as it on every cell (change the near " \
        "miss)" in result.stderr
    prereg.seal(path, allow_blind=True)
    (pair,), _ = power(toylab.probe())
    assert (pair.a, pair.b, pair.kind, pair.blind) == ("sum", "sum~at99", "near miss", True)
    result = measured_sweep(toylab, monkeypatch)
    assert result.exit_code == 3 and "sum and sum~at99" in result.stderr


def test_a_near_miss_that_cannot_be_evaluated_is_refused_at_seal(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    path.write_text(path.read_text() + '\n[near_misses.bad]\nvalue = "a + nope"\n')
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2 and "nope" in result.stderr


def test_verdicts_say_on_how_many_cells_a_refuted_rival_was_separated(toylab: ToyLab) -> None:
    right = toylab.write_hyp("sum", "a + b")
    wrong = toylab.write_hyp("row3", "a + b + (a == 3)")
    prereg.seal(right)
    prereg.seal(wrong)
    data = toylab.as_measured(toylab.sim_dataset())
    doc = check(wrong, data)
    assert doc["verdict"] == "REFUTED"
    assert doc["separation"] == {"refuting_cells": 8, "cells": 128}  # row a = 3, 8 b values
    assert "**REFUTED on 8 of 128 cells**" in render(doc)
    assert "separation" not in check(right, data)


# ---- the real probes ------------------------------------------------------------------------


def test_byte_perm_power_separates_the_cuda_contract_from_prmt(repo_lab) -> None:
    pairs, notes = power(get_probe("byte-perm"), target="sm_90")
    (pair,) = [p for p in pairs if {p.a, p.b} == {"cuda-contract", "ptx-prmt-default"}]
    # the two readings differ exactly where a selector nibble is 8 or more: every selector
    # but the 4,096 with all four nibbles below 8, times 16 operand pairs
    assert (pair.compared, pair.differing) == (16 * 65536, 16 * (65536 - 8**4))
    # the AMD files (v-perm-seeds and its scoped restatements) are left out, and say why
    assert "v-perm-seeds: left out, about targets ['gfx*'], not sm_90" in notes
    assert all(n.startswith("v-perm-") and n.endswith(", not sm_90") for n in notes), notes


def test_swmmac_contract_words_show_the_swap_in_the_pairing(repo_lab) -> None:
    """seeds/000's lesson, and version 4's answer: version 3's uniform words gave a group's
    two fields one value, so only the governing field separated the raw law from the swap.
    Version 4's contract words (Idx0 < Idx1) give them different values, so the pairing
    (`met_elem`, `out_elem`) separates them too, and the version 3 files are retired."""
    probe = get_probe("swmmac-iu4")
    pairs = {frozenset((p.a, p.b)): p for p in power(probe, target="gfx1201")[0]}
    pair = pairs[frozenset(("raw-law-v4", "swap-only-v4"))]
    assert (pair.differing, pair.compared, pair.blind) == (9984, 36884, False)
    grid = probe.stimulus()
    folder = Path(__file__).resolve().parents[1] / "preregistrations" / "swmmac-iu4"
    raw, swap = (predict(load_hypothesis(folder / f"{h}.toml"), grid, probe.observables)
                 ["literal"] for h in ("raw-law-v4", "swap-only-v4"))
    # the pairing itself, not only the governing field (32 lanes x (8 + 16) nibbles)
    for name in ("met_elem", "out_elem"):
        assert (raw[name] != swap[name]).sum() > 0, name
    assert (raw["gov_field"] != swap["gov_field"]).sum() == 32 * (8 + 16)
    assert not any(p.blind for p in pairs.values())
    names = {p.a for p in pairs.values()} | {p.b for p in pairs.values()}
    assert {"raw-law-v4", "swap-only-v4", "xor-only-v4", "ck-rule-v4", "clash-adds",
            "clash-last", "clash-first"} <= names
    assert not names & {"raw-law-lanes", "swap-only-lanes", "raw-law"}  # retired, no rivals
    clash = pairs[frozenset(("clash-adds", "clash-last"))]
    assert clash.differing == clash.compared == 2 * 4 * 4  # every collision wave, both kernels
    assert any("raw-law-lanes: left out, sealed for an earlier version" in n
               for n in power(probe, target="gfx1201")[1])


def test_rivals_are_judged_only_from_intact_seals(rivals: ToyLab, monkeypatch) -> None:
    """Editing a sealed rival cannot make a blind stimulus look separable."""
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    path = rivals.root / "preregistrations" / "toy" / "bitor.toml"
    path.write_text(path.read_text().replace("a | b", "a * b"))
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 3
    assert "bitor.toml was edited after sealing" in " ".join(result.stderr.split())


def _gate(toylab: ToyLab) -> tuple[list, bool]:
    """The blind pairs the gate finds (a toy probe's floor is 1: none is thin), and whether
    from the cache."""
    from probelab.power import gate_names

    probe = toylab.probe()
    (blind, thin), hit = gate_names(probe, probe.stimulus(), "sm_90")
    assert thin == []
    return blind, hit


def test_the_gate_is_cached_and_any_input_that_shapes_it_recomputes(rivals: ToyLab,
                                                                     monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    assert _gate(rivals) == ([["bitor", "sum"]], False)
    assert _gate(rivals) == ([["bitor", "sum"]], True)  # a repeated sweep pays nothing
    monkeypatch.setattr(rivals.probe(), "stimulus", randomised)  # another grid
    assert _gate(rivals) == ([], False)
    # a new seal, blind to sum on any grid
    prereg.seal(rivals.write_hyp("sum2", "b + a"), allow_blind=True)
    blind, hit = _gate(rivals)
    assert not hit and ["sum", "sum2"] in blind


def test_the_gate_is_keyed_by_the_code_that_computes_it(rivals: ToyLab, code_copy,
                                                        monkeypatch) -> None:
    """An edit to code the gate never runs (the CLI) keeps its answer; one to power.py, or
    to the claim evaluation it imports, recomputes."""
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    assert _gate(rivals)[1] is False
    code_copy.edit("cli.py")
    assert _gate(rivals)[1] is True
    for edited in ("power.py", "hypothesis.py"):
        code_copy.edit(edited)
        assert _gate(rivals) == ([["bitor", "sum"]], False)


def test_a_corrupt_cache_entry_is_recomputed_never_read_as_the_gate(rivals: ToyLab,
                                                                   monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", regular(16))
    _gate(rivals)
    (entry,) = (rivals.root.parent / ".cache" / "blindness").glob("*.bin")
    raw = entry.read_bytes()
    entry.write_bytes(raw[:64] + b"[]")  # "not blind", under the old digest
    assert _gate(rivals) == ([["bitor", "sum"]], False)
    result = measured_sweep(rivals, monkeypatch)
    assert result.exit_code == 3 and "cannot tell apart bitor and sum" in result.stderr


def test_an_edited_seal_still_stops_a_cached_gate(rivals: ToyLab, monkeypatch) -> None:
    monkeypatch.setattr(rivals.probe(), "stimulus", randomised)
    assert _gate(rivals) == ([], False)
    path = rivals.root / "preregistrations" / "toy" / "bitor.toml"
    path.write_text(path.read_text().replace("a | b", "a * b"))
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 3
    assert "bitor.toml was edited after sealing" in " ".join(result.stderr.split())


def test_a_verdict_on_a_blind_stimulus_says_which_rival_it_cannot_be_told_from() -> None:
    """A pair measured with --allow-blind is in the provenance; each side's verdict then
    names the other, in its words and its reasons, so a CONFIRMED rival that merely agrees
    with the law on this stimulus is never read as a confirmation against it."""
    from probelab import check

    prov = {"blind_pairs": [["bitor", "sum"], ["carry", "sum"]]}
    assert check.blind_partners(prov, "sum") == ["bitor", "carry"]
    assert check.blind_partners(prov, "bitor") == ["sum"] and check.blind_partners({}, "x") == []
    from probelab.notary.rules import Finding, Outcome, Rule
    from probelab.notary.verdicts import judgement

    kernel = {"in_claim": True, "status": Outcome.CONFIRMED, "via": "literal",
              "scores": {"literal": {"cells": 4, "matches": 4}}}
    said = judgement({"hypothesis": {"kernels": ["k"]}, "kernels": {"k": kernel},
                      "blind_to": ["sum"]}, [Finding(Rule.BLIND, detail="sum")],
                     Outcome.CONFIRMED)  # a note: the scores' verdict stands
    assert said.outcome == Outcome.CONFIRMED
    assert check.verdict_words(said.doc) == "CONFIRMED, blind to sum"
    assert said.doc["reasons"][0].startswith("blind to sum:")


def test_a_new_version_may_not_declare_its_parents_blind_rival_as_agreeing(
        toylab: ToyLab) -> None:
    """`sum2` is a rival of `sum` that the toy stimulus cannot tell apart (sealed with
    --allow-blind). A new version of `sum` declaring `sum2` as agreeing would hide that pair
    from every verdict of the new file (three wgmma-f16-rs restatements did): refused in one
    line, nothing written, with a parent or without; declaring only its parent, it seals
    with --allow-blind."""
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    prereg.seal(toylab.write_hyp("sum2", "b + a"), allow_blind=True)
    again = toylab.write_hyp("sum-v2", "a + b")
    again.write_text(again.read_text().replace(
        'coordinates = "raw"', 'coordinates = "raw"\nparent = "sum"\nagrees_with = ["sum", '
        '"sum2"]'))
    commits, ledger = toylab.commit_count(), toylab.ledger.read_bytes()
    result = invoke("prereg", "seal", "--allow-blind", again)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "it declares sum and ['sum2'] as one claim (agrees_with, parent), rivals that " \
        "the probe's stimulus cannot tell apart, not restatements" in line
    assert (toylab.commit_count(), toylab.ledger.read_bytes()) == (commits, ledger)
    orphan = toylab.write_hyp("sum-v3", "a + b")  # no parent: the same two named
    orphan.write_text(orphan.read_text().replace(
        'coordinates = "raw"', 'coordinates = "raw"\nagrees_with = ["sum", "sum2"]'))
    assert invoke("prereg", "seal", "--allow-blind", orphan).exit_code == 2
    assert (toylab.commit_count(), toylab.ledger.read_bytes()) == (commits, ledger)
    again.write_text(again.read_text().replace('agrees_with = ["sum", "sum2"]',
                                               'agrees_with = ["sum"]'))
    assert invoke("prereg", "seal", "--allow-blind", again).exit_code == 0
    assert "blind-to: sum2 (sealed with --allow-blind)" in toylab.git("log", "-1", "--format=%B")


def few_apart() -> xr.Dataset:
    """a = 16 i but a[0] = 1: a + b and a | b part only where a = 1 meets an odd b (4 cells)."""
    a = (16 * np.arange(16)).astype(np.uint32)
    a[0] = 1
    return xr.Dataset(coords={"a": ("a", a), "b": ("b", np.arange(8, dtype=np.uint32))})


def test_a_pair_parted_on_fewer_cells_than_the_floor_is_thin_and_stops_a_measurement(
        rivals: ToyLab, monkeypatch) -> None:
    """Issue 38: with the probe's floor at 32 (the lane-id, sparse and numerics kits'), two
    rivals told apart on 4 cells are THIN: `prereg power` says so and exits 3, a measured
    sweep is refused in one line, --allow-thin measures and records the pair with its
    counts, and each side's verdict names the other."""
    probe = rivals.probe()
    monkeypatch.setattr(probe, "stimulus", few_apart)
    monkeypatch.setattr(probe, "separation_floor", 32, raising=False)
    (pair,), _ = power(probe)
    assert pair.thin and not pair.blind and (pair.differing, pair.floor) == (4, 32)
    said = invoke("prereg", "power", "toy")
    assert said.exit_code == 3 and "THIN: differ on 4 of 128 cells, under the floor of 32" \
        in said.stdout
    result = measured_sweep(rivals, monkeypatch)
    assert result.exit_code == 3 and "fewer cells than their floor" in result.stderr
    assert "--allow-thin" in result.stderr
    allowed = invoke("sweep", "toy", "--backend", "sim", "--allow-thin", "--out",
                     rivals.root.parent / "measured")  # still posing as hardware
    assert allowed.exit_code == 0, allowed.stderr
    prov = dataset.provenance(dataset.load(Path(allowed.stdout.splitlines()[0].strip())))
    assert prov["thin_pairs"] == [["bitor", "sum", 4, 32]]
    from probelab import check

    assert check.thin_partners(prov, "sum") == ["bitor (4 < 32)"]
    monkeypatch.setattr(probe, "separation_floor", 1, raising=False)  # blindness alone
    assert not power(probe)[0][0].thin


def test_a_file_lowers_the_floor_for_its_own_pairs_only_with_a_reason(toylab: ToyLab,
                                                                    monkeypatch) -> None:
    """`[power] floor` (sealed with the file, with why) lowers the floor of the pairs it is
    in; a floor without a reason, or of another form, is refused at parse."""
    probe = toylab.probe()
    monkeypatch.setattr(probe, "stimulus", few_apart)
    monkeypatch.setattr(probe, "separation_floor", 32, raising=False)
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    path = toylab.write_hyp("bitor", "a | b", claim="value is a OR b")
    path.write_text(path.read_text() + '\n[power]\nfloor = 4\nreason = "the toy grid"\n')
    prereg.seal(path)
    (pair,), _ = power(probe)
    assert pair.floor == 4 and not pair.thin
    for table in ("floor = 4", 'reason = "x"', 'floor = 0\nreason = "x"',
                  'floor = 4\nreason = " "', 'floor = 4\nreason = "x"\nother = 1'):
        bad = toylab.write_hyp("bad", "a", filename="bad.toml")
        bad.write_text(bad.read_text() + f"\n[power]\n{table}\n")
        with pytest.raises(UsageError, match=r"\[power\]"):
            parse_hypothesis(bad, bad.read_bytes())
