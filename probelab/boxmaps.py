"""Box maps: where a tensor-map load (cp.async.bulk.tensor, the TMA) put each element of the
box it loaded, read off a dataset that records, for every byte of a shared region, the
global byte that landed there (the tma-swizzle probes: `g_row`, `g_col` in elements,
`g_byte` within the element, 0xFFFFFFFF where the poison survived, over (kernel, config,
offset); the box's place and shape as per-config coordinates `x0` (bytes), `y0`, `inner`
(bytes per box row), `box_bytes`, `element_bytes`). No probe code is read.

As a lane map (probelab.lanemaps, `probelab layout show`): operand SMEM, a memory tile whose
slots are the region's element offsets (lane = offset, one value), each holding the box
element (row, col) that landed there, -1 where none did; the slots run to the smallest power
of two past the last element written. Its CuTe form is then the box's shared-memory layout,
(row, col) -> element offset, e.g. `Swizzle<3,3,3> o (8,64):(64,1)` for a 128-byte box row of
16-bit elements under SWIZZLE_128B.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from probelab.errors import UsageError
from probelab.lanemaps import LaneMap

OBSERVED = frozenset({"g_row", "g_col", "g_byte"})
NONE = 1 << 31  # a decoded value at or past this is the dataset's sentinel: nothing landed
NUMBERING = ("the dataset's labels, physical: row = the box row, col = its element; a slot "
             "(lane) = the element's offset in the shared region")


def holds_boxes(ds: xr.Dataset) -> bool:
    return set(ds.data_vars) >= OBSERVED and "config" in ds.dims


def box_elements(ds: xr.Dataset, kernel: str, config: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the box element each element-sized slot of the region holds (-1 where
    none landed), slots in offset order; UsageError where a slot holds bytes of no one
    element in their order (no element map)."""
    c = ds.sel(kernel=kernel).isel(config=config)
    e = int(c["element_bytes"])
    row, col, byte = (c[n].values.astype(np.int64).reshape(-1, e)
                      for n in ("g_row", "g_col", "g_byte"))
    held = row < NONE
    whole = held.all(1) & (row == row[:, :1]).all(1) & (col == col[:, :1]).all(1) & \
        (byte == np.arange(e)).all(1)
    if (broken := held.any(1) & ~whole).any():
        raise UsageError(f"{c['mode'].item()}: shared bytes {e * int(np.argmax(broken))}.. "
                         f"hold no one element's {e} bytes in order: no element map")
    box_row, box_col = row[:, 0] - int(c["y0"]), col[:, 0] - int(c["x0"]) // e
    rows, cols = extent(c)
    if (whole & ((box_row < 0) | (box_row >= rows) | (box_col < 0) | (box_col >= cols))).any():
        raise UsageError(f"{c['mode'].item()}: an element from outside the box landed: no "
                         "box map")
    return np.where(whole, box_row, -1), np.where(whole, box_col, -1)


def extent(c: xr.Dataset) -> tuple[int, int]:
    """A configuration's box: (rows, elements per row)."""
    inner = int(c["inner"])
    return int(c["box_bytes"]) // inner, inner // int(c["element_bytes"])


def box_maps(ds: xr.Dataset, config: str | None, operand: str | None) -> list[LaneMap]:
    """Each configuration's box map (named by its `mode`, which `config` picks: `layout
    show --kernel`)."""
    if operand not in (None, "smem"):
        raise UsageError(f"no map of operand {operand.upper()} in this dataset: it holds "
                         "each loaded box's shared-memory (SMEM) map")
    modes = [str(m) for m in ds["mode"].values]
    if config is not None and config not in modes:
        raise UsageError(f"no configuration {config!r} in this dataset (it has "
                         f"{', '.join(modes)})")
    kernels = [str(k) for k in ds["kernel"].values]
    return [_box_map(ds, kernel, at, mode if len(kernels) == 1 else f"{kernel}.{mode}")
            for kernel in kernels for at, mode in enumerate(modes) if config in (None, mode)]


def _box_map(ds: xr.Dataset, kernel: str, config: int, name: str) -> LaneMap:
    rows, cols = box_elements(ds, kernel, config)
    written = np.flatnonzero(rows >= 0)
    slots = 1 << int(written[-1]).bit_length() if written.size else 1
    return LaneMap(name, "smem", rows[:slots, None], cols[:slots, None], NUMBERING,
                   documented=True, tile=True, extent=extent(ds.isel(config=config)))
