"""Trust under attack: each attack of docs/trust.md that no other test file already tries,
through the CLI where a user would meet it. Every one must end in a clear message, the
documented exit code, and no partial or silently wrong artifact."""

import errno
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toylab import ToyLab, invoke

from probelab import check, dataset, prereg
from probelab.backends import KernelTimeout, wait_for
from probelab.errors import UsageError
from probelab.hypothesis import parse_hypothesis
from probelab.notary import words
from probelab.notary.problems import rules
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.verify import verify_archive


def sealed(lab: ToyLab, hyp_id: str, expr: str) -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


# ---- 1. a sealed hypothesis edited after sealing ------------------------------------------


@pytest.mark.parametrize("edit", [
    lambda raw: raw.replace(b"a + b", b"a - b"),  # one byte
    lambda raw: raw.replace(b"\n", b"\r\n"),  # whitespace only (line endings)
    lambda raw: raw.decode().encode("utf-16"),  # re-encoded: no longer even UTF-8
], ids=["one-byte", "whitespace", "re-encoded"])
def test_check_of_an_edited_sealed_file_is_tampered(toylab: ToyLab, edit) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    hyp.write_bytes(edit(hyp.read_bytes()))
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3, result.stderr
    assert json.loads(result.stdout)["verdict"] == "TAMPERED"
    assert check.assess(hyp, data).rules == {Rule.SEAL_EDITED}


# ---- 3. sealing after the data were taken, with the clock set back ------------------------


def test_a_seal_made_after_the_data_with_the_clock_set_back_is_post_hoc(
        toylab: ToyLab, monkeypatch) -> None:
    """Both clocks lie (the ledger's and git's, set to 2020), yet the seal commit is not an
    ancestor of the commit the data were measured at: POST-HOC, not counted."""
    from datetime import UTC, datetime

    data = toylab.as_measured(toylab.sim_dataset())

    class Backdated:
        @staticmethod
        def now(tz=None):
            return datetime(2020, 1, 1, tzinfo=tz or UTC)

    monkeypatch.setattr("probelab.prereg.datetime", Backdated)
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, "2020-01-01T00:00:00+00:00")
    hyp = sealed(toylab, "sum", "a + b")
    assert toylab.git("show", "-s", "--format=%cI", "HEAD").startswith("2020-01-01")
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["verdict"] == "POST-HOC"
    assert Rule.SEALED_AFTER_DATA in check.assess(hyp, data).rules


# ---- 4. datasets edited after the sweep, or passed to the wrong hypothesis -----------------


def _rewrite_keeping_provenance(path: Path, change) -> None:
    """Edit a dataset the way a hand would: change it and write it back with its recorded
    provenance (and content hash) untouched."""
    ds = dataset.load(path)
    change(ds)
    ds.to_netcdf(path, engine=dataset.ENGINE)


@pytest.mark.parametrize("change", [
    lambda ds: ds["value"].values.__setitem__((0, 3, 2), 0),  # one measured value
    lambda ds: ds.attrs.__setitem__("provenance", ds.attrs["provenance"].replace(
        '"device": "Toy Device (test fixture)"', '"device": "NVIDIA H200"')),
], ids=["value", "provenance"])
def test_a_dataset_edited_after_the_sweep_is_tampered(toylab: ToyLab, change) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    _rewrite_keeping_provenance(data, change)
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    assert check.assess(hyp, data).rules == {Rule.CONTENT_EDITED}


def test_a_rehashed_dataset_edit_is_caught_by_git_history(toylab: ToyLab) -> None:
    """Whoever recomputes the content hash after an edit still leaves a trace: a measured
    dataset is committed once and never changed."""
    sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "measurement")
    assert not verify_archive()["problems"]
    ds = dataset.load(data)
    ds["value"].values[0, 0, 0] += 1
    dataset.save(ds, data, dataset.provenance(ds))  # a fresh, valid content hash
    assert any("differs from the committed file" in p  # the words, pinned
               for p in words.lines(verify_archive()["problems"]))
    toylab.git("commit", "-q", "-am", "quietly fix a value")
    assert Rule.REWRITTEN in rules(verify_archive()["problems"])


def test_a_dataset_deleted_and_added_again_is_caught(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "measurement")
    ds = dataset.load(data)
    toylab.git("rm", "-q", str(data))
    toylab.git("commit", "-q", "-m", "remove")
    ds["value"].values[0, 0, 0] += 1
    dataset.save(ds, data, dataset.provenance(ds))
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "add it back, edited")
    assert Rule.REWRITTEN in rules(verify_archive()["problems"])


