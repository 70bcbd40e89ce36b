"""Trust under attack, part 8: what one verify reads once. The ledger, the seal commits, the
history and every evaluated claim are read once per run and shared by its checks; nothing is
kept on disk, a claim is reused only for exactly what it read, and an edited dataset beside
an intact one of the same grid is still caught."""

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from toylab import ToyLab

from probelab import codetree, dataset, gitinfo, prereg
from probelab.check import assess, check
from probelab.hypothesis import Evaluations, evaluate_claim, load_hypothesis, table_sha256
from probelab.notary.rules import Outcome, Rule
from probelab.verify import verify_archive


def sealed(lab: ToyLab, hyp_id: str = "sum", expr: str = "a + b") -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def measured(lab: ToyLab, seconds: int = 0, source: Path | None = None,
             **overrides: str) -> Path:
    """A faked measurement of its own content (measured `seconds` from now), committed."""
    utc = (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="seconds")
    path = lab.as_measured(source or lab.sim_dataset(), utc=utc, **overrides)
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", f"measurement {path.name}")
    return path


def test_a_claim_is_evaluated_afresh_wherever_what_it_reads_differs(toylab: ToyLab) -> None:
    """A claim's answer is kept under everything its evaluation reads: the same grid (even a
    copy) reads the kept answer; other coordinate values, another dtype or another claim in
    the same file are evaluated afresh, and give what evaluating them gives."""
    path = toylab.write_hyp("sum", "a + b")
    probe, claims = toylab.probe(), Evaluations()
    grid = probe.stimulus()
    h = load_hypothesis(path)

    def table(g) -> str:
        return table_sha256(evaluate_claim(h, g, probe.observables)[0])

    first = claims.digest(h, grid, probe.observables)
    assert first == table(grid)
    assert claims.key(h, grid.copy(deep=True), probe.observables) == \
        claims.key(h, grid, probe.observables)
    shifted = grid.assign_coords(a=grid.a + 1)
    assert claims.key(h, shifted, probe.observables) != claims.key(h, grid, probe.observables)
    assert claims.digest(h, shifted, probe.observables) == table(shifted) != first
    wider = grid.assign_coords(b=grid.b.astype("int64"))  # same values, another dtype
    assert claims.key(h, wider, probe.observables) != claims.key(h, grid, probe.observables)
    toylab.write_hyp("sum", "a * b")  # the same path, another claim
    other = load_hypothesis(path)
    assert claims.digest(other, grid, probe.observables) != first


def test_datasets_of_one_grid_share_an_evaluation_not_a_verdict(toylab: ToyLab) -> None:
    """Three datasets of one grid, one claim evaluated once: each is still scored, and judged,
    on its own."""
    sealed(toylab)
    agreeing = measured(toylab, 1)
    off = toylab.sim_dataset()
    ds = dataset.load(off)
    ds["value"].values[0, 0, 0] += 1  # a device that disagrees on one cell
    dataset.save(ds, off, dataset.provenance(ds))
    disagreeing, edited = measured(toylab, 2, source=off), measured(toylab, 3)
    raw = edited.read_bytes()
    edited.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))  # one byte of the file flipped
    result = verify_archive()
    verdicts = {Path(row["dataset"]).name: row["verdict"] for row in result["checks"]}
    assert verdicts[agreeing.name] == "CONFIRMED"
    assert verdicts[disagreeing.name] == "REFUTED on 1 of 128 cells"
    assert result["problems"] and all(edited.name in p.at for p in result["problems"])


def _fresh_process() -> None:
    """Forget what this process has asked git (as a new verify process knows nothing)."""
    codetree.changed_between.cache_clear()
    codetree._differing.cache_clear()


def _git_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []
    real = gitinfo._run

    def counted(args: tuple[str, ...], *rest, **kwargs):
        calls.append(args)
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(gitinfo, "_run", counted)
    _fresh_process()  # asked again, as a fresh process would
    return calls


