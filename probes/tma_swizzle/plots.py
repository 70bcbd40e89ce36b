"""The TMA byte map drawn, from the dataset alone (probelab.boxmaps reads it): per
configuration, which 16-byte chunk of which box row landed in each 16-byte chunk of the
shared region, one row per 128-byte line, so the swizzle's chunk permutation shows line by
line; with the box's CuTe layout (row, col) -> element offset found from the data."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from probelab import boxmaps, lanemaps
from probelab.drawing import cell_table, dataset_header, new_figure, panels

CHUNK, LINE = 16, 128  # bytes: the swizzle's unit, and the line whose chunks it permutes
UNWRITTEN, MIXED = -1, -2  # a chunk the poison survived in; one holding no one box chunk
CHUNK_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                 "#b07aa1", "#9c755f"]  # box chunk 0-7 of its row
COLS = 3


def chunk_map(ds: xr.Dataset, kernel: str, config: int) -> tuple[np.ndarray, np.ndarray]:
    """(line, chunk of the line) -> the box row and the chunk of that row (its bytes
    16c..16c+15) that landed there whole, or UNWRITTEN (both), or MIXED (both)."""
    rows, cols = boxmaps.box_elements(ds, kernel, config)
    per = CHUNK // int(ds["element_bytes"].values[config])
    rows, cols = rows.reshape(-1, per), cols.reshape(-1, per)
    whole = (rows >= 0).all(1) & (rows == rows[:, :1]).all(1) & \
        (cols == cols[:, :1] + np.arange(per)).all(1) & (cols[:, 0] % per == 0)
    code = np.where((rows < 0).all(1), UNWRITTEN, MIXED)
    shape = (-1, LINE // CHUNK)
    return (np.where(whole, rows[:, 0], code).reshape(shape),
            np.where(whole, cols[:, 0] // per, code).reshape(shape))


def _panel(ax, ds: xr.Dataset, kernel: str, config: int, cute: str) -> None:
    box_row, box_chunk = chunk_map(ds, kernel, config)
    colours = np.array([*CHUNK_COLOURS, "white", "#ff00ff"])[
        np.where(box_chunk >= 0, box_chunk, np.where(box_chunk == UNWRITTEN, 8, 9))]
    text = np.where(box_row >= 0, np.char.add(np.char.add("r", box_row.astype(str)),
                                              np.char.add("\nc", box_chunk.astype(str))),
                    np.where(box_row == UNWRITTEN, "-", "?"))
    cell_table(ax, colours, text, [f"+{LINE * r}" for r in range(len(text))],
               [f"c{c}" for c in range(text.shape[1])])
    c = ds.isel(config=config)
    span = int(c["swizzle"])
    rows, inner = boxmaps.extent(c)[0], int(c["inner"])
    ax.set_title(f"{c['mode'].item()}: swizzle {f'{span}B' if span else 'none'}, box "
                 f"{inner} B x {rows} rows", fontsize=9)
    ax.set_xlabel(f"16-byte chunk of the line\nCuTe ({int(c['element_bytes'])}-byte "
                  f"elements): {cute}", fontsize=7)


def byte_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure per kernel: a panel per configuration."""
    out = {}
    configs, lines = ds.sizes["config"], ds.sizes["offset"] // LINE
    rows = -(-configs // COLS)
    for kernel in (str(k) for k in ds["kernel"].values):
        one = ds.sel(kernel=[kernel])
        maps = {m.kernel: lanemaps.cute_of(m) for m in boxmaps.box_maps(one, None, None)}
        fig = new_figure(COLS * 4.6, rows * (0.36 * lines + 2.2) + 1.2)
        head, axes = panels(fig, rows, COLS)
        for at, ax in enumerate(axes.reshape(-1)):
            if at >= configs:
                ax.axis("off")
                continue
            cute = maps[str(ds["mode"].values[at])]
            _panel(ax, one, kernel, at, cute if isinstance(cute, str) else cute.text())
        size = f"{kernel} ({int(ds['element_bytes'].values[0])}-byte elements)"
        dataset_header(head, size, "where each 16-byte chunk of the box landed", ds,
                       "rows: 128-byte lines of the 1 KiB-aligned shared region (byte offset); "
                       "cell: box row r, chunk c of that row (bytes 16c..16c+15), coloured by "
                       "c; -: unwritten (poison)")
        out[kernel] = fig
    return out


PLOTS = {"byte-map": byte_map}
