"""`probelab import`: a measurement made elsewhere (a device run on a copy of the tree
without git history, a fleet node) appended onto this archive, all or nothing. A branch of
the manifest is taken whatever its prefix (a copy of ours, or a fresh chain); everything
that would make an edited, simulated, foreign or colliding dataset count is refused with
one line and nothing written; tars are read within bounds and never trusted for paths."""

import contextlib
import io
import itertools
import json
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toylab import DELETE, MEASURED, ToyLab, copy_probe, invoke

from probelab import chain, dataset, fleet, manifest, merge, source
from probelab.probe import catalog
from probelab.verify import verify_archive

_utc = itertools.count()


def _forget() -> None:
    """Probe modules are cached by folder name: load the current lab's own copies."""
    for name in [m for m in sys.modules if m.startswith("probelab_probe_")]:
        sys.modules.pop(name)
    catalog.cache_clear()


@contextlib.contextmanager
def device(lab: ToyLab, monkeypatch: pytest.MonkeyPatch, name: str = "device",
           archive: bool = True) -> Iterator[ToyLab]:
    """A copy of the lab's working tree as the device machine gets it: no git history,
    PROBELAB_GIT_HEAD naming the lab's commit (clean), and with `archive` its data/ (the
    manifest too), else no data/ at all. Inside the block the copy is the lab."""
    copy = lab.root.parent / name
    skip = [".git", "sim-data", *([] if archive else ["data"])]
    shutil.copytree(lab.root, copy, ignore=shutil.ignore_patterns(*skip))
    with monkeypatch.context() as m:
        m.setenv("PROBELAB_ROOT", str(copy))
        m.setenv("PROBELAB_GIT_HEAD", lab.head())
        m.setenv("PROBELAB_GIT_DIRTY", "0")
        m.chdir(copy)
        _forget()
        try:
            yield ToyLab(copy)
        finally:
            _forget()


def measured(lab: ToyLab, *names: str, **overrides: Any) -> list[Path]:
    """TEST FIXTURE: measured-looking toy datasets (toylab.as_measured) pinned in the lab's
    manifest, each of its own contents (its own measurement time)."""
    return [lab.as_measured(lab.sim_dataset(), name=name, **{
        "utc": f"2030-01-01T00:{next(_utc) % 60:02d}:00+00:00"} | overrides) for name in names]


def committed(lab: ToyLab, message: str = "measurement") -> None:
    lab.git("add", "-A")
    lab.git("commit", "-q", "--allow-empty", "-m", message)


