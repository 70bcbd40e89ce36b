"""Trust under attack, part 2: git history that lies about order (replace objects, grafts,
a cut-off clone). Every query runs with replace objects off; a graft file or a shallow
clone stops the judgement with one plain error instead of a verdict that counts."""

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import prereg
from probelab.check import assess
from probelab.notary import words
from probelab.notary.rules import Rule
from probelab.probe import catalog
from probelab.verify import verify_archive


class Backdated:
    @staticmethod
    def now(tz=None):
        return datetime(2020, 1, 1, tzinfo=tz or UTC)


def _clocks_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("probelab.prereg.datetime", Backdated)
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, "2020-01-01T00:00:00+00:00")


def _measured_then_sealed_aside(lab: ToyLab, monkeypatch) -> tuple[Path, Path, str, str]:
    """Data measured at M; afterwards, with both clocks set back, a seal S made on a side
    branch from M^ and merged in. Honestly judged, S is not an ancestor of M: POST-HOC."""
    lab.git("commit", "-q", "--allow-empty", "-m", "work before the measurement")
    measured = lab.head()
    data = lab.as_measured(lab.sim_dataset())
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", "measurement")
    _clocks_back(monkeypatch)
    lab.git("checkout", "-q", "-b", "side", f"{measured}^")
    hyp = lab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    seal = lab.head()
    lab.git("checkout", "-q", "main")
    lab.git("merge", "-q", "--no-edit", "side")
    return hyp, data, measured, seal


def test_a_replace_object_cannot_give_a_late_seal_fake_ancestry(toylab: ToyLab,
                                                                monkeypatch) -> None:
    """`git replace M M2`, M2 = M's tree with parents M^ and the back-dated seal: git itself
    now calls the seal an ancestor of the measurement. probelab never looks through it."""
    hyp, data, measured, seal = _measured_then_sealed_aside(toylab, monkeypatch)
    fake = toylab.git("commit-tree", f"{measured}^{{tree}}", "-p", f"{measured}^", "-p", seal,
                      "-m", "work before the measurement")
    toylab.git("replace", measured, fake)
    assert toylab.git("merge-base", "--is-ancestor", seal, measured) == ""  # git is fooled
    result = invoke("check", hyp, data, "--json", "--no-save")
    assert result.exit_code == 3, result.stdout
    assert json.loads(result.stdout)["verdict"] == "POST-HOC"
    assert Rule.SEAL_UNRELATED in assess(hyp, data).rules
    rows = verify_archive()["checks"]
    assert [r["verdict"] for r in rows] == ["POST-HOC"]


def test_a_graft_file_stops_every_judgement_of_order(toylab: ToyLab, monkeypatch) -> None:
    hyp, data, measured, seal = _measured_then_sealed_aside(toylab, monkeypatch)
    grafts = toylab.root / ".git" / "info" / "grafts"
    grafts.parent.mkdir(exist_ok=True)
    grafts.write_text(f"{measured} {toylab.git('rev-parse', measured + '^')} {seal}\n")
    result = invoke("check", hyp, data)
    assert result.exit_code == 3 and "grafts" in result.stderr, result.stderr
    assert invoke("prereg", "verify").exit_code == 3
    problems = verify_archive()["problems"]
    assert [p.rules for p in problems] == [{Rule.HISTORY_UNUSABLE}]
    assert "grafts" in problems[0].findings[0].detail
    verified = invoke("verify")
    assert verified.exit_code == 3 and "rewrites commit ancestry" in verified.stderr


def test_a_shallow_clone_says_so_once(toylab: ToyLab, monkeypatch, tmp_path: Path) -> None:
    for n, expr in enumerate(("a + b", "a - b", "a * b")):
        prereg.seal(toylab.write_hyp(f"h{n}", expr))
    toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "measurement")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{toylab.root}", str(clone)],
                   check=True, capture_output=True)
    monkeypatch.setenv("PROBELAB_ROOT", str(clone))
    monkeypatch.chdir(clone)
    catalog.cache_clear()
    problems = words.lines(verify_archive()["problems"])
    assert len(problems) == 1, problems
    assert problems[0].startswith("history: ")  # the words, pinned
    assert "shallow clone" in problems[0] and "git fetch --unshallow" in problems[0]
    assert invoke("verify").exit_code == 3


def test_a_lost_ledger_line_cannot_hide_behind_a_replaced_seal_commit(toylab: ToyLab) -> None:
    """Delete the last ledger line and its file, then replace its seal commit with a copy
    whose message has no seal tag: the tag is still in the history as committed."""
    prereg.seal(toylab.write_hyp("kept", "a + b"))
    gone = toylab.write_hyp("gone", "a - b")
    prereg.seal(gone)
    seal = toylab.head()
    lines = toylab.ledger.read_text().splitlines(keepends=True)
    toylab.ledger.write_text("".join(lines[:-1]))
    gone.unlink()
    toylab.git("commit", "-q", "-am", "tidy")
    body = toylab.git("cat-file", "commit", seal)
    untagged = "\n".join(line for line in body.splitlines()
                         if not line.startswith(prereg.SEAL_TAG)) + "\n"
    copy = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"],
                          input=untagged, text=True, capture_output=True, check=True,
                          cwd=toylab.root).stdout.strip()
    toylab.git("replace", seal, copy)
    result = invoke("prereg", "verify")
    assert result.exit_code == 3 and "lost a sealed entry" in result.stderr, result.stderr
    (lost,) = verify_archive()["problems"]
    assert lost.rules == {Rule.LEDGER_BROKEN} and "lost a sealed entry" in lost.findings[0].detail
