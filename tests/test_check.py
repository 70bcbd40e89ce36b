"""Checking sealed hypotheses against datasets: verdicts, scores, order, and the archive."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from toylab import DELETE, ToyLab, invoke

from probelab import check, ledger, prereg, scoring, verify
from probelab.errors import Exit, LabError, UsageError
from probelab.hypothesis import load_hypothesis
from probelab.notary import integrity, verdict_files, words
from probelab.notary.problems import rules
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.verify import rel

N_CELLS = 16 * 8


def sealed(lab: ToyLab, hyp_id: str, expr: str, **kwargs) -> Path:
    path = lab.write_hyp(hyp_id, expr, **kwargs)
    prereg.seal(path)
    return path


def measured_after_seal(lab: ToyLab) -> Path:
    """A faked measurement (see ToyLab.as_measured) taken at HEAD, after the seals so far."""
    return lab.as_measured(lab.sim_dataset())


# ---- confirmed / refuted ------------------------------------------------------------------


def test_confirmed_literally(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    doc = check.check(hyp, data)
    assert doc["verdict"] == Outcome.CONFIRMED
    assert Outcome(doc["verdict"]).exit == Exit.OK == 0
    assert doc["reasons"] == []
    kernel = doc["kernels"]["add"]
    assert kernel["status"] == Outcome.CONFIRMED and kernel["via"] == "literal"
    assert kernel["scores"]["literal"] == {"matches": N_CELLS, "cells": N_CELLS,
                                           "first_mismatches": []}
    assert doc["hypothesis"]["seal_commit"] == toylab.git("rev-list", "-1", "HEAD")
    assert doc["dataset"]["simulated"] is False
    assert doc["dataset"]["grid_matches_seal"] is True


def test_refuted_with_mismatch_details(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "off-by-one", "a + b + 1")
    data = measured_after_seal(toylab)
    doc = check.check(hyp, data)
    assert doc["verdict"] == Outcome.REFUTED
    assert Outcome(doc["verdict"]).exit == Exit.REFUTED == 1
    literal = doc["kernels"]["add"]["scores"]["literal"]
    assert literal["matches"] == 0 and literal["cells"] == N_CELLS
    shown = literal["first_mismatches"]
    assert len(shown) == scoring.MISMATCHES_SHOWN
    first = shown[0]
    assert first["a"] == 0 and first["b"] == 0
    assert first["label"] == "row00"
    assert first["predicted"] == "0x00000001" and first["observed"] == "0x00000000"
    second = shown[1]
    assert (second["a"], second["b"]) == (0, 1)
    assert (second["predicted"], second["observed"]) == ("0x00000002", "0x00000001")
    for row in shown:
        assert int(row["predicted"], 16) == row["a"] + row["b"] + 1
        assert int(row["observed"], 16) == row["a"] + row["b"]


def test_partial_fit_is_refuted(toylab: ToyLab) -> None:
    # Right on every cell but one: still refuted, with exactly one mismatch shown.
    hyp = sealed(toylab, "almost", "a + b if a + b != 22 else 0")
    doc = check.check(hyp, measured_after_seal(toylab))
    literal = doc["kernels"]["add"]["scores"]["literal"]
    assert doc["verdict"] == Outcome.REFUTED
    assert literal["matches"] == N_CELLS - 1
    assert [(m["a"], m["b"]) for m in literal["first_mismatches"]] == [(15, 7)]


def test_translation_confirms_and_scores_are_separate(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "diff", "a - b", translations={"negated_b": {"b": "0 - b"}})
    doc = check.check(hyp, measured_after_seal(toylab))
    assert doc["verdict"] == Outcome.CONFIRMED
    kernel = doc["kernels"]["add"]
    assert kernel["via"] == "negated_b"
    scores = kernel["scores"]
    assert set(scores) == {"literal", "negated_b"}
    # Literally, a - b == a + b only where b == 0 (16 cells).
    assert scores["literal"]["matches"] == 16 and scores["literal"]["cells"] == N_CELLS
    assert scores["literal"]["first_mismatches"]
    assert scores["negated_b"] == {"matches": N_CELLS, "cells": N_CELLS, "first_mismatches": []}


def test_a_translation_can_rename_the_predicted_value(toylab: ToyLab) -> None:
    """A claim that names its *values* in another system (here: offset by 1000) is scored
    through a declared value translation, apart from the literal reading."""
    hyp = sealed(toylab, "offset", "a + b + 1000",
                 translations={"unoffset": {"value": "value - 1000"}})
    doc = check.check(hyp, measured_after_seal(toylab))
    assert doc["verdict"] == Outcome.CONFIRMED and doc["kernels"]["add"]["via"] == "unoffset"
    assert doc["kernels"]["add"]["scores"]["literal"]["matches"] == 0


def test_a_translation_must_name_coordinates_or_observables(toylab: ToyLab) -> None:
    path = toylab.write_hyp("typo", "a + b", translations={"t": {"valeu": "valeu - 1"}})
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2 and "neither coordinates of the grid nor observables" in \
        " ".join(result.stderr.split())


def test_literal_wins_over_translation_when_both_fit(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b", translations={"swapped": {"a": "b", "b": "a"}})
    doc = check.check(hyp, measured_after_seal(toylab))
    assert doc["verdict"] == Outcome.CONFIRMED
    assert doc["kernels"]["add"]["via"] == "literal"


def test_no_scoring_fits(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "diff", "a - b", translations={"swapped": {"a": "b", "b": "a"}})
    doc = check.check(hyp, measured_after_seal(toylab))
    assert doc["verdict"] == Outcome.REFUTED
    assert doc["kernels"]["add"]["via"] is None


# ---- tampered -----------------------------------------------------------------------------


def test_file_edited_after_seal_is_tampered(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    hyp.write_bytes(hyp.read_bytes() + b"\n")  # whitespace only
    judged = check.assess(hyp, data)
    assert judged.outcome == Outcome.TAMPERED and judged.outcome.exit == Exit.INTEGRITY
    assert "kernels" not in judged.doc
    assert judged.rules == {Rule.SEAL_EDITED}


def test_prediction_changed_after_seal_is_tampered(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    hyp.write_text(hyp.read_text().replace('"a + b"', '"b + a"'))
    assert check.check(hyp, data)["verdict"] == Outcome.TAMPERED


def test_broken_ledger_is_tampered(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    sealed(toylab, "other", "a")
    data = measured_after_seal(toylab)
    lines = toylab.ledger.read_text().splitlines()
    toylab.ledger.write_text("\n".join(reversed(lines)) + "\n")
    judged = check.assess(hyp, data)
    assert (judged.outcome, judged.rules) == (Outcome.TAMPERED, {Rule.LEDGER_BROKEN})


def test_sealed_table_mismatch_is_tampered(toylab: ToyLab) -> None:
    # A ledger entry whose table hash no longer matches what the prediction evaluates to.
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = measured_after_seal(toylab)
    (entry,) = ledger.read(toylab.ledger)
    entry["table_sha256"] = "0" * 64
    entry["hash"] = ledger.entry_hash(entry)
    toylab.ledger.write_text(ledger.canonical(entry).decode() + "\n")
    judged = check.assess(hyp, data)
    assert judged.outcome == Outcome.TAMPERED
    # The forged ledger line is caught by the seal history, or by the table hash.
    assert judged.rules in ({Rule.TABLE_CHANGED}, {Rule.LEDGER_BROKEN})


# ---- post hoc -----------------------------------------------------------------------------


def test_dataset_taken_before_the_seal_is_post_hoc(toylab: ToyLab) -> None:
    data = toylab.as_measured(toylab.sim_dataset())
    hyp = sealed(toylab, "sum", "a + b")
    judged = check.assess(hyp, data)
    assert judged.outcome == Outcome.POST_HOC and judged.outcome.exit == Exit.INTEGRITY
    assert Rule.SEALED_AFTER_DATA in judged.rules  # and by the clocks too, within a second
    # The scores are still shown, but do not count.
    assert judged.doc["kernels"]["add"]["status"] == Outcome.CONFIRMED


def test_an_unsealed_file_is_one_line_after_its_own_errors(toylab: ToyLab) -> None:
    """Never sealed: one line naming the fix (exit 2), not a POST-HOC report; an error of
    the file itself (an expression that calls) is said first, as seal says it (issue 35,
    item 3)."""
    sealed(toylab, "other", "a")
    hyp = toylab.write_hyp("sum", "a + b")
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "committed, never sealed")
    data = measured_after_seal(toylab)
    result = invoke("check", hyp, data)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"error: {hyp} is not sealed: run `probelab prereg seal {hyp}`\n"
    broken = toylab.write_hyp("broken", "open(1)")
    said = invoke("prereg", "seal", broken).stderr
    result = invoke("check", broken, data)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", said)
    assert "function calls" in said


def test_unknown_git_head_is_post_hoc(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), git_head="f" * 40)
    judged = check.assess(hyp, data)
    assert judged.outcome == Outcome.POST_HOC
    assert Rule.SEAL_UNRELATED in judged.rules


def test_missing_git_head_is_post_hoc(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), git_head=None)
    judged = check.assess(hyp, data)
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.NO_GIT_HEAD})


def test_measurement_time_before_seal_is_post_hoc(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), utc="2000-01-01T00:00:00+00:00")
    judged = check.assess(hyp, data)
    assert judged.outcome == Outcome.POST_HOC
    assert Rule.SEALED_AFTER_MEASUREMENT in judged.rules


def test_seal_commit_rewritten_away_is_post_hoc(toylab: ToyLab) -> None:
    # Amend the seal commit: the ledger still names the hash, but the message no longer does.
    hyp = sealed(toylab, "sum", "a + b")
    toylab.git("commit", "-q", "--amend", "-m", "no seal tag here")
    judged = check.assess(hyp, measured_after_seal(toylab))
    assert (judged.outcome, judged.rules) == (Outcome.POST_HOC, {Rule.NO_SEAL_COMMIT})
    assert judged.doc["hypothesis"]["seal_commit"] is None


@pytest.mark.parametrize("utc", [DELETE, "2030-01-01T00:00:00"], ids=["missing", "naive"])
def test_dataset_without_usable_time_is_not_counted(toylab: ToyLab, utc) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), utc=utc)
    try:
        doc = check.check(hyp, data)
    except LabError:
        return
    assert doc["verdict"] == Outcome.POST_HOC


# ---- not evidence -------------------------------------------------------------------------


def test_simulated_dataset_is_not_evidence(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.sim_dataset()
    judged = check.assess(hyp, data)
    assert judged.doc["kernels"]["add"]["scores"]["literal"]["matches"] == N_CELLS
    assert judged.outcome == Outcome.NOT_EVIDENCE and judged.outcome.exit != Exit.OK
    assert judged.findings == (Finding(Rule.SIMULATED, detail=Outcome.CONFIRMED),)


def test_dataset_without_simulated_flag_counts_as_simulated(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), simulated=DELETE)
    assert check.check(hyp, data)["verdict"] == Outcome.NOT_EVIDENCE


# ---- usage errors -------------------------------------------------------------------------


def test_dataset_of_another_probe_is_a_usage_error(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), probe="byte-perm")
    with pytest.raises(UsageError, match="byte-perm"):
        check.check(hyp, data)


def test_an_observable_the_probe_does_not_have_is_named_as_seal_names_it(
        toylab: ToyLab) -> None:
    """A typo'd observable is the file's fault, not the dataset's age (issue 35, item 4)."""
    typo = toylab.write_hyp("typo", "a + b")
    typo.write_text(typo.read_text().replace("value =", "valeu ="))
    data = measured_after_seal(toylab)
    words = "predicts ['valeu'], but the probe observes ['value']"
    seal = invoke("prereg", "seal", typo)
    assert seal.exit_code == 2 and words in seal.stderr
    result = invoke("check", typo, data)
    assert result.exit_code == 2 and words in result.stderr
    assert "measured before" not in result.stderr and result.stdout == ""
    # a sealed file whose probe lost the observable (undeclared) is left out in those words
    assert check.not_applicable(load_hypothesis(typo), integrity.judge(data)) == \
        f"it {words}"


