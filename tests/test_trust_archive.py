"""Trust under attack, part 5: the archive. A measured dataset counts only as the file its
sweep saved, where the manifest pins it: moved, copied, merged over, linked, stripped,
deleted or passed off from a simulation, it is caught."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from toylab import DELETE, ToyLab, invoke

from probelab import dataset, manifest, prereg, retirement
from probelab.check import assess, check
from probelab.notary import words
from probelab.notary.rules import Rule
from probelab.verify import verify_archive


def sealed(lab: ToyLab, hyp_id: str = "sum", expr: str = "a + b") -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def committed(lab: ToyLab, message: str = "measurement") -> None:
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", message)


def problems() -> str:
    """verify's problems in words (for the few wording pins)."""
    return "\n".join(words.lines(verify_archive()["problems"]))


def found() -> list[tuple[str, Rule]]:
    """(where, rule) of every finding among verify's problems."""
    return [(p.at, f.rule) for p in verify_archive()["problems"] for f in p.findings]


def rules() -> set[Rule]:
    return {rule for _, rule in found()}


def edited_value(path: Path) -> None:
    """Change one value and save with a fresh, valid content hash."""
    ds = dataset.load(path)
    ds["value"].values[0, 0, 0] += 1
    dataset.save(ds, path, dataset.provenance(ds))


# ---- 3. written once, followed through renames, merges and links ---------------------------


def test_a_dataset_moved_and_edited_in_one_commit_is_caught(toylab: ToyLab) -> None:
    sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    moved = data.with_name("20200101T000000Z.nc")
    toylab.git("mv", str(data), str(moved))
    edited_value(moved)
    committed(toylab, "tidy names")
    said = found()
    assert (manifest.relative(data), Rule.PINNED_FILE_GONE) in said
    assert (manifest.relative(moved), Rule.UNPINNED) in said


def test_a_dataset_removed_then_added_edited_under_a_new_name_is_caught(
        toylab: ToyLab) -> None:
    sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    copy = data.with_name("20200101T000000Z.nc")
    shutil.copy(data, copy)
    toylab.git("rm", "-q", str(data))
    committed(toylab, "remove")
    edited_value(copy)
    committed(toylab, "a better run")
    assert {Rule.PINNED_FILE_GONE, Rule.UNPINNED} <= rules()


def test_an_edited_copy_merged_in_at_the_same_path_is_caught(toylab: ToyLab) -> None:
    """Two branches add one dataset name: the second copy is edited (and pinned as if it
    were measured). The merge resolves to it, and `verify --write` re-records verdicts."""
    sealed(toylab)
    base = toylab.head()
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    honest = data.read_bytes()
    toylab.git("checkout", "-q", "-b", "other", base)
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(honest)
    edited_value(data)
    toylab.pin(data)
    committed(toylab, "edited copy")
    toylab.git("checkout", "-q", "main")
    conflict = subprocess.run(["git", "merge", "-q", "--no-edit", "other"], cwd=toylab.root,
                              capture_output=True)
    assert conflict.returncode != 0  # add/add, in the dataset and in the manifest
    toylab.git("checkout", "--theirs", "--", "data")
    committed(toylab, "merge, taking theirs")
    assert data.read_bytes() != honest
    verify_archive(write=True)
    assert {Rule.REWRITTEN, Rule.MANIFEST_REWRITTEN} <= rules()  # and the manifest's history


def test_a_dataset_that_is_a_link_to_a_file_outside_is_refused(toylab: ToyLab,
                                                              tmp_path: Path) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    outside = tmp_path / "elsewhere.nc"
    shutil.move(data, outside)
    data.symlink_to(outside)
    assert Rule.ARCHIVE_LINK in rules()
    result = invoke("check", hyp, data)
    assert result.exit_code == 2 and "is not a file in the archive" in result.stderr
    assert invoke("check", hyp, outside).exit_code == 2  # nor is the file outside


def test_a_deleted_dataset_is_caught_even_with_its_pin_removed(toylab: ToyLab) -> None:
    """The file drawer: a refuted measurement removed, with its manifest line."""
    sealed(toylab, "sum", "a * b")
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    toylab.git("rm", "-q", str(data))
    assert Rule.PINNED_FILE_GONE in rules()
    lines = manifest.manifest_path().read_text().splitlines(keepends=True)
    manifest.manifest_path().write_text("".join(lines[:-1]))
    committed(toylab, "drop a bad run")
    assert "removed or changed 1 of its pins" in problems()  # pinned words
    assert Rule.MANIFEST_REWRITTEN in rules()


