"""Trust under attack, part 10: the on-disk cache. An entry counts only where it carries the
HMAC of this cache folder's own secret: one forged with the plain digest the cache used to
check, one copied from another cache folder, one planted as a link, a FIFO or a huge file,
is a miss, recomputed; a secret that is not private to the user turns the cache off."""

import hashlib
import json
import os
import secrets
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import cache, check, dataset, hypothesis, prereg, scoring
from probelab.notary.problems import rules
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.paths import cache_dir
from probelab.verify import verify_archive

FORMS = ["old-format", "plain-sha256", "another-secret"]


def forged(form: str, kind: str, key: str, payload: bytes) -> bytes:
    """An entry for `payload` as someone without this cache's secret can write one."""
    return {"old-format": lambda: hashlib.sha256(payload).hexdigest().encode(),  # as before
            "plain-sha256": lambda: hashlib.sha256(payload).digest(),  # a digest as the tag
            "another-secret": lambda: cache._tag(secrets.token_bytes(32), kind, key, payload),
            }[form]() + payload


def entries(kind: str) -> list[Path]:
    return sorted((cache_dir() / kind).glob("*.bin"))


def sealed(lab: ToyLab, hyp_id: str, expr: str) -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def measured(lab: ToyLab) -> Path:
    path = lab.as_measured(lab.sim_dataset())
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", f"measurement {path.name}")
    return path


def archived_verdict(hypothesis_id: str) -> str:
    (row,) = [r for r in verify_archive()["checks"] if r["hypothesis"] == hypothesis_id]
    return row["verdict"]


# ---- a forged answer never counts ---------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a_forged_scores_entry_cannot_turn_refuted_into_confirmed(toylab: ToyLab,
                                                                  form: str) -> None:
    """Issue 34: a rewritten scores entry with a valid digest turned REFUTED into CONFIRMED.
    The forgery below does exactly that where it carries the secret (what the cache cannot
    stop: whoever reads the user's key file); in every other form it is a miss."""
    right_path, wrong_path = sealed(toylab, "sum", "a + b"), sealed(toylab, "prod", "a * b")
    data = measured(toylab)
    right = check.check(right_path, data)
    for entry in entries("scores"):
        entry.unlink()
    assert check.check(wrong_path, data)["verdict"] == Outcome.REFUTED
    (entry,) = entries("scores")
    payload = json.loads(cache.lookup("scores", entry.stem))
    payload["kernels"] = {k: v["scores"] for k, v in right["kernels"].items()}
    lie = json.dumps(payload).encode()
    cache.store("scores", entry.stem, lie)
    assert check.check(wrong_path, data)["verdict"] == Outcome.CONFIRMED  # under the secret

    def forge() -> None:
        entry.write_bytes(forged(form, "scores", entry.stem, lie))

    forge()
    assert check.check(wrong_path, data)["verdict"] == Outcome.REFUTED
    forge()
    assert invoke("check", wrong_path, data).exit_code == 1
    forge()
    assert archived_verdict("prod").startswith("REFUTED")
    assert cache.lookup("scores", entry.stem) != lie  # and the miss rewrote it truthfully


