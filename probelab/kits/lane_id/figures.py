"""Lane maps: figures of which lane and value holds which matrix element, for the lane-id
kit's datasets (`<operand>_row` / `<operand>_col` over (kernel, lane, value), -1 for an
empty slot; the kit's engine writes them).

Two views per kernel, in CuTe's vocabulary (thread, value) -> coordinate:
- matrix: each operand drawn as its matrix, cells coloured by lane and labelled
  "L<lane>" over "v<value>" (a value is one element: CuTe's value; `lane_map_table` says
  which register and bits hold it);
- registers: each operand's slots, lanes in blocks of LANES_PER_ROW (columns: lane % 16,
  rows: value and lane block), cells labelled "row,col" and coloured by row.
Labels are canonical (rows and k numbered by first appearance over A's slots, columns over
B's): a consistent renumbering of any documented table, which the verdicts, label-free,
compare with. Given a hypothesis whose literal scoring a kernel CONFIRMS (`plot lanemap
--prereg FILE`), that kernel is drawn in the file's own numbering instead (its [let]
helpers a_m, a_k, b_k, b_n, d_m, d_n: the documented table's labels), after checking that
the renumbering is one to one on every axis.
The tables behind them are plain functions (matrix_table, register_table), so they can be
checked without reading pixels.
"""

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from probelab.drawing import Table, cell_table, dataset_header, new_figure
from probelab.errors import IntegrityError
from probelab.formats import ELEMENTS, F64
from probelab.lanemaps import (
    AXES,
    Numbering,
    canonical,
    numberings,
    operands,
    recovered,
    tile_operands,
)

OPERANDS = {"a": ("A", "row", "k"), "b": ("B", "k", "col"), "c": ("C", "row", "col"),
            "d": ("D", "row", "col")}
LANES_PER_ROW = 16
CELL_IN = 0.42  # inches per cell: labels stay at >= 6 pt when printed
EMPTY = "#eeeeee"


def _cells(ds: xr.Dataset, kernel: str, operand: str, numbering: Numbering | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) per (lane, value), -1 where empty; renumbered where a numbering is given."""
    cells = canonical(ds, kernel, operand)
    if numbering is None:
        return cells
    renumbered = []
    for canon, axis in zip(cells, AXES[operand], strict=True):
        mapping = numbering[axis]
        if unknown := set(canon[canon >= 0].tolist()) - set(mapping):
            raise IntegrityError(f"{kernel}: {operand.upper()}'s measured {axis}s "
                                 f"{sorted(unknown)} have no documented label")
        renumbered.append(np.array([[mapping.get(c, -1) for c in row] for row in canon.tolist()]))
    return renumbered[0], renumbered[1]


def title(operand: str, shown: list[str]) -> str:
    return "C/D" if operand == "d" and "c" not in shown else OPERANDS[operand][0]


def matrix_table(ds: xr.Dataset, kernel: str, operand: str, numbering: Numbering | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(lane, register) of each matrix element, -1 where no slot holds it: two (rows, cols)
    int arrays. Raises if two slots claim one element (not a lane map)."""
    rows, cols = _cells(ds, kernel, operand, numbering)
    shape = (rows.max() + 1, cols.max() + 1) if (rows >= 0).any() else (0, 0)
    lane, reg = np.full(shape, -1), np.full(shape, -1)
    for (ln, rg), r in np.ndenumerate(rows):
        if r < 0:
            continue
        c = cols[ln, rg]
        if lane[r, c] >= 0:
            raise ValueError(f"{kernel}: {operand.upper()}[{r}][{c}] is held by two slots")
        lane[r, c], reg[r, c] = ln, rg
    return lane, reg


