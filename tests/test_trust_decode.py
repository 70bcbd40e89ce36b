"""Trust under attack, part 6: the probe's own code is a degree of freedom. A decode edited
in a dirty tree does not count; one committed after the seal is named in the verdict; one
that flips a verdict between two measurements is a problem; a retirement cannot silence
data that observed what it retires."""

import json
import sys

import pytest
from toylab import DELETE, TOY_MODULE, ToyLab, invoke

from probelab import dataset, prereg
from probelab.check import assess, check
from probelab.errors import UsageError
from probelab.notary import words
from probelab.notary.problems import rules
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.probe import catalog
from probelab.verify import rel, verify_archive

HONEST = 'ds["value"] = (("kernel", "a", "b"), values)'


def sealed(lab: ToyLab, hyp_id: str, expr: str):
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def edit_probe(lab: ToyLab, old: str, new: str) -> None:
    probe = lab.root / "probes" / "toy" / "probe.py"
    text = probe.read_text()
    assert old in text
    probe.write_text(text.replace(old, new))
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()


def committed(lab: ToyLab, message: str) -> None:
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", message)


@pytest.mark.parametrize("device_env", [False, True], ids=["here", "device-machine"])
def test_a_decode_edited_in_a_dirty_tree_does_not_count(toylab: ToyLab, monkeypatch,
                                                       device_env: bool) -> None:
    """The decode maps the data onto the claim (as `blgp -> neg` would); uncommitted. On a
    device machine the tree's state is taken on trust (PROBELAB_GIT_DIRTY=0): the recorded
    code still shows it."""
    hyp = sealed(toylab, "plus-one", "a + b + 1")
    assert check(hyp, toylab.as_measured(toylab.sim_dataset()))["verdict"] == "REFUTED"
    edit_probe(toylab, HONEST, HONEST.replace("values)", "values + 1)"))
    if device_env:
        monkeypatch.setenv("PROBELAB_GIT_HEAD", toylab.head())
        monkeypatch.setenv("PROBELAB_GIT_DIRTY", "0")
    data = toylab.as_measured(toylab.sim_dataset())
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "POST-HOC"
    assert doc["kernels"]["add"]["status"] == "CONFIRMED"  # what the edited decode made of it
    (found,) = assess(hyp, data).findings
    assert found.rule == Rule.CODE_NOT_COMMITS and "probes/toy/probe.py" in found.files
    assert "verdict not saved" in result.stderr


