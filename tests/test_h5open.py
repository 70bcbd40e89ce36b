"""probelab.h5open reads a dataset file as xarray (h5netcdf engine, mask_and_scale=False)
does: the same variables in the same order, coordinates, dims, dtypes, attributes and
values, and so the same content hash; anything it does not read is left to xarray."""

import io
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

from probelab import dataset, h5open

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = sorted((ROOT / "data").rglob("*.nc"))
# the default run's witnesses: every ninth dataset under 1 MiB (the slow run reads the rest
# by the same check, so that none is read twice where both run)
QUICK = [p for p in ARCHIVE if p.stat().st_size < 2**20][::9]


def _same(a: xr.Dataset, b: xr.Dataset, values_up_to: float = 64e6) -> None:
    assert list(a.variables) == list(b.variables)
    assert set(a.coords) == set(b.coords) and dict(a.sizes) == dict(b.sizes)
    assert {k: repr(v) for k, v in a.attrs.items()} == {k: repr(v) for k, v in b.attrs.items()}
    for name in a.variables:
        va, vb = a.variables[name], b.variables[name]
        assert (va.dims, va.dtype) == (vb.dims, vb.dtype), name
        assert {k: repr(v) for k, v in va.attrs.items()} == \
            {k: repr(v) for k, v in vb.attrs.items()}, name
        if va.size * va.dtype.itemsize <= values_up_to:
            assert va.values.tobytes() == vb.values.tobytes(), name
    assert dataset.computed_content_sha256(a) == dataset.computed_content_sha256(b)


def _xarray(data: bytes) -> xr.Dataset:
    return xr.open_dataset(io.BytesIO(data), engine="h5netcdf", mask_and_scale=False)


def test_every_kind_of_variable_a_sweep_writes_reads_as_xarray_reads_it(tmp_path: Path) -> None:
    """Integers of every width, floats with NaN and -0.0, text (0-d, 1-d, empty), a
    dimension without a variable, non-index coordinates, attributes of every kind."""
    values = np.array([np.nan, -0.0, 1.5, np.inf] * 4096)
    ds = xr.Dataset(
        {"raw": (("kernel", "i"), values[None]),
         "ids": (("kernel", "j"), np.arange(8, dtype=np.uint32)[None],
                 {"flag_values": np.array([4294967294, 4294967295], np.uint32),
                  "flag_meanings": "none invalid", "one": np.int64(1)}),
         "small": ("odd", np.zeros(3, np.int16)), "empty": ("none", np.array([], str)),
         "flag": ((), np.uint8(1)), "names": ("j", np.array([f"n{k}" for k in range(8)]))},
        coords={"kernel": ["add"], "i": np.arange(16384), "j": np.arange(8, dtype=np.int8),
                "grid": (("kernel", "j"), np.ones((1, 8), np.uint64)), "label": ((), "text")})
    path = dataset.save(ds, tmp_path / "x.nc", {"probe": "toy", "simulated": True})
    data = path.read_bytes()
    _same(_xarray(data), h5open.open_bytes(data))


def test_a_file_it_does_not_read_is_left_to_xarray(tmp_path: Path) -> None:
    path = tmp_path / "group.nc"
    with h5py.File(path, "w") as handle:
        handle.create_group("inner")
    with pytest.raises(h5open.Unsupported):
        h5open.open_bytes(path.read_bytes())


@pytest.mark.parametrize("path", QUICK, ids=lambda p: p.parent.parent.name)
def test_archive_datasets_read_as_xarray_reads_them(path: Path) -> None:
    data = path.read_bytes()
    _same(_xarray(data), h5open.open_bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in ARCHIVE if p not in QUICK],
                         ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_archive_dataset_reads_as_xarray_reads_it(path: Path) -> None:
    """Every dataset but the default run's witnesses (test_archive_datasets_read_as_xarray_
    reads_them: the same check on each, a file under 1 MiB never being past values_up_to)."""
    data = path.read_bytes()
    _same(_xarray(data), h5open.open_bytes(data), values_up_to=0 if path.stat().st_size > 4e6
          and dataset.declared_bytes(path) > 1e9 else 64e6)


def _stored(tmp_path: Path, values: np.ndarray, chunks: tuple[int, ...]) -> h5py.Dataset:
    """`values` stored as dataset.save stores a large variable: chunked, shuffle, deflate."""
    handle = h5py.File(tmp_path / f"v{len(list(tmp_path.iterdir()))}.h5", "w")
    return handle.create_dataset("v", data=values, chunks=chunks, shuffle=True,
                                 compression="gzip", compression_opts=4)


KEYS = [(slice(None), slice(None), slice(None)), (0, slice(None), slice(None)),
        (-1, slice(3, 11), slice(None)), (slice(1, 3), 5, slice(2, 9)),
        (slice(2, 2), slice(None), slice(None)), (np.int64(2), -7, 1)]