def register_table(ds: xr.Dataset, kernel: str, operand: str,
                   numbering: Numbering | None = None
                   ) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(text, row labels, matrix row for colour) with one row per (register, lane block) and
    LANES_PER_ROW columns; registers no lane uses are left out."""
    rows, cols = _cells(ds, kernel, operand, numbering)
    lanes, regs = rows.shape
    blocks = -(-lanes // LANES_PER_ROW)
    text, labels, shade = [], [], []
    for reg in range(regs):
        if not (rows[:, reg] >= 0).any():
            continue
        for b in range(blocks):
            span = range(b * LANES_PER_ROW, min(lanes, (b + 1) * LANES_PER_ROW))
            text.append([f"{rows[ln, reg]},{cols[ln, reg]}" if rows[ln, reg] >= 0 else "-"
                         for ln in span])
            shade.append([rows[ln, reg] if rows[ln, reg] >= 0 else np.nan for ln in span])
            labels.append(f"v{reg} · L{span[0]}-{span[-1]}")
    return np.array(text, dtype=object), labels, np.array(shade, float)


def _labelled(numbered: str | None) -> str:
    return f"numbered as {numbered} (CONFIRMED)" if numbered else \
        "canonical numbering (first appearance)"


def _matrix_figure(ds: xr.Dataset, kernel: str, numbering: Numbering | None = None,
                   numbered: str | None = None) -> Figure:
    names = operands(ds, kernel)
    tables = {n: matrix_table(ds, kernel, n, numbering) for n in names}
    widths = [max(t[0].shape[1], 1) for t in tables.values()]
    height = max(t[0].shape[0] for t in tables.values())
    fig = new_figure(CELL_IN * (sum(widths) + 2.5 * len(names)), CELL_IN * height + 2.2)
    grid = fig.add_gridspec(1, len(names), width_ratios=widths, wspace=0.25)
    lanes = ds.sizes[next(d for d in ds[f"{names[0]}_row"].dims if d.endswith("_lane"))]
    for i, (name, (lane, reg)) in enumerate(tables.items()):
        ax = fig.add_subplot(grid[0, i])
        _, rows_are, cols_are = OPERANDS[name]
        text = np.where(lane >= 0, np.char.add(np.char.add("L", lane.astype(str)),
                                               np.char.add("\nv", reg.astype(str))), "")
        colours = np.where(lane >= 0, lane, np.nan).astype(float)
        cell_table(ax, colours, text, [f"{rows_are} {r}" for r in range(lane.shape[0])],
                   [str(c) for c in range(lane.shape[1])], cmap="twilight_shifted", vmin=0,
                   vmax=lanes)
        ax.set_aspect("equal")  # square cells: the matrix's own proportions
        ax.set_xlabel(f"{title(name, names)} ({lane.shape[0]} x {lane.shape[1]}): {cols_are}",
                      fontsize=11, fontweight="bold")
        if i == 0:
            dataset_header(ax, kernel, "lane map, matrix view", ds,
                           "each element: the lane (L) and value (v) that hold it; "
                           f"colour = lane; {_labelled(numbered)}")
    return fig


def _register_figure(ds: xr.Dataset, kernel: str, numbering: Numbering | None = None,
                     numbered: str | None = None) -> Figure:
    names = operands(ds, kernel)
    tables = {n: register_table(ds, kernel, n, numbering) for n in names}
    height = sum(t[0].shape[0] for t in tables.values())
    fig = new_figure(CELL_IN * 1.3 * LANES_PER_ROW + 2.5, CELL_IN * (height + 2 * len(names)) + 2)
    grid = fig.add_gridspec(len(names), 1, height_ratios=[t[0].shape[0] for t in tables.values()],
                            hspace=0.45)
    for i, (name, (text, labels, shade)) in enumerate(tables.items()):
        ax = fig.add_subplot(grid[i, 0])
        _, rows_are, cols_are = OPERANDS[name]
        cell_table(ax, shade, text, labels, [str(c) for c in range(text.shape[1])],
                   cmap="viridis")
        ax.set_ylabel(title(name, names), rotation=0, ha="right", va="center", fontsize=12,
                      fontweight="bold")
        ax.set_xlabel(f"lane % {LANES_PER_ROW}; cell: {rows_are},{cols_are}; colour = {rows_are}")
        if i == 0:
            dataset_header(ax, kernel, "lane map, register view", ds,
                           f"each (lane, value): the element it holds; {_labelled(numbered)}")
    return fig


def element_bits(ds: xr.Dataset, operand: str) -> int:
    """Bits per value of an operand, as the dataset names its codec (the lane-id kit's f64
    grids name none)."""
    coord = {"a": "operand_type", "b": "b_operand_type"}.get(operand, "accumulator_type")
    if coord not in ds.coords and operand == "b":  # B is A's type unless it names its own
        coord = "operand_type"
    name = str(ds[coord].values) if coord in ds.coords else F64.name
    return ELEMENTS[name].bits


def lane_map_table(ds: xr.Dataset, kernel: str, numbering: Numbering | None = None) -> Table:
    """Every slot that holds an element, per operand: (lane, value, register, bits) ->
    (row, col), the register being the first 32-bit register the value occupies and bits
    its bit range counted from that register's bit 0 (a 64-bit value spans two)."""
    rows = []
    names = operands(ds, kernel) if "c_row" in ds else ["a", "b", "d"]
    for operand in names:
        bits = element_bits(ds, operand)
        r, c = _cells(ds, kernel, operand, numbering)
        for (lane, value), row in np.ndenumerate(r):
            if row >= 0:
                start = value * bits
                rows.append((title(operand, names), lane, value, start // 32,
                             f"{start % 32}-{start % 32 + bits - 1}", int(row),
                             int(c[lane, value])))
    return Table(("operand", "lane", "value", "register", "bits", "row", "col"), tuple(rows))