def test_verify_asks_git_no_more_for_a_larger_archive(toylab: ToyLab, monkeypatch) -> None:
    """The history is read in batches for the whole archive, not once per dataset or check:
    what is asked per measured commit (its code, what changed since each seal) is asked once
    however many datasets were measured from it."""
    sealed(toylab)
    sealed(toylab, "twice", "(a + b) * 2")
    head = toylab.head()
    measured(toylab, 1, git_head=head)
    calls = _git_calls(monkeypatch)
    monkeypatch.setenv("PROBELAB_CACHE", str(toylab.root.parent / "cold-1"))  # git asked
    assert not verify_archive()["problems"]
    one = len(calls)
    for n in range(2, 6):
        measured(toylab, n, git_head=head)
    calls.clear()
    _fresh_process()
    monkeypatch.setenv("PROBELAB_CACHE", str(toylab.root.parent / "cold-2"))  # afresh
    result = verify_archive()
    assert not result["problems"] and len(result["checks"]) == 10
    assert len(calls) == one, calls
    calls.clear()
    _fresh_process()
    assert verify_archive() == result  # warm: what follows from commit ids alone is kept
    assert len(calls) < one, calls


def test_a_measured_commit_no_ref_reaches_is_ordered_by_git_itself(toylab: ToyLab) -> None:
    """Order is read from one listing of every ref's history; a commit outside it (never
    referenced) is asked of git, descended from the seal or not."""
    hyp = sealed(toylab)
    tree = toylab.git("rev-parse", "HEAD^{tree}")
    loose = toylab.git("commit-tree", tree, "-p", "HEAD", "-m", "measured, never referenced")
    assert check(hyp, toylab.as_measured(toylab.sim_dataset(), git_head=loose))["verdict"] \
        == "CONFIRMED"
    orphan = toylab.git("commit-tree", tree, "-m", "measured, with no parent")
    judged = assess(hyp, toylab.as_measured(toylab.sim_dataset(), git_head=orphan))
    assert judged.outcome == Outcome.POST_HOC and Rule.SEAL_UNRELATED in judged.rules


def test_batch_reads_give_the_objects_as_committed(toylab: ToyLab) -> None:
    """Seal files and old manifests are read in one `cat-file --batch`: the bytes as committed,
    a name the batch protocol cannot carry asked on its own, a missing one None."""
    notes = toylab.root / "notes"
    notes.mkdir()
    names = {"odd\nname.txt": b"x\r\n", "trailing.txt ": b"y", " leading.txt": b"",
             "plain.txt": b"z\n"}
    for name, data in names.items():
        (notes / name).write_bytes(data)
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "odd names")
    specs = [f"HEAD:notes/{name}" for name in names] + ["HEAD:notes/missing.txt", "HEAD:notes"]
    got = gitinfo.objects(specs)
    assert {name: got[f"HEAD:notes/{name}"] for name in names} == names
    assert got["HEAD:notes/missing.txt"] is None
    tree = subprocess.run(["git", "cat-file", "tree", "HEAD:notes"], cwd=toylab.root,
                          capture_output=True, check=True).stdout
    assert got["HEAD:notes"] == tree


@pytest.mark.parametrize("name", ["é.nc", 'a"b.nc', "back\\slash.nc", "tab\there.nc"])
def test_a_dataset_git_lists_quoted_is_still_seen_rewritten(toylab: ToyLab, name: str) -> None:
    """git C-quotes such names in its listings; the dataset must still be found in them."""
    from probelab import written

    path = toylab.root / "data" / "toy" / "sm_90" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * 6000)
    toylab.git("add", "-A")
    toylab.git("commit", "-qm", "add")
    assert written.rewritten(path) == []
    path.write_bytes(b"y" * 6000)  # edited in the working tree
    assert written.rewritten(path)
    toylab.git("commit", "-qam", "edit")  # and committed
    assert written.rewritten(path)


def test_the_history_holds_a_second_root_commit(toylab: ToyLab) -> None:
    toylab.git("checkout", "-q", "--orphan", "other")
    toylab.git("commit", "-q", "--allow-empty", "-m", "a second root")
    toylab.git("checkout", "-q", "main")
    history = gitinfo.History.read()
    listed = toylab.git("rev-list", "--all").split()
    assert len(listed) == 2 and set(history.times) == set(listed)  # both roots