def test_kernel_absent_from_dataset_is_a_usage_error(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b", kernels=["add", "sub"])
    data = measured_after_seal(toylab)
    with pytest.raises(UsageError, match="sub"):
        check.check(hyp, data)


# ---- verdicts on disk and the archive -----------------------------------------------------


def test_saved_verdict_and_archive_verification(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    doc = check.check(hyp, data)
    saved = verdict_files.save_verdict(doc, data)
    assert saved.parent == data.parent
    assert saved.name == f"{data.stem}.sum.verdict.json"
    assert json.loads(saved.read_text()) == json.loads(verdict_files.render_json(doc))

    result = verify.verify_archive()
    assert result["problems"] == []
    assert [(c["hypothesis"], c["verdict"], c["recorded"]) for c in result["checks"]] == \
        [("sum", Outcome.CONFIRMED, "same")]

    recorded = json.loads(saved.read_text())
    recorded["verdict"] = Outcome.REFUTED
    saved.write_text(json.dumps(recorded))
    result = verify.verify_archive()
    assert [c["recorded"] for c in result["checks"]] == ["differs"]
    (problem,) = result["problems"]
    assert problem.rules == {Rule.VERDICT_FILE_DIFFERS} and problem.at == f"{rel(data)} × sum"


def test_archive_write_records_missing_verdicts(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    first = verify.verify_archive()
    assert [c["recorded"] for c in first["checks"]] == ["missing"]
    assert any("no recorded verdict" in n for n in first["notes"])
    assert [c["recorded"] for c in verify.verify_archive(write=True)["checks"]] == ["written"]
    assert verdict_files.verdict_path(data, "sum").exists()
    assert [c["recorded"] for c in verify.verify_archive()["checks"]] == ["same"]


def test_simulated_dataset_in_archive_is_a_problem(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    sim = toylab.sim_dataset()
    placed = toylab.data / "toy" / "sm_90" / sim.name
    placed.parent.mkdir(parents=True)
    placed.write_bytes(sim.read_bytes())
    result = verify.verify_archive()
    assert rules(result["problems"]) == {Rule.SIMULATED_IN_ARCHIVE}
    assert result["checks"] == []


def test_unreadable_dataset_in_archive_is_a_problem(toylab: ToyLab) -> None:
    bad = toylab.data / "toy" / "sm_90" / "broken.nc"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a dataset")
    (problem,) = verify.verify_archive()["problems"]
    assert problem.at == rel(bad)
    assert problem.rules == {Rule.DATASET_UNREADABLE, Rule.UNPINNED}


@pytest.mark.parametrize("pinned", [False, True], ids=["unpinned", "pinned"])
def test_a_truncated_dataset_in_the_archive_is_said_truncated_then_what_its_pin_says(
        toylab: ToyLab, pinned: bool) -> None:
    sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    whole = data.read_bytes()
    cut = data if pinned else data.with_name("20200101T000000Z.nc")
    cut.write_bytes(whole[:len(whole) // 2])
    pin = ("its bytes differ from the file its pin names" if pinned else
           "no pin in data/MANIFEST.jsonl names it")
    said = (f"data/toy/sm_90/{cut.name}: truncated or unreadable (truncated: "
            f"{len(whole) // 2:,} of the {len(whole):,} bytes its header declares); {pin}")
    assert any(p.startswith(said) for p in words.lines(verify.verify_archive()["problems"]))
    result = invoke("check", toylab.root / "preregistrations/toy/sum.toml", cut)
    assert result.exit_code == 3 and result.stderr.startswith(f"error: {said}")
    garbage = cut.with_name("20200102T000000Z.nc")  # as a file that never was a dataset
    garbage.write_bytes(b"not a dataset")
    assert (f"data/toy/sm_90/{garbage.name}: truncated or unreadable (not netCDF4/HDF5); no "
            "pin in data/MANIFEST.jsonl names it") in invoke("plot", garbage).stderr


def test_stray_file_in_archive_is_a_note(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    hyp = toylab.root / "preregistrations/toy/sum.toml"
    verdict_files.save_verdict(check.check(hyp, data), data)
    (data.parent / "notes.txt").write_text("hello")
    result = verify.verify_archive()
    assert result["problems"] == []
    assert any("stray file" in n and "notes.txt" in n for n in result["notes"])


def test_tampered_hypothesis_is_an_archive_problem(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    verdict_files.save_verdict(check.check(hyp, data), data)
    hyp.write_bytes(hyp.read_bytes() + b" ")
    result = verify.verify_archive()
    assert {(p.at, p.seal) for p in result["problems"] if Rule.SEAL_EDITED in p.rules} == \
        {(rel(hyp), True), (f"{rel(data)} × sum", False)}  # its row, and the check
    assert Outcome.TAMPERED in [c["verdict"] for c in result["checks"]]


def test_broken_ledger_is_an_archive_problem(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    measured_after_seal(toylab)
    toylab.ledger.write_text(toylab.ledger.read_text() + "garbage\n")
    result = verify.verify_archive()
    assert [p.rules for p in result["problems"]] == [{Rule.LEDGER_BROKEN}]
    assert words.said(result["problems"][0]).startswith("ledger: ")


def test_post_hoc_is_not_an_archive_problem(toylab: ToyLab) -> None:
    data = toylab.as_measured(toylab.sim_dataset())
    sealed(toylab, "sum", "a + b")
    result = verify.verify_archive(write=True)
    assert [c["verdict"] for c in result["checks"]] == [Outcome.POST_HOC]
    assert result["problems"] == []
    assert not verdict_files.verdict_path(data, "sum").exists()  # it does not count: never recorded


def test_corrupt_recorded_verdict_is_an_archive_problem(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    verdict_files.save_verdict(check.check(hyp, data), data)
    verdict_files.verdict_path(data, "sum").write_text("{not json")
    result = verify.verify_archive()
    assert [(p.at, p.rules) for p in result["problems"]] == \
        [(f"{rel(data)} × sum", {Rule.VERDICT_FILE_UNREADABLE})]


@pytest.mark.parametrize(("recorded", "rule", "says"), [
    ({"verdict": "REFUTED"}, Rule.VERDICT_FILE_DIFFERS,
     "recorded verdict differs (it says REFUTED, the data give CONFIRMED now)"),
    ({"verdict": "CONFIRMED", "note": "x"}, Rule.VERDICT_FILE_DETAILS,
     "recorded verdict file differs in its details (the verdict, CONFIRMED, is the same; "
     "`probelab verify --write` re-records it)"),
], ids=["other-verdict", "same-verdict"])
def test_a_recorded_verdict_that_differs_says_how(toylab: ToyLab, recorded, rule, says
                                                  ) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = measured_after_seal(toylab)
    doc = check.check(hyp, data)
    verdict_files.verdict_path(data, "sum").write_text(json.dumps(doc | recorded))
    (problem,) = verify.verify_archive()["problems"]
    assert problem.rules == {rule}
    assert words.said(problem) == f"{rel(data)} × sum: {says}"  # the words, pinned


def test_dataset_with_no_cells_cannot_confirm(toylab: ToyLab) -> None:
    from probelab import dataset

    hyp = sealed(toylab, "wrong", "a * b + 12345")
    ds = dataset.load(toylab.sim_dataset())
    blank = toylab.root / "sim-data" / "empty.nc"
    dataset.save(ds.isel(b=slice(0, 0)), blank, dataset.provenance(ds))
    empty = toylab.as_measured(blank)
    judged = check.assess(hyp, empty)
    assert judged.doc["kernels"]["add"]["scores"]["literal"]["cells"] == 0
    assert judged.outcome == Outcome.REFUTED and judged.findings == (Finding(Rule.NO_CELLS, "add"),)


def test_git_head_that_is_a_ref_name_cannot_show_order(toylab: ToyLab,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBELAB_GIT_HEAD", "HEAD")  # as on the device machine, misconfigured
    with pytest.raises(UsageError, match="not a full commit id"):
        toylab.sim_dataset()  # the sweep refuses to record a ref name...
    monkeypatch.delenv("PROBELAB_GIT_HEAD")
    before_seal = toylab.sim_dataset()
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    # ...and a dataset that names one anyway (same second as the seal, as happens when
    # sweep and seal are moments apart) is not counted: "HEAD" resolves at check time.
    seal_time = datetime.fromtimestamp(int(toylab.git("show", "-s", "--format=%ct")), UTC)
    data = toylab.as_measured(before_seal, utc=seal_time.isoformat(timespec="seconds"),
                              git_head="HEAD")
    doc = check.check(hyp, data)
    assert doc["verdict"] == Outcome.POST_HOC