def test_a_staged_fresh_dataset_is_not_called_edited(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    assert not verify_archive()["problems"]


def test_a_dataset_whose_content_hash_was_removed_is_tampered(toylab: ToyLab) -> None:
    """This generation of datasets always records the hash; its absence is an edit."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())

    def strip(ds) -> None:
        prov = json.loads(ds.attrs["provenance"])
        del prov[dataset.CONTENT_KEY]
        ds.attrs["provenance"] = json.dumps(prov)

    _rewrite_keeping_provenance(data, strip)
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    assert check.assess(hyp, data).rules == {Rule.CONTENT_HASH_REMOVED}


def test_a_sealed_file_padded_past_the_size_limit_is_tampered(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    with open(hyp, "ab") as handle:
        handle.truncate(100 * 2**20)
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3 and json.loads(result.stdout)["verdict"] == "TAMPERED"


def test_a_dataset_of_another_target_is_refused(toylab: ToyLab) -> None:
    path = toylab.write_hyp("sum", "a + b")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\ntargets = ["sm_80"]'))
    prereg.seal(path)
    data = toylab.as_measured(toylab.sim_dataset())
    result = invoke("check", path, data)
    assert result.exit_code == 2 and "does not apply" in result.stderr


# ---- 5. hostile hypothesis files -----------------------------------------------------------


HOSTILE = {
    "deep-nesting": "(" * 5000 + "a" + ")" * 5000,
    "huge-expression": " + ".join(["a"] * 2000),
    "dunder": "a.__class__",
    "import": "__import__('os').system('touch PWNED')",
    "call": "open('PWNED', 'w')",
    "not-a-coordinate": "a + secret",
    "division-by-zero": "a // (b - b)",
    "huge-power": "a ** (10 ** 10)",
    "huge-shift": "a << 100000",
    "lambda": "(lambda: 1)()",
}


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_expressions_are_refused_without_running_anything(toylab: ToyLab,
                                                                  source: str) -> None:
    """Sealing evaluates the expression (and refuses it: exit 2, nothing sealed); checking
    the unsealed file refuses it in the same words (exit 2), before saying it is unsealed."""
    data = toylab.sim_dataset()
    path = toylab.write_hyp("evil", source)
    seal = invoke("prereg", "seal", path)
    assert seal.exit_code == 2 and "error:" in seal.stderr, (seal.stdout, seal.stderr)
    check = invoke("check", path, data)
    assert (check.exit_code, check.stderr) == (2, seal.stderr)
    assert not (toylab.root / "PWNED").exists() and not toylab.ledger.exists()


def test_a_100_mb_file_is_refused_before_it_is_read(toylab: ToyLab) -> None:
    path = toylab.root / "preregistrations" / "toy" / "huge.toml"
    with open(path, "wb") as handle:
        handle.truncate(100 * 2**20)  # sparse: 100 MB on paper, nothing on disk
    result = invoke("check", path, toylab.sim_dataset())
    assert result.exit_code == 2 and "at most" in result.stderr


TOML_VALUES = st.recursive(
    st.one_of(st.text(max_size=40), st.integers(), st.booleans(), st.floats(allow_nan=False)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                   max_size=3), max_leaves=8)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) \
            + "}"
    return repr(value)


KEYS = st.sampled_from(["schema", "id", "probe", "claim", "coordinates", "kernels", "targets",
                        "where", "parent", "let", "predict", "translations", "extra"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(KEYS, TOML_VALUES, max_size=8), junk=st.binary(max_size=30))
def test_fuzzed_hypothesis_files_only_ever_raise_usage_errors(doc, junk) -> None:
    """Whatever the file holds, loading and evaluating it ends in a hypothesis or a
    UsageError: never another exception, never code of the author's run."""
    text = "\n".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in doc.items())
    grid = xr.Dataset(coords={"a": ("a", np.arange(4, dtype=np.uint32))})
    for raw in (text.encode(), text.encode() + junk):
        try:
            h = parse_hypothesis(Path("fuzz.toml"), raw)
            from probelab.hypothesis import evaluate_claim
            evaluate_claim(h, grid, {"value": ("a",)})
        except UsageError:
            pass


# ---- 7. a launch that never returns (the CUDA and HIP backends share this wait) -----------


def test_a_launch_that_never_finishes_times_out_with_its_name() -> None:
    with pytest.raises(KernelTimeout, match=r"kernel spin did not return within 0\.02 s"):
        wait_for(lambda: False, 0.02, "kernel spin")
    polls = iter([False, False, True])
    wait_for(lambda: next(polls), 5, "kernel quick")  # returns as soon as it is done
    assert KernelTimeout("x").code == 3


