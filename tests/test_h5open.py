"""probelab.h5open reads a dataset file as xarray (h5netcdf engine, mask_and_scale=False)
does: the same variables in the same order, coordinates, dims, dtypes, attributes and
values, and so the same content hash; anything it does not read is left to xarray."""

import io
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

from probelab import dataset, h5open

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = sorted((ROOT / "data").rglob("*.nc"))


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


@pytest.mark.parametrize("path", [p for p in ARCHIVE if p.stat().st_size < 2**20][::9],
                         ids=lambda p: p.parent.parent.name)
def test_archive_datasets_read_as_xarray_reads_them(path: Path) -> None:
    data = path.read_bytes()
    _same(_xarray(data), h5open.open_bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize("path", ARCHIVE, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_archive_dataset_reads_as_xarray_reads_it(path: Path) -> None:
    data = path.read_bytes()
    _same(_xarray(data), h5open.open_bytes(data), values_up_to=0 if path.stat().st_size > 4e6
          and dataset.declared_bytes(path) > 1e9 else 64e6)
