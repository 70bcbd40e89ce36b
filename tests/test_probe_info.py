"""The probe contract made explicit (issue 37): one frozen `ProbeInfo` per probe, derived
in one place, recorded in every dataset, so that check and verify judge a dataset that
records it without importing any probe code."""

import dataclasses
import shutil
import sys

import pytest
from toylab import DELETE, TOY_MODULE, ToyLab, invoke

from probelab import dataset, prereg
from probelab.check import check
from probelab.errors import UsageError
from probelab.notary.rules import Rule
from probelab.notary.words import lines
from probelab.probe import (
    DEVICE,
    INFO_KEY,
    STATIC_KERNEL,
    STATIC_PIPELINE,
    catalog,
    get_probe,
    info,
    recorded_info,
)
from probelab.verify import rel, verify_archive


def test_info_is_read_off_the_probe_once_and_frozen(toylab: ToyLab) -> None:
    facts = info(toylab.probe())
    assert (facts.id, facts.version, facts.instrument) == ("toy", "1", DEVICE)
    assert dict(facts.observables) == {"value": ("a", "b")} and facts.per_kernel == set()
    assert not facts.static and facts.problems is None and facts.nondeterministic == set()
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.version = "2"  # type: ignore[misc]
    with pytest.raises(TypeError):
        facts.retired["value"] = "gone"  # type: ignore[index]


def test_each_instrument_and_the_sparse_kits_problems_are_declared_facts() -> None:
    catalog.cache_clear()
    assert info(get_probe("builtin-modifiers")).instrument == STATIC_KERNEL
    assert info(get_probe("f8f6f4-operand-width")).instrument == STATIC_PIPELINE
    assert info(get_probe("mma-sp-f16")).problems == "decode_problems"
    assert info(get_probe("byte-perm")).instrument == DEVICE


def test_a_sweep_records_the_facts_and_a_check_reads_them_back(toylab: ToyLab) -> None:
    prov = dataset.provenance(dataset.load(toylab.sim_dataset()))
    assert prov[INFO_KEY]["instrument"] == DEVICE
    assert recorded_info(prov) == info(toylab.probe())
    assert recorded_info({k: v for k, v in prov.items() if k != INFO_KEY}) is None
    with pytest.raises(UsageError, match="not one of"):
        recorded_info(prov | {INFO_KEY: prov[INFO_KEY] | {"instrument": "abacus"}})
    with pytest.raises(UsageError, match="cannot be read"):
        recorded_info(prov | {INFO_KEY: prov[INFO_KEY] | {"per_kernel": ["value"]}})
    with pytest.raises(UsageError, match="still observes"):
        recorded_info(prov | {INFO_KEY: prov[INFO_KEY] | {"retired": {"value": "gone"}}})


def _committed(lab: ToyLab, message: str) -> None:
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", message)


def _forget_probes() -> None:
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()


def test_verify_audits_a_dataset_whose_probe_folder_is_gone(toylab: ToyLab) -> None:
    """v1 observes `value`; v2 renames it `total` and retires `value`. A hypothesis sealed
    for v1 is CONFIRMED on v1's data and not applicable to v2's, then the probe folder is
    deleted: both judgements stand, read from the datasets alone. An archive-style dataset
    that records no facts still needs the probe, and says so."""
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    first = toylab.as_measured(toylab.sim_dataset())
    older = toylab.as_measured(toylab.sim_dataset(), probe_info=DELETE)
    probe = toylab.root / "probes" / "toy" / "probe.py"
    probe.write_text(probe.read_text()
                     .replace('version = "1"', 'version = "2"\n    retired = {"value": "renamed"}')
                     .replace('{"value": ("a", "b")}', '{"total": ("a", "b")}')
                     .replace('ds["value"]', 'ds["total"]'))
    _forget_probes()
    _committed(toylab, "toy 2: value is total")
    second = toylab.as_measured(toylab.sim_dataset())
    _committed(toylab, "data")

    def audited() -> dict[str, object]:
        result = verify_archive()
        checks = {(c["dataset"].rsplit("/", 1)[1], c["hypothesis"]): c["verdict"]
                  for c in result["checks"]}
        return {"checks": checks, "problems": result["problems"], "notes": result["notes"]}

    before = audited()
    assert before["checks"] == {(first.name, "sum"): "CONFIRMED",
                                (older.name, "sum"): "CONFIRMED"}
    assert not before["problems"]
    (note,) = [n for n in before["notes"] if second.name in n]
    assert "not applicable, it predicts ['value'], which toy no longer observes" in note

    shutil.rmtree(probe.parent)  # the probe's code is gone: nothing to import
    _forget_probes()
    with pytest.raises(UsageError, match="unknown probe"):
        get_probe("toy")
    after = audited()
    assert after["checks"] == {(first.name, "sum"): "CONFIRMED"}  # from its own record
    assert [n for n in after["notes"] if second.name in n] == [note]  # its retirement too
    assert check(hyp, first)["verdict"] == "CONFIRMED"
    assert invoke("check", hyp, first).exit_code == 0
    with pytest.raises(UsageError, match="unknown probe"):  # no facts: today's probe asked
        check(hyp, older)
    problems = after["problems"]
    # its check needs today's probe, and the seal itself is re-evaluated on its probe's grid
    assert sorted((p.at, p.seal, p.rules) for p in problems) == [
        (f"{rel(older)} × sum", False, {Rule.CHECK_REFUSED}),
        ("preregistrations/toy/sum.toml", True, {Rule.SEAL_NO_LONGER_EVALUATES})]
    assert any(p.startswith(f"{rel(older)} × sum: ") and "unknown probe 'toy'" in p
               for p in lines(problems))  # the words, pinned