# ---- 8. a read-only or full data directory; two sweeps writing at once ---------------------


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_read_only_data_directory_is_a_clear_error(toylab: ToyLab, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("probelab.storage.tempfile.mkstemp", refuse)
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 2
    assert "cannot write" in result.stderr and "Permission denied" in result.stderr
    assert _files(toylab.root / "sim-data") == []


def test_a_full_disk_leaves_nothing_behind(toylab: ToyLab, monkeypatch) -> None:
    from probelab.power import gate_names
    from probelab.probe import catalog

    probe = toylab.probe()  # the caches a sweep writes, written first: the dataset's write
    catalog().entries()  # is the one that meets the full disk
    gate_names(probe, probe.stimulus(), "sm_90")
    real = os.write
    calls = []

    def half_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, data[: len(data) // 2])  # a partial file
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("probelab.storage.os.write", half_then_full)
    result = invoke("sweep", "toy", "--backend", "sim")
    monkeypatch.setattr("probelab.storage.os.write", real)
    assert len(calls) == 2 and result.exit_code == 2
    assert "No space left on device" in result.stderr and "nothing was written" in result.stderr
    assert _files(toylab.root / "sim-data") == []


def test_two_sweeps_saving_at_once_both_land_whole(toylab: ToyLab) -> None:
    """Same probe, target and second: each gets its own file, neither overwrites."""
    ds = dataset.load(toylab.sim_dataset())
    prov = dataset.provenance(ds)
    stem = toylab.root / "sim-data" / "race" / "20261130T000000Z"
    saved: list[Path] = []
    start = threading.Barrier(4)

    def save() -> None:
        start.wait()
        saved.append(dataset.save_new(ds, stem, prov))

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in saved) == ["20261130T000000Z-2.nc", "20261130T000000Z-3.nc",
                                             "20261130T000000Z-4.nc", "20261130T000000Z.nc"]
    for path in saved:
        assert dataset.tampered(dataset.load(path)) is None
    assert sorted(_files(stem.parent)) == sorted(saved)  # no temp file left over


def test_every_test_the_trust_page_names_exists() -> None:
    """docs/trust.md's table is a map to the tests; a renamed or deleted test breaks it."""
    import re

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "trust.md").read_text()
    defined = {m for f in (root / "tests").glob("test_*.py")
               for m in re.findall(r"^def (test_\w+)", f.read_text(), re.M)}
    named = set(re.findall(r"`(?:\w+\.py::)?(test_\w+)", page))
    assert len(named) > 40
    assert named <= defined, sorted(named - defined)


