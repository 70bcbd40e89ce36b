"""Datasets on disk: exact round trips, atomic writes, and sweeps that must not save."""

import hashlib
import os
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from toylab import ToyLab

from probelab import dataset, storage
from probelab.errors import IntegrityError, UsageError
from probelab.sweep import run_sweep

PROV = {"probe": "toy", "simulated": True, "nested": {"list": [1, 2, 3], "none": None},
        "flag": False, "text": "ünïcødé"}


def sample() -> xr.Dataset:
    values = np.array([[[0, 0xFFFFFFFF, 1], [0x80000000, 0x7FFFFFFF, 0xFFFFFFFE]]],
                      dtype=np.uint32)
    return xr.Dataset(
        {"value": (("kernel", "a", "b"), values)},
        coords={"kernel": ("kernel", np.array(["add"])),
                "a": ("a", np.array([0, 0xFFFFFFFF], np.uint32)),
                "label": ("a", np.array(["zero", "all-ones"])),
                "b": ("b", np.arange(3, dtype=np.uint32))},
    )


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---- round trip ---------------------------------------------------------------------------


def test_round_trip_is_exact(tmp_path: Path) -> None:
    ds = sample()
    path = dataset.save(ds, tmp_path / "x.nc", PROV)
    back = dataset.load(path)
    assert back["value"].dtype == np.uint32
    np.testing.assert_array_equal(back["value"].values, ds["value"].values)
    assert int(back["value"].values.max()) == 0xFFFFFFFF
    assert int(back["value"].values.min()) == 0
    assert not back["value"].isnull().any()
    assert back["a"].dtype == np.uint32
    np.testing.assert_array_equal(back["a"].values, [0, 0xFFFFFFFF])
    assert [str(v) for v in back["label"].values] == ["zero", "all-ones"]
    assert [str(v) for v in back["kernel"].values] == ["add"]
    assert dataset.provenance(back) == PROV | {
        dataset.CONTENT_KEY: dataset.content_sha256(back, PROV)}
    assert dataset.tampered(back) is None
    assert back.attrs["probelab_schema"] == dataset.SCHEMA
    assert dataset.is_simulated(back) is True


def test_file_is_netcdf4_without_fill_values(tmp_path: Path) -> None:
    path = dataset.save(sample(), tmp_path / "x.nc", PROV)
    assert path.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"  # netCDF4 = HDF5
    xr.load_dataset(path, engine="h5netcdf")  # readable by the h5netcdf engine
    with h5py.File(path, "r") as f:
        assert f["value"].dtype == np.uint32
        assert "_FillValue" not in f["value"].attrs
        for name in ("a", "b"):
            assert "_FillValue" not in f[name].attrs
    # Plain xarray (masking on) must not turn 0xFFFFFFFF into a missing value either.
    plain = xr.load_dataset(path, engine="h5netcdf")
    assert int(plain["value"].values[0, 0, 1]) == 0xFFFFFFFF


def test_large_integer_and_float_variables_are_stored_compressed_and_exact(
        tmp_path: Path) -> None:
    """Raw decoded waves are float64 (lane-id D values): gzip+shuffle, like the integer
    lane data, and read back bit for bit (NaN, -0.0, subnormals included)."""
    rng = np.random.default_rng(0)
    floats = np.round(rng.integers(0, 2**20, 8192) / 3.0)
    floats[:4] = [np.nan, -0.0, 5e-324, np.inf]
    ds = xr.Dataset({"raw": (("kernel", "i"), floats[None]),
                     "ids": ("i", np.arange(8192, dtype=np.uint32)), "few": ("j", np.zeros(8))},
                    coords={"kernel": ["add"]})
    path = dataset.save(ds, tmp_path / "x.nc", PROV)
    with h5py.File(path, "r") as f:
        assert f["raw"].compression == "gzip" and f["raw"].shuffle
        assert f["ids"].compression == "gzip" and f["few"].compression is None
    back = dataset.load(path)
    assert back["raw"].values.tobytes() == floats.tobytes()


