"""`probelab import`: measurement branches (device runs, fleet nodes) appended onto the
archive's manifest by command, all of a branch or none, every conflict said."""

import json
import os
import shutil
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from toylab import ToyLab, invoke

from probelab import dataset, manifest, prereg
from probelab.verify import verify_archive


def remote_run(lab: ToyLab, name: str, hours: list[int], monkeypatch) -> Path:
    """A device run: a copy of the lab (as the device tool sends it), datasets measured and
    pinned there, `hours` from now, and the tar it sends back (datasets + its manifest)."""
    remote = lab.root.parent / name
    shutil.copytree(lab.root, remote, symlinks=True)
    there = ToyLab(remote)
    monkeypatch.setenv("PROBELAB_ROOT", str(remote))
    made = []
    for h in hours:
        when = datetime.now(UTC) + timedelta(hours=h)
        made.append(there.as_measured(there.sim_dataset(), name=f"{when:%Y%m%dT%H%M%SZ}.nc",
                                      utc=when.isoformat(timespec="seconds")))
    monkeypatch.setenv("PROBELAB_ROOT", str(lab.root))
    out = lab.root.parent / f"{name}.tar"
    with tarfile.open(out, "w") as tar:
        for path in made:
            tar.add(path, arcname=path.relative_to(remote).as_posix())
        tar.add(remote / "data" / "MANIFEST.jsonl", arcname="MANIFEST.jsonl")
    return out


def state(lab: ToyLab) -> tuple[bytes, list[str]]:
    """What an import may change: the manifest's bytes and the archive's files."""
    pins = manifest.manifest_path()
    return (pins.read_bytes() if pins.exists() else b"",
            sorted(p.relative_to(lab.root).as_posix() for p in lab.data.rglob("*.nc")))


@pytest.fixture
def sealed(toylab: ToyLab) -> ToyLab:
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    return toylab


def test_two_runs_from_one_commit_merge_one_after_the_other(sealed: ToyLab,
                                                            monkeypatch) -> None:
    """Both branches chain off the same pins; each is appended after whatever is here, the
    chain stays whole, and the merged archive verifies with every dataset checked."""
    first = remote_run(sealed, "run1", [1, 2], monkeypatch)
    second = remote_run(sealed, "run2", [3], monkeypatch)
    assert invoke("import", first, "--dry-run").exit_code == 0
    assert state(sealed)[1] == []  # a dry run writes nothing
    result = invoke("import", first)
    assert result.exit_code == 0 and "2 datasets imported" in result.stdout, result.stderr
    result = invoke("import", second, "--json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["imported"]) == 1
    again = invoke("import", first)
    assert again.exit_code == 0 and "0 datasets imported, 2 already pinned" in again.stdout
    pins = manifest.read()  # chain verified
    assert [p["seq"] for p in pins] == [1, 2, 3]
    sealed.git("add", "-A")
    sealed.git("commit", "-q", "-m", "imported")
    result = verify_archive()
    assert not result["problems"], result["problems"]
    assert [r["verdict"] for r in result["checks"]] == ["CONFIRMED"] * 3


def test_a_split_archive_is_read_in_order(sealed: ToyLab, monkeypatch) -> None:
    whole = remote_run(sealed, "run", [1, 2], monkeypatch).read_bytes()
    part = len(whole) // 3 + 1
    for n in range(3):
        (sealed.root.parent / f"measured.tar.{n:02d}").write_bytes(whole[n * part:(n + 1) * part])
    result = invoke("import", sealed.root.parent / "measured.tar.00")
    assert result.exit_code == 0 and "2 datasets imported" in result.stdout, result.stderr


@pytest.mark.parametrize("conflict", ["path-pinned", "content-pinned", "file-there",
                                      "edited", "simulated", "unknown-commit"])
def test_a_conflict_refuses_the_whole_branch_and_writes_nothing(
        sealed: ToyLab, monkeypatch, conflict: str) -> None:
    branch = remote_run(sealed, "run", [1, 2], monkeypatch)
    work = sealed.root.parent / "work"
    with tarfile.open(branch) as tar:
        tar.extractall(work, filter="data")
    pins = [json.loads(line) for line in (work / "MANIFEST.jsonl").read_text().splitlines()]
    victim = work / pins[-1]["path"]
    if conflict == "path-pinned":  # this archive pinned a dataset of its own at that path
        here = sealed.as_measured(sealed.sim_dataset(), name=victim.name)
        assert here.name == victim.name
    elif conflict == "content-pinned":  # the same content pinned here under another name
        (sealed.data / "toy" / "sm_90").mkdir(parents=True, exist_ok=True)
        copy = sealed.data / "toy" / "sm_90" / "copy.nc"
        copy.write_bytes(victim.read_bytes())
        sealed.pin(copy)
    elif conflict == "file-there":
        target = sealed.root / pins[-1]["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"not pinned")
    elif conflict == "edited":
        raw = bytearray(victim.read_bytes())
        raw[-100] ^= 1
        victim.write_bytes(bytes(raw))
    elif conflict == "simulated":  # a branch pinning a simulated dataset as if measured
        victim.write_bytes(sealed.sim_dataset().read_bytes())
        pins[-1] |= {"file_sha256": manifest.file_sha256(victim),
                     "content_sha256": dataset.load_hashed(victim)[1]}
        _rechain(work / "MANIFEST.jsonl", pins)
    elif conflict == "unknown-commit":
        ds = dataset.load(victim)
        prov = dataset.provenance(ds) | {"git_head": "ab" * 20}
        victim.unlink()
        dataset.save(ds, victim, prov)
        pins[-1] |= {"file_sha256": manifest.file_sha256(victim),
                     "content_sha256": dataset.stored_provenance(victim)["content_sha256"]}
        _rechain(work / "MANIFEST.jsonl", pins)
    before = state(sealed)
    result = invoke("import", work)
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert "nothing imported" in result.stderr and pins[-1]["path"] in result.stderr
    assert state(sealed) == before


def _rechain(path: Path, pins: list[dict]) -> None:
    from probelab import chain

    path.write_text("")
    entries: list[dict] = []
    for pin in pins:
        fields = {k: v for k, v in pin.items() if k not in ("seq", "prev", "hash")}
        entries.append(chain.append(path, entries, fields, manifest.FORMS))


@pytest.mark.parametrize("member", ["traversal", "absolute", "link"])
def test_an_unsafe_archive_is_refused_whole_before_use(sealed: ToyLab, monkeypatch,
                                                       member: str, tmp_path: Path) -> None:
    branch = remote_run(sealed, "run", [1], monkeypatch)
    with tarfile.open(branch, "a") as tar:
        info = tarfile.TarInfo({"traversal": "../../escaped", "absolute": "/tmp/escaped",
                                "link": "data/toy/link.nc"}[member])
        if member == "link":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
        else:
            info.size = 4
            tar.addfile(info, fileobj=__import__("io").BytesIO(b"evil"))
    before = state(sealed)
    result = invoke("import", branch)
    assert result.exit_code == 2 and "refused" in result.stderr, result.stderr
    assert state(sealed) == before
    assert not (sealed.root.parent.parent / "escaped").exists()


def test_a_source_that_is_no_branch_is_a_usage_error(sealed: ToyLab, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("import", empty).exit_code == 2
    assert invoke("import", tmp_path / "missing.tar").exit_code == 2
    junk = tmp_path / "junk.tar"
    junk.write_bytes(os.urandom(2048))
    assert invoke("import", junk).exit_code == 2
