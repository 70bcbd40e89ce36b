"""Datasets: one xarray Dataset per sweep, saved as netCDF4 (h5netcdf), with provenance.

Provenance is one JSON string attr (netCDF attrs hold no dicts, bools or None). No
variable gets a fill value, so uint32 0xFFFFFFFF is data, never "missing".
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import xarray as xr

from probelab.errors import UsageError
from probelab.storage import atomic_write_with

SCHEMA = 1
ENGINE = "h5netcdf"


def grid_coords(ds: xr.Dataset) -> list[str]:
    """Stimulus coordinates: everything but the kernel axis."""
    return sorted(str(c) for c in ds.coords if c != "kernel")


def grid_sha256(ds: xr.Dataset) -> str:
    """Hash of the stimulus grid, independent of dtype spelling and file format."""
    h = hashlib.sha256()
    for name in grid_coords(ds):
        values = ds.coords[name].values
        h.update(f"{name}|{','.join(map(str, ds.coords[name].dims))}|{values.shape}|".encode())
        if values.dtype.kind in "iub":
            h.update(values.astype("<i8").tobytes())
        else:
            h.update("\0".join(map(str, values.reshape(-1))).encode())
    return h.hexdigest()


def provenance(ds: xr.Dataset) -> dict[str, Any]:
    try:
        return json.loads(ds.attrs["provenance"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise UsageError("dataset has no readable provenance attr") from exc


def with_provenance(ds: xr.Dataset, prov: dict[str, Any]) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {"probelab_schema": SCHEMA, "provenance": json.dumps(prov, sort_keys=True)}
    return ds


def save(ds: xr.Dataset, path: Path, prov: dict[str, Any]) -> Path:
    """Write atomically: a failed write leaves nothing at `path`."""
    ds = with_provenance(ds, prov)
    encoding = {str(v): {"_FillValue": None} for v in ds.variables}
    for name, var in ds.variables.items():
        if var.dtype.kind in "iu" and var.size >= 4096:  # lossless; lane data compress well
            encoding[str(name)] |= {"compression": "gzip", "compression_opts": 4, "shuffle": True}
    atomic_write_with(path, lambda tmp: ds.to_netcdf(tmp, engine=ENGINE, encoding=encoding))
    return path


def load(path: Path) -> xr.Dataset:
    try:
        ds = xr.load_dataset(path, engine=ENGINE, mask_and_scale=False)
    except Exception as exc:  # truncated, not netCDF, not HDF5: one clear message
        raise UsageError(f"cannot read dataset {path}: {type(exc).__name__}: {exc}") from exc
    if ds.attrs.get("probelab_schema") != SCHEMA:
        raise UsageError(f"{path} is not a probelab dataset (schema {SCHEMA})")
    provenance(ds)
    return ds


def is_simulated(ds: xr.Dataset) -> bool:
    return bool(provenance(ds).get("simulated", True))  # unknown counts as simulated
