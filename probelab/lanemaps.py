"""Measured lane maps in the field's notations (`probelab layout show|compare`).

A lane map is what a lane-id dataset records of one operand of one kernel: the variables
`<op>_row` and `<op>_col` over (kernel, <op>_lane, <op>_value), (thread, value) -> (row,
col), -1 where a slot holds nothing, in the dataset's canonical labels (rows and k numbered
by first appearance over A's slots, columns over B's: a lane-id experiment determines a map
up to a renumbering of each axis, and the attrs say which numbering it is). The dataset
describes itself: nothing here reads probe code. Datasets are read in the fragment
vocabulary (`<op>_value`, `<op>_values`): an archive dataset, which says `<op>_reg`, through
its recorded translation (probelab.vocabulary.translated, where it is opened).

From a map this finds, and proves cell by cell:
- the smallest CuTe layout (thread, value) -> index, the index column-major over the
  operand's matrix as CuTe's MMA atoms number it (A: m + M*k, B: n + N*k, C and D: m + M*n;
  include/cute/atom/mma_traits_sm80.hpp, NVIDIA/cutlass), each top-level mode split into
  sub-modes colexicographically (probelab.layouts) — or why none exists;
- the F2-linear layout (Triton's LinearLayout: `register`, `lane` and, past 32 threads,
  `warp` bases, each vector (row, col)) — or why the map is not F2-linear.

A user's layout is scored against a map up to that renumbering (`compare`): the one
bijection per axis is built in slot order, and a cell mismatches where the layout breaks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from probelab.errors import IntegrityError, UsageError
from probelab.layouts import Cute, Layout, Linear, Table, evaluate

if TYPE_CHECKING:
    from probelab.hypothesis import Hypothesis

OPERANDS = ("a", "b", "c", "d")
# the other kits' maps (probelab.kitmaps): a matrix move's shared tile (row: the lane whose
# address named it), movmatrix's source fragment, a sparse A element's governing metadata
KIT_OPERANDS = ("smem", "source", "meta")
AXES = {"a": ("row", "k"), "b": ("k", "col"), "c": ("row", "col"), "d": ("row", "col"),
        "smem": ("row", "col"), "source": ("lane", "half"), "meta": ("lane", "field")}
# indexed row-major (col + cols * row): B as CuTe's MMA atoms index it ((n, k), n fastest),
# and the copy atoms' tiles and fragments (include/cute/atom/copy_traits_sm75.hpp: LDSM's
# source is (address thread, element of its row), the row's elements contiguous)
ROW_MAJOR = frozenset({"b", "smem", "source", "meta"})
LANES_PER_WARP = 32


# -- numbering: canonical labels, or a documented table's -----------------------------------

# the hypothesis helpers that number each operand's rows and columns (C: D's), and the
# axis each labels: A's columns are k, as are B's rows
HELPERS = {"a": ("a_m", "a_k"), "b": ("b_k", "b_n"), "d": ("d_m", "d_n")}
# each helper over the slots of its operand, as a grid's coordinates span them
HELPER_DIMS = {h: ("kernel", f"{operand}_lane", f"{operand}_value")
               for operand, helpers in HELPERS.items() for h in helpers}
Numbering = dict[str, dict[int, int]]  # axis -> {canonical label: documented label}


def canonical(ds: xr.Dataset, kernel: str, operand: str) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's (rows, cols) of the operand as the dataset labels them."""
    k = ds.sel(kernel=kernel)
    return k[f"{operand}_row"].values.astype(int), k[f"{operand}_col"].values.astype(int)