def state(root: Path) -> dict[str, bytes | None]:
    """Everything under data/ (folders as None) and in the staging folder."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for base in (root / "data", root / ".probelab-staging")
            for p in sorted(base.rglob("*"))}


def imported(*args: Any):
    result = invoke("import", *args)
    assert result.exit_code == 0, result.stderr
    return result


def refused(src: Path, code: int, said: str, root: Path) -> str:
    """Import `src`: exit `code`, `said` on exactly one line of stderr (a problem, or the
    error itself), nothing written. The lines of stderr."""
    before = state(root)
    result = invoke("import", src)
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len([line for line in lines if said in line]) == 1, lines
    assert len(lines) == (2 if code == 3 else 1), lines  # the problem, then "nothing imported"
    assert result.stdout == "" and state(root) == before
    return result.stderr


def rel(path: Path) -> str:
    return "/".join(path.parts[-4:])


# ---- a branch imported ----------------------------------------------------------------------


def test_a_branch_on_a_copy_of_our_manifest_is_imported_and_counts(toylab: ToyLab,
                                                                   monkeypatch) -> None:
    (ours,) = measured(toylab, "20300101T000000Z.nc")
    committed(toylab)
    with device(toylab, monkeypatch) as dev:
        theirs = measured(dev, "20300101T000001Z.nc", "20300101T000002Z.nc")
        branch = manifest.read()
    assert [e["seq"] for e in branch] == [1, 2, 3]  # our line, then the device's two
    result = imported(dev.root)
    assert result.stdout.splitlines() == [f"imported {rel(p)}" for p in theirs] + [
        f"2 datasets imported from {dev.root} (1 already pinned here)"]
    assert manifest.read() == branch  # the same prefix: the very lines the device wrote
    for path in theirs:
        assert (toylab.root / rel(path)).read_bytes() == path.read_bytes()
    assert verify_archive()["problems"] == []
    committed(toylab, "import")
    assert verify_archive()["problems"] == []
    assert ours.is_file()


def test_a_fresh_chain_from_a_tree_without_the_archive_is_rechained_onto_ours(
        toylab: ToyLab, monkeypatch) -> None:
    measured(toylab, "20300101T000000Z.nc")
    committed(toylab)
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc", "20300101T000002Z.nc")
        branch = manifest.read()
    assert [e["seq"] for e in branch] == [1, 2] and branch[0]["prev"] == chain.GENESIS
    imported(dev.root)
    pins = manifest.read()  # chain verified
    assert [e["seq"] for e in pins] == [1, 2, 3]
    for mine, theirs in zip(pins[1:], branch, strict=True):  # the same pin, a new place
        assert {k: mine[k] for k in merge.PIN_KEYS} == {k: theirs[k] for k in merge.PIN_KEYS}
        assert mine["hash"] != theirs["hash"]
    assert verify_archive()["problems"] == []


def test_importing_again_is_a_clean_no_op(toylab: ToyLab, monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc", "20300101T000002Z.nc")
    imported(dev.root)
    before = state(toylab.root)
    again = imported(dev.root)
    assert again.stdout == f"0 datasets imported from {dev.root} (2 already pinned here)\n"
    assert state(toylab.root) == before


def test_two_branches_from_one_base_merge_one_after_the_other(toylab: ToyLab,
                                                              monkeypatch) -> None:
    measured(toylab, "20300101T000000Z.nc")
    committed(toylab)
    with device(toylab, monkeypatch, "device-a") as a:
        from_a = measured(a, "20300101T000001Z.nc", "20300101T000002Z.nc")
    with device(toylab, monkeypatch, "device-b") as b:
        from_b = measured(b, "20300101T000003Z.nc")
    imported(a.root)
    result = imported(b.root)  # its line 2 is not our line 2 (a's) any more: still a branch
    assert result.stdout.splitlines() == [f"imported {rel(from_b[0])}",
                                          f"1 dataset imported from {b.root} (1 already "
                                          "pinned here)"]
    assert [e["path"] for e in manifest.read()][1:] == [rel(p) for p in from_a + from_b]
    committed(toylab, "both")
    assert verify_archive()["problems"] == []
    imported(a.root)  # and each again: nothing new
    assert len(manifest.read()) == 4


def test_dry_run_and_json_say_what_would_be_imported_and_write_nothing(
        toylab: ToyLab, monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        (path,) = measured(dev, "20300101T000001Z.nc")
        (pin,) = manifest.read()
    before = state(toylab.root)
    dry = imported(dev.root, "--dry-run")
    assert dry.stdout.splitlines() == [f"would import {rel(path)}",
                                       f"1 dataset would be imported from {dev.root}"]
    assert state(toylab.root) == before
    doc = json.loads(imported(dev.root, "--dry-run", "--json").stdout)
    assert doc["dry_run"] and doc["imported"] == [{k: pin[k] for k in merge.PIN_KEYS}]
    doc = json.loads(imported(dev.root, "--json").stdout)
    assert [e["path"] for e in doc["imported"]] == [rel(path)] and doc["problems"] == []
    assert doc["imported"] == manifest.read()


# ---- what does not count, and what collides: one line each, nothing written ------------------


def _forged_manifest(dev: ToyLab, **changes: Any) -> None:
    """Replace the device's manifest by a fresh chain of its pins, each with `changes`."""
    pins = manifest.read()
    manifest.manifest_path().unlink()
    chain.extend(manifest.manifest_path(), [], [{k: e[k] for k in merge.PIN_KEYS} | changes
                                                for e in pins], manifest.FORMS)


def _moved_to_another_target(dev: ToyLab, path: Path) -> None:
    other = path.parents[1] / "sm_80" / path.name
    other.parent.mkdir()
    path.rename(other)
    _forged_manifest(dev, path=rel(other), target="sm_80")


def _edited(dev: ToyLab, path: Path) -> None:
    ds = dataset.load(path)
    ds["value"].values[0, 0, 0] += 1
    dataset.save(ds, path, dataset.provenance(ds))  # a valid content hash: not its pin's


NOT_COUNTING = [  # (case, provenance overrides, then done to the device's copy, said)
    ("simulated", {"simulated": True}, None, "it is simulated"),
    ("flag flipped", {"backend": "sim"}, None, "its backend is 'sim', which measures nothing"),
    ("unknown commit", {"git_head": "1" * 40}, None, "which is no commit this repository has"),
    ("no commit", {"git_head": DELETE}, None, "made at None, which is no commit"),
    ("dirty, no code tree", {"git_dirty": True, "code_tree": DELETE}, None,
     "made in a dirty tree and records no code_tree"),
    ("edited after its pin", {}, _edited, "its bytes are not the file its pin names"),
    ("misplaced", {}, _moved_to_another_target,
     "it sits at toy/sm_80/, but its provenance says it is a 'toy' dataset of 'sm_90'"),
    ("file missing", {}, lambda dev, path: path.unlink(), "the source does not hold the file"),
]


