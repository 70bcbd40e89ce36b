"""Sealing hypotheses: ledger chain, seal commits, and what counts as tampering."""

import hashlib
import json
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import ledger, prereg
from probelab.errors import IntegrityError, UsageError
from probelab.notary.rules import Rule

# ---- sealing ------------------------------------------------------------------------------


def test_seal_appends_chained_entry_and_makes_one_commit(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    (toylab.root / "notes.txt").write_text("unrelated work in progress\n")
    toylab.git("add", "notes.txt")  # staged, but not part of the seal
    commits_before, head_before = toylab.commit_count(), toylab.head()

    entry = prereg.seal(path)

    lines = toylab.ledger.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    on_disk = json.loads(lines[0])
    assert on_disk == entry
    assert entry["hash"] == ledger.entry_hash(entry)
    assert entry["seq"] == 1 and entry["prev"] == ledger.GENESIS
    assert entry["path"] == "preregistrations/toy/sum.toml"
    assert entry["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()

    assert toylab.commit_count() == commits_before + 1
    head = toylab.head()
    assert toylab.git("rev-parse", "HEAD~1") == head_before
    message = toylab.git("log", "-1", "--format=%B")
    assert f"probelab-seal: {entry['hash']}" in message
    changed = set(toylab.git("show", "--name-only", "--format=", head).splitlines())
    assert changed == {"preregistrations/toy/sum.toml", "preregistrations/LEDGER.jsonl"}
    assert toylab.git("show", f"{head}:preregistrations/toy/sum.toml") == \
        path.read_text().strip()
    assert toylab.git("status", "--porcelain", "--", "preregistrations") == ""
    assert toylab.git("status", "--porcelain", "--", "notes.txt") == "A  notes.txt"

    rows = prereg.verify_seals()
    assert [(r["id"], r["ok"], r["commit"], r["problems"]) for r in rows] == \
        [("sum", True, head, [])]


def test_second_seal_chains_to_the_first(toylab: ToyLab) -> None:
    first = prereg.seal(toylab.write_hyp("one", "a"))
    second = prereg.seal(toylab.write_hyp("two", "b"))
    assert second["seq"] == 2 and second["prev"] == first["hash"]
    ledger.verify_chain(ledger.read(toylab.ledger))
    assert all(r["ok"] for r in prereg.verify_seals())
    assert toylab.commit_count() == 3


def test_sealing_the_same_file_twice_is_refused(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    prereg.seal(path)
    before, commits = toylab.ledger.read_bytes(), toylab.commit_count()
    with pytest.raises(UsageError, match="already sealed"):
        prereg.seal(path)
    assert toylab.ledger.read_bytes() == before
    assert toylab.commit_count() == commits


def test_a_second_file_with_a_sealed_id_is_refused(toylab: ToyLab) -> None:
    """A file is named after its id, so a second file with a sealed id cannot exist."""
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    other = toylab.write_hyp("sum", "a ^ b", filename="sum-again.toml")
    with pytest.raises(UsageError, match=r"its id is 'sum', so the file is sum\.toml"):
        prereg.seal(other)
    assert len(ledger.read(toylab.ledger)) == 1


def test_sealing_outside_the_probe_folder_is_refused(toylab: ToyLab) -> None:
    wrong_folder = toylab.write_hyp("sum", "a + b", folder=toylab.root / "preregistrations")
    with pytest.raises(UsageError, match="preregistrations/toy/"):
        prereg.seal(wrong_folder)
    other_probe_folder = toylab.write_hyp(
        "sum2", "a + b", folder=toylab.root / "preregistrations" / "byte-perm")
    with pytest.raises(UsageError, match="preregistrations/toy/"):
        prereg.seal(other_probe_folder)
    assert not toylab.ledger.exists()


def test_sealing_a_file_outside_the_lab_is_refused(toylab: ToyLab, tmp_path: Path) -> None:
    outside = toylab.write_hyp("sum", "a + b", folder=tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="outside the lab"):
        prereg.seal(outside)
    # A symlink inside the probe folder pointing outside the lab is outside too.
    link = toylab.root / "preregistrations" / "toy" / "sum.toml"
    link.symlink_to(outside)
    with pytest.raises(UsageError):
        prereg.seal(link)
    assert not toylab.ledger.exists()


def test_unknown_kernel_is_refused_at_seal(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b", kernels=["nosuch"])
    with pytest.raises(UsageError, match="nosuch"):
        prereg.seal(path)
    assert not toylab.ledger.exists()


def test_a_target_the_probe_does_not_cover_is_refused_at_seal(toylab: ToyLab) -> None:
    """mfma-fp8-gfx942's first files named gfx950, which only its sibling probe targets: a
    claim that can never be scored. Seal now refuses a named target the probe lacks."""
    path = toylab.write_hyp("sum", "a + b")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\ntargets = ["gfx950"]'))
    with pytest.raises(UsageError, match=r"claims \['gfx950'\], which toy does not target"):
        prereg.seal(path)
    assert not toylab.ledger.exists()
    path.write_text(path.read_text().replace('["gfx950"]', '["sm_90", "sm_1*"]'))
    assert prereg.seal(path)["hypothesis"] == "sum"  # named and covered, or a pattern


def test_parent_must_be_sealed(toylab: ToyLab) -> None:
    path = toylab.write_hyp("v2", "a + b", parent="v1")
    with pytest.raises(UsageError, match="parent"):
        prereg.seal(path)
    assert not toylab.ledger.exists()
    commits = toylab.commit_count()
    # A parent that exists as a file but was never sealed does not count either.
    toylab.write_hyp("v1", "a")
    with pytest.raises(UsageError, match="parent"):
        prereg.seal(path)
    assert toylab.commit_count() == commits


def test_amendment_with_sealed_parent(toylab: ToyLab) -> None:
    prereg.seal(toylab.write_hyp("v1", "a"))
    entry = prereg.seal(toylab.write_hyp("v2", "a + b", parent="v1"))
    assert entry["parent"] == "v1" and entry["seq"] == 2
    assert all(r["ok"] for r in prereg.verify_seals())


def test_a_mistaken_seal_is_superseded_in_the_open(toylab: ToyLab) -> None:
    """README's procedure for a mistaken seal: it stays, and a corrected file naming it as
    `parent` is sealed beside it. `verify` scores both (the slip refuted: a result, exit 0);
    deleting the slip instead is a problem (exit 3)."""
    slip = toylab.write_hyp("sum", "a * b")
    prereg.seal(slip)
    prereg.seal(toylab.write_hyp("sum-v2", "a + b", parent="sum"))
    toylab.as_measured(toylab.sim_dataset())
    result = invoke("verify", "--json")
    assert result.exit_code == 0, result.stdout
    verdicts = {c["hypothesis"]: c["verdict"] for c in json.loads(result.stdout)["checks"]}
    assert verdicts == {"sum": "REFUTED on 126 of 128 cells", "sum-v2": "CONFIRMED"}
    slip.unlink()
    assert invoke("verify").exit_code == 3


def test_seal_refuses_a_ledger_with_uncommitted_changes(toylab: ToyLab) -> None:
    prereg.seal(toylab.write_hyp("one", "a"))
    prereg.seal(toylab.write_hyp("two", "b"))
    # CRLF line ends: every entry and the chain stay valid, but the file is not committed.
    toylab.ledger.write_bytes(toylab.ledger.read_bytes().replace(b"\n", b"\r\n"))
    before = toylab.ledger.read_bytes()
    with pytest.raises(IntegrityError, match="uncommitted"):
        prereg.seal(toylab.write_hyp("three", "a + b"))
    assert toylab.ledger.read_bytes() == before


# ---- ledger tampering ---------------------------------------------------------------------


@pytest.fixture
def three_seals(toylab: ToyLab) -> list[dict]:
    return [prereg.seal(toylab.write_hyp(name, expr))
            for name, expr in (("one", "a"), ("two", "b"), ("three", "a + b"))]


def _lines(lab: ToyLab) -> list[str]:
    return lab.ledger.read_text(encoding="utf-8").splitlines()


def _write(lab: ToyLab, lines: list[str]) -> None:
    lab.ledger.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _verify(lab: ToyLab) -> None:
    ledger.verify_chain(ledger.read(lab.ledger))


def test_intact_ledger_verifies(toylab: ToyLab, three_seals: list[dict]) -> None:
    _verify(toylab)
    assert [r["ok"] for r in prereg.verify_seals()] == [True, True, True]


def test_rewritten_line_is_detected(toylab: ToyLab, three_seals: list[dict]) -> None:
    lines = _lines(toylab)
    entry = json.loads(lines[1])
    entry["sealed_at"] = "2000-01-01T00:00:00+00:00"
    lines[1] = ledger.canonical(entry).decode()
    _write(toylab, lines)
    with pytest.raises(IntegrityError, match=r"line 2.*rewritten"):
        _verify(toylab)
    with pytest.raises(IntegrityError):
        prereg.verify_seals()


def test_reordered_lines_are_detected(toylab: ToyLab, three_seals: list[dict]) -> None:
    lines = _lines(toylab)
    lines[0], lines[1] = lines[1], lines[0]
    _write(toylab, lines)
    with pytest.raises(IntegrityError, match="line 1"):
        _verify(toylab)


def test_duplicated_line_is_detected(toylab: ToyLab, three_seals: list[dict]) -> None:
    lines = _lines(toylab)
    _write(toylab, [*lines, lines[-1]])
    with pytest.raises(IntegrityError, match="line 4"):
        _verify(toylab)


def test_duplicate_with_renumbered_chain_is_detected(toylab: ToyLab,
                                                     three_seals: list[dict]) -> None:
    # A well-formed 4th entry (right seq, prev and hash) that seals one path a second time.
    lines = _lines(toylab)
    copy = json.loads(lines[0])
    copy |= {"seq": 4, "prev": json.loads(lines[-1])["hash"]}
    copy["hash"] = ledger.entry_hash(copy)
    _write(toylab, [*lines, ledger.canonical(copy).decode()])
    with pytest.raises(IntegrityError, match="sealed twice"):
        _verify(toylab)


@pytest.mark.parametrize("index", [0, 1])
def test_deleted_line_is_detected(toylab: ToyLab, three_seals: list[dict], index: int) -> None:
    lines = _lines(toylab)
    del lines[index]
    _write(toylab, lines)
    with pytest.raises(IntegrityError, match=f"line {index + 1}"):
        _verify(toylab)


def test_forged_line_with_recomputed_hash_breaks_the_next_link(
        toylab: ToyLab, three_seals: list[dict]) -> None:
    lines = _lines(toylab)
    entry = json.loads(lines[0])
    entry["sealed_at"] = "2000-01-01T00:00:00+00:00"
    entry["hash"] = ledger.entry_hash(entry)  # the line itself is self-consistent
    lines[0] = ledger.canonical(entry).decode()
    _write(toylab, lines)
    ledger.verify_chain(ledger.read(toylab.ledger)[:1])  # line 1 alone passes...
    with pytest.raises(IntegrityError, match="line 2: chain broken"):
        _verify(toylab)  # ...but line 2 no longer names it


def test_forged_last_line_is_caught_by_the_seal_commits(toylab: ToyLab,
                                                        three_seals: list[dict]) -> None:
    # Rewriting the last line and recomputing its hash keeps the chain valid; the seal
    # commit (whose message names the original hash) is what catches it.
    lines = _lines(toylab)
    entry = json.loads(lines[-1])
    entry["sealed_at"] = "2000-01-01T00:00:00+00:00"
    entry["hash"] = ledger.entry_hash(entry)
    lines[-1] = ledger.canonical(entry).decode()
    _write(toylab, lines)
    _verify(toylab)
    # The history still names the original hash, which the ledger no longer holds.
    with pytest.raises(IntegrityError, match="lost a sealed entry"):
        prereg.verify_seals()
    assert prereg.seal_commit(entry) is None  # and no commit carries the forged one


def test_whole_forged_chain_is_caught_by_the_seal_commits(toylab: ToyLab,
                                                          three_seals: list[dict]) -> None:
    entries = ledger.read(toylab.ledger)
    entries[0]["sealed_at"] = "2000-01-01T00:00:00+00:00"
    prev = ledger.GENESIS
    for e in entries:
        e["prev"] = prev
        e["hash"] = prev = ledger.entry_hash(e)
    _write(toylab, [ledger.canonical(e).decode() for e in entries])
    _verify(toylab)
    with pytest.raises(IntegrityError, match="lost a sealed entry"):
        prereg.verify_seals()
    assert all(prereg.seal_commit(e) is None for e in entries)


def test_renumbered_chain_is_detected(toylab: ToyLab, three_seals: list[dict]) -> None:
    # Hashes and links all consistent, but the numbering does not start at 1.
    entries = ledger.read(toylab.ledger)
    prev = ledger.GENESIS
    for e in entries:
        e["seq"] += 10
        e["prev"] = prev
        e["hash"] = prev = ledger.entry_hash(e)
    _write(toylab, [ledger.canonical(e).decode() for e in entries])
    with pytest.raises(IntegrityError, match="line 1: seq 11"):
        _verify(toylab)


@pytest.mark.parametrize("bad", ["not json", "{}", "[1, 2]", ""])
def test_malformed_line_is_detected(toylab: ToyLab, three_seals: list[dict], bad: str) -> None:
    lines = _lines(toylab)
    lines.insert(1, bad)
    _write(toylab, lines)
    with pytest.raises(IntegrityError, match="line 2"):
        ledger.read(toylab.ledger)


def test_ledger_that_is_not_utf8_is_an_integrity_error(toylab: ToyLab,
                                                       three_seals: list[dict]) -> None:
    toylab.ledger.write_bytes(toylab.ledger.read_bytes() + b"\xff\xfe\n")
    with pytest.raises(IntegrityError, match="unreadable"):
        ledger.read(toylab.ledger)


def test_truncated_ledger_is_detected(toylab: ToyLab, three_seals: list[dict]) -> None:
    _write(toylab, _lines(toylab)[:-1])
    toylab.git("commit", "-q", "-m", "drop a seal", "--", "preregistrations/LEDGER.jsonl")
    detected = False
    try:
        rows = prereg.verify_seals()
        detected = not all(r["ok"] for r in rows)
    except IntegrityError:
        detected = True
    assert detected


# ---- sealed files edited afterwards -------------------------------------------------------


def _edit_one_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    i = raw.index(b"a + b")
    raw[i + 2] = ord("-")  # "a + b" -> "a - b"
    path.write_bytes(bytes(raw))


def _whitespace_only(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\n")


def _utf16(path: Path) -> None:
    path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))


@pytest.mark.parametrize("edit", [_edit_one_byte, _whitespace_only, _utf16],
                         ids=["one-byte", "whitespace", "utf16"])
def test_edited_sealed_file_fails_verification(toylab: ToyLab, edit) -> None:
    path = toylab.write_hyp("sum", "a + b")
    prereg.seal(path)
    prereg.seal(toylab.write_hyp("other", "a"))
    edit(path)
    rows = {r["id"]: r for r in prereg.verify_seals()}
    assert rows["other"]["ok"] and not rows["sum"]["ok"]
    assert seal_rules() == {"other": set(), "sum": {Rule.SEAL_EDITED}}


def test_deleted_sealed_file_fails_verification(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    prereg.seal(path)
    path.unlink()
    (row,) = prereg.verify_seals()
    assert not row["ok"] and seal_rules() == {"sum": {Rule.SEAL_MISSING}}


def seal_rules() -> dict[str, set[Rule]]:
    """{sealed hypothesis: the rules its seal's problems fall under}."""
    record = prereg.Record.read()
    return {e["hypothesis"]: {f.rule for f in prereg.seal_findings(e, record)[0]}
            for e in record.entries}


def test_edit_committed_after_sealing_still_fails(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    prereg.seal(path)
    _edit_one_byte(path)
    toylab.git("commit", "-q", "-am", "tweak")
    (row,) = prereg.verify_seals()
    assert not row["ok"]


# ---- failed commits -----------------------------------------------------------------------


def test_failed_commit_restores_the_ledger(toylab: ToyLab) -> None:
    prereg.seal(toylab.write_hyp("one", "a"))
    before, commits = toylab.ledger.read_bytes(), toylab.commit_count()
    lock = toylab.root / ".git" / "index.lock"
    lock.write_text("")
    try:
        with pytest.raises(IntegrityError, match="could not commit"):
            prereg.seal(toylab.write_hyp("two", "b"))
    finally:
        lock.unlink()
    assert toylab.ledger.read_bytes() == before
    assert toylab.commit_count() == commits
    assert toylab.git("status", "--porcelain", "--", "preregistrations/LEDGER.jsonl") == ""
    # The lab is usable again: the same file now seals.
    entry = prereg.seal(toylab.root / "preregistrations" / "toy" / "two.toml")
    assert entry["seq"] == 2
    assert all(r["ok"] for r in prereg.verify_seals())


def test_failed_first_commit_leaves_no_ledger(toylab: ToyLab) -> None:
    lock = toylab.root / ".git" / "index.lock"
    lock.write_text("")
    try:
        with pytest.raises(IntegrityError):
            prereg.seal(toylab.write_hyp("one", "a"))
    finally:
        lock.unlink()
    assert not toylab.ledger.exists()


def test_rejecting_commit_hook_restores_ledger_and_index(toylab: ToyLab) -> None:
    prereg.seal(toylab.write_hyp("one", "a"))
    before, commits = toylab.ledger.read_bytes(), toylab.commit_count()
    hook = toylab.root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(IntegrityError):
        prereg.seal(toylab.write_hyp("two", "b"))
    assert toylab.ledger.read_bytes() == before
    assert toylab.commit_count() == commits
    assert toylab.git("status", "--porcelain", "--", "preregistrations/LEDGER.jsonl") == ""


@pytest.mark.parametrize("bad_id", ["x/y", "../up", "two words"])
def test_seal_refuses_ids_that_are_not_plain_names(toylab: ToyLab, bad_id: str) -> None:
    path = toylab.write_hyp(bad_id, "a + b", filename="bad.toml")
    with pytest.raises(UsageError):
        prereg.seal(path)