@pytest.mark.parametrize("dtype", ["<i1", "<u2", "<i4", "<f4", "<u8", "<f8"])
def test_chunks_read_straight_give_what_hdf5_gives(tmp_path: Path, dtype: str) -> None:
    """Edge chunks (7 x 13 x 10 over chunks of 2 x 4 x 3), every byte width the shuffle
    undoes, integers, negative indices, empty spans: the values and dtype HDF5 reads."""
    rng = np.random.default_rng(7)
    values = rng.integers(-2**62, 2**62, (7, 13, 10)).astype(dtype)
    if values.dtype.kind == "f":
        values.flat[::5] = np.nan
    stored = _stored(tmp_path, values, (2, 4, 3))
    for key in KEYS:
        block = h5open._chunked(stored, key)
        assert block is not None, key
        expected = stored[key]
        assert block.dtype == expected.dtype and block.shape == expected.shape, key
        assert block.tobytes() == expected.tobytes(), key


@pytest.mark.parametrize("dtype", ["<i1", "<u2", "<i4", "<f4", "<u8", "<f8"])
def test_whole_chunks_in_one_run_are_put_together_in_place(tmp_path: Path, dtype: str) -> None:
    """Chunks spanning every trailing axis (as dataset.save chunks a large variable), wanted
    whole: their values are unshuffled straight into the block (an edge chunk, or one wanted
    in part, is copied in): the bytes HDF5 reads."""
    rng = np.random.default_rng(11)
    values = rng.integers(-2**62, 2**62, (7, 4, 10)).astype(dtype)
    stored = _stored(tmp_path, values, (2, 4, 10))
    spy, inner = [], h5open._unfiltered
    every = slice(None)
    for key, ways in [((every,) * 3, {3, 4}), ((slice(2, 6), every, every), {4}),
                      ((slice(1, 7), every, every), {3, 4}), ((3, every, every), {3}),
                      ((slice(0, 4), slice(1, 3), every), {3})]:  # 4 arguments: in place
        spy.clear()
        h5open._unfiltered = lambda *a, **k: spy.append(len(a) + len(k)) or inner(*a, **k)
        try:
            block = h5open._chunked(stored, key)
        finally:
            h5open._unfiltered = inner
        assert block is not None and block.tobytes() == stored[key].tobytes(), key
        assert set(spy) == ways, key


def test_what_it_does_not_read_straight_is_left_to_hdf5(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter skipped for a chunk, a chunk never written, bytes that inflate to more than a
    chunk (a bomb is not inflated past it), steps, arrays as keys, another pipeline, no
    zlib-ng: None, and the variable still reads as HDF5 reads it (or fails as HDF5 does)."""
    values = np.arange(7 * 13 * 10, dtype="<i4").reshape(7, 13, 10)
    stored = _stored(tmp_path, values, (2, 4, 3))
    whole = (slice(None),) * 3
    stored.id.write_direct_chunk((0, 0, 0), np.zeros(24, "<i4").tobytes(), filter_mask=0b11)
    assert h5open._chunked(stored, whole) is None
    with pytest.raises(OSError, match="filter returned failure"):  # HDF5's own answer
        h5open._Lazy(stored)._raw(whole)
    assert h5open._chunked(stored, (slice(2, 4), slice(None), slice(None))) is not None
    gaps = stored.file.create_dataset("gaps", shape=(4, 4), dtype="<i4", chunks=(2, 2),
                                      shuffle=True, compression="gzip")
    gaps[:2, :2] = 1
    assert h5open._chunked(gaps, (slice(None), slice(None))) is None
    bomb = stored.file.create_dataset("bomb", shape=(4,), dtype="<i4", chunks=(4,),
                                      shuffle=True, compression="gzip")
    bomb.id.write_direct_chunk((0,), zlib.compress(bytes(1 << 20)), filter_mask=0)
    assert h5open._chunked(bomb, (slice(None),)) is None
    assert h5open._Lazy(bomb)._raw((slice(None),)).tobytes() == bomb[:].tobytes()
    assert h5open._chunked(stored, (slice(None, None, 2), slice(None), slice(None))) is None
    assert h5open._chunked(stored, (np.array([0, 2]), slice(None), slice(None))) is None
    plain = stored.file.create_dataset("plain", data=values, chunks=(2, 4, 3),
                                       compression="gzip")
    assert h5open._chunked(plain, whole) is None
    fresh = _stored(tmp_path, values, (2, 4, 3))
    assert h5open._chunked(fresh, whole) is not None
    monkeypatch.setattr(h5open, "zlib_ng", None)
    assert h5open._chunked(fresh, whole) is None


def test_a_saved_dataset_read_straight_hashes_as_through_hdf5(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A variable large enough to be chunked, read lazily through open_bytes both ways: the
    same values and the same content hash."""
    values = np.random.default_rng(3).integers(0, 2**31, (3, 700, 1000)).astype(np.uint32)
    ds = xr.Dataset({"big": (("kernel", "i", "j"), values)}, coords={"kernel": ["a", "b", "c"]})
    data = dataset.save(ds, tmp_path / "big.nc", {"probe": "toy", "simulated": True}
                        ).read_bytes()
    read, chunked = [], h5open._chunked
    monkeypatch.setattr(h5open, "_chunked", lambda *a: read.append(chunked(*a)) or read[-1])
    fast = dataset.computed_content_sha256(h5open.open_bytes(data))
    assert read and all(block is not None for block in read)  # it read them all straight
    monkeypatch.setattr(h5open, "zlib_ng", None)
    assert dataset.computed_content_sha256(h5open.open_bytes(data)) == fast
    assert h5open.open_bytes(data)["big"].values.tobytes() == values.tobytes()
