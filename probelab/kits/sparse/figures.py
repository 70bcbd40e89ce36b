"""Pairing maps for sparse-metadata datasets (probelab.kits.sparse): per kernel, which lane's
metadata field governs each compressed A element, and which row of B it meets.

Two panels over the A fragment (rows: the lane holding the element, columns: its element
number in the lane's registers):
- governing metadata: "lane:field" (field f = bits 2f..2f+1 of that lane's word), cells
  coloured by the governing lane's position in its quad (lane % 4);
- pairing: for the first two valid words, the row of B met, named by its smallest B slot
  ("lane.elem"), coloured by that B lane (mod 8).
Elements the kernel does not have are blank. The tables are plain functions
(governance_table, pairing_table), so they can be checked without reading pixels.
"""

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from probelab.drawing import cell_table, dataset_header, new_figure
from probelab.kits.sparse.engine import AMBIGUOUS, CODES, NONE

CELL_IN = 0.42
SHOWN_WORDS = 2
CODE_TEXT = {NONE: "-", AMBIGUOUS: "?"}


def _labelled(values: np.ndarray, label: np.ndarray) -> np.ndarray:
    """`label` where `values` are data, the code's short text where they are codes."""
    codes = np.vectorize(lambda c: CODE_TEXT.get(c, "?"), otypes=[str])(values)
    return np.where(values >= CODES, codes, label)


def governance_table(ds: xr.Dataset, kernel: str) -> tuple[np.ndarray, np.ndarray]:
    """(lane, elem) -> text "lane:field" and colour value (governing lane % 4, NaN none)."""
    sub = ds.sel(kernel=kernel)
    elems = int(sub["elems"])
    lane = sub["gov_lane"].values[:, :elems].astype(np.int64)
    field = sub["gov_field"].values[:, :elems].astype(np.int64)
    text = _labelled(lane, np.char.add(np.char.add(lane.astype(str), ":"), field.astype(str)))
    return text, np.where(lane >= CODES, np.nan, lane % 4)


def pairing_table(ds: xr.Dataset, kernel: str, words: int = SHOWN_WORDS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(lane, elem) -> text: per shown word, "lane.elem" of the B row met; colour: the B
    lane met under the first word."""
    sub = ds.sel(kernel=kernel)
    elems = int(sub["elems"])
    lines = []
    for w in range(min(words, sub.sizes["word"])):
        lane = sub["met_lane"].values[w, :, :elems].astype(np.int64)
        elem = sub["met_elem"].values[w, :, :elems].astype(np.int64)
        lines.append(_labelled(lane, np.char.add(np.char.add(lane.astype(str), "."),
                                                  elem.astype(str))))
    text = lines[0]
    for line in lines[1:]:
        text = np.char.add(np.char.add(text, "\n"), line)
    first = sub["met_lane"].values[0, :, :elems].astype(np.int64)
    return text, np.where(first >= CODES, np.nan, first % 8)


def _figure(ds: xr.Dataset, kernel: str) -> Figure:
    sub = ds.sel(kernel=kernel)
    elems = int(sub["elems"])
    lanes = sub.sizes["a_lane"]
    fig = new_figure(2 * elems * CELL_IN + 2.5, lanes * CELL_IN + 2.2)
    left, right = fig.subplots(1, 2)
    cols = [str(e) for e in range(elems)]
    rows = [str(lane) for lane in range(lanes)]
    text, color = governance_table(ds, kernel)
    cell_table(left, color, text, rows, cols, cmap="Pastel1", vmin=0, vmax=8)
    left.set_xlabel("A element (in the lane's registers)")
    left.set_ylabel("A lane")
    words = ", ".join(f"{int(w):#010x}" for w in sub["word"].values[:SHOWN_WORDS])
    dataset_header(left, kernel, "governing metadata lane:field", ds,
                   f"K={int(sub['K'])}, selector {int(sub['sel'])}, "
                   f"{'ordered_metadata' if int(sub['ordered']) else 'sp'}; "
                   "colour: governing lane % 4")
    text, color = pairing_table(ds, kernel)
    cell_table(right, color, text, rows, cols, cmap="Pastel2", vmin=0, vmax=8)
    right.set_xlabel(f"A element: the row of B met, as its smallest B slot lane.elem,\n"
                     f"under {words} (one line each); colour: B lane % 8")
    return fig


def figures(ds: xr.Dataset, tables: dict | None = None, scoring: str = "literal",
            about: dict | None = None) -> dict[str, Figure]:
    return {str(k): _figure(ds, str(k)) for k in ds["kernel"].values}
