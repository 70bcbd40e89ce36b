"""Move maps: figures of where each element of a matrix-move kernel comes from, for the
matrix-move kit's datasets, and the same as rows (CSV/JSON) beside them.

- load (ldmatrix): rows are destination lanes, columns their (register, half); a cell reads
  "A<lane>" over "c<col>": element col of the row whose address lane <lane> gave,
  coloured by that address lane;
- store (stmatrix): rows are address lanes, columns the 8 elements of the row each
  addressed; a cell reads "L<lane>" over "r<reg>.<half>": the register element stored there;
- move (movmatrix): rows are destination lanes, columns halves; a cell names the source
  lane and half.
"""

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from probelab.drawing import Table, cell_table, dataset_header, new_figure
from probelab.kits.matrix_move.engine import LANES
from probelab.kits.sentinels import NONE

CELL_IN = 0.55
FIELDS = {"load": ("from_addr_lane", "from_col"), "store": ("from_lane", "from_reg", "from_half"),
          "move": ("from_lane", "from_half")}


def _cells(ds: xr.Dataset, kernel: str) -> tuple[str, list[np.ndarray], list[str], list[str]]:
    """The op, its fields as (rows, columns) arrays, and the row and column labels."""
    op = str(ds["op"].values)
    k = ds.sel(kernel=kernel)
    fields = [k[f].values.astype(np.int64) for f in FIELDS[op]]
    if op == "load":  # (lane, reg, half) -> rows lanes, columns (reg, half)
        regs = int(k["num"])
        fields = [f[:, :regs].reshape(LANES, -1) for f in fields]
        cols = [f"r{r}.{h}" for r in range(regs) for h in range(2)]
        return op, fields, [f"L{n}" for n in range(LANES)], cols
    if op == "store":
        return op, fields, [f"A{n}" for n in range(LANES)], [f"c{c}" for c in range(8)]
    return op, fields, [f"L{n}" for n in range(LANES)], ["h0", "h1"]


def move_table(ds: xr.Dataset, kernel: str) -> Table:
    """Every destination element with its source, as the dataset says it (sentinels kept as
    "none"/"invalid")."""
    op, fields, _, _ = _cells(ds, kernel)
    names = {"load": ("lane", "register", "half", "addr_lane", "col"),
             "store": ("addr_lane", "col", "lane", "register", "half"),
             "move": ("lane", "half", "from_lane", "from_half")}[op]
    out = []
    for (r, c), _ in np.ndenumerate(fields[0]):
        here = (r, *divmod(c, 2)) if op == "load" else (r, c)
        values = tuple(int(f[r, c]) if f[r, c] < 2**31 else
                       ("none" if f[r, c] == NONE else "invalid") for f in fields)
        out.append((*here, *values))
    return Table(names, tuple(out))


def _figure(ds: xr.Dataset, kernel: str) -> Figure:
    op, fields, rows, cols = _cells(ds, kernel)
    source = fields[0]
    ok = source < LANES
    if op == "load":
        text = np.where(ok, np.char.add(np.char.add("A", source.astype(str)),
                                        np.char.add("\nc", fields[1].astype(str))), "-")
        what = "each register element: the address lane (A) whose row it came from, and " \
               "the element (c) of that row; colour = address lane"
    elif op == "store":
        text = np.where(ok, np.char.add(np.char.add("L", source.astype(str)), np.char.add(
            np.char.add("\nr", fields[1].astype(str)), np.char.add(".", fields[2].astype(str)))),
            "-")
        what = "each element (c) of the row lane A<n> addressed: the lane (L) and register." \
               "half (r) stored there; colour = lane; -: not written"
    else:
        text = np.where(ok, np.char.add(np.char.add("L", source.astype(str)),
                                        np.char.add("\nh", fields[1].astype(str))), "-")
        what = "each destination element: the lane (L) and half (h) it came from"
    fig = new_figure(CELL_IN * len(cols) + 2.5, CELL_IN * len(rows) + 1.8)
    ax = fig.add_subplot()
    cell_table(ax, np.where(ok, source, np.nan).astype(float), text, rows, cols,
               cmap="twilight_shifted", vmin=0, vmax=LANES)
    dataset_header(ax, kernel, f"{op} map", ds, what)
    return fig


def move_map_figures(ds: xr.Dataset, tables=None, scoring: str = "literal",
                     about: dict | None = None) -> dict[str, Figure | Table]:
    """{"<kernel>.map": figure, "<kernel>.table": its rows as CSV and JSON} per kernel."""
    out: dict[str, Figure | Table] = {}
    for kernel in (str(k) for k in ds["kernel"].values):
        out[f"{kernel}.map"] = _figure(ds, kernel)
        out[f"{kernel}.table"] = move_table(ds, kernel)
    return out
