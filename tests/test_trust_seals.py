"""Trust under attack, part 9: seals kept out of sight. Candidate hypotheses are "sealed"
before the data where the ledger's cross-check would not look, the one the data favour is
added to the ledger afterwards and the others are deleted. The search for a seal commit and
the cross-check read one answer (prereg.seal_tags), so a seal counts only where it is also
seen: every hidden candidate is refused, or is not a seal at all."""

import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from toylab import ToyLab

from probelab import ledger, prereg
from probelab.check import check
from probelab.errors import IntegrityError
from probelab.hypothesis import load_hypothesis
from probelab.paths import relative
from probelab.verify import verify_archive


def forged_entry(lab: ToyLab, path: Path, sealed_at: str) -> tuple[dict, str]:
    """The ledger line a seal of `path` at `sealed_at` would append, made ahead of time."""
    h = load_hypothesis(path)
    _, grid_hash, table_hash = prereg.evaluate(h)
    scratch = lab.root.parent / f"ledger-{h.id}.jsonl"
    scratch.unlink(missing_ok=True)
    if lab.ledger.exists():
        shutil.copy(lab.ledger, scratch)
    entry = ledger.append(scratch, {
        "probe": h.probe, "hypothesis": h.id, "path": relative(path), "parent": None,
        "file_sha256": h.sha256, "table_sha256": table_hash, "grid_sha256": grid_hash,
        "sealed_at": sealed_at})
    return entry, scratch.read_text().splitlines()[-1]


def candidates(lab: ToyLab) -> tuple[list[Path], list[tuple[dict, str]]]:
    paths = [lab.write_hyp("sum", "a + b"), lab.write_hyp("prod", "a * b")]
    before = (datetime.now(UTC) - timedelta(minutes=10)).isoformat(timespec="seconds")
    return paths, [forged_entry(lab, p, before) for p in paths]


def commit_message(lab: ToyLab, message: bytes, *config: str) -> str:
    (lab.root.parent / "message").write_bytes(message)
    lab.git("add", "-A")
    subprocess.run(["git", *config, "commit", "-q", "-F", str(lab.root.parent / "message")],
                   cwd=lab.root, check=True, env=os.environ | {"TZ": "America/New_York"})
    return lab.head()


def commit_raw(lab: ToyLab, message: bytes) -> str:
    """A commit object written by hand (`git commit` refuses a NUL in a message)."""
    lab.git("add", "-A")
    tree, parent = lab.git("write-tree").strip(), lab.head()
    who = f"Lab <lab@example.org> {int(datetime.now(UTC).timestamp()) - 60} +0000"
    body = f"tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\n\n".encode()
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin",
                           "--literally"], cwd=lab.root, input=body + message,
                          capture_output=True, check=True)
    commit = made.stdout.decode().strip()
    lab.git("update-ref", "HEAD", commit)
    return commit


def outcome(lab: ToyLab, paths: list[Path], made: list, **measured) -> str:
    """Measure, then add the winner's line to the ledger and delete the loser: the
    winner's verdict, or why the lab refused on the way."""
    try:
        utc = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
        ds = lab.as_measured(lab.sim_dataset(), utc=utc, **measured)
        lab.git("add", "-A")
        lab.git("commit", "-q", "-m", "measurement")
        with lab.ledger.open("a") as handle:
            handle.write(made[0][1] + "\n")
        paths[1].unlink()
        lab.git("add", "-A")
        lab.git("commit", "-q", "-m", "tidy")
        assert verify_archive()["problems"]
        return check(paths[0], ds)["verdict"]
    except IntegrityError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize("how", ["re-encoded", "cut at a NUL byte"])
def test_seals_git_log_cannot_read_are_refused(toylab: ToyLab, how: str) -> None:
    paths, made = candidates(toylab)
    tags = b"".join(f"+probelab-seal: {e['hash']}\n".encode() for e, _ in made)
    if how == "re-encoded":  # UTF-7: git's own view of "+probelab-seal" is other text
        commit_message(toylab, b"candidates\n\nsee probelab-seal: below\n" + tags,
                       "-c", "i18n.commitEncoding=UTF-7")
    else:
        commit_raw(toylab, b"candidates\n\nsee probelab-seal: below\n\0" + tags)
    with pytest.raises(IntegrityError, match="shows otherwise than it stores"):
        prereg.ledger_entries()
    assert outcome(toylab, paths, made).startswith("refused")


def test_a_tag_in_the_middle_of_a_line_is_no_seal(toylab: ToyLab) -> None:
    paths, made = candidates(toylab)
    commit_message(toylab, b"candidates\n\n" + b"".join(
        f"candidate probelab-seal: {e['hash']}\n".encode() for e, _ in made))
    assert prereg.seal_commit(made[0][0]) is None
    assert outcome(toylab, paths, made) == "POST-HOC"


def test_seals_kept_on_another_branch_are_seen(toylab: ToyLab) -> None:
    toylab.git("checkout", "-q", "-b", "side")
    paths, made = candidates(toylab)
    side = commit_message(toylab, b"candidates\n\n" + b"".join(
        f"probelab-seal: {e['hash']}\n".encode() for e, _ in made))
    toylab.git("checkout", "-q", "main")
    with pytest.raises(IntegrityError, match="the ledger lost a sealed entry"):
        prereg.ledger_entries()
    toylab.write_hyp("sum", "a + b")
    toylab.write_hyp("prod", "a * b")
    assert outcome(toylab, paths, made, git_head=side).startswith("refused")