def test_a_dirty_tree_that_cannot_matter_still_counts(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    (toylab.root / "NOTES.md").write_text("a note\n")
    committed(toylab, "notes")
    (toylab.root / "NOTES.md").write_text("an edited note\n")  # tracked, modified: dirty
    data = toylab.as_measured(toylab.sim_dataset())
    assert dataset.provenance(dataset.load(data))["git_dirty"] is True
    assert check(hyp, data)["verdict"] == "CONFIRMED"  # the recorded code is the commit's


def test_a_decode_committed_after_the_seal_is_named_in_the_verdict(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "plus-one", "a + b + 1")
    edit_probe(toylab, HONEST, HONEST.replace("values)", "values + 1)"))
    committed(toylab, "decode fix")
    data = toylab.as_measured(toylab.sim_dataset())
    doc = check(hyp, data)
    assert doc["verdict"] == "CONFIRMED"
    assert doc["hypothesis"]["code_changed_since_seal"] == ["probes/toy/probe.py"]
    assert doc["dataset"]["code_sha256"]
    invoke("check", hyp, data)
    shown = invoke("report", data)
    assert shown.exit_code == 0
    assert "the probe's code changed between the seal and the measurement" in shown.stdout


def test_a_decode_changed_before_a_later_seal_is_said_in_that_order(toylab: ToyLab) -> None:
    """Measured, then the decode edited and committed, then sealed: POST-HOC, and the change
    lies between the measurement and the seal, never "between the seal and the
    measurement" (issue 35, item 8)."""
    data = toylab.as_measured(toylab.sim_dataset())
    edit_probe(toylab, HONEST, HONEST.replace("values)", "values + 1)"))
    committed(toylab, "decode edited after the data were taken")
    hyp = sealed(toylab, "plus-one", "a + b + 1")
    result = invoke("check", hyp, data)
    assert result.exit_code == 3 and "between the seal and the measurement" not in result.stdout
    judged = assess(hyp, data)
    assert judged.outcome == Outcome.POST_HOC
    # the ledger's seal time and the data's are whole seconds: the seal falls in a later
    # second than the measurement only where the machine was slow (a loaded CI run), and
    # then the ledger says so too
    timed = [(f.rule, f.files) for f in judged.findings
             if f.rule != Rule.SEALED_AFTER_MEASUREMENT]
    assert timed == [
        (Rule.SEALED_AFTER_DATA, ()), (Rule.CODE_CHANGED_BEFORE_SEAL, ("probes/toy/probe.py",))]
    assert judged.doc["hypothesis"]["code_changed_since_seal"] == []  # its words: test_notary.py


def test_a_decode_changed_on_another_line_of_history_is_said_so(toylab: ToyLab) -> None:
    """Sealed on one branch, the decode edited and measured on another: neither commit
    descends from the other, and the reasons say so (issue 35, item 8)."""
    toylab.git("checkout", "-q", "-b", "seals")
    hyp = sealed(toylab, "plus-one", "a + b + 1")
    toylab.git("checkout", "-q", "main")
    toylab.git("checkout", "seals", "--", "preregistrations")  # the file and its ledger
    edit_probe(toylab, HONEST, HONEST.replace("values)", "values + 1)"))
    committed(toylab, "decode edited on another line")
    found = assess(hyp, toylab.as_measured(toylab.sim_dataset())).findings
    assert [f.rule for f in found] == [Rule.SEAL_UNRELATED, Rule.CODE_DIFFERS_FROM_SEAL]
    assert found[1].files == ("probes/toy/probe.py",)  # its words: test_notary.py


def test_a_decode_change_that_flips_a_verdict_is_a_problem(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "plus-one", "a + b + 1")
    first = toylab.as_measured(toylab.sim_dataset())
    assert check(hyp, first)["verdict"] == "REFUTED"
    committed(toylab, "first measurement")
    edit_probe(toylab, HONEST, HONEST.replace("values)", "values + 1)"))
    committed(toylab, "decode fix")
    second = toylab.as_measured(toylab.sim_dataset())
    assert check(hyp, second)["verdict"] == "CONFIRMED"
    (flip,) = [p for p in verify_archive()["problems"] if Rule.VERDICT_FLIPPED in p.rules]
    assert flip.at == "plus-one" and "REFUTED on" in flip.findings[0].subject
    assert "CONFIRMED on" in flip.findings[0].subject and flip.findings[0].files
    edit_probe(toylab, 'version = "1"', 'version = "2"')  # declared as a new version
    committed(toylab, "decode v2")
    third = toylab.as_measured(toylab.sim_dataset())
    assert check(hyp, third)["verdict"] == "CONFIRMED"
    found = [p for p in verify_archive()["problems"] if Rule.VERDICT_FLIPPED in p.rules]
    assert len(found) == 1  # v1 vs v1 only


def test_a_live_observable_cannot_be_retired(toylab: ToyLab, monkeypatch) -> None:
    """Today's probe retiring what it observes: its seals say so, a dataset that records no
    probe facts (the archive's older ones, judged against today's probe) is refused, and no
    sweep can record such facts. A dataset that records its own is judged from them."""
    hyp = sealed(toylab, "sum", "a + b")
    recorded = toylab.as_measured(toylab.sim_dataset())
    data = toylab.as_measured(toylab.sim_dataset(), probe_info=DELETE)
    monkeypatch.setattr(toylab.probe(), "retired", {"value": "inconvenient"}, raising=False)
    (row,) = prereg.verify_seals()
    assert not row["ok"] and "still observes" in row["problems"][0]
    with pytest.raises(UsageError, match="still observes"):
        check(hyp, data)
    assert invoke("prereg", "verify").exit_code == 3
    with pytest.raises(UsageError, match="still observes"):
        toylab.sim_dataset()
    assert check(hyp, recorded)["verdict"] == "CONFIRMED"


def test_retirement_needs_a_newer_probe_version(toylab: ToyLab, monkeypatch) -> None:
    """Dropping an observable and retiring it, without a new version: the data of that very
    version observe it, so the retirement is a problem, and their verdicts still stand. A
    dataset without recorded probe facts is held to today's probe; one with them, to the
    facts its own version recorded."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset(), probe_info=DELETE)
    recorded = toylab.as_measured(toylab.sim_dataset())
    monkeypatch.setattr(toylab.probe(), "observables", {"total": ("a", "b")})
    monkeypatch.setattr(toylab.probe(), "retired", {"value": "renamed"}, raising=False)
    assert check(hyp, data)["verdict"] == "CONFIRMED"
    found = [p.at for p in verify_archive()["problems"] if Rule.RETIRED_LIVE in p.rules]
    assert found == [rel(data)]  # `recorded` retired nothing
    monkeypatch.setattr(toylab.probe(), "version", "2")
    assert Rule.RETIRED_LIVE not in rules(verify_archive()["problems"])
    # the facts of a version that retires what its own data observe (the toy still decodes
    # `value`): a problem read off that dataset alone, whatever today's probe says
    retiring = toylab.as_measured(toylab.sim_dataset())
    monkeypatch.setattr(toylab.probe(), "retired", {}, raising=False)
    (found,) = [p for p in verify_archive()["problems"] if Rule.RETIRED_LIVE in p.rules]
    assert found.at == rel(retiring) and found.findings == (
        Finding(Rule.RETIRED_LIVE, "toy", "2", ("value",)),)
    assert "toy version 2 declares ['value'] retired" in words.said(found)  # the words
    assert check(hyp, recorded)["verdict"] == "CONFIRMED"


def test_stale_bytecode_cannot_stand_in_for_the_recorded_source(toylab: ToyLab) -> None:
    """A probe compiled from an edited source (same size), the source then restored with the
    edited file's mtime: Python would run the stale __pycache__; probes run from source."""
    import importlib.util
    import os
    import py_compile

    probe = toylab.root / "probes" / "toy" / "probe.py"
    honest = probe.read_bytes()
    probe.write_bytes(honest.replace(b"((a + b) & 0xFFFFFFFF)", b"((a ^ b) & 0xFFFFFFFF)"))
    assert probe.read_bytes() != honest and len(probe.read_bytes()) == len(honest)
    stat = probe.stat()
    py_compile.compile(str(probe), cfile=importlib.util.cache_from_source(str(probe)))
    probe.write_bytes(honest)
    os.utime(probe, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()
    hyp = sealed(toylab, "sum", "a + b")
    assert check(hyp, toylab.as_measured(toylab.sim_dataset()))["verdict"] == "CONFIRMED"


def test_a_flip_with_the_same_measuring_code_is_a_note(toylab: ToyLab) -> None:
    from probelab import dataset

    hyp = sealed(toylab, "sum", "a + b")
    first = toylab.as_measured(toylab.sim_dataset())
    committed(toylab, "first")
    (toylab.root / "probes" / "toy" / "README.md").write_text("prose cannot decode\n")
    committed(toylab, "docs")
    raw = toylab.root / "sim-data" / "odd.nc"
    ds = dataset.load(toylab.sim_dataset())
    ds["value"].values[0, 0, 0] += 1  # the device answered differently, once
    dataset.save(ds, raw, dataset.provenance(ds))
    second = toylab.as_measured(raw)
    assert [check(hyp, p)["verdict"] for p in (first, second)] == ["CONFIRMED", "REFUTED"]
    result = verify_archive()
    assert Rule.VERDICT_FLIPPED not in rules(result["problems"])
    assert any("disagrees with itself" in n for n in result["notes"])


def test_a_committed_link_among_the_probes_is_recorded_as_git_keeps_it(toylab: ToyLab) -> None:
    (toylab.root / "probes" / "toy" / "kernel.cu").symlink_to("toy.cu")
    committed(toylab, "a link")
    hyp = sealed(toylab, "sum", "a + b")
    assert check(hyp, toylab.as_measured(toylab.sim_dataset()))["verdict"] == "CONFIRMED"


def test_a_verdict_reads_the_dims_its_dataset_records_not_todays(toylab: ToyLab,
                                                                  monkeypatch) -> None:
    """The dataset records each observable's dims: a probe edited afterwards to declare
    other dims (here transposed) changes nothing about the verdict on data already taken."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    assert dataset.stored_provenance(data)["observables"] == {"value": ["a", "b"]}
    monkeypatch.setattr(toylab.probe(), "observables", {"value": ("b", "a")})
    assert check(hyp, data)["verdict"] == "CONFIRMED"


def test_the_archive_a_sweep_writes_does_not_make_the_tree_dirty(toylab: ToyLab) -> None:
    # A sweep of several targets saves and pins its first dataset before taking the next:
    # that change to data/ is the sweep's own, not uncommitted code.
    from probelab import gitinfo

    (toylab.root / "data").mkdir(exist_ok=True)
    (toylab.root / "data" / "MANIFEST.jsonl").write_text("")
    (toylab.root / "NOTES.md").write_text("a note\n")
    committed(toylab, "an archive")
    (toylab.root / "data" / "MANIFEST.jsonl").write_text('{"pinned": 1}\n')
    assert gitinfo.head()[1] is False
    (toylab.root / "NOTES.md").write_text("an edited note\n")
    assert gitinfo.head()[1] is True