def test_a_large_variable_is_stored_in_chunks_of_c_order_blocks(tmp_path: Path) -> None:
    """A variable over CHUNK_BYTES is chunked as checks read it: whole trailing axes, a run
    of one axis, ones before (probelab.blocks), so each compressed chunk is decoded once."""
    values = np.arange(2 * 2000 * 1024, dtype=np.uint32).reshape(2, 2000, 1024)
    ds = xr.Dataset({"big": (("kernel", "a", "b"), values)},
                    coords={"kernel": ["x", "y"]})
    path = dataset.save(ds, tmp_path / "x.nc", PROV)
    with h5py.File(path, "r") as f:
        assert f["big"].chunks == (1, dataset.CHUNK_BYTES // 4 // 1024, 1024)
    assert dataset.load(path)["big"].values.tobytes() == values.tobytes()


def test_a_large_variable_hashes_part_by_part_as_it_would_whole(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """verify opens a dataset lazily and hashes a large variable a leading index at a time:
    the same content hash as hashing it whole, and a change in any part still shows."""
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 9, (2, 3, 4, 5)).astype(np.float64)
    ds = xr.Dataset({"raw": (("kernel", "p", "q", "r"), raw)},
                    coords={"kernel": ["a", "b"]})
    path = dataset.save(ds, tmp_path / "x.nc", PROV)
    whole = dataset.computed_content_sha256(dataset.load(path))
    monkeypatch.setattr(dataset, "_PART", 40)  # a row of five float64s is read whole
    lazy, content, _ = dataset.load_hashed(path)
    assert content == whole == dataset.computed_content_sha256(lazy)
    assert [p.shape for p in dataset._parts(lazy.variables["raw"])] == [(1, 5)] * 24
    monkeypatch.setattr(dataset, "_PART", 100)  # slabs of two q rows (80 bytes)
    assert [p.shape for p in dataset._parts(lazy.variables["raw"])] == [(2, 5), (2, 5)] * 6
    edited = dataset.load(path)
    edited["raw"].values[1, 2, 3, 4] += 1
    assert dataset.computed_content_sha256(edited) != whole


@pytest.mark.parametrize("dtype", ["<f8", ">f8", "<i8", "<u8", "<u4", "<i2", "|u1", "<f4"])
def test_values_hash_as_their_canonical_bytes_whatever_they_are_stored_as(
        dtype, monkeypatch) -> None:
    """Values already in the canonical form are hashed as they are (no copy), others
    converted chunk by chunk: the bytes are those of the values converted whole."""
    monkeypatch.setattr(dataset, "_CHUNK", 7)
    values = np.random.default_rng(2).integers(-(2**15), 2**15, 50).astype(dtype)
    canonical = dataset._canonical(values.dtype.kind)[1]
    fed = hashlib.sha256()
    dataset._feed(fed, values.reshape(5, 10), canonical)
    assert fed.digest() == hashlib.sha256(values.astype(canonical).tobytes()).digest()


def test_inherited_fill_value_encoding_is_dropped(tmp_path: Path) -> None:
    # A dataset read from a file that declared a fill value carries it in .encoding;
    # saving it must still write no _FillValue, or 0xFFFFFFFF would read back as missing.
    ds = sample()
    for name in ("value", "a", "b"):
        ds[name].encoding["_FillValue"] = np.uint32(0xFFFFFFFF)
    path = dataset.save(ds, tmp_path / "x.nc", PROV)
    with h5py.File(path, "r") as f:
        for name in ("value", "a", "b"):
            assert "_FillValue" not in f[name].attrs, name
    back = xr.load_dataset(path, engine="h5netcdf")  # even a default (masking) reader
    assert back["value"].dtype == np.uint32
    assert int(back["value"].values[0, 0, 1]) == 0xFFFFFFFF


def test_load_never_masks_values(tmp_path: Path) -> None:
    # A file that does declare _FillValue = 0xFFFFFFFF: load still returns the raw words.
    ds = sample()
    ds.attrs = {"probelab_schema": dataset.SCHEMA, "provenance": "{}"}
    path = tmp_path / "x.nc"
    ds.to_netcdf(path, engine="h5netcdf",
                 encoding={"value": {"_FillValue": np.uint32(0xFFFFFFFF)}})
    back = dataset.load(path)
    assert back["value"].dtype == np.uint32
    np.testing.assert_array_equal(back["value"].values, ds["value"].values)


def test_save_leaves_the_caller_dataset_alone(tmp_path: Path) -> None:
    ds = sample()
    ds.attrs["mine"] = "kept"
    dataset.save(ds, tmp_path / "x.nc", PROV)
    assert ds.attrs == {"mine": "kept"}


def test_grid_hash_survives_round_trip_and_sees_changes(tmp_path: Path) -> None:
    ds = sample()
    back = dataset.load(dataset.save(ds, tmp_path / "x.nc", PROV))
    assert dataset.grid_sha256(back) == dataset.grid_sha256(ds)
    changed = ds.assign_coords(b=("b", np.array([0, 1, 3], np.uint32)))
    assert dataset.grid_sha256(changed) != dataset.grid_sha256(ds)
    relabelled = ds.assign_coords(label=("a", np.array(["zero", "ones"])))
    assert dataset.grid_sha256(relabelled) != dataset.grid_sha256(ds)
    # The observed values and the kernel axis are not part of the grid.
    other_values = ds.copy(deep=True)
    other_values["value"].values[...] = 7
    assert dataset.grid_sha256(other_values) == dataset.grid_sha256(ds)
    # Integer dtype spelling does not matter.
    widened = ds.assign_coords(b=("b", np.arange(3, dtype=np.int64)))
    assert dataset.grid_sha256(widened) == dataset.grid_sha256(ds)


# ---- atomic writes ------------------------------------------------------------------------


class Boom(Exception):
    pass


def half_writer(tmp: Path) -> None:
    tmp.write_bytes(b"partial")
    raise Boom


def test_failed_atomic_write_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out" / "x.nc"
    with pytest.raises(Boom), storage.atomic_path(target) as tmp:
        half_writer(tmp)
    assert not target.exists()
    assert listing(target.parent) == []


def test_failed_rewrite_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    storage.atomic_write_text(target, "old")
    with pytest.raises(Boom), storage.atomic_path(target) as tmp:
        half_writer(tmp)
    assert target.read_text() == "old"
    assert listing(tmp_path) == ["x.txt"]


def test_failed_dataset_save_leaves_nothing(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def exploding(self, *args, **kwargs):
        raise Boom

    existing = dataset.save(sample(), tmp_path / "old.nc", PROV)
    before = existing.read_bytes()
    monkeypatch.setattr(xr.Dataset, "to_netcdf", exploding)
    with pytest.raises(Boom):
        dataset.save(sample(), tmp_path / "new.nc", PROV)
    with pytest.raises(Boom):
        dataset.save(sample(), existing, PROV)
    assert listing(tmp_path) == ["old.nc"]
    assert existing.read_bytes() == before


def test_a_new_dataset_too_large_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over MAX_NEW_DATASET_BYTES decoded (a zero-strided view declares 600 MB in no
    memory), or over MAX_NEW_FILE_BYTES as written: one line, and no file. Reading holds a
    dataset to the same bound (the old lane-id datasets over it are retired)."""
    wide = xr.Dataset({"value": (("kernel", "i"), np.broadcast_to(np.uint8(0), (1, 6 * 10**8)))},
                      coords={"kernel": ("kernel", np.array(["k"]))})
    with pytest.raises(UsageError, match=r"not saved: the dataset would declare 600\.0 MB "
                       r"decoded, over the 512 MB") as refused:
        dataset.save(wide, tmp_path / "wide.nc", PROV)
    assert "\n" not in str(refused.value)
    monkeypatch.setattr(dataset, "MAX_NEW_FILE_BYTES", 1000)
    noise = sample().assign(noise=("n", np.random.default_rng(1).random(4096)))
    with pytest.raises(UsageError, match=r"MB on disk, over the 0 MB a new dataset may"):
        dataset.save(noise, tmp_path / "noise.nc", PROV)
    assert listing(tmp_path) == []
    assert dataset.MAX_DATASET_BYTES == dataset.MAX_NEW_DATASET_BYTES  # what reading takes


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    storage.atomic_write_text(target, "a much longer old text")
    storage.atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert listing(tmp_path) == ["x.txt"]


# ---- load errors --------------------------------------------------------------------------


def test_truncated_file_is_a_usage_error(tmp_path: Path) -> None:
    path = dataset.save(sample(), tmp_path / "x.nc", PROV)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UsageError, match=rf"x\.nc is not a probelab dataset \(truncated: "
                       rf"{len(data) // 2:,} of the {len(data):,} bytes its header declares\)"):
        dataset.load(path)


@pytest.mark.parametrize(("content", "why"), [
    (b"", "empty"), (b"hello, not netCDF\n", "not netCDF4/HDF5"),
    (b"CDF\x01" + b"\0" * 64, "not netCDF4/HDF5")], ids=["empty", "text", "netcdf3"])
def test_non_netcdf_file_is_a_usage_error(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "x.nc"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=f"not a probelab dataset \\({why}"):
        dataset.load(path)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such dataset"):
        dataset.load(tmp_path / "nope.nc")
    with pytest.raises(UsageError, match=r"is not a regular file \(a folder\)"):
        dataset.load(tmp_path)


def test_foreign_netcdf_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "foreign.nc"
    sample().to_netcdf(path, engine="h5netcdf")
    with pytest.raises(UsageError, match="not a probelab dataset"):
        dataset.load(path)


def test_unreadable_provenance_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "x.nc"
    ds = sample()
    ds.attrs = {"probelab_schema": dataset.SCHEMA, "provenance": "{not json"}
    ds.to_netcdf(path, engine="h5netcdf")
    with pytest.raises(UsageError, match="provenance"):
        dataset.load(path)


# ---- sweeps -------------------------------------------------------------------------------


def test_sim_sweep_writes_a_complete_dataset(toylab: ToyLab) -> None:
    path = toylab.sim_dataset()
    assert path.is_relative_to(toylab.root / "sim-data")
    assert path.parent == toylab.root / "sim-data" / "toy" / "sm_90"
    ds = dataset.load(path)
    prov = dataset.provenance(ds)
    assert prov["simulated"] is True and prov["backend"] == "sim"
    assert prov["git_head"] == toylab.head()
    assert prov["repeats"] == 2 and prov["repeats_identical"] is True
    assert prov["grid_sha256"] == dataset.grid_sha256(ds)
    assert prov["kernels"]["add"]["source"] == "probes/toy/toy.cu"
    a = ds["a"].values.astype(np.int64)[:, None]
    b = ds["b"].values.astype(np.int64)[None, :]
    np.testing.assert_array_equal(ds["value"].sel(kernel="add").values, a + b)
    assert list(toylab.data.iterdir()) == []


def test_wrong_model_output_size_saves_nothing(toylab: ToyLab,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    probe = toylab.probe()
    monkeypatch.setattr(probe, "simulate", lambda kernel, inputs: {"out": np.zeros(127)})
    out = toylab.root / "sim-data"
    with pytest.raises(IntegrityError, match="127 words"):
        run_sweep("toy", "sim", out_root=out, repeats=2)
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []


def test_nondeterministic_model_saves_nothing(toylab: ToyLab,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    probe = toylab.probe()
    calls = iter(range(100))
    monkeypatch.setattr(probe, "simulate",
                        lambda kernel, inputs: {"out": np.full(128, next(calls), np.uint32)})
    out = toylab.root / "sim-data"
    with pytest.raises(IntegrityError, match="differs between repeat"):
        run_sweep("toy", "sim", out_root=out, repeats=2)
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []


def test_declared_nondeterminism_is_saved_and_recorded(toylab: ToyLab,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe that declares `out` nondeterministic gets its dataset, with repeat 0's values
    and, per kernel, how many cells varied; repeats_identical says False."""
    probe = toylab.probe()
    calls = iter(range(100))
    monkeypatch.setattr(probe, "simulate", lambda kernel, inputs: {
        "out": np.where(np.arange(128) < 3, next(calls), 7).astype(np.uint32)})
    monkeypatch.setattr(probe, "nondeterministic", frozenset({"out"}), raising=False)
    result = run_sweep("toy", "sim", out_root=toylab.root / "sim-data", repeats=3)
    prov = dataset.provenance(dataset.load(result.path))
    assert prov["repeats_identical"] is False
    assert prov["nondeterministic"] == {"add": {"out": 3}}


@pytest.mark.parametrize("sub", [".", "toy", "deep/er"])
def test_simulated_sweep_never_goes_under_data(toylab: ToyLab, sub: str) -> None:
    with pytest.raises(UsageError, match="never go under data/"):
        run_sweep("toy", "sim", out_root=toylab.data / sub, repeats=2)
    with pytest.raises(UsageError, match="never go under data/"):
        run_sweep("toy", "sim", out_root=Path("data") / sub, repeats=2)  # relative to cwd
    assert [p for p in toylab.data.rglob("*") if p.is_file()] == []


def test_simulated_sweep_via_symlink_into_data_is_refused(toylab: ToyLab) -> None:
    link = toylab.root / "looks-harmless"
    link.symlink_to(toylab.data, target_is_directory=True)
    with pytest.raises(UsageError):
        run_sweep("toy", "sim", out_root=link, repeats=2)
    assert [p for p in toylab.data.rglob("*") if p.is_file()] == []


def test_sweep_argument_errors(toylab: ToyLab) -> None:
    with pytest.raises(UsageError, match="repeats"):
        run_sweep("toy", "sim", repeats=0)
    with pytest.raises(UsageError, match="unknown probe"):
        run_sweep("nosuch", "sim")
    with pytest.raises(UsageError, match="unknown backend"):
        run_sweep("toy", "nosuch")
    with pytest.raises(UsageError, match="does not target"):
        run_sweep("toy", "sim", target="gfx1201")
    assert not (toylab.root / "sim-data").exists()


def test_sweep_does_not_overwrite_a_dataset(toylab: ToyLab,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = toylab.sim_dataset()
    before = first.read_bytes()
    mtime = os.stat(first).st_mtime_ns
    name = first.stem

    class FrozenClock:
        @staticmethod
        def now(tz=None):
            from datetime import datetime

            return datetime.strptime(name, "%Y%m%dT%H%M%SZ").replace(tzinfo=tz)

    monkeypatch.setattr("probelab.measurement.datetime", FrozenClock)
    second = run_sweep("toy", "sim", out_root=toylab.root / "sim-data", repeats=2).path
    assert second == first.with_name(f"{name}-2.nc")  # same second: a new name, never over
    assert first.read_bytes() == before and os.stat(first).st_mtime_ns == mtime
    assert dataset.tampered(dataset.load(second)) is None