def test_without_hard_links_an_exclusive_save_still_never_overwrites(toylab: ToyLab,
                                                                    monkeypatch) -> None:
    """Some file systems refuse os.link; the name is then claimed with O_EXCL instead."""
    def no_links(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    ds = dataset.load(toylab.sim_dataset())
    prov = dataset.provenance(ds)
    monkeypatch.setattr("probelab.storage.os.link", no_links)
    stem = toylab.root / "sim-data" / "nolink" / "20261130T000000Z"
    first, second = dataset.save_new(ds, stem, prov), dataset.save_new(ds, stem, prov)
    assert (first.name, second.name) == ("20261130T000000Z.nc", "20261130T000000Z-2.nc")
    assert dataset.tampered(dataset.load(first)) is None
    assert sorted(_files(stem.parent)) == sorted([first, second])


def test_a_hypothesis_retired_by_a_new_probe_version_is_named_not_dropped(
        toylab: ToyLab, monkeypatch) -> None:
    """Renaming a probe's observables (a new version) could make an inconvenient sealed
    hypothesis quietly stop applying. Undeclared, the rename breaks `prereg verify`; declared
    (`retired`), the hypothesis stays in the record: `prereg verify` still checks its seal
    and names it as sealed for an earlier version; `check` refuses to score it and says
    why; `power` leaves it out."""
    from probelab.check import check
    from probelab.power import power

    path = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    monkeypatch.setattr(toylab.probe(), "observables", {"total": ("a", "b")})
    record = prereg.Record.read()
    (entry,) = record.entries
    (gone,), _ = prereg.seal_findings(entry, record)  # gone without a word: not retired
    assert gone.rule == Rule.SEAL_NO_LONGER_EVALUATES
    monkeypatch.setattr(toylab.probe(), "retired", {"value": "renamed total"}, raising=False)
    assert prereg.seal_findings(entry, record) == (
        [], [Finding(Rule.SEALED_FOR_EARLIER_VERSION, "toy", "['value']")])
    listed = invoke("prereg", "verify")
    assert listed.exit_code == 0 and "sealed for an earlier version" in " ".join(
        listed.stdout.split())
    assert check(path, data)["verdict"] == "CONFIRMED"  # data that observed it still count
    pairs, notes = power(toylab.probe())
    assert pairs == [] and notes == ["sum: left out, sealed for an earlier version of toy "
                                     "(predicts ['value'], which it no longer observes)"]
    listed = json.loads(invoke("prereg", "list", "--json").stdout)
    assert listed[0]["retired"] == ["value"]
    assert "(retired: predicts ['value']" in invoke("prereg", "list").stdout


# ---- the on-disk answers verify and check reuse --------------------------------------------


def _entries(kind: str) -> list[Path]:
    from probelab.paths import cache_dir

    return sorted((cache_dir() / kind).glob("*.bin"))


def test_a_check_answered_from_the_cache_is_the_check_computed_afresh(toylab: ToyLab,
                                                                      monkeypatch) -> None:
    """A dataset's summary (under its bytes' sha256: content hash, variables, grid), a
    claim's tables hash and its scores on those contents are kept on disk: a second check
    reads them (nothing is evaluated, the dataset is not even opened) and gives the same
    verdict document; a corrupt entry is recomputed, never
    read as an answer."""
    from probelab import dataset, scoring

    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    cold = check.check(hyp, data)
    assert cold["verdict"] == Outcome.CONFIRMED
    assert _entries("summary") and _entries("scores")
    with monkeypatch.context() as warm:
        warm.setattr(scoring, "claim_blocks", lambda *a: pytest.fail("evaluated"))
        warm.setattr(dataset.Read, "open", lambda *a: pytest.fail("opened"))
        assert check.check(hyp, data) == cold  # warm: from the entries
    for entry in _entries("scores") + _entries("summary"):
        entry.write_bytes(b"0" * 64 + b'{"table_sha256": "x", "kernels": {}}')
    assert check.check(hyp, data) == cold  # corrupt: recomputed, and rewritten
    assert all(b'"x"' not in e.read_bytes() for e in _entries("scores"))


def test_an_edited_dataset_is_judged_from_its_own_bytes_not_an_earlier_answer(
        toylab: ToyLab) -> None:
    """The answers are filed under the dataset's exact bytes: an edit after a warm check is
    a miss, judged afresh: TAMPERED."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    assert check.check(hyp, data)["verdict"] == Outcome.CONFIRMED
    _rewrite_keeping_provenance(data, lambda ds: ds["value"].values.__setitem__((0, 3, 2), 0))
    judged = check.assess(hyp, data)
    assert (judged.outcome, judged.rules) == (Outcome.TAMPERED, {Rule.CONTENT_EDITED})


def test_another_probelab_code_never_reads_an_earlier_runs_answers(toylab: ToyLab,
                                                                   code_copy) -> None:
    """The code that computes an answer is part of its key: an edit to a module it imports
    (records.py, read by every kind) computes its own answers (a new entry per kind), whatever
    an earlier version filed, and one to a module it cannot run (the CLI) reuses them all."""
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.as_measured(toylab.sim_dataset())
    cold = check.check(hyp, data)
    before = {kind: len(_entries(kind)) for kind in ("summary", "scores")}
    code_copy.edit("cli.py")
    assert check.check(hyp, data) == cold
    assert {kind: len(_entries(kind)) for kind in before} == before
    code_copy.edit("records.py")
    assert check.check(hyp, data) == cold
    assert all(len(_entries(kind)) == before[kind] + 1 for kind in before)


def test_a_claims_key_binds_its_expressions_not_its_checkout() -> None:
    """The on-disk key of a claim is the same for the same file in another checkout, and
    differs for any change to what it evaluates."""
    from probelab.hypothesis import Evaluations

    grid = xr.Dataset(coords={"a": ("a", np.arange(4, dtype=np.uint32))})
    head = 'schema = 1\nid = "h"\nprobe = "toy"\nclaim = "c"\ncoordinates = "raw"\n'
    one, other = (parse_hypothesis(Path(root) / "h.toml", (head + '[predict]\nv = "a"\n').encode())
                  for root in ("/lab/one", "/lab/two"))
    changed = parse_hypothesis(Path("/lab/one/h.toml"),
                               (head + '[predict]\nv = "a + 1"\n').encode())
    key = Evaluations.key
    assert key(one, grid, {"v": ("a",)}) == key(other, grid, {"v": ("a",)})
    assert key(one, grid, {"v": ("a",)}) != key(changed, grid, {"v": ("a",)})
