"""The lane maps of the matrix-move and sparse kits' datasets (and of the tensor-map box
loads), as probelab.lanemaps reads a lane-id probe's: (thread, value) -> a coordinate, a
value being one element a thread holds (CuTe's value: a 16-bit element is half a register),
-1 where a slot holds nothing. Read off each dataset's own variables, as lanemaps reads a
lane-id dataset's: no probe code.

- matrix move (ldmatrix, stmatrix: operand SMEM): (lane, value) -> (row, col) of the shared
  rows the warp's addresses named, row = the lane whose address named it (matrix i: rows
  8i..8i+7), col = the element of that row; a store's map is the measured (row, col) ->
  (lane, register, half) turned round. In CuTe's copy atoms' vocabulary, indexed row-major
  (row * 8 + col: LDSM's source (address thread, element of its row),
  include/cute/atom/copy_traits_sm75.hpp, NVIDIA/cutlass). Labels are physical: compared
  literally.
- movmatrix (operand SOURCE): (lane, value) -> (lane, half) of the source register it came
  from, indexed lane * 2 + half (the fragment's own element order).
- sparse (mma.sp, swmmac; operand A): (lane, value) -> (row, k) of the compressed A element,
  in canonical labels as a lane-id map's (numbered by first appearance in slot order): the
  row is the row of D its products fill, k the row of B it meets under the first contract
  metadata word (a one-element product fixes both without a layout); operand META: the
  lane whose metadata word governs it and the 2-bit field of that word (physical labels).
  The rest of a sparse dataset (the pairing under each word, random and invalid words,
  superposition, collisions) is checks and records, not a lane map. A sparse dataset is read
  in the fragment vocabulary (dims `a_value`, `b_value`; an archive dataset's `a_elem`,
  `b_elem` through its recorded translation, probelab.vocabulary, where it is opened).
- tensor-map box loads (the tma-swizzle probes; operand SMEM): each configuration's box as a
  memory tile, (row, col) of the box element at each element offset of the shared region
  (probelab.boxmaps).
- The matrix-move kit is not on the fragment vocabulary: its `from_reg` and `from_half`
  count registers and halves of a register (the instruction's own units), not values.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from probelab import boxmaps, lanemaps
from probelab.errors import UsageError
from probelab.lanemaps import LaneMap

HALVES = 2  # 16-bit elements per 32-bit register: the matrix-move kit's only element width
FIELD_BITS = 2  # a sparse metadata field
LITERAL = "the dataset's labels, physical"  # LaneMap.documented: compared literally


def maps_of(ds: xr.Dataset, kernel: str | None, operand: str | None) -> list[LaneMap]:
    """The dataset's maps, whichever kit measured it; UsageError (one line) saying what the
    dataset holds instead where it has no map of that kernel and operand."""
    if any(f"{o}_row" in ds.data_vars for o in lanemaps.OPERANDS):
        return lanemaps.lane_maps(ds, kernel, operand)
    if boxmaps.holds_boxes(ds):
        return boxmaps.box_maps(ds, kernel, operand)
    if "op" in ds.coords and {"from_lane", "from_addr_lane"} & set(ds.data_vars):
        op = str(ds["op"].values)
        kind, offered, build = f"{op}'s", ["source" if op == "move" else "smem"], _move_map
    elif {"row_lane", "met_lane", "gov_lane"} <= set(ds.data_vars):
        kind, offered, build = "a sparse unit's", ["a", "meta"], _sparse_map
    else:
        raise UsageError(lanemaps.holds(ds))
    if operand is not None and operand not in offered:
        raise UsageError(f"no map of operand {operand.upper()} in this dataset: it holds "
                         f"{kind} {' and '.join(o.upper() for o in offered)} maps"
                         + (" (B and D are read only to name the row of A each element "
                            "fills and the row of B it meets)" if "meta" in offered else ""))
    names = lanemaps.kernels_of(ds, kernel)
    found = [build(ds, name, op) for name in names for op in offered
             if operand in (None, op) and _replayed(ds, name)]
    if not found:
        raise UsageError("no recovered map of that kernel in this dataset")
    return found


def _replayed(ds: xr.Dataset, kernel: str) -> bool:
    """Whether the random waves replayed through the map the id waves gave (a matrix
    move's `replayed`; a map they do not bear out is none)."""
    return "replayed" not in ds or int(ds["replayed"].sel(kernel=kernel)) == 1


def _ids(values: np.ndarray, bound: int) -> np.ndarray:
    """Decoded ids as int64, -1 for a sentinel or anything past `bound`."""
    values = values.astype(np.int64)
    return np.where(values < bound, values, -1)


# -- matrix move -----------------------------------------------------------------------------

def _move_map(ds: xr.Dataset, kernel: str, operand: str) -> LaneMap:
    """One kernel's map: load, store (operand smem) or move (operand source)."""
    k = ds.sel(kernel=kernel)
    lanes, op = int(k["lanes"]), str(ds["op"].values)
    if op == "move":
        rows, cols = (_ids(k[f].values, b) for f, b in (("from_lane", lanes),
                                                         ("from_half", HALVES)))
        return LaneMap(kernel, operand, rows, cols, LITERAL, documented=True,
                       extent=(lanes, HALVES))
    values = int(k["num"]) * HALVES
    cols_n = ds.sizes["col"]
    if op == "load":
        rows, cols = (_ids(k[f].values, b).reshape(lanes, -1)[:, :values]
                      for f, b in (("from_addr_lane", lanes), ("from_col", cols_n)))
    else:
        rows, cols = _stored(k, lanes, values)
    return LaneMap(kernel, operand, rows, cols, LITERAL, documented=True,
                   extent=(int(rows.max()) + 1, cols_n))


def _stored(k: xr.Dataset, lanes: int, values: int) -> tuple[np.ndarray, np.ndarray]:
    """A store's measured (address lane, col) -> (lane, reg, half) turned round into
    (lane, value) -> (row, col); UsageError where one element landed twice (no function)."""
    rows, cols = np.full((lanes, values), -1), np.full((lanes, values), -1)
    lane = _ids(k["from_lane"].values, lanes)
    row, col = np.nonzero(lane >= 0)
    value = k["from_reg"].values[row, col].astype(np.int64) * HALVES + \
        k["from_half"].values[row, col].astype(np.int64)
    if len(set(zip(lane[row, col].tolist(), value.tolist(), strict=True))) != len(row):
        raise UsageError(f"{k['kernel'].item()}: one register element was stored at two "
                         "places: no (thread, value) map")
    rows[lane[row, col], value], cols[lane[row, col], value] = row, col
    return rows, cols


# -- sparse ----------------------------------------------------------------------------------

def _sparse_map(ds: xr.Dataset, kernel: str, operand: str) -> LaneMap:
    """One kernel's A map (canonical row and k) or its governing metadata (lane, field)."""
    k = ds.sel(kernel=kernel)
    values, lanes = int(k["elems"]), ds.sizes["a_lane"]
    if operand == "meta":
        fields = 32 // FIELD_BITS
        rows, cols = (_ids(k[f].values[:, :values], b) for f, b in (("gov_lane", lanes),
                                                                     ("gov_field", fields)))
        return LaneMap(kernel, operand, rows, cols, LITERAL, documented=True,
                       extent=(lanes, fields))
    d_slots = ds.sizes["lane"], ds.sizes["reg"]
    b_slots = ds.sizes["b_lane"], ds.sizes["b_value"]
    rows = _first_appearance(k["row_lane"].values, k["row_reg"].values, values, d_slots)
    met = [_first_appearance(k["met_lane"].values[w], k["met_elem"].values[w], values, b_slots)
           for w in range(ds.sizes["word"])]
    words = [int(w) for w in ds["word"].values]
    other = next((w for w, m in zip(words, met, strict=True)
                  if not np.array_equal(m, met[0])), None)
    same = f"the same map under all {len(words)} contract words" if other is None else \
        f"word {other:#x} gives another map"
    numbering = ("canonical labels (numbered by first appearance in slot order): row = the "
                 f"row of D its product fills, k = the row of B it meets under metadata word "
                 f"{words[0]:#x} ({same})")
    return LaneMap(kernel, "a", rows, met[0], numbering)


def _first_appearance(lane: np.ndarray, sub: np.ndarray, values: int,
                      bounds: tuple[int, int]) -> np.ndarray:
    """(lane, sub) pairs (a D register, a B slot) over (a_lane, a_value) as labels numbered
    by first appearance in slot order (value-major, as a lane-id dataset's canonical labels
    are); -1 where a code (nothing arrived, ambiguous: past the slots' `bounds`) stands."""
    lane, sub = (_ids(x[:, :values], b) for x, b in zip((lane, sub), bounds, strict=True))
    held = (lane >= 0) & (sub >= 0)
    labels = np.full(lane.shape, -1)
    seen: dict[tuple[int, int], int] = {}
    for value in range(values):
        for at in np.flatnonzero(held[:, value]):
            labels[at, value] = seen.setdefault((int(lane[at, value]), int(sub[at, value])),
                                                len(seen))
    return labels