@pytest.mark.parametrize("form", FORMS)
def test_a_forged_tables_entry_cannot_pass_a_seal_whose_meaning_changed(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """The sealed table hash filed again under the claim's key, after its evaluation
    changed (as an edited evaluator would): `prereg verify` and `verify` still evaluate."""
    sealed(toylab, "sum", "a + b")
    (entry,) = entries("tables")  # sealing evaluated it
    table_hash = cache.lookup("tables", entry.stem)
    real = hypothesis.claim_blocks

    def plus_one(compute):
        return lambda: (piece := compute()) and replace(piece, values=piece.values + 1)

    def shifted(*args, **kwargs):  # another meaning for the same file, grid and code files
        for block in real(*args, **kwargs):
            yield replace(block, compute=plus_one(block.compute))

    monkeypatch.setattr(hypothesis, "claim_blocks", shifted)
    monkeypatch.setattr(scoring, "claim_blocks", shifted)
    cache.store("tables", entry.stem, table_hash)
    assert prereg.verify_seals()[0]["ok"]  # what the entry would hide, were it trusted
    entry.write_bytes(forged(form, "tables", entry.stem, table_hash))
    record = prereg.Record.read()
    (sealed_entry,) = record.entries
    assert prereg.seal_findings(sealed_entry, record) == ([Finding(Rule.TABLE_CHANGED)], [])
    entry.write_bytes(forged(form, "tables", entry.stem, table_hash))
    assert invoke("prereg", "verify").exit_code == 3
    entry.write_bytes(forged(form, "tables", entry.stem, table_hash))
    assert Rule.TABLE_CHANGED in rules(verify_archive()["problems"])


@pytest.mark.parametrize("form", FORMS)
def test_a_forged_content_entry_cannot_hide_an_edited_dataset(toylab: ToyLab,
                                                              form: str) -> None:
    """The dataset's recorded content hash filed under the edited file's bytes. A simulated
    dataset has no pin: its content hash alone shows the edit, and with the earlier scores
    entry the forgery would pass the edited data as intact; it is a miss: TAMPERED."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.sim_dataset()
    assert check.check(hyp, data)["verdict"] == Outcome.NOT_EVIDENCE
    original = dataset.load_hashed(data)[1]
    ds = dataset.load(data)
    ds["value"].values[0, 3, 2] = 0  # one value, the provenance (and its hash) kept
    ds.to_netcdf(data, engine=dataset.ENGINE)
    for entry in entries("summary"):
        entry.unlink()
    dataset.load_hashed(data)
    (entry,) = entries("summary")  # the edited bytes' key: their summary, its content hash
    honest = dataset.Summary.from_json(cache.lookup("summary", entry.stem))
    recorded = replace(honest, content=original).to_json()  # the one it had before the edit
    cache.store("summary", entry.stem, recorded)
    assert check.check(hyp, data)["verdict"] == Outcome.NOT_EVIDENCE  # what it would hide
    entry.write_bytes(forged(form, "summary", entry.stem, recorded))
    judged = check.assess(hyp, data)
    assert (judged.outcome, judged.rules) == (Outcome.TAMPERED, {Rule.CONTENT_EDITED})
    entry.write_bytes(forged(form, "summary", entry.stem, recorded))
    assert invoke("check", hyp, data).exit_code == 3


def test_entries_copied_from_another_cache_folder_are_misses(
        toylab: ToyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry of one cache folder, copied into another (its own secret): all misses."""
    hyp = sealed(toylab, "sum", "a + b")
    data = measured(toylab)
    cold = check.check(hyp, data)
    source = cache_dir()
    other = tmp_path / "other-cache"
    copied = [(other / e.relative_to(source), e.read_bytes())
              for e in source.rglob("*.bin")]
    monkeypatch.setenv("PROBELAB_CACHE", str(other))
    assert check.check(hyp, data) == cold  # makes other's secret and its own entries
    for path, blob in copied:  # over other's own entries of the same keys
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
    assert all(cache.lookup(p.parent.name, p.stem) is None for p, _ in copied)
    assert check.check(hyp, data) == cold
    assert (other / cache.SECRET).read_bytes() != (source / cache.SECRET).read_bytes()


# ---- the secret ---------------------------------------------------------------------------


def test_the_secret_is_private_and_racing_writers_end_with_one(tmp_path: Path) -> None:
    """Eight writers at once (each would make its own): one secret, whole, read by all."""
    path = tmp_path / "cache" / cache.SECRET
    start = threading.Barrier(8)
    read: list[bytes | None] = []

    def one() -> None:
        start.wait()
        cache._create_secret(path)
        read.append(cache._read(path, cache.SECRET_BYTES, private=True))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = path.lstat()
    assert oct(st.st_mode & 0o777) == "0o600" and st.st_size == cache.SECRET_BYTES
    assert len(set(read)) == 1 and read[0] == path.read_bytes()
    assert os.listdir(path.parent) == [cache.SECRET]  # no temp file left


def _refused(folder: Path) -> None:
    """The cache in `folder` is off: every lookup a miss, nothing written, nothing said."""
    built: list[int] = []
    for _ in range(2):
        assert cache.cached_bytes("scores", "k" * 64, lambda: built.append(1) or b"x") == \
            (b"x", False)
    assert built == [1, 1] and not (folder / "scores").exists()


@pytest.mark.parametrize("secret", ["group-readable", "world-writable", "short", "long",
                                    "symlink", "directory", "fifo", "not-mine"])
def test_a_secret_that_is_not_private_to_the_user_turns_the_cache_off(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, secret: str) -> None:
    folder = cache_dir()
    folder.mkdir(parents=True)
    path = folder / cache.SECRET
    good = tmp_path / "elsewhere.key"
    good.write_bytes(secrets.token_bytes(32))
    good.chmod(0o600)
    if secret == "symlink":
        path.symlink_to(good)
    elif secret == "directory":
        path.mkdir()
    elif secret == "fifo":
        os.mkfifo(path, 0o600)  # opened plainly, a read would wait forever
    else:
        path.write_bytes(secrets.token_bytes({"short": 16, "long": 33}.get(secret, 32)))
        path.chmod({"group-readable": 0o640, "world-writable": 0o602}.get(secret, 0o600))
    if secret == "not-mine":
        uid = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    before = path.lstat()
    _refused(folder)
    after = path.lstat()  # left as it was, never replaced
    assert (after.st_ino, after.st_mode, after.st_size) == \
        (before.st_ino, before.st_mode, before.st_size)


def test_a_cache_folder_that_cannot_hold_a_secret_is_off(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PROBELAB_CACHE", str(blocker / "cache"))
    _refused(blocker / "cache")


# ---- every read bounded -------------------------------------------------------------------


def test_an_entry_over_the_cap_is_a_miss_never_read(toylab: ToyLab,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 100)
    assert cache.cached_bytes("content", "a" * 64, lambda: b"s" * 100)[1] is False
    assert cache.lookup("content", "a" * 64) == b"s" * 100  # at the cap: kept
    big = b"b" * 101
    cache.store("content", "b" * 64, big)
    assert not (cache_dir() / "content" / f"{'b' * 64}.bin").exists()  # over it: not kept
    path = cache_dir() / "content" / f"{'b' * 64}.bin"
    path.write_bytes(cache._tag(cache._secret(cache_dir()), "content", "b" * 64, big) + big)
    asked: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    assert cache.lookup("content", "b" * 64) is None and asked == []  # fstat said enough


@pytest.mark.parametrize("planted", ["symlink", "fifo", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_a_miss(toylab: ToyLab, tmp_path: Path,
                                                       planted: str) -> None:
    cache.store("scores", "c" * 64, b"true answer")
    path = cache_dir() / "scores" / f"{'c' * 64}.bin"
    moved = tmp_path / "moved.bin"
    path.rename(moved)
    {"symlink": lambda: path.symlink_to(moved), "fifo": lambda: os.mkfifo(path),
     "directory": path.mkdir}[planted]()
    assert cache.lookup("scores", "c" * 64) is None  # a FIFO does not block the read
