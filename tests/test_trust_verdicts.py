"""Trust under attack, part 7: recorded verdicts. Only a verdict that counts is ever saved;
a verdict file that no sealed check reproduces is an archive problem; `report` re-checks
what it shows; and nothing reports on an archive that is not there."""

import json
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import prereg
from probelab.check import check
from probelab.notary.rules import Finding, Rule
from probelab.notary.verdict_files import render_json, verdict_path
from probelab.notary.words import said
from probelab.verify import verify_archive


def sealed(lab: ToyLab, hyp_id: str = "sum", expr: str = "a + b") -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def test_an_unsealed_check_saves_no_verdict_into_the_archive(toylab: ToyLab) -> None:
    sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    unsealed = toylab.write_hyp("late", "a + b")
    result = invoke("check", unsealed, data)
    assert result.exit_code == 2 and "late.toml is not sealed" in result.stderr
    assert not verdict_path(data, "late").exists()
    verified = verify_archive(write=True)
    assert not verdict_path(data, "late").exists() and not verified["problems"]


def test_a_post_hoc_seal_records_nothing(toylab: ToyLab) -> None:
    data = toylab.as_measured(toylab.sim_dataset())
    hyp = sealed(toylab)  # after the data
    assert invoke("check", hyp, data).exit_code == 3
    assert not verdict_path(data, "sum").exists()


def test_a_verdict_file_no_sealed_check_reproduces_is_a_problem(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    doc = check(hyp, data)
    forged = doc | {"hypothesis": doc["hypothesis"] | {"id": "never-sealed"}}
    verdict_path(data, "never-sealed").write_text(render_json(forged))
    assert invoke("verify").exit_code == 3
    (stray,) = verify_archive()["problems"]
    assert stray.rules == {Rule.STRAY_VERDICT}


def test_a_recorded_verdict_that_does_not_count_is_a_problem(toylab: ToyLab) -> None:
    data = toylab.as_measured(toylab.sim_dataset())
    hyp = sealed(toylab)
    doc = check(hyp, data)
    assert doc["verdict"] == "POST-HOC"
    verdict_path(data, "sum").write_text(render_json(doc))  # saved by hand
    (found,) = verify_archive()["problems"]
    assert found.findings == (Finding(Rule.VERDICT_FILE_NOT_COUNTING, "POST-HOC"),)
    assert "a POST-HOC verdict is recorded, but it does not count" in said(found)  # the words


@pytest.mark.parametrize("how", ["forged", "unreproducible"])
def test_report_re_checks_what_it_shows(toylab: ToyLab, how: str) -> None:
    hyp = sealed(toylab, "wrong", "a * b")
    data = toylab.as_measured(toylab.sim_dataset())
    assert invoke("check", hyp, data).exit_code == 1
    path = verdict_path(data, "wrong")
    doc = json.loads(path.read_text())
    if how == "forged":
        path.write_text(render_json(doc | {"verdict": "CONFIRMED"}))
    else:
        path.write_text(render_json(doc | {"hypothesis": doc["hypothesis"] | {
            "path": "preregistrations/toy/gone.toml"}}))
    result = invoke("report", data)
    assert result.exit_code == 3
    if how == "forged":
        assert "says CONFIRMED, but re-checked" in result.stdout
        assert "— **REFUTED on" in result.stdout  # the re-check is what is shown
    else:
        assert "NOT RE-VERIFIED" in result.stdout and "cannot be re-checked" in result.stdout
    assert json.loads(invoke("report", data, "--json").stdout)[0]["report_warnings"]


def test_verify_outside_a_lab_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PROBELAB_ROOT", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    for command in (["verify"], ["prereg", "verify"], ["prereg", "list"]):
        result = invoke(*command)
        assert result.exit_code == 2 and "not inside a probelab lab" in result.stderr
    monkeypatch.setenv("PROBELAB_ROOT", str(empty))
    result = invoke("verify")
    assert result.exit_code == 2 and "is not a probelab lab" in result.stderr
