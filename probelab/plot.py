"""Figures for any probe: save them (PNG + SVG, atomically) and draw labelled cell tables.

Rendering is headless: the Agg backend is selected before pyplot is imported. Figures are
built with `new_figure` (no pyplot state), so a notebook or a test can make many of them
without leaking; `save_figure` closes them anyway.
"""

import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # only once the backend is chosen
import numpy as np
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize, to_rgba_array
from matplotlib.figure import Figure

from probelab.storage import atomic_write_bytes

DPI = 200
FORMATS = ("png", "svg")
REPRODUCIBLE = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
MIN_FONT, MAX_FONT = 5.0, 12.0
CELL_EDGE = "0.82"  # light grey: visible around white cells, quiet around coloured ones


def new_figure(width: float, height: float) -> Figure:
    """A figure outside pyplot's registry (nothing to leak if it is never closed)."""
    return Figure(figsize=(width, height), dpi=100)


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Write `stem`.png and `stem`.svg atomically (parents created), close `fig`, return paths.

    The bytes are reproducible (no date, fixed SVG ids), and a file that already holds them
    is left alone, so redrawing an unchanged figure never dirties a checkout. The suffix is
    appended, never substituted: a stem such as `selector-map.prmt` keeps its dot.
    """
    paths = []
    try:
        for fmt in FORMATS:
            path = stem.with_name(f"{stem.name}.{fmt}")
            buffer = io.BytesIO()
            # SVG keeps its text as text: a third of the size, and searchable
            with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "probelab"}):
                fig.savefig(buffer, format=fmt, dpi=DPI, bbox_inches="tight", pad_inches=0.1,
                            metadata=REPRODUCIBLE[fmt])
            data = buffer.getvalue()
            if not (path.is_file() and path.read_bytes() == data):
                atomic_write_bytes(path, data)
            paths.append(path)
    finally:
        plt.close(fig)
    return paths


def _rgba(colors: np.ndarray, cmap: str | Colormap, vmin: float | None,
          vmax: float | None) -> tuple[np.ndarray, ScalarMappable | None]:
    """(rows, cols, 4) RGBA from values (through cmap; NaN: the cmap's 'bad' colour) or colours,
    and for values the mapping used (for a colorbar)."""
    colors = np.asarray(colors)
    if colors.ndim == 3:  # RGB(A) numbers
        flat = to_rgba_array(colors.reshape(-1, colors.shape[-1]))
        return flat.reshape(*colors.shape[:2], 4), None
    if colors.dtype.kind in "USO":  # colour names or hex strings
        return to_rgba_array(colors.reshape(-1)).reshape(*colors.shape, 4), None
    values = np.ma.masked_invalid(colors.astype(float))
    norm = Normalize(vmin, vmax)
    norm.autoscale_None(values)
    mapping = ScalarMappable(norm, plt.get_cmap(cmap))
    return mapping.to_rgba(values), mapping


def _font_size(ax: Axes, shape: tuple[int, int], text: np.ndarray) -> float:
    """The largest size (within MIN_FONT..MAX_FONT) at which the longest label fits its cell."""
    box = ax.get_window_extent()  # pixels
    points = 72 / ax.figure.dpi
    cell_h, cell_w = box.height * points / shape[0], box.width * points / shape[1]
    labels = [str(cell).split("\n") for cell in text.reshape(-1)] or [[""]]
    longest = max(len(line) for lines in labels for line in lines)
    n_lines = max(len(lines) for lines in labels)
    # A monospace glyph is about 0.6 em wide; leave a margin around the text.
    fit = min(cell_h * 0.62 / n_lines, cell_w * 0.8 / max(longest * 0.62, 1))
    return float(np.clip(fit, MIN_FONT, MAX_FONT))


def cell_table(ax: Axes, colors: np.ndarray, text: np.ndarray, row_labels: Sequence[str],
               col_labels: Sequence[str], cmap: str | Colormap = "viridis",
               vmin: float | None = None, vmax: float | None = None,
               fontsize: float | None = None) -> ScalarMappable | None:
    """Draw a grid of coloured cells, each with its text centred; row 0 is at the top.

    `colors` is (rows, cols) of values, mapped through `cmap` (vmin/vmax as in imshow; NaN
    gives the cmap's 'bad' colour), (rows, cols) of colour strings ("#ff00ff", "white") or
    (rows, cols, 3|4) of RGB(A) numbers. `text` is (rows, cols) of str. Text is dark on light
    cells and white on dark ones; its size fits the cells unless `fontsize` is given.
    Returns the value -> colour mapping, for a colorbar (None when colours were given).
    """
    text = np.asarray(text, dtype=object)
    rgba, mapping = _rgba(colors, cmap, vmin, vmax)
    rows, cols = rgba.shape[:2]
    if text.shape != (rows, cols) or len(row_labels) != rows or len(col_labels) != cols:
        raise ValueError(f"cell_table: colours {(rows, cols)}, text {text.shape}, "
                         f"{len(row_labels)} row and {len(col_labels)} column labels")
    ax.pcolormesh(np.arange(cols + 1), np.arange(rows + 1), rgba, edgecolors=CELL_EDGE,
                  linewidth=0.6)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    size = fontsize or _font_size(ax, (rows, cols), text)
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])
    for (r, c), label in np.ndenumerate(text):
        ax.text(c + 0.5, r + 0.5, str(label), ha="center", va="center", fontsize=size,
                family="monospace", color="white" if luminance[r, c] < 0.5 else "black")
    ax.set_xticks(np.arange(cols) + 0.5, labels=list(col_labels))
    ax.set_yticks(np.arange(rows) + 0.5, labels=list(row_labels))
    ax.tick_params(length=0, labelsize=max(MIN_FONT, min(size, 10)))
    for spine in ax.spines.values():
        spine.set_visible(False)
    return mapping


def dataset_header(ax, kernel: str, what: str, ds, subtitle: str,
                   other_simulated: bool = False) -> None:
    """Title lines above the axes: [SIMULATED — not evidence], kernel + device, subtitle.

    Unknown provenance (e.g. an unsaved sweep) counts as simulated; `other_simulated` marks a
    simulated dataset this one is compared with (probelab diff)."""
    from probelab.dataset import provenance, simulated
    from probelab.errors import UsageError

    try:
        prov = provenance(ds)
    except UsageError:
        prov = {"device": "unknown device", "target": "?"}
    device, target = str(prov.get("device", "?")), str(prov.get("target", "?"))
    where = device if target in device else f"{device} ({target})"
    lines = [(subtitle, 9, "normal", "black"), (f"{kernel}: {what} — {where}", 12, "bold", "black")]
    if simulated(prov):
        lines.append(("SIMULATED — not evidence", 12, "bold", "red"))
    elif other_simulated:
        lines.append(("compared with SIMULATED data — not evidence", 12, "bold", "red"))
    offset = 6
    for text, size, weight, color in lines:
        ax.annotate(text, (0, 1), xytext=(0, offset), xycoords="axes fraction",
                    textcoords="offset points", ha="left", va="bottom", fontsize=size,
                    fontweight=weight, color=color)
        offset += size + 7