def numbering_of(ds: xr.Dataset, kernel: str, labels: dict[str, np.ndarray], source: str
                 ) -> Numbering:
    """canonical -> documented label per axis, from the helpers' values at A's, B's and D's
    slots (`labels`: helper -> (kernel, lane, value) array). Refused unless every held slot
    has a label, no empty one does, and each axis is renumbered one to one: a figure is
    never drawn in a numbering its data do not bear out."""
    index = [str(k) for k in ds["kernel"].values].index(kernel)
    found: Numbering = {"row": {}, "k": {}, "col": {}}
    for operand, helpers in HELPERS.items():
        for canon, axis, helper in zip(canonical(ds, kernel, operand), AXES[operand], helpers,
                                       strict=True):
            theirs = labels[helper][index]
            held = canon >= 0
            if (theirs[held] < 0).any() or (theirs[~held] >= 0).any():
                raise IntegrityError(f"{kernel}: {source}'s {helper} and the measured map "
                                     "disagree on which slots hold an element")
            for c, t in zip(canon[held].tolist(), theirs[held].tolist(), strict=True):
                if found[axis].setdefault(c, t) != t:
                    raise IntegrityError(f"{kernel}: {source}'s {helper} gives measured {axis} "
                                         f"{c} two labels ({found[axis][c]} and {t})")
    for axis, mapping in found.items():
        if len(set(mapping.values())) != len(mapping):
            raise IntegrityError(f"{kernel}: {source} gives two measured {axis}s one label")
    return found


def numberings(ds: xr.Dataset, hypothesis: Hypothesis, confirmed: list[str]
               ) -> dict[str, Numbering]:
    """{kernel: its numbering} as the sealed file's helpers label the slots, for the
    `confirmed` kernels (those its literal scoring CONFIRMS) whose map was recovered."""
    from probelab.hypothesis import helper_values

    kernels = [k for k in confirmed if recovered(ds, k)]
    if not kernels:
        raise UsageError(f"{hypothesis.id} is confirmed by its literal scoring on no kernel of "
                         "this dataset: a lane map is numbered only as a confirmed table")
    labels = helper_values(hypothesis, ds, HELPER_DIMS)
    return {k: numbering_of(ds, k, labels, hypothesis.id) for k in kernels}


