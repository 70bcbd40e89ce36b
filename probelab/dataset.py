"""Datasets: one xarray Dataset per sweep, saved as netCDF4 (h5netcdf), with provenance.

Provenance is one JSON string attr (netCDF attrs hold no dicts, bools or None). No
variable gets a fill value, so uint32 0xFFFFFFFF is data, never "missing".
"""

import contextlib
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import xarray as xr

from probelab import bounded, h5open, vendors, vocabulary
from probelab.blocks import block_shape
from probelab.errors import UsageError
from probelab.records import Provenance
from probelab.storage import atomic_write_bytes

SCHEMA = 1
ENGINE = "h5netcdf"
CONTENT_KEY = "content_sha256"
# provenance keys that came with the content hash: a dataset with them must carry it
GENERATION_KEYS = frozenset({"blind_pairs", "nondeterministic"})
MEASURING_BACKENDS = vendors.MEASURING_BACKENDS  # what can take a measurement
MAX_PROVENANCE_NESTING = 32
# what a NEW dataset may declare decoded, and take on disk: `save` refuses more before
# anything is written (the lane-id kit's compact form keeps its widest probes within them)
MAX_NEW_DATASET_BYTES = 512 * 10**6
MAX_NEW_FILE_BYTES = 64 * 10**6
# what a file may declare for its values to be read, as a new dataset may: hashed a part at
# a time (_parts), that is seconds. The 16 version-1 lane-id datasets that declare more (up
# to 2.96 GB) are retired, held to their pins' bytes, their values never read again.
MAX_DATASET_BYTES = MAX_NEW_DATASET_BYTES
# what is read whole when a dataset is opened (its coordinates, its text) or decompressed
# at once (a chunk), whatever the variable: the archive's largest are 0.26 MB and 4 MiB
MAX_WHOLE_BYTES = 64 << 20
FILTERS = frozenset({h5py.h5z.FILTER_DEFLATE, h5py.h5z.FILTER_SHUFFLE})  # what `save` uses
MAX_STRING_ELEMENTS = 1 << 20  # text is hashed element by element; datasets hold a few
_CHUNK = 1 << 20  # in memory
_PART = 64 << 20  # a variable larger than this is read a leading index at a time
CHUNK_BYTES = 4 << 20  # a stored chunk of a large variable, before compression


def grid_coords(ds: xr.Dataset) -> list[str]:
    """Stimulus coordinates: everything but the kernel axis."""
    return sorted(str(c) for c in ds.coords if c != "kernel")


def grid_sha256(ds: xr.Dataset) -> str:
    """Hash of the stimulus grid, independent of dtype spelling and file format, and of the
    names a recorded translation gave it: taken under the archive's names
    (probelab.vocabulary), so a grid renamed into the fragment vocabulary hashes as before."""
    ds = vocabulary.archive_names(ds)
    h = hashlib.sha256()
    for name in grid_coords(ds):
        values = ds.coords[name].values
        h.update(f"{name}|{','.join(map(str, ds.coords[name].dims))}|{values.shape}|".encode())
        _feed(h, values, "<i8" if values.dtype.kind in "iub" else None)
    return h.hexdigest()


def _feed(h: "hashlib._Hash", values: np.ndarray, as_dtype: str | None) -> None:
    """Feed `values` to `h` as little-endian `as_dtype` (or, None, as their str()s joined by
    NUL), chunk by chunk: the same bytes as converting them whole, in bounded memory."""
    flat = values.reshape(-1)
    if as_dtype is not None and flat.dtype == np.dtype(as_dtype):  # the bytes hashed already
        h.update(flat)
        return
    buffer = np.empty(min(flat.size, _CHUNK), as_dtype) if as_dtype is not None else None
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK]
        if buffer is not None:  # converted into one reused buffer, hashed from it in place
            out = buffer[: chunk.size]
            np.copyto(out, chunk, casting="unsafe")  # as astype: uint64 wraps to int64
            h.update(out)
        else:
            h.update((b"\0" if start else b"") + "\0".join(map(str, chunk)).encode())