@pytest.mark.parametrize("case, overrides, after, said", NOT_COUNTING,
                         ids=[case for case, *_ in NOT_COUNTING])
def test_a_dataset_that_would_not_count_here_is_refused(toylab: ToyLab, monkeypatch, case,
                                                        overrides, after, said) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        (path,) = measured(dev, "20300101T000001Z.nc", **overrides)
        if after:
            after(dev, path)
    refused(dev.root, 3, said, toylab.root)


def test_a_broken_source_chain_is_refused(toylab: ToyLab, monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc")
    text = (dev.data / manifest.NAME).read_text()
    (dev.data / manifest.NAME).write_text(text.replace('"pinned_at":"', '"pinned_at":"1'))
    result = invoke("import", dev.root)
    assert result.exit_code == 3 and "content does not match its hash" in result.stderr
    assert not list((toylab.data).rglob("*.nc"))


NAME = "20300101T000009Z.nc"


def _path_pinned_here(lab: ToyLab, dev: ToyLab) -> None:
    measured(lab, NAME)  # ours: another measurement under the same name


def _a_file_is_there(lab: ToyLab, dev: ToyLab) -> None:
    (lab.data / "toy" / "sm_90").mkdir(parents=True)
    (lab.data / "toy" / "sm_90" / NAME).write_bytes(b"not pinned")


def _pinned_twice_in_the_branch(lab: ToyLab, dev: ToyLab) -> None:
    with device_of(dev):
        (pin,) = manifest.read()
        chain.append(manifest.manifest_path(), [pin], {k: pin[k] for k in merge.PIN_KEYS}
                     | {"pinned_at": "2030-01-02T00:00:00+00:00"}, manifest.FORMS)


def _copied_in_the_branch(lab: ToyLab, dev: ToyLab) -> None:
    with device_of(dev):
        copy = dev.data / "toy" / "sm_90" / "20300101T000010Z.nc"
        shutil.copy(dev.data / "toy" / "sm_90" / NAME, copy)
        dev.pin(copy)


@contextlib.contextmanager
def device_of(lab: ToyLab) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PROBELAB_ROOT", str(lab.root))
        yield


@pytest.mark.parametrize("setup, said", [
    (_path_pinned_here, f"data/toy/sm_90/{NAME}: already pinned here, as another dataset"),
    (_a_file_is_there, f"data/toy/sm_90/{NAME}: a file that no pin names is already there"),
    (_pinned_twice_in_the_branch, f"data/toy/sm_90/{NAME}: one path pinned 2 times in the "
                                  "branch"),
    (_copied_in_the_branch, "one content pinned 2 times in the branch"),
], ids=["path pinned here", "file there", "pinned twice in the branch", "copied in the branch"])
def test_a_branch_that_collides_is_refused(toylab: ToyLab, monkeypatch, setup, said) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, NAME)
    setup(toylab, dev)
    refused(dev.root, 3, said, toylab.root)


def test_a_copy_of_a_dataset_pinned_here_is_no_replication(toylab: ToyLab,
                                                           monkeypatch) -> None:
    (ours,) = measured(toylab, "20300101T000000Z.nc")
    committed(toylab)
    with device(toylab, monkeypatch) as dev:  # a copy of the archive: our dataset in it too
        copy = dev.data / "toy" / "sm_90" / "20300101T000001Z.nc"
        shutil.copy(dev.data / "toy" / "sm_90" / ours.name, copy)
        dev.pin(copy)
    refused(dev.root, 3, f"its contents are already pinned here as {rel(ours)}: a copy is "
            "not a replication", toylab.root)


# ---- tars -----------------------------------------------------------------------------------


