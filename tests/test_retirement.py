"""Retiring a dataset superseded by a re-measurement: allowed only for a successor that can
be one, the retired file still held to its pin, its verdicts listed beside its successor's,
and a whole check on request."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import manifest, prereg, retirement
from probelab.check import check_all
from probelab.errors import UsageError
from probelab.notary.rules import Finding, Rule
from probelab.verify import verify_archive


def measured(lab: ToyLab, hours: int, version: str, source: Path | None = None) -> Path:
    """A faked measurement of probe version `version`, `hours` from now, committed."""
    utc = (datetime.now(UTC) + timedelta(hours=hours)).isoformat(timespec="seconds")
    path = lab.as_measured(source or lab.sim_dataset(), utc=utc, probe_version=version)
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", f"measurement {path.name}")
    return path


@pytest.fixture
def pair(toylab: ToyLab) -> tuple[Path, Path]:
    """A sealed claim, a version-1 dataset with its verdict recorded, and a later version-2
    re-measurement."""
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    old = measured(toylab, 1, "1")
    check_all(old)
    new = measured(toylab, 2, "2")
    check_all(new)
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "verdicts")
    return old, new


def test_a_retired_dataset_is_held_to_its_pin_and_shown_beside_its_successor(
        toylab: ToyLab, pair: tuple[Path, Path]) -> None:
    old, new = pair
    assert invoke("retire", old, "--by", new, "--reason", "re-measured in the factorised form"
                  ).exit_code == 0
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "retire")
    result = verify_archive()
    assert not result["problems"], result["problems"]
    assert [row["dataset"] for row in result["checks"]] == [f"data/toy/sm_90/{new.name}"]
    (row,) = result["retired"]
    assert row["recorded"] == {"sum": "CONFIRMED"}
    assert row["successors"] == {"sum": {f"data/toy/sm_90/{new.name}": "CONFIRMED"}}
    full = verify_archive(retired=True)  # its values too, on request
    assert sorted(r["dataset"] for r in full["checks"]) == sorted(
        f"data/toy/sm_90/{p.name}" for p in (old, new)) and not full["retired"]
    raw = bytearray(old.read_bytes())  # the bytes of a retired file are still its pin's
    raw[-40] ^= 1
    old.write_bytes(bytes(raw))
    assert (f"data/toy/sm_90/{old.name}", {Rule.BYTES_NOT_PINNED}) in [
        (p.at, p.rules) for p in verify_archive()["problems"]]
    assert retirement.problems(retirement.read(), manifest.read()) == [
        Finding(Rule.BYTES_NOT_PINNED, f"data/toy/sm_90/{old.name}")]


def test_a_verdict_the_successor_does_not_give_is_a_note(toylab: ToyLab,
                                                         pair: tuple[Path, Path]) -> None:
    old, new = pair
    doc = json.loads(old.with_name(f"{old.stem}.sum.verdict.json").read_text())
    retirement.retire(old, [new], "re-measured")
    doc["verdict"] = "REFUTED"  # as if the old data had said otherwise
    old.with_name(f"{old.stem}.sum.verdict.json").write_text(json.dumps(doc))
    notes = verify_archive()["notes"]
    assert any("recorded REFUTED" in n and "gives CONFIRMED" in n for n in notes), notes


# what each retirement that `retire` refuses would be found to be, written by hand
BROKEN = {"same-version": Rule.SUCCESSOR_SAME_VERSION, "earlier": Rule.SUCCESSOR_EARLIER,
          "older-version": Rule.SUCCESSOR_OLDER_VERSION,  # later, but of version 1 for 2
          "other-probe-target": Rule.SUCCESSOR_NOT_PINNED,  # its folder's copy has no pin
          "unpinned": Rule.SUCCESSOR_NOT_PINNED, "itself": Rule.SUCCESSOR_NOT_PINNED,
          "twice": Rule.RETIRED_TWICE, "no-reason": None}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_retirement_without_a_true_successor_is_refused_and_nothing_written(
        toylab: ToyLab, pair: tuple[Path, Path], case: str) -> None:
    old, new = pair
    if case == "same-version":
        new = measured(toylab, 3, "1")
    elif case == "earlier":
        new, old = old, new  # the version-2 one, retired for an older measurement
    elif case == "older-version":
        old, new = new, measured(toylab, 3, "1")  # version 2 retired for a later version 1
    elif case == "other-probe-target":
        new = measured(toylab, 3, "2", source=toylab.sim_dataset())
        moved = new.parent.parent / "sm_80" / new.name
        moved.parent.mkdir()
        new.rename(moved)
        new = moved
    elif case == "unpinned":
        new = new.with_name("copy.nc")
        new.write_bytes(pair[1].read_bytes())
    elif case == "itself":
        new = old
    elif case == "twice":
        retirement.retire(old, [new], "once")
    before = retirement.retired_path().read_bytes() if retirement.retired_path().exists() \
        else None
    with pytest.raises(UsageError):
        retirement.retire(old, [new], "" if case == "no-reason" else "why")
    after = retirement.retired_path().read_bytes() if retirement.retired_path().exists() \
        else None
    assert after == before
    name = [p.relative_to(toylab.root).as_posix() for p in (old, new)]
    by_hand = [*retirement.read(), {"path": name[0], "superseded_by": name[1:]}]
    expected = [BROKEN[case]] if BROKEN[case] else []  # without a reason, it would hold
    assert [f.rule for f in retirement.problems(by_hand, manifest.read())] == expected


def test_a_hand_written_retirement_that_does_not_hold_is_a_problem_and_not_honoured(
        toylab: ToyLab, pair: tuple[Path, Path]) -> None:
    """A line appended by hand for a successor of the same version: verify says why, and
    checks the dataset in full as if it were not retired."""
    old, _ = pair
    same = measured(toylab, 3, "1")
    from probelab import chain

    chain.append(retirement.retired_path(), retirement.read(), {
        "path": f"data/toy/sm_90/{old.name}", "reason": "by hand",
        "superseded_by": [f"data/toy/sm_90/{same.name}"], "retired_at": "now"},
        retirement.FORMS)
    result = verify_archive()
    assert [f.rule for f in retirement.problems(retirement.read(), manifest.read())] == \
        [Rule.SUCCESSOR_SAME_VERSION] == [f.rule for p in result["problems"]
                                          for f in p.findings]
    assert f"data/toy/sm_90/{old.name}" in {row["dataset"] for row in result["checks"]}
    assert not result["retired"]
    lines = retirement.retired_path().read_text().splitlines()
    retirement.retired_path().write_text(lines[0].replace("by hand", "edited") + "\n")
    (broken,) = verify_archive()["problems"]
    assert broken.rules == {Rule.RETIREMENTS_BROKEN}
    assert "retirement list" in broken.findings[0].detail


def test_the_summary_is_one_screen_and_jobs_give_the_same_result(
        toylab: ToyLab, pair: tuple[Path, Path]) -> None:
    """The default output counts per probe and prints every problem; the full listing is
    --verbose; any number of processes gives the same result."""
    for n in range(3):
        measured(toylab, 4 + n, "2")
    serial = verify_archive(jobs=1)
    assert verify_archive(jobs=2) == serial
    short, full = invoke("verify"), invoke("verify", "--verbose")
    assert short.exit_code == full.exit_code == 0
    assert "toy 5/5: 5C" in short.stdout and "× sum" not in short.stdout
    assert full.stdout.count("× sum") == 5
    assert short.stdout.rstrip().endswith("5 checks over 1 sealed hypotheses, all intact")
    dataset_path = toylab.data / "toy" / "sm_90"
    (next(dataset_path.glob("*.sum.verdict.json"))).write_text("{}")
    broken = invoke("verify")
    assert broken.exit_code == 3 and "problem:" in broken.stderr