def _canonical(kind: str) -> tuple[bytes, str | None]:
    """(tag, little-endian dtype) values of a dtype kind are hashed as, whatever dtype
    spelling the file round trip picks (None: text, as str()s)."""
    if kind in "iub":
        return b"i", "<i8"
    if kind in "fc":
        return kind.encode(), "<c16" if kind == "c" else "<f8"
    return b"s", None


def _parts(var: xr.Variable) -> Iterator[np.ndarray]:
    """A variable's values in C order, read in slabs of its leading axis where it is large
    (a lazily opened N = 256 lane-id dataset declares gigabytes): hashed part by part, the
    same bytes as whole, in bounded memory. Slabs of many leading indices keep the reads in
    line with the file's compressed chunks (one index at a time would decompress a chunk
    once per index it spans); a single index larger than _PART is split in turn. Text (its
    feed joins elements with separators) is read whole: at most MAX_WHOLE_BYTES."""
    row = var.size // var.shape[0] * var.dtype.itemsize if var.ndim and var.shape[0] else 0
    if var.ndim == 0 or _canonical(var.dtype.kind)[1] is None or \
            var.size * var.dtype.itemsize <= _PART:
        yield np.asarray(var.values)
        return
    if row > _PART:
        for i in range(var.shape[0]):
            yield from _parts(var[i])
        return
    step = max(1, _PART // row)
    for i in range(0, var.shape[0], step):
        yield np.asarray(var[i:i + step].values)


def content_sha256(ds: xr.Dataset, prov: Provenance) -> str:
    """What a sweep wrote: every variable and coordinate (name, dims, shape, values) and the
    provenance itself (less this hash). Recorded at save; `tampered` recomputes it."""
    return hashes(ds, prov)[0]


def hashes(ds: xr.Dataset, prov: Provenance) -> tuple[str, str]:
    """(the content hash, the hash of the values alone): one pass over the values, the
    provenance fed last to a copy. Two datasets of equal values are one measurement's
    outcome repeated; what sets the runs apart is in their provenance (`run`)."""
    h = hashlib.sha256()
    for name in sorted(str(n) for n in ds.variables):
        var = ds.variables[name]
        h.update(f"{name}|{','.join(map(str, var.dims))}|{var.shape}|".encode())
        tag, as_dtype = _canonical(var.dtype.kind)
        h.update(tag)
        for part in _parts(var):
            _feed(h, part, as_dtype)
    values = h.hexdigest()
    rest = json.loads(json.dumps({k: v for k, v in prov.items() if k != CONTENT_KEY}))
    h.update(json.dumps(rest, sort_keys=True).encode())  # as stored: JSON keys are strings
    return h.hexdigest(), values


def tampered(ds: xr.Dataset, content: str | None = None) -> str | None:
    """Why a dataset's contents are not what its sweep wrote, or None. `content` is its
    content hash if already computed."""
    prov = provenance(ds)
    return tampered_content(prov, content or content_sha256(ds, prov))


def tampered_content(prov: Provenance, content: str) -> str | None:
    """`tampered`, from the provenance and the content hash the values and provenance
    compute to. A dataset saved before content hashes were recorded has none to check
    (None); the manifest's pin covers it."""
    if CONTENT_KEY not in prov:
        if GENERATION_KEYS & prov.keys():  # written by a version that records the hash
            return f"its {CONTENT_KEY} was removed from the provenance"
        return None
    if content != prov[CONTENT_KEY]:
        return ("values or provenance edited after the sweep: the contents no longer hash to "
                f"the {CONTENT_KEY} recorded when it was saved")
    return None


def computed_content_sha256(ds: xr.Dataset) -> str:
    """The content hash of a dataset as loaded (for one that records none, what it would)."""
    return content_sha256(ds, provenance(ds))


def simulated(prov: Provenance) -> bool:
    """Whether a dataset counts as simulated: anything but an explicit `false` does (a
    missing, null, 0 or "" flag must never pass for a measurement)."""
    return prov.get("simulated", True) is not False


def contradictions(prov: Provenance) -> list[str]:
    """Where a dataset that says it is a measurement (`simulated: false`) says elsewhere
    what only a simulated run says: a flipped flag must not make a model's output count."""
    if not isinstance(prov.get("simulated", True), bool):
        return [f"its simulated flag is {prov['simulated']!r}, neither true nor false"]
    if simulated(prov):
        return []
    found = []
    backend, device = prov.get("backend"), str(prov.get("device", ""))
    static = backend == "toolchain"
    if backend not in MEASURING_BACKENDS:
        found.append(f"its backend is {backend!r}, which measures nothing")
    details = prov.get("device_details")
    if device.lower().startswith("simulated") or (
            isinstance(details, dict) and details.get("simulated") == "true"):
        found.append(f"its device is {device!r}")
    if static != (prov.get("static") is True):
        found.append("it is a static (toolchain) dataset on one side and not on the other")
    toolchain = json.dumps(prov.get("toolchain"))
    if "simulated" in toolchain:
        found.append(f"its toolchain is {toolchain}")
    if "vendor_code" in prov:  # a third party's folder: the measured commit does not pin it
        found.append(f"it ran vendor code from outside the lab ({prov['vendor_code']!r:.80}), "
                     "which no commit pins: put the vendor's folder under probelab/vendors/ "
                     "and commit it")
    kernels = prov.get("kernels")
    for name, record in (kernels if isinstance(kernels, dict) else {}).items():
        evidence = record.get("evidence") if isinstance(record, dict) else None
        if not static and not (isinstance(evidence, dict) and evidence.get("ok") is True):
            found.append(f"kernel {name} records no passed evidence gate ({evidence!r:.60})")
    return [f"it says simulated: false, but {why}" for why in found]


def provenance(ds: xr.Dataset) -> Provenance:
    return parse_provenance(ds.attrs.get("provenance"))


def parse_provenance(raw: object) -> Provenance:
    """A dataset's provenance attr, parsed and bounded (a JSON object, nested at most
    MAX_PROVENANCE_NESTING deep)."""
    try:
        prov = json.loads(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError) as exc:  # ValueError: a 5,000-digit int
        raise UsageError("dataset has no readable provenance attr") from exc
    if not isinstance(prov, dict):
        raise UsageError("dataset provenance is not a JSON object")
    if bounded.nesting(prov) > MAX_PROVENANCE_NESTING:
        raise UsageError(f"dataset provenance nests deeper than {MAX_PROVENANCE_NESTING}")
    return prov


def with_provenance(ds: xr.Dataset, prov: Provenance) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {"probelab_schema": SCHEMA, "provenance": json.dumps(prov, sort_keys=True)}
    return ds


def refuse_declared(declared: int, what: str, outcome: str = "not saved") -> None:
    """A new dataset declaring more than MAX_NEW_DATASET_BYTES decoded is refused, in one
    line (read back, it would cost that much memory to hash and check)."""
    if declared > MAX_NEW_DATASET_BYTES:
        raise UsageError(f"{what}: {outcome}: the dataset would declare {declared / 1e6:,.1f} "
                         f"MB decoded, over the {MAX_NEW_DATASET_BYTES / 1e6:,.0f} MB a new "
                         "dataset may (store a smaller form)")


def save(ds: xr.Dataset, path: Path, prov: Provenance, exclusive: bool = False) -> Path:
    """Write atomically: a failed write leaves nothing at `path`. The provenance gains the
    content hash of what is written. A dataset over MAX_NEW_DATASET_BYTES decoded, or over
    MAX_NEW_FILE_BYTES as written, is refused before anything is."""
    refuse_declared(sum(int(v.nbytes) for v in ds.variables.values()), str(path))
    prov = {k: v for k, v in prov.items() if k != CONTENT_KEY}
    ds = with_provenance(ds, prov | {CONTENT_KEY: content_sha256(ds, prov)})
    encoding = {str(v): {"_FillValue": None} for v in ds.variables}
    for name, var in ds.variables.items():
        if var.dtype.kind in "iuf" and var.size >= 4096:  # lossless; lane data compress well
            encoding[str(name)] |= {"compression": "gzip", "compression_opts": 4, "shuffle": True}
        if var.ndim and var.size * var.dtype.itemsize > CHUNK_BYTES:  # chunks in C order, as
            encoding[str(name)]["chunksizes"] = block_shape(  # checks read them (blocks.py)
                var.shape, max(1, CHUNK_BYTES // var.dtype.itemsize))
    # serialised in memory: HDF5 never writes to disk, so a full disk is a clean OSError
    # in atomic_write_bytes (HDF5 itself crashes the process on one)
    data = bytes(ds.to_netcdf(engine=ENGINE, encoding=encoding))
    if len(data) > MAX_NEW_FILE_BYTES:
        raise UsageError(f"{path}: not saved: the dataset would take {len(data) / 1e6:,.1f} MB "
                         f"on disk, over the {MAX_NEW_FILE_BYTES / 1e6:,.0f} MB a new dataset may")
    with _checked_file(data, path):  # it must load back
        pass
    atomic_write_bytes(path, data, exclusive)
    return path


# the names save_new gives: TIME[-n][.TOOLCHAIN].nc, TIME the sweep's UTC second
# (20261203T162814Z), n from 2 where that second's name was taken, TOOLCHAIN a static
# dataset's (clang-22, rocm-7.2.2); never hidden, never a path
DATASET_NAME = re.compile(r"(?P<time>\d{8}T\d{6}Z)(?:-[1-9]\d*)?"
                          r"(?:\.(?P<toolchain>[a-z][a-z0-9.-]*))?\.nc")


def dataset_name(stamp: str, n: int = 1, label: str = "") -> str:
    """The `n`th name of a dataset made at `stamp` (n > 1: `stamp`-n), by toolchain `label`."""
    return stamp + (f"-{n}" if n > 1 else "") + (f".{label}" if label else "") + ".nc"


def save_new(ds: xr.Dataset, stem: Path, prov: Provenance, label: str = "") -> Path:
    """Save under `stem`.nc, or `stem`-2.nc, -3, ... if that name is taken: never over an
    existing dataset, even when two sweeps finish in the same second. A `label` (a static
    dataset's toolchain) follows: `stem`-2.LABEL.nc."""
    for n in range(1, 1000):
        path = stem.with_name(dataset_name(stem.name, n, label))
        if path.exists():
            continue
        try:
            return save(ds, path, prov, exclusive=True)
        except FileExistsError:
            continue  # another writer took this name between the check and the link
    raise UsageError(f"{stem}: no free dataset name")


def stored_provenance(path: Path) -> Provenance:
    """The provenance a saved file carries, read from its attributes alone (no variable is
    read): what `save` recorded, content hash included. The file is read as `load` reads it
    (bounded, a regular file, self-contained)."""
    data = read_file(path)
    with _checked_file(data, path, sized=False) as handle:  # no value is read
        return parse_provenance(handle.attrs.get("provenance"))


def declared_bytes(path: Path) -> int:
    """What the dataset file at `path` declares its variables to take decoded, read from its
    metadata alone (its values are never read)."""
    with _checked_file(read_file(path), path, sized=False) as handle:
        return declared(handle)[0]


def read_file(path: Path) -> bytes:
    """The bytes of the dataset file at `path`, read once: a regular file (a FIFO or a
    device is never read, a link's target must be one) within its bound."""
    try:
        return bounded.read_regular(path, bounded.MAX_DATASET_FILE_BYTES)
    except bounded.Unreadable as exc:
        raise UsageError(f"no such dataset: {path}" if not os.path.lexists(path) else
                         f"{exc}: not a dataset") from None


class NotADataset(UsageError):
    """A file that cannot be read as a dataset at all: `why` (empty, truncated, not HDF5,
    corrupt)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path} is not a probelab dataset ({why})")
        self.why = why


def _unopened(data: bytes, exc: Exception) -> str:
    """Why HDF5 could not open `data`, in a reader's words."""
    if not data:
        return "empty"
    if not isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    if cut := re.search(r"truncated file: eof = (\d+).* stored_eof = (\d+)", str(exc)):
        return f"truncated: {int(cut[1]):,} of the {int(cut[2]):,} bytes its header declares"
    return "not netCDF4/HDF5" if "signature not found" in str(exc) else \
        "not netCDF4/HDF5, or truncated"


@contextlib.contextmanager
def _opened(data: bytes, path: Path) -> Iterator[h5py.File]:
    """The HDF5 file in `data`, open, unchecked (`_checked_file` checks it)."""
    try:
        handle = h5py.File(io.BytesIO(data), "r")
    except Exception as exc:  # truncated, not netCDF, not HDF5: one clear message
        raise NotADataset(path, _unopened(data, exc)) from exc
    with handle:
        yield handle


@contextlib.contextmanager
def _checked_file(data: bytes, path: Path, sized: bool = True) -> Iterator[h5py.File]:
    """The HDF5 file in `data`, open, once it is known to be a dataset the lab can read:
    self-contained (`foreign_storage`), and with `sized` (its values are to be read)
    declaring at most MAX_DATASET_BYTES of variables, MAX_STRING_ELEMENTS of text, and no
    more than MAX_WHOLE_BYTES in what is read whole (a few KB of file can declare a 4 GiB
    variable, or one chunk of it)."""
    with _opened(data, path) as handle:
        try:
            why, (total, strings) = foreign_storage(handle), declared(handle)
            scales = malformed_scales(handle)
        except Exception as exc:  # HDF5 metadata that cannot be walked: corrupt
            raise NotADataset(path, f"corrupt HDF5 metadata: {exc}") from exc
        if why:
            raise UsageError(f"{path} is not self-contained: {why}; a measured dataset holds "
                             "all its values in its own file")
        if scales:
            raise NotADataset(path, scales)
        if sized and (total > MAX_DATASET_BYTES or strings > MAX_STRING_ELEMENTS):
            raise UsageError(f"{path} declares {total:,} bytes of variables ({strings:,} "
                             f"text elements); a dataset is at most {MAX_DATASET_BYTES:,} "
                             f"({MAX_STRING_ELEMENTS:,}): refused before reading them")
        if sized and (whole := read_whole(handle)):
            raise UsageError(f"{path}: {whole[0]} would be read {whole[1]:,} bytes at once, "
                             f"more than the {MAX_WHOLE_BYTES:,} a dataset may: refused "
                             "before reading it")
        yield handle


def malformed_scales(handle: h5py.File) -> str | None:
    """Which dimension-scale attribute is not of the form HDF5 writes, or None: a
    DIMENSION_LIST that is not one list of object references per axis, a REFERENCE_LIST that
    is not (dataset reference, dimension) pairs. HDF5's dimension-scale calls (which xarray's
    reader makes) read such an attribute as if it were one, and crashed the process on
    files the dataset fuzzer made (bench/fuzz.py, seed 4: a float64 DIMENSION_LIST); only
    their types are read here, never their values."""
    found: list[str] = []

    def visit(name: str, obj: object) -> None:
        if found or not isinstance(obj, h5py.Dataset):
            return
        if "DIMENSION_LIST" in obj.attrs:
            listed = obj.attrs.get_id("DIMENSION_LIST")
            base = h5py.check_vlen_dtype(listed.dtype)
            if base is None or h5py.check_ref_dtype(base) is not h5py.Reference or \
                    listed.shape != (obj.ndim,):
                found.append(f"variable {name}'s DIMENSION_LIST is {listed.dtype} "
                             f"{listed.shape}, not a list of references per axis")
        if "REFERENCE_LIST" in obj.attrs:
            pairs = obj.attrs.get_id("REFERENCE_LIST").dtype
            fields = pairs.fields or {}
            if tuple(fields) != ("dataset", "dimension") or \
                    h5py.check_ref_dtype(fields["dataset"][0]) is not h5py.Reference or \
                    fields["dimension"][0].kind not in "iu":
                found.append(f"variable {name}'s REFERENCE_LIST is {pairs}, not (dataset "
                             "reference, dimension) pairs")

    handle.visititems(visit)
    return found[0] if found else None


def foreign_storage(handle: h5py.File) -> str | None:
    """Where an HDF5 file keeps or finds data outside itself, or needs code the lab does not
    ship, or None: a link that is not a hard link (an external link names another file, a
    soft link another place), a dataset whose values live in raw files beside it (external
    storage) or in other datasets (a virtual dataset), or one filtered by anything but the
    deflate and shuffle filters `save` uses (any other is a plugin loaded from disk)."""
    found: list[str] = []

    def visit(name: str, link: object) -> None:
        if found:
            return
        if not isinstance(link, h5py.HardLink):
            found.append(f"{name} is a {type(link).__name__}")
            return
        obj = handle.get(name)
        if not isinstance(obj, h5py.Dataset):
            return
        plist = obj.id.get_create_plist()
        if plist.get_layout() == h5py.h5d.VIRTUAL:
            found.append(f"variable {name} is a virtual dataset (its values are elsewhere)")
        elif plist.get_external_count():
            found.append(f"variable {name} keeps its values in external raw files")
        elif bad := {plist.get_filter(i)[0] for i in range(plist.get_nfilters())} - FILTERS:
            found.append(f"variable {name} needs HDF5 filter {sorted(bad)}")

    handle.visititems_links(visit)
    return found[0] if found else None


def read_whole(handle: h5py.File) -> tuple[str, int] | None:
    """(what, bytes) where opening the dataset would read more than MAX_WHOLE_BYTES at once,
    else None: its coordinates together (the dimension variables and those a `coordinates`
    attribute names, as netCDF has them), a text variable, or one chunk of a variable."""
    coords, items = set(_text_words(handle.attrs.get("coordinates"))), list(handle.items())
    for _, obj in items:
        coords |= set(_text_words(obj.attrs.get("coordinates")))
    together = 0
    for name, obj in items:
        if not isinstance(obj, h5py.Dataset):
            continue
        size = int(np.prod(obj.shape, dtype=np.float64) * obj.dtype.itemsize)
        if name in coords or (h5open.is_scale(obj) and not _phony(obj)):
            together += size
        if obj.dtype.kind in "SOUV" and size > MAX_WHOLE_BYTES:
            return f"text variable {name}", size
        if obj.chunks and (chunk := int(np.prod(obj.chunks, dtype=np.float64)
                                        * obj.dtype.itemsize)) > MAX_WHOLE_BYTES:
            return f"a chunk of {name}", chunk
    return ("its coordinates", together) if together > MAX_WHOLE_BYTES else None


def _text_words(value: object) -> list[str]:
    """An attribute's words where it is text (bytes or str), else none."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value.split() if isinstance(value, str) else []


def _phony(obj: h5py.Dataset) -> bool:
    """A netCDF dimension without a variable of its name: a dimension scale that holds no
    values and is never read (h5open and xarray alike skip it)."""
    tag = obj.attrs.get("NAME")
    return h5open.is_scale(obj) and isinstance(tag, bytes) and \
        tag.startswith(h5open.NOT_A_VARIABLE)


def declared(handle: h5py.File) -> tuple[int, int]:
    """(bytes in memory, text elements) of the file's variables, read from its metadata
    alone (a dimension without a variable declares nothing: it is never read)."""
    total = strings = 0

    def add(name: str, item: object) -> None:
        nonlocal total, strings
        if isinstance(item, h5py.Dataset) and not _phony(item):
            total += int(np.prod(item.shape, dtype=np.float64) * item.dtype.itemsize)
            if item.dtype.kind in "SOUV":
                strings += int(np.prod(item.shape, dtype=np.float64))

    handle.visititems(add)
    return total, strings


def load(path: Path) -> xr.Dataset:
    return _load(read_file(path), path)


@dataclass(frozen=True)
class GridPrint:
    """What a claim's evaluation reads of a grid (probelab.hypothesis): every dim's size, and
    each integer coordinate's name, dims, dtype and shape, with one digest of their values.
    Small, so kept per dataset: a check knows a claim's key without opening the dataset."""

    sizes: tuple[tuple[str, int], ...]
    coords: tuple[tuple[str, tuple[str, ...], str, tuple[int, ...]], ...]  # sorted by name
    digest: str

    @classmethod
    def of(cls, grid: xr.Dataset) -> "GridPrint":
        """The print of the grid as claims bind it, under the archive's names with the
        fragment vocabulary's bindable beside them (probelab.vocabulary): a grid renamed into
        the vocabulary and its archive twin evaluate every claim alike, and print alike."""
        grid = vocabulary.bindable(vocabulary.archive_names(grid))
        h, coords = hashlib.sha256(), []
        for name in sorted(str(n) for n in grid.coords):
            var = grid.variables[name]
            if var.dtype.kind not in "iub":
                continue
            values = np.ascontiguousarray(var.values)
            coords.append((name, tuple(map(str, var.dims)), values.dtype.str, values.shape))
            h.update(values.tobytes())
        return cls(tuple(sorted((str(d), int(n)) for d, n in grid.sizes.items())),
                   tuple(coords), h.hexdigest())

    def to_list(self) -> list:
        return [self.sizes, self.coords, self.digest]

    @classmethod
    def from_list(cls, raw: list) -> "GridPrint":
        """`to_list`'s value as JSON gave it back (lists for tuples)."""
        sizes, coords, digest = raw
        return cls(tuple((d, n) for d, n in sizes),
                   tuple((n, tuple(d), t, tuple(shape)) for n, d, t, shape in coords), digest)


@dataclass(frozen=True)
class Summary:
    """What checks read of a dataset besides its values: its data variables' dims, its
    kernels, its grid's hash and print, and the content hash its values and provenance
    compute to. A pure function of the file's bytes, kept on disk under their sha256."""

    variables: tuple[tuple[str, tuple[str, ...]], ...]
    kernels: tuple[str, ...]
    grid_sha256: str
    grid: GridPrint
    content: str
    values: str = ""  # the hash of its values alone (`hashes`)

    @classmethod
    def of(cls, ds: xr.Dataset, content: str = "", values: str = "") -> "Summary":
        return cls(tuple((str(n), tuple(map(str, ds[n].dims))) for n in ds.data_vars),
                   tuple(str(k) for k in ds.kernel.values), grid_sha256(ds), GridPrint.of(ds),
                   content, values)

    def to_json(self) -> bytes:
        return json.dumps([self.variables, self.kernels, self.grid_sha256,
                           self.grid.to_list(), self.content, self.values]).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "Summary":
        variables, kernels, grid_hash, printed, content, values = bounded.loads(raw)
        if not all(isinstance(x, str) for x in (grid_hash, content, values, *kernels)):
            raise ValueError("a summary's hashes and kernels are text")
        return cls(tuple((n, tuple(d)) for n, d in variables), tuple(kernels), grid_hash,
                   GridPrint.from_list(printed), content, values)


@dataclass(frozen=True)
class Read:
    """A dataset file read once: the sha256 of its bytes, its provenance and its summary,
    all of the same bytes; `open` gives the dataset itself (lazily, from those bytes: the
    one summarising opened, where it did)."""

    path: Path
    file_sha256: str
    prov: Provenance
    summary: Summary
    _data: bytes
    _opened: list[xr.Dataset] = field(default_factory=list)

    def open(self) -> xr.Dataset:
        if not self._opened:
            self._opened.append(_load(self._data, self.path, lazy=True))
        return self._opened[0]


def read_summarised(path: Path) -> Read:
    """The file at `path` read once and summarised. The summary of a file's exact bytes is
    kept on disk under their sha256 and the code that makes it (a corrupt entry is made
    again), so a run that already made it opens nothing: the provenance is read off the
    file's attributes, and the dataset is opened only where its values are read."""
    from probelab import depends
    from probelab.cache import cache_key, cached_bytes

    data = read_file(path)
    file_sha = hashlib.sha256(data).hexdigest()
    key = cache_key(file=file_sha, code=depends.digest(__name__))

    opened: list[xr.Dataset] = []

    def summarise() -> bytes:
        ds = _load(data, path, lazy=True)
        for name in ds.coords:  # read once: the grid's hash, print and the content read them
            ds.variables[name].load()
        opened[:] = [ds]  # the checks that follow read it too
        return Summary.of(ds, *hashes(ds, provenance(ds))).to_json()

    try:
        summary = Summary.from_json(cached_bytes("summary", key, summarise)[0])
    except (ValueError, TypeError):  # not what this code writes: made again, never trusted
        summary = Summary.from_json(summarise())
    # A summary exists only where these exact bytes passed `_checked_file` under this code
    # (summarise opens them through `_load`), and only the cache's owner can file one (its
    # entries are bound to a secret, probelab.cache): walking the file again proves nothing
    # more, and was most of a warm verify.
    with _opened(data, path) as handle:
        prov = parse_provenance(handle.attrs.get("provenance"))
    return Read(path, file_sha, prov, summary, data, opened)


def load_hashed(path: Path) -> tuple[xr.Dataset, str, str]:
    """(dataset, the content hash its values and provenance compute to, the sha256 of the
    bytes read), the file read once, so both hashes are of the same bytes; the dataset is
    opened lazily, and a variable is decoded only when it is read."""
    read = read_summarised(path)
    return read.open(), read.summary.content, read.file_sha256


def _load(data: bytes, path: Path, lazy: bool = False) -> xr.Dataset:
    """The dataset at `path`, from its bytes `data` (read_file)."""
    with _checked_file(data, path):
        pass
    try:  # straight from HDF5 where it reads as xarray does (h5open), else xarray's own
        try:
            ds = h5open.open_bytes(data)
        except h5open.Unsupported:
            ds = xr.open_dataset(io.BytesIO(data), engine=ENGINE, mask_and_scale=False)
        if not lazy:
            ds = ds.load()
    except Exception as exc:  # a readable HDF5 file that is no netCDF: one clear message
        raise UsageError(f"{path} is not a probelab dataset ({type(exc).__name__}: "
                         f"{exc})") from exc
    schema = ds.attrs.get("probelab_schema")
    if not isinstance(schema, int | np.integer) or schema != SCHEMA:  # never an array's truth
        raise UsageError(f"{path} is not a probelab dataset (schema {SCHEMA})")
    if "kernel" not in ds.coords or ds["kernel"].dims != ("kernel",) or not ds.sizes["kernel"]:
        raise UsageError(f"{path} is not a probelab dataset: it has no `kernel` coordinate "
                         "(or no kernel on it)")
    provenance(ds)
    return ds


def is_simulated(ds: xr.Dataset) -> bool:
    return simulated(provenance(ds))