CHUNK, LINE = 16, 128  # bytes: a tile drawn in 16-byte chunks, 128-byte lines
LETTER = {"row": "m", "k": "k", "col": "n"}  # A is (m, k), B (k, n)


def _span(values: list[int], name: str) -> str:
    """"k0-7", "n3", or the values themselves when they are no run."""
    if len(values) == 1:
        return f"{name}{values[0]}"
    if values == list(range(values[0], values[-1] + 1)):
        return f"{name}{values[0]}-{values[-1]}"
    return f"{name}{','.join(map(str, values[:3]))}{'..' if len(values) > 3 else ''}"


def tile_table(ds: xr.Dataset, kernel: str, operand: str, numbering: Numbering | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(text, colour) per 16-byte chunk of the operand's tile, 128-byte lines as rows: the
    matrix elements the chunk holds ("n3 / k0-7"), "" where the instruction read none of it;
    slot (lane, value) is element value * lanes + lane of the tile."""
    rows, cols = _cells(ds, kernel, operand, numbering)
    per = CHUNK * 8 // element_bits(ds, operand)  # elements per chunk
    flat = (rows.T.reshape(-1), cols.T.reshape(-1))  # slot order: value-major
    chunks = len(flat[0]) // per
    text = np.full(chunks, "", dtype=object)
    colour = np.full(chunks, np.nan)
    _, row_name, col_name = OPERANDS[operand]
    for c in range(chunks):
        r, q = flat[0][c * per:(c + 1) * per], flat[1][c * per:(c + 1) * per]
        held = r >= 0
        if held.any():
            major, minor = (q, r) if operand == "b" else (r, q)  # B: by column n, A: by row m
            major_name, minor_name = (col_name, row_name) if operand == "b" else (row_name,
                                                                                    col_name)
            text[c] = (_span(sorted(set(major[held].tolist())), LETTER[major_name]) + "\n" +
                       _span(sorted(set(minor[held].tolist())), LETTER[minor_name]))
            colour[c] = float(np.min(major[held]))
    width = LINE // CHUNK
    return text.reshape(-1, width), colour.reshape(-1, width)


def _tile_figure(ds: xr.Dataset, kernel: str, operand: str, numbering: Numbering | None,
                 numbered: str | None) -> Figure:
    text, colour = tile_table(ds, kernel, operand, numbering)
    fig = new_figure(CELL_IN * 2.2 * text.shape[1] + 2.5, CELL_IN * 1.3 * text.shape[0] + 2.2)
    ax = fig.add_subplot(1, 1, 1)
    cell_table(ax, colour, text, [f"+{LINE * r}" for r in range(text.shape[0])],
               [f"+{CHUNK * c}" for c in range(text.shape[1])], cmap="viridis")
    ax.set_xlabel(f"{title(operand, [operand])}'s tile: byte offset = line + chunk (16 bytes "
                  "each); blank: not read", fontsize=10)
    fields = ("swizzle", "lbo", "sbo", "start")  # the descriptor, where the grid declares it
    names = (*fields, *(f"{operand}_{f}" for f in fields))
    facts = {n: int(ds[n].sel(kernel=kernel)) for n in names if n in ds.coords}
    dataset_header(ax, kernel, "tile map", ds, "which elements each 16-byte chunk holds"
                   + (f"; {facts}" if facts else "") + f"; {_labelled(numbered)}")
    return fig


def lane_map_figures(ds: xr.Dataset, tables=None, scoring: str = "literal",
                     about: dict | None = None) -> dict[str, Figure | Table]:
    """{"<kernel>.matrix" | "<kernel>.registers": figure, "<kernel>.table": its rows as CSV
    and JSON} for every kernel whose lane map was recovered (a refused one has no map).
    With a hypothesis (`about`, from `plot --prereg`): the same, named
    "<kernel>.<id>.<view>", for the kernels its literal scoring CONFIRMS, in its numbering."""
    hypothesis = (about or {}).get("hypothesis")
    if hypothesis is None:
        kernels = {str(k): None for k in ds["kernel"].values if recovered(ds, str(k))}
    else:
        kernels = numberings(ds, hypothesis, about["literal_confirmed"])
    figures: dict[str, Figure | Table] = {}
    numbered = hypothesis.id if hypothesis is not None else None
    for kernel, numbering in kernels.items():
        stem = f"{kernel}.{numbered}" if numbered else kernel
        figures[f"{stem}.matrix"] = _matrix_figure(ds, kernel, numbering, numbered)
        figures[f"{stem}.registers"] = _register_figure(ds, kernel, numbering, numbered)
        figures[f"{stem}.table"] = lane_map_table(ds, kernel, numbering)
        for operand in tile_operands(ds, kernel):  # what each chunk of a memory tile holds
            figures[f"{stem}.{operand}-tile"] = _tile_figure(ds, kernel, operand, numbering,
                                                             numbered)
    return figures
