"""A dataset file opened straight from HDF5 (h5py), as xarray with the h5netcdf engine opens
it (`mask_and_scale=False`), in a fraction of the time: checks open every dataset of the
archive, and h5netcdf's per-variable dimension lookups cost more than reading the values.

What it reads is what probelab writes (netCDF4 through h5netcdf, dataset.save): variables at
the root, their dims from the netCDF dimension scales (`DIMENSION_LIST`), coordinates those
named by a `coordinates` attribute and the dimension variables, text as str, no fill values.
Anything else (a group, a dimension it cannot name, a dtype it does not know) is left to
xarray itself (`Unsupported`): the result is always what xarray would give.

A block of a variable stored as `dataset.save` stores it (chunks, shuffle then deflate) is
read chunk by chunk here (`_chunked`): each chunk's stored bytes taken as they are, inflated
by zlib-ng (about 3x zlib's speed here; bounded to the chunk's size) and unshuffled with
numpy, the same values as HDF5's own filters give (tests/test_h5open.py). Decompression was
about a third of a cold `verify`. Any other layout, pipeline or chunk (a filter skipped, a
chunk not written, bytes that do not inflate to exactly one chunk) is read by HDF5 itself.
"""

from __future__ import annotations

import io
import itertools
import math
import sys
from typing import Any

import h5py
import numpy as np
import xarray as xr
from xarray.backends.common import BackendArray
from xarray.core import indexing

try:  # a dependency; a machine without it (a device's bare venv) reads through HDF5
    from zlib_ng import zlib_ng
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    zlib_ng = None

# netCDF's and HDF5's own bookkeeping, which xarray does not show as attributes
_HIDDEN = {"_Netcdf4Dimid", "_Netcdf4Coordinates", "DIMENSION_LIST", "CLASS", "NAME",
           "REFERENCE_LIST", "coordinates", "_NCProperties"}
NOT_A_VARIABLE = b"This is a netCDF dimension but not a netCDF variable"


class Unsupported(Exception):
    """A file this reader does not read as xarray would: open it with xarray."""


class _Lazy(BackendArray):
    """One HDF5 dataset, read only where indexed (as xarray's backends read)."""

    def __init__(self, dataset: h5py.Dataset) -> None:
        self._dataset = dataset
        self.shape = dataset.shape
        self.dtype = dataset.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR, self._raw)

    def _raw(self, key: tuple) -> np.ndarray:
        block = _chunked(self._dataset, key)
        return np.asarray(self._dataset[key]) if block is None else block