@dataclass(frozen=True)
class LaneMap:
    """One operand's measured map: rows[lane, value], cols[lane, value] (-1: nothing)."""

    kernel: str
    operand: str
    rows: np.ndarray
    cols: np.ndarray
    numbering: str  # the dataset's own words for its labels
    documented: bool = False  # labelled as a documented table: compared literally
    tile: bool = False  # read from a memory tile: a slot is an element offset of the tile
    extent: tuple[int, int] | None = None  # the axes' extents where labels are physical

    @property
    def lanes(self) -> int:
        return self.rows.shape[0]

    @property
    def values(self) -> int:
        return self.rows.shape[1]

    @property
    def shape(self) -> tuple[int, int]:
        """The operand matrix's extents: its `extent` where the labels are physical (a row's
        8 elements, a word's 16 fields), else its labels' count per axis."""
        return self.extent or (int(self.rows.max()) + 1, int(self.cols.max()) + 1)

    @property
    def held(self) -> int:
        return int((self.rows >= 0).sum())

    def index(self) -> np.ndarray:
        """CuTe's index of each slot's element (column-major; B as (n, k) and the copy
        atoms' tiles row-major: ROW_MAJOR), -1: none."""
        rows, cols = self.shape
        index = self.cols + cols * self.rows if self.operand in ROW_MAJOR else \
            self.rows + rows * self.cols
        return np.where(self.rows >= 0, index, -1)

    def offsets(self) -> np.ndarray:
        """A tile's element offset (value * lanes + lane) of each matrix element, -1 where
        no slot holds it."""
        out = np.full(self.shape, -1, np.int64)
        held = self.rows >= 0
        lane, value = np.nonzero(held)
        out[self.rows[held], self.cols[held]] = value * self.lanes + lane
        return out

    def cells_of_index(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`index` (CuTe's) back to (row, col) of this operand's matrix."""
        rows, cols = self.shape
        if self.operand in ROW_MAJOR:
            return index // cols, index % cols
        return index % rows, index // rows


def lane_maps(ds: xr.Dataset, kernel: str | None = None, operand: str | None = None
              ) -> list[LaneMap]:
    """The dataset's lane maps (recovered kernels only; C only where it is not held as D)."""
    if not any(f"{o}_row" in ds.data_vars for o in OPERANDS):
        raise UsageError(holds(ds))
    kernels = kernels_of(ds, None)
    kernels_of(ds, kernel)  # a kernel the dataset lacks is refused by name
    if operand is not None and f"{operand}_row" not in ds.data_vars:
        raise UsageError(f"no lane map of operand {operand.upper()} in this dataset")
    found = []
    for at, name in enumerate(kernels):
        if kernel not in (None, name) or not recovered(ds, name):
            continue
        listed, tiles = operands(ds, name), tile_operands(ds, name)
        for op in OPERANDS:
            if op not in (listed if operand is None else [operand]):
                continue
            count = value_count(ds, op, at)
            rows, cols = (ds[f"{op}_{axis}"].values[at, :, :count].astype(np.int64)
                          for axis in ("row", "col"))
            words = str(ds[f"{op}_row"].attrs.get("description", ""))
            numbering = "canonical labels (numbered by first appearance in slot order)" \
                if "canonical" in words else "the dataset's labels"
            found.append(LaneMap(name, op, rows, cols, numbering, tile=op in tiles))
    if not found:
        raise UsageError("no recovered lane map of that kernel and operand in this dataset")
    return found


def kernels_of(ds: xr.Dataset, kernel: str | None) -> list[str]:
    """The dataset's kernels, or just `kernel` (UsageError, naming them, where it lacks it)."""
    kernels = [str(k) for k in ds["kernel"].values] if "kernel" in ds.coords else []
    if kernel is not None and kernel not in kernels:
        raise UsageError(f"no kernel {kernel!r} in this dataset (it has {', '.join(kernels)})")
    return kernels if kernel is None else [kernel]


def holds(ds: xr.Dataset, shown: int = 4) -> str:
    """One line: what a dataset without a lane map holds instead (its first variables)."""
    names = [f"{n} ({', '.join(map(str, ds[n].dims))})" for n in ds.data_vars]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ("this dataset holds no lane map ((thread, value) -> a coordinate): its measured "
            f"variables are {'; '.join(names[:shown])}{more}: nothing to show")


def operands(ds: xr.Dataset, kernel: str) -> list[str]:
    """A, B and D; C too where it is not held exactly like D."""
    k = ds.sel(kernel=kernel)
    same = all(np.array_equal(k[f"c_{x}"].values, k[f"d_{x}"].values) for x in ("row", "col")) \
        if "c_row" in ds else True
    return ["a", "b", "d"] if same else ["a", "b", "c", "d"]


def recovered(ds: xr.Dataset, kernel: str) -> bool:
    """Whether the kernel's outputs formed a lane map (a refused one has none)."""
    return "recovered" not in ds or int(ds["recovered"].sel(kernel=kernel)) == 1


def tile_operands(ds: xr.Dataset, kernel: str) -> list[str]:
    """A and B where the kernel read them from a memory tile: slots within the operand's
    values that hold nothing (a register fragment has none), or a tile the grid declares
    a descriptor for (`a_swizzle`, `b_swizzle`, or `swizzle` for B alone: a tile read whole),
    unless its `a_tile`/`b_tile` coordinate says this kernel reads it from registers."""
    k = ds.sel(kernel=kernel)
    declared = {n for n in "ab" if f"{n}_swizzle" in ds.coords} | \
        ({"b"} if "swizzle" in ds.coords else set())
    declared -= {n for n in "ab" if f"{n}_tile" in ds.coords and not int(k[f"{n}_tile"])}
    return [n for n in "ab" if n in declared
            or (canonical(ds, kernel, n)[0][:, : int(k[f"{n}_values"])] < 0).any()]


def value_count(ds: xr.Dataset, op: str, at: int) -> int:
    """The kernel's own value count (the value dim is padded to the widest kernel's)."""
    slots = "d" if op == "c" else op  # C lives on D's slots
    count = f"{slots}_values"
    return int(ds[count].values[at]) if count in ds.coords else ds.sizes[f"{slots}_value"]


# -- CuTe ------------------------------------------------------------------------------------

def cute_of(m: LaneMap) -> Cute | str:
    """The smallest CuTe layout reproducing the map (proved by `reproduces`), or why none
    does: (thread, value) -> index for a register fragment; for an operand read from a
    memory tile (`tile`: its slots are the tile's elements, value v of lane l at element
    v * lanes + l) the tile's own layout (row, col) -> element offset, as CuTe writes a
    shared-memory layout, with the swizzle that leaves the fewest sub-modes (the smallest
    such) where none fits plain."""
    if m.tile:
        return _tile_cute(m)
    if m.held != m.rows.size:
        lane, value = np.argwhere(m.rows < 0)[0]
        return (f"not a CuTe layout: slot (lane {lane}, value {value}) holds nothing, and a "
                "layout maps every (thread, value)")
    # a map whose slot (0, 0) holds no index 0 (mma.sp's metadata under selector s: lane s
    # governs) is a layout plus a constant: CuTe's ComposedLayout OFFSET o LAYOUT
    return _based(m.index(), None, ("thread", "value"))


def _tile_cute(m: LaneMap) -> Cute | str:
    """The tile's layout: plain, else with the swizzle leaving the fewest sub-modes (of
    those, the smallest: fewest bits, then shift, then base); where element (0, 0) is
    not at offset 0, with that base offset inside the swizzle (CuTe's ComposedLayout
    Swizzle o OFFSET o LAYOUT: the swizzle XORs bits of the tile's own offsets, so a tile
    that starts OFFSET elements in is swizzled as the pointer + OFFSET, not from 0)."""
    offsets = m.offsets()
    if (offsets < 0).any():
        row, col = np.argwhere(offsets < 0)[0]
        return f"not a CuTe layout: element ({row}, {col}) is in no slot of the tile"
    plain = _based(offsets, None, ("row", "col"))
    if isinstance(plain, Cute):
        return plain
    top = int(offsets.max()).bit_length()
    best: Cute | None = None
    for bits, base, shift in ((b, mm, s) for b in range(1, 4) for s in range(b, top)
                              for mm in range(0, top - s - b + 1)):
        found = _based(offsets, (bits, base, shift), ("row", "col"))
        # the plainest layout is what a reader would write: a box half a swizzle span wide
        # is Swizzle<2,3,3> o (32,16):(32,1), not Swizzle<1,3,3> over a split row mode
        if isinstance(found, Cute) and (best is None or found.sub_modes < best.sub_modes):
            best = found
    return plain + ", nor with any swizzle of up to 3 bits" if best is None else best


def _based(offsets: np.ndarray, swizzle: tuple[int, int, int] | None, names: tuple[str, str]
           ) -> Cute | str:
    """The layout L and base offset O with swizzle(O + L(i, j)) = `offsets` over the two
    modes `names` (the swizzle is its own inverse: undone on the offsets, what is left must
    be O + a layout)."""
    if swizzle is not None:
        bits, base, shift = swizzle
        moved = ((1 << bits) - 1) << (base + shift)
        offsets = offsets ^ ((offsets & moved) >> shift)
    start = int(offsets[0, 0])
    found = _fit(offsets - start, names)
    if isinstance(found, str):  # its numbers are less the base: say so
        return found + (f" (each index less the {start} at (0, 0))" if start else "")
    return Cute(found.shape, found.stride, swizzle, start)


def _fit(index: np.ndarray, names: tuple[str, str]) -> Cute | str:
    """A CuTe layout of two top-level modes (`names`) giving `index` (0 at (0, 0)) at
    every (i, j)."""
    first, second = index[:, 0], index[0, :]
    if not np.array_equal(index, first[:, None] + second[None, :]):
        i, j = np.argwhere(index != first[:, None] + second[None, :])[0]
        return (f"not a CuTe layout: the index is no sum of a {names[0]} part and a "
                f"{names[1]} part ({names[0]} {i}, {names[1]} {j} holds {index[i, j]}, "
                f"not {first[i]} + {second[j]})")
    modes = []
    for name, f in zip(names, (first, second), strict=True):
        found = _modes(f.tolist())
        if found is None:
            return (f"not a CuTe layout: the {name} mode ({len(f)} long) splits into no "
                    "sub-modes of constant strides")
        modes.append(found)
    shape = tuple(_collapse([s for s, _ in mode]) for mode in modes)
    stride = tuple(_collapse([d for _, d in mode]) for mode in modes)
    return Cute(shape, stride)


def _modes(f: list[int]) -> list[tuple[int, int]] | None:
    """f over 0..n-1 as colexicographic sub-modes [(size, stride), ...], fewest first (each
    sub-mode as long as it can be), or None."""
    n = len(f)
    if n == 1:
        return [(1, 0)]

    def split(base: int) -> list[tuple[int, int]] | None:
        if base == n:
            return []
        rest, stride = n // base, f[base]
        for size in (d for d in range(rest, 1, -1) if rest % d == 0):
            if all(f[base * i] == i * stride for i in range(size)) and \
                    all(f[x] == f[x % base] + f[x - x % base] for x in range(base * size)) \
                    and (more := split(base * size)) is not None:
                return [(size, stride), *more]
        return None

    return split(1)


def _collapse(values: list[int]) -> int | tuple[int, ...]:
    return values[0] if len(values) == 1 else tuple(values)


# -- F2-linear -------------------------------------------------------------------------------

def linear_of(m: LaneMap) -> Linear | str:
    """The F2-linear layout (Triton's: register, lane and, past 32 threads, warp bases;
    vectors (row, col)) reproducing the map, or why the map is not F2-linear."""
    for name, count in (("threads", m.lanes), ("values", m.values)):
        if count & (count - 1):
            return f"not F2-linear: {count} {name} is not a power of two"
    if m.held != m.rows.size:
        lane, value = np.argwhere(m.rows < 0)[0]
        return f"not F2-linear: slot (lane {lane}, value {value}) holds nothing"
    if m.rows[0, 0] or m.cols[0, 0]:
        return (f"not F2-linear: (lane 0, value 0) holds ({m.rows[0, 0]}, {m.cols[0, 0]}), "
                "and a linear map sends 0 to 0")
    dims = [("register", [(m.rows[0, 1 << b], m.cols[0, 1 << b])
                          for b in range(m.values.bit_length() - 1)])]
    lanes = [(m.rows[1 << b, 0], m.cols[1 << b, 0]) for b in range(m.lanes.bit_length() - 1)]
    dims += [("lane", lanes[:5])] + ([("warp", lanes[5:])] if len(lanes) > 5 else [])
    layout = Linear(tuple((dim, tuple((int(r), int(c)) for r, c in vectors) or ((0, 0),))
                          for dim, vectors in dims), 2)
    found = reproduces(layout, m)
    if found.matches != found.cells:
        cell = found.first[0]
        return (f"not F2-linear: the XOR of its bases misses (lane {cell[0]}, value {cell[1]}),"
                f" which holds ({cell[2]}, {cell[3]}), not ({cell[4]}, {cell[5]})")
    return layout


# -- scoring ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Score:
    """How a layout reads a map: cells matching of those the map holds, and where it does
    not (lane, value, the measured row, col — relabelled: in the layout's numbering as the
    slots before set it up, -1 where they set none — and the layout's row, col), first
    ones first."""

    matches: int
    cells: int
    mismatched: np.ndarray  # bool (lanes, values)
    first: list[tuple[int, int, int, int, int, int]]
    relabelled: bool  # scored up to a renumbering of each axis


def cells_of(layout: Layout, m: LaneMap) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) the layout gives each (lane, value) slot of the map's shape."""
    lane = np.arange(m.lanes)[:, None]
    value = np.arange(m.values)[None, :]
    if isinstance(layout, Linear):
        by_dim = {"register": value, "lane": lane, "warp": lane >> 5}
        if "warp" in layout.dims:
            by_dim["lane"] = lane & (LANES_PER_WARP - 1)
        if unknown := sorted(set(layout.dims) - set(by_dim)):
            raise UsageError(f"a linear layout's input dims here are register, lane and warp; "
                             f"not {unknown}")
        rows, cols = (np.broadcast_to(o, m.rows.shape)
                      for o in evaluate(layout, *(by_dim[d] for d in layout.dims)))
        return rows, cols
    if isinstance(layout, Table):
        if layout.inputs != 2 or layout.outputs != 2:
            raise UsageError(f"a table here has two inputs (lane, value) and two outputs (row, "
                             f"col): this one has {layout.inputs} and {layout.outputs}")
        if layout.values.shape[:2] != m.rows.shape:
            raise UsageError(f"the table spans {layout.values.shape[0]} lanes x "
                             f"{layout.values.shape[1]} values; the map {m.lanes} x {m.values}")
        return layout.values[..., 0], layout.values[..., 1]
    if layout.inputs != 2:
        raise UsageError(f"a CuTe layout here has two top-level modes (thread, value; a "
                         f"tile's: row, col): this one has {layout.inputs}")
    if m.tile:
        return _tile_cells(layout, m)
    (index,) = evaluate(layout, lane, value)
    return m.cells_of_index(np.broadcast_to(index, m.rows.shape))


def _tile_cells(layout: Cute, m: LaneMap) -> tuple[np.ndarray, np.ndarray]:
    """Where a tile layout (row, col) -> element offset puts each element, as the slots
    then hold them (-1: none; a slot two elements land on holds -2, which matches none)."""
    rows_n, cols_n = m.shape
    row, col = np.arange(rows_n)[:, None], np.arange(cols_n)[None, :]
    (offset,) = evaluate(layout, row, col)
    offset = np.broadcast_to(offset, (rows_n, cols_n)).reshape(-1)
    rows, cols = np.full(m.rows.shape, -1, np.int64), np.full(m.rows.shape, -1, np.int64)
    inside = (offset >= 0) & (offset < m.rows.size)
    where = offset[inside]
    lane, value = where % m.lanes, where // m.lanes
    rows[lane, value] = np.repeat(np.arange(rows_n), cols_n)[inside]
    cols[lane, value] = np.tile(np.arange(cols_n), rows_n)[inside]
    taken = np.bincount(where, minlength=m.rows.size) > 1
    twice = taken.reshape(m.values, m.lanes).T
    rows[twice], cols[twice] = -2, -2
    return rows, cols


def reproduces(layout: Layout, m: LaneMap, relabel: bool = False) -> Score:
    """Score `layout` on every slot of the map: literally (the map's own labels), or
    `relabel`ed (up to one renumbering per axis, what a lane-id experiment determines)."""
    rows, cols = cells_of(layout, m)
    ours_rows, ours_cols = m.rows, m.cols
    if relabel:
        (bad_rows, ours_rows), (bad_cols, ours_cols) = _broken(m.rows, rows), \
            _broken(m.cols, cols)
        bad = bad_rows | bad_cols
    else:
        bad = (rows != m.rows) | (cols != m.cols)
    bad = bad & ((m.rows >= 0) | (rows >= 0))
    cells = int(((m.rows >= 0) | (rows >= 0)).sum())
    first = [(int(lane), int(value), int(ours_rows[lane, value]), int(ours_cols[lane, value]),
              int(rows[lane, value]), int(cols[lane, value]))
             for value, lane in np.argwhere(bad.T)[:8]]  # in slot order: value-major
    return Score(cells - int(bad.sum()), cells, bad, first, relabel)


def _broken(measured: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where `theirs` breaks the one-to-one renumbering of `measured`'s labels that the
    slots before it, in slot order (value-major), set up, or a slot is held on one side
    only; `measured` in their numbering as that renumbering ends, -1 where it has none)."""
    bad = np.zeros(measured.shape, bool)
    forward: dict[int, int] = {}
    backward: dict[int, int] = {}
    for value in range(measured.shape[1]):
        for lane in range(measured.shape[0]):
            ours, other = int(measured[lane, value]), int(theirs[lane, value])
            if ours < 0 or other < 0:
                bad[lane, value] = (ours < 0) != (other < 0)
            elif forward.setdefault(ours, other) != other or \
                    backward.setdefault(other, ours) != ours:
                bad[lane, value] = True
    return bad, relabelled(measured, forward)


def relabelled(labels: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    """Each label through `mapping`; -1 for an empty slot or a label it does not map."""
    return np.array([[mapping.get(c, -1) if c >= 0 else -1 for c in row]
                     for row in labels.tolist()], np.int64).reshape(labels.shape)
