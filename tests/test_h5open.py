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


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the HDF5 variables decoded from here on, one per read."""
    reads: list[str] = []
    original = h5py.Dataset.__getitem__

    def counting(self, key):
        reads.append(self.name.lstrip("/"))
        return original(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    return reads


@pytest.mark.parametrize("slab", ["whole", "per kernel"])
def test_a_slab_hashing_decoded_is_handed_once_to_the_scorer_that_reads_it_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slab: str) -> None:
    """Within `keeping`, judging a dataset (its content hash) keeps the slabs of the wanted
    variables it decodes, read as a claim's scorer reads them (whole, or a kernel at a time
    where large), and the scorer's read of the same slab takes it instead of decoding it
    again: once, read only, the file's own values; the hash is the same either way, other
    variables are not kept, and nothing is kept beyond the budget or outside `keeping`."""
    from probelab import scoring

    rng = np.random.default_rng(7)
    obs = rng.integers(0, 9, (3, 64, 32)).astype(np.uint32)
    ds = xr.Dataset({"obs": (("kernel", "i", "j"), obs),
                     "other": (("kernel", "i"), rng.integers(0, 9, (3, 64)))},
                    coords={"kernel": ["a", "b", "c"]})
    path = dataset.save(ds, tmp_path / "x.nc", {"probe": "toy", "simulated": True})
    if slab == "per kernel":  # a kernel's values fit a slab, the whole variable does not
        for module in (dataset, scoring):
            monkeypatch.setattr(module, "SLAB_BYTES", obs[0].nbytes)
    caches = iter(range(4))

    def judged() -> dataset.Read:  # as a cold verify reads it: no summary kept yet
        monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / f"cache{next(caches)}"))
        return dataset.read_summarised(path)

    def scorer_reads(read: dataset.Read) -> list[np.ndarray]:
        observed = scoring._Observed(read.open(), scoring._Room(1 << 30))
        return [observed.values("obs", k, (), per_kernel=True) for k in range(3)]

    plain = judged().summary.content
    reads = _counted_reads(monkeypatch)
    with h5open.keeping({"obs"}, budget=obs.nbytes) as keeper:
        read = judged()
        hashed = reads.count("obs")
        taken = scorer_reads(read)
        assert reads.count("obs") == hashed, "the scorer decoded a slab hashing had decoded"
        assert np.array_equal(np.stack(taken), obs)
        assert not any(t.flags.writeable for t in taken)
        assert keeper.free == obs.nbytes  # handed over: the keeper holds nothing now
        assert "other" not in keeper.wanted and reads.count("other") == 1
        keeper.stop()  # as verify does once its datasets are judged: a read again is its own
        scorer_reads(read)
        assert keeper.free == obs.nbytes
        decodes = reads.count("obs") - hashed  # a scorer's own reads, nothing kept
        assert decodes == (1 if slab == "whole" else 3), "a slab was handed twice"
    assert read.summary.content == plain
    with h5open.keeping({"obs"}, budget=obs.nbytes // 4):  # no room: decoded again
        before = reads.count("obs")
        scorer_reads(judged())
        assert reads.count("obs") == before + hashed + decodes
    before = reads.count("obs")  # outside `keeping`: nothing kept (hashed whole: it is small)
    scorer_reads(judged())
    assert reads.count("obs") == before + 1 + decodes