_SHUFFLE_DEFLATE = (h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_DEFLATE)  # dataset.save's
_PLANES = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _chunked(dataset: h5py.Dataset, key: tuple) -> np.ndarray | None:
    """`dataset[key]` where `key` is basic (integers, and slices of step 1) and the variable
    is stored as `dataset.save` stores it, read chunk by chunk (module docstring); None
    where HDF5 reads it instead."""
    if zlib_ng is None or sys.byteorder != "little" or dataset.chunks is None or \
            dataset.dtype.kind not in "iuf" or dataset.dtype.byteorder == ">" or \
            len(key) != dataset.ndim or not all(
                (isinstance(k, slice) and k.step in (None, 1)) or
                (isinstance(k, int | np.integer) and -n <= k < n)
                for k, n in zip(key, dataset.shape, strict=True)):
        return None  # anything else, errors included, is HDF5's to read or to refuse
    plist = dataset.id.get_create_plist()
    if tuple(plist.get_filter(i)[0] for i in range(plist.get_nfilters())) != _SHUFFLE_DEFLATE:
        return None
    spans = [range(*k.indices(n)) if isinstance(k, slice) else range(int(k) % n, int(k) % n + 1)
             for k, n in zip(key, dataset.shape, strict=True)]
    out = np.empty([len(r) for r in spans], dataset.dtype)
    chunk, size = dataset.chunks, dataset.dtype.itemsize
    nbytes = math.prod(chunk) * size
    firsts = [range(r.start // c * c, r.stop, c) if len(r) else range(0)
              for r, c in zip(spans, chunk, strict=True)]
    for origin in itertools.product(*firsts):
        try:
            stored = dataset.id.read_direct_chunk(origin)
        except (KeyError, OSError, RuntimeError, ValueError):  # e.g. a chunk never written
            return None
        inside = tuple(slice(max(r.start, o) - o, min(r.stop, o + c) - o)
                       for r, o, c in zip(spans, origin, chunk, strict=True))
        into = tuple(slice(max(r.start, o) - r.start, min(r.stop, o + c) - r.start)
                     for r, o, c in zip(spans, origin, chunk, strict=True))
        place = out[into]
        if place.flags.c_contiguous and \
                all(s.start == 0 and s.stop == c for s, c in zip(inside, chunk, strict=True)):
            # the whole chunk is wanted, in one run of `out`: its values are put together
            # in their place (the same bits; no chunk-sized copy made first)
            if _unfiltered(stored, nbytes, size, place) is None:
                return None
            continue
        values = _unfiltered(stored, nbytes, size)
        if values is None:
            return None
        values = values.view(dataset.dtype.newbyteorder("<")).reshape(chunk)
        out[into] = values[inside]
    return out[tuple(0 if isinstance(k, int | np.integer) else slice(None) for k in key)]


def _unfiltered(stored: tuple[int, bytes], nbytes: int, size: int,
                into: np.ndarray | None = None) -> np.ndarray | None:
    """A chunk's values as bytes (uint8), from what HDF5 stored: inflated to exactly
    `nbytes` (never more: a chunk that inflates further is HDF5's to refuse), then the
    shuffle undone; None where a filter was skipped for it or it does not inflate so.
    `into`: a little-endian array of the chunk's shape and `size`-byte values, given the
    values in place (and returned) instead."""
    mask, raw = stored
    if mask:
        return None
    inflate = zlib_ng.decompressobj()
    try:
        flat = inflate.decompress(raw, nbytes)
    except zlib_ng.error:
        return None
    if len(flat) != nbytes or not inflate.eof or inflate.unconsumed_tail:
        return None
    planes = np.frombuffer(flat, np.uint8)
    if into is not None:  # the same bits as below, each value's bytes put together in place
        planes = planes.reshape(size, *into.shape)
        values = into.view(_PLANES[size] if size > 1 else np.uint8)
        np.copyto(values, planes[size - 1])
        for k in range(size - 2, -1, -1):
            values <<= 8
            values |= planes[k]
        return into
    if size == 1:
        return planes
    planes = planes.reshape(size, -1)  # byte k of every value, then byte k + 1 ...
    values = planes[size - 1].astype(_PLANES[size])
    for k in range(size - 2, -1, -1):
        values <<= 8
        values |= planes[k]
    return values.view(np.uint8)


def open_bytes(data: bytes) -> xr.Dataset:
    """The dataset in `data` (a netCDF4 file's bytes), its data variables lazy, its
    coordinates read; Unsupported where this reader would not give what xarray gives."""
    handle = h5py.File(io.BytesIO(data), "r")
    names: dict[h5py.Reference, str] = {}  # a dimension scale's reference -> its name
    items = list(handle.items())
    if any(not isinstance(obj, h5py.Dataset) for _, obj in items):
        raise Unsupported("a group")
    scales = {name: obj for name, obj in items if is_scale(obj)}
    sizes = {name: int(obj.shape[0]) for name, obj in scales.items() if obj.ndim == 1}
    coords = set(str(handle.attrs.get("coordinates", "")).split())
    variables: dict[str, tuple[tuple[str, ...], h5py.Dataset]] = {}
    for name, obj in items:
        nametag = obj.attrs.get("NAME")
        if name in scales and isinstance(nametag, bytes) and \
                nametag.startswith(NOT_A_VARIABLE):
            continue  # a dimension without a variable of its name
        dims = (name,) if name in scales else _dims(handle, obj, names)
        if any(d not in sizes for d in dims) or obj.dtype.kind not in "iufO":
            raise Unsupported(f"variable {name}")
        variables[name] = dims, obj
        coords |= set(_text(obj.attrs.get("coordinates", "")).split())
    out: dict[str, xr.Variable] = {}
    for name, (dims, obj) in variables.items():
        attrs = {k: _attr(v) for k, v in obj.attrs.items() if k not in _HIDDEN}
        if obj.dtype.kind == "O":  # text: read whole, as fixed-width str (as xarray does)
            values: Any = np.asarray(obj.asstr()[()], dtype=object).astype(str)
        elif name in coords or name in scales:
            values = np.asarray(obj[()])
        else:
            values = indexing.LazilyIndexedArray(_Lazy(obj))
        out[name] = xr.Variable(dims, values, attrs)
    index = [n for n in out if n in scales]
    coords_out = {n: out[n] for n in out if n in coords or n in index}
    ds = xr.Dataset({n: v for n, v in out.items() if n not in coords_out}, coords=coords_out,
                    attrs={k: _attr(v) for k, v in handle.attrs.items() if k not in _HIDDEN})
    ds.set_close(handle.close)
    return ds


def is_scale(obj: h5py.HLObject) -> bool:
    """Whether an HDF5 object is a dimension scale (its CLASS attribute, compared only where
    it is the bytes HDF5 writes: an array there has no single truth)."""
    tag = obj.attrs.get("CLASS")
    return isinstance(tag, bytes) and tag == b"DIMENSION_SCALE"


def _dims(handle: h5py.File, obj: h5py.Dataset, names: dict[h5py.Reference, str]
          ) -> tuple[str, ...]:
    if obj.ndim == 0:
        return ()
    listed = obj.attrs.get("DIMENSION_LIST")
    if listed is None or len(listed) != obj.ndim:
        raise Unsupported(f"{obj.name}: dimensions not named")
    dims = []
    for refs in listed:
        ref = refs[0]
        if ref not in names:
            names[ref] = handle[ref].name.lstrip("/")
        dims.append(names[ref])
    return tuple(dims)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _attr(value: object) -> object:
    """An attribute as h5netcdf gives it: text as str, a one-element array as its element."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        value = np.array([_text(v) for v in value.ravel()], dtype=object).reshape(value.shape)
    if isinstance(value, np.ndarray) and value.size == 1 and value.ndim <= 1:
        return value.reshape(-1)[0]
    return value