def tar_of(dev: ToyLab, out: Path, *, top_manifest: bool = False,
           extra: tuple[tarfile.TarInfo, bytes | None] | None = None) -> Path:
    """A measured.tar as measure_h200.sh makes it: the datasets and the manifest under their
    data/ paths (or the manifest at the top, as before), logs, a verdict file."""
    with tarfile.open(out, "w") as tar:
        for path in sorted(dev.data.rglob("*.nc")):
            tar.add(path, rel(path))
        tar.add(dev.data / manifest.NAME,
                manifest.NAME if top_manifest else f"data/{manifest.NAME}")
        for name, data in (("pytest.log", b"all passed\n"),
                           ("data/toy/sm_90/x.sum.verdict.json", b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra:
            tar.addfile(extra[0], io.BytesIO(extra[1]) if extra[1] is not None else None)
    return out


def split(tar: Path, size: int) -> Path:
    data = tar.read_bytes()
    for n, at in enumerate(range(0, len(data), size)):
        tar.with_name(f"{tar.name}.{n:02d}").write_bytes(data[at:at + size])
    return tar.with_name(f"{tar.name}.00")


def test_a_tar_a_split_tar_and_an_older_tar_import_like_the_folder(toylab: ToyLab,
                                                                    monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        paths = measured(dev, "20300101T000001Z.nc", "20300101T000002Z.nc")
    tar = tar_of(dev, toylab.root.parent / "measured.tar")
    first = split(tar, 8192)
    assert first.with_name("measured.tar.02").is_file()
    result = imported(first)
    assert result.stdout.splitlines()[:2] == [f"imported {rel(p)}" for p in paths]
    assert "1 verdict file left out: verdicts are never imported" in result.stderr
    assert not list(toylab.data.rglob("*.verdict.json"))
    assert imported(tar).stdout.startswith("0 datasets imported")
    old = tar_of(dev, toylab.root.parent / "old.tar", top_manifest=True)
    assert imported(old).stdout.startswith("0 datasets imported")
    assert verify_archive()["problems"] == []


def test_a_later_part_or_a_cut_split_tar_is_refused(toylab: ToyLab, monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc")
    first = split(tar_of(dev, toylab.root.parent / "measured.tar"), 8192)
    refused(first.with_name("measured.tar.01"), 2, "give its first part, measured.tar.00",
            toylab.root)
    first.with_name("measured.tar.02").unlink()
    refused(first, 2, "is not a tar file that can be read whole", toylab.root)


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 3,
            link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = size if kind == tarfile.REGTYPE else 0
    return info, b"x" * size if kind == tarfile.REGTYPE else None


@pytest.mark.parametrize("extra, said", [
    (_member("data/toy/sm_90/a.nc", tarfile.SYMTYPE, link="/etc/passwd"), "a symbolic link"),
    (_member("data/toy/sm_90/b.nc", tarfile.LNKTYPE, link="data/MANIFEST.jsonl"),
     "a hard link"),
    (_member("/tmp/probelab-import-evil.nc"), "an absolute path"),
    (_member("data/toy/../../../../probelab-import-evil.nc"), "climbs out of the archive"),
    (_member("data/toy/sm_90/c.nc", tarfile.CHRTYPE), "a device"),
    (_member("data/toy/sm_90/d.nc", tarfile.FIFOTYPE), "a fifo"),
    (_member("data/MANIFEST.jsonl"), "appears twice"),
], ids=["symlink", "hardlink", "absolute", "dotdot", "device", "fifo", "twice"])
def test_a_tar_member_that_is_no_plain_file_inside_is_refused(toylab: ToyLab, monkeypatch,
                                                              extra, said) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc")
    tar = tar_of(dev, toylab.root.parent / "measured.tar", extra=extra)
    refused(tar, 2, said, toylab.root)
    assert not list(Path("/tmp").glob("probelab-import-evil*"))
    assert not list(toylab.root.parent.glob("probelab-import-evil*"))


@pytest.mark.parametrize("bound, value, said", [
    ("MAX_MEMBERS", 3, "holds more than 3 members"),
    ("MAX_TOTAL_BYTES", 10_000, "holds more than 10,000 bytes"),
    ("MAX_FILE_BYTES", 1_000, "more than an import takes (1,000"),
    ("MAX_MANIFEST_BYTES", 100, "more than an import takes (100"),
    ("MAX_HEADER_BYTES", 600, "a tar header of"),
], ids=["members", "bytes", "one-file", "manifest", "header"])
def test_a_tar_past_its_bounds_is_refused_from_its_headers(toylab: ToyLab, monkeypatch,
                                                          bound, value, said) -> None:
    """A tar bomb: every bound judged from the headers, before the data are read."""
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        measured(dev, "20300101T000001Z.nc", "20300101T000002Z.nc")
    info, data = _member("data/" + "x" * 700 + ".log")
    tar = tar_of(dev, toylab.root.parent / "measured.tar", extra=(info, data))
    monkeypatch.setattr(source, bound, value)
    read: list[int] = []
    real = source._copy
    monkeypatch.setattr(source, "_copy", lambda *a: read.append(1) or real(*a))
    refused(tar, 2, said, toylab.root)
    if bound in ("MAX_FILE_BYTES", "MAX_MANIFEST_BYTES"):  # at its header, before its data
        assert len(read) == (0 if bound == "MAX_FILE_BYTES" else 2)


def test_what_is_not_a_source_is_refused(toylab: ToyLab) -> None:
    (toylab.root.parent / "notes.txt").write_text("not a tar\n")
    (toylab.root.parent / "empty").mkdir()
    refused(toylab.root.parent / "nothing-here", 2, "is not a folder holding data/",
            toylab.root)
    refused(toylab.root.parent / "notes.txt", 2, "is not a tar file", toylab.root)
    refused(toylab.root.parent / "empty", 2, "holds no manifest", toylab.root)


def test_a_folder_source_reached_through_a_link_is_refused(toylab: ToyLab,
                                                           monkeypatch) -> None:
    committed(toylab, "base")
    with device(toylab, monkeypatch, archive=False) as dev:
        (path,) = measured(dev, "20300101T000001Z.nc")
    elsewhere = toylab.root.parent / "elsewhere"
    shutil.move(path.parent, elsewhere)
    path.parent.symlink_to(elsewhere)
    refused(dev.root, 2, "is reached through a link", toylab.root)


# ---- a sweep on a tree without the archive; the fleet's path --------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("archive", ["absent", "an empty manifest"])
def test_a_sweep_needs_no_archive_and_its_import_counts(toylab: ToyLab, monkeypatch,
                                                        archive) -> None:
    """A real measurement (a static probe, measured on the compiler) on a device-like copy
    whose data/ is absent or holds an empty manifest: the sweep starts the chain, and its
    import counts here."""
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        amdgpu.find_clang()
    except Exception as exc:  # any missing toolchain: the test cannot run
        pytest.skip(f"no AMDGPU clang: {exc}")
    from probelab.sweep import run_sweep

    copy_probe(toylab.root, "builtin_modifiers")
    committed(toylab, "a static probe")
    with device(toylab, monkeypatch, archive=False) as dev:
        if archive != "absent":
            dev.data.mkdir()
            (dev.data / manifest.NAME).write_text("")
        result = run_sweep("builtin-modifiers", target="gfx942")
        assert [e["path"] for e in manifest.read()] == [rel(result.path)]
    assert imported(dev.root).stdout.splitlines()[0] == f"imported {rel(result.path)}"
    committed(toylab, "import")
    assert verify_archive()["problems"] == []


def _fleet_reply(lab: ToyLab, out: Path) -> dict[str, Any]:
    """TEST FIXTURE: what a node returns for a cuda task: a measured-looking toy dataset
    made at the lab's commit, outside any archive."""
    ds = dataset.load(lab.sim_dataset())
    prov = dataset.provenance(ds) | MEASURED | {"utc": "2030-01-01T00:00:00+00:00"}
    prov["kernels"] = {k: v | {"evidence": {"ok": True, "fixture": True}}
                       for k, v in prov["kernels"].items()}
    dataset.save(ds, out, prov)
    return {"node": {"node_id": "n1", "host": "node-1"}, "relpath": f"toy/sm_90/{NAME}",
            "bytes": out.read_bytes(), "provenance": dataset.stored_provenance(out)}


def test_the_fleet_driver_lands_through_the_same_merge(toylab: ToyLab) -> None:
    """A node's measured dataset joins the archive as an import's does (a new name where
    the name is taken); the same bytes arriving again are a copy, not a replication."""
    from probelab.errors import IntegrityError

    committed(toylab, "base")
    task, commit = fleet.Task("toy", "sm_90", "cuda"), toylab.head()
    reply = _fleet_reply(toylab, toylab.root.parent / "arrived.nc")
    measured(toylab, NAME)  # another measurement already holds the name
    path = fleet.store(task, reply, commit)
    assert path == toylab.data / "toy" / "sm_90" / NAME.replace("Z.nc", "Z-2.nc")
    assert manifest.read()[-1]["path"] == rel(path) and path.read_bytes() == reply["bytes"]
    assert verify_archive()["problems"] == []
    before = state(toylab.root)
    with pytest.raises(IntegrityError, match=r"already pinned here as \S*Z-2\.nc: a copy"):
        fleet.store(task, reply, commit)
    assert state(toylab.root) == before
