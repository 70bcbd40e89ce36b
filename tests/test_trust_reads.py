"""Trust under attack, part 11: what a check reads. A measured dataset holds every value in
its own file (no external storage, virtual dataset, link to another file or filter plugin);
every file a check believes is read only if it is a regular file, within a size bound, and
JSON in it only to a bounded depth: a FIFO, a device or a deeply nested line is one plain
error in seconds, never a hang, a crash or a verdict."""

import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import h5netcdf
import h5py
import numpy as np
import pytest
import xarray as xr
from test_import import device, refused
from toylab import MEASURED, ToyLab, invoke

from probelab import cache, check, dataset, manifest, prereg
from probelab.notary import verdict_files
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.notary.words import lines
from probelab.paths import cache_dir
from probelab.sweep import run_sweep
from probelab.verify import verify_archive

DEEP = "[" * 100_000 + "]" * 100_000  # past any JSON decoder's recursion


def sealed(lab: ToyLab, hyp_id: str = "sum", expr: str = "a + b") -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


def committed(lab: ToyLab, message: str = "measurement") -> None:
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", message)


def probelab(lab: ToyLab, *args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI as a process of its own, so that a hang fails the test instead of stalling it."""
    return subprocess.run([sys.executable, "-m", "probelab", *map(str, args)], cwd=lab.root,
                          capture_output=True, text=True, timeout=timeout, env=os.environ)


def one_line(out: subprocess.CompletedProcess | object) -> str:
    text = (getattr(out, "stderr", "") or "") + (getattr(out, "stdout", "") or "")
    assert "internal error" not in text and "Traceback" not in text, text
    return text


# ---- 1. a measured dataset is self-contained ------------------------------------------------


def _rebuilt(src: Path, dest: Path, value: Callable[[h5py.File, h5py.Dataset], None]) -> None:
    """`src` written anew to `dest` object by object, `value` making the `value` variable in
    its own way; every attribute and dimension kept, so xarray reads the same dataset."""
    with h5py.File(src, "r") as old, h5py.File(dest, "w", track_order=True) as new:
        for key, attr in old.attrs.items():
            new.attrs[key] = attr
        for name in old:
            if name != "value":
                old.copy(old[name], new, name)
        value(new, old["value"])
        made = new["value"]
        for key, attr in old["value"].attrs.items():
            if key != "DIMENSION_LIST":
                made.attrs[key] = attr
        for axis, dim in enumerate(old["value"].dims):
            made.dims[axis].attach_scale(new[dim[0].name])


def _external_raw(new: h5py.File, old: h5py.Dataset) -> None:
    raw = Path(new.filename).with_suffix(".raw")
    old[()].tofile(raw)
    new.create_dataset("value", old.shape, old.dtype, external=[(raw.name, 0, old.nbytes)])


def _virtual(new: h5py.File, old: h5py.Dataset) -> None:
    source = Path(new.filename).with_suffix(".src.h5")
    with h5py.File(source, "w") as f:
        f["value"] = old[()]
    layout = h5py.VirtualLayout(old.shape, old.dtype)
    layout[...] = h5py.VirtualSource(source.name, "value", shape=old.shape)
    new.create_virtual_dataset("value", layout)


def _lzf(new: h5py.File, old: h5py.Dataset) -> None:  # a filter save never uses
    new.create_dataset("value", data=old[()], compression="lzf")


FORMS = {"external-raw": _external_raw, "virtual": _virtual, "filter": _lzf}


def measured_as(lab: ToyLab, form: Callable[[h5py.File, h5py.Dataset], None],
                commit: bool = True) -> Path:
    """A measurement (test fixture) whose file is rebuilt in `form` BEFORE it is pinned (and
    committed): its contents hash as saved, its pin names these very bytes."""
    sim = lab.sim_dataset()
    ds = dataset.load(sim)
    prov = dataset.provenance(ds) | MEASURED
    prov["kernels"] = {k: v | {"evidence": {"ok": True, "fixture": True}}
                       for k, v in prov["kernels"].items()}
    folder = lab.data / "toy" / str(prov["target"])
    folder.mkdir(parents=True, exist_ok=True)
    plain, target = lab.root / "plain.nc", folder / sim.name
    dataset.save(ds, plain, prov)
    content = dataset.stored_provenance(plain)[dataset.CONTENT_KEY]
    _rebuilt(plain, target, form)
    plain.unlink()
    manifest.pin(target, content, "toy", str(prov["target"]))
    if commit:
        committed(lab)
    return target


@pytest.mark.parametrize("form", FORMS)
def test_a_dataset_whose_values_are_not_all_in_its_file_is_refused_at_every_read(
        toylab: ToyLab, form: str) -> None:
    """Issue 34.1: with its values in a raw file beside it, a dataset matched its pin and its
    hash while the values sat outside git; an edit to the raw file then gave CONFIRMED from a
    warm cache. Every read refuses such a file now: check, verify, diff, plot, report,
    import, before any value is read."""
    hyp = sealed(toylab)
    data = measured_as(toylab, FORMS[form])
    why = {"external-raw": "keeps its values in external raw files",
           "virtual": "is a virtual dataset", "filter": "needs HDF5 filter"}[form]
    with pytest.raises(check.UsageError, match=f"not self-contained: variable value {why}"):
        check.check(hyp, data)
    for args in (["check", hyp, data], ["diff", data, data], ["plot", data]):
        out = invoke(*args)
        assert out.exit_code == 2 and "not self-contained" in out.output, (args, out.output)
    recorded = {"hypothesis": {"path": "preregistrations/toy/sum.toml"},
                "dataset": {"path": manifest.relative(data)}, "verdict": "CONFIRMED"}
    verdict_files.verdict_path(data, "sum").write_text(json.dumps(recorded))
    out = invoke("report", data)
    assert out.exit_code == 3 and "not self-contained" in out.output, out.output
    (refused,) = [p for p in verify_archive()["problems"] if p.at == manifest.relative(data)]
    assert refused.rules == {Rule.DATASET_REFUSED}
    assert "not self-contained" in refused.findings[0].detail


def test_an_external_link_in_a_dataset_is_refused(toylab: ToyLab) -> None:
    def link(new: h5py.File, old: h5py.Dataset) -> None:
        other = Path(new.filename).with_suffix(".other.h5")
        with h5py.File(other, "w") as f:
            f["value"] = old[()]
        new.create_dataset("value", data=old[()])
        new["elsewhere"] = h5py.ExternalLink(other.name, "value")

    hyp = sealed(toylab)
    data = measured_as(toylab, link)
    with pytest.raises(check.UsageError, match="not self-contained: elsewhere is a ExternalLink"):
        check.check(hyp, data)


def test_an_import_of_a_dataset_not_self_contained_writes_nothing(toylab: ToyLab,
                                                                  monkeypatch) -> None:
    with device(toylab, monkeypatch) as dev:
        measured_as(dev, _external_raw, commit=False)
    refused(dev.root, 3, "not self-contained", toylab.root)


# ---- 7. no FIFO, device or link to one is ever waited on -----------------------------------


def test_a_fifo_or_device_where_a_file_is_expected_is_one_line_not_a_hang(
        toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    fifo = toylab.root / "fifo.nc"
    os.mkfifo(fifo)
    out = probelab(toylab, "check", hyp, fifo)
    assert out.returncode == 2 and "is not a regular file (a FIFO)" in one_line(out)
    # the ledger and the manifest replaced by a FIFO, then by a link to /dev/zero
    for record in (toylab.ledger, manifest.manifest_path()):
        kept = record.read_bytes()
        for swap in ("fifo", "zero"):
            record.unlink()
            os.mkfifo(record) if swap == "fifo" else record.symlink_to("/dev/zero")
            out = probelab(toylab, "check", hyp, data)
            text = one_line(out)
            assert out.returncode == 3 and "not a regular file" in text, (record, swap, text)
            record.unlink()
            record.write_bytes(kept)
    assert probelab(toylab, "check", hyp, data).returncode == 0


def test_a_verdict_or_a_branch_dataset_that_is_a_fifo_is_refused(toylab: ToyLab,
                                                                 tmp_path: Path) -> None:
    fifo = toylab.root / "x.verdict.json"
    os.mkfifo(fifo)
    out = probelab(toylab, "report", fifo)
    assert out.returncode == 2 and "not a regular file" in one_line(out)
    branch = tmp_path / "branch" / "data" / "toy" / "sm_90"
    branch.mkdir(parents=True)
    os.mkfifo(branch / "20261203T000000Z.nc")
    (branch.parents[1] / manifest.NAME).write_text(json.dumps({"nothing": 1}) + "\n")
    out = probelab(toylab, "import", branch.parents[2])
    assert out.returncode in (2, 3), one_line(out)


# ---- 9. JSON nested past any use is one plain error ----------------------------------------


def test_deeply_nested_json_in_the_records_is_one_plain_error(toylab: ToyLab) -> None:
    hyp = sealed(toylab)
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    assert invoke("check", hyp, data).exit_code == 0
    verdict = next(data.parent.glob("*.verdict.json"))
    for record, exit_code, words in ((toylab.ledger, 3, "nested deeper"),
                                     (manifest.manifest_path(), 3, "nested deeper"),
                                     (verdict, 2, "nested deeper")):
        kept = record.read_bytes()
        record.write_bytes(kept + DEEP.encode() + b"\n" if record.suffix == ".jsonl"
                           else DEEP.encode())
        out = invoke("report", data) if record == verdict else invoke("check", hyp, data)
        assert out.exit_code == exit_code and words in out.output, (record, out.output)
        assert "internal error" not in out.output
        record.write_bytes(kept)
    assert all(words not in p for p in lines(verify_archive()["problems"]))


def test_a_cache_entry_of_the_wrong_form_under_the_secret_is_made_again(
        toylab: ToyLab) -> None:
    """Issue 34.9: an entry with a valid digest over non-JSON or JSON of the wrong shape
    raised JSONDecodeError or KeyError. Whoever holds the secret can still file a false
    answer of the right form (docs/trust.md); one of the wrong form is made again."""
    right, wrong = sealed(toylab, "sum", "a + b"), sealed(toylab, "prod", "a * b")
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    verdicts = (check.check(right, data)["verdict"], check.check(wrong, data)["verdict"])
    assert verdicts == (Outcome.CONFIRMED, Outcome.REFUTED)
    kinds = ("scores", "summary", "blindness", "grids", "git")
    for payload in (b"\xff not json", b"{}", b"[1, 2]", json.dumps({"kernels": 1}).encode(),
                    DEEP.encode()):
        for kind in kinds:
            for entry in sorted((cache_dir() / kind).glob("*.bin")):
                cache.store(kind, entry.stem, payload)
        assert (check.check(right, data)["verdict"],
                check.check(wrong, data)["verdict"]) == verdicts, payload[:20]
        out = invoke("sweep", "toy", "--backend", "sim", "--out", toylab.root / "trial")
        assert out.exit_code == 0, out.output
    assert any((cache_dir() / kind).glob("*.bin") for kind in kinds)


def test_a_regular_file_is_read_no_further_than_its_bound(tmp_path: Path) -> None:
    from probelab import bounded

    big = tmp_path / "big"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(bounded.TooLarge, match="more than the 1,000"):
        bounded.read_regular(big, 1000)
    assert bounded.read_regular(big, 1001) == b"x" * 1001
    with pytest.raises(bounded.Unreadable, match="a character device"):
        bounded.read_regular(Path("/dev/zero"), 10)
    link = tmp_path / "link"
    link.symlink_to(big)
    with pytest.raises(bounded.Unreadable):
        bounded.read_regular(link, 2000, follow=False)
    with pytest.raises(ValueError, match="nested deeper than 3"):
        bounded.loads(json.dumps([[[[1]]]]), 3)
    assert bounded.loads(json.dumps([[1]]), 3) == [[1]]
    assert bounded.nesting({"a": [1, {"b": 2}]}) == 4 and bounded.nesting(7) == 1


# ---- 4. diff and plot read a dataset as check does -----------------------------------------


def provenance_edited(path: Path) -> None:
    """A provenance field changed in place, its content hash left as it was."""
    with h5py.File(path, "r+") as f:
        prov = json.loads(f.attrs["provenance"])
        f.attrs["provenance"] = json.dumps(prov | {"device": "Another Device"})


def value_edited(path: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["value"][(0,) * f["value"].ndim] += 1


def test_diff_names_a_side_that_is_tampered_or_unpinned(toylab: ToyLab,
                                                         tmp_path: Path) -> None:
    """Issue 34.4: a diff of a TAMPERED or unpinned copy exited 0, "identical, both
    measured"."""
    data = toylab.as_measured(toylab.sim_dataset())
    committed(toylab)
    assert invoke("diff", data, data).exit_code == 0
    copy = tmp_path / "copy.nc"
    copy.write_bytes(data.read_bytes())
    out = invoke("diff", data, copy)
    assert out.exit_code == 3 and "B is UNPINNED" in out.output, out.output
    provenance_edited(copy)
    out = invoke("diff", copy, data)
    assert out.exit_code == 3 and "A is TAMPERED (values or provenance edited" in out.output
    provenance_edited(data)  # in the archive, in place
    out = invoke("diff", "--json", data, data)
    assert out.exit_code == 3 and json.loads(out.stdout)["broken"] == ["A", "B"]


def test_plot_refuses_a_tampered_dataset_and_marks_what_it_draws(
        toylab: ToyLab, sealed_lab, tmp_path: Path) -> None:
    """Issue 34.4: `plot` of a value-edited dataset drew every map silently."""
    sealed_lab("byte_perm", "byte-perm")  # a probe with figures (the toy probe has none)
    sim = run_sweep("byte-perm", "sim", out_root=toylab.root / "sim-data", repeats=2).path
    data = toylab.as_measured(sim)
    committed(toylab)
    trial = tmp_path / "trial.nc"
    trial.write_bytes(data.read_bytes())
    out = invoke("plot", "--out", tmp_path / "trial-figures", trial)  # outside the archive
    assert out.exit_code == 0, out.output
    svgs = list((tmp_path / "trial-figures").glob("*.svg"))
    assert svgs and all("UNPINNED" in svg.read_text() for svg in svgs)
    value_edited(data)
    figures = tmp_path / "figures"
    out = invoke("plot", "--out", figures, data)
    assert out.exit_code == 3 and "is TAMPERED" in out.output and not figures.exists()
    out = invoke("plot", "--tampered", "--out", figures, data)
    assert out.exit_code == 0, out.output
    svgs = list(figures.glob("*.svg"))
    assert svgs and all("TAMPERED" in svg.read_text() for svg in svgs)


# ---- 5, 11. a run sets a replication apart from a copy -------------------------------------


def test_honest_runs_in_one_second_are_apart_and_a_copy_is_named(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34.11: three honest sweeps finishing in the same second were called copies
    (their provenance was the same to the byte). Issue 34.5: a pinned fake replication
    (copied, its `utc` moved, rehashed, pinned, committed) counted as a new run. Each run now
    records a nonce of its own: honest runs differ, a copy shares its original's."""
    from probelab import measurement

    class Frozen(measurement.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return measurement.datetime(2030, 1, 1, tzinfo=tz)

    monkeypatch.setattr(measurement, "datetime", Frozen)
    runs = [toylab.as_measured(toylab.sim_dataset()) for _ in range(3)]
    committed(toylab)
    provs = [dataset.stored_provenance(p) for p in runs]
    assert len({p["utc"] for p in provs}) == 1 and len({p["run"]["nonce"] for p in provs}) == 3
    result = verify_archive()
    assert not result["problems"], result["problems"]
    assert not [n for n in result["notes"] if "the same values" in n]
    copy = toylab.as_measured(runs[0], name="20300101T000001Z.nc",
                              utc="2030-01-01T00:00:01+00:00")
    committed(toylab, "a replication")
    assert dataset.stored_provenance(copy)["run"] == provs[0]["run"]
    problems = verify_archive()["problems"]
    assert (manifest.relative(copy), (Finding(Rule.COPY_OF_RUN, manifest.relative(runs[0])),)) \
        in [(p.at, p.findings) for p in problems], problems
    assert any(p.startswith(f"{manifest.relative(copy)}: the same values, code objects and "
                            f"run nonce as {manifest.relative(runs[0])}: a copy")
               for p in lines(problems))  # the words, pinned


def test_measurements_without_a_run_record_are_noted_as_indistinguishable(
        toylab: ToyLab) -> None:
    from toylab import DELETE

    old = [toylab.as_measured(toylab.sim_dataset(), run=DELETE,
                              utc=f"2030-01-01T00:00:0{i}+00:00") for i in range(2)]
    committed(toylab)
    result = verify_archive()
    assert not result["problems"]
    a, b = sorted(manifest.relative(p) for p in old)
    assert f"{b}: the same values and code objects as {a}, and {b} records no run nonce " \
           "to tell the runs apart" in "\n".join(result["notes"])


def test_a_device_run_records_which_device_and_which_run(toylab: ToyLab) -> None:
    path = toylab.sim_dataset()
    run = dataset.stored_provenance(path)["run"]
    assert len(run["nonce"]) == 32 and run["pid"] == os.getpid() and run["seconds"] >= 0
    from probelab.backends import device_uuid

    assert device_uuid(bytes(range(16))) == "00010203-0405-0607-0809-0a0b0c0d0e0f"


# ---- what is read whole, and slabs ----------------------------------------------------------


def _declaring(path: Path, build: Callable[[h5netcdf.File], None]) -> Path:
    """A valid small dataset at `path`, then `build` adds to it through netCDF (declared,
    never written: a few KB of file)."""
    ds = xr.Dataset({"value": (("kernel", "a"), np.arange(6, dtype=np.uint32).reshape(2, 3))},
                    coords={"kernel": ("kernel", ["k0", "k1"]), "a": ("a", np.arange(3))})
    dataset.save(ds, path, {"probe": "toy", "simulated": True})
    with h5netcdf.File(path, "a") as f:
        build(f)
    return path


def test_what_a_dataset_reads_whole_is_bounded(tmp_path: Path) -> None:
    """Issue 34: coordinates are read whole when a dataset opens, a chunk is decompressed
    whole, a 1-D variable was read whole: a file of a few KB declaring 80 MB of coordinates
    or a 1.2 GB chunk (2.4 GB resident when read) is refused from its metadata."""
    def coordinate(f: h5netcdf.File) -> None:
        f.dimensions["n"] = 20 * 2**20
        f.create_variable("n", ("n",), "u4", chunks=(2**16,))

    def chunk(f: h5netcdf.File) -> None:
        f.dimensions["n"] = 20 * 2**20
        f.create_variable("huge", ("kernel", "n"), "f8", chunks=(1, 20 * 2**20))

    for build, why in ((coordinate, "its coordinates would be read 83,886,1"),
                       (chunk, "a chunk of huge would be read 167,772,160 bytes")):
        path = _declaring(tmp_path / f"{build.__name__}.nc", build)
        assert path.stat().st_size < 64 * 1024
        with pytest.raises(check.UsageError, match=why):
            dataset.load(path)

    def wide(f: h5netcdf.File) -> None:  # 96 MiB of one row: hashed a slab at a time
        f.dimensions["n"] = 96 * 2**20
        f.create_variable("wide", ("n",), "u1", chunks=(2**20,))

    ds = dataset.load(_declaring(tmp_path / "wide.nc", wide))
    tracemalloc.start()
    try:
        dataset.computed_content_sha256(ds)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20, f"{peak / 2**20:.0f} MB to hash a 96 MiB row"


def test_verify_retired_holds_a_retired_dataset_too_large_to_read_to_its_pin(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = toylab.sim_dataset()
    ds, padded = dataset.load(sim), sim.with_name("padded.nc")  # 16 KB more than `new`
    dataset.save(ds.assign(pad=("p", np.zeros(4096, np.uint32))), padded,
                 dataset.provenance(ds))
    old = toylab.as_measured(padded, utc="2030-01-01T00:00:00+00:00", probe_version="1")
    new = toylab.as_measured(sim, utc="2030-01-01T00:00:01+00:00", probe_version="2")
    committed(toylab)
    assert invoke("retire", old, "--by", new, "--reason", "superseded").exit_code == 0
    committed(toylab, "retired")
    monkeypatch.setattr(dataset, "MAX_DATASET_BYTES", 8192)  # as a 2.96 GB file is
    result = verify_archive(retired=True)
    assert not result["problems"], result["problems"]
    assert any(n.startswith(f"{manifest.relative(old)}: retired, and declaring") and
               n.endswith("held to its pin only") for n in result["notes"]), result["notes"]


def test_attributes_hdf5_keeps_for_itself_are_read_only_as_it_writes_them(
        tmp_path: Path) -> None:
    """Found by bench/fuzz.py: a CLASS attribute that is an array (no single truth) was a
    ValueError out of the read bound, not a refusal."""
    path = _declaring(tmp_path / "class.nc", lambda f: None)
    with h5py.File(path, "r+") as f:
        f["value"].attrs["CLASS"] = np.array([1, 2, 3])
        f["a"].attrs["NAME"] = np.array([b"x", b"y"])
    assert dataset.load(path)["value"].values.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert dataset.read_summarised(path).summary.kernels == ("k0", "k1")


@pytest.mark.parametrize("attribute", ["DIMENSION_LIST", "REFERENCE_LIST"])
def test_a_dimension_scale_attribute_of_another_form_is_refused_not_a_crash(
        tmp_path: Path, attribute: str) -> None:
    """A DIMENSION_LIST that is a float64 array (what the dataset fuzzer made, seed 4) sent
    HDF5's dimension-scale calls, made by xarray's reader, into freed memory: the process
    died (SIGSEGV/SIGABRT). Its type is read first: one line, in a fresh process."""
    ds = xr.Dataset({"value": (("kernel", "i"), np.arange(8, dtype=np.uint32)[None])},
                    coords={"kernel": ["k"], "i": np.arange(8)})
    path = dataset.save(ds, tmp_path / "x.nc", {"probe": "toy", "simulated": True})
    with h5py.File(path, "r+") as handle:
        target = handle["value"] if attribute == "DIMENSION_LIST" else handle["i"]
        del target.attrs[attribute]
        target.attrs[attribute] = np.linspace(0, 1, 1539)
    code = ("import sys; from pathlib import Path; from probelab import dataset\n"
            "from probelab.errors import UsageError\n"
            "try:\n    dataset.read_summarised(Path(sys.argv[1])).open()\n"
            "except UsageError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120,
                          env=dict(os.environ, PROBELAB_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 0, done.stderr[-500:]
    assert "is not a probelab dataset" in done.stdout and attribute in done.stdout