def test_copies_are_not_replications_nor_other_targets_data(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    copies = [data.with_name(f"2020010{n}T000000Z.nc") for n in (1, 2, 3)]
    elsewhere = toylab.data / "toy" / "sm_80" / data.name
    elsewhere.parent.mkdir()
    for copy in [*copies, elsewhere]:
        shutil.copy(data, copy)
    said = found()
    assert sorted(at for at, rule in said if rule == Rule.UNPINNED) == \
        sorted(map(manifest.relative, copies))
    assert (manifest.relative(elsewhere), Rule.MISPLACED) in said
    for copy in copies:
        toylab.pin(copy)  # pinned as if each were a sweep of its own
    assert "one content pinned 4 times" in problems()  # pinned words
    assert Rule.PINNED_TWICE in rules()
    assert assess(hyp, copies[0]).rules == {Rule.PINNED_AS_ANOTHER}


# ---- 4. every dataset has a pinned hash; none is counted without one -------------------------


def _old_generation(lab: ToyLab) -> Path:
    """A dataset as the first sweeps saved them: no content hash in the provenance."""
    data = lab.as_measured(lab.sim_dataset())
    ds = dataset.load(data)
    prov = {k: v for k, v in dataset.provenance(ds).items()
            if k not in (dataset.CONTENT_KEY, *dataset.GENERATION_KEYS)}
    ds.attrs["provenance"] = json.dumps(prov)
    data.unlink()
    ds.to_netcdf(data, engine=dataset.ENGINE)
    lines = manifest.manifest_path().read_text().splitlines(keepends=True)
    manifest.manifest_path().write_text("".join(lines[:-1]))  # pinned afresh, as migrated
    lab.pin(data)
    return data


def test_an_edit_to_a_dataset_without_a_content_hash_is_caught_by_its_pin(
        toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b + (1 if a == 0 and b == 0 else 0)")
    data = _old_generation(toylab)
    assert check(hyp, data)["verdict"] == "REFUTED"
    ds = dataset.load(data)
    ds["value"].values[0, 0, 0] += 1  # the one cell that refutes it
    data.unlink()
    ds.to_netcdf(data, engine=dataset.ENGINE)
    result = invoke("check", hyp, data, "--json", "--no-save")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["verdict"] == "TAMPERED"
    assert assess(hyp, data).rules == {Rule.BYTES_NOT_PINNED}


def test_stripping_the_content_hash_and_newer_keys_is_caught_by_the_pin(
        toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    ds = dataset.load(data)
    prov = {k: v for k, v in dataset.provenance(ds).items()
            if k not in (dataset.CONTENT_KEY, *dataset.GENERATION_KEYS)}
    ds.attrs["provenance"] = json.dumps(prov)  # now it looks like an old dataset
    data.unlink()
    ds.to_netcdf(data, engine=dataset.ENGINE)
    assert assess(hyp, data).rules == {Rule.BYTES_NOT_PINNED}


@pytest.mark.slow  # every dataset of the archive read and hashed: 116 of them, 65 s
def test_the_committed_archive_is_pinned_whole(repo_lab) -> None:
    """Every dataset in the repository's data/ has exactly one pin, and it holds: a retired
    one declaring more than a dataset's values are read at, by its bytes (as verify holds
    it), every other by its contents too."""
    pins = manifest.read()
    files = sorted(p for p in manifest.data_dir().rglob("*.nc"))
    assert sorted(manifest.relative(p) for p in files) == sorted(p["path"] for p in pins)
    assert manifest.duplicates(pins) == []
    retired = {e["path"] for e in retirement.read()}
    for path in files:
        if manifest.relative(path) in retired and \
                dataset.declared_bytes(path) > dataset.MAX_DATASET_BYTES:
            assert retirement.pinned_bytes_mismatch(path, pins) is None
            continue
        ds = dataset.load(path)
        assert manifest.pin_mismatch(path, dataset.computed_content_sha256(ds), pins) is None


# ---- 5. a simulated dataset passed off as a measurement ---------------------------------------


@pytest.mark.parametrize("keep", ["backend", "device", "evidence", "toolchain"])
def test_a_flipped_simulated_flag_is_contradicted_by_what_ran(toylab: ToyLab, keep: str) -> None:
    """simulated=false with the hash recomputed and the dataset pinned, but one provenance
    field still says what really ran."""
    hyp = sealed(toylab)
    sim = dataset.provenance(dataset.load(toylab.sim_dataset()))
    overrides = {"backend": {"backend": "sim"}, "device": {"device": sim["device"]},
                 "toolchain": {"toolchain": sim["toolchain"]},
                 "evidence": {"kernels": sim["kernels"]}}[keep]
    data = toylab.as_measured(toylab.sim_dataset(), **overrides)
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["verdict"] == "TAMPERED"
    assert assess(hyp, data).rules == {Rule.SELF_CONTRADICTING}
    assert (manifest.relative(data), Rule.SELF_CONTRADICTING) in found()


def test_a_measured_dataset_without_the_simulated_flag_is_not_evidence(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset(), simulated=DELETE)
    assert check(hyp, data)["verdict"] == "NOT-EVIDENCE"


def test_sweeps_pinning_at_once_each_keep_their_line(toylab: ToyLab) -> None:
    import threading

    data = toylab.as_measured(toylab.sim_dataset())
    copies = [data.with_name(f"2020010{n}T000000Z.nc") for n in range(1, 5)]
    for n, copy in enumerate(copies):
        ds = dataset.load(data)
        ds["value"].values[0, 0, 0] = 1000 + n  # four distinct datasets
        dataset.save(ds, copy, dataset.provenance(ds))
    start = threading.Barrier(len(copies))

    def pin(path: Path) -> None:
        start.wait()
        toylab.pin(path)

    threads = [threading.Thread(target=pin, args=(c,)) for c in copies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e["path"] for e in manifest.read()[1:]) == \
        sorted(manifest.relative(c) for c in copies)


# ---- second pass: what a red-team review of the fixes found -----------------------------


@pytest.mark.parametrize("flag", [None, 0, "", "false"], ids=["null", "zero", "empty", "text"])
def test_a_simulated_flag_that_is_not_a_boolean_never_counts(toylab: ToyLab, flag) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset(), simulated=flag)
    assert assess(hyp, data).rules == {Rule.SELF_CONTRADICTING}
    assert Rule.SELF_CONTRADICTING in rules()  # verify's problem too
    assert invoke("report", data).exit_code != 0  # nothing recorded that could pass


def test_a_diff_attribute_cannot_hide_a_manifest_rewrite(toylab: ToyLab) -> None:
    """`-diff` in .gitattributes makes git's numstat print '-': the pins are read from the
    committed objects instead."""
    sealed(toylab, "prod", "a * b")
    first = toylab.as_measured(toylab.sim_dataset())
    toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    (toylab.root / ".gitattributes").write_text("data/MANIFEST.jsonl -diff\n")
    toylab.git("rm", "-q", str(first))
    lines = manifest.manifest_path().read_text().splitlines(keepends=True)
    manifest.manifest_path().write_text("".join(lines[1:]))
    assert Rule.MANIFEST_REWRITTEN in rules()  # uncommitted
    committed(toylab, "a smaller archive")
    assert Rule.MANIFEST_REWRITTEN in rules()


def test_an_archive_folder_that_is_a_link_outside_git_is_refused(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    hidden = toylab.root / ".archive"
    toylab.data.rename(hidden)
    (toylab.root / ".gitignore").write_text("/sim-data/\n__pycache__/\n/.archive/\n")
    toylab.data.symlink_to(hidden, target_is_directory=True)
    committed(toylab, "archive elsewhere")
    (hidden / "toy" / "sm_90").mkdir(parents=True)
    data = toylab.as_measured(toylab.sim_dataset())
    assert ("", Rule.ARCHIVE_IS_LINK) in found()
    result = invoke("check", hyp, data)
    assert result.exit_code == 2 and "is not a file in the archive" in result.stderr


def test_a_path_that_leaves_the_archive_does_not_count(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    outside = toylab.root / "sim-data" / "toy" / "sm_90" / "20200101T000000Z.nc"
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(data, outside)
    sneaky = toylab.data / ".." / "sim-data" / "toy" / "sm_90" / outside.name
    result = invoke("check", hyp, sneaky)
    assert result.exit_code == 2 and "is not a file in the archive" in result.stderr
    line = json.loads(manifest.manifest_path().read_text().splitlines()[-1])
    forged = {k: v for k, v in line.items() if k not in ("seq", "prev", "hash")}
    forged["path"] = "data/../sim-data/toy/sm_90/" + outside.name
    manifest.chain.append(manifest.manifest_path(), manifest.read(), forged, manifest.FORMS)
    assert Rule.PIN_MALFORMED in rules()


def test_check_and_report_also_read_a_datasets_history(toylab: ToyLab) -> None:
    """An edit recommitted with a fresh hash and a rebuilt manifest: `verify` is not the
    only one to see it."""
    hyp = sealed(toylab, "wrong", "a * b")
    data = toylab.as_measured(toylab.sim_dataset())
    assert invoke("check", hyp, data).exit_code == 1
    committed(toylab)
    ds = dataset.load(data)
    ds["value"].values[...] = ds["a"].values[:, None] * ds["b"].values[None, :]
    dataset.save(ds, data, dataset.provenance(ds))
    manifest.manifest_path().unlink()
    toylab.pin(data)
    committed(toylab, "better data")
    result = invoke("check", hyp, data, "--json", "--no-save")
    assert result.exit_code == 3
    assert Rule.MANIFEST_REWRITTEN in assess(hyp, data).rules
    assert invoke("report", data).exit_code == 3


def test_only_a_dataset_file_counts(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    other = data.with_suffix(".h5")
    shutil.copy(data, other)
    toylab.pin(other)
    assert assess(hyp, other).rules == {Rule.MISPLACED}


def test_honest_merges_are_not_called_rewrites(toylab: ToyLab) -> None:
    """A measurement merged from a branch (main moved on meanwhile), and two branches that
    both measured, merged with both sides' pins re-chained: nothing was changed."""
    sealed(toylab)
    toylab.git("checkout", "-q", "-b", "run-a")
    a = toylab.as_measured(toylab.sim_dataset(), name="20260101T000000Z.nc")
    committed(toylab, "run a")
    toylab.git("checkout", "-q", "main")
    (toylab.root / "NOTES.md").write_text("meanwhile\n")
    committed(toylab, "docs")
    toylab.git("checkout", "-q", "-b", "run-b")
    b = toylab.as_measured(toylab.sim_dataset(), name="20260102T000000Z.nc")
    committed(toylab, "run b")
    toylab.git("checkout", "-q", "main")
    toylab.git("merge", "-q", "--no-edit", "run-a")
    assert verify_archive()["problems"] == []
    pins_a = manifest.read()
    subprocess.run(["git", "merge", "-q", "--no-edit", "run-b"], cwd=toylab.root,
                   capture_output=True)  # both appended line 1: a conflict
    toylab.git("checkout", "--theirs", "--", str(manifest.manifest_path()))
    pins_b = manifest.read()
    manifest.manifest_path().unlink()
    for pin in [*pins_a, *pins_b]:  # both sides' pins, re-chained
        fields = {k: v for k, v in pin.items() if k not in ("seq", "prev", "hash")}
        manifest.chain.append(manifest.manifest_path(), manifest.read(), fields,
                              manifest.FORMS)
    committed(toylab, "merge run b")
    assert a.exists() and b.exists()
    assert verify_archive()["problems"] == []


def test_a_path_pinned_twice_is_a_problem_not_a_crash(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.pin(data)
    assert assess(hyp, data).rules == {Rule.PINNED_AS_ANOTHER}
    assert Rule.PINNED_TWICE in rules()


@pytest.mark.parametrize("record", [{"code_tree": None}, {"code_tree": ["x"]},
                                    {"observables": {"value": ["b", "a"]}}],
                         ids=["null-tree", "list-tree", "contradicted-dims"])
def test_malformed_records_are_judged_not_crashed_on(toylab: ToyLab, record) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset(), **record)
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code in (0, 3) and "internal error" not in result.stderr
    if "code_tree" in record:
        assert Rule.CODE_TREE_UNREADABLE in assess(hyp, data).rules


def test_a_dataset_with_no_kernels_is_refused(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    empty = data.with_name("20200101T000000Z.nc")
    dataset.save(dataset.load(data).isel(kernel=slice(0, 0)), empty,
                 dataset.provenance(dataset.load(data)))
    result = invoke("check", hyp, empty)
    assert result.exit_code == 2 and "no kernel" in result.stderr


def test_a_committed_pin_needs_its_dataset_committed(toylab: ToyLab) -> None:
    sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", str(manifest.manifest_path()))
    toylab.git("commit", "-q", "-m", "the manifest only")
    assert (manifest.relative(data), Rule.PIN_UNCOMMITTED) in found()
